"""Constraints of one world: rows, MuJoCo's soft-constraint model, and the PGS solver.

After the smooth dynamics have produced qacc_smooth = M^-1 qfrc_smooth, every active
constraint becomes a row i with Jacobian J_i, a position residual r_i and MuJoCo's
solref/solimp parameters. The soft-constraint model (Todorov 2014) gives each row

    impedance  d_i = solimp sigmoid of |r_i - margin_i|
    regularizer R_i = (1 - d_i) / d_i * A_ii,  A_ii ~ J_i M^-1 J_i^T  (from *_invweight0)
    reference  aref_i = -B_i J_i qvel - K_i d_i (r_i - margin_i)

and the constraint forces f minimise the dual  1/2 f^T (A + R) f + f^T (J qacc_smooth - aref)
under each row's bounds (unilateral rows f >= 0). Projected Gauss-Seidel solves it row by
row on A, formed once per forward pass (nefc solves with M and nefc^2/2 dot products) as
MuJoCo does: a row's update then reads one row of A, where keeping v = M^-1 J^T f up to
date instead would cost 2 nv per row, and a solve takes tens of sweeps. The warm start
maps the previous step's acceleration back to forces and is dropped for zero forces when
its dual cost is positive, as MuJoCo does.

Rows, in MuJoCo's order: equality constraints (connect, weld, joint coupling), friction
loss of dofs and tendons (unless Option.frictionloss is "smooth"), limits of joints
(hinge, slide, ball) and fixed tendons, and contacts with pyramidal friction cones
(condim 1, 3, 4, 6). Row types are numbered as MuJoCo's mjtConstraint.
"""

import functools
import types

from .. import layout as L
from ..collision.narrowphase import CON_DIM, CON_EXCLUDE, CON_GEOM1, CON_GEOM2, CONTACT_F, NCON
from ..constraint.pgs_cone import make_pgs_cone
from ..constraint.primal import make_primal
from ..model import (
    DSBL_CONSTRAINT,
    DSBL_CONTACT,
    DSBL_EQUALITY,
    DSBL_FRICTIONLOSS,
    DSBL_LIMIT,
    DSBL_REFSAFE,
    DSBL_WARMSTART,
    EQ_CONNECT,
    EQ_JOINT,
    EQ_WELD,
    JNT_BALL,
    JNT_FREE,
    JNT_HINGE,
    JNT_SLIDE,
)
from ..runtime.backend import ti
from ..runtime.ti_math import make_math
from ..smooth.inertia import make_inertia
from ..smooth.limits import make_limits

CNSTR_EQUALITY, CNSTR_FRICTION_DOF, CNSTR_FRICTION_TENDON, CNSTR_LIMIT_JOINT, CNSTR_LIMIT_TENDON = 0, 1, 2, 3, 4
CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL, CNSTR_CONTACT_ELLIPTIC = 5, 6, 7
_MINVAL, _MINIMP, _MAXIMP = 1e-15, 1e-4, 0.9999

E = {k: v[0] for k, v in L.EFC_F.items()}
QACC_SMOOTH, QFRC_CONSTRAINT = L.DOF_D["qacc_smooth"][0], L.DOF_D["qfrc_constraint"][0]
QACC_WARMSTART, CVEL = L.DOF_D["qacc_warmstart"][0], L.DOF_D["constraint_vel"][0]
J_RANGE, J_MARGIN = L.JNT_F["range"][0], L.JNT_F["margin"][0]
J_SOLREF, J_SOLIMP = L.JNT_F["solref"][0], L.JNT_F["solimp"][0]
INVWEIGHT, FRICTIONLOSS = L.DOF_F["invweight0"][0], L.DOF_F["frictionloss"][0]
D_SOLREF, D_SOLIMP = L.DOF_F["solref"][0], L.DOF_F["solimp"][0]
TF = {k: v[0] for k, v in L.TEN_F.items()}
T_LEN = L.TEN_D["length"][0]
B_INVWEIGHT = L.BODY_F["invweight0"][0]
TIMESTEP, TOLERANCE, IMPRATIO = L.OPT_F["timestep"][0], L.OPT_F["tolerance"][0], L.OPT_F["impratio"][0]
MEANINERTIA = L.OPT_F["meaninertia"][0]
CDOF = L.DOF_D["cdof"][0]
SUBTREE_COM, CVEL_B = L.BODY_D["subtree_com"][0], L.BODY_D["cvel"][0]
CDOF_DOT = L.DOF_D["cdof_dot"][0]
XPOS, XQUAT = L.BODY_D["xpos"][0], L.BODY_D["xquat"][0]
EQ_DATA, EQ_SOLREF, EQ_SOLIMP = L.EQ_F["data"][0], L.EQ_F["solref"][0], L.EQ_F["solimp"][0]
EQ_BREAK, EQ_QUAT2 = L.EQ_F["break"][0], L.EQ_F["quat2"][0]
QPOS0 = L.Q_F["qpos0"][0]
C = {k: a for k, (a, _) in CONTACT_F.items()}
GEOM_BODY = 1  # column of the collision stage's geom_i table
_INF = 1e30


@functools.lru_cache(maxsize=None)
def make_constraint(fp, solver: str = "Newton", cone: str = "pyramidal"):
    """The constraint stage for one solver ("PGS", "CG", "Newton") and friction cone
    ("pyramidal", "elliptic"): only the chosen code is compiled into the step kernel."""
    m = make_math(fp)
    inertia = make_inertia(fp)
    physx_limits = make_limits(fp).physx_limit_rows  # hard and spring limits (physics/smooth/limits.py)
    primal = make_primal(fp, solver == "Newton", cone == "elliptic")
    pgs_cone = make_pgs_cone(fp)

    # --- rows -----------------------------------------------------------------------
    @ti.func
    def new_row(w, nefc, sizes: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Index of a fresh zeroed row, or -1 (and the overflow count bumped) when full."""
        row = -1
        if nefc < sizes[L.SIZE_NEFC]:
            row = nefc
            for d in range(sizes[L.SIZE_NV]):
                efc_J[w, row, d] = 0
        else:
            efc_n[w, L.EFC_OVERFLOW] += 1
        return row

    @ti.func
    def set_row(w, row, efc_f: ti.template(), kind, obj, pos, margin, diag_a, lower, upper):
        efc_f[w, row, E["type"]] = kind
        efc_f[w, row, E["id"]] = obj
        efc_f[w, row, E["pos"]] = pos
        efc_f[w, row, E["imppos"]] = pos
        efc_f[w, row, E["jdotv"]] = 0
        efc_f[w, row, E["margin"]] = margin
        efc_f[w, row, E["diagA"]] = diag_a
        efc_f[w, row, E["lower"]] = lower
        efc_f[w, row, E["upper"]] = upper

    @ti.func
    def joint_limits(w, nefc, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(),
                     dof_f: ti.template(), qpos: ti.template(), efc_J: ti.template(), efc_f: ti.template(),
                     efc_n: ti.template()):
        """Rows for joints within their margin of a limit (MuJoCo's mj_instantiateLimit)."""
        n = nefc
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        for j in range(sizes[L.SIZE_NJNT]):
            jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
            if jnt_i[j * L.NJNT_I + L.JNT_LIMITED] != 0 and (jtype == JNT_HINGE or jtype == JNT_SLIDE):
                value = qpos[w, jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]]
                margin = jnt_f[mj + j * L.NJNT_F + J_MARGIN]
                da = jnt_i[j * L.NJNT_I + L.JNT_DOFADR]
                for s in ti.static(range(2)):
                    side = fp(-1.0) if s == 0 else fp(1.0)
                    dist = side * (jnt_f[mj + j * L.NJNT_F + J_RANGE + s] - value)
                    if dist < margin:
                        row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                        if row >= 0:
                            efc_J[w, row, da] = -side
                            set_row(w, row, efc_f, CNSTR_LIMIT_JOINT, j, dist, margin,
                                    dof_f[md + da * L.NDOF_F + INVWEIGHT],
                                    fp(0.0), fp(_INF))
                            copy_sol(w, row, efc_f, jnt_f, mj + j * L.NJNT_F + J_SOLREF, mj + j * L.NJNT_F + J_SOLIMP)
                            n += 1
            elif jnt_i[j * L.NJNT_I + L.JNT_LIMITED] != 0 and jtype == JNT_BALL:
                pa = jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]
                q = m.quat_normalize(m.vec4(qpos[w, pa], qpos[w, pa + 1], qpos[w, pa + 2], qpos[w, pa + 3]))
                axis_angle = quat_axis_angle(q)
                axis = m.vec3(axis_angle[0], axis_angle[1], axis_angle[2])
                angle = axis_angle[3]
                margin = jnt_f[mj + j * L.NJNT_F + J_MARGIN]
                dist = ti.max(jnt_f[mj + j * L.NJNT_F + J_RANGE], jnt_f[mj + j * L.NJNT_F + J_RANGE + 1]) - angle
                if dist < margin:
                    row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                    if row >= 0:
                        da = jnt_i[j * L.NJNT_I + L.JNT_DOFADR]
                        for k in ti.static(range(3)):
                            efc_J[w, row, da + k] = -axis[k]
                        set_row(w, row, efc_f, CNSTR_LIMIT_JOINT, j, dist, margin,
                                dof_f[md + da * L.NDOF_F + INVWEIGHT],
                                fp(0.0), fp(_INF))
                        copy_sol(w, row, efc_f, jnt_f, mj + j * L.NJNT_F + J_SOLREF, mj + j * L.NJNT_F + J_SOLIMP)
                        n += 1
        return n

    @ti.func
    def equalities(w, nefc, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(),
                   dof_i: ti.template(), dof_f: ti.template(), q_f: ti.template(), qpos: ti.template(),
                   qvel: ti.template(), body_d: ti.template(),
                   dof_d: ti.template(), eq_i: ti.template(), eq_f: ti.template(), eq_d: ti.template(),
                   efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows of the equality constraints active in world w (MuJoCo's mj_instantiateEquality)."""
        n = nefc
        me = w % eq_f.shape[0]
        for e in range(sizes[L.SIZE_NEQ]):
            if eq_d[w, e, L.EQ_D_ACTIVE] != 0:
                kind = eq_i[e, L.EQ_TYPE]
                nrow = 1
                if kind == EQ_CONNECT:
                    nrow = 3
                elif kind == EQ_WELD:
                    nrow = 6
                if n + nrow > sizes[L.SIZE_NEFC]:
                    efc_n[w, L.EFC_OVERFLOW] += nrow
                else:
                    if kind == EQ_JOINT:
                        # a joint row fills only its joints' columns (body rows write all theirs)
                        for d in range(sizes[L.SIZE_NV]):
                            efc_J[w, n, d] = 0
                        joint_coupling(w, n, e, me, sizes, jnt_i, dof_f, q_f, qpos, eq_i, eq_f, efc_J, efc_f)
                    else:
                        body_equality(w, n, e, me, kind, sizes, body_i, body_f, jnt_i, dof_i, qvel, body_d, dof_d,
                                      eq_i, eq_f,
                                      efc_J, efc_f)
                    for r in range(nrow):
                        for k in ti.static(range(2)):
                            efc_f[w, n + r, E["solref"] + k] = eq_f[me, e, EQ_SOLREF + k]
                        for k in ti.static(range(5)):
                            efc_f[w, n + r, E["solimp"] + k] = eq_f[me, e, EQ_SOLIMP + k]
                    n += nrow
        return n

    @ti.func
    def break_overloaded(w, nefc, eq_i: ti.template(), eq_f: ti.template(), eq_d: ti.template(),
                         efc_f: ti.template()):
        """Turn off, in world w only, each equality constraint whose force (rows 0-2, or
        the joint row) or torque (a weld's rows 3-5) exceeds its break limits; it still
        acts in the step it breaks, as a PhysX joint does, and the break is recorded."""
        me = w % eq_f.shape[0]
        i = 0
        while i < nefc:
            nrow = 1
            if efc_f[w, i, E["type"]] == CNSTR_EQUALITY:
                e = ti.cast(efc_f[w, i, E["id"]], ti.i32)
                kind = eq_i[e, L.EQ_TYPE]
                nrow = 3 if kind == EQ_CONNECT else (6 if kind == EQ_WELD else 1)
                force = fp(0.0)
                for r in range(ti.min(nrow, 3)):
                    force += efc_f[w, i + r, E["force"]] ** 2
                torque = fp(0.0)
                for r in range(3, nrow):
                    torque += efc_f[w, i + r, E["force"]] ** 2
                if ti.sqrt(force) > eq_f[me, e, EQ_BREAK] or ti.sqrt(torque) > eq_f[me, e, EQ_BREAK + 1]:
                    eq_d[w, e, L.EQ_D_ACTIVE] = 0
                    eq_d[w, e, L.EQ_D_BROKEN] = 1
            i += nrow

    @ti.func
    def joint_coupling(w, row, e, me, sizes: ti.template(), jnt_i: ti.template(), dof_f: ti.template(),
                       q_f: ti.template(), qpos: ti.template(), eq_i: ti.template(), eq_f: ti.template(),
                       efc_J: ti.template(), efc_f: ti.template()):
        """q1 - q1_0 = c0 + c1 d + ... + c4 d^4 with d = q2 - q2_0 (or q1 - q1_0 = c0)."""
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        j1 = eq_i[e, L.EQ_OBJ1]
        j2 = eq_i[e, L.EQ_OBJ2]
        a1 = jnt_i[j1 * L.NJNT_I + L.JNT_QPOSADR]
        d1 = jnt_i[j1 * L.NJNT_I + L.JNT_DOFADR]
        pos = qpos[w, a1] - q_f[0, a1, QPOS0] - eq_f[me, e, EQ_DATA]
        diag = dof_f[md + d1 * L.NDOF_F + INVWEIGHT]
        efc_J[w, row, d1] = 1
        if j2 >= 0:
            a2 = jnt_i[j2 * L.NJNT_I + L.JNT_QPOSADR]
            d2 = jnt_i[j2 * L.NJNT_I + L.JNT_DOFADR]
            dif = qpos[w, a2] - q_f[0, a2, QPOS0]
            poly = fp(0.0)
            deriv = fp(0.0)
            for k in ti.static(range(1, 5)):
                c = eq_f[me, e, EQ_DATA + k]
                poly += c * ti.pow(dif, k)
                deriv += k * c * ti.pow(dif, k - 1)
            pos -= poly
            efc_J[w, row, d2] -= deriv
            diag += dof_f[md + d2 * L.NDOF_F + INVWEIGHT]
        set_row(w, row, efc_f, CNSTR_EQUALITY, e, pos, fp(0.0), diag, fp(-_INF), fp(_INF))

    @ti.func
    def point_jacdot_qvel(w, b, point, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(),
                          dof_i: ti.template(), qvel: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        """(dJ_rot/dt qvel, dJ_pos/dt qvel) of a point fixed to body b, as a spatial vector
        (MuJoCo's mj_jacDot times qvel)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        com = m.at3(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_ROOT] * L.NBODY_D + SUBTREE_COM)
        offset = point - com
        cvel = m.at6(body_d, o_body + b * L.NBODY_D + CVEL_B)
        pvel = m.lin(cvel) + m.ang(cvel).cross(offset)
        lin = m.vec3(0)
        ang = m.vec3(0)
        while b > 0:
            adr = body_i[b * L.NBODY_I + L.BODY_DOFADR]
            for d in range(adr, adr + body_i[b * L.NBODY_I + L.BODY_DOFNUM]):
                cdof = m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF)
                cdof_dot = m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF_DOT)
                j = dof_i[d * L.NDOF_I + L.DOF_JNT]
                jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
                if jtype == JNT_BALL or (jtype == JNT_FREE and d >= jnt_i[j * L.NJNT_I + L.JNT_DOFADR] + 3):
                    cdof_dot = m.cross_motion(m.at6(body_d, o_body + b * L.NBODY_D + CVEL_B), cdof)
                v = qvel[w, d]
                ang += m.ang(cdof_dot) * v
                lin += (m.lin(cdof_dot) + m.ang(cdof_dot).cross(offset) + m.ang(cdof).cross(pvel)) * v
            b = body_i[b * L.NBODY_I + L.BODY_PARENT]
        return m.spatial(ang, lin)

    @ti.func
    def quat_deriv(q, omega):
        """0.5 q (0, omega), MuJoCo's mju_derivQuat, which the weld's Jdot qvel applies to
        the bodies' world-frame angular velocities."""
        return fp(0.5) * m.vec4(-omega[0] * q[1] - omega[1] * q[2] - omega[2] * q[3],
                                omega[0] * q[0] + omega[1] * q[3] - omega[2] * q[2],
                                -omega[0] * q[3] + omega[1] * q[0] + omega[2] * q[1],
                                omega[0] * q[2] - omega[1] * q[1] + omega[2] * q[0])

    @ti.func
    def body_point(o_body, b, local, body_d: ti.template()):
        row = o_body + b * L.NBODY_D
        return m.at3(body_d, row + XPOS) + m.quat_rotate(m.at4(body_d, row + XQUAT), local)

    @ti.func
    def body_equality(w, row, e, me, kind, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(),
                      jnt_i: ti.template(), dof_i: ti.template(), qvel: ti.template(), body_d: ti.template(),
                      dof_d: ti.template(), eq_i: ti.template(), eq_f: ti.template(), efc_J: ti.template(),
                      efc_f: ti.template()):
        """Connect: 3 rows p1 - p2 = 0. Weld: those at its anchor plus 3 rows for the
        orientation error, the vector part of conj(q2) q1 relpose, scaled by torquescale."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        b1 = eq_i[e, L.EQ_OBJ1]
        b2 = eq_i[e, L.EQ_OBJ2]
        d0 = m.vec3(eq_f[me, e, EQ_DATA], eq_f[me, e, EQ_DATA + 1], eq_f[me, e, EQ_DATA + 2])
        d1 = m.vec3(eq_f[me, e, EQ_DATA + 3], eq_f[me, e, EQ_DATA + 4], eq_f[me, e, EQ_DATA + 5])
        p1 = body_point(o_body, b1, d0, body_d)
        p2 = body_point(o_body, b2, d1, body_d)
        if kind == EQ_WELD:
            p1 = body_point(o_body, b1, d1, body_d)
            p2 = body_point(o_body, b2, d0, body_d)
        cpos = p1 - p2
        tran = body_f[mb + b1 * L.NBODY_F + B_INVWEIGHT] + body_f[mb + b2 * L.NBODY_F + B_INVWEIGHT]
        rot = body_f[mb + b1 * L.NBODY_F + B_INVWEIGHT + 1] + body_f[mb + b2 * L.NBODY_F + B_INVWEIGHT + 1]
        norm2 = cpos.dot(cpos)
        # connect: the points' relative velocity; weld: and the bodies' relative angular velocity
        relative_jacobian(w, row, 6 if kind == EQ_WELD else 3, qvel.shape[1], b1, p1, b2, p2,
                          ti.Matrix.identity(fp, 3), body_i, body_d, dof_d, efc_J)
        for k in ti.static(range(3)):
            set_row(w, row + k, efc_f, CNSTR_EQUALITY, e, cpos[k], fp(0.0), tran, fp(-_INF), fp(_INF))
        jdv1 = point_jacdot_qvel(w, b1, p1, sizes, body_i, jnt_i, dof_i, qvel, body_d, dof_d)
        jdv2 = point_jacdot_qvel(w, b2, p2, sizes, body_i, jnt_i, dof_i, qvel, body_d, dof_d)
        jdv = m.lin(jdv1) - m.lin(jdv2)
        for k in ti.static(range(3)):
            efc_f[w, row + k, E["jdotv"]] = jdv[k]
        if kind == EQ_WELD:
            scale = eq_f[me, e, EQ_DATA + 10]
            rel = m.vec4(eq_f[me, e, EQ_DATA + 6], eq_f[me, e, EQ_DATA + 7], eq_f[me, e, EQ_DATA + 8],
                         eq_f[me, e, EQ_DATA + 9])
            quat2 = m.vec4(eq_f[me, e, EQ_QUAT2], eq_f[me, e, EQ_QUAT2 + 1], eq_f[me, e, EQ_QUAT2 + 2],
                           eq_f[me, e, EQ_QUAT2 + 3])
            q1rel = m.quat_mul(m.at4(body_d, o_body + b1 * L.NBODY_D + XQUAT), rel)
            q2inv = m.quat_conj(m.quat_mul(m.at4(body_d, o_body + b2 * L.NBODY_D + XQUAT), quat2))
            err = m.quat_mul(q2inv, q1rel)
            # d(err)/d(qvel): 0.5 conj(q2) (w1 - w2) q1 relpose, per dof
            for d in range(qvel.shape[1]):
                omega = m.vec4(fp(0.0), efc_J[w, row + 3, d], efc_J[w, row + 4, d], efc_J[w, row + 5, d])
                if omega[1] != 0 or omega[2] != 0 or omega[3] != 0:
                    col = m.quat_mul(m.quat_mul(q2inv, omega), q1rel)
                    for k in ti.static(range(3)):
                        efc_J[w, row + 3 + k, d] = fp(0.5) * scale * col[k + 1]
            for k in ti.static(range(3)):
                set_row(w, row + 3 + k, efc_f, CNSTR_EQUALITY, e, scale * err[k + 1], fp(0.0), rot, fp(-_INF),
                        fp(_INF))
                norm2 += (scale * err[k + 1]) ** 2
            # d/dt of 0.5 conj(q2) (w1 - w2) q1 relpose, by the product rule
            omega1 = m.ang(m.at6(body_d, o_body + b1 * L.NBODY_D + CVEL_B))
            omega2 = m.ang(m.at6(body_d, o_body + b2 * L.NBODY_D + CVEL_B))
            domega = m.vec4(fp(0.0), omega1[0] - omega2[0], omega1[1] - omega2[1], omega1[2] - omega2[2])
            djr = m.ang(jdv1) - m.ang(jdv2)
            qdot1rel = m.quat_mul(quat_deriv(m.at4(body_d, o_body + b1 * L.NBODY_D + XQUAT), omega1), rel)
            xquat2 = m.at4(body_d, o_body + b2 * L.NBODY_D + XQUAT)
            qdot2inv = m.quat_conj(m.quat_mul(quat_deriv(xquat2, omega2), quat2))
            t1 = m.quat_mul(m.quat_mul(qdot2inv, domega), q1rel)
            t2 = m.quat_mul(m.quat_mul(q2inv, m.vec4(fp(0.0), djr[0], djr[1], djr[2])), q1rel)
            t3 = m.quat_mul(m.quat_mul(q2inv, domega), qdot1rel)
            for k in ti.static(range(3)):
                efc_f[w, row + 3 + k, E["jdotv"]] = fp(0.5) * scale * (t1[k + 1] + t2[k + 1] + t3[k + 1])
        nrow = 6 if kind == EQ_WELD else 3
        for r in range(nrow):
            efc_f[w, row + r, E["imppos"]] = ti.sqrt(norm2)

    @ti.func
    def contact_axis(w, c, con_f: ti.template(), k):
        """Row k of the contact frame: the normal, then the two tangents."""
        a = C["frame"] + 3 * k
        return m.vec3(con_f[w, c, a], con_f[w, c, a + 1], con_f[w, c, a + 2])

    @ti.func
    def contacts(w, nefc, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), body_d: ti.template(),
                 dof_d: ti.template(), geom_i: ti.template(), con_f: ti.template(), con_i: ti.template(),
                 con_n: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows of each contact: one frictionless row, the 2 (condim - 1) edges of the
        friction pyramid J_n +- mu_k J_k, or the condim rows of an elliptic cone
        (MuJoCo's mj_instantiateContact)."""
        n = nefc
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        for c in range(con_n[w, NCON]):
            if con_i[w, c, CON_EXCLUDE] == 0:
                dim = con_i[w, c, CON_DIM]
                nrow = 1 if dim == 1 else 2 * (dim - 1)
                if ti.static(cone == "elliptic"):
                    if dim > 1:
                        nrow = dim
                if n + nrow > sizes[L.SIZE_NEFC]:
                    efc_n[w, L.EFC_OVERFLOW] += nrow
                else:
                    b1 = geom_i[con_i[w, c, CON_GEOM1], GEOM_BODY]
                    b2 = geom_i[con_i[w, c, CON_GEOM2], GEOM_BODY]
                    point = m.vec3(con_f[w, c, C["pos"]], con_f[w, c, C["pos"] + 1], con_f[w, c, C["pos"] + 2])
                    tran = body_f[mb + b1 * L.NBODY_F + B_INVWEIGHT] + body_f[mb + b2 * L.NBODY_F + B_INVWEIGHT]
                    rot = body_f[mb + b1 * L.NBODY_F + B_INVWEIGHT + 1] + body_f[mb + b2 * L.NBODY_F + B_INVWEIGHT + 1]
                    nv = sizes[L.SIZE_NV]
                    # frame rows: the normal and tangents; geom2 moves relative to geom1
                    frame = ti.Matrix.rows([contact_axis(w, c, con_f, 0), contact_axis(w, c, con_f, 1),
                                            contact_axis(w, c, con_f, 2)])
                    relative_jacobian(w, n, dim, nv, b2, point, b1, point, frame, body_i, body_d, dof_d, efc_J)
                    if ti.static(cone == "elliptic"):
                        if dim > 1:
                            elliptic_rows(w, n, c, dim, tran, rot, con_f, efc_f)
                        else:
                            pyramid_rows(w, n, c, dim, nv, tran, rot, con_f, efc_J, efc_f)
                    else:
                        pyramid_rows(w, n, c, dim, nv, tran, rot, con_f, efc_J, efc_f)
                    for r in range(nrow):
                        for k in ti.static(range(2)):
                            efc_f[w, n + r, E["solref"] + k] = con_f[w, c, C["solref"] + k]
                        for k in ti.static(range(5)):
                            efc_f[w, n + r, E["solimp"] + k] = con_f[w, c, C["solimp"] + k]
                    n += nrow
        return n

    @ti.func
    def relative_jacobian(w, n, nrow, nv, b1, p1, b2, p2, frame, body_i: ti.template(), body_d: ti.template(),
                          dof_d: ti.template(), efc_J: ti.template()):
        """Rows n .. n+nrow-1 <- the frame's components of d(velocity of point p1 on body
        b1 relative to p2 on b2)/d qvel, then of the bodies' relative angular velocity
        (MuJoCo's mj_jacDifPair seen in the frame). One walk per body's chain serves every
        row."""
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        o_body = w * (body_i.shape[0] // L.NBODY_I) * L.NBODY_D
        for k in range(nrow):
            for d in range(nv):
                efc_J[w, n + k, d] = 0
        for side in ti.static(range(2)):
            b = b1 if side == 0 else b2
            sign = fp(1.0) if side == 0 else fp(-1.0)
            com = m.at3(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_ROOT] * L.NBODY_D + SUBTREE_COM)
            offset = (p1 if side == 0 else p2) - com
            while b > 0:
                adr = body_i[b * L.NBODY_I + L.BODY_DOFADR]
                for d in range(adr, adr + body_i[b * L.NBODY_I + L.BODY_DOFNUM]):
                    cdof = m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF)
                    ang = m.vec3(cdof[0], cdof[1], cdof[2])
                    lin = frame @ (m.vec3(cdof[3], cdof[4], cdof[5]) + ang.cross(offset))
                    for k in ti.static(range(3)):
                        if k < nrow:
                            efc_J[w, n + k, d] += sign * lin[k]
                    if nrow > 3:
                        rot = frame @ ang
                        for k in ti.static(range(3)):
                            if k + 3 < nrow:
                                efc_J[w, n + 3 + k, d] += sign * rot[k]
                b = body_i[b * L.NBODY_I + L.BODY_PARENT]

    @ti.func
    def pyramid_rows(w, n, c, dim, nv, tran, rot, con_f: ti.template(), efc_J: ti.template(),
                     efc_f: ti.template()):
        """The frame rows n .. n+dim-1 of relative_jacobian become the pyramid's edges
        J_n +- mu_k J_k, in place."""
        if dim == 1:
            set_row(w, n, efc_f, CNSTR_CONTACT_FRICTIONLESS, c, con_f[w, c, C["dist"]],
                    con_f[w, c, C["includemargin"]], tran, fp(0.0), fp(_INF))
        else:
            mu = m.vec6(0)
            for k in ti.static(range(1, 6)):
                if k < dim:
                    mu[k] = con_f[w, c, C["friction"] + k - 1]
            for d in range(nv):
                p = m.vec6(0)
                for k in ti.static(range(6)):
                    if k < dim:
                        p[k] = efc_J[w, n + k, d]
                for k in ti.static(range(1, 6)):
                    if k < dim:
                        efc_J[w, n + 2 * (k - 1), d] = p[0] + mu[k] * p[k]
                        efc_J[w, n + 2 * (k - 1) + 1, d] = p[0] - mu[k] * p[k]
            for k in ti.static(range(1, 6)):
                if k < dim:
                    # dims 1, 2 slide along the tangents; 3 spins about the normal; 4, 5 roll
                    other = tran
                    if ti.static(k >= 3):
                        other = rot
                    diag = tran + mu[k] * mu[k] * other
                    for s in ti.static(range(2)):
                        set_row(w, n + 2 * (k - 1) + s, efc_f, CNSTR_CONTACT_PYRAMIDAL, c, con_f[w, c, C["dist"]],
                                con_f[w, c, C["includemargin"]], diag, fp(0.0), fp(_INF))

    @ti.func
    def elliptic_rows(w, n, c, dim, tran, rot, con_f: ti.template(), efc_f: ti.template()):
        """The normal row, then one row per friction direction (tangents, spin, rolling):
        the contact-frame rows of relative_jacobian. Only the normal row has a position; the
        impedance of all of them comes from the contact's distance."""
        for k in range(dim):
            pos = con_f[w, c, C["dist"]] if k == 0 else fp(0.0)
            margin = con_f[w, c, C["includemargin"]] if k == 0 else fp(0.0)
            # the normal force is >= 0; friction forces have either sign, bounded by the cone
            set_row(w, n + k, efc_f, CNSTR_CONTACT_ELLIPTIC, c, pos, margin, tran if k < 3 else rot,
                    fp(0.0) if k == 0 else fp(-_INF), fp(_INF))
            efc_f[w, n + k, E["imppos"]] = con_f[w, c, C["dist"]] - con_f[w, c, C["includemargin"]] + margin
            efc_f[w, n + k, E["fric"]] = con_f[w, c, C["friction"] + k - 1] if k > 0 else fp(0.0)
        efc_f[w, n, E["cone"] + 5] = dim

    @ti.func
    def tendon_jacobian_add(w, row, t, sign, ten_i: ti.template(), jnt_i: ti.template(), wrap_i: ti.template(),
                            wrap_f: ti.template(), efc_J: ti.template()):
        """efc_J[row] += sign * d(length of fixed tendon t)/d(qvel)."""
        mw = w % wrap_f.shape[0]
        for n in range(ten_i[t, L.TEN_ADR], ten_i[t, L.TEN_ADR] + ten_i[t, L.TEN_NUM]):
            efc_J[w, row, jnt_i[wrap_i[n, L.WRAP_OBJID] * L.NJNT_I + L.JNT_DOFADR]] += sign * wrap_f[mw, n, 0]

    @ti.func
    def copy_sol_cols(w, row, efc_f: ti.template(), src: ti.template(), ms, obj, ref_col, imp_col):
        for k in ti.static(range(2)):
            efc_f[w, row, E["solref"] + k] = src[ms, obj, ref_col + k]
        for k in ti.static(range(5)):
            efc_f[w, row, E["solimp"] + k] = src[ms, obj, imp_col + k]

    @ti.func
    def friction_loss(w, nefc, sizes: ti.template(), jnt_i: ti.template(), dof_f: ti.template(),
                      ten_i: ti.template(), ten_f: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(),
                      efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """A row per dof and per tendon with friction loss: a force bounded by +-frictionloss
        that opposes motion (MuJoCo's mj_instantiateFriction)."""
        n = nefc
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mt = w % ten_f.shape[0]
        for d in range(sizes[L.SIZE_NV]):
            loss = dof_f[md + d * L.NDOF_F + FRICTIONLOSS]
            if loss > 0:
                row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                if row >= 0:
                    efc_J[w, row, d] = 1
                    set_row(w, row, efc_f, CNSTR_FRICTION_DOF, d, fp(0.0), fp(0.0),
                            dof_f[md + d * L.NDOF_F + INVWEIGHT], -loss,
                            loss)
                    copy_sol(w, row, efc_f, dof_f, md + d * L.NDOF_F + D_SOLREF, md + d * L.NDOF_F + D_SOLIMP)
                    n += 1
        for t in range(sizes[L.SIZE_NTENDON]):
            loss = ten_f[mt, t, TF["frictionloss"]]
            if loss > 0:
                row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                if row >= 0:
                    tendon_jacobian_add(w, row, t, fp(1.0), ten_i, jnt_i, wrap_i, wrap_f, efc_J)
                    set_row(w, row, efc_f, CNSTR_FRICTION_TENDON, t, fp(0.0), fp(0.0), ten_f[mt, t, TF["invweight0"]],
                            -loss, loss)
                    copy_sol_cols(w, row, efc_f, ten_f, mt, t, TF["solref_fri"], TF["solimp_fri"])
                    n += 1
        return n

    @ti.func
    def tendon_limits(w, nefc, sizes: ti.template(), jnt_i: ti.template(), ten_i: ti.template(),
                      ten_f: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(), ten_d: ti.template(),
                      efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows for limited fixed tendons within their margin of a bound, as joint limits."""
        n = nefc
        mt = w % ten_f.shape[0]
        for t in range(sizes[L.SIZE_NTENDON]):
            if ten_i[t, L.TEN_LIMITED] != 0:
                length = ten_d[w, t, T_LEN]
                margin = ten_f[mt, t, TF["margin"]]
                for s in ti.static(range(2)):
                    side = fp(-1.0) if s == 0 else fp(1.0)
                    dist = side * (ten_f[mt, t, TF["range"] + s] - length)
                    if dist < margin:
                        row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                        if row >= 0:
                            tendon_jacobian_add(w, row, t, -side, ten_i, jnt_i, wrap_i, wrap_f, efc_J)
                            set_row(w, row, efc_f, CNSTR_LIMIT_TENDON, t, dist, margin, ten_f[mt, t, TF["invweight0"]],
                                    fp(0.0), fp(_INF))
                            copy_sol_cols(w, row, efc_f, ten_f, mt, t, TF["solref_lim"], TF["solimp_lim"])
                            n += 1
        return n

    @ti.func
    def quat_axis_angle(q):
        """(unit rotation axis, angle in [0, pi]) of a unit quaternion as one 4-vector
        (MuJoCo's mju_quat2Vel with dt = 1, split into direction and magnitude)."""
        v = m.vec3(q[1], q[2], q[3])
        s = v.norm()
        axis = m.vec3(fp(1.0), fp(0.0), fp(0.0))
        angle = fp(0.0)
        if s > fp(_MINVAL):
            angle = 2 * ti.atan2(s, q[0])
            if angle > fp(3.141592653589793):
                angle -= 2 * fp(3.141592653589793)
            axis = v / s
            if angle < 0:
                angle = -angle
                axis = -axis
        return m.vec4(axis[0], axis[1], axis[2], angle)

    @ti.func
    def copy_sol(w, row, efc_f: ti.template(), src: ti.template(), ref_at, imp_at):
        """A row's solref and solimp from a flat model table's entries ref_at and imp_at on."""
        for k in ti.static(range(2)):
            efc_f[w, row, E["solref"] + k] = src[ref_at + k]
        for k in ti.static(range(5)):
            efc_f[w, row, E["solimp"] + k] = src[imp_at + k]

    # --- soft-constraint model --------------------------------------------------------
    @ti.func
    def impedance(solimp0, solimp1, width, mid, power, x_raw):
        """MuJoCo's solimp sigmoid: from dmin at 0 to dmax at |x| >= width."""
        imp = fp(0.0)
        if solimp0 == solimp1 or width <= fp(_MINVAL):
            imp = fp(0.5) * (solimp0 + solimp1)
        else:
            x = ti.abs(x_raw) / width
            if x >= 1:
                imp = solimp1
            elif x <= 0:
                imp = solimp0
            else:
                y = fp(0.0)
                if power == 1:
                    y = x
                elif power == 2:  # the default: pow() is a library call, and x * x is as exact
                    if x <= mid:
                        y = x * x / mid
                    else:
                        y = 1 - (1 - x) * (1 - x) / (1 - mid)
                elif x <= mid:
                    y = ti.pow(x, power) / ti.pow(mid, power - 1)
                else:
                    y = 1 - ti.pow(1 - x, power) / ti.pow(1 - mid, power - 1)
                imp = solimp0 + y * (solimp1 - solimp0)
        return imp

    @ti.func
    def soft_parameters(w, nefc, sizes: ti.template(), opt_f: ti.template(), efc_f: ti.template()):
        """R, K, B and impedance of each row (MuJoCo's getsolparam and mj_makeImpedance)."""
        h = opt_f[w % opt_f.shape[0], 0, TIMESTEP]
        for i in range(nefc):
            ref0 = efc_f[w, i, E["solref"]]
            ref1 = efc_f[w, i, E["solref"] + 1]
            if (ref0 > 0) != (ref1 > 0):  # mixed formats: MuJoCo falls back to the default
                ref0 = fp(0.02)
                ref1 = fp(1.0)
            if (sizes[L.SIZE_DISABLE] & DSBL_REFSAFE) == 0 and ref0 > 0:
                ref0 = ti.max(ref0, 2 * h)
            dmin = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), efc_f[w, i, E["solimp"]]))
            dmax = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), efc_f[w, i, E["solimp"] + 1]))
            width = ti.max(fp(0.0), efc_f[w, i, E["solimp"] + 2])
            mid = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), efc_f[w, i, E["solimp"] + 3]))
            power = ti.max(fp(1.0), efc_f[w, i, E["solimp"] + 4])
            imp = impedance(dmin, dmax, width, mid, power, efc_f[w, i, E["imppos"]] - efc_f[w, i, E["margin"]])
            efc_f[w, i, E["imp"]] = imp
            efc_f[w, i, E["R"]] = ti.max(fp(_MINVAL), (1 - imp) * efc_f[w, i, E["diagA"]] / imp)
            if ref0 > 0:
                efc_f[w, i, E["K"]] = 1 / ti.max(fp(_MINVAL), dmax * dmax * ref0 * ref0 * ref1 * ref1)
                efc_f[w, i, E["B"]] = 2 / ti.max(fp(_MINVAL), dmax * ref0)
            else:
                efc_f[w, i, E["K"]] = -ref0 / ti.max(fp(_MINVAL), dmax * dmax)
                efc_f[w, i, E["B"]] = -ref1 / ti.max(fp(_MINVAL), dmax)
            kind = ti.cast(efc_f[w, i, E["type"]], ti.i32)
            if kind == CNSTR_FRICTION_DOF or kind == CNSTR_FRICTION_TENDON:
                efc_f[w, i, E["K"]] = 0  # friction has no position to restore

    @ti.func
    def cone_regularizer(w, nefc, opt_f: ti.template(), con_f: ti.template(), con_i: ti.template(),
                         efc_f: ti.template()):
        """Friction impedance of contacts (MuJoCo's mj_makeImpedance). With R_0 the normal
        row's, the regularized cone has mu = friction_0 / sqrt(impratio); all edges of a
        pyramid share R = 2 mu^2 R_0, which matches the elliptic cone's friction impedance;
        an elliptic cone's friction rows get R_j = R_0 friction_0^2 / (impratio friction_j^2)
        and no position stiffness."""
        impratio = ti.max(fp(_MINVAL), opt_f[w % opt_f.shape[0], 0, IMPRATIO])
        i = 0
        while i < nefc:
            step = 1
            kind = efc_f[w, i, E["type"]]
            if kind == CNSTR_CONTACT_PYRAMIDAL:
                c = ti.cast(efc_f[w, i, E["id"]], ti.i32)
                step = 2 * (con_i[w, c, CON_DIM] - 1)
                mu0 = con_f[w, c, C["friction"]]
                r_py = 2 * mu0 * mu0 * efc_f[w, i, E["R"]] / impratio
                for j in range(step):
                    efc_f[w, i + j, E["R"]] = r_py
            elif kind == CNSTR_CONTACT_ELLIPTIC:
                c = ti.cast(efc_f[w, i, E["id"]], ti.i32)
                step = con_i[w, c, CON_DIM]
                mu0 = con_f[w, c, C["friction"]]
                r1 = efc_f[w, i, E["R"]] / impratio
                efc_f[w, i, E["fric"]] = mu0 / ti.sqrt(impratio)
                for j in range(1, step):
                    fj = con_f[w, c, C["friction"] + j - 1]
                    efc_f[w, i + j, E["R"]] = r1 * mu0 * mu0 / (fj * fj)
                    efc_f[w, i + j, E["K"]] = 0
            i += step

    @ti.func
    def row_dot(w, i, rows: ti.template(), nv, vec: ti.template(), col):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        s = fp(0.0)
        for d in range(nv):
            s += rows[w, i, d] * vec[o_dof + d * L.NDOF_D + col]
        return s

    @ti.func
    def reference(w, nefc, nv, qvel: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
                  efc_f: ti.template()):
        """aref = -B J qvel - K imp (pos - margin)."""
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + CVEL] = qvel[w, d]
        for i in range(nefc):
            vel = row_dot(w, i, efc_J, nv, dof_d, CVEL)
            efc_f[w, i, E["vel"]] = vel
            efc_f[w, i, E["aref"]] = (-efc_f[w, i, E["B"]] * vel - efc_f[w, i, E["K"]] * efc_f[w, i, E["imp"]]
                                      * (efc_f[w, i, E["pos"]] - efc_f[w, i, E["margin"]]) - efc_f[w, i, E["jdotv"]])

    # --- solver -------------------------------------------------------------------------
    @ti.func
    def dual_matrix(w, nefc, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(),
                    dof_d: ti.template(), efc_J: ti.template(), efc_Y: ti.template(), efc_f: ti.template()):
        """A = J M^-1 J^T into efc_Y (nefc x nefc, both triangles), and AR_ii = A_ii + R_i.
        One solve per row gives column j (M^-1 J_j^T, held in CVEL); a sweep of Gauss-Seidel
        then costs nefc per row instead of 2 nv to keep M^-1 J^T f up to date."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        nv = sizes[L.SIZE_NV]
        for j in range(nefc):
            for d in range(nv):
                dof_d[o_dof + d * L.NDOF_D + CVEL] = efc_J[w, j, d]
            inertia.solve(w, sizes, dof_i, qLD, dof_d, CVEL)
            for i in range(j, nefc):
                a = row_dot(w, i, efc_J, nv, dof_d, CVEL)
                efc_Y[w, i, j] = a
                efc_Y[w, j, i] = a
            efc_f[w, j, E["AR"]] = efc_Y[w, j, j] + efc_f[w, j, E["R"]]

    @ti.func
    def warm_start(w, nefc, nv, sizes: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
                   efc_f: ti.template()):
        """Initial forces: the previous acceleration mapped through each row's force law
        (f = -D (J qacc - aref), projected), as MuJoCo starts its dual solvers."""
        for i in range(nefc):
            f = fp(0.0)
            if (sizes[L.SIZE_DISABLE] & DSBL_WARMSTART) == 0:
                jar = row_dot(w, i, efc_J, nv, dof_d, QACC_WARMSTART) - efc_f[w, i, E["aref"]]
                f = -jar / efc_f[w, i, E["R"]]
                f = ti.min(ti.max(f, efc_f[w, i, E["lower"]]), efc_f[w, i, E["upper"]])
            efc_f[w, i, E["force"]] = f

    @ti.func
    def pgs_row(w, i, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """Gauss-Seidel update of one scalar row within its bounds; returns the dual's decrease."""
        # gradient of the dual: J_i qacc_smooth - aref_i + (A f)_i + R_i f_i
        grad = efc_f[w, i, E["bias"]] + efc_f[w, i, E["R"]] * efc_f[w, i, E["force"]]
        for j in range(nefc):
            grad += efc_Y[w, i, j] * efc_f[w, j, E["force"]]
        old = efc_f[w, i, E["force"]]
        new = old - grad / efc_f[w, i, E["AR"]]
        new = ti.min(ti.max(new, efc_f[w, i, E["lower"]]), efc_f[w, i, E["upper"]])
        delta = new - old
        decrease = fp(0.0)
        if delta != 0:
            efc_f[w, i, E["force"]] = new
            decrease = -delta * (grad + fp(0.5) * efc_f[w, i, E["AR"]] * delta)
        return decrease

    @ti.func
    def pgs(w, nefc, nv, sizes: ti.template(), opt_f: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
            efc_Y: ti.template(), efc_f: ti.template()):
        """Projected Gauss-Seidel on the dual, with A = J M^-1 J^T in efc_Y; returns the
        sweeps it made."""
        mo = w % opt_f.shape[0]
        tolerance = opt_f[mo, 0, TOLERANCE]
        for i in range(nefc):
            efc_f[w, i, E["bias"]] = row_dot(w, i, efc_J, nv, dof_d, QACC_SMOOTH) - efc_f[w, i, E["aref"]]
        # the warm start is kept only if its dual cost is below that of zero forces (MuJoCo's)
        cost = fp(0.0)
        for i in range(nefc):
            f = efc_f[w, i, E["force"]]
            af = efc_f[w, i, E["R"]] * f
            for j in range(nefc):
                af += efc_Y[w, i, j] * efc_f[w, j, E["force"]]
            cost += f * (efc_f[w, i, E["bias"]] + fp(0.5) * af)
        if cost > 0:
            for i in range(nefc):
                efc_f[w, i, E["force"]] = 0
        # MuJoCo's stopping rule: the sweep's decrease of the dual cost, in units of the
        # model's mean inertia, falls below the tolerance
        scale = 1 / (opt_f[mo, 0, MEANINERTIA] * ti.max(1, nv))
        converged = 0
        it = 0
        while it < sizes[L.SIZE_ITERATIONS] and converged == 0:
            improvement = fp(0.0)
            i = 0
            while i < nefc:
                step = 1
                if ti.static(cone == "elliptic"):
                    if efc_f[w, i, E["type"]] == CNSTR_CONTACT_ELLIPTIC:
                        step = ti.cast(efc_f[w, i, E["cone"] + 5], ti.i32)
                        improvement += pgs_cone.update(w, i, step, nefc, efc_Y, efc_f)
                    else:
                        improvement += pgs_row(w, i, nefc, efc_Y, efc_f)
                else:
                    improvement += pgs_row(w, i, nefc, efc_Y, efc_f)
                i += step
            it += 1
            if improvement * scale < tolerance:
                converged = 1
        return it

    @ti.func
    def constraint(w, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(),
                   body_f: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), q_f: ti.template(),
                   opt_f: ti.template(), qpos: ti.template(), qvel: ti.template(), qacc: ti.template(),
                   body_d: ti.template(), dof_d: ti.template(), qM: ti.template(), qLD: ti.template(),
                   geom_i: ti.template(), con_f: ti.template(),
                   con_i: ti.template(), con_n: ti.template(), eq_i: ti.template(), eq_f: ti.template(),
                   eq_d: ti.template(), ten_i: ti.template(), ten_f: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(),
                   ten_d: ti.template(), efc_J: ti.template(), efc_Y: ti.template(), efc_f: ti.template(),
                   efc_n: ti.template()):
        """qacc <- qacc_smooth + M^-1 J^T f; qfrc_constraint <- J^T f."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        nv = sizes[L.SIZE_NV]
        nefc = 0
        efc_n[w, L.EFC_OVERFLOW] = 0
        efc_n[w, L.EFC_NITER] = 0
        disabled = sizes[L.SIZE_DISABLE]
        if (disabled & DSBL_CONSTRAINT) == 0:
            if (disabled & DSBL_EQUALITY) == 0:
                nefc = equalities(w, nefc, sizes, body_i, body_f, jnt_i, dof_i, dof_f, q_f, qpos, qvel, body_d, dof_d,
                                  eq_i, eq_f, eq_d, efc_J, efc_f, efc_n)
            if (disabled & DSBL_FRICTIONLOSS) == 0 and sizes[L.SIZE_SMOOTH_FRICTION] == 0:
                nefc = friction_loss(w, nefc, sizes, jnt_i, dof_f, ten_i, ten_f, wrap_i, wrap_f, efc_J, efc_f, efc_n)
            if (disabled & DSBL_LIMIT) == 0:
                nefc = joint_limits(w, nefc, sizes, jnt_i, jnt_f, dof_f, qpos, efc_J, efc_f, efc_n)
                nefc = physx_limits(w, nefc, sizes, jnt_i, jnt_f, dof_f, opt_f, qpos, qvel, efc_J, efc_f, efc_n)
                nefc = tendon_limits(w, nefc, sizes, jnt_i, ten_i, ten_f, wrap_i, wrap_f, ten_d, efc_J, efc_f, efc_n)
            if (disabled & DSBL_CONTACT) == 0:
                nefc = contacts(w, nefc, sizes, body_i, body_f, body_d, dof_d, geom_i, con_f, con_i, con_n, efc_J,
                                efc_f, efc_n)
        efc_n[w, L.EFC_N] = nefc
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH] = qacc[w, d]
        if nefc > 0:
            soft_parameters(w, nefc, sizes, opt_f, efc_f)
            cone_regularizer(w, nefc, opt_f, con_f, con_i, efc_f)
            reference(w, nefc, nv, qvel, dof_d, efc_J, efc_f)
            if ti.static(solver == "PGS"):
                dual_matrix(w, nefc, sizes, dof_i, qLD, dof_d, efc_J, efc_Y, efc_f)
                warm_start(w, nefc, nv, sizes, dof_d, efc_J, efc_f)
                efc_n[w, L.EFC_NITER] = pgs(w, nefc, nv, sizes, opt_f, dof_d, efc_J, efc_Y, efc_f)
            else:
                efc_n[w, L.EFC_NITER] = primal.solve(w, nefc, nv, sizes, opt_f, dof_i, qM, qLD, qacc, dof_d, efc_J,
                                                     efc_f, efc_Y, (disabled & DSBL_WARMSTART) == 0)
            break_overloaded(w, nefc, eq_i, eq_f, eq_d, efc_f)
        # J^T f as one reduction per dof: accumulating in place would store in the inner loop
        for d in range(nv):
            qfrc = fp(0.0)
            for i in range(nefc):
                qfrc += efc_f[w, i, E["force"]] * efc_J[w, i, d]
            dof_d[o_dof + d * L.NDOF_D + QFRC_CONSTRAINT] = qfrc
        if ti.static(solver == "PGS"):
            # the dual leaves qacc to us: qacc_smooth + M^-1 J^T f (the primal solvers move it)
            if nefc > 0:
                for d in range(nv):
                    dof_d[o_dof + d * L.NDOF_D + CVEL] = dof_d[o_dof + d * L.NDOF_D + QFRC_CONSTRAINT]
                inertia.solve(w, sizes, dof_i, qLD, dof_d, CVEL)
                for d in range(nv):
                    qacc[w, d] += dof_d[o_dof + d * L.NDOF_D + CVEL]

    return types.SimpleNamespace(constraint=constraint)
