"""Tendon lengths, Jacobians and velocities (MuJoCo's mj_tendon, and ten_velocity of
mj_fwdVelocity), a tendon per call.

A fixed tendon's length is a sum of joint coordinates times coefficients, its Jacobian
those coefficients. A spatial tendon runs through sites, wraps around spheres and
cylinders (physics/smooth/tendon_wrap.py) and over pulleys, each pulley dividing the
lengths of the branch after it; its Jacobian sums, over the straight segments whose ends
lie on different bodies, the segment's direction times the difference of its ends' point
Jacobians (an arc over a geom lies on one body and adds none, as MuJoCo's). The Jacobian
lands in the tendon's row of ten_d after its length and velocity (TEN_D's tail, nv
entries: MuJoCo's ten_J, dense), which every consumer reads: the passive springs and
dampers, tendon actuators, and the limit, friction-loss and equality rows.
"""

import functools
import types

from .. import layout as L
from ..access import make_access
from ..model import TRN_TENDON, WRAP_CYLINDER, WRAP_PULLEY, WRAP_SPHERE
from ..runtime.backend import ti
from ..runtime.lanes import env_index
from ..runtime.ti_math import make_math
from .tendon_wrap import make_tendon_wrap


@functools.lru_cache(maxsize=None)
def make_tendons(fp):
    m = make_math(fp)
    A = make_access(fp)
    wr = make_tendon_wrap(fp)

    @ti.func
    def tendon_state(w, t, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), ten_i: ti.template(),
                     wrap_i: ti.template(), wrap_f: ti.template(), qpos: ti.template(), qvel: ti.template(),
                     body_d: ti.template(), dof_d: ti.template(), ten_d: ti.template()):
        """Tendon t's length, its Jacobian (row t of ten_d) and its velocity J qvel."""
        nv = sizes[L.SIZE_NV]
        for d in range(nv):
            A.set_ten_J_at(ten_d, w, t, d, 0)
        length = fp(0.0)
        if A.tendon_spatial(ten_i, t) != 0:
            length = spatial_path(w, t, sizes, body_i, ten_i, wrap_i, wrap_f, body_d, dof_d, ten_d)
        else:
            length = joint_terms(w, t, jnt_i, ten_i, wrap_i, wrap_f, qpos, ten_d)
        vel = fp(0.0)
        for d in range(nv):
            vel += A.ten_J_at(ten_d, w, t, d) * qvel[env_index(w, d)]
        A.set_ten_length(ten_d, w, t, length)
        A.set_ten_velocity(ten_d, w, t, vel)

    @ti.func
    def joint_terms(w, t, jnt_i: ti.template(), ten_i: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(),
                    qpos: ti.template(), ten_d: ti.template()):
        """A fixed tendon's length; its coefficients into its Jacobian row."""
        mw = m.param_set(w, wrap_f)
        length = fp(0.0)
        for k in range(A.tendon_adr(ten_i, t), A.tendon_adr(ten_i, t) + A.tendon_num(ten_i, t)):
            j = A.wrap_objid(wrap_i, k)
            coef = A.wrap_prm(wrap_f, mw, k)
            length += coef * qpos[env_index(w, A.jnt_qposadr(jnt_i, j))]
            d = A.jnt_dofadr(jnt_i, j)
            A.set_ten_J_at(ten_d, w, t, d, A.ten_J_at(ten_d, w, t, d) + coef)
        return length

    @ti.func
    def on_body(b, local, o_body, body_d: ti.template()):
        """The world position of a point fixed at ``local`` in body b."""
        return A.body_xpos(body_d, o_body, b) + A.body_xmat(body_d, o_body, b) @ local

    @ti.func
    def spatial_path(w, t, sizes: ti.template(), body_i: ti.template(), ten_i: ti.template(), wrap_i: ti.template(),
                     wrap_f: ti.template(), body_d: ti.template(), dof_d: ti.template(), ten_d: ti.template()):
        """A spatial tendon's length; its Jacobian into its row: branch by branch, a site
        to the next, around a geom between two sites where the straight line would cross it."""
        mw = m.param_set(w, wrap_f)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        adr = A.tendon_adr(ten_i, t)
        num = A.tendon_num(ten_i, t)
        length = fp(0.0)
        divisor = fp(1.0)
        j = 0
        while j < num - 1:
            k0 = adr + j
            type0, type1 = A.wrap_type(wrap_i, k0), A.wrap_type(wrap_i, k0 + 1)
            if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                if type0 == WRAP_PULLEY:
                    divisor = A.wrap_prm(wrap_f, mw, k0)
                j += 1
            else:
                geom = type1 == WRAP_SPHERE or type1 == WRAP_CYLINDER
                k1 = k0 + 1
                if geom:
                    k1 = k0 + 2
                b0, b1 = A.wrap_body(wrap_i, k0), A.wrap_body(wrap_i, k1)
                x0 = on_body(b0, A.wrap_pos(wrap_f, mw, k0), o_body, body_d)
                x1 = on_body(b1, A.wrap_pos(wrap_f, mw, k1), o_body, body_d)
                wraps, arc, w0, w1 = False, fp(0.0), m.vec3(0.0), m.vec3(0.0)
                bg = -1
                if geom:
                    bg = A.wrap_body(wrap_i, k0 + 1)
                    wraps, arc, w0, w1 = around_geom(k0 + 1, x0, x1, mw, o_body, wrap_i, wrap_f, body_d)
                scale = 1 / divisor
                if wraps:
                    length += ((w0 - x0).norm() + arc + (x1 - w1).norm()) * scale
                    segment(w, t, x0, b0, w0, bg, scale, sizes, body_i, body_d, dof_d, ten_d)
                    segment(w, t, w1, bg, x1, b1, scale, sizes, body_i, body_d, dof_d, ten_d)
                else:
                    length += (x1 - x0).norm() * scale
                    segment(w, t, x0, b0, x1, b1, scale, sizes, body_i, body_d, dof_d, ten_d)
                j += 1
                if geom:
                    j += 1
        return length

    @ti.func
    def around_geom(k, x0, x1, mw, o_body, wrap_i: ti.template(), wrap_f: ti.template(), body_d: ti.template()):
        """(wraps, arc length, tangent points) of the path x0 -> x1 around wrap k's geom."""
        b = A.wrap_body(wrap_i, k)
        xmat = A.body_xmat(body_d, o_body, b)
        gpos = A.body_xpos(body_d, o_body, b) + xmat @ A.wrap_pos(wrap_f, mw, k)
        gmat = xmat @ m.quat_to_mat(A.wrap_quat(wrap_f, mw, k))
        side_body = A.wrap_sidebody(wrap_i, k)
        side = m.vec3(0.0)
        if side_body >= 0:
            side = on_body(side_body, A.wrap_sidepos(wrap_f, mw, k), o_body, body_d)
        return wr.wrap(x0, x1, gpos, gmat, A.wrap_radius(wrap_f, mw, k), A.wrap_type(wrap_i, k) == WRAP_CYLINDER,
                       side, side_body >= 0)

    @ti.func
    def segment(w, t, xa, ba, xb, bb, scale, sizes: ti.template(), body_i: ti.template(), body_d: ti.template(),
                dof_d: ti.template(), ten_d: ti.template()):
        """Row t += scale * d|xb - xa|/d qvel for a straight segment from xa on body ba to
        xb on body bb: nothing when both ends are on one body."""
        if ba != bb:
            direction = wr.unit3(xb - xa) * scale
            point_jacobian_add(w, t, bb, xb, direction, sizes, body_i, body_d, dof_d, ten_d)
            point_jacobian_add(w, t, ba, xa, -direction, sizes, body_i, body_d, dof_d, ten_d)

    @ti.func
    def point_jacobian_add(w, t, b, point, v, sizes: ti.template(), body_i: ti.template(), body_d: ti.template(),
                           dof_d: ti.template(), ten_d: ti.template()):
        """Row t += v . d(velocity of ``point`` fixed to body b)/d qvel."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        offset = point - A.body_subtree_com(body_d, o_body, A.body_root(body_i, b))
        while b > 0:
            adr = A.body_dofadr(body_i, b)
            for d in range(adr, adr + A.body_dofnum(body_i, b)):
                cdof = A.dof_cdof(dof_d, o_dof, d)
                moved = v.dot(m.lin(cdof) + m.ang(cdof).cross(offset))
                A.set_ten_J_at(ten_d, w, t, d, A.ten_J_at(ten_d, w, t, d) + moved)
            b = A.body_parent(body_i, b)

    @ti.func
    def tendon_actuation(w, sizes: ti.template(), act_i: ti.template(), act_f: ti.template(), act_d: ti.template(),
                         ten_d: ti.template(), dof_d: ti.template()):
        """qfrc_actuator += gear * force * J of each actuator on a tendon (its force as
        physics/smooth/actuation.py computed it)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        ma = m.param_set(w, act_f)
        for u in range(sizes[L.SIZE_NU]):
            if A.actuator_trntype(act_i, u) == TRN_TENDON:
                f = A.actuator_gear(act_f, ma, u) * A.actuator_force(act_d, w, u)
                t = A.actuator_trnid(act_i, u)
                for d in range(sizes[L.SIZE_NV]):
                    A.set_dof_qfrc_actuator(dof_d, o_dof, d, A.dof_qfrc_actuator(dof_d, o_dof, d)
                                                                 + A.ten_J_at(ten_d, w, t, d) * f)

    return types.SimpleNamespace(tendon_state=tendon_state, tendon_actuation=tendon_actuation)
