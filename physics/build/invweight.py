"""Inverse weights at the reference configuration (MuJoCo's ``*_invweight0``).

The soft-constraint model scales each constraint's regularizer by an estimate of the
constraint-space inverse inertia, A_ii = J_i M^-1 J_i^T. Like MuJoCo, the estimate is taken
once, at qpos0, per body (translation and rotation at the centre of mass), per dof and per
tendon, and combined per constraint row when the rows are made. This host-side pass
computes those weights from the compiled arrays with numpy, in float64.
"""

from __future__ import annotations

import numpy as np

from .. import model as M
from ..build.transforms import quat_mul, quat_rotate, quat_to_mat

_MINVAL = 1e-15


def _reference_frames(m: M.Model):
    """World position and orientation of every body at qpos0 (joints at their
    reference, so each body sits at its parent-relative frame; a free body at its qpos0)."""
    xpos = np.zeros((m.nbody, 3))
    xquat = np.tile([1.0, 0.0, 0.0, 0.0], (m.nbody, 1))
    for b in range(1, m.nbody):
        p = m.body_parentid[b]
        xpos[b] = xpos[p] + quat_rotate(xquat[p], m.body_pos[b])
        xquat[b] = quat_mul(xquat[p], m.body_quat[b])
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]) if m.body_jntnum[b] else ():
            if m.jnt_type[j] == M.JNT_FREE:
                a = m.jnt_qposadr[j]
                xpos[b] = m.qpos0[a : a + 3]
                xquat[b] = m.qpos0[a + 3 : a + 7] / np.linalg.norm(m.qpos0[a + 3 : a + 7])
    return xpos, xquat


def _motion_axes(m: M.Model, xpos, xquat):
    """Per dof: (angular axis, anchor, rotational?) in world coordinates at qpos0."""
    axes = np.zeros((m.nv, 3))
    anchors = np.zeros((m.nv, 3))
    rotational = np.zeros(m.nv, bool)
    for j in range(m.njnt):
        b, d, t = m.jnt_bodyid[j], m.jnt_dofadr[j], m.jnt_type[j]
        rot = quat_to_mat(xquat[b])
        anchor = xpos[b] + rot @ m.jnt_pos[j]
        if t == M.JNT_FREE:
            axes[d : d + 3] = np.eye(3)
            axes[d + 3 : d + 6] = rot.T  # rows: the body's axes (free-joint angular velocity is local)
            anchors[d : d + 6] = anchor
            rotational[d + 3 : d + 6] = True
        elif t == M.JNT_BALL:
            axes[d : d + 3] = rot.T
            anchors[d : d + 3] = anchor
            rotational[d : d + 3] = True
        else:
            axes[d] = rot @ m.jnt_axis[j]
            anchors[d] = anchor
            rotational[d] = t == M.JNT_HINGE
    return axes, anchors, rotational


def _body_dofs(m: M.Model, b: int) -> list[int]:
    """The dofs that move body b: its own and its ancestors'."""
    dofs = []
    while b > 0:
        if m.body_dofnum[b]:
            dofs.extend(range(m.body_dofadr[b], m.body_dofadr[b] + m.body_dofnum[b]))
        b = m.body_parentid[b]
    return dofs


def _com_jacobian(m, b, xipos, axes, anchors, rotational):
    """(6, nv): translation then rotation of body b's centre of mass per unit dof velocity."""
    jac = np.zeros((6, m.nv))
    for d in _body_dofs(m, b):
        if rotational[d]:
            jac[:3, d] = np.cross(axes[d], xipos - anchors[d])
            jac[3:, d] = axes[d]
        else:
            jac[:3, d] = axes[d]
    return jac


def sliding_bodies(m: M.Model) -> np.ndarray:
    """Bodies MuJoCo treats as translating point masses ("simple" level 2): a leaf body
    with its inertia frame at its origin, attached to the world (directly or through a
    static parent), moved only by axis-aligned slide joints through its origin."""
    out = np.zeros(m.nbody, bool)
    has_child = np.zeros(m.nbody, bool)
    has_child[m.body_parentid[1:]] = True
    for b in range(1, m.nbody):
        p = m.body_parentid[b]
        attached = p == 0 or (m.body_parentid[p] == 0 and m.body_dofnum[p] == 0)
        sameframe = not np.any(m.body_ipos[b]) and np.array_equal(m.body_iquat[b], [1.0, 0.0, 0.0, 0.0])
        joints = range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]) if m.body_jntnum[b] else ()
        sliders = all(m.jnt_type[j] == M.JNT_SLIDE and not np.any(m.jnt_pos[j])
                      and np.count_nonzero(np.abs(m.jnt_axis[j]) > 1e-12) == 1 for j in joints)
        out[b] = attached and sameframe and not has_child[b] and m.body_dofnum[b] > 0 and sliders
    return out


def invweight0(m: M.Model):
    """(body_invweight0 (nbody, 2), dof_invweight0 (nv,), tendon_invweight0 (ntendon,),
    meaninertia: the mean diagonal of M at qpos0, MuJoCo's scale for solver tolerances)."""
    body_w = np.zeros((m.nbody, 2))
    dof_w = np.zeros(m.nv)
    ten_w = np.zeros(m.ntendon)
    if m.nv == 0:
        return body_w, dof_w, ten_w, 1.0
    xpos, xquat = _reference_frames(m)
    axes, anchors, rotational = _motion_axes(m, xpos, xquat)
    mass_matrix = np.diag(np.asarray(m.dof_armature, dtype=float)).copy()
    jacobians = {}
    for b in range(1, m.nbody):
        rot = quat_to_mat(xquat[b])
        xipos = xpos[b] + rot @ m.body_ipos[b]
        jac = _com_jacobian(m, b, xipos, axes, anchors, rotational)
        jacobians[b] = jac
        irot = rot @ quat_to_mat(m.body_iquat[b])
        inertia = irot @ np.diag(m.body_inertia[b]) @ irot.T
        mass_matrix += m.body_mass[b] * jac[:3].T @ jac[:3] + jac[3:].T @ inertia @ jac[3:]
    minv = np.linalg.inv(mass_matrix)
    sliding = sliding_bodies(m)
    for b in range(1, m.nbody):
        if m.body_dofnum[m.body_weldid[b]] == 0:
            continue  # static: bodies welded to the world do not move
        if sliding[b]:
            body_w[b] = 1 / max(_MINVAL, m.body_mass[b]), 0.0
            continue
        a = jacobians[b] @ minv @ jacobians[b].T
        body_w[b] = np.trace(a[:3, :3]) / 3, np.trace(a[3:, 3:]) / 3
    for j in range(m.njnt):
        d, n = m.jnt_dofadr[j], M.JNT_NV[int(m.jnt_type[j])]
        block = minv[d : d + n, d : d + n]
        if sliding[m.jnt_bodyid[j]]:
            dof_w[d] = 1 / max(_MINVAL, m.body_mass[m.jnt_bodyid[j]])
        elif n == 6:
            dof_w[d : d + 3] = np.trace(block[:3, :3]) / 3
            dof_w[d + 3 : d + 6] = np.trace(block[3:, 3:]) / 3
        else:
            dof_w[d : d + n] = np.trace(block) / n
    for t in range(m.ntendon):
        jac = np.zeros(m.nv)
        for k in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
            jac[m.jnt_dofadr[m.wrap_objid[k]]] += m.wrap_prm[k]
        ten_w[t] = jac @ minv @ jac
    return body_w, dof_w, ten_w, max(float(np.trace(mass_matrix)) / m.nv, _MINVAL)
