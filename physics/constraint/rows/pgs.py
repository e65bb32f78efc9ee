"""Projected Gauss-Seidel on the dual (MuJoCo's solPGS): the constraint forces f minimise
1/2 f^T (A + R) f + f^T (J qacc_smooth - aref) under each row's bounds (unilateral rows
f >= 0; elliptic contacts inside their cone, physics/constraint/pgs_cone.py).

A = J M^-1 J^T (nefc x nefc, in efc_Y) is formed once per forward pass (nefc solves with
M and nefc^2/2 dot products) as MuJoCo does: a row's update then reads one row of A,
where keeping v = M^-1 J^T f up to date instead would cost 2 nv per row, and a solve
takes tens of sweeps. The warm start maps the previous step's acceleration back to
forces and is dropped for zero forces when its dual cost is positive, as MuJoCo does.
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...model import DSBL_WARMSTART
from ...runtime.backend import ti
from ...runtime.taichi_adapter import vector_loops
from ...access import make_access
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from ..pgs_cone import make_pgs_cone
from .table import CNSTR_CONTACT_ELLIPTIC, make_row_table


@functools.lru_cache(maxsize=None)
def make_pgs(fp, cone: str = "pyramidal"):
    """PGS for one friction cone ("pyramidal", "elliptic"): elliptic contacts are updated
    as blocks only when compiled for them."""
    m = make_math(fp)
    A = make_access(fp)
    inertia = make_inertia(fp)
    pgs_cone = make_pgs_cone(fp)
    row_dot = make_row_table(fp).row_dot

    @ti.func
    @vector_loops
    def dual_matrix(w, nefc, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(),
                    dof_d: ti.template(), dof_s: ti.template(), efc_J: ti.template(), efc_Y: ti.template(), efc_f: ti.template()):
        """A = J M^-1 J^T into efc_Y (nefc x nefc, both triangles), and AR_ii = A_ii + R_i.
        One solve per row gives column j (M^-1 J_j^T, held in the scratch column constraint_vel); a sweep of Gauss-Seidel
        then costs nefc per row instead of 2 nv to keep M^-1 J^T f up to date."""
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        nv = sizes[L.SIZE_NV]
        for j in range(nefc):
            for d in range(nv):
                A.set_dof_constraint_vel(dof_s, o_s, d, efc_J[env_index(w, j, d)])
            inertia.solve(w, sizes, dof_i, qLD, dof_s, "dof_constraint_vel")
            for i in range(j, nefc):
                a = row_dot(w, i, efc_J, nv, dof_s, "dof_constraint_vel")
                efc_Y[env_index(w, i, j)] = a
                efc_Y[env_index(w, j, i)] = a
            A.set_efc_AR(efc_f, w, j, efc_Y[env_index(w, j, j)] + A.efc_R(efc_f, w, j))

    @ti.func
    def warm_start(w, nefc, nv, sizes: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
                   efc_f: ti.template()):
        """Initial forces: the previous acceleration mapped through each row's force law
        (f = -D (J qacc - aref), projected), as MuJoCo starts its dual solvers."""
        for i in range(nefc):
            f = fp(0.0)
            if (sizes[L.SIZE_DISABLE] & DSBL_WARMSTART) == 0:
                jar = row_dot(w, i, efc_J, nv, dof_d, "dof_qacc_warmstart") - A.efc_aref(efc_f, w, i)
                f = -jar / A.efc_R(efc_f, w, i)
                f = ti.min(ti.max(f, A.efc_lower(efc_f, w, i)), A.efc_upper(efc_f, w, i))
            A.set_efc_force(efc_f, w, i, f)

    @ti.func
    @vector_loops
    def pgs_row(w, i, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """Gauss-Seidel update of one scalar row within its bounds; returns the dual's decrease."""
        # gradient of the dual: J_i qacc_smooth - aref_i + (A f)_i + R_i f_i
        grad = A.efc_bias(efc_f, w, i) + A.efc_R(efc_f, w, i) * A.efc_force(efc_f, w, i)
        for j in range(nefc):
            grad += efc_Y[env_index(w, i, j)] * A.efc_force(efc_f, w, j)
        old = A.efc_force(efc_f, w, i)
        new = old - grad / A.efc_AR(efc_f, w, i)
        new = ti.min(ti.max(new, A.efc_lower(efc_f, w, i)), A.efc_upper(efc_f, w, i))
        delta = new - old
        decrease = fp(0.0)
        if delta != 0:
            A.set_efc_force(efc_f, w, i, new)
            decrease = -delta * (grad + fp(0.5) * A.efc_AR(efc_f, w, i) * delta)
        return decrease

    @ti.func
    @vector_loops
    def pgs(w, nefc, nv, sizes: ti.template(), opt_f: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
            efc_Y: ti.template(), efc_f: ti.template()):
        """Projected Gauss-Seidel on the dual, with A = J M^-1 J^T in efc_Y; returns the
        sweeps it made."""
        mo = m.param_set(w, opt_f)
        tolerance = A.opt_tolerance(opt_f, mo, 0)
        for i in range(nefc):
            A.set_efc_bias(efc_f, w, i, row_dot(w, i, efc_J, nv, dof_d, "dof_qacc_smooth") - A.efc_aref(efc_f, w, i))
        # the warm start is kept only if its dual cost is below that of zero forces (MuJoCo's)
        cost = fp(0.0)
        for i in range(nefc):
            f = A.efc_force(efc_f, w, i)
            af = A.efc_R(efc_f, w, i) * f
            for j in range(nefc):
                af += efc_Y[env_index(w, i, j)] * A.efc_force(efc_f, w, j)
            cost += f * (A.efc_bias(efc_f, w, i) + fp(0.5) * af)
        if cost > 0:
            for i in range(nefc):
                A.set_efc_force(efc_f, w, i, 0)
        # MuJoCo's stopping rule: the sweep's decrease of the dual cost, in units of the
        # model's mean inertia, falls below the tolerance
        scale = 1 / (A.opt_meaninertia(opt_f, mo, 0) * ti.max(1, nv))
        converged = 0
        it = 0
        while it < sizes[L.SIZE_ITERATIONS] and converged == 0:
            improvement = fp(0.0)
            i = 0
            while i < nefc:
                step = 1
                if ti.static(cone == "elliptic"):
                    if A.efc_type(efc_f, w, i) == CNSTR_CONTACT_ELLIPTIC:
                        step = ti.cast(A.efc_cone_at(efc_f, w, i, 5), ti.i32)
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

    return types.SimpleNamespace(dual_matrix=dual_matrix, warm_start=warm_start, pgs=pgs)
