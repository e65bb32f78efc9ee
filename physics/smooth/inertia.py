"""Joint-space inertia: the composite rigid body algorithm (CRBA) with armature, its
tree-sparse L^T D L factorization and solves (MuJoCo's mj_crb, mj_factorM, mj_solveM).

qM and qLD use MuJoCo's sparse row layout: row i, at dof_Madr[i], holds the entries
(i, i), (i, parent(i)), (i, parent(parent(i))), ... back to back. A row of an ancestor is
the tail of the row of its descendant, so the factorization's updates are contiguous
vector operations instead of pointer chasing. qLD holds D at each row's first entry and
the unit lower triangular L in the rest.
"""

import functools
import types

from .. import layout as L
from ..runtime.backend import ti
from ..runtime.taichi_adapter import vector_loops
from .tree import make_tree
from .unrolled_tree import make_unrolled_tree
from ..access import make_access
from ..runtime.ti_math import make_math



@functools.lru_cache(maxsize=None)
def make_inertia(fp):
    m = make_math(fp)
    A = make_access(fp)
    tree = make_tree(fp)
    unrolled = make_unrolled_tree(fp)

    @ti.func
    @vector_loops
    def crb(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), dof_f: ti.template(),
        # Data in: cinert, cdof
        # Data out:
        body_d: ti.template(), dof_d: ti.template(), qM: ti.template(),
    ):
        """Composite inertias and the mass matrix M(i, j) = cdof_j . (crb_body(i) cdof_i);
        a simple body's dofs couple with no other dof (MuJoCo keeps their rows diagonal)."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mcol = sizes[L.SIZE_MCOL]
        nbody = sizes[L.SIZE_NBODY]
        for b in range(nbody):
            A.set_body_crb(body_d, o_body, b, A.body_cinert(body_d, o_body, b))
        for i in range(nbody - 1):
            b = nbody - 1 - i
            p = A.body_parent(body_i, b)
            if p > 0:
                A.set_body_crb(body_d, o_body, p, A.body_crb(body_d, o_body, p) + A.body_crb(body_d, o_body, b))
        for i in range(sizes[L.SIZE_NV]):
            mass_row(i, o_m, o_dof, o_body, md, mcol, dof_i, dof_f, body_d, dof_d, qM)

    @ti.func
    @vector_loops  # the loops of the sweep it is part of
    def mass_row(i, o_m, o_dof, o_body, md, mcol, dof_i: ti.template(), dof_f: ti.template(), body_d: ti.template(),
                 dof_d: ti.template(), qM: ti.template()):
        """Row i of M from the composite inertias (an env's rows of the tables at the o_*, md)."""
        buf = m.mul_inert(A.body_crb(body_d, o_body, A.dof_body(dof_i, i)),
                          A.dof_cdof(dof_d, o_dof, i))
        adr = A.dof_madr(dof_i, i)
        qM[m.entry(o_m, adr)] = A.dof_armature(dof_f, md, i) + buf.dot(A.dof_cdof(dof_d, o_dof, i))
        for a in range(adr + 1, adr + A.dof_mrowlen(dof_i, i)):
            qM[m.entry(o_m, a)] = buf.dot(A.dof_cdof(dof_d, o_dof, dof_i[mcol + a]))
        if A.dof_simple(dof_i, i) != 0:
            for a in range(adr + 1, adr + A.dof_mrowlen(dof_i, i)):
                qM[m.entry(o_m, a)] = fp(0.0)

    # crb's three parts for a pass by level, each one body's or dof's work: a body's own
    # inertia, then (from the deepest level in) its children's composite inertias added in
    # descending body order, as crb adds them to a parent, then a row of M
    @ti.func
    def crb_own(w, b, sizes: ti.template(), body_d: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        A.set_body_crb(body_d, o_body, b, A.body_cinert(body_d, o_body, b))

    @ti.func
    def crb_gather(w, b, sizes: ti.template(), body_i: ti.template(), body_d: ti.template()):
        if b > 0:  # the world's is its own: crb adds nothing to it
            o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
            A.set_body_crb(body_d, o_body, b, tree.child_sum(b, o_body, body_i, body_d, "body_crb"))

    @ti.func
    def mass_row_of(w, i, sizes: ti.template(), dof_i: ti.template(), dof_f: ti.template(), body_d: ti.template(),
                    dof_d: ti.template(), qM: ti.template()):
        mass_row(i, m.env_offset(w, sizes[L.SIZE_M_STRIDE]), m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D),
                 m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D),
                 m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F), sizes[L.SIZE_MCOL], dof_i, dof_f, body_d,
                 dof_d, qM)

    @ti.func
    def copy_sparse(w, sizes: ti.template(), M: ti.template(), qLD: ti.template()):
        for a in range(sizes[L.SIZE_M_STRIDE]):
            copy_entry(w, a, sizes, M, qLD)

    @ti.func
    def copy_entry(w, a, sizes: ti.template(), M: ti.template(), qLD: ti.template()):
        """Entry a of the sparse mass matrix, to be factored in place."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        qLD[m.entry(o_m, a)] = M[m.entry(o_m, a)]

    @ti.func
    def factor(w, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template()):
        """In place: qLD (a tree-sparse SPD matrix) <- its L^T D L factors."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        nv = sizes[L.SIZE_NV]
        if ti.static(hasattr(dof_i, "tree")):
            unrolled.factor(o_m, dof_i, qLD)
        else:
            factor_loops(o_m, nv, dof_i, qLD)

    @ti.func
    def factor_loops(o_m, nv, dof_i: ti.template(), qLD: ti.template()):
        for r in range(nv):
            k = nv - 1 - r
            kk = A.dof_madr(dof_i, k)
            if qLD[m.entry(o_m, kk)] < fp(1e-15):
                qLD[m.entry(o_m, kk)] = fp(1e-15)
            dk = qLD[m.entry(o_m, kk)]
            ki = kk + 1
            i = A.dof_parent(dof_i, k)
            while i >= 0:
                tmp = qLD[m.entry(o_m, ki)] / dk
                # row i (i and its ancestors) -= tmp * the matching tail of row k
                ii = A.dof_madr(dof_i, i)
                for t in range(A.dof_mrowlen(dof_i, i)):
                    qLD[m.entry(o_m, (ii + t))] = qLD[m.entry(o_m, (ii + t))] - (qLD[m.entry(o_m, (ki + t))] * tmp)
                qLD[m.entry(o_m, ki)] = tmp
                ki += 1
                i = A.dof_parent(dof_i, i)

    @ti.func
    def solve(w, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(), dof_s: ti.template(),
              col: ti.template()):
        """Column ``col`` (a dof scratch column's accessor name, e.g. "dof_mgrad") of env w's
        rows <- (L^T D L)^-1 itself, in place."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        o = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        if ti.static(hasattr(dof_i, "tree")):
            unrolled.solve(o_m, o, dof_i, qLD, dof_s, col)
        else:
            solve_loops(o_m, o, sizes[L.SIZE_NV], sizes[L.SIZE_MCOL], dof_i, qLD, dof_s, col)

    @ti.func
    def solve_loops(o_m, o, nv, mcol, dof_i: ti.template(), qLD: ti.template(), dof_s: ti.template(),
                    col: ti.template()):
        get, put = ti.static(A.read[col], A.write[col])
        for r in range(nv):
            i = nv - 1 - r
            xi = get(dof_s, o, i)
            if xi != 0:
                adr = A.dof_madr(dof_i, i)
                for a in range(adr + 1, adr + A.dof_mrowlen(dof_i, i)):
                    j = dof_i[mcol + a]
                    put(dof_s, o, j, get(dof_s, o, j) - qLD[m.entry(o_m, a)] * xi)
        for i in range(nv):
            put(dof_s, o, i, get(dof_s, o, i) / qLD[m.entry(o_m, A.dof_madr(dof_i, i))])
        for i in range(nv):
            adr = A.dof_madr(dof_i, i)
            s = get(dof_s, o, i)
            for a in range(adr + 1, adr + A.dof_mrowlen(dof_i, i)):
                s -= qLD[m.entry(o_m, a)] * get(dof_s, o, dof_i[mcol + a])
            put(dof_s, o, i, s)

    @ti.func
    def add_diag(w, sizes: ti.template(), qLD: ti.template(), dof_i: ti.template(), d, value):
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        qLD[m.entry(o_m, A.dof_madr(dof_i, d))] = qLD[m.entry(o_m, A.dof_madr(dof_i, d))] + value

    return types.SimpleNamespace(crb=crb, crb_own=crb_own, crb_gather=crb_gather, mass_row_of=mass_row_of,
                                 copy_sparse=copy_sparse, copy_entry=copy_entry, factor=factor, solve=solve,
                                 add_diag=add_diag)
