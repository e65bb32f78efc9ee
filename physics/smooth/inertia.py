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
from ..runtime.ti_math import make_math

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
        o_m = w * sizes[L.SIZE_M_STRIDE]
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mcol = sizes[L.SIZE_MCOL]
        nbody = sizes[L.SIZE_NBODY]
        for b in range(nbody):
            m.put(body_d, o_body + b * L.NBODY_D + CRB, m.at10(body_d, o_body + b * L.NBODY_D + CINERT))
        for i in range(nbody - 1):
            b = nbody - 1 - i
            p = body_i[b * L.NBODY_I + L.BODY_PARENT]
            if p > 0:
                prow = o_body + p * L.NBODY_D
                m.put(body_d, prow + CRB, m.at10(body_d, prow + CRB) + m.at10(body_d, o_body + b * L.NBODY_D + CRB))
        for i in range(sizes[L.SIZE_NV]):
            buf = m.mul_inert(m.at10(body_d, o_body + dof_i[i * L.NDOF_I + L.DOF_BODY] * L.NBODY_D + CRB),
                              m.at6(dof_d, o_dof + i * L.NDOF_D + CDOF))
            adr = dof_i[i * L.NDOF_I + L.DOF_MADR]
            qM[o_m + adr] = dof_f[md + i * L.NDOF_F + ARMATURE] + buf.dot(m.at6(dof_d, o_dof + i * L.NDOF_D + CDOF))
            for a in range(adr + 1, adr + dof_i[i * L.NDOF_I + L.DOF_MROWLEN]):
                qM[o_m + a] = buf.dot(m.at6(dof_d, o_dof + dof_i[mcol + a] * L.NDOF_D + CDOF))

    @ti.func
    def copy_sparse(w, sizes: ti.template(), M: ti.template(), qLD: ti.template()):
        o_m = w * sizes[L.SIZE_M_STRIDE]
        for a in range(sizes[L.SIZE_M_STRIDE]):
            qLD[o_m + a] = M[o_m + a]

    @ti.func
    def factor(w, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template()):
        """In place: qLD (a tree-sparse SPD matrix) <- its L^T D L factors."""
        o_m = w * sizes[L.SIZE_M_STRIDE]
        nv = sizes[L.SIZE_NV]
        for r in range(nv):
            k = nv - 1 - r
            kk = dof_i[k * L.NDOF_I + L.DOF_MADR]
            if qLD[o_m + kk] < fp(1e-15):
                qLD[o_m + kk] = fp(1e-15)
            dk = qLD[o_m + kk]
            ki = kk + 1
            i = dof_i[k * L.NDOF_I + L.DOF_PARENT]
            while i >= 0:
                tmp = qLD[o_m + ki] / dk
                # row i (i and its ancestors) -= tmp * the matching tail of row k
                ii = dof_i[i * L.NDOF_I + L.DOF_MADR]
                for t in range(dof_i[i * L.NDOF_I + L.DOF_MROWLEN]):
                    qLD[o_m + (ii + t)] = qLD[o_m + (ii + t)] - (qLD[o_m + (ki + t)] * tmp)
                qLD[o_m + ki] = tmp
                ki += 1
                i = dof_i[i * L.NDOF_I + L.DOF_PARENT]

    @ti.func
    def solve(w, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(), x: ti.template(),
              col: ti.template()):
        """Column ``col`` of env w's rows of the flat dof table x <- (L^T D L)^-1 itself, in place."""
        o_m = w * sizes[L.SIZE_M_STRIDE]
        mcol = sizes[L.SIZE_MCOL]
        nv = sizes[L.SIZE_NV]
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for r in range(nv):
            i = nv - 1 - r
            xi = x[o_dof + i * L.NDOF_D + col]
            if xi != 0:
                adr = dof_i[i * L.NDOF_I + L.DOF_MADR]
                for a in range(adr + 1, adr + dof_i[i * L.NDOF_I + L.DOF_MROWLEN]):
                    j = dof_i[mcol + a]
                    x[o_dof + j * L.NDOF_D + col] = x[o_dof + j * L.NDOF_D + col] - qLD[o_m + a] * xi
        for i in range(nv):
            x[o_dof + i * L.NDOF_D + col] = x[o_dof + i * L.NDOF_D + col] / qLD[o_m + dof_i[i * L.NDOF_I + L.DOF_MADR]]
        for i in range(nv):
            adr = dof_i[i * L.NDOF_I + L.DOF_MADR]
            s = x[o_dof + i * L.NDOF_D + col]
            for a in range(adr + 1, adr + dof_i[i * L.NDOF_I + L.DOF_MROWLEN]):
                s -= qLD[o_m + a] * x[o_dof + dof_i[mcol + a] * L.NDOF_D + col]
            x[o_dof + i * L.NDOF_D + col] = s

    @ti.func
    def add_diag(w, sizes: ti.template(), qLD: ti.template(), dof_i: ti.template(), d, value):
        o_m = w * sizes[L.SIZE_M_STRIDE]
        qLD[o_m + dof_i[d * L.NDOF_I + L.DOF_MADR]] = qLD[o_m + dof_i[d * L.NDOF_I + L.DOF_MADR]] + value

    return types.SimpleNamespace(crb=crb, copy_sparse=copy_sparse, factor=factor, solve=solve, add_diag=add_diag)
