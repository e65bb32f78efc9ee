"""Newton's Hessian H = M + J^T D J (nv x nv, its lower triangle in the world's efc_Y),
where D = 1/R over the rows in their quadratic state, plus each elliptic contact's cone
Hessian while it is on the cone; its Cholesky factor, in place, its rank-one updates as
rows enter and leave the quadratic state, and solves with it (MuJoCo's mj_solNewton's H,
its factorisation and HessianIncremental)."""

import functools
import types

from ...access import make_access
from ... import layout as L
from ...runtime.lanes import env_index
from ...runtime.backend import ti
from ...runtime.taichi_adapter import vector_loops
from ...runtime.ti_math import make_math
from .columns import _MINVAL, CNSTR_CONTACT_ELLIPTIC, HESS_CHUNK, STATE_CONE, STATE_QUADRATIC
from .cone import make_cone
from ...smooth.unrolled_tree import ancestors, dofs_in_registers, dense_written_out, make_unrolled_tree


@functools.lru_cache(maxsize=None)
def make_hessian(fp, elliptic: bool):
    A = make_access(fp)
    m = make_math(fp)
    cone = make_cone(fp)
    unrolled = make_unrolled_tree(fp)
    contact_dim, cone_hessian_entry = cone.contact_dim, cone.cone_hessian_entry

    @ti.func
    def add_outer(w, nv, efc_J: ti.template(), efc_Y: ti.template(), r, s, scale):
        """Lower triangle of H += scale (J_r J_s^T + J_s J_r^T), r != s, or scale J_r J_r^T."""
        for a in range(nv):
            jra = efc_J[env_index(w, r, a)]
            jsa = efc_J[env_index(w, s, a)]
            if jra != 0 or jsa != 0:
                for b in range(a + 1):
                    v = jra * efc_J[env_index(w, s, b)]
                    if r != s:
                        v += jsa * efc_J[env_index(w, r, b)]
                    efc_Y[env_index(w, a, b)] = efc_Y[env_index(w, a, b)] + scale * v

    @ti.func
    @vector_loops
    def hessian(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), efc_J: ti.template(),
                efc_f: ti.template(), efc_Y: ti.template()):
        """Lower triangle of H = M + J^T D J over the quadratic rows, plus each elliptic
        contact's cone Hessian while it slides on the cone."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        for i in range(nefc):
            weight = fp(0.0)
            if A.efc_state(efc_f, w, i) == STATE_QUADRATIC:
                weight = 1 / A.efc_R(efc_f, w, i)
            A.set_efc_hess(efc_f, w, i, weight)
        if ti.static(dofs_in_registers(dof_i)):
            quadratic_rows_in_registers(w, nefc, o_m, dof_i, qM, efc_J, efc_f, efc_Y)
        else:
            quadratic_rows(w, nefc, nv, o_m, dof_i, qM, efc_J, efc_f, efc_Y)
        if ti.static(elliptic):
            i = 0
            while i < nefc:
                dim = 1
                if A.efc_type(efc_f, w, i) == CNSTR_CONTACT_ELLIPTIC:
                    dim = contact_dim(w, i, efc_f)
                    if A.efc_state(efc_f, w, i) == STATE_CONE:
                        for k in range(dim):
                            for j in range(k, dim):
                                h = cone_hessian_entry(w, i, dim, k, j, efc_f)
                                if h != 0:
                                    add_outer(w, nv, efc_J, efc_Y, i + k, i + j, h)
                i += dim

    @ti.func
    def quadratic_rows_in_registers(w, nefc, o_m, dof_i: ti.template(), qM: ti.template(), efc_J: ti.template(),
                                    efc_f: ti.template(), efc_Y: ti.template()):
        """:func:`quadratic_rows` in a model's own kernel of at most SUMMED_IN_REGISTERS_NV dofs,
        whose dof tree is known while it is traced: a column's entries summed in registers
        over the rows that touch it, in row order, and M's entries added at their constant
        places (the loops' sums where a column's rows fit one HESS_CHUNK)."""
        tree = ti.static(dof_i.tree)
        for a in ti.static(range(len(tree.parent))):
            h = ti.Vector.zero(fp, a + 1)
            for i in range(nefc):
                v = A.efc_hess(efc_f, w, i) * efc_J[env_index(w, i, a)]
                if v != 0:
                    for b in ti.static(range(a + 1)):
                        h[b] += v * efc_J[env_index(w, i, b)]
            h[a] += qM[m.entry(o_m, tree.madr[a])]
            for j, adr in ti.static(ancestors(tree, a)):
                h[j] += qM[m.entry(o_m, adr)]
            for b in ti.static(range(a + 1)):
                efc_Y[env_index(w, a, b)] = h[b]

    @ti.func
    @vector_loops
    def quadratic_rows(w, nefc, nv, o_m, dof_i: ti.template(), qM: ti.template(), efc_J: ti.template(),
                       efc_f: ti.template(), efc_Y: ti.template()):
        """The lower triangle of M + J^T D J, D the rows' weights (efc_hess). Each entry of
        J^T D J is one reduction, a loop without stores (several times faster than
        accumulating outer products row by row), over only the rows that touch its column:
        a limit or a contact's row touches the few dofs of its bodies' chains, not all of
        them. Those rows are listed in registers, HESS_CHUNK at a time: a list in memory
        costs twice the time."""
        for a in range(nv):
            for b in range(a + 1):
                efc_Y[env_index(w, a, b)] = 0
            i = 0
            while i < nefc:
                rows = ti.Vector([0] * HESS_CHUNK)
                vals = ti.Vector([fp(0.0)] * HESS_CHUNK)
                count = 0
                while i < nefc and count < HESS_CHUNK:
                    v = A.efc_hess(efc_f, w, i) * efc_J[env_index(w, i, a)]
                    if v != 0:
                        rows[count] = i
                        vals[count] = v
                        count += 1
                    i += 1
                for b in range(a + 1):
                    h = fp(0.0)
                    for k in range(count):
                        h += vals[k] * efc_J[env_index(w, rows[k], b)]
                    efc_Y[env_index(w, a, b)] = efc_Y[env_index(w, a, b)] + h
        for i in range(nv):
            adr = A.dof_madr(dof_i, i)
            efc_Y[env_index(w, i, i)] = efc_Y[env_index(w, i, i)] + qM[m.entry(o_m, adr)]
            j = A.dof_parent(dof_i, i)
            while j >= 0:
                adr += 1
                efc_Y[env_index(w, i, j)] = efc_Y[env_index(w, i, j)] + qM[m.entry(o_m, adr)]
                j = A.dof_parent(dof_i, j)

    @ti.func
    @vector_loops
    def cholesky(w, nv, efc_Y: ti.template(), dof_s: ti.template()):
        """In place: the lower triangle of efc_Y[w, :nv, :nv] <- its Cholesky factor, and the
        reciprocals of its diagonal in dof_s's hinv column (the solves multiply by them:
        a division on the triangular solves' dependency chain costs several times a
        multiplication)."""
        o = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        for j in range(nv):
            s = efc_Y[env_index(w, j, j)]
            for k in range(j):
                s -= efc_Y[env_index(w, j, k)] * efc_Y[env_index(w, j, k)]
            ljj = ti.sqrt(ti.max(s, fp(_MINVAL)))
            inv = 1 / ljj
            efc_Y[env_index(w, j, j)] = ljj
            A.set_dof_hinv(dof_s, o, j, inv)
            for i in range(j + 1, nv):
                s = efc_Y[env_index(w, i, j)]
                for k in range(j):
                    s -= efc_Y[env_index(w, i, k)] * efc_Y[env_index(w, j, k)]
                efc_Y[env_index(w, i, j)] = s * inv

    @ti.func
    def factor(w, nv, dof_i: ti.template(), efc_Y: ti.template(), dof_s: ti.template()):
        """:func:`cholesky`, written out entry by entry in a model's own kernel of at most
        unrolled_tree.UNROLLED_CHOLESKY_NV dofs (physics/smooth/unrolled_tree.py)."""
        if ti.static(dense_written_out(dof_i)):
            unrolled.cholesky(w, dof_i, efc_Y, dof_s, _MINVAL)
        else:
            cholesky(w, nv, efc_Y, dof_s)

    @ti.func
    def solve(w, nv, dof_i: ti.template(), efc_Y: ti.template(), dof_s: ti.template(), col: ti.template()):
        """:func:`cholesky_solve`, written out as :func:`factor` is."""
        if ti.static(dense_written_out(dof_i)):
            unrolled.cholesky_solve(w, dof_i, efc_Y, dof_s, col)
        else:
            cholesky_solve(w, nv, efc_Y, dof_s, col)

    @ti.func
    def refresh(w, nefc, nv, efc_J: ti.template(), efc_f: ti.template(), efc_Y: ti.template(),
                dof_s: ti.template()):
        """The factor in efc_Y brought to the rows' current states: each row whose weight
        (efc_hess: what the factor holds) differs from its state's adds or removes
        w J_i^T J_i by a rank-one update or downdate, O(nv^2) instead of rebuilding H and
        refactoring it, O(nv^3) (pyramidal and scalar rows only). Returns 0 when a downdate
        lost rank: the caller rebuilds the factor."""
        o = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        ok = 1
        for i in range(nefc):
            held = A.efc_hess(efc_f, w, i)
            weight = fp(0.0)
            if A.efc_state(efc_f, w, i) == STATE_QUADRATIC:
                weight = 1 / A.efc_R(efc_f, w, i)
            if ok != 0 and weight != held:
                A.set_efc_hess(efc_f, w, i, weight)
                root = ti.sqrt(ti.max(weight, held))
                for d in range(nv):
                    A.set_dof_scratch(dof_s, o, d, root * efc_J[env_index(w, i, d)])
                ok = rank_one(w, nv, efc_Y, dof_s, o, fp(1.0) if weight > held else fp(-1.0))
        return ok

    @ti.func
    def rotation(lkk, xk, sign):
        """The rotation of a rank-one update (sign 1) or downdate (-1) at a diagonal lkk and
        x's entry xk: (the new diagonal's square r^2, r, c = r / lkk, s = xk / lkk, 1 / c);
        r^2 below MINVAL is a downdate that lost rank."""
        r2 = lkk * lkk + sign * xk * xk
        r = ti.sqrt(ti.max(r2, fp(_MINVAL)))
        return ti.Vector([r2, r, r / lkk, xk / lkk, lkk / r])

    @ti.func
    @vector_loops
    def rank_one(w, nv, efc_Y: ti.template(), dof_s: ti.template(), o, sign):
        """L L^T <- L L^T + sign x x^T in place, x in dof_s's scratch column (consumed);
        columns where x is zero are left as they are. Returns 0 if a diagonal would fall
        below MINVAL (a downdate that lost rank)."""
        ok = 1
        for k in range(nv):
            xk = A.dof_scratch(dof_s, o, k)
            if ok != 0 and xk != 0:
                rot = rotation(efc_Y[env_index(w, k, k)], xk, sign)
                if rot[0] < fp(_MINVAL):
                    ok = 0
                else:
                    r, c, s, inv_c = rot[1], rot[2], rot[3], rot[4]
                    efc_Y[env_index(w, k, k)] = r
                    A.set_dof_hinv(dof_s, o, k, 1 / r)
                    for i in range(k + 1, nv):
                        xi = A.dof_scratch(dof_s, o, i)
                        lik = (efc_Y[env_index(w, i, k)] + sign * s * xi) * inv_c
                        efc_Y[env_index(w, i, k)] = lik
                        A.set_dof_scratch(dof_s, o, i, c * xi - s * lik)
        return ok

    @ti.func
    @vector_loops
    def cholesky_solve(w, nv, efc_Y: ti.template(), dof_s: ti.template(), col: ti.template()):
        """Scratch column ``col`` (its accessor's name) <- (L L^T)^-1 itself, L in efc_Y."""
        get, put = ti.static(A.read[col], A.write[col])
        o = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        for i in range(nv):
            s = get(dof_s, o, i)
            for k in range(i):
                s -= efc_Y[env_index(w, i, k)] * get(dof_s, o, k)
            put(dof_s, o, i, s * A.dof_hinv(dof_s, o, i))
        for r in range(nv):
            i = nv - 1 - r
            s = get(dof_s, o, i)
            for k in range(i + 1, nv):
                s -= efc_Y[env_index(w, k, i)] * get(dof_s, o, k)
            put(dof_s, o, i, s * A.dof_hinv(dof_s, o, i))

    return types.SimpleNamespace(hessian=hessian, cholesky=cholesky, factor=factor, solve=solve, refresh=refresh,
                                 rank_one=rank_one, rotation=rotation,
                                 cholesky_solve=cholesky_solve)
