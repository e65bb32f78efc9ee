"""The primal cost at the current acceleration (MuJoCo's mj_constraintUpdate): each
row's force -ds_i/djar_i and state at its jar, the total cost 1/2 (a - a0)^T M (a - a0)
+ sum_i s_i(jar_i), its gradient grad = M (a - a0) - J^T f (a vector over the dofs) and
the preconditioned gradient MGRAD: H^-1 grad for Newton, M^-1 grad for CG."""

import functools
import types

from ... import layout as L
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from .columns import (
    _HALF_INF,
    CNSTR_CONTACT_ELLIPTIC,
    GRAD,
    MA,
    MGRAD,
    QACC_SMOOTH,
    QFRC_SMOOTH,
    SCRATCH,
    STATE_LINEARNEG,
    STATE_LINEARPOS,
    STATE_QUADRATIC,
    STATE_SATISFIED,
    E,
)
from .cone import make_cone
from .hessian import make_hessian
from .vectors import make_vectors


@functools.lru_cache(maxsize=None)
def make_cost(fp, newton: bool, elliptic: bool):
    inertia = make_inertia(fp)
    m = make_math(fp)
    single = fp == ti.f32
    dot = make_vectors(fp).dot
    cone = make_cone(fp)
    contact_dim, elliptic_update = cone.contact_dim, cone.elliptic_update
    newton_hessian = make_hessian(fp, elliptic)
    hessian, cholesky, cholesky_solve = newton_hessian.hessian, newton_hessian.cholesky, newton_hessian.cholesky_solve

    @ti.func
    def update_rows(w, nefc, efc_f: ti.template()):
        """Force and state of every row at its jar; returns (the rows' cost, how many rows
        changed their Hessian: a new state, or an elliptic contact on its cone)."""
        out = ti.Vector([fp(0.0), fp(0.0)])
        i = 0
        while i < nefc:
            step = 1
            if ti.static(elliptic):
                if efc_f[w, i, E["type"]] == CNSTR_CONTACT_ELLIPTIC:
                    step = contact_dim(w, i, efc_f)
                    out += elliptic_update(w, i, step, efc_f)
                else:
                    out += scalar_update(w, i, efc_f)
            else:
                out += scalar_update(w, i, efc_f)
            i += step
        return out

    @ti.func
    def scalar_update(w, i, efc_f: ti.template()):
        """Force and state of row i, which is not part of an elliptic cone; returns (its
        cost, 1 if its state changed)."""
        cost = fp(0.0)
        jar = efc_f[w, i, E["jar"]]
        d = 1 / efc_f[w, i, E["R"]]
        upper = efc_f[w, i, E["upper"]]
        force = -d * jar
        state = STATE_QUADRATIC
        if efc_f[w, i, E["lower"]] < -_HALF_INF:
            cost = fp(0.5) * d * jar * jar
        elif upper < _HALF_INF:
            rf = efc_f[w, i, E["R"]] * upper
            if jar <= -rf:
                cost = -fp(0.5) * rf * upper - upper * jar
                force = upper
                state = STATE_LINEARNEG
            elif jar >= rf:
                cost = -fp(0.5) * rf * upper + upper * jar
                force = -upper
                state = STATE_LINEARPOS
            else:
                cost = fp(0.5) * d * jar * jar
        elif jar >= 0:
            force = fp(0.0)
            state = STATE_SATISFIED
        else:
            cost = fp(0.5) * d * jar * jar
        efc_f[w, i, E["force"]] = force
        changed = fp(1.0) if efc_f[w, i, E["state"]] != state else fp(0.0)
        efc_f[w, i, E["state"]] = state
        return ti.Vector([cost, changed])

    @ti.func
    def update(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(), qM: ti.template(),
               qacc: ti.template(), dof_d: ti.template(), efc_J: ti.template(), efc_f: ti.template(),
               efc_Y: ti.template(), hess, rows_moved):
        """Row forces at the current jar, grad = M (a - a0) - J^T f, and the preconditioned
        gradient MGRAD: with ``hess`` (Newton) H^-1 grad, else M^-1 grad. ``hess`` 1 builds
        and factors the Hessian; 2 keeps the factor from the last update unless a row's
        Hessian changed. Without ``rows_moved`` the rows and grad are those of the last
        update and only MGRAD is redone. Returns the total cost and, in float32, the
        squared norm of the gradient's terms (sum over dofs of (|qfrc_smooth| + sum_i
        |J f|)^2) that bounds its round-off."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        out = ti.Vector([fp(0.0), fp(0.0)])
        changed = fp(1.0)
        if rows_moved != 0:
            rows = update_rows(w, nefc, efc_f)
            changed = rows[1]
            size2 = fp(0.0)
            for d in range(nv):
                g = dof_d[o_dof + d * L.NDOF_D + MA]
                size = ti.abs(dof_d[o_dof + d * L.NDOF_D + QFRC_SMOOTH])
                for i in range(nefc):
                    force = efc_J[w, i, d] * efc_f[w, i, E["force"]]
                    g -= force
                    if ti.static(single):
                        size += ti.abs(force)
                if ti.static(single):
                    size2 += size * size
                dof_d[o_dof + d * L.NDOF_D + GRAD] = g
                dof_d[o_dof + d * L.NDOF_D + SCRATCH] = qacc[w, d] - dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH]
            out = ti.Vector([rows[0] + fp(0.5) * dot(w, nv, dof_d, SCRATCH, MA), size2])
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + MGRAD] = dof_d[o_dof + d * L.NDOF_D + GRAD]
        if ti.static(newton):
            if hess != 0:
                if hess == 1 or changed > 0:
                    hessian(w, nefc, nv, sizes, dof_i, qM, efc_J, efc_f, efc_Y)
                    cholesky(w, nv, efc_Y)
                cholesky_solve(w, nv, efc_Y, dof_d, MGRAD)
            else:
                inertia.solve(w, sizes, dof_i, qLD, dof_d, MGRAD)
        else:
            inertia.solve(w, sizes, dof_i, qLD, dof_d, MGRAD)
        return out

    return types.SimpleNamespace(update_rows=update_rows, update=update)
