"""Newton's articulation view: body poses <-> joint coordinates. Here eval_ik, on the host;
eval_fk runs a World's kinematics (physics/fk.py).

``body_q`` is (n, nbody, 7): world position and (w, x, y, z) quaternion of each body
frame; ``joint_q`` is MuJoCo's qpos. The child pose is x_wc = x_wp * x_pj * x_j * x_cj^-1:
here x_pj is the body's offset in its parent (body_pos, body_quat) followed by the joint
anchor, x_j the joint motion, and x_cj the anchor in the child frame.
"""

from __future__ import annotations

import numpy as np

from ..model import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE, Model
from ..compiler.transforms import axis_angle_to_quat, quat_conj, quat_mul, quat_normalize, quat_to_mat


def eval_ik(model: Model, body_q, *, iterations: int = 50, tol: float = 1e-13) -> np.ndarray:
    """Joint coordinates (n, nq) that reproduce body poses (n, nbody, 7).

    One hinge or slide per body is recovered in closed form; the revolute angle is the
    atan2 relative angle about the joint axis, on the branch (-pi, pi] around the
    joint's reference. Bodies with several joints (D6 compositions) are solved by
    Gauss-Newton from the reference configuration; ball and free joints read their
    quaternion and position directly.
    """
    body_q = np.asarray(body_q, dtype=float)
    if body_q.ndim == 2:
        body_q = body_q[None]
    if body_q.shape[1:] != (model.nbody, 7):
        raise ValueError(f"body_q must have shape (n, {model.nbody}, 7), got {body_q.shape}")
    out = np.tile(model.qpos0, (body_q.shape[0], 1))
    for n in range(body_q.shape[0]):
        for b in range(1, model.nbody):
            if model.body_jntnum[b]:
                _body_ik(model, b, body_q[n], out[n], iterations, tol)
    return out


def _body_ik(m: Model, b: int, poses, q, iterations, tol) -> None:
    joints = range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])
    target_pos, target_quat = poses[b, :3], quat_normalize(poses[b, 3:])
    if m.jnt_type[joints[0]] == JNT_FREE:
        a = m.jnt_qposadr[joints[0]]
        q[a : a + 3] = target_pos
        q[a + 3 : a + 7] = target_quat
        return
    p = m.body_parentid[b]
    frame_pos = poses[p, :3] + quat_to_mat(poses[p, 3:]) @ m.body_pos[b]
    frame_quat = quat_mul(poses[p, 3:], m.body_quat[b])
    if len(joints) == 1:
        j = joints[0]
        a = m.jnt_qposadr[j]
        rel = quat_mul(quat_conj(frame_quat), target_quat)  # x_j in the body frame
        if m.jnt_type[j] == JNT_BALL:
            q[a : a + 4] = rel if rel[0] >= 0 else -rel
        elif m.jnt_type[j] == JNT_HINGE:
            q[a] = m.qpos0[a] + _relative_angle(rel, m.jnt_axis[j])
        else:
            q[a] = m.qpos0[a] + quat_to_mat(frame_quat).T @ (target_pos - frame_pos) @ m.jnt_axis[j]
        return
    _gauss_newton(m, joints, frame_pos, frame_quat, target_pos, target_quat, q, iterations, tol)


def body_poses(model: Model, qpos) -> tuple[np.ndarray, np.ndarray]:
    """World positions (nbody, 3) and (w, x, y, z) quaternions (nbody, 4) of the body frames
    at one env's ``qpos``, on the host, composed as MuJoCo's kinematics composes them (mocap
    bodies at their model pose): for a reset that places one thing by another, such as an
    object in a hand, before any forward pass."""
    qpos = np.asarray(qpos, dtype=float)
    xpos, xquat = np.zeros((model.nbody, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (model.nbody, 1))
    for b in range(1, model.nbody):
        joints = range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b])
        if len(joints) and model.jnt_type[joints[0]] == JNT_FREE:
            a = model.jnt_qposadr[joints[0]]
            xpos[b], xquat[b] = qpos[a : a + 3], quat_normalize(qpos[a + 3 : a + 7])
            continue
        p = model.body_parentid[b]
        frame_pos = xpos[p] + quat_to_mat(xquat[p]) @ model.body_pos[b]
        frame_quat = quat_mul(xquat[p], model.body_quat[b])
        xpos[b], xquat[b] = _compose(model, joints, frame_pos, frame_quat, qpos)
    return xpos, xquat


def _relative_angle(rel, axis) -> float:
    """Rotation angle of quaternion ``rel`` about unit ``axis``, in (-pi, pi]."""
    s = np.dot(rel[1:], axis)
    angle = 2.0 * np.arctan2(s, rel[0])  # in (-2pi, 2pi]
    return float((angle + np.pi) % (2 * np.pi) - np.pi) if not np.isclose(angle, np.pi) else float(np.pi)


def _compose(m, joints, frame_pos, frame_quat, q):
    """Pose of the body after its joints act, as MuJoCo composes them."""
    pos, quat = frame_pos.copy(), frame_quat.copy()
    for j in joints:
        a = m.jnt_qposadr[j]
        rot = quat_to_mat(quat)
        anchor = pos + rot @ m.jnt_pos[j]
        if m.jnt_type[j] == JNT_SLIDE:
            pos = pos + rot @ m.jnt_axis[j] * (q[a] - m.qpos0[a])
        else:
            local = q[a : a + 4] if m.jnt_type[j] == JNT_BALL else axis_angle_to_quat(m.jnt_axis[j], q[a] - m.qpos0[a])
            quat = quat_mul(quat, local)
            pos = anchor - quat_to_mat(quat) @ m.jnt_pos[j]
    return pos, quat_normalize(quat)


def _pose_error(m, joints, frame_pos, frame_quat, target_pos, target_quat, q):
    pos, quat = _compose(m, joints, frame_pos, frame_quat, q)
    d = quat_mul(quat_conj(quat), target_quat)
    d = d if d[0] >= 0 else -d
    return np.concatenate([target_pos - pos, 2.0 * d[1:]])


def _gauss_newton(m, joints, frame_pos, frame_quat, target_pos, target_quat, q, iterations, tol) -> None:
    scalar = [j for j in joints if m.jnt_type[j] in (JNT_HINGE, JNT_SLIDE)]
    if len(scalar) != len(joints):
        raise ValueError("eval_ik solves bodies with several joints only when all are hinge or slide")
    idx = [m.jnt_qposadr[j] for j in joints]
    eps = 1e-7
    for _ in range(iterations):
        err = _pose_error(m, joints, frame_pos, frame_quat, target_pos, target_quat, q)
        if np.linalg.norm(err) < tol:
            break
        jac = np.empty((6, len(idx)))
        for k, a in enumerate(idx):
            dq = q.copy()
            dq[a] += eps
            jac[:, k] = (err - _pose_error(m, joints, frame_pos, frame_quat, target_pos, target_quat, dq)) / eps
        step, *_ = np.linalg.lstsq(jac, err, rcond=None)
        q[idx] += step
    for j in joints:
        if m.jnt_type[j] == JNT_HINGE:
            a = m.jnt_qposadr[j]
            q[a] = m.qpos0[a] + (q[a] - m.qpos0[a] + np.pi) % (2 * np.pi) - np.pi
