"""Vectors over one world's dofs and rows: dot products of ``dof_d`` columns, products
with the joint-space inertia M (tree-sparse, MuJoCo's qM) and with the rows' Jacobian J
(efc_J, nefc x nv), the rows' jar = J qacc - aref and MA = M (qacc - qacc_smooth) with
the Gauss cost 1/2 (a - a0)^T M (a - a0)."""

import functools
import types

from ... import layout as L
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .columns import MA, QACC_SMOOTH, SCRATCH, E


@functools.lru_cache(maxsize=None)
def make_vectors(fp):
    m = make_math(fp)

    @ti.func
    def dot(w, nv, dof_d: ti.template(), a: ti.template(), b: ti.template()):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        s = fp(0.0)
        for d in range(nv):
            s += dof_d[o_dof + d * L.NDOF_D + a] * dof_d[o_dof + d * L.NDOF_D + b]
        return s

    @ti.func
    def mul_M(w, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), dof_d: ti.template(),
              src: ti.template(), dst: ti.template()):
        """dof_d[:, dst] <- M dof_d[:, src] from the tree-sparse rows of qM."""
        o_m = w * sizes[L.SIZE_M_STRIDE]
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for i in range(nv):
            dof_d[o_dof + i * L.NDOF_D + dst] = 0
        for i in range(nv):
            a = dof_i[i * L.NDOF_I + L.DOF_MADR]
            dof_d[o_dof + i * L.NDOF_D + dst] = (dof_d[o_dof + i * L.NDOF_D + dst]
                                                 + qM[o_m + a] * dof_d[o_dof + i * L.NDOF_D + src])
            j = dof_i[i * L.NDOF_I + L.DOF_PARENT]
            while j >= 0:
                a += 1
                dof_d[o_dof + i * L.NDOF_D + dst] = (dof_d[o_dof + i * L.NDOF_D + dst]
                                                     + qM[o_m + a] * dof_d[o_dof + j * L.NDOF_D + src])
                dof_d[o_dof + j * L.NDOF_D + dst] = (dof_d[o_dof + j * L.NDOF_D + dst]
                                                     + qM[o_m + a] * dof_d[o_dof + i * L.NDOF_D + src])
                j = dof_i[j * L.NDOF_I + L.DOF_PARENT]

    @ti.func
    def mul_J(w, nefc, nv, efc_J: ti.template(), dof_d: ti.template(), src: ti.template(), efc_f: ti.template(),
              dst: ti.template()):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        for i in range(nefc):
            s = fp(0.0)
            for d in range(nv):
                s += efc_J[w, i, d] * dof_d[o_dof + d * L.NDOF_D + src]
            efc_f[w, i, dst] = s

    @ti.func
    def set_jar(w, nefc, nv, qacc: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """jar = J qacc - aref."""
        for i in range(nefc):
            s = -efc_f[w, i, E["aref"]]
            for d in range(nv):
                s += efc_J[w, i, d] * qacc[w, d]
            efc_f[w, i, E["jar"]] = s

    @ti.func
    def set_ma(w, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), qacc: ti.template(),
               dof_d: ti.template()):
        """MA <- M (qacc - qacc_smooth); returns the Gauss cost 1/2 (a - a0)^T M (a - a0)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + SCRATCH] = qacc[w, d] - dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH]
        mul_M(w, nv, sizes, dof_i, qM, dof_d, SCRATCH, MA)
        return fp(0.5) * dot(w, nv, dof_d, SCRATCH, MA)

    return types.SimpleNamespace(dot=dot, mul_M=mul_M, mul_J=mul_J, set_jar=set_jar, set_ma=set_ma)
