"""Inverse weights at the reference configuration (MuJoCo's ``*_invweight0``).

The soft-constraint model scales each constraint's regularizer by an estimate of the
constraint-space inverse inertia, A_ii = J_i M^-1 J_i^T. Like MuJoCo, the estimate is taken
once, at qpos0, per body (translation and rotation at the centre of mass), per dof and per
tendon (fixed or spatial), and combined per constraint row when the rows are made. This host-side pass
computes those weights from the compiled arrays with numpy, in float64.
"""

from __future__ import annotations

import numpy as np

from .. import model as M
from ..compiler.mass_matrix import drop_simple_coupling, factor, solve
from ..compiler.tendon_paths import spatial_tendon
from ..compiler.transforms import quat_mul, quat_rotate, quat_to_mat

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
    d = np.array(_body_dofs(m, b), dtype=int)
    if d.size:
        rot = rotational[d]
        jac[:3, d] = np.where(rot, np.cross(axes[d], xipos - anchors[d]).T, axes[d].T)
        jac[3:, d] = np.where(rot, axes[d].T, 0.0)
    return jac


def _mass_matrix(m: M.Model, xpos, xquat, axes, anchors, rotational):
    """(M at qpos0 (nv, nv) with simple bodies' couplings left out as MuJoCo's, body com
    Jacobians {body: (6, nv)})."""
    mass_matrix = np.diag(np.asarray(m.dof_armature, dtype=float)).copy()
    jacobians = {}
    for b in range(1, m.nbody):
        rot = quat_to_mat(xquat[b])
        jac = _com_jacobian(m, b, xpos[b] + rot @ m.body_ipos[b], axes, anchors, rotational)
        jacobians[b] = jac
        irot = rot @ quat_to_mat(m.body_iquat[b])
        inertia = irot @ np.diag(m.body_inertia[b]) @ irot.T
        d = np.array(_body_dofs(m, b), dtype=int)  # the block the body adds to (a chain's grows with depth)
        sub = jac[:, d]
        mass_matrix[np.ix_(d, d)] += m.body_mass[b] * sub[:3].T @ sub[:3] + sub[3:].T @ inertia @ sub[3:]
    return drop_simple_coupling(mass_matrix, m, m.body_simple), jacobians


def _body_weights(m: M.Model, jacobians, lower, d) -> np.ndarray:
    """(nbody, 2): mean diagonal of the translational and rotational blocks of
    J M^-1 J^T at each body's com; 1/mass for simple sliding bodies; 0 for static ones."""
    out = np.zeros((m.nbody, 2))
    moving = [b for b in range(1, m.nbody) if m.body_dofnum[m.body_weldid[b]] > 0]
    general = [b for b in moving if m.body_simple[b] != 2]
    for b in moving:
        if m.body_simple[b] == 2:
            out[b] = 1 / max(_MINVAL, m.body_mass[b]), 0.0
    if general:
        x = solve(lower, d, np.concatenate([jacobians[b].T for b in general], axis=1))
        for k, b in enumerate(general):
            a = jacobians[b] @ x[:, 6 * k : 6 * k + 6]
            out[b] = np.trace(a[:3, :3]) / 3, np.trace(a[3:, 3:]) / 3
    return out


def _dof_weights(m: M.Model, lower, d) -> np.ndarray:
    """(nv,): per joint, the mean diagonal of its block of M^-1 (a free joint's
    translational and rotational blocks apart); 1/mass for simple sliding bodies."""
    out = np.zeros(m.nv)
    minv = solve(lower, d, np.eye(m.nv))
    for j in range(m.njnt):
        a, n, b = m.jnt_dofadr[j], M.JNT_NV[int(m.jnt_type[j])], m.jnt_bodyid[j]
        block = minv[a : a + n, a : a + n]
        if m.body_simple[b] == 2:
            out[a] = 1 / max(_MINVAL, m.body_mass[b])
        elif n == 6:
            out[a : a + 3] = np.trace(block[:3, :3]) / 3
            out[a + 3 : a + 6] = np.trace(block[3:, 3:]) / 3
        else:
            out[a : a + n] = np.trace(block) / n
    return out


def _tendons_at(m: M.Model, xpos, xquat, axes, anchors, rotational):
    """(lengths (ntendon,), Jacobians (nv, ntendon)) of the tendons at qpos0."""
    lengths, jac = np.zeros(m.ntendon), np.zeros((m.nv, m.ntendon))
    rot = [quat_to_mat(q) for q in xquat]
    site_xpos = np.array([xpos[b] + rot[b] @ p for b, p in zip(m.site_bodyid, m.site_pos)]).reshape(-1, 3)

    def geom_frame(g):
        b = m.geom_bodyid[g]
        return xpos[b] + rot[b] @ m.geom_pos[g], rot[b] @ quat_to_mat(m.geom_quat[g])

    def point_jacobian(b, point):
        out = np.zeros((3, m.nv))
        dofs = np.array(_body_dofs(m, b), dtype=int)
        if dofs.size:
            out[:, dofs] = np.where(rotational[dofs], np.cross(axes[dofs], point - anchors[dofs]).T, axes[dofs].T)
        return out

    for t in range(m.ntendon):
        adr, num = m.tendon_adr[t], m.tendon_num[t]
        if m.wrap_type[adr] == M.WRAP_JOINT:
            for k in range(adr, adr + num):
                jac[m.jnt_dofadr[m.wrap_objid[k]], t] += m.wrap_prm[k]
                lengths[t] += m.wrap_prm[k] * m.qpos0[m.jnt_qposadr[m.wrap_objid[k]]]
        else:
            lengths[t], jac[:, t] = spatial_tendon(m, t, site_xpos, geom_frame, point_jacobian)
    return lengths, jac


def tendon_lengths0(m: M.Model) -> np.ndarray:
    """(ntendon,): the tendons' lengths at qpos0 (MuJoCo's tendon_length0)."""
    xpos, xquat = _reference_frames(m)
    return _tendons_at(m, xpos, xquat, *_motion_axes(m, xpos, xquat))[0]


def _tendon_weights(m: M.Model, jac, lower, d) -> np.ndarray:
    """(ntendon,): J M^-1 J^T of each tendon, J (nv, ntendon) at qpos0."""
    return np.einsum("it,it->t", jac, solve(lower, d, jac)) if m.ntendon else np.zeros(0)


def actuator_dampratios(m: M.Model) -> np.ndarray:
    """actuator_biasprm with MuJoCo's dampratio resolved: a position-like actuator (gain
    kp = -biasprm[1]) whose biasprm[2] is positive holds a damping ratio there, and gets the
    damping 2 ratio sqrt(kp mass) as -biasprm[2], mass the inertia its transmission
    moves at qpos0, 1 / (moment M^-1 moment), as MuJoCo 4's mj_setConst (a free base's
    motion included: a leg's servo on a floating robot sees less than its joint's M_jj)."""
    biasprm = np.array(m.actuator_biasprm, dtype=float)
    ratio = [i for i in range(len(biasprm)) if biasprm[i, 2] > 0 and m.actuator_gainprm[i, 0] == -biasprm[i, 1]]
    if not ratio or m.nv == 0:
        return biasprm
    xpos, xquat = _reference_frames(m)
    axes, anchors, rotational = _motion_axes(m, xpos, xquat)
    lower, d = factor(_mass_matrix(m, xpos, xquat, axes, anchors, rotational)[0])
    tendon_jac = _tendons_at(m, xpos, xquat, axes, anchors, rotational)[1] if m.ntendon else None
    for i in ratio:
        moment = np.zeros(m.nv)
        if m.actuator_trntype[i] == M.TRN_JOINT:
            moment[m.jnt_dofadr[m.actuator_trnid[i]]] = m.actuator_gear[i, 0]
        else:
            moment = m.actuator_gear[i, 0] * tendon_jac[:, m.actuator_trnid[i]]
        inverse = float(moment @ solve(lower, d, moment[:, None])[:, 0])  # moment M^-1 moment
        mass = 1 / inverse if inverse > _MINVAL else 0.0
        biasprm[i, 2] = -biasprm[i, 2] * 2 * np.sqrt(m.actuator_gainprm[i, 0] * mass)
    return biasprm


def invweight0(m: M.Model):
    """(body_invweight0 (nbody, 2), dof_invweight0 (nv,), tendon_invweight0 (ntendon,),
    meaninertia: the mean diagonal of M at qpos0, MuJoCo's scale for solver tolerances).
    M^-1 is applied through MuJoCo's factorization (physics/compiler/mass_matrix.py), so a
    singular M (two joints on one axis) gives MuJoCo's large but finite weights."""
    if m.nv == 0:
        return np.zeros((m.nbody, 2)), np.zeros(0), np.zeros(m.ntendon), 1.0
    xpos, xquat = _reference_frames(m)
    axes, anchors, rotational = _motion_axes(m, xpos, xquat)
    mass_matrix, jacobians = _mass_matrix(m, xpos, xquat, axes, anchors, rotational)
    lower, d = factor(mass_matrix)
    tendon_jac = _tendons_at(m, xpos, xquat, axes, anchors, rotational)[1]
    return (_body_weights(m, jacobians, lower, d), _dof_weights(m, lower, d), _tendon_weights(m, tendon_jac, lower, d),
            max(float(np.trace(mass_matrix)) / m.nv, _MINVAL))
