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


def principal_axes(full):
    """Diagonalize a symmetric 3x3 inertia: returns (quat of principal frame, moments)."""
    full = 0.5 * (np.asarray(full, dtype=float) + np.asarray(full, dtype=float).T)
    if np.allclose(full, np.diag(np.diag(full)), rtol=0, atol=1e-14 * max(1.0, np.abs(full).max())):
        return np.array([1.0, 0.0, 0.0, 0.0]), np.diag(full).copy()
    vals, vecs = np.linalg.eigh(full)
    order = np.argsort(-vals)  # descending, as MuJoCo reports them
    vals, vecs = vals[order], vecs[:, order]
    if np.linalg.det(vecs) < 0:
        vecs[:, 2] = -vecs[:, 2]
    return mat_to_quat(vecs), vals
