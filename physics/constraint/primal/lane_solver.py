"""The primal solve (Newton or CG, scalar rows and pyramidal cones) of one env by a lane
group (lane_group.py): solver.py's iteration with its work spread over the group's lanes.

Rows (their forces and states, jar, the line search's terms) and dofs (the gradient, the
moves) a run per lane; H an entry per lane and its factor and solves a column at a time
(lane_hessian.py); sums of the rows' and dofs' terms as group sums; a tree-sparse product
with M or M^-1 in one lane. Every lane holds the iteration's scalars and takes the same
branches: the convergence tests are solver.py's. On the CPU the lanes run in order and
the sums add their terms in solver.py's order, so the two solves agree to round-off."""

import functools
import types

from ... import layout as L
from ...access import make_access
from ...runtime.backend import ti
from ...runtime.lanes import env_index
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from .columns import _INF, _MINVAL
from .cost import make_cost
from .lane_group import make_group
from .lane_hessian import make_lane_hessian
from .line_search import make_line_search
from .solver import make_solver
from .vectors import make_vectors


@functools.lru_cache(maxsize=None)
def make_lane_solver(fp, newton: bool, simt: bool):
    m = make_math(fp)
    A = make_access(fp)
    single = fp == ti.f32
    g = make_group(fp, simt)
    H = make_lane_hessian(fp, simt)
    inertia = make_inertia(fp)
    mul_M = make_vectors(fp).mul_M
    scalar_update = make_cost(fp, newton, False).scalar_update
    search = make_line_search(fp, False)
    tests = make_solver(fp, newton, False)

    @ti.func
    def dot(w, me, nv, o_s, t: ti.template(), a: ti.template(), b: ti.template()):
        """The group sum of two dof scratch columns' products, in dof order."""
        get_a, get_b = ti.static(A.read[a], A.read[b])
        s = g.start(me, ti.Vector([fp(0.0)]))
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv)
            for d in range(r[0], r[1]):
                s[0] += get_a(t.dof_s, o_s, d) * get_b(t.dof_s, o_s, d)
        return g.total(w, me, s, t.efc_Y)[0]

    @ti.func
    def rows_update(w, me, nefc, t: ti.template()):
        """Every row's force and state at its jar: (their cost, rows whose state changed)."""
        out = g.start(me, ti.Vector([fp(0.0), fp(0.0)]))
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nefc)
            for i in range(r[0], r[1]):
                out += scalar_update(w, i, t.efc_f)
        return g.total(w, me, out, t.efc_Y)

    @ti.func
    def dof_value(w, d, o_dof, o_s, t: ti.template(), src: ti.template()):
        """Entry d of the dof vector ``src``: "qacc", or a dof_d or dof_s column."""
        out = fp(0.0)
        if ti.static(src == "qacc"):
            out = t.qacc[env_index(w, d)]
        elif ti.static(src == "dof_qacc_smooth"):
            out = A.dof_qacc_smooth(t.dof_d, o_dof, d)
        else:
            get = ti.static(A.read[src])
            out = get(t.dof_s, o_s, d)
        return out

    @ti.func
    def rows_times(w, me, nefc, nv, o_dof, o_s, t: ti.template(), src: ti.template(), dst: ti.template(),
                   start: ti.template()):
        """Row column ``dst`` <- J times the dof vector ``src`` (dof_value), each row's sum
        from its ``start`` column negated (none: zero)."""
        put = ti.static(A.write[dst])
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nefc)
            for i in range(r[0], r[1]):
                s = fp(0.0)
                if ti.static(start != ""):
                    get_start = ti.static(A.read[start])
                    s = -get_start(t.efc_f, w, i)
                for d in range(nv):
                    s += t.efc_J[env_index(w, i, d)] * dof_value(w, d, o_dof, o_s, t, src)
                put(t.efc_f, w, i, s)
        g.sync()

    @ti.func
    def copy_rows(w, me, nefc, t: ti.template(), src: ti.template(), dst: ti.template()):
        get, put = ti.static(A.read[src], A.write[dst])
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nefc)
            for i in range(r[0], r[1]):
                put(t.efc_f, w, i, get(t.efc_f, w, i))
        g.sync()

    @ti.func
    def set_ma(w, me, nv, o_dof, o_s, t: ti.template()):
        """MA <- M (qacc - qacc_smooth); returns the Gauss cost."""
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv)
            for d in range(r[0], r[1]):
                A.set_dof_scratch(t.dof_s, o_s, d, t.qacc[env_index(w, d)] - A.dof_qacc_smooth(t.dof_d, o_dof, d))
        g.sync()
        if g.first(me):
            mul_M(w, nv, t.sizes, t.dof_i, t.qM, t.dof_s, "dof_scratch", "dof_ma")
        g.sync()
        return fp(0.5) * dot(w, me, nv, o_s, t, "dof_scratch", "dof_ma")

    @ti.func
    def start(w, me, nefc, nv, o_dof, o_s, warmstart, t: ti.template()):
        """As solver.start: the better of the warm start and qacc_smooth."""
        use_smooth = 1
        if warmstart:
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), nv)
                for d in range(r[0], r[1]):
                    t.qacc[env_index(w, d)] = A.dof_qacc_warmstart(t.dof_d, o_dof, d)
            g.sync()
            rows_times(w, me, nefc, nv, o_dof, o_s, t, "qacc", "efc_jar", "efc_aref")
            gauss = set_ma(w, me, nv, o_dof, o_s, t)
            cost_warm = rows_update(w, me, nefc, t)[0] + gauss
            copy_rows(w, me, nefc, t, "efc_jar", "efc_jv")
            copy_rows(w, me, nefc, t, "efc_bias", "efc_jar")
            if rows_update(w, me, nefc, t)[0] + fp(0.0) >= cost_warm:
                use_smooth = 0
                copy_rows(w, me, nefc, t, "efc_jv", "efc_jar")
        if use_smooth != 0:
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), nv)
                for d in range(r[0], r[1]):
                    t.qacc[env_index(w, d)] = A.dof_qacc_smooth(t.dof_d, o_dof, d)
                    A.set_dof_ma(t.dof_s, o_s, d, 0)
            copy_rows(w, me, nefc, t, "efc_bias", "efc_jar")

    @ti.func
    def update(w, me, nefc, nv, o_dof, o_s, hess, rows_moved, t: ti.template()):
        """As cost.update: row forces, grad and MGRAD (H^-1 grad once ``hess``, else M^-1
        grad); returns, in float32, the squared norm of the gradient's terms."""
        changed = fp(1.0)
        size2 = fp(0.0)
        if rows_moved != 0:
            changed = rows_update(w, me, nefc, t)[1]
            sizes2 = g.start(me, ti.Vector([fp(0.0)]))
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), nv)
                for d in range(r[0], r[1]):
                    grad = A.dof_ma(t.dof_s, o_s, d)
                    size = ti.abs(A.dof_qfrc_smooth(t.dof_d, o_dof, d))
                    for i in range(nefc):
                        force = t.efc_J[env_index(w, i, d)] * A.efc_force(t.efc_f, w, i)
                        grad -= force
                        if ti.static(single):
                            size += ti.abs(force)
                    if ti.static(single):
                        sizes2[0] += size * size
                    A.set_dof_grad(t.dof_s, o_s, d, grad)
            if ti.static(single):
                size2 = g.total(w, me, sizes2, t.efc_Y)[0]
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv)
            for d in range(r[0], r[1]):
                A.set_dof_mgrad(t.dof_s, o_s, d, A.dof_grad(t.dof_s, o_s, d))
        g.sync()
        if ti.static(newton) and hess != 0:
            rebuild = hess == 1
            if hess != 1 and changed > 0:
                rebuild = H.refresh(w, me, nefc, nv, o_s, t) == 0
            if rebuild:
                H.hessian(w, me, nefc, nv, t)
                H.cholesky(w, me, nv, o_s, t)
            H.solve(w, me, nv, o_s, t, "dof_mgrad")
        else:
            if g.first(me):
                inertia.solve(w, t.sizes, t.dof_i, t.qLD, t.dof_s, "dof_mgrad")
            g.sync()
        return size2

    @ti.func
    def evaluate(w, me, nefc, gauss, alpha, t: ti.template()):
        acc = g.start(me, ti.Vector([fp(0.0), gauss[0], gauss[1], fp(0.0), fp(0.0), fp(0.0)]))
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nefc)
            for i in range(r[0], r[1]):
                acc = search.scalar_terms(w, i, alpha, acc, t.efc_f)
        return search.evaluated(alpha, g.total(w, me, acc, t.efc_Y))

    @ti.func
    def line_search(w, me, nefc, nv, o_s, gtol_scale, t: ti.template()):
        """As line_search.line_search: (alpha, improvement) along SEARCH."""
        out = ti.Vector([fp(0.0), fp(0.0)])
        snorm = ti.sqrt(dot(w, me, nv, o_s, t, "dof_search", "dof_search"))
        if snorm >= fp(_MINVAL):
            gtol = gtol_scale * snorm
            if g.first(me):
                mul_M(w, nv, t.sizes, t.dof_i, t.qM, t.dof_s, "dof_search", "dof_mv")
            rows_times(w, me, nefc, nv, 0, o_s, t, "dof_search", "efc_jv", "")
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), nefc)
                for i in range(r[0], r[1]):
                    search.scalar_quad(w, i, t.efc_f)
            g.sync()
            gauss = ti.Vector([dot(w, me, nv, o_s, t, "dof_search", "dof_ma"),
                               fp(0.5) * dot(w, me, nv, o_s, t, "dof_search", "dof_mv")])
            st = ti.Vector([fp(0.0), -fp(_INF), fp(_INF), fp(0.0), fp(0.0), fp(0.0)])  # bracketed_step's
            for evals in range(t.sizes[L.SIZE_LS_ITERATIONS]):
                if st[5] == 0:
                    st = search.bracketed_step(evaluate(w, me, nefc, gauss, st[0], t), evals + 1, gtol, st)
            if st[4] < 0:
                out = ti.Vector([st[3], -st[4]])
        return out

    @ti.func
    def move(w, me, nefc, nv, o_s, alpha, t: ti.template()):
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv)
            for d in range(r[0], r[1]):
                t.qacc[env_index(w, d)] = t.qacc[env_index(w, d)] + alpha * A.dof_search(t.dof_s, o_s, d)
                A.set_dof_ma(t.dof_s, o_s, d, A.dof_ma(t.dof_s, o_s, d) + alpha * A.dof_mv(t.dof_s, o_s, d))
                if ti.static(not newton):
                    A.set_dof_gradold(t.dof_s, o_s, d, A.dof_grad(t.dof_s, o_s, d))
                    A.set_dof_mgradold(t.dof_s, o_s, d, A.dof_mgrad(t.dof_s, o_s, d))
            r2 = g.chunk(g.lane(k, me), nefc)
            for i in range(r2[0], r2[1]):
                A.set_efc_jar(t.efc_f, w, i, A.efc_jar(t.efc_f, w, i) + (alpha * A.efc_jv(t.efc_f, w, i)))
        g.sync()

    @ti.func
    def conjugate_direction(w, me, nv, o_s, t: ti.template()):
        """As solver.conjugate_direction (Hager-Zhang), its sums as group sums."""
        s = g.start(me, ti.Vector([fp(0.0)] * 6))
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv)
            for d in range(r[0], r[1]):
                y = A.dof_grad(t.dof_s, o_s, d) - A.dof_gradold(t.dof_s, o_s, d)
                sd = A.dof_search(t.dof_s, o_s, d)
                grad = A.dof_grad(t.dof_s, o_s, d)
                s[0] += sd * y
                s[1] += y * (A.dof_mgrad(t.dof_s, o_s, d) - A.dof_mgradold(t.dof_s, o_s, d))
                s[2] += y * A.dof_mgrad(t.dof_s, o_s, d)
                s[3] += sd * grad
                s[4] += sd * sd
                s[5] += grad * grad
        s = g.total(w, me, s, t.efc_Y)
        beta = fp(0.0)
        if s[0] >= fp(_MINVAL):
            beta_hz = (s[2] - 2 * (s[1] / s[0]) * s[3]) / s[0]
            floor = -1 / ti.max(fp(_MINVAL), ti.sqrt(s[4]) * ti.min(fp(0.01), ti.sqrt(s[5])))
            beta = ti.max(floor, beta_hz)
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv)
            for d in range(r[0], r[1]):
                A.set_dof_search(t.dof_s, o_s, d, -A.dof_mgrad(t.dof_s, o_s, d) + beta * A.dof_search(t.dof_s, o_s, d))

    @ti.func
    def solve(w, me, nefc, nv, scale, warmstart, t: ti.template()):
        """As solver.solve, by the group; returns the iterations made."""
        o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        mo = m.param_set(w, t.opt_f)
        tolerance = A.opt_tolerance(t.opt_f, mo, 0)
        gtol_scale = tolerance * A.opt_ls_tolerance(t.opt_f, mo, 0) / scale
        rows_times(w, me, nefc, nv, o_dof, o_s, t, "dof_qacc_smooth", "efc_bias", "efc_aref")
        start(w, me, nefc, nv, o_dof, o_s, warmstart, t)
        # solver.solve's (stage, hess, rows_moved, done), as solver.next_state takes them
        state = ti.Vector([1 if ti.static(newton) else 0, 0, 1, 0])
        terms2 = fp(0.0)
        it = 0
        improvement = fp(0.0)
        while state[3] == 0:
            size2 = update(w, me, nefc, nv, o_dof, o_s, state[1], state[2], t)
            if state[2] != 0:
                terms2 = size2
            state[2] = 1
            if state[1] == 1:
                state[1] = 2
            gradient = tests.gradient_norm(scale * ti.sqrt(dot(w, me, nv, o_s, t, "dof_grad", "dof_grad")), scale, nv,
                                           nefc, terms2)
            decrement = ti.max(fp(0.0), fp(0.5) * scale * dot(w, me, nv, o_s, t, "dof_grad", "dof_mgrad"))
            state = tests.next_state(state, gradient, decrement, improvement, tolerance)
            done = state[3]
            if done == 0 and state[0] == 2:
                if ti.static(newton) or it == 0:
                    for k in range(g.count):
                        r = g.chunk(g.lane(k, me), nv)
                        for d in range(r[0], r[1]):
                            A.set_dof_search(t.dof_s, o_s, d, -A.dof_mgrad(t.dof_s, o_s, d))
                else:
                    conjugate_direction(w, me, nv, o_s, t)
                g.sync()
                if it >= t.sizes[L.SIZE_ITERATIONS]:
                    done = 1
                else:
                    step = line_search(w, me, nefc, nv, o_s, gtol_scale, t)
                    improvement = scale * step[1]
                    it += 1
                    if step[0] == 0:
                        done = 1
                    else:
                        move(w, me, nefc, nv, o_s, step[0], t)
            state[3] = done
        return it

    return types.SimpleNamespace(solve=solve)
