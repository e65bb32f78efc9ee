"""Host-side (numpy, float64) rotation helpers used when building models.

Quaternions are (w, x, y, z), as in MuJoCo.
"""

from __future__ import annotations

import numpy as np


def quat_mul(a, b) -> np.ndarray:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def quat_conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=float)


def quat_normalize(q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q)
    if n < 1e-15:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return q / n


def quat_rotate(q, v) -> np.ndarray:
    return quat_to_mat(q) @ np.asarray(v, dtype=float)


def quat_to_mat(q) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def mat_to_quat(m) -> np.ndarray:
    """Rotation matrix to a unit quaternion with w >= 0."""
    m = np.asarray(m, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = np.sqrt(tr + 1.0) * 2
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = quat_normalize(q)
    return q if q[0] >= 0 else -q


def axis_angle_to_quat(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, dtype=float)
    n = np.linalg.norm(axis)
    if n < 1e-15:
        return np.array([1.0, 0.0, 0.0, 0.0])
    s = np.sin(angle / 2) / n
    return np.array([np.cos(angle / 2), axis[0] * s, axis[1] * s, axis[2] * s])


def euler_to_quat(angles, seq: str = "xyz") -> np.ndarray:
    """Euler angles [rad] to a quaternion; lower-case axes are intrinsic (rotating
    frame), upper-case extrinsic (fixed frame), as MuJoCo's ``eulerseq``."""
    q = np.array([1.0, 0.0, 0.0, 0.0])
    for angle, ch in zip(angles, seq):
        r = axis_angle_to_quat(np.eye(3)["xyz".index(ch.lower())], angle)
        q = quat_mul(q, r) if ch.islower() else quat_mul(r, q)
    return q


def frame_to_quat(xaxis, yaxis) -> np.ndarray:
    """Orientation whose x axis is ``xaxis`` and y axis is ``yaxis`` made orthogonal to it."""
    x = np.asarray(xaxis, dtype=float)
    x = x / np.linalg.norm(x)
    y = np.asarray(yaxis, dtype=float)
    y = y - x * (x @ y)
    y = y / np.linalg.norm(y)
    return mat_to_quat(np.column_stack([x, y, np.cross(x, y)]))


def zaxis_to_quat(zaxis) -> np.ndarray:
    """Minimal rotation taking (0, 0, 1) to ``zaxis``."""
    z = np.asarray(zaxis, dtype=float)
    z = z / np.linalg.norm(z)
    ref = np.array([0.0, 0.0, 1.0])
    c = ref @ z
    if c < -1 + 1e-14:
        return np.array([0.0, 1.0, 0.0, 0.0])
    axis = np.cross(ref, z)
    return axis_angle_to_quat(axis, np.arctan2(np.linalg.norm(axis), c)) if np.linalg.norm(axis) > 1e-15 else np.array([1.0, 0.0, 0.0, 0.0])


def quat_from_to(a, b) -> np.ndarray:
    """Minimal rotation taking direction ``a`` to direction ``b``."""
    a = np.asarray(a, dtype=float) / np.linalg.norm(a)
    b = np.asarray(b, dtype=float) / np.linalg.norm(b)
    axis = np.cross(a, b)
    s, c = np.linalg.norm(axis), a @ b
    if s < 1e-14:
        if c > 0:
            return np.array([1.0, 0.0, 0.0, 0.0])
        perp = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(perp) < 1e-6:
            perp = np.cross(a, [0.0, 1.0, 0.0])
        return axis_angle_to_quat(perp, np.pi)
    return axis_angle_to_quat(axis, np.arctan2(s, c))
