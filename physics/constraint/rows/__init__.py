"""Constraints of one world: rows, MuJoCo's soft-constraint model, and the solvers.

After the smooth dynamics have produced qacc_smooth = M^-1 qfrc_smooth, every active
constraint becomes a row i with Jacobian J_i, a position residual r_i and MuJoCo's
solref/solimp parameters. The soft-constraint model (Todorov 2014, soft.py) gives each row

    impedance  d_i = solimp sigmoid of |r_i - margin_i|
    regularizer R_i = (1 - d_i) / d_i * A_ii,  A_ii ~ J_i M^-1 J_i^T  (from *_invweight0;
                      at least 1e-3 of the exact A_ii in float32 Newton and CG, soft.py)
    reference  aref_i = -B_i J_i qvel - K_i d_i (r_i - margin_i)

and the constraint forces f minimise the dual  1/2 f^T (A + R) f + f^T (J qacc_smooth - aref)
under each row's bounds (unilateral rows f >= 0), solved by projected Gauss-Seidel
(pgs.py) or, in the primal, by Newton or CG (physics/constraint/primal/).

Rows, in MuJoCo's order: equality constraints (connect, weld, joint coupling; equality.py),
friction loss of dofs and tendons (unless Option.frictionloss is "smooth"; friction.py),
limits of joints (hinge, slide, ball) and fixed tendons (limits.py, and PhysX's limit
models in physics/smooth/limits.py), and contacts with pyramidal or elliptic friction
cones (condim 1, 3, 4, 6; contacts.py). Row types are numbered as MuJoCo's mjtConstraint
(table.py, with the columns and writers rows share; jacobian.py: the Jacobians they share).
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...model import (
    DSBL_CONSTRAINT,
    DSBL_CONTACT,
    DSBL_EQUALITY,
    DSBL_FRICTIONLOSS,
    DSBL_ISLAND,
    DSBL_LIMIT,
    DSBL_WARMSTART,
)
from ...runtime.backend import ti
from ...access import make_access
from ...features import ALL, Features
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from ...smooth.unrolled_tree import dofs_in_registers
from ...smooth.limits import make_limits
from ..primal import make_primal
from ..primal.lane_group import make_group, lane_solve_supported
from ..primal.lane_solver import make_lane_solver
from .contacts import make_contact_rows
from .equality import make_equality_rows
from .friction import make_friction_rows
from .limits import make_limit_rows
from .noslip import make_noslip
from .pgs import make_pgs
from .soft import make_soft
from .table import (
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_FRICTIONLESS,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTR_EQUALITY,
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    CNSTR_LIMIT_JOINT,
    CNSTR_LIMIT_TENDON,
)

__all__ = ["CNSTR_EQUALITY", "CNSTR_FRICTION_DOF", "CNSTR_FRICTION_TENDON", "CNSTR_LIMIT_JOINT", "CNSTR_LIMIT_TENDON",
           "CNSTR_CONTACT_FRICTIONLESS", "CNSTR_CONTACT_PYRAMIDAL", "CNSTR_CONTACT_ELLIPTIC",
           "make_constraint"]


@functools.lru_cache(maxsize=None)
def make_constraint(fp, solver: str = "Newton", cone: str = "pyramidal", features: Features = ALL,
                    simt: bool = False):
    """The constraint stage, as two: ``rows`` and ``solve``, each ``(w, t)`` with ``t`` the
    step kernel's tables, for one solver ("PGS", "CG", "Newton") and friction cone
    ("pyramidal", "elliptic"): only the chosen code, and the row kinds ``features`` has
    (physics/features.py), are compiled into the step kernel. ``group_forces(w, me, t)``:
    the solver's forces by a lane group (physics/constraint/primal/lane_group.py; ``simt``:
    a GPU block's threads), where lane_solve_supported."""
    m = make_math(fp)
    A = make_access(fp)
    inertia = make_inertia(fp)
    physx_limits = make_limits(fp).physx_limit_rows  # hard and spring limits (physics/smooth/limits.py)
    primal = make_primal(fp, solver == "Newton", cone == "elliptic")
    group = make_group(fp, simt)
    lane_solver = make_lane_solver(fp, solver == "Newton", simt) if lane_solve_supported(solver, cone) else None
    equality = make_equality_rows(fp)
    equalities, break_overloaded = equality.equalities, equality.break_overloaded
    friction_loss = make_friction_rows(fp).friction_loss
    limit_rows = make_limit_rows(fp)
    joint_limits, tendon_limits = limit_rows.joint_limits, limit_rows.tendon_limits
    contact_table_rows = make_contact_rows(fp, cone)
    contacts, contact_addresses = contact_table_rows.contacts, contact_table_rows.addresses
    soft = make_soft(fp)
    soft_parameters, cone_regularizer, reference = soft.soft_parameters, soft.cone_regularizer, soft.reference
    float32_regularizer = soft.float32_regularizer
    dual = make_pgs(fp, cone)
    dual_matrix, warm_start, pgs = dual.dual_matrix, dual.warm_start, dual.pgs
    noslip = make_noslip(fp, cone).noslip

    def rows_of(apart: bool):
        @ti.func
        def rows(w, t: ti.template()):
            """The rows of world w's active constraints, and qacc_smooth kept; ``t`` holds the step
            kernel's tables by name (physics/step/pipeline.py).

            Reads: the model tables (sizes, body_*, jnt_*, dof_*, q_f, opt_f, geom_i, eq_i, eq_f,
            ten_i, ten_f, wrap_*), the state (qpos, qvel), qacc (qacc_smooth), frames and com
            quantities (body_d), the contacts (con_f, con_i, con_n) and tendon lengths (ten_d).
            Writes: efc_J, efc_f and efc_n (count, overflow; solver iterations zeroed), eq_d's
            row bookkeeping and dof_d's qacc_smooth."""
            o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
            nefc = 0
            A.set_nefc_overflow(t.efc_n, w, 0)
            A.set_solver_niter(t.efc_n, w, 0)
            disabled = t.sizes[L.SIZE_DISABLE]
            if (disabled & DSBL_CONSTRAINT) == 0:
                if ti.static(features.equality):
                    if (disabled & DSBL_EQUALITY) == 0:
                        nefc = equalities(w, nefc, t.sizes, t.body_i, t.body_f, t.jnt_i, t.dof_i, t.dof_f, t.q_f,
                                          t.qpos, t.qvel, t.body_d, t.dof_d, t.ten_i, t.ten_f,
                                          t.ten_d, t.eq_i, t.eq_f, t.eq_d, t.efc_J, t.efc_f, t.efc_n)
                if ti.static(features.frictionloss):
                    if (disabled & DSBL_FRICTIONLOSS) == 0 and t.sizes[L.SIZE_SMOOTH_FRICTION] == 0:
                        nefc = friction_loss(w, nefc, t.sizes, t.jnt_i, t.dof_f, t.ten_i, t.ten_f, t.ten_d,
                                             t.efc_J, t.efc_f, t.efc_n)
                if (disabled & DSBL_LIMIT) == 0:
                    nefc = joint_limits(w, nefc, t.sizes, t.jnt_i, t.jnt_f, t.dof_f, t.qpos, t.efc_J, t.efc_f, t.efc_n)
                    if ti.static(features.physx_limits):
                        nefc = physx_limits(w, nefc, t.sizes, t.jnt_i, t.jnt_f, t.dof_f, t.opt_f, t.qpos, t.qvel,
                                            t.efc_J, t.efc_f, t.efc_n)
                    if ti.static(features.tendons):
                        nefc = tendon_limits(w, nefc, t.sizes, t.jnt_i, t.ten_i, t.ten_f, t.ten_d,
                                             t.efc_J, t.efc_f, t.efc_n)
                if ti.static(features.contacts):
                    if (disabled & DSBL_CONTACT) == 0:
                        if ti.static(apart):
                            nefc = contact_addresses(w, nefc, t.sizes, t.con_i, t.con_n, t.efc_n)
                        else:
                            nefc = contacts(w, nefc, t.sizes, t.body_i, t.body_f, t.body_d, t.dof_d, t.geom_i, t.con_f,
                                            t.con_i, t.con_n, t.efc_J, t.efc_f, t.efc_n)
            A.set_nefc(t.efc_n, w, nefc)
            for d in range(t.sizes[L.SIZE_NV]):
                A.set_dof_qacc_smooth(t.dof_d, o_dof, d, t.qacc[env_index(w, d)])

        return rows

    # the fused rows, and the staged schedule's: its contacts only placed (each contact's
    # efc_address), their rows made a thread per env and contact by contact_row
    rows, rows_apart = rows_of(False), rows_of(True)

    @ti.func
    def contact_row(w, c, t: ti.template()):
        """Contact c's rows, where rows_apart placed them."""
        if c < A.ncon(t.con_n, w):
            contact_table_rows.contact_rows(w, c, t.sizes, t.body_i, t.body_f, t.body_d, t.dof_d, t.geom_i, t.con_f,
                                            t.con_i, t.efc_J, t.efc_f)

    @ti.func
    def solve(w, t: ti.template()):
        """The constraint forces of world w's rows: qacc <- qacc_smooth + M^-1 J^T f and
        qfrc_constraint <- J^T f.

        Reads: the rows (efc_J, efc_f, efc_n) and what :func:`rows` reads of the model, the
        state, the mass matrix and its factor (qM, qLD), and the contacts.
        Writes: qacc, dof_d's qfrc_constraint, the dof scratch table dof_s (the solvers'
        vectors), efc_Y, efc_f's forces and solver columns, efc_n's solver iterations and eq_d
        (equalities broken by overload)."""
        nv = t.sizes[L.SIZE_NV]
        nefc = A.nefc(t.efc_n, w)
        if nefc > 0:
            soft_parameters(w, nefc, t.sizes, t.opt_f, t.efc_f)
            if ti.static(features.contacts):
                cone_regularizer(w, nefc, t.opt_f, t.con_f, t.con_i, t.efc_f)
            # before the references in MuJoCo's order; the references read no R
            float32_rows(w, t)
            reference(w, nefc, nv, t.dof_i, t.qvel, t.dof_s, t.efc_J, t.efc_f)
        forces(w, t)
        o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        if ti.static(dofs_in_registers(t.dof_i)):
            constraint_forces_in_registers(w, o_dof, nefc, t)
        else:
            # J^T f as one reduction per dof: accumulating in place would store in the inner loop
            for d in range(nv):
                dof_constraint_force(w, d, o_dof, nefc, t)
        acceleration(w, t)

    # solve's parts, for the staged schedule (physics/step/forward.py): the rows' soft
    # parameters, cones and references a thread per row, the solver a thread per env,
    # J^T f a thread per dof. Each does what solve does, in the same order within a row.
    @ti.func
    def soft_row(w, i, t: ti.template()):
        if i < A.nefc(t.efc_n, w):
            soft.soft_row(w, i, A.opt_timestep(t.opt_f, m.param_set(w, t.opt_f), 0), t.sizes, t.efc_f)

    @ti.func
    def cone_row(w, i, t: ti.template()):
        if i < A.nefc(t.efc_n, w):
            soft.cone_row(w, i, t.opt_f, t.con_f, t.con_i, t.efc_f)

    @ti.func
    def reference_row(w, i, t: ti.template()):
        if i < A.nefc(t.efc_n, w):
            soft.reference_row(w, i, t.sizes[L.SIZE_NV], t.qvel, t.efc_J, t.efc_f)

    @ti.func
    def float32_rows(w, t: ti.template()):
        if ti.static(fp == ti.f32 and solver != "PGS"):
            nefc = A.nefc(t.efc_n, w)
            if nefc > 0:
                float32_regularizer(w, nefc, t.sizes[L.SIZE_NV], t.sizes, t.dof_i, t.dof_f, t.qLD, t.dof_s, t.efc_J,
                                    t.efc_f)

    @ti.func
    def solver_scale(w, nefc, nv, t: ti.template()):
        """The unit of the solvers' stopping tests, as MuJoCo 4 takes it for a constraint
        island: 1 / the summed diagonal of M over the dofs of the trees the rows act on (a
        tree's dofs are one run, in MuJoCo's order; a tree counts where some row has a
        nonzero entry on its dofs). MuJoCo splits a scene into islands and solves each
        apart, which this solve of the whole env does not: the two agree where the rows
        form one island (a robot and what it touches). With islands disabled, MuJoCo's
        model statistic: 1 / (the mean diagonal at qpos0 times nv)."""
        mo = m.param_set(w, t.opt_f)
        scale = 1 / (A.opt_meaninertia(t.opt_f, mo, 0) * ti.max(1, nv))
        if (t.sizes[L.SIZE_DISABLE] & DSBL_ISLAND) == 0:
            o_m = m.env_offset(w, t.sizes[L.SIZE_M_STRIDE])
            total = fp(0.0)
            run_sum = fp(0.0)
            run_touched = 0
            run_root = -1
            for d in range(nv):
                root = A.body_root(t.body_i, A.dof_body(t.dof_i, d))
                if root != run_root:
                    if run_touched != 0:
                        total += run_sum
                    run_sum = fp(0.0)
                    run_touched = 0
                    run_root = root
                run_sum += t.qM[m.entry(o_m, A.dof_madr(t.dof_i, d))]
                if run_touched == 0:
                    for i in range(nefc):
                        if t.efc_J[env_index(w, i, d)] != 0:
                            run_touched = 1
            if run_touched != 0:
                total += run_sum
            if total > 0:
                scale = 1 / total
        return scale

    @ti.func
    def forces(w, t: ti.template()):
        """The solver's forces of the rows made ready (and the equalities they break)."""
        nv = t.sizes[L.SIZE_NV]
        nefc = A.nefc(t.efc_n, w)
        disabled = t.sizes[L.SIZE_DISABLE]
        if nefc > 0:
            if ti.static(solver == "PGS"):
                dual_matrix(w, nefc, t.sizes, t.dof_i, t.qLD, t.dof_d, t.dof_s, t.efc_J, t.efc_Y, t.efc_f)
                warm_start(w, nefc, nv, t.sizes, t.dof_d, t.efc_J, t.efc_f)
                A.set_solver_niter(t.efc_n, w, pgs(w, nefc, nv, solver_scale(w, nefc, nv, t), t.sizes, t.opt_f,
                                                   t.dof_d, t.efc_J, t.efc_Y, t.efc_f))
            else:
                A.set_solver_niter(t.efc_n, w, primal.solve(w, nefc, nv, solver_scale(w, nefc, nv, t), t.sizes,
                                                             t.opt_f, t.dof_i, t.qM, t.qLD,
                                                             t.qacc, t.dof_d, t.dof_s, t.efc_J, t.efc_f, t.efc_Y,
                                                             (disabled & DSBL_WARMSTART) == 0))
            if ti.static(features.noslip):
                if t.sizes[L.SIZE_NOSLIP_ITERATIONS] > 0:
                    if ti.static(solver != "PGS"):
                        dual_matrix(w, nefc, t.sizes, t.dof_i, t.qLD, t.dof_d, t.dof_s, t.efc_J, t.efc_Y, t.efc_f)
                    noslip(w, nefc, nv, t.sizes, t.opt_f, t.con_i, t.efc_Y, t.efc_f)
            if ti.static(features.equality):
                break_overloaded(w, nefc, t.eq_i, t.eq_f, t.eq_d, t.efc_f)

    @ti.func
    def group_forces(w, me, t: ti.template()):
        """:func:`float32_rows` and :func:`forces` by the lane group of env w, its lane ``me``:
        the primal solve across the lanes, the rest in the first lane."""
        if group.first(me):
            float32_rows(w, t)
        group.sync()
        nefc = A.nefc(t.efc_n, w)
        if nefc > 0:
            nv = t.sizes[L.SIZE_NV]
            warm = (t.sizes[L.SIZE_DISABLE] & DSBL_WARMSTART) == 0
            niter = lane_solver.solve(w, me, nefc, nv, solver_scale(w, nefc, nv, t), warm, t)
            if group.first(me):
                A.set_solver_niter(t.efc_n, w, niter)
                if ti.static(features.noslip):
                    if t.sizes[L.SIZE_NOSLIP_ITERATIONS] > 0:
                        dual_matrix(w, nefc, t.sizes, t.dof_i, t.qLD, t.dof_d, t.dof_s, t.efc_J, t.efc_Y, t.efc_f)
                        noslip(w, nefc, nv, t.sizes, t.opt_f, t.con_i, t.efc_Y, t.efc_f)
                if ti.static(features.equality):
                    break_overloaded(w, nefc, t.eq_i, t.eq_f, t.eq_d, t.efc_f)
        group.sync()

    @ti.func
    def constraint_force(w, d, t: ti.template()):
        dof_constraint_force(w, d, m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D), A.nefc(t.efc_n, w), t)

    @ti.func
    def constraint_forces_in_registers(w, o_dof, nefc, t: ti.template()):
        """qfrc_constraint = J^T f where the dofs are held in registers (dofs_in_registers):
        a row at a time along J's contiguous rows, every dof's sum in a register (each
        summed in row order, as dof_constraint_force's loops sum it)."""
        qfrc = ti.Vector.zero(fp, ti.static(len(t.dof_i.tree.parent)))
        for i in range(nefc):
            f = A.efc_force(t.efc_f, w, i)
            for d in ti.static(range(qfrc.n)):
                qfrc[d] += f * t.efc_J[env_index(w, i, d)]
        for d in ti.static(range(qfrc.n)):
            A.set_dof_qfrc_constraint(t.dof_d, o_dof, d, qfrc[d])

    @ti.func
    def dof_constraint_force(w, d, o_dof, nefc, t: ti.template()):
        """qfrc_constraint of dof d: (J^T f)_d, summed in row order."""
        qfrc = fp(0.0)
        for i in range(nefc):
            qfrc += A.efc_force(t.efc_f, w, i) * t.efc_J[env_index(w, i, d)]
        A.set_dof_qfrc_constraint(t.dof_d, o_dof, d, qfrc)

    @ti.func
    def acceleration(w, t: ti.template()):
        if ti.static(solver == "PGS" or features.noslip):
            # the dual passes leave qacc to us: qacc_smooth + M^-1 J^T f (the primal
            # solvers move it, and the no-slip pass then moves the forces)
            nv = t.sizes[L.SIZE_NV]
            dual = 1
            if ti.static(solver != "PGS"):
                dual = t.sizes[L.SIZE_NOSLIP_ITERATIONS]
            if A.nefc(t.efc_n, w) > 0 and dual > 0:
                o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
                o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
                for d in range(nv):
                    A.set_dof_constraint_vel(t.dof_s, o_s, d, A.dof_qfrc_constraint(t.dof_d, o_dof, d))
                inertia.solve(w, t.sizes, t.dof_i, t.qLD, t.dof_s, "dof_constraint_vel")
                for d in range(nv):
                    qacc = A.dof_qacc_smooth(t.dof_d, o_dof, d) + A.dof_constraint_vel(t.dof_s, o_s, d)
                    t.qacc[env_index(w, d)] = qacc

    return types.SimpleNamespace(rows=rows, rows_apart=rows_apart, contact_row=contact_row, solve=solve,
                                 soft_row=soft_row, cone_row=cone_row, reference_row=reference_row,
                                 float32_rows=float32_rows, forces=forces, group_forces=group_forces,
                                 constraint_force=constraint_force, acceleration=acceleration)
