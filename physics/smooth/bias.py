"""Bias forces by recursive Newton-Euler: gravity, Coriolis, centrifugal and gyroscopic
terms, C(q, qdot) = M(q) * 0 + c (MuJoCo's mj_rne with zero acceleration)."""


import functools
import types

from .. import layout as L
from ..model import DSBL_GRAVITY
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

CINERT, CVEL = L.BODY_D["cinert"][0], L.BODY_D["cvel"][0]
CACC, CFRC = L.BODY_D["cacc"][0], L.BODY_D["cfrc"][0]
CDOF, CDOF_DOT, QFRC_BIAS = L.DOF_D["cdof"][0], L.DOF_D["cdof_dot"][0], L.DOF_D["qfrc_bias"][0]
GRAVITY = L.OPT_F["gravity"][0]


@functools.lru_cache(maxsize=None)
def make_bias(fp):
    m = make_math(fp)

    @ti.func
    def rne(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), opt_f: ti.template(),
        # Data in:
        qvel: ti.template(),
        # Data out: cacc, cfrc (scratch), qfrc_bias
        body_d: ti.template(), dof_d: ti.template(),
    ):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mo = w % opt_f.shape[0]
        # the world accelerates upwards at -gravity, which applies gravity to every body
        g = m.vec3(0)
        if (sizes[L.SIZE_DISABLE] & DSBL_GRAVITY) == 0:
            g = -m.ld3(opt_f, mo, 0, GRAVITY)
        m.put(body_d, o_body + CACC, m.spatial(m.vec3(0), g))
        nbody = sizes[L.SIZE_NBODY]
        for b in range(1, nbody):
            cacc = m.at6(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_PARENT] * L.NBODY_D + CACC)
            da = body_i[b * L.NBODY_I + L.BODY_DOFADR]
            for d in range(da, da + body_i[b * L.NBODY_I + L.BODY_DOFNUM]):
                cacc += m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF_DOT) * qvel[w, d]
            row = o_body + b * L.NBODY_D
            m.put(body_d, row + CACC, cacc)
            cinert = m.at10(body_d, row + CINERT)
            cvel = m.at6(body_d, row + CVEL)
            m.put(body_d, row + CFRC, m.mul_inert(cinert, cacc) + m.cross_force(cvel, m.mul_inert(cinert, cvel)))
        m.put(body_d, o_body + CFRC, m.vec6(0))
        for i in range(nbody - 1):
            b = nbody - 1 - i
            p = body_i[b * L.NBODY_I + L.BODY_PARENT]
            if p > 0:
                prow = o_body + p * L.NBODY_D
                m.put(body_d, prow + CFRC, m.at6(body_d, prow + CFRC) + m.at6(body_d, o_body + b * L.NBODY_D + CFRC))
        for d in range(sizes[L.SIZE_NV]):
            cfrc = m.at6(body_d, o_body + dof_i[d * L.NDOF_I + L.DOF_BODY] * L.NBODY_D + CFRC)
            dof_d[o_dof + d * L.NDOF_D + QFRC_BIAS] = m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF).dot(cfrc)

    return types.SimpleNamespace(rne=rne)
