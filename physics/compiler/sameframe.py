"""Where MuJoCo puts a geom or site that sits on its body's frame or inertial frame.

MuJoCo's compiler marks a geom or site whose pose is within 1e-6 (each coordinate and
quaternion entry) of its body's frame, or of the body's inertial frame, as the same frame
(geom_sameframe, site_sameframe), and mj_kinematics then gives it that frame's world pose
instead of composing its own. The world poses then differ from the composed ones by up
to that 1e-6, and a contact's depth with them: the kernels are given the poses MuJoCo
uses in their place. Model keeps the poses as written.
"""

from __future__ import annotations

import numpy as np

_FRAME_EPS = 1e-6  # MuJoCo's kFrameEps
_ZERO, _UNIT = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])


def _same_vec(a, b) -> bool:
    return bool(np.all(np.abs(np.asarray(a) - b) < _FRAME_EPS))


def _same_quat(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.all(np.abs(a - b) < _FRAME_EPS) or np.all(np.abs(a + b) < _FRAME_EPS))


def frame_pose(pos, quat, ipos, iquat) -> tuple[np.ndarray, np.ndarray]:
    """The local pose MuJoCo moves an object of local pose (pos, quat) with, on a body
    of inertial frame (ipos, iquat)."""
    pos, quat = np.asarray(pos, dtype=float), np.asarray(quat, dtype=float)
    if _same_vec(pos, _ZERO) and _same_quat(quat, _UNIT):
        return _ZERO.copy(), _UNIT.copy()
    if _same_quat(quat, _UNIT):
        return pos, _UNIT.copy()
    if _same_vec(pos, ipos) and _same_quat(quat, iquat):
        return np.asarray(ipos, dtype=float), np.asarray(iquat, dtype=float)
    if _same_quat(quat, iquat):
        return pos, np.asarray(iquat, dtype=float)
    return pos, quat


def geom_poses(m) -> tuple[np.ndarray, np.ndarray]:
    """(geom_pos, geom_quat) as MuJoCo's kinematics moves the geoms."""
    return _poses(m.geom_pos, m.geom_quat, m.geom_bodyid, m)


def site_poses(m) -> tuple[np.ndarray, np.ndarray]:
    """(site_pos, site_quat) as MuJoCo's kinematics moves the sites."""
    return _poses(m.site_pos, m.site_quat, m.site_bodyid, m)


def _poses(pos, quat, body, m):
    pos, quat = np.array(pos, dtype=float).reshape(-1, 3), np.array(quat, dtype=float).reshape(-1, 4)
    for k, b in enumerate(np.asarray(body, dtype=int)):
        pos[k], quat[k] = frame_pose(pos[k], quat[k], m.body_ipos[b], m.body_iquat[b])
    return pos, quat
