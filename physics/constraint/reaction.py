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
from ..collision.narrowphase import CON_DIM, CON_GEOM1, CON_GEOM2, CONTACT_F
from ..constraint.rows import CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL, GEOM_BODY
from ..model import DSBL_GRAVITY
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

CINERT, CVEL, CACC = L.BODY_D["cinert"][0], L.BODY_D["cvel"][0], L.BODY_D["cacc"][0]
CFRC_EXT, CFRC_INT = L.BODY_D["cfrc_ext"][0], L.BODY_D["cfrc_int"][0]
SUBTREE_COM = L.BODY_D["subtree_com"][0]
CDOF, CDOF_DOT = L.DOF_D["cdof"][0], L.DOF_D["cdof_dot"][0]
GRAVITY = L.OPT_F["gravity"][0]
E_TYPE, E_ID, E_FORCE = L.EFC_F["type"][0], L.EFC_F["id"][0], L.EFC_F["force"][0]
C_POS, C_FRAME, C_FRICTION = CONTACT_F["pos"][0], CONTACT_F["frame"][0], CONTACT_F["friction"][0]


@functools.lru_cache(maxsize=None)
def make_reaction(fp):
    m = make_math(fp)

    @ti.func
    def contact_wrench(w, i, c, nrow, efc_f: ti.template(), con_f: ti.template()):
        """World-oriented (torque, force) of contact c from its rows' forces (MuJoCo's
        mj_contactForce: a pyramid's edges decode to normal = sum, tangent k = mu_k
        (edge+ - edge-))."""
        local = m.vec6(0)
        if nrow == 1:
            local[0] = efc_f[w, i, E_FORCE]
        else:
            for r in range(nrow):
                local[0] += efc_f[w, i + r, E_FORCE]
            for k in range(nrow // 2):
                local[k + 1] = con_f[w, c, C_FRICTION + k] * (efc_f[w, i + 2 * k, E_FORCE] - efc_f[w, i + 2 * k + 1,
                                                                                               E_FORCE])
        frc = m.vec3(0)
        trq = m.vec3(0)
        for k in ti.static(range(3)):
            axis = m.vec3(con_f[w, c, C_FRAME + 3 * k], con_f[w, c, C_FRAME + 3 * k + 1],
                          con_f[w, c, C_FRAME + 3 * k + 2])
            frc += local[k] * axis
            trq += local[k + 3] * axis
        return m.spatial(trq, frc)

    @ti.func
    def add_wrench_at(w, b, wrench, point, sign, body_i: ti.template(), body_d: ti.template()):
        """cfrc_ext[b] += sign * wrench applied at ``point``, moved to the root's com."""
        o_body = w * (body_i.shape[0] // L.NBODY_I) * L.NBODY_D
        if b > 0:
            com = m.at3(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_ROOT] * L.NBODY_D + SUBTREE_COM)
            frc = m.lin(wrench)
            moved = m.spatial(m.ang(wrench) + (point - com).cross(frc), frc)
            row = o_body + b * L.NBODY_D
            m.put(body_d, row + CFRC_EXT, m.at6(body_d, row + CFRC_EXT) + sign * moved)

    @ti.func
    def external(w, sizes: ti.template(), body_i: ti.template(), body_d: ti.template(), geom_i: ti.template(),
                 con_f: ti.template(), con_i: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        for b in range(sizes[L.SIZE_NBODY]):
            m.put(body_d, o_body + b * L.NBODY_D + CFRC_EXT, m.vec6(0))
        nefc = efc_n[w, L.EFC_N]
        i = 0
        while i < nefc:
            kind = ti.cast(efc_f[w, i, E_TYPE], ti.i32)
            nrow = 1
            if kind == CNSTR_CONTACT_PYRAMIDAL or kind == CNSTR_CONTACT_FRICTIONLESS:
                c = ti.cast(efc_f[w, i, E_ID], ti.i32)
                dim = con_i[w, c, CON_DIM]
                nrow = 1 if kind == CNSTR_CONTACT_FRICTIONLESS else 2 * (dim - 1)
                wrench = contact_wrench(w, i, c, nrow, efc_f, con_f)
                point = m.vec3(con_f[w, c, C_POS], con_f[w, c, C_POS + 1], con_f[w, c, C_POS + 2])
                add_wrench_at(w, geom_i[con_i[w, c, CON_GEOM1], GEOM_BODY], wrench, point, fp(-1.0), body_i, body_d)
                add_wrench_at(w, geom_i[con_i[w, c, CON_GEOM2], GEOM_BODY], wrench, point, fp(1.0), body_i, body_d)
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
            g = -m.ld3(opt_f, w % opt_f.shape[0], 0, GRAVITY)
        m.put(body_d, o_body + CACC, m.spatial(m.vec3(0), g))
        m.put(body_d, o_body + CFRC_INT, m.vec6(0))
        nbody = sizes[L.SIZE_NBODY]
        for b in range(1, nbody):
            cacc = m.at6(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_PARENT] * L.NBODY_D + CACC)
            da = body_i[b * L.NBODY_I + L.BODY_DOFADR]
            for d in range(da, da + body_i[b * L.NBODY_I + L.BODY_DOFNUM]):
                cacc += (m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF_DOT) * qvel[w, d]
                         + m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF) * qacc[w, d])
            m.put(body_d, o_body + b * L.NBODY_D + CACC, cacc)
            cinert = m.at10(body_d, o_body + b * L.NBODY_D + CINERT)
            cvel = m.at6(body_d, o_body + b * L.NBODY_D + CVEL)
            body = m.mul_inert(cinert, cacc) + m.cross_force(cvel, m.mul_inert(cinert, cvel))
            m.put(body_d, o_body + b * L.NBODY_D + CFRC_INT, body - m.at6(body_d, o_body + b * L.NBODY_D + CFRC_EXT))
        for k in range(nbody - 1):
            b = nbody - 1 - k
            p = body_i[b * L.NBODY_I + L.BODY_PARENT]
            prow = o_body + p * L.NBODY_D
            child = m.at6(body_d, o_body + b * L.NBODY_D + CFRC_INT)
            m.put(body_d, prow + CFRC_INT, m.at6(body_d, prow + CFRC_INT) + child)

    return types.SimpleNamespace(rne_post=rne_post)
