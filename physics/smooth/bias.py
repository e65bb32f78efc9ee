"""Bias forces by recursive Newton-Euler: gravity, Coriolis, centrifugal and gyroscopic
terms, C(q, qdot) = M(q) * 0 + c (MuJoCo's mj_rne with zero acceleration)."""


import functools
import types

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import DSBL_GRAVITY
from ..runtime.backend import ti
from ..runtime.taichi_adapter import vector_loops
from .tree import make_tree
from ..access import make_access
from ..runtime.ti_math import make_math



@functools.lru_cache(maxsize=None)
def make_bias(fp):
    m = make_math(fp)
    A = make_access(fp)
    tree = make_tree(fp)

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
        world_acceleration(w, o_body, sizes, opt_f, body_d)
        nbody = sizes[L.SIZE_NBODY]
        for b in range(1, nbody):
            body_acceleration(w, b, o_dof, o_body, body_i, qvel, body_d, dof_d)
        A.set_body_cfrc(body_d, o_body, 0, m.vec6(0))
        for i in range(nbody - 1):
            b = nbody - 1 - i
            p = A.body_parent(body_i, b)
            if p > 0:
                A.set_body_cfrc(body_d, o_body, p, A.body_cfrc(body_d, o_body, p) + A.body_cfrc(body_d, o_body, b))
        for d in range(sizes[L.SIZE_NV]):
            dof_bias(d, o_dof, o_body, dof_i, body_d, dof_d)

    @ti.func
    def world_acceleration(w, o_body, sizes: ti.template(), opt_f: ti.template(), body_d: ti.template()):
        # the world accelerates upwards at -gravity, which applies gravity to every body
        g = m.vec3(0)
        if (sizes[L.SIZE_DISABLE] & DSBL_GRAVITY) == 0:
            g = -A.opt_gravity(opt_f, m.param_set(w, opt_f), 0)
        A.set_body_cacc(body_d, o_body, 0, m.spatial(m.vec3(0), g))

    @ti.func
    @vector_loops  # the loops of the sweep it is part of
    def body_acceleration(w, b, o_dof, o_body, body_i: ti.template(), qvel: ti.template(), body_d: ti.template(),
                          dof_d: ti.template()):
        """Body b's cacc (b > 0) from its parent's, and the force its own motion takes."""
        cacc = A.body_cacc(body_d, o_body, A.body_parent(body_i, b))
        da = A.body_dofadr(body_i, b)
        for d in range(da, da + A.body_dofnum(body_i, b)):
            cacc += A.dof_cdof_dot(dof_d, o_dof, d) * qvel[env_index(w, d)]
        A.set_body_cacc(body_d, o_body, b, cacc)
        cinert = A.body_cinert(body_d, o_body, b)
        cvel = A.body_cvel(body_d, o_body, b)
        A.set_body_cfrc(body_d, o_body, b, m.mul_inert(cinert, cacc) + m.cross_force(cvel, m.mul_inert(cinert, cvel)))

    @ti.func
    def dof_bias(d, o_dof, o_body, dof_i: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        cfrc = A.body_cfrc(body_d, o_body, A.dof_body(dof_i, d))
        A.set_dof_qfrc_bias(dof_d, o_dof, d, A.dof_cdof(dof_d, o_dof, d).dot(cfrc))

    # rne's three parts for passes by level, each one body's or dof's work: from the root
    # outwards each body's acceleration and force (the world's: gravity, no force); from
    # the leaves inwards each body adding its children's forces in descending body order,
    # as rne adds them to a parent; then each dof's bias force
    @ti.func
    def tree_acceleration(w, b, sizes: ti.template(), body_i: ti.template(), opt_f: ti.template(),
                          qvel: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        if b == 0:
            world_acceleration(w, o_body, sizes, opt_f, body_d)
            A.set_body_cfrc(body_d, o_body, 0, m.vec6(0))
        else:
            body_acceleration(w, b, m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D), o_body, body_i, qvel, body_d,
                              dof_d)

    @ti.func
    def force_gather(w, b, sizes: ti.template(), body_i: ti.template(), body_d: ti.template()):
        if b > 0:  # the world's force stays zero
            o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
            A.set_body_cfrc(body_d, o_body, b, tree.child_sum(b, o_body, body_i, body_d, "body_cfrc"))

    @ti.func
    def dof_bias_of(w, d, sizes: ti.template(), dof_i: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        dof_bias(d, m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D),
                 m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D), dof_i, body_d, dof_d)

    return types.SimpleNamespace(rne=rne, tree_acceleration=tree_acceleration, force_gather=force_gather,
                                 dof_bias_of=dof_bias_of)
