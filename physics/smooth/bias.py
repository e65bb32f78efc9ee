"""Bias forces by recursive Newton-Euler: gravity, Coriolis, centrifugal and gyroscopic
terms, C(q, qdot) = M(q) * 0 + c (MuJoCo's mj_rne with zero acceleration)."""


import functools
import types

from .. import layout as L
from ..lanes import env_index
from ..model import DSBL_GRAVITY
from ..runtime.backend import ti
from ..runtime.taichi_adapter import vector_loops
from ..access import make_access
from ..runtime.ti_math import make_math



@functools.lru_cache(maxsize=None)
def make_bias(fp):
    m = make_math(fp)
    A = make_access(fp)

    @ti.func
    @vector_loops
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
            g = -A.opt_gravity(opt_f, mo, 0)
        A.set_body_cacc(body_d, o_body, 0, m.spatial(m.vec3(0), g))
        nbody = sizes[L.SIZE_NBODY]
        for b in range(1, nbody):
            cacc = A.body_cacc(body_d, o_body, A.body_parent(body_i, b))
            da = A.body_dofadr(body_i, b)
            for d in range(da, da + A.body_dofnum(body_i, b)):
                cacc += A.dof_cdof_dot(dof_d, o_dof, d) * qvel[env_index(w, d)]
            A.set_body_cacc(body_d, o_body, b, cacc)
            cinert = A.body_cinert(body_d, o_body, b)
            cvel = A.body_cvel(body_d, o_body, b)
            A.set_body_cfrc(body_d, o_body, b, m.mul_inert(cinert, cacc) + m.cross_force(cvel, m.mul_inert(cinert, cvel)))
        A.set_body_cfrc(body_d, o_body, 0, m.vec6(0))
        for i in range(nbody - 1):
            b = nbody - 1 - i
            p = A.body_parent(body_i, b)
            if p > 0:
                A.set_body_cfrc(body_d, o_body, p, A.body_cfrc(body_d, o_body, p) + A.body_cfrc(body_d, o_body, b))
        for d in range(sizes[L.SIZE_NV]):
            cfrc = A.body_cfrc(body_d, o_body, A.dof_body(dof_i, d))
            A.set_dof_qfrc_bias(dof_d, o_dof, d, A.dof_cdof(dof_d, o_dof, d).dot(cfrc))

    return types.SimpleNamespace(rne=rne)
