"""Forces that follow from the solved accelerations (MuJoCo's mj_rnePostConstraint):
body accelerations ``cacc``, external contact wrenches ``cfrc_ext`` and the wrenches each
body receives through its joint from its parent, ``cfrc_int`` (joint reaction forces).

All three are com-based spatial vectors as MuJoCo's: (torque 3, force 3) about the
subtree centre of mass of the body's root, world-oriented. They are computed on demand
from the last forward pass, since stepping does not need them.
"""


import functools
import types

from .. import layout as L
from ..constraint.rows import CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL
from ..runtime.lanes import env_index
from ..model import DSBL_GRAVITY
from ..runtime.backend import ti
from ..access import make_access
from ..runtime.ti_math import make_math



@functools.lru_cache(maxsize=None)
def make_reaction(fp):
    m = make_math(fp)
    A = make_access(fp)

    @ti.func
    def contact_wrench(w, i, c, nrow, efc_f: ti.template(), con_f: ti.template()):
        """World-oriented (torque, force) of contact c from its rows' forces (MuJoCo's
        mj_contactForce: a pyramid's edges decode to normal = sum, tangent k = mu_k
        (edge+ - edge-))."""
        local = m.vec6(0)
        if nrow == 1:
            local[0] = A.efc_force(efc_f, w, i)
        else:
            for r in range(nrow):
                local[0] += A.efc_force(efc_f, w, i + r)
            for k in range(nrow // 2):
                local[k + 1] = A.contact_friction_at(con_f, w, c, k) * (A.efc_force(efc_f, w, i + 2 * k) - A.efc_force(efc_f, w, i + 2 * k + 1))
        frc = m.vec3(0)
        trq = m.vec3(0)
        for k in ti.static(range(3)):
            axis = m.vec3(A.contact_frame_at(con_f, w, c, 3 * k), A.contact_frame_at(con_f, w, c, 3 * k + 1),
                          A.contact_frame_at(con_f, w, c, 3 * k + 2))
            frc += local[k] * axis
            trq += local[k + 3] * axis
        return m.spatial(trq, frc)

    @ti.func
    def add_wrench_at(w, b, wrench, point, sign, body_i: ti.template(), body_d: ti.template()):
        """cfrc_ext[b] += sign * wrench applied at ``point``, moved to the root's com."""
        o_body = m.env_rows(w, body_i.shape[0] // L.NBODY_I, L.NBODY_D)
        if b > 0:
            com = A.body_subtree_com(body_d, o_body, A.body_root(body_i, b))
            frc = m.lin(wrench)
            moved = m.spatial(m.ang(wrench) + (point - com).cross(frc), frc)
            A.set_body_cfrc_ext(body_d, o_body, b, A.body_cfrc_ext(body_d, o_body, b) + sign * moved)

    @ti.func
    def external(w, sizes: ti.template(), body_i: ti.template(), body_d: ti.template(), geom_i: ti.template(),
                 con_f: ti.template(), con_i: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        for b in range(sizes[L.SIZE_NBODY]):
            A.set_body_cfrc_ext(body_d, o_body, b, m.vec6(0))
        nefc = A.nefc(efc_n, w)
        i = 0
        while i < nefc:
            kind = ti.cast(A.efc_type(efc_f, w, i), ti.i32)
            nrow = 1
            if kind == CNSTR_CONTACT_PYRAMIDAL or kind == CNSTR_CONTACT_FRICTIONLESS:
                c = ti.cast(A.efc_id(efc_f, w, i), ti.i32)
                dim = A.contact_dim(con_i, w, c)
                nrow = 1 if kind == CNSTR_CONTACT_FRICTIONLESS else 2 * (dim - 1)
                wrench = contact_wrench(w, i, c, nrow, efc_f, con_f)
                point = m.vec3(A.contact_pos_at(con_f, w, c, 0), A.contact_pos_at(con_f, w, c, 1), A.contact_pos_at(con_f, w, c, 2))
                add_wrench_at(w, A.geom_body(geom_i, A.contact_geom1(con_i, w, c)), wrench, point, fp(-1.0), body_i, body_d)
                add_wrench_at(w, A.geom_body(geom_i, A.contact_geom2(con_i, w, c)), wrench, point, fp(1.0), body_i, body_d)
            i += nrow

    @ti.func
    def rne_post(w, sizes: ti.template(), body_i: ti.template(), opt_f: ti.template(), qvel: ti.template(),
                 qacc: ti.template(), body_d: ti.template(), dof_d: ti.template(), geom_i: ti.template(),
                 con_f: ti.template(), con_i: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """cacc, cfrc_ext and cfrc_int of world w from its last forward pass."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        external(w, sizes, body_i, body_d, geom_i, con_f, con_i, efc_f, efc_n)
        g = m.vec3(0)
        if (sizes[L.SIZE_DISABLE] & DSBL_GRAVITY) == 0:
            g = -A.opt_gravity(opt_f, m.param_set(w, opt_f), 0)
        A.set_body_cacc(body_d, o_body, 0, m.spatial(m.vec3(0), g))
        A.set_body_cfrc_int(body_d, o_body, 0, m.vec6(0))
        nbody = sizes[L.SIZE_NBODY]
        for b in range(1, nbody):
            cacc = A.body_cacc(body_d, o_body, A.body_parent(body_i, b))
            da = A.body_dofadr(body_i, b)
            for d in range(da, da + A.body_dofnum(body_i, b)):
                cacc += (A.dof_cdof_dot(dof_d, o_dof, d) * qvel[env_index(w, d)]
                         + A.dof_cdof(dof_d, o_dof, d) * qacc[env_index(w, d)])
            A.set_body_cacc(body_d, o_body, b, cacc)
            cinert = A.body_cinert(body_d, o_body, b)
            cvel = A.body_cvel(body_d, o_body, b)
            body = m.mul_inert(cinert, cacc) + m.cross_force(cvel, m.mul_inert(cinert, cvel))
            A.set_body_cfrc_int(body_d, o_body, b, body - A.body_cfrc_ext(body_d, o_body, b))
        for k in range(nbody - 1):
            b = nbody - 1 - k
            p = A.body_parent(body_i, b)
            child = A.body_cfrc_int(body_d, o_body, b)
            A.set_body_cfrc_int(body_d, o_body, p, A.body_cfrc_int(body_d, o_body, p) + child)

    return types.SimpleNamespace(rne_post=rne_post)
