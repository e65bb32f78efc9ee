"""The primal cost at the current acceleration (MuJoCo's mj_constraintUpdate): each
row's force -ds_i/djar_i and state at its jar, the total cost 1/2 (a - a0)^T M (a - a0)
+ sum_i s_i(jar_i), its gradient grad = M (a - a0) - J^T f (a vector over the dofs) and
the preconditioned gradient MGRAD: H^-1 grad for Newton, M^-1 grad for CG."""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...runtime.backend import ti
from ...smooth.unrolled_tree import dofs_in_registers
from ...runtime.taichi_adapter import vector_loops
from ...access import make_access
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from .columns import (
    _HALF_INF,
    CNSTR_CONTACT_ELLIPTIC,
    STATE_LINEARNEG,
    STATE_LINEARPOS,
    STATE_QUADRATIC,
    STATE_SATISFIED,
)
from .cone import make_cone
from .hessian import make_hessian
from .vectors import make_vectors


@functools.lru_cache(maxsize=None)
def make_cost(fp, newton: bool, elliptic: bool):
    inertia = make_inertia(fp)
    m = make_math(fp)
    A = make_access(fp)
    single = fp == ti.f32
    dot = make_vectors(fp).dot
    cone = make_cone(fp)
    contact_dim, elliptic_update = cone.contact_dim, cone.elliptic_update
    newton_hessian = make_hessian(fp, elliptic)
    hessian, factor, factor_solve = newton_hessian.hessian, newton_hessian.factor, newton_hessian.solve
    refresh = newton_hessian.refresh

    @ti.func
    def update_rows(w, nefc, efc_f: ti.template()):
        """Force and state of every row at its jar; returns (the rows' cost, how many rows
        changed their Hessian: a new state, or an elliptic contact on its cone)."""
        out = ti.Vector([fp(0.0), fp(0.0)])
        i = 0
        while i < nefc:
            step = 1
            if ti.static(elliptic):
                if A.efc_type(efc_f, w, i) == CNSTR_CONTACT_ELLIPTIC:
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
        jar = A.efc_jar(efc_f, w, i)
        d = 1 / A.efc_R(efc_f, w, i)
        upper = A.efc_upper(efc_f, w, i)
        force = -d * jar
        state = STATE_QUADRATIC
        if A.efc_lower(efc_f, w, i) < -_HALF_INF:
            cost = fp(0.5) * d * jar * jar
        elif upper < _HALF_INF:
            rf = A.efc_R(efc_f, w, i) * upper
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
        A.set_efc_force(efc_f, w, i, force)
        changed = fp(1.0) if A.efc_state(efc_f, w, i) != state else fp(0.0)
        A.set_efc_state(efc_f, w, i, state)
        return ti.Vector([cost, changed])

    @ti.func
    def gradient_in_registers(w, nefc, o_s, dof_i: ti.template(), dof_s: ti.template(), efc_J: ti.template(),
                              efc_f: ti.template()):
        """grad = MA - J^T f where the dofs are held in registers (dofs_in_registers):
        a row at a time along J's contiguous rows, every dof's sum in a register (each
        summed in row order, as update's loops sum it)."""
        g = ti.Vector.zero(fp, ti.static(len(dof_i.tree.parent)))
        for d in ti.static(range(g.n)):
            g[d] = A.dof_ma(dof_s, o_s, d)
        for i in range(nefc):
            force = A.efc_force(efc_f, w, i)
            for d in ti.static(range(g.n)):
                g[d] -= efc_J[env_index(w, i, d)] * force
        for d in ti.static(range(g.n)):
            A.set_dof_grad(dof_s, o_s, d, g[d])

    @ti.func
    @vector_loops
    def update(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(), qM: ti.template(),
               qacc: ti.template(), dof_d: ti.template(), dof_s: ti.template(), efc_J: ti.template(), efc_f: ti.template(),
               efc_Y: ti.template(), hess, rows_moved):
        """Row forces at the current jar, grad = M (a - a0) - J^T f, and the preconditioned
        gradient MGRAD: with ``hess`` (Newton) H^-1 grad, else M^-1 grad. ``hess`` 1 builds
        and factors the Hessian; 2 keeps the factor from the last update and brings it to
        the rows whose state changed (rank-one updates, or a rebuild). Without
        ``rows_moved`` the rows and grad are those of the last update and only MGRAD is
        redone. Returns the total cost and, in float32, the squared norm of the gradient's
        terms (sum over dofs of (|qfrc_smooth| + sum_i |J f|)^2) that bounds its round-off."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        out = ti.Vector([fp(0.0), fp(0.0)])
        changed = fp(1.0)
        if rows_moved != 0:
            rows = update_rows(w, nefc, efc_f)
            changed = rows[1]
            size2 = fp(0.0)
            if ti.static(dofs_in_registers(dof_i) and not single):
                gradient_in_registers(w, nefc, o_s, dof_i, dof_s, efc_J, efc_f)
            else:
                for d in range(nv):
                    g = A.dof_ma(dof_s, o_s, d)
                    size = ti.abs(A.dof_qfrc_smooth(dof_d, o_dof, d))
                    for i in range(nefc):
                        force = efc_J[env_index(w, i, d)] * A.efc_force(efc_f, w, i)
                        g -= force
                        if ti.static(single):
                            size += ti.abs(force)
                    if ti.static(single):
                        size2 += size * size
                    A.set_dof_grad(dof_s, o_s, d, g)
            for d in range(nv):
                A.set_dof_scratch(dof_s, o_s, d, qacc[env_index(w, d)] - A.dof_qacc_smooth(dof_d, o_dof, d))
            out = ti.Vector([rows[0] + fp(0.5) * dot(w, nv, dof_s, "dof_scratch", "dof_ma"), size2])
        for d in range(nv):
            A.set_dof_mgrad(dof_s, o_s, d, A.dof_grad(dof_s, o_s, d))
        if ti.static(newton):
            if hess != 0:
                rebuild = hess == 1
                if hess != 1 and changed > 0:
                    if ti.static(elliptic):
                        rebuild = True  # a cone's Hessian changes with its forces, not only its state
                    else:
                        rebuild = refresh(w, nefc, nv, efc_J, efc_f, efc_Y, dof_s) == 0
                if rebuild:
                    hessian(w, nefc, nv, sizes, dof_i, qM, efc_J, efc_f, efc_Y)
                    factor(w, nv, dof_i, efc_Y, dof_s)
                factor_solve(w, nv, dof_i, efc_Y, dof_s, "dof_mgrad")
            else:
                inertia.solve(w, sizes, dof_i, qLD, dof_s, "dof_mgrad")
        else:
            inertia.solve(w, sizes, dof_i, qLD, dof_s, "dof_mgrad")
        return out

    return types.SimpleNamespace(update_rows=update_rows, update=update, scalar_update=scalar_update)
