"""Vectors over one world's dofs and rows: dot products of the dof scratch table's columns, products
with the joint-space inertia M (tree-sparse, MuJoCo's qM) and with the rows' Jacobian J
(efc_J, nefc x nv), the rows' jar = J qacc - aref and MA = M (qacc - qacc_smooth) with
the Gauss cost 1/2 (a - a0)^T M (a - a0)."""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...runtime.backend import ti
from ...runtime.taichi_adapter import vector_loops
from ...access import make_access
from ...runtime.ti_math import make_math
from ...smooth.unrolled_tree import dofs_in_registers, make_unrolled_tree


@functools.lru_cache(maxsize=None)
def make_vectors(fp):
    m = make_math(fp)
    A = make_access(fp)
    unrolled = make_unrolled_tree(fp)

    @ti.func
    @vector_loops
    def dot(w, nv, dof_s: ti.template(), a: ti.template(), b: ti.template()):
        """The dot product of two dof scratch columns, named by their accessors."""
        get_a, get_b = ti.static(A.read[a], A.read[b])
        o = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        s = fp(0.0)
        for d in range(nv):
            s += get_a(dof_s, o, d) * get_b(dof_s, o, d)
        return s

    @ti.func
    def mul_M(w, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), dof_s: ti.template(),
              src: ti.template(), dst: ti.template()):
        """Scratch column dst <- M (scratch column src), from the tree-sparse rows of qM."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        o = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        if ti.static(hasattr(dof_i, "tree")):  # a model's own kernel: physics/smooth/unrolled_tree.py
            unrolled.mul(o_m, o, dof_i, qM, dof_s, src, dst)
        else:
            mul_M_loops(o_m, o, nv, dof_i, qM, dof_s, src, dst)

    @ti.func
    def mul_M_loops(o_m, o, nv, dof_i: ti.template(), qM: ti.template(), dof_s: ti.template(), src: ti.template(),
                    dst: ti.template()):
        get, get_dst, put = ti.static(A.read[src], A.read[dst], A.write[dst])
        for i in range(nv):
            put(dof_s, o, i, 0)
        for i in range(nv):
            # row i's sum in a register: only the ancestors' entries are stored in the loop
            a = A.dof_madr(dof_i, i)
            x = get(dof_s, o, i)
            acc = get_dst(dof_s, o, i) + qM[m.entry(o_m, a)] * x
            j = A.dof_parent(dof_i, i)
            while j >= 0:
                a += 1
                mij = qM[m.entry(o_m, a)]
                acc += mij * get(dof_s, o, j)
                put(dof_s, o, j, get_dst(dof_s, o, j) + mij * x)
                j = A.dof_parent(dof_i, j)
            put(dof_s, o, i, acc)

    @ti.func
    def dofs_loaded(w, dof_i: ti.template(), vec: ti.template(), col: ti.template()):
        """Column ``col`` of the dof table ``vec`` as a vector of the model's nv values, where
        the dofs are held in registers (unrolled_tree.dofs_in_registers): loaded once, where
        the loops over rows load it again for every row."""
        get = ti.static(A.read[col])
        n = ti.static(len(dof_i.tree.parent))
        o = m.env_rows(w, ti.static(max(n, 1)), ti.static(A.row_width[col]))
        x = ti.Vector.zero(fp, n)
        for d in ti.static(range(n)):
            x[d] = get(vec, o, d)
        return x

    @ti.func
    def row_times(w, i, efc_J: ti.template(), x, start):
        """``start`` plus J's row i times the vector x (:func:`dofs_loaded`), summed in dof
        order as the loops sum it, the dofs written out."""
        s = start
        for d in ti.static(range(x.n)):
            s += efc_J[env_index(w, i, d)] * x[d]
        return s

    @ti.func
    @vector_loops
    def mul_J(w, nefc, nv, dof_i: ti.template(), efc_J: ti.template(), dof_s: ti.template(), src: ti.template(),
              efc_f: ti.template(), dst: ti.template()):
        """Row column dst <- J (scratch column src)."""
        get, put = ti.static(A.read[src], A.write[dst])
        if ti.static(dofs_in_registers(dof_i)):
            x = dofs_loaded(w, dof_i, dof_s, src)
            for i in range(nefc):
                put(efc_f, w, i, row_times(w, i, efc_J, x, fp(0.0)))
        else:
            o = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
            for i in range(nefc):
                s = fp(0.0)
                for d in range(nv):
                    s += efc_J[env_index(w, i, d)] * get(dof_s, o, d)
                put(efc_f, w, i, s)

    @ti.func
    @vector_loops
    def set_jar(w, nefc, nv, dof_i: ti.template(), qacc: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """jar = J qacc - aref."""
        if ti.static(dofs_in_registers(dof_i)):
            x = ti.Vector.zero(fp, ti.static(len(dof_i.tree.parent)))
            for d in ti.static(range(x.n)):
                x[d] = qacc[env_index(w, d)]
            for i in range(nefc):
                A.set_efc_jar(efc_f, w, i, row_times(w, i, efc_J, x, -A.efc_aref(efc_f, w, i)))
        else:
            for i in range(nefc):
                s = -A.efc_aref(efc_f, w, i)
                for d in range(nv):
                    s += efc_J[env_index(w, i, d)] * qacc[env_index(w, d)]
                A.set_efc_jar(efc_f, w, i, s)

    @ti.func
    def set_ma(w, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), qacc: ti.template(),
               dof_d: ti.template(), dof_s: ti.template()):
        """MA <- M (qacc - qacc_smooth); returns the Gauss cost 1/2 (a - a0)^T M (a - a0)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        for d in range(nv):
            A.set_dof_scratch(dof_s, o, d, qacc[env_index(w, d)] - A.dof_qacc_smooth(dof_d, o_dof, d))
        mul_M(w, nv, sizes, dof_i, qM, dof_s, "dof_scratch", "dof_ma")
        return fp(0.5) * dot(w, nv, dof_s, "dof_scratch", "dof_ma")

    return types.SimpleNamespace(dot=dot, mul_M=mul_M, mul_J=mul_J, set_jar=set_jar, set_ma=set_ma,
                                 dofs_loaded=dofs_loaded, row_times=row_times)
