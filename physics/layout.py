"""How Model and World arrays are packed for the kernels.

Taichi caps a kernel at 64 argument slots and each ndarray argument costs ~10 us per
launch on CPU, so the kernels take a few packed arrays instead of one per quantity:
per entity kind, one int32 table and one float table whose columns are named below.
Float model tables have a leading axis of 1 (shared) or num_envs (randomized per env);
kernels read row ``w % table.shape[0]``. Zero-sized tables are padded to one row and
the true sizes travel in ``SIZES``.
"""

from __future__ import annotations

import numpy as np

from .model import EQ_CONNECT, LIMIT_HARD, LIMIT_SOFT, LIMIT_SPRING, OBJ_SITE, Model


def _columns(*spec):
    """Name -> (start, width) for consecutive columns; returns (dict, total width)."""
    out, at = {}, 0
    for name, width in spec:
        out[name] = (at, width)
        at += width
    return out, at


def _flat_rows(*spec):
    """_columns for a flat table (FLAT_TABLES, FLAT_MODEL_TABLES), its row width rounded
    up to a power of two: the kernels index its rows at multiples of that width, which
    lets column offsets fold into addresses (physics/runtime/ti_math.py, env_start)."""
    out, width = _columns(*spec)
    return out, _pow2(width)


def _pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


# --- model tables -----------------------------------------------------------------
SIZE_NBODY, SIZE_NJNT, SIZE_NQ, SIZE_NV, SIZE_NU, SIZE_NTENDON, SIZE_INTEGRATOR, SIZE_DISABLE = range(8)
SIZE_NEFC, SIZE_ITERATIONS = 8, 9  # constraint-row capacity per env; solver iterations
SIZE_NGEOM, SIZE_NPAIR = 10, 11  # geoms; candidate collision pairs (0 when contacts are off)
SIZE_NEQ = 12
SIZE_SMOOTH_FRICTION = 13  # 1: friction loss as smooth passive forces instead of constraint rows
SIZE_LS_ITERATIONS = 14  # the primal solvers' line-search budget
# Entries of one env's rows in the flat data tables (FLAT_TABLES): env w's rows start at
# w * stride.
SIZE_BODY_STRIDE, SIZE_JNT_STRIDE, SIZE_DOF_STRIDE, SIZE_M_STRIDE = 15, 16, 17, 18
# Entries of one row of the flat float model tables (FLAT_MODEL_TABLES): shared tables
# hold one row, tables made per env (World.set_param) one row per env.
SIZE_BODYF_STRIDE, SIZE_JNTF_STRIDE, SIZE_DOFF_STRIDE = 19, 20, 21
# Where, in the flat dof_i table, the sparse mass matrix's column table starts (after the
# dof rows): entry a of a qM row is M(i, dof_i[SIZE_MCOL + a]).
SIZE_MCOL = 22
NSIZES = 23
# The solver and cone are compile-time choices (physics/step/pipeline.py), not sizes.
SOLVERS = ("PGS", "CG", "Newton")
CONES = ("pyramidal", "elliptic")

BODY_PARENT, BODY_ROOT, BODY_JNTNUM, BODY_JNTADR, BODY_DOFNUM, BODY_DOFADR = range(6)
NBODY_I = _pow2(6)
BODY_F, NBODY_F = _flat_rows(("pos", 3), ("quat", 4), ("ipos", 3), ("iquat", 4), ("mass", 1), ("inertia", 3),
                              ("invweight0", 2))

JNT_TYPE, JNT_BODY, JNT_QPOSADR, JNT_DOFADR, JNT_LIMITED = range(5)
JNT_LIMIT_MODEL = 5  # the limit model of a limited joint, -1 if unlimited; JNT_LIMITED marks MuJoCo's soft limits
NJNT_I = _pow2(6)
JNT_F, NJNT_F = _flat_rows(("pos", 3), ("axis", 3), ("stiffness", 1), ("range", 2), ("margin", 1), ("solref", 2),
                            ("solimp", 5),
                            # limit models beyond MuJoCo's (physics/smooth/limits.py)
                            ("limit_strength", 1), ("limit_stiffness", 1), ("limit_damping", 1), ("limit_distance", 1),
                            ("limit_restitution", 1), ("limit_bounce", 1), ("limit_acceleration", 1), ("cone", 2),
                            ("twist", 2))

DOF_BODY, DOF_JNT, DOF_PARENT, DOF_MADR, DOF_MROWLEN = range(5)
NDOF_I = _pow2(5)
DOF_F, NDOF_F = _flat_rows(("armature", 1), ("damping", 1), ("frictionloss", 1), ("invweight0", 1), ("solref", 2),
                            ("solimp", 5),
                            # PD drives (physics/smooth/drives.py)
                            ("drive_stiffness", 1), ("drive_damping", 1), ("drive_forcelimit", 1),
                            ("drive_acceleration", 1))

Q_F, NQ_F = _columns(("qpos0", 1), ("qpos_spring", 1))

ACT_TRNTYPE, ACT_TRNID, ACT_GAINTYPE, ACT_BIASTYPE, ACT_CTRLLIMITED, ACT_FORCELIMITED = range(6)
NACT_I = 6
ACT_F, NACT_F = _columns(("gainprm", 3), ("biasprm", 3), ("gear", 1), ("ctrlrange", 2), ("forcerange", 2))

TEN_ADR, TEN_NUM, TEN_LIMITED = range(3)
NTEN_I = 3
TEN_F, NTEN_F = _columns(("stiffness", 1), ("damping", 1), ("frictionloss", 1), ("lengthspring", 2), ("range", 2),
                         ("margin", 1), ("invweight0", 1), ("solref_lim", 2), ("solimp_lim", 5), ("solref_fri", 2),
                         ("solimp_fri", 5))

EQ_TYPE, EQ_OBJ1, EQ_OBJ2, EQ_ACTIVE = range(4)
NEQ_I = 4
# quat2: a weld's orientation is held as conj(q2 quat2) q1 relpose; quat2 is the second
# site's frame for site-based welds, the identity otherwise
EQ_F, NEQ_F = _columns(("data", 11), ("solref", 2), ("solimp", 5), ("break", 2), ("quat2", 4))
EQ_D_ACTIVE, EQ_D_BROKEN = 0, 1  # per-env int table eq_d: active now; broke since last cleared

WRAP_OBJID = 0  # the int table holds the joint id of each term
WRAP_COEF = 0  # the float table its coefficient

OPT_F, NOPT_F = _columns(("timestep", 1), ("gravity", 3), ("wind", 3), ("density", 1), ("viscosity", 1),
                         ("friction_smoothing", 1), ("tolerance", 1), ("impratio", 1), ("meaninertia", 1),
                         ("ls_tolerance", 1))

# --- per-world data tables ------------------------------------------------------------
BODY_D, NBODY_D = _flat_rows(
    ("xpos", 3), ("xquat", 4), ("xmat", 9), ("xipos", 3), ("ximat", 9), ("subtree_com", 3), ("subtree_mass", 1),
    ("cinert", 10), ("crb", 10), ("cvel", 6), ("cacc", 6), ("cfrc", 6), ("cfrc_ext", 6), ("cfrc_int", 6),
)
# Computed on demand from the last forward pass (physics/constraint/reaction.py), not while stepping.
POST_CONSTRAINT = ("cacc", "cfrc_ext", "cfrc_int")
# half_sincos: sin and cos of a hinge's half angle, all hinges' first and off the chain of
# body frames (physics/smooth/kinematics.py)
JNT_D, NJNT_D = _flat_rows(("xanchor", 3), ("xaxis", 3), ("half_sincos", 2))
DOF_D, NDOF_D = _flat_rows(
    ("cdof", 6), ("cdof_dot", 6), ("qfrc_bias", 1), ("qfrc_passive", 1), ("qfrc_actuator", 1),
    ("qfrc_smooth", 1), ("qacc_rk", 4), ("qvel_rk", 4), ("qvel_start", 1), ("dx_vel", 1), ("scratch", 1),
    ("qacc_smooth", 1), ("qfrc_constraint", 1), ("qacc_warmstart", 1), ("constraint_vel", 1),
    # drives and cubic limits: the drive force (also in qfrc_actuator), the stiffness and
    # damping the Euler and implicitspringdamper integrators treat implicitly, and each
    # env's drive targets (set by World.set_drive_target)
    ("qfrc_drive", 1), ("implicit_stiffness", 1), ("implicit_damping", 1), ("drive_qpos_target", 1),
    ("drive_qvel_target", 1),
    # the primal solvers' vectors (physics/constraint/primal/): M (qacc - qacc_smooth), the cost's
    # gradient and its preconditioned form, the search direction, M search, and the
    # previous iteration's gradients for the conjugate-gradient update
    ("ma", 1), ("grad", 1), ("mgrad", 1), ("search", 1), ("mv", 1), ("gradold", 1), ("mgradold", 1),
)
PRIMAL_VECTORS = ("ma", "grad", "mgrad", "search", "mv", "gradold", "mgradold")
# Constraint rows of one env (MuJoCo's efc_* arrays), up to the SIZE_NEFC capacity.
EFC_F, NEFC_F = _columns(
    ("type", 1), ("id", 1), ("pos", 1), ("margin", 1), ("diagA", 1), ("R", 1), ("K", 1), ("B", 1), ("imp", 1),
    ("aref", 1), ("vel", 1), ("force", 1), ("AR", 1), ("lower", 1), ("upper", 1), ("solref", 2), ("solimp", 5),
    ("imppos", 1),  # the residual the impedance sees: |pos| of a whole connect or weld block
    ("jdotv", 1),  # d(J)/dt qvel of connect and weld rows, taken out of aref as MuJoCo does
    ("bias", 1),  # J qacc_smooth - aref: the dual's linear term, fixed while the solver runs
    # primal solvers (physics/constraint/primal/): J qacc - aref, J search, the row's cost along the
    # line search as a quadratic, its mjtConstraintState, the friction coefficient that
    # scales the row into the elliptic cone's circular space, and (first row of an elliptic
    # contact) the cone's line-search terms U0, V0, UU, UV, VV and the contact's condim
    ("jar", 1), ("jv", 1), ("quad", 3), ("state", 1), ("fric", 1), ("cone", 6),
    # the row's weight in Newton's Hessian J^T D J: 1/R while the row is quadratic, else 0
    ("hess", 1),
)
EFC_N, EFC_OVERFLOW, EFC_NITER = 0, 1, 2  # columns of efc_n: active rows, rows that did not fit, solver iterations
NEFC_N = 3
ACT_D, NACT_D = _columns(("force", 1), ("length", 1), ("velocity", 1))
TEN_D, NTEN_D = _columns(("length", 1), ("velocity", 1))

# The quantities World.get() can return: name -> (table, start, width); width 0 = scalar per row.
DATA_VIEWS = {
    **{k: ("body_d", a, w) for k, (a, w) in BODY_D.items() if k != "cfrc"},
    **{k: ("jnt_d", a, w) for k, (a, w) in JNT_D.items() if k != "half_sincos"},
    **{k: ("dof_d", a, w) for k, (a, w) in DOF_D.items()
       if not k.endswith("_rk") and k not in ("qvel_start", "dx_vel", "scratch", "constraint_vel", *PRIMAL_VECTORS)},
    "actuator_force": ("act_d", 0, 1),
    "actuator_length": ("act_d", 1, 1),
    "actuator_velocity": ("act_d", 2, 1),
    "ten_length": ("ten_d", 0, 1),
    "ten_velocity": ("ten_d", 1, 1),
}


def _put(table, row, cols, name, value):
    a, w = cols[name]
    table[row, a : a + w] = np.asarray(value, dtype=float).reshape(-1)[:w]


def _pad(n):
    return max(int(n), 1)


def equality_rows(m: Model) -> int:
    """Rows of the equality constraints: 3 per connect, 6 per weld, 1 per joint coupling."""
    return int(sum({0: 3, 1: 6, 2: 1}[int(t)] for t in m.eq_type))


def limit_rows(m: Model) -> int:
    """Most limit rows an env can have: two per limited hinge, slide or tendon (both sides
    can be within the margin), one per limited ball joint."""
    limited = np.asarray(m.jnt_limited, bool)
    ball = np.asarray(m.jnt_type) == 1
    return int(2 * np.count_nonzero(limited & ~ball) + np.count_nonzero(limited & ball)
               + 2 * np.count_nonzero(m.tendon_limited) + 2 * _swing_twist_limits(m))


def _swing_twist_limits(m: Model) -> int:
    """Ball joints with PhysX limits: a cone row and two twist rows, not MuJoCo's one."""
    physx = np.isin(np.asarray(m.jnt_limit_model), (LIMIT_HARD, LIMIT_SPRING))
    return int(np.count_nonzero(np.asarray(m.jnt_limited, bool) & (np.asarray(m.jnt_type) == 1) & physx))


def friction_rows(m: Model) -> int:
    """One row per dof and per tendon with friction loss, when it is a constraint."""
    if m.opt.frictionloss == "smooth":
        return 0
    return int(np.count_nonzero(m.dof_frictionloss) + np.count_nonzero(m.tendon_frictionloss))


FLOAT32_MIN_TOLERANCE = 1e-6


def solver_tolerance(tolerance: float, dtype) -> float:
    """The tolerance the solvers stop at. MuJoCo's default (1e-8) was chosen for float64:
    in float32 the gradient's round-off alone is larger, so the solver would spend
    iterations moving around the optimum; float32 Worlds stop at 1e-6 at the finest."""
    if np.dtype(dtype) == np.float32:
        return max(tolerance, FLOAT32_MIN_TOLERANCE)
    return tolerance


def sparse_columns(m: Model) -> np.ndarray:
    """The column (dof) of each entry of the sparse mass matrix's rows: row i holds i, then
    its ancestors. Read from a table, the entries of a row are independent loads instead
    of a chain of parent lookups, so walks along a row overlap their steps."""
    cols = np.zeros(_pad(m.nM), np.int32)
    for i in range(m.nv):
        adr, j = m.dof_Madr[i], i
        while j >= 0:
            cols[adr] = j
            adr, j = adr + 1, m.dof_parentid[j]
    return cols


def pack_model(m: Model, dtype, nefc_capacity: int = 0, npair: int = 0) -> dict:
    """Pack a Model into the kernels' tables (numpy arrays, float tables in ``dtype``)."""
    integrator = m.opt.integrator
    # one env's entries in each flat data table, from the shapes the World allocates
    shapes = data_shapes(m, 1)
    strides = [int(np.prod(shapes[name][1:])) for name in ("body_d", "jnt_d", "dof_d", "qM")]
    sizes = np.array([m.nbody, m.njnt, m.nq, m.nv, m.nu, m.ntendon, integrator, m.opt.disableflags,
                      nefc_capacity, m.opt.iterations, m.ngeom, npair, m.neq,
                      m.opt.frictionloss == "smooth", m.opt.ls_iterations, *strides, m.nbody * NBODY_F,
                      _pad(m.njnt) * NJNT_F, _pad(m.nv) * NDOF_F, _pad(m.nv) * NDOF_I], np.int32)

    body_i = np.zeros((m.nbody, NBODY_I), np.int32)
    body_i[:, BODY_PARENT] = m.body_parentid
    body_i[:, BODY_ROOT] = m.body_rootid
    body_i[:, BODY_JNTNUM] = m.body_jntnum
    body_i[:, BODY_JNTADR] = m.body_jntadr
    body_i[:, BODY_DOFNUM] = m.body_dofnum
    body_i[:, BODY_DOFADR] = m.body_dofadr
    body_f = np.zeros((m.nbody, NBODY_F))
    for b in range(m.nbody):
        _put(body_f, b, BODY_F, "pos", m.body_pos[b])
        _put(body_f, b, BODY_F, "quat", m.body_quat[b])
        _put(body_f, b, BODY_F, "ipos", m.body_ipos[b])
        _put(body_f, b, BODY_F, "iquat", m.body_iquat[b])
        _put(body_f, b, BODY_F, "mass", m.body_mass[b])
        _put(body_f, b, BODY_F, "inertia", m.body_inertia[b])
        _put(body_f, b, BODY_F, "invweight0", m.body_invweight0[b])

    jnt_i = np.zeros((_pad(m.njnt), NJNT_I), np.int32)
    jnt_f = np.zeros((_pad(m.njnt), NJNT_F))
    for j in range(m.njnt):
        jnt_i[j, :JNT_LIMIT_MODEL] = (m.jnt_type[j], m.jnt_bodyid[j], m.jnt_qposadr[j], m.jnt_dofadr[j], m.jnt_limited[j])
        _put(jnt_f, j, JNT_F, "range", m.jnt_range[j])
        _put(jnt_f, j, JNT_F, "margin", m.jnt_margin[j])
        _put(jnt_f, j, JNT_F, "solref", m.jnt_solref[j])
        _put(jnt_f, j, JNT_F, "solimp", m.jnt_solimp[j])
        _put(jnt_f, j, JNT_F, "pos", m.jnt_pos[j])
        _put(jnt_f, j, JNT_F, "axis", m.jnt_axis[j])
        _put(jnt_f, j, JNT_F, "stiffness", m.jnt_stiffness[j])

    dof_i = np.zeros((_pad(m.nv), NDOF_I), np.int32)
    dof_f = np.zeros((_pad(m.nv), NDOF_F))
    for d in range(m.nv):
        rowlen = (m.dof_Madr[d + 1] if d + 1 < m.nv else m.nM) - m.dof_Madr[d]
        dof_i[d, : DOF_MROWLEN + 1] = (m.dof_bodyid[d], m.dof_jntid[d], m.dof_parentid[d], m.dof_Madr[d], rowlen)
        dof_f[d, : DOF_F["drive_stiffness"][0]] = (m.dof_armature[d], m.dof_damping[d], m.dof_frictionloss[d], m.dof_invweight0[d], *m.dof_solref[d],
                    *m.dof_solimp[d])

    dof_i = np.concatenate([dof_i.ravel(), sparse_columns(m)])

    q_f = np.zeros((_pad(m.nq), NQ_F))
    q_f[: m.nq, 0] = m.qpos0
    q_f[: m.nq, 1] = m.qpos_spring

    act_i = np.zeros((_pad(m.nu), NACT_I), np.int32)
    act_f = np.zeros((_pad(m.nu), NACT_F))
    for u in range(m.nu):
        act_i[u] = (m.actuator_trntype[u], m.actuator_trnid[u], m.actuator_gaintype[u], m.actuator_biastype[u],
                    m.actuator_ctrllimited[u], m.actuator_forcelimited[u])
        _put(act_f, u, ACT_F, "gainprm", m.actuator_gainprm[u, :3])
        _put(act_f, u, ACT_F, "biasprm", m.actuator_biasprm[u, :3])
        _put(act_f, u, ACT_F, "gear", m.actuator_gear[u, 0])
        _put(act_f, u, ACT_F, "ctrlrange", m.actuator_ctrlrange[u])
        _put(act_f, u, ACT_F, "forcerange", m.actuator_forcerange[u])

    ten_i = np.zeros((_pad(m.ntendon), NTEN_I), np.int32)
    ten_f = np.zeros((_pad(m.ntendon), NTEN_F))
    for t in range(m.ntendon):
        ten_i[t] = (m.tendon_adr[t], m.tendon_num[t], m.tendon_limited[t])
        _put(ten_f, t, TEN_F, "range", m.tendon_range[t])
        _put(ten_f, t, TEN_F, "margin", m.tendon_margin[t])
        _put(ten_f, t, TEN_F, "invweight0", m.tendon_invweight0[t])
        _put(ten_f, t, TEN_F, "solref_lim", m.tendon_solref_lim[t])
        _put(ten_f, t, TEN_F, "solimp_lim", m.tendon_solimp_lim[t])
        _put(ten_f, t, TEN_F, "solref_fri", m.tendon_solref_fri[t])
        _put(ten_f, t, TEN_F, "solimp_fri", m.tendon_solimp_fri[t])
        _put(ten_f, t, TEN_F, "stiffness", m.tendon_stiffness[t])
        _put(ten_f, t, TEN_F, "damping", m.tendon_damping[t])
        _put(ten_f, t, TEN_F, "frictionloss", m.tendon_frictionloss[t])
        _put(ten_f, t, TEN_F, "lengthspring", m.tendon_lengthspring[t])
    wrap_i = np.zeros((_pad(m.nwrap), 1), np.int32)
    wrap_i[: m.nwrap, WRAP_OBJID] = m.wrap_objid
    wrap_f = np.zeros((_pad(m.nwrap), 1))
    wrap_f[: m.nwrap, WRAP_COEF] = m.wrap_prm

    opt_f = np.zeros((1, NOPT_F))
    _put(opt_f, 0, OPT_F, "timestep", m.opt.timestep)
    _put(opt_f, 0, OPT_F, "gravity", m.opt.gravity)
    _put(opt_f, 0, OPT_F, "wind", m.opt.wind)
    _put(opt_f, 0, OPT_F, "density", m.opt.density)
    _put(opt_f, 0, OPT_F, "viscosity", m.opt.viscosity)
    _put(opt_f, 0, OPT_F, "friction_smoothing", 1000.0)
    _put(opt_f, 0, OPT_F, "tolerance", solver_tolerance(m.opt.tolerance, dtype))
    _put(opt_f, 0, OPT_F, "impratio", m.opt.impratio)
    _put(opt_f, 0, OPT_F, "meaninertia", m.stat_meaninertia)
    _put(opt_f, 0, OPT_F, "ls_tolerance", m.opt.ls_tolerance)

    eq_i = np.zeros((_pad(m.neq), NEQ_I), np.int32)
    eq_f = np.zeros((_pad(m.neq), NEQ_F))
    for e in range(m.neq):
        obj1, obj2, data, quat2 = _equality_frames(m, e)
        eq_i[e] = (m.eq_type[e], obj1, obj2, m.eq_active0[e])
        eq_f[e] = np.concatenate([data, m.eq_solref[e], m.eq_solimp[e],
                                  [min(m.eq_break_force[e], 1e30), min(m.eq_break_torque[e], 1e30)], quat2])

    _pack_limits_and_drives(m, jnt_i, jnt_f, dof_f)

    floats = dict(eq_f=eq_f, body_f=body_f, jnt_f=jnt_f, dof_f=dof_f, q_f=q_f, act_f=act_f, ten_f=ten_f, wrap_f=wrap_f, opt_f=opt_f)
    out = {k: v[None].astype(dtype) for k, v in floats.items()}  # leading axis: shared row
    out.update(eq_i=eq_i, sizes=sizes, body_i=body_i, jnt_i=jnt_i, dof_i=dof_i, act_i=act_i, ten_i=ten_i, wrap_i=wrap_i)
    return out


def _equality_frames(m: Model, e: int):
    """(obj1, obj2, data, quat2) as the kernels read them. Site-based connect and weld
    become constraints between the sites' bodies: connect holds data[:3] (body1 frame) on
    data[3:6] (body2 frame); weld holds data[3:6] (body1) on data[:3] (body2) with
    relpose = site1's orientation and quat2 = site2's, which is MuJoCo's site semantics."""
    data = np.array(m.eq_data[e], dtype=float)
    quat2 = np.array([1.0, 0.0, 0.0, 0.0])
    obj1, obj2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if len(m.eq_objtype) and m.eq_objtype[e] == OBJ_SITE:
        s1, s2 = obj1, obj2
        obj1, obj2 = int(m.site_bodyid[s1]), int(m.site_bodyid[s2])
        if m.eq_type[e] == EQ_CONNECT:
            data[:3], data[3:6] = m.site_pos[s1], m.site_pos[s2]
        else:
            data[:3], data[3:6], data[6:10] = m.site_pos[s2], m.site_pos[s1], m.site_quat[s1]
            quat2 = np.array(m.site_quat[s2], dtype=float)
    return obj1, obj2, data, quat2


def _pack_limits_and_drives(m: Model, jnt_i, jnt_f, dof_f) -> None:
    """Limit-model and drive columns. JNT_LIMITED keeps only MuJoCo's soft limits, so the
    soft-constraint rows skip joints whose limit is another model."""
    for j in range(m.njnt):
        model = int(m.jnt_limit_model[j]) if m.jnt_limited[j] else -1
        jnt_i[j, JNT_LIMIT_MODEL] = model
        jnt_i[j, JNT_LIMITED] = int(model == LIMIT_SOFT)
        for name in ("limit_strength", "limit_stiffness", "limit_damping", "limit_distance", "limit_restitution",
                     "limit_bounce", "limit_acceleration", "cone", "twist"):
            _put(jnt_f, j, JNT_F, name, getattr(m, "jnt_" + name)[j])
    for d in range(m.nv):
        for name in ("drive_stiffness", "drive_damping", "drive_forcelimit", "drive_acceleration"):
            _put(dof_f, d, DOF_F, name, getattr(m, "dof_" + name)[d])


# Data tables that the kernels index flat (per-body, per-joint and per-dof rows; the
# sparse mass matrix and its factor as rows of one column): env w's row r, column c is
# entry w * stride + r * columns + c. Indexing a (num_envs, rows, columns) ndarray costs a
# reload of the array's shape and two multiplications after every store in the loop
# (LLVM cannot prove the store leaves the shape alone); the flat index adds values held
# in registers: the body stages run 1.1-1.8x faster on flat rows. One trap: Taichi makes
# `table[i] += v` an atomic compare-and-swap loop unless the index starts with the
# parallel loop's variable, which a flat index never does, so flat tables are updated as
# `table[i] = table[i] + v` (each env is one thread's). Flat tables are allocated 1-D;
# data_shapes gives the (num_envs, rows, columns) the host views them as.
FLAT_TABLES = ("body_d", "jnt_d", "dof_d", "qM", "qLD")
# Model tables of the kinematic tree, read in every stage's inner loops (a dof's parent,
# a body's joints, their frames and inertias): indexed flat as row * columns + column, for
# the same reason. The float ones hold one row set, or one per env once World.set_param
# has made them per-env; a kernel finds its env's at (w % sets) * stride.
FLAT_MODEL_TABLES = ("body_i", "jnt_i", "dof_i", "body_f", "jnt_f", "dof_f")


def data_shapes(m: Model, num_envs: int, nefc_capacity: int = 0) -> dict:
    """Shapes of the per-world data tables (FLAT_TABLES are allocated 1-D with as many
    entries and viewed with these shapes on the host)."""
    nv = _pad(m.nv)
    nefc = _pad(nefc_capacity)
    return dict(
        qpos=(num_envs, _pad(m.nq)),
        qvel=(num_envs, nv),
        qacc=(num_envs, nv),
        ctrl=(num_envs, _pad(m.nu)),
        qfrc_applied=(num_envs, nv),
        qpos_start=(num_envs, _pad(m.nq)),
        body_d=(num_envs, m.nbody, NBODY_D),
        jnt_d=(num_envs, _pad(m.njnt), NJNT_D),
        dof_d=(num_envs, nv, NDOF_D),
        qM=(num_envs, _pad(m.nM)),
        qLD=(num_envs, _pad(m.nM)),
        act_d=(num_envs, _pad(m.nu), NACT_D),
        ten_d=(num_envs, _pad(m.ntendon), NTEN_D),
        efc_J=(num_envs, nefc, nv),
        # PGS keeps the rows' dual matrix A = J M^-1 J^T here (nefc x nefc); Newton its
        # nv x nv Hessian's Cholesky factor
        efc_Y=(num_envs, max(nefc, nv), nefc if m.opt.solver == "PGS" else nv),
        efc_f=(num_envs, nefc, NEFC_F),
    )
