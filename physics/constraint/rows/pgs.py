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
from ...model import DSBL_WARMSTART
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from ..pgs_cone import make_pgs_cone
from .table import CNSTR_CONTACT_ELLIPTIC, CVEL, MEANINERTIA, QACC_SMOOTH, QACC_WARMSTART, TOLERANCE, E, make_row_table


@functools.lru_cache(maxsize=None)
def make_pgs(fp, cone: str = "pyramidal"):
    """PGS for one friction cone ("pyramidal", "elliptic"): elliptic contacts are updated
    as blocks only when compiled for them."""
    m = make_math(fp)
    inertia = make_inertia(fp)
    pgs_cone = make_pgs_cone(fp)
    row_dot = make_row_table(fp).row_dot

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

    return types.SimpleNamespace(dual_matrix=dual_matrix, warm_start=warm_start, pgs=pgs)
