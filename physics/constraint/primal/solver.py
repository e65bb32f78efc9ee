"""The primal solvers' iteration (MuJoCo's mj_solPrimal for Newton and CG): the start
point (warm start or qacc_smooth), the loop of cost update, convergence test, search
direction and line search, the move along it and CG's conjugate direction."""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...runtime.backend import ti
from ...smooth.unrolled_tree import dofs_in_registers
from ...runtime.taichi_adapter import vector_loops
from ...access import make_access
from ...runtime.ti_math import make_math
from .columns import (
    _MINVAL,
    FLOAT32_EPS,
)
from .cost import make_cost
from .line_search import make_line_search
from .vectors import make_vectors


@functools.lru_cache(maxsize=None)
def make_solver(fp, newton: bool, elliptic: bool):
    m = make_math(fp)
    A = make_access(fp)
    single = fp == ti.f32
    vectors = make_vectors(fp)
    dot, set_jar, set_ma = vectors.dot, vectors.set_jar, vectors.set_ma
    cost = make_cost(fp, newton, elliptic)
    update_rows, update = cost.update_rows, cost.update
    line_search = make_line_search(fp, elliptic).line_search

    @ti.func
    @vector_loops
    def start(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), qacc: ti.template(),
              dof_d: ti.template(), dof_s: ti.template(), efc_J: ti.template(), efc_f: ti.template(), warmstart):
        """qacc <- the better of the previous step's acceleration and qacc_smooth, with jar
        and MA at it (one loop around one update_rows, which the compiler inlines). At
        qacc_smooth, jar is the rows' bias and MA is zero: nothing to recompute."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        use_smooth = 1
        if warmstart:
            cost_warm = fp(0.0)
            for k in range(2):
                gauss = fp(0.0)
                if k == 0:
                    for d in range(nv):
                        qacc[env_index(w, d)] = A.dof_qacc_warmstart(dof_d, o_dof, d)
                    set_jar(w, nefc, nv, dof_i, qacc, efc_J, efc_f)
                    gauss = set_ma(w, nv, sizes, dof_i, qM, qacc, dof_d, dof_s)
                else:
                    for i in range(nefc):  # keep the warm start's jar in jv, free until the line search
                        A.set_efc_jv(efc_f, w, i, A.efc_jar(efc_f, w, i))
                        A.set_efc_jar(efc_f, w, i, A.efc_bias(efc_f, w, i))
                cost = update_rows(w, nefc, efc_f)[0] + gauss
                if k == 0:
                    cost_warm = cost
                elif cost >= cost_warm:
                    use_smooth = 0
                    for i in range(nefc):
                        A.set_efc_jar(efc_f, w, i, A.efc_jv(efc_f, w, i))
        if use_smooth != 0:
            for d in range(nv):
                qacc[env_index(w, d)] = A.dof_qacc_smooth(dof_d, o_dof, d)
                A.set_dof_ma(dof_s, o_s, d, 0)
            for i in range(nefc):
                A.set_efc_jar(efc_f, w, i, A.efc_bias(efc_f, w, i))

    @ti.func
    @vector_loops
    def solve(w, nefc, nv, scale, sizes: ti.template(), opt_f: ti.template(), dof_i: ti.template(), qM: ti.template(),
              qLD: ti.template(), qacc: ti.template(), dof_d: ti.template(), dof_s: ti.template(), efc_J: ti.template(),
              efc_f: ti.template(), efc_Y: ti.template(), warmstart):
        """qacc <- argmin cost(a), with the rows' forces and states at the minimum (MuJoCo's
        mj_solPrimal); returns the iterations made. One loop around one update() and one
        line_search(), for compile time. ``scale``: the stopping tests' unit (rows.solver_scale)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        mo = m.param_set(w, opt_f)
        tolerance = A.opt_tolerance(opt_f, mo, 0)
        gtol_scale = tolerance * A.opt_ls_tolerance(opt_f, mo, 0) / scale
        if ti.static(dofs_in_registers(dof_i)):
            x = vectors.dofs_loaded(w, dof_i, dof_d, "dof_qacc_smooth")
            for i in range(nefc):
                A.set_efc_bias(efc_f, w, i, vectors.row_times(w, i, efc_J, x, -A.efc_aref(efc_f, w, i)))
        else:
            for i in range(nefc):
                bias = -A.efc_aref(efc_f, w, i)
                for d in range(nv):
                    bias += efc_J[env_index(w, i, d)] * A.dof_qacc_smooth(dof_d, o_dof, d)
                A.set_efc_bias(efc_f, w, i, bias)
        start(w, nefc, nv, sizes, dof_i, qM, qacc, dof_d, dof_s, efc_J, efc_f, warmstart)
        # stage 0 (CG): the start point's certificate (M^-1 preconditioning); 1 (Newton):
        # the same, and failing it, the first Hessian, whose decrement certifies the start;
        # 2: iterating
        stage = 1 if ti.static(newton) else 0
        # Newton tries M^-1 first: H = M + J^T D J >= M, so grad^T M^-1 grad bounds Newton's
        # decrement, and a warm start it certifies needs no Hessian at all
        hess = 0
        rows_moved = 1
        terms2 = fp(0.0)
        it = 0
        improvement = fp(0.0)
        done = 0
        while done == 0:
            upd = update(w, nefc, nv, sizes, dof_i, qLD, qM, qacc, dof_d, dof_s, efc_J, efc_f, efc_Y, hess, rows_moved)
            if rows_moved != 0:
                terms2 = upd[1]
            rows_moved = 1
            if hess == 1:
                hess = 2  # factored: later updates refactor only where rows changed
            gradient = gradient_norm(scale * ti.sqrt(dot(w, nv, dof_s, "dof_grad", "dof_grad")), scale, nv, nefc,
                                     terms2)
            # 1/2 grad^T P^-1 grad: with P = M it bounds the suboptimality (the cost is
            # strongly convex in the M norm); with P = H it is Newton's decrement
            decrement = ti.max(fp(0.0), fp(0.5) * scale * dot(w, nv, dof_s, "dof_grad", "dof_mgrad"))
            state = next_state(ti.Vector([stage, hess, rows_moved, done]), gradient, decrement, improvement, tolerance)
            stage, hess, rows_moved, done = state[0], state[1], state[2], state[3]
            if done == 0 and stage == 2:
                if ti.static(newton):
                    for d in range(nv):
                        A.set_dof_search(dof_s, o_s, d, -A.dof_mgrad(dof_s, o_s, d))
                elif it == 0:
                    for d in range(nv):
                        A.set_dof_search(dof_s, o_s, d, -A.dof_mgrad(dof_s, o_s, d))
                else:
                    conjugate_direction(w, nv, dof_s)
                if it >= sizes[L.SIZE_ITERATIONS]:
                    done = 1
                else:
                    step = line_search(w, nefc, nv, sizes, dof_i, qM, dof_d, dof_s, efc_J, efc_f, gtol_scale,
                                       sizes[L.SIZE_LS_ITERATIONS])
                    alpha = step[0]
                    improvement = scale * step[1]
                    it += 1
                    if alpha == 0:
                        done = 1
                    else:
                        move(w, nefc, nv, alpha, qacc, dof_s, efc_f)
        return it

    @ti.func
    def gradient_norm(gradient, scale, nv, nefc, terms2):
        """The gradient's norm, zero in float32 where it is within its own round-off (a sum
        of nv + nefc terms, each with relative error eps): iterating on it only moves
        around the optimum."""
        out = gradient
        if ti.static(single):
            if gradient < scale * (nv + nefc) * FLOAT32_EPS * ti.sqrt(terms2):
                out = fp(0.0)
        return out

    @ti.func
    def next_state(state, gradient, decrement, improvement, tolerance):
        """The iteration's (stage, hess, rows_moved, done) after its convergence tests."""
        stage, hess, rows_moved, done = state[0], state[1], state[2], state[3]
        if stage == 0:
            stage = 2
            if decrement < tolerance:
                done = 1
        elif stage == 1:
            if gradient < tolerance and decrement < tolerance:
                done = 1
            elif hess == 0:
                hess = 1  # not certified by M: factor H at the same point and ask again
                rows_moved = 0
            else:
                stage = 2
        elif (improvement > 0 and improvement < tolerance) or gradient < tolerance:
            done = 1
        elif ti.static(newton) and decrement < tolerance:
            done = 1
        return ti.Vector([stage, hess, rows_moved, done])

    @ti.func
    @vector_loops
    def move(w, nefc, nv, alpha, qacc: ti.template(), dof_s: ti.template(), efc_f: ti.template()):
        """a += alpha search, and what is linear in a with it; keep the old gradients for CG."""
        o_s = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        for d in range(nv):
            qacc[env_index(w, d)] = qacc[env_index(w, d)] + alpha * A.dof_search(dof_s, o_s, d)
            A.set_dof_ma(dof_s, o_s, d, A.dof_ma(dof_s, o_s, d)
                                                + alpha * A.dof_mv(dof_s, o_s, d))
            if ti.static(not newton):
                A.set_dof_gradold(dof_s, o_s, d, A.dof_grad(dof_s, o_s, d))
                A.set_dof_mgradold(dof_s, o_s, d, A.dof_mgrad(dof_s, o_s, d))
        for i in range(nefc):
            A.set_efc_jar(efc_f, w, i, A.efc_jar(efc_f, w, i) + (alpha * A.efc_jv(efc_f, w, i)))

    @ti.func
    def conjugate_direction(w, nv, dof_s: ti.template()):
        """Hager-Zhang update of the M^-1-preconditioned search direction (MuJoCo 4's), with
        y = grad - gradold: beta = (y'M^-1 grad - 2 (y'M^-1 y / d'y) d'grad) / d'y, bounded
        below by -1 / (|d| min(0.01, |grad|)); steepest descent where d'y has lost conjugacy."""
        o_s = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        d_dot_y = fp(0.0)
        for d in range(nv):
            d_dot_y += A.dof_search(dof_s, o_s, d) * (A.dof_grad(dof_s, o_s, d) - A.dof_gradold(dof_s, o_s, d))
        beta = fp(0.0)
        if d_dot_y >= fp(_MINVAL):
            y_dot_my = fp(0.0)
            y_dot_mgrad = fp(0.0)
            d_dot_grad = fp(0.0)
            d_norm2 = fp(0.0)
            grad_norm2 = fp(0.0)
            for d in range(nv):
                y = A.dof_grad(dof_s, o_s, d) - A.dof_gradold(dof_s, o_s, d)
                y_dot_my += y * (A.dof_mgrad(dof_s, o_s, d) - A.dof_mgradold(dof_s, o_s, d))
                y_dot_mgrad += y * A.dof_mgrad(dof_s, o_s, d)
                d_dot_grad += A.dof_search(dof_s, o_s, d) * A.dof_grad(dof_s, o_s, d)
                d_norm2 += A.dof_search(dof_s, o_s, d) * A.dof_search(dof_s, o_s, d)
                grad_norm2 += A.dof_grad(dof_s, o_s, d) * A.dof_grad(dof_s, o_s, d)
            beta_hz = (y_dot_mgrad - 2 * (y_dot_my / d_dot_y) * d_dot_grad) / d_dot_y
            floor = -1 / ti.max(fp(_MINVAL), ti.sqrt(d_norm2) * ti.min(fp(0.01), ti.sqrt(grad_norm2)))
            beta = ti.max(floor, beta_hz)
        for d in range(nv):
            A.set_dof_search(dof_s, o_s, d, -A.dof_mgrad(dof_s, o_s, d)
                                                    + beta * A.dof_search(dof_s, o_s, d))

    return types.SimpleNamespace(solve=solve, gradient_norm=gradient_norm, next_state=next_state)
