"""Joint-space inertia: the composite rigid body algorithm (CRBA) with armature, its
tree-sparse L^T D L factorization and solves (MuJoCo's mj_crb, mj_factorM, mj_solveM).

qM and qLD are stored dense (nv x nv); only entries (i, j) with j an ancestor dof of i
are ever written, so the sparse algorithms touch O(sum depth^2) entries. qLD holds D on
its diagonal and L (unit lower triangular, row i over i's ancestors) below it.
"""


import functools
import types

import taichi as ti

from . import layout as L
from ._math import make_math

CINERT, CRB = L.BODY_D["cinert"][0], L.BODY_D["crb"][0]
CDOF = L.DOF_D["cdof"][0]
ARMATURE = L.DOF_F["armature"][0]


@functools.lru_cache(maxsize=None)
def make_inertia(fp):
    m = make_math(fp)

    @ti.func
    def crb(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), dof_f: ti.template(),
        # Data in: cinert, cdof
        # Data out:
        body_d: ti.template(), dof_d: ti.template(), qM: ti.template(),
    ):
        """Composite inertias and the mass matrix M(i, j) = cdof_j . (crb_body(i) cdof_i)."""
        md = w % dof_f.shape[0]
        nbody = sizes[L.SIZE_NBODY]
        for b in range(nbody):
            m.st(body_d, w, b, CRB, m.ld10(body_d, w, b, CINERT))
        for i in range(nbody - 1):
            b = nbody - 1 - i
            p = body_i[b, L.BODY_PARENT]
            if p > 0:
                m.st(body_d, w, p, CRB, m.ld10(body_d, w, p, CRB) + m.ld10(body_d, w, b, CRB))
        for i in range(sizes[L.SIZE_NV]):
            buf = m.mul_inert(m.ld10(body_d, w, dof_i[i, L.DOF_BODY], CRB), m.ld6(dof_d, w, i, CDOF))
            qM[w, i, i] = dof_f[md, i, ARMATURE] + buf.dot(m.ld6(dof_d, w, i, CDOF))
            j = dof_i[i, L.DOF_PARENT]
            while j >= 0:
                v = buf.dot(m.ld6(dof_d, w, j, CDOF))
                qM[w, i, j] = v
                qM[w, j, i] = v
                j = dof_i[j, L.DOF_PARENT]

    @ti.func
    def copy_sparse(w, sizes: ti.template(), dof_i: ti.template(), M: ti.template(), qLD: ti.template()):
        """qLD <- the tree-sparse lower part of M."""
        for i in range(sizes[L.SIZE_NV]):
            qLD[w, i, i] = M[w, i, i]
            j = dof_i[i, L.DOF_PARENT]
            while j >= 0:
                qLD[w, i, j] = M[w, i, j]
                j = dof_i[j, L.DOF_PARENT]

    @ti.func
    def factor(w, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template()):
        """In place: qLD (a tree-sparse SPD matrix, lower part) <- its L^T D L factors."""
        nv = sizes[L.SIZE_NV]
        for r in range(nv):
            k = nv - 1 - r
            if qLD[w, k, k] < fp(1e-15):
                qLD[w, k, k] = fp(1e-15)
            dk = qLD[w, k, k]
            i = dof_i[k, L.DOF_PARENT]
            while i >= 0:
                tmp = qLD[w, k, i] / dk
                # row i over i and its ancestors: L(i, j) -= L(k, j) * tmp
                j = i
                while j >= 0:
                    qLD[w, i, j] -= qLD[w, k, j] * tmp
                    j = dof_i[j, L.DOF_PARENT]
                qLD[w, k, i] = tmp
                i = dof_i[i, L.DOF_PARENT]

    @ti.func
    def solve(w, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(), x: ti.template(), col: ti.template()):
        """x[w, :, col] <- (L^T D L)^-1 x[w, :, col], in place (x is a (nworld, nv, k) table)."""
        nv = sizes[L.SIZE_NV]
        for r in range(nv):
            i = nv - 1 - r
            xi = x[w, i, col]
            j = dof_i[i, L.DOF_PARENT]
            while j >= 0:
                x[w, j, col] -= qLD[w, i, j] * xi
                j = dof_i[j, L.DOF_PARENT]
        for i in range(nv):
            x[w, i, col] /= qLD[w, i, i]
        for i in range(nv):
            j = dof_i[i, L.DOF_PARENT]
            s = x[w, i, col]
            while j >= 0:
                s -= qLD[w, i, j] * x[w, j, col]
                j = dof_i[j, L.DOF_PARENT]
            x[w, i, col] = s

    return types.SimpleNamespace(crb=crb, copy_sparse=copy_sparse, factor=factor, solve=solve)
