"""The mass matrix's tree-sparse factor and solves written out entry by entry, for a
model's own kernel (physics/step/env_tables.py), which is traced with the model's dof
tree: every entry's place is a constant and every entry a local that LLVM keeps in a
register, where the loops (physics/smooth/inertia.py) walk the tree through the dof
table and load and store qLD at each step. The same arithmetic in the same order as the
loops, built while Taichi traces the kernel (``traced_access``)."""

import functools
import types

from .. import access as _access
from .. import layout as L
from ..runtime.lanes import env_index
from ..runtime.ti_math import make_math
from ..runtime.backend import ti
from ..runtime.taichi_adapter import traced_access, traced_helper


UNROLLED_CHOLESKY_NV = 24  # the most dofs whose dense Hessian factor is written out
SUMMED_IN_REGISTERS_NV = 32  # the most dofs the constraint stage holds in registers


@traced_helper
def dense_written_out(dof_i) -> bool:
    """Whether Newton's dense factor and solves are written out for this dof table: a model's
    own kernel's (a TreeTable) of at most UNROLLED_CHOLESKY_NV dofs."""
    return hasattr(dof_i, "tree") and len(dof_i.tree.parent) <= UNROLLED_CHOLESKY_NV


@traced_helper
def dofs_in_registers(dof_i) -> bool:
    """Whether the constraint stage holds a vector over the dofs in registers for this dof
    table, summing J's rows, J^T and Newton's Hessian a column at a time over the dofs
    written out: a model's own kernel's of at most SUMMED_IN_REGISTERS_NV dofs (the
    Hessian's columns are n^2 / 2 multiply-adds of code, the factor written out n^3 / 6)."""
    return hasattr(dof_i, "tree") and len(dof_i.tree.parent) <= SUMMED_IN_REGISTERS_NV


def ancestors(tree, i):
    """Dof i's ancestors, nearest first, beside their entries in i's row of the mass matrix."""
    out, adr, j = [], tree.madr[i] + 1, tree.parent[i]
    while j >= 0:
        out.append((j, adr))
        adr, j = adr + 1, tree.parent[j]
    return out


@functools.lru_cache(maxsize=None)
def make_unrolled_tree(fp):
    m = make_math(fp)
    A = _access.make_access(fp)
    P = traced_access()

    def local(value):
        return P.once((value,))[0]

    def loaded_once(load):
        """``load`` (entry's place -> a load), each entry loaded into a local at its first use."""
        loaded = {}

        def entry(*place):
            if place not in loaded:
                loaded[place] = local(load(*place))
            return loaded[place]

        return entry

    @traced_helper
    def factor(o_m, dof_i, qLD):
        """In place: qLD <- its L^T D L factors (inertia.factor's loops, unrolled)."""
        tree = dof_i.tree
        n = tree.madr[-1] + tree.rowlen[-1]
        q = [local(P.load(qLD, m.entry(o_m, a))) for a in range(n)]
        for k in reversed(range(len(tree.parent))):
            kk = tree.madr[k]
            floor = ti.cast(1e-15, fp)
            dk = q[kk] = local(ti.select(q[kk] < floor, floor, q[kk]))
            for i, ki in ancestors(tree, k):
                tmp = local(q[ki] / dk)
                ii = tree.madr[i]
                for t in range(tree.rowlen[i]):
                    q[ii + t] = local(q[ii + t] - q[ki + t] * tmp)
                q[ki] = tmp
        for a in range(n):
            P.store(qLD, (m.entry(o_m, a),), q[a])

    @traced_helper
    def solve(o_m, o, dof_i, qLD, dof_s, col):
        """Scratch column ``col`` <- (L^T D L)^-1 itself (inertia.solve's loops, unrolled;
        a zero entry's column is subtracted too, where the loops skip it)."""
        get, put = A.read[col], A.write[col]
        tree = dof_i.tree
        nv = len(tree.parent)
        entry = loaded_once(lambda a: P.load(qLD, m.entry(o_m, a)))

        x = [local(get(dof_s, o, i)) for i in range(nv)]
        for i in reversed(range(nv)):
            for j, a in ancestors(tree, i):
                x[j] = local(x[j] - entry(a) * x[i])
        for i in range(nv):
            x[i] = local(x[i] / entry(tree.madr[i]))
        for i in range(nv):
            s = x[i]
            for j, a in ancestors(tree, i):
                s = s - entry(a) * x[j]
            x[i] = local(s)
        for i in range(nv):
            put(dof_s, o, i, x[i])

    @traced_helper
    def mul(o_m, o, dof_i, qM, dof_s, src, dst):
        """Scratch column ``dst`` <- M (scratch column ``src``) (vectors.mul_M's loops, unrolled)."""
        get, put = A.read[src], A.write[dst]
        tree = dof_i.tree
        nv = len(tree.parent)
        x = [local(get(dof_s, o, i)) for i in range(nv)]
        y = [ti.cast(0.0, fp)] * nv
        for i in range(nv):
            mii = local(P.load(qM, m.entry(o_m, tree.madr[i])))
            acc = y[i] + mii * x[i]
            for j, a in ancestors(tree, i):
                mij = local(P.load(qM, m.entry(o_m, a)))
                acc = acc + mij * x[j]
                y[j] = local(y[j] + mij * x[i])
            y[i] = local(acc)
        for i in range(nv):
            put(dof_s, o, i, y[i])

    @traced_helper
    def cholesky(w, dof_i, efc_Y, dof_s, smallest):
        """In place: the lower triangle of efc_Y[w, :nv, :nv] <- its Cholesky factor, and its
        diagonal's reciprocals in dof_s's hinv column (hessian.cholesky's loops, unrolled for
        the tree's nv dofs: Newton's dense Hessian, nv^3 / 6 multiply-adds in registers);
        ``smallest``: the least a diagonal's square may be."""
        n = len(dof_i.tree.parent)
        o = m.env_rows(w, max(n, 1), L.NDOF_S)
        y = {(i, j): local(P.load(efc_Y, *env_index(w, i, j))) for i in range(n) for j in range(i + 1)}
        floor = ti.cast(smallest, fp)
        for j in range(n):
            s = y[j, j]
            for k in range(j):
                s = s - y[j, k] * y[j, k]
            ljj = local(ti.sqrt(ti.max(s, floor)))
            inv = local(1 / ljj)
            y[j, j] = ljj
            A.set_dof_hinv(dof_s, o, j, inv)
            for i in range(j + 1, n):
                s = y[i, j]
                for k in range(j):
                    s = s - y[i, k] * y[j, k]
                y[i, j] = local(s * inv)
        for (i, j), v in y.items():
            P.store(efc_Y, env_index(w, i, j), v)

    @traced_helper
    def cholesky_solve(w, dof_i, efc_Y, dof_s, col):
        """Scratch column ``col`` <- (L L^T)^-1 itself, L in efc_Y (hessian.cholesky_solve's
        loops, unrolled for the tree's nv dofs)."""
        n = len(dof_i.tree.parent)
        get, put = A.read[col], A.write[col]
        o = m.env_rows(w, max(n, 1), L.NDOF_S)
        entry = loaded_once(lambda i, k: P.load(efc_Y, *env_index(w, i, k)))

        hinv = [local(A.dof_hinv(dof_s, o, i)) for i in range(n)]
        x = [local(get(dof_s, o, i)) for i in range(n)]
        for i in range(n):
            s = x[i]
            for k in range(i):
                s = s - entry(i, k) * x[k]
            x[i] = local(s * hinv[i])
        for i in reversed(range(n)):
            s = x[i]
            for k in range(i + 1, n):
                s = s - entry(k, i) * x[k]
            x[i] = local(s * hinv[i])
        for i in range(n):
            put(dof_s, o, i, x[i])

    return types.SimpleNamespace(factor=factor, solve=solve, mul=mul, cholesky=cholesky, cholesky_solve=cholesky_solve)
