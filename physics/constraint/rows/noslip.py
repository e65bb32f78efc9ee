"""MuJoCo's no-slip pass (mj_solNoSlip): after the solver, a few Gauss-Seidel sweeps over
the friction forces alone, with the regularizer R left out, so that contacts the soft
model lets creep hold still.

The normal forces stay as the solver left them: a pyramidal contact's opposing edges
(f0, f1) keep their sum and move their difference within [-sum, sum]; an elliptic
contact's friction stays inside the cone of its normal force (the QCQP of
physics/constraint/pgs_cone.py). Friction-loss rows are clamped to their bounds. Each
update reads A = J M^-1 J^T (efc_Y, from the dual's dual_matrix) and the residual
b + A f with b = J qacc_smooth - aref; a step that raises the cost is undone, and the
sweeps stop when one lowers the cost by less than noslip_tolerance (in units of the mean
inertia), as MuJoCo's do. MuJoCo sweeps each island of constraints on its own; here an
env's rows are one sweep, which updates every row in the same order and differs only
where one island would stop before another.
"""

import functools
import types

from ... import layout as L
from ...access import make_access
from ...runtime.backend import ti
from ...runtime.lanes import env_index
from ...runtime.ti_math import make_math
from ..pgs_cone import make_pgs_cone
from .table import CNSTR_CONTACT_ELLIPTIC, CNSTR_CONTACT_PYRAMIDAL, CNSTR_FRICTION_DOF, CNSTR_FRICTION_TENDON

_MINVAL = 1e-15
_MINDIAG = 1e-10  # MuJoCo's floor under a block's diagonal once R is taken off
_KEEP = 1e-10  # a step raising the cost by more than this is undone


@functools.lru_cache(maxsize=None)
def make_noslip(fp, cone: str = "pyramidal"):
    A = make_access(fp)
    m = make_math(fp)
    friction_in_cone = make_pgs_cone(fp).friction_in_cone
    vec5 = ti.types.vector(5, fp)
    mat5 = ti.types.matrix(5, 5, fp)

    @ti.func
    def residual(w, i, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """(b + A f)_i: the dual's gradient at row i without R."""
        s = A.efc_bias(efc_f, w, i)
        for j in range(nefc):
            s += efc_Y[env_index(w, i, j)] * A.efc_force(efc_f, w, j)
        return s

    @ti.func
    def diagonal(w, i, efc_Y: ti.template()):
        return ti.max(fp(_MINDIAG), efc_Y[env_index(w, i, i)])

    @ti.func
    def friction_loss_row(w, i, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """A friction-loss row moved to its minimum within its bounds; returns the decrease."""
        res = residual(w, i, nefc, efc_Y, efc_f)
        a = ti.max(fp(_MINVAL), efc_Y[env_index(w, i, i)])
        old = A.efc_force(efc_f, w, i)
        new = ti.min(ti.max(old - res / a, A.efc_lower(efc_f, w, i)), A.efc_upper(efc_f, w, i))
        A.set_efc_force(efc_f, w, i, new)
        delta = new - old
        return -(fp(0.5) * delta * delta * a + delta * res)

    @ti.func
    def pyramid_pair(w, j, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """Opposing pyramid edges j, j+1: their difference at its minimum with their sum
        (the normal force) held; returns the decrease."""
        res0 = residual(w, j, nefc, efc_Y, efc_f)
        res1 = residual(w, j + 1, nefc, efc_Y, efc_f)
        old0, old1 = A.efc_force(efc_f, w, j), A.efc_force(efc_f, w, j + 1)
        a00, a11 = diagonal(w, j, efc_Y), diagonal(w, j + 1, efc_Y)
        a01, a10 = efc_Y[env_index(w, j, j + 1)], efc_Y[env_index(w, j + 1, j)]
        b0 = res0 - (a00 * old0 + a01 * old1)
        b1 = res1 - (a10 * old0 + a11 * old1)
        mid = fp(0.5) * (old0 + old1)
        k1 = a00 + a11 - a01 - a10
        k0 = mid * (a00 - a11) + b0 - b1
        f0, f1 = mid, mid
        if k1 >= fp(_MINVAL):
            y = ti.min(ti.max(-k0 / k1, -mid), mid)
            f0, f1 = mid + y, mid - y
        d0, d1 = f0 - old0, f1 - old1
        change = fp(0.5) * (d0 * (a00 * d0 + a01 * d1) + d1 * (a10 * d0 + a11 * d1)) + d0 * res0 + d1 * res1
        if change > fp(_KEEP):
            f0, f1, change = old0, old1, fp(0.0)
        A.set_efc_force(efc_f, w, j, f0)
        A.set_efc_force(efc_f, w, j + 1, f1)
        return -change

    @ti.func
    def elliptic_friction(w, i, dim, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """Friction rows i+1 .. i+dim-1 of an elliptic contact at their minimum inside the
        cone of its normal force (row i, held); returns the decrease."""
        res, old, mu = vec5(0), vec5(0), vec5(1)
        ac = ti.Matrix.identity(fp, 5)
        for j in ti.static(range(5)):
            if j + 1 < dim:
                res[j] = residual(w, i + 1 + j, nefc, efc_Y, efc_f)
                old[j] = A.efc_force(efc_f, w, i + 1 + j)
                mu[j] = A.efc_fric(efc_f, w, i + 1 + j)
                for k in ti.static(range(5)):
                    if k + 1 < dim:
                        ac[j, k] = efc_Y[env_index(w, i + 1 + j, i + 1 + k)]
                ac[j, j] = diagonal(w, i + 1 + j, efc_Y)
        used = mat5(0)
        for j in ti.static(range(5)):
            for k in ti.static(range(5)):
                if j + 1 < dim and k + 1 < dim:
                    used[j, k] = ac[j, k]
        bc = res - used @ old
        new = vec5(0)
        normal = A.efc_force(efc_f, w, i)
        if normal >= fp(_MINVAL):
            new = friction_in_cone(ac, bc, mu, normal, dim)
        delta = new - old
        change = fp(0.5) * delta.dot(used @ delta) + delta.dot(res)
        if change > fp(_KEEP):
            new, change = old, fp(0.0)
        for j in ti.static(range(5)):
            if j + 1 < dim:
                A.set_efc_force(efc_f, w, i + 1 + j, new[j])
        return -change

    @ti.func
    def sweep(w, nefc, con_i: ti.template(), efc_Y: ti.template(), efc_f: ti.template()):
        """One pass over the friction-loss rows, then the contacts' friction; returns the
        decrease of the cost."""
        improvement = fp(0.0)
        for i in range(nefc):
            kind = A.efc_type(efc_f, w, i)
            if kind == CNSTR_FRICTION_DOF or kind == CNSTR_FRICTION_TENDON:
                improvement += friction_loss_row(w, i, nefc, efc_Y, efc_f)
        i = 0
        while i < nefc:
            kind = A.efc_type(efc_f, w, i)
            step = 1
            if kind == CNSTR_CONTACT_PYRAMIDAL:
                dim = A.contact_dim(con_i, w, ti.cast(A.efc_id(efc_f, w, i), ti.i32))
                for k in range(dim - 1):
                    improvement += pyramid_pair(w, i + 2 * k, nefc, efc_Y, efc_f)
                step = 2 * (dim - 1)
            if ti.static(cone == "elliptic"):
                if kind == CNSTR_CONTACT_ELLIPTIC:
                    step = ti.cast(A.efc_cone_at(efc_f, w, i, 5), ti.i32)
                    improvement += elliptic_friction(w, i, step, nefc, efc_Y, efc_f)
            i += step
        return improvement

    @ti.func
    def noslip(w, nefc, nv, sizes: ti.template(), opt_f: ti.template(), con_i: ti.template(),
               efc_Y: ti.template(), efc_f: ti.template()):
        """The no-slip sweeps over rows whose A is in efc_Y and b in efc_bias."""
        mo = m.param_set(w, opt_f)
        scale = 1 / (A.opt_meaninertia(opt_f, mo, 0) * ti.max(1, nv))
        tolerance = A.opt_noslip_tolerance(opt_f, mo, 0)
        improvement = fp(0.0)
        # MuJoCo counts the regularizer's share of the cost into the first sweep's decrease
        for i in range(nefc):
            f = A.efc_force(efc_f, w, i)
            improvement += fp(0.5) * f * f * A.efc_R(efc_f, w, i)
        it = 0
        while it < sizes[L.SIZE_NOSLIP_ITERATIONS]:
            improvement += sweep(w, nefc, con_i, efc_Y, efc_f)
            it += 1
            if improvement * scale < tolerance:
                it = sizes[L.SIZE_NOSLIP_ITERATIONS]
            improvement = fp(0.0)

    return types.SimpleNamespace(noslip=noslip)
