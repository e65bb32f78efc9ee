"""Mass properties of primitive shapes, and how they combine into a body's inertia.

Formulas are those MuJoCo uses when it derives inertia from geoms: solid shapes of
uniform density; a capsule is a cylinder plus two hemispherical caps.
"""

from __future__ import annotations

import numpy as np

from ..model import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_SPHERE
from ..compiler.transforms import mat_to_quat, quat_to_mat


def geom_volume(gtype: int, size) -> float:
    """Volume [m^3] of a solid primitive; 0 for shapes without volume (plane, hfield)."""
    r, b, c = size
    if gtype == GEOM_SPHERE:
        return 4.0 / 3.0 * np.pi * r**3
    if gtype == GEOM_CAPSULE:
        return np.pi * r * r * 2.0 * b + 4.0 / 3.0 * np.pi * r**3
    if gtype == GEOM_CYLINDER:
        return np.pi * r * r * 2.0 * b
    if gtype == GEOM_ELLIPSOID:
        return 4.0 / 3.0 * np.pi * r * b * c
    if gtype == GEOM_BOX:
        return 8.0 * r * b * c
    return 0.0


def geom_inertia(gtype: int, size, mass: float) -> np.ndarray:
    """Principal moments [kg m^2] about the geom's centre, in the geom frame."""
    r, b, c = size
    if gtype == GEOM_SPHERE:
        return np.full(3, 0.4 * mass * r * r)
    if gtype == GEOM_CAPSULE:
        h = 2.0 * b
        m_caps = mass * 4.0 * r / (4.0 * r + 3.0 * h)  # share of the two caps
        m_cyl = mass - m_caps
        ixx = m_cyl * (3 * r * r + h * h) / 12.0
        izz = m_cyl * r * r / 2.0
        cap = 0.4 * m_caps * r * r  # both caps about their own centre
        shift = m_caps * h * (3.0 * r + 2.0 * h) / 8.0  # caps moved to the ends
        return np.array([ixx + cap + shift, ixx + cap + shift, izz + cap])
    if gtype == GEOM_CYLINDER:
        h = 2.0 * b
        ixx = mass * (3 * r * r + h * h) / 12.0
        return np.array([ixx, ixx, mass * r * r / 2.0])
    if gtype == GEOM_ELLIPSOID:
        return mass / 5.0 * np.array([b * b + c * c, r * r + c * c, r * r + b * b])
    if gtype == GEOM_BOX:
        return mass / 3.0 * np.array([b * b + c * c, r * r + c * c, r * r + b * b])
    return np.zeros(3)


def combine(parts):
    """Combine (mass, com, quat, diag_inertia) parts into one rigid body.

    Returns (mass, com, iquat, principal_inertia), the inertia about the combined com
    in the principal frame ``iquat`` (relative to the body frame).
    """
    parts = [p for p in parts if p[0] > _FRAME_EPS]  # MuJoCo leaves out geoms of no mass
    if len(parts) == 1:  # its frame and moments as they are, as MuJoCo copies them
        m, c, q, diag = parts[0]
        return m, np.asarray(c, dtype=float), np.asarray(q, dtype=float), np.asarray(diag, dtype=float)
    mass = sum(p[0] for p in parts)
    if mass <= 0:
        return 0.0, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3)
    com = sum(p[0] * np.asarray(p[1], dtype=float) for p in parts) / mass
    full = np.zeros((3, 3))
    for m, c, q, diag in parts:
        rot = quat_to_mat(q)
        d = np.asarray(c, dtype=float) - com
        full += rot @ np.diag(diag) @ rot.T + m * (d @ d * np.eye(3) - np.outer(d, d))
    iquat, principal = principal_axes(full)
    return mass, com, iquat, principal


def principal_axes(full, rel=None):
    """Diagonalize a symmetric 3x3 inertia: returns (quat of principal frame, moments in
    decreasing order), as MuJoCo's compiler finds them (:func:`eig3`; ``rel``: its
    stopping point, BODY_EIG_REL unless given)."""
    full = np.asarray(full, dtype=float)
    vals, quat = eig3([float(x) for x in (0.5 * (full + full.T)).ravel()], BODY_EIG_REL if rel is None else rel)
    return np.array(quat), np.array(vals)


# Rotations stop once the largest off-diagonal entry is below this fraction of the largest
# entry of the matrix given: relative, so a small bone's inertia (1e-11 kg m^2 per unit
# density) stops where a large one would. mujoco 4.0.0 stops a mesh's much earlier than a
# body's. Fitted to its mesh_quat: all 162 of dm_control dog's bone meshes and 60 random
# near-round hulls to 1e-13 (entries it stopped at are at most 0.992e-7 of the largest,
# those it went on from at least 1.055e-7); and to its body_iquat on the Control Suite's
# 86 bodies of several geoms (any value from 2e-15 to 1e-14 fits all; 1e-13: 12 differ).
# Nearly round bones (moments 1e-4 apart) stop with their frame ~1e-5 from the exact
# eigenvectors, and geoms and sites placed on that frame move with it, so the stopping
# point is reproduced, not improved on.
MESH_EIG_REL = 1e-7
BODY_EIG_REL = 1e-14
_SORT_REL = 1e-12  # moments closer than this (relative, as above) keep their order
_FRAME_EPS = 1e-14  # mjEPS: a quaternion within this of unit length is left as it is


def eig3(mat: list, rel: float) -> tuple[list, list]:
    """(eigenvalues, quat) of a symmetric 3x3 matrix (row-major list), by Jacobi rotations
    kept as a quaternion, as MuJoCo's compiler finds a body's or a mesh's principal frame.

    An inertia has many principal frames (any turn of a half or quarter circle about an
    axis keeps it), and one with nearly equal moments has a frame that is barely defined:
    MuJoCo reports the one its rotations reach when they stop (see MESH_EIG_REL), and this
    sequence of rotations, MuJoCo's stopping point and its ordering of the moments pick
    that one.
    """
    quat = [1.0, 0.0, 0.0, 0.0]
    vals = [mat[0], mat[4], mat[8]]
    largest = max(abs(x) for x in mat)
    stop = rel * largest
    for _ in range(500):
        rot = _quat_mat(quat)
        d = _matmul(_matmul(_transpose(rot), mat), rot)
        vals = [d[0], d[4], d[8]]
        if abs(d[1]) > abs(d[2]) and abs(d[1]) > abs(d[5]):
            row, col, axis = 0, 1, 2
        elif abs(d[2]) > abs(d[5]):
            row, col, axis = 0, 2, 1
        else:
            row, col, axis = 1, 2, 0
        if abs(d[3 * row + col]) < stop or d[3 * row + col] == 0:
            break
        tau = (d[4 * col] - d[4 * row]) / (2 * d[3 * row + col])
        t = 1.0 / (tau + np.sqrt(1 + tau * tau)) if tau >= 0 else -1.0 / (-tau + np.sqrt(1 + tau * tau))
        c = 1.0 / np.sqrt(1 + t * t)
        step = [0.0, 0.0, 0.0, 0.0]
        half = abs(t) * c / np.sqrt(2 * (1 + c))  # sin of half the angle, without cancellation
        step[axis + 1] = -half if tau >= 0 else half
        if axis == 1:
            step[axis + 1] = -step[axis + 1]
        step[0] = np.sqrt(1.0 - step[axis + 1] * step[axis + 1])
        quat = _normalized(_quat_mul(quat, _normalized(step)))
    for j in range(3):  # decreasing order, by 90-degree turns (a bubble sort: 0, 1, 0)
        lead = j % 2
        if vals[lead] + _SORT_REL * largest < vals[lead + 1]:
            vals[lead], vals[lead + 1] = vals[lead + 1], vals[lead]
            turn = [0.707106781186548, 0.0, 0.0, 0.0]
            turn[(lead + 2) % 3 + 1] = turn[0]
            quat = _normalized(_quat_mul(quat, turn))
    return [float(v) for v in vals], [float(q) for q in quat]


def _quat_mat(q):
    if q == [1.0, 0.0, 0.0, 0.0]:
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    q00, q01, q02, q03 = q[0] * q[0], q[0] * q[1], q[0] * q[2], q[0] * q[3]
    q11, q12, q13, q22, q23, q33 = q[1] * q[1], q[1] * q[2], q[1] * q[3], q[2] * q[2], q[2] * q[3], q[3] * q[3]
    return [q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02),
            2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01),
            2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33]


def _matmul(a, b):
    return [a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j] for i in range(3) for j in range(3)]


def _transpose(a):
    return [a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]]


def _quat_mul(a, b):
    return _normalized([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])


def _normalized(v):
    norm = sum(x * x for x in v)
    if norm < _FRAME_EPS:
        return v
    norm = np.sqrt(norm)
    return [x / norm for x in v] if abs(norm - 1) > _FRAME_EPS else v
