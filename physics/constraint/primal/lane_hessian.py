"""Newton's Hessian by a lane group (lane_group.py): H = M + J^T D J an entry a lane, its
Cholesky factor a column at a time (the column's rows across the lanes), the factor's
rank-one updates likewise, and solves with it a column at a time. The same arithmetic
as hessian.py's thread-per-env functions, entry by entry: each entry of J^T D J summed in
row order in runs of HESS_CHUNK, each factor entry as cholesky's; only the backward
solve subtracts its terms in the other order (the lanes take the rows of a column)."""

import functools
import types

from ... import layout as L
from ...access import make_access
from ...runtime.backend import ti
from ...runtime.lanes import env_index
from ...runtime.ti_math import make_math
from .columns import _MINVAL, HESS_CHUNK, STATE_QUADRATIC
from .hessian import make_hessian
from .lane_group import make_group


@functools.lru_cache(maxsize=None)
def make_lane_hessian(fp, simt: bool):
    A = make_access(fp)
    m = make_math(fp)
    g = make_group(fp, simt)
    thread = make_hessian(fp, False)

    @ti.func
    def entry(w, a, b, nefc, o_m, t: ti.template()):
        """H[a, b], b <= a: the rows' sum in runs of HESS_CHUNK rows that touch column a
        (as hessian.quadratic_rows sums it), then M's entry where b is a or an ancestor."""
        y = fp(0.0)
        h = fp(0.0)
        count = 0
        for i in range(nefc):
            v = A.efc_hess(t.efc_f, w, i) * t.efc_J[env_index(w, i, a)]
            if v != 0:
                h += v * t.efc_J[env_index(w, i, b)]
                count += 1
                if count == HESS_CHUNK:
                    y = y + h
                    h = fp(0.0)
                    count = 0
        y = y + h
        adr = A.dof_madr(t.dof_i, a)
        if a == b:
            y = y + t.qM[m.entry(o_m, adr)]
        else:
            j = A.dof_parent(t.dof_i, a)
            while j >= 0:
                adr += 1
                if j == b:
                    y = y + t.qM[m.entry(o_m, adr)]
                    j = -1
                else:
                    j = A.dof_parent(t.dof_i, j)
        return y

    @ti.func
    def hessian(w, me, nefc, nv, t: ti.template()):
        """The lower triangle of H into efc_Y, the rows' weights into efc_hess first."""
        o_m = m.env_offset(w, t.sizes[L.SIZE_M_STRIDE])
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nefc)
            for i in range(r[0], r[1]):
                weight = fp(0.0)
                if A.efc_state(t.efc_f, w, i) == STATE_QUADRATIC:
                    weight = 1 / A.efc_R(t.efc_f, w, i)
                A.set_efc_hess(t.efc_f, w, i, weight)
        g.sync()
        for k in range(g.count):
            r = g.chunk(g.lane(k, me), nv * (nv + 1) // 2)
            a = 0
            b = r[0]
            while b > a:  # entry r[0] of the lower triangle, row by row
                b -= a + 1
                a += 1
            for _ in range(r[0], r[1]):
                t.efc_Y[env_index(w, a, b)] = entry(w, a, b, nefc, o_m, t)
                b += 1
                if b > a:
                    a += 1
                    b = 0
        g.sync()

    @ti.func
    def cholesky(w, me, nv, o_s, t: ti.template()):
        """In place, as hessian.cholesky: column j's diagonal in every lane, its rows below
        across the lanes; the diagonal and its reciprocal written once all have read it."""
        for j in range(nv):
            s = t.efc_Y[env_index(w, j, j)]
            for k in range(j):
                s -= t.efc_Y[env_index(w, j, k)] * t.efc_Y[env_index(w, j, k)]
            ljj = ti.sqrt(ti.max(s, fp(_MINVAL)))
            inv = 1 / ljj
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), nv - j - 1)
                for q in range(r[0], r[1]):
                    i = j + 1 + q
                    s2 = t.efc_Y[env_index(w, i, j)]
                    for c in range(j):
                        s2 -= t.efc_Y[env_index(w, i, c)] * t.efc_Y[env_index(w, j, c)]
                    t.efc_Y[env_index(w, i, j)] = s2 * inv
            g.sync()
            if g.first(me):
                t.efc_Y[env_index(w, j, j)] = ljj
                A.set_dof_hinv(t.dof_s, o_s, j, inv)
        g.sync()

    @ti.func
    def solve(w, me, nv, o_s, t: ti.template(), col: ti.template()):
        """Scratch column ``col`` <- (L L^T)^-1 itself: each unknown once the columns before
        it are subtracted, then its column subtracted from the rest across the lanes."""
        get, put = ti.static(A.read[col], A.write[col])
        for j in range(nv):
            xj = get(t.dof_s, o_s, j) * A.dof_hinv(t.dof_s, o_s, j)
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), nv - j - 1)
                for q in range(r[0], r[1]):
                    i = j + 1 + q
                    put(t.dof_s, o_s, i, get(t.dof_s, o_s, i) - t.efc_Y[env_index(w, i, j)] * xj)
            g.sync()
            if g.first(me):
                put(t.dof_s, o_s, j, xj)
        g.sync()
        for back in range(nv):
            j = nv - 1 - back
            xj = get(t.dof_s, o_s, j) * A.dof_hinv(t.dof_s, o_s, j)
            for k in range(g.count):
                r = g.chunk(g.lane(k, me), j)
                for i in range(r[0], r[1]):
                    put(t.dof_s, o_s, i, get(t.dof_s, o_s, i) - t.efc_Y[env_index(w, j, i)] * xj)
            g.sync()
            if g.first(me):
                put(t.dof_s, o_s, j, xj)
        g.sync()

    @ti.func
    def refresh(w, me, nefc, nv, o_s, t: ti.template()):
        """As hessian.refresh: the factor brought to the rows' states by a rank-one update
        or downdate per row whose weight changed; 0 when a downdate lost rank."""
        ok = 1
        for i in range(nefc):
            held = A.efc_hess(t.efc_f, w, i)
            weight = fp(0.0)
            if A.efc_state(t.efc_f, w, i) == STATE_QUADRATIC:
                weight = 1 / A.efc_R(t.efc_f, w, i)
            if ok != 0 and weight != held:
                root = ti.sqrt(ti.max(weight, held))
                for k in range(g.count):
                    r = g.chunk(g.lane(k, me), nv)
                    for d in range(r[0], r[1]):
                        A.set_dof_scratch(t.dof_s, o_s, d, root * t.efc_J[env_index(w, i, d)])
                g.sync()
                if g.first(me):
                    A.set_efc_hess(t.efc_f, w, i, weight)
                ok = rank_one(w, me, nv, o_s, fp(1.0) if weight > held else fp(-1.0), t)
        return ok

    @ti.func
    def rank_one(w, me, nv, o_s, sign, t: ti.template()):
        """As hessian.rank_one, x in the scratch column: column k's rotation in every lane,
        its rows below across the lanes."""
        ok = 1
        for k in range(nv):
            xk = A.dof_scratch(t.dof_s, o_s, k)
            if ok != 0 and xk != 0:
                rot = thread.rotation(t.efc_Y[env_index(w, k, k)], xk, sign)
                if rot[0] < fp(_MINVAL):
                    ok = 0
                else:
                    root, c, s, inv_c = rot[1], rot[2], rot[3], rot[4]
                    for lk in range(g.count):
                        r = g.chunk(g.lane(lk, me), nv - k - 1)
                        for q in range(r[0], r[1]):
                            i = k + 1 + q
                            xi = A.dof_scratch(t.dof_s, o_s, i)
                            lik = (t.efc_Y[env_index(w, i, k)] + sign * s * xi) * inv_c
                            t.efc_Y[env_index(w, i, k)] = lik
                            A.set_dof_scratch(t.dof_s, o_s, i, c * xi - s * lik)
                    g.sync()
                    if g.first(me):
                        t.efc_Y[env_index(w, k, k)] = root
                        A.set_dof_hinv(t.dof_s, o_s, k, 1 / root)
        g.sync()
        return ok

    return types.SimpleNamespace(hessian=hessian, cholesky=cholesky, solve=solve, refresh=refresh)
