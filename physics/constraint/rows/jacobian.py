"""Jacobians that rows of several kinds share, written into efc_J (nv columns per row).

relative_jacobian: a frame's components of the velocity of a point on one body relative
to a point on another, then of their relative angular velocity (MuJoCo's mj_jacDifPair);
contacts and connect/weld equalities use it. point_jacdot_qvel: dJ/dt qvel of a point
fixed to a body (MuJoCo's mj_jacDot times qvel), the weld's and connect's Jdot qvel.
tendon_jacobian_add: d(length)/d(qvel) of a tendon, for tendon friction, limits and equalities.
All spatial vectors are com-based (angular 3, linear 3) about the root's subtree_com.
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...model import JNT_BALL, JNT_FREE
from ...runtime.backend import ti
from ...access import make_access
from ...runtime.ti_math import make_math


@functools.lru_cache(maxsize=None)
def make_row_jacobian(fp):
    m = make_math(fp)
    A = make_access(fp)

    @ti.func
    def relative_jacobian(w, n, nrow, nv, b1, p1, b2, p2, frame, body_i: ti.template(), body_d: ti.template(),
                          dof_d: ti.template(), efc_J: ti.template()):
        """Rows n .. n+nrow-1 <- the frame's components of d(velocity of point p1 on body
        b1 relative to p2 on b2)/d qvel, then of the bodies' relative angular velocity
        (MuJoCo's mj_jacDifPair seen in the frame). One walk per body's chain serves every
        row."""
        o_dof = m.env_rows(w, ti.max(nv, 1), L.NDOF_D)
        o_body = m.env_rows(w, body_i.shape[0] // L.NBODY_I, L.NBODY_D)
        for k in range(nrow):
            for d in range(nv):
                efc_J[env_index(w, n + k, d)] = 0
        for side in ti.static(range(2)):
            b = b1 if side == 0 else b2
            sign = fp(1.0) if side == 0 else fp(-1.0)
            com = A.body_subtree_com(body_d, o_body, A.body_root(body_i, b))
            offset = (p1 if side == 0 else p2) - com
            while b > 0:
                adr = A.body_dofadr(body_i, b)
                for d in range(adr, adr + A.body_dofnum(body_i, b)):
                    cdof = A.dof_cdof(dof_d, o_dof, d)
                    ang = m.vec3(cdof[0], cdof[1], cdof[2])
                    lin = frame @ (m.vec3(cdof[3], cdof[4], cdof[5]) + ang.cross(offset))
                    for k in ti.static(range(3)):
                        if k < nrow:
                            efc_J[env_index(w, n + k, d)] = efc_J[env_index(w, n + k, d)] + sign * lin[k]
                    if nrow > 3:
                        rot = frame @ ang
                        for k in ti.static(range(3)):
                            if k + 3 < nrow:
                                efc_J[env_index(w, n + 3 + k, d)] = efc_J[env_index(w, n + 3 + k, d)] + sign * rot[k]
                b = A.body_parent(body_i, b)

    @ti.func
    def point_jacdot_qvel(w, b, point, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(),
                          dof_i: ti.template(), qvel: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        """(dJ_rot/dt qvel, dJ_pos/dt qvel) of a point fixed to body b, as a spatial vector
        (MuJoCo's mj_jacDot times qvel)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        com = A.body_subtree_com(body_d, o_body, A.body_root(body_i, b))
        offset = point - com
        cvel = A.body_cvel(body_d, o_body, b)
        pvel = m.lin(cvel) + m.ang(cvel).cross(offset)
        lin = m.vec3(0)
        ang = m.vec3(0)
        while b > 0:
            adr = A.body_dofadr(body_i, b)
            for d in range(adr, adr + A.body_dofnum(body_i, b)):
                cdof = A.dof_cdof(dof_d, o_dof, d)
                cdof_dot = A.dof_cdof_dot(dof_d, o_dof, d)
                j = A.dof_jnt(dof_i, d)
                jtype = A.jnt_type(jnt_i, j)
                if jtype == JNT_BALL or (jtype == JNT_FREE and d >= A.jnt_dofadr(jnt_i, j) + 3):
                    cdof_dot = m.cross_motion(A.body_cvel(body_d, o_body, b), cdof)
                v = qvel[env_index(w, d)]
                ang += m.ang(cdof_dot) * v
                lin += (m.lin(cdof_dot) + m.ang(cdof_dot).cross(offset) + m.ang(cdof).cross(pvel)) * v
            b = A.body_parent(body_i, b)
        return m.spatial(ang, lin)

    @ti.func
    def quat_deriv(q, omega):
        """0.5 q (0, omega), MuJoCo's mju_derivQuat, which the weld's Jdot qvel applies to
        the bodies' world-frame angular velocities."""
        return fp(0.5) * m.vec4(-omega[0] * q[1] - omega[1] * q[2] - omega[2] * q[3],
                                omega[0] * q[0] + omega[1] * q[3] - omega[2] * q[2],
                                -omega[0] * q[3] + omega[1] * q[0] + omega[2] * q[1],
                                omega[0] * q[2] - omega[1] * q[1] + omega[2] * q[0])

    @ti.func
    def tendon_jacobian_add(w, row, t, sign, sizes: ti.template(), ten_d: ti.template(), efc_J: ti.template()):
        """efc_J[row] += sign * d(length of tendon t)/d(qvel), its Jacobian's row in ten_d."""
        for d in range(sizes[L.SIZE_NV]):
            efc_J[env_index(w, row, d)] = efc_J[env_index(w, row, d)] + sign * A.ten_J_at(ten_d, w, t, d)

    return types.SimpleNamespace(relative_jacobian=relative_jacobian, point_jacdot_qvel=point_jacdot_qvel,
                                 quat_deriv=quat_deriv, tendon_jacobian_add=tendon_jacobian_add)
