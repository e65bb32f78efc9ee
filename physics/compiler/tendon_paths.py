"""Spatial tendons on the host, in float64: lengths and Jacobians of paths through sites,
around spheres and cylinders and over pulleys, as MuJoCo's mj_tendon and mju_wrap compute
them. The compiler needs them at qpos0 (tendon_length0, the springs' default rest length,
tendon_invweight0); the step computes the same per env (physics/smooth/tendon_wrap.py).
"""

from __future__ import annotations

import numpy as np

from .. import model as M

_MINVAL = 1e-15
# The inside wrap's Newton iterations stop at |residual| <= this. MuJoCo 3.x's source stops
# at 1e-6, some 1e-8 rad short of the root; mujoco 4.0 lands within 1e-10 rad of it, as
# this does (the iteration after 1e-6, quadratically convergent, is at ~1e-12).
INSIDE_CONVERGED = 1e-10


def _normalized(v):
    """v / |v|, or MuJoCo's fallback (1, 0, ...) when |v| < mjMINVAL."""
    n = np.linalg.norm(v)
    if n < _MINVAL:
        out = np.zeros_like(v)
        out[0] = 1.0
        return out
    return v / n


def _crosses(p1, p2, p3, p4) -> bool:
    """Whether 2D segments p1-p2 and p3-p4 intersect."""
    det = (p4[1] - p3[1]) * (p2[0] - p1[0]) - (p4[0] - p3[0]) * (p2[1] - p1[1])
    if abs(det) < _MINVAL:
        return False
    a = ((p4[0] - p3[0]) * (p1[1] - p3[1]) - (p4[1] - p3[1]) * (p1[0] - p3[0])) / det
    b = ((p2[0] - p1[0]) * (p1[1] - p3[1]) - (p2[1] - p1[1]) * (p1[0] - p3[0])) / det
    return 0 <= a <= 1 and 0 <= b <= 1


def _arc(p0, p1, second, radius) -> float:
    """Length along the circle from p0 to p1, going the way the chosen solution turns."""
    angle = np.arccos(np.clip(np.dot(_normalized(p0), _normalized(p1)), -1.0, 1.0))
    cross = p0[1] * p1[0] - p0[0] * p1[1]
    if (cross > 0 and second) or (cross < 0 and not second):
        angle = 2 * np.pi - angle
    return radius * angle


def _circle(end0, end1, side, radius):
    """Tangent points of the shorter (or side-facing) way around a circle at the origin from
    end0 to end1 in 2D, and the arc length; None when the straight segment clears it."""
    sq0, sq1, sqrad = end0 @ end0, end1 @ end1, radius * radius
    if sq0 < sqrad or sq1 < sqrad or radius < _MINVAL:
        return None
    dif = end1 - end0
    dd = dif @ dif
    if dd < _MINVAL:
        return None
    a = min(max(-(dif @ end0) / dd, 0.0), 1.0)
    near = a * dif + end0
    if near @ near > sqrad and (side is None or side @ near >= 0):
        return None
    r0, r1 = np.sqrt(sq0 - sqrad), np.sqrt(sq1 - sqrad)
    sols, good = [], []
    for sgn in (1, -1):
        s0 = np.array([end0[0] * sqrad + sgn * radius * end0[1] * r0,
                       end0[1] * sqrad - sgn * radius * end0[0] * r0]) / sq0
        s1 = np.array([end1[0] * sqrad - sgn * radius * end1[1] * r1,
                       end1[1] * sqrad + sgn * radius * end1[0] * r1]) / sq1
        if side is not None:
            g = _normalized(s0 + s1) @ side
        else:
            g = -((s0 - s1) @ (s0 - s1))
        if _crosses(end0, s0, end1, s1):
            g = -10000.0
        sols.append((s0, s1))
        good.append(g)
    i = 0 if good[0] > good[1] else 1
    s0, s1 = sols[i]
    if _crosses(end0, s0, end1, s1):
        return None
    return s0, s1, _arc(s0, s1, i == 1, radius)


def _inside(end0, end1, radius):
    """A side site inside the circle: the single point the tendon touches, found by
    Newton's method on asin(A z) + asin(B z) - 2 asin(z) + G = 0 as mju_wrap's inside wrap;
    arc length 0; None when the segment clears the circle."""
    len0, len1 = np.linalg.norm(end0), np.linalg.norm(end1)
    dif = end1 - end0
    dd = dif @ dif
    if len0 <= radius or len1 <= radius or radius < _MINVAL or len0 < _MINVAL or len1 < _MINVAL:
        return None
    if dd > _MINVAL:
        a = -(dif @ end0) / dd
        if 0 < a < 1 and np.linalg.norm(end0 + a * dif) <= radius:
            return None
    fallback = _normalized(0.5 * (end0 + end1)) * radius
    A, B = radius / len0, radius / len1
    cos_g = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1)
    if cos_g < -1 + _MINVAL:
        return None
    if cos_g > 1 - _MINVAL:
        return fallback, fallback, 0.0
    g = np.arccos(cos_g)
    z = 1 - 1e-7
    f = np.arcsin(A * z) + np.arcsin(B * z) - 2 * np.arcsin(z) + g
    if f > 0:
        return fallback, fallback, 0.0
    it = 0
    while it < 20 and abs(f) > INSIDE_CONVERGED:
        df = (A / max(_MINVAL, np.sqrt(1 - z * z * A * A)) + B / max(_MINVAL, np.sqrt(1 - z * z * B * B))
              - 2 / max(_MINVAL, np.sqrt(1 - z * z)))
        if df > -_MINVAL:
            return fallback, fallback, 0.0
        z1 = z - f / df
        if z1 > z:
            return fallback, fallback, 0.0
        z = z1
        f = np.arcsin(A * z) + np.arcsin(B * z) - 2 * np.arcsin(z) + g
        if f > 1e-6:
            return fallback, fallback, 0.0
        it += 1
    if it >= 20:
        return fallback, fallback, 0.0
    if end0[0] * end1[1] - end0[1] * end1[0] > 0:
        vec, ang = _normalized(end0), np.arcsin(z) - np.arcsin(A * z)
    else:
        vec, ang = _normalized(end1), np.arcsin(z) - np.arcsin(B * z)
    p = radius * np.array([np.cos(ang) * vec[0] - np.sin(ang) * vec[1], np.sin(ang) * vec[0] + np.cos(ang) * vec[1]])
    return p, p, 0.0


def wrap(x0, x1, xpos, xmat, radius, cylinder: bool, side=None):
    """(length over the geom, first and second tangent points) of the path from x0 to x1
    around a sphere or cylinder at xpos, xmat (world), or None when the straight segment
    does not cross it (MuJoCo's mju_wrap)."""
    p0, p1 = xmat.T @ (x0 - xpos), xmat.T @ (x1 - xpos)
    if np.linalg.norm(p0) < _MINVAL or np.linalg.norm(p1) < _MINVAL:
        return None
    axes = _plane_axes(p0, p1, cylinder)
    d0, d1 = axes @ p0, axes @ p1
    s = None
    if side is not None:
        s = xmat.T @ (side - xpos)
        sd = _normalized(axes @ s) * radius
    if s is not None and np.linalg.norm(s) < radius:
        found = _inside(d0, d1, radius)
    else:
        found = _circle(d0, d1, sd if s is not None else None, radius)
    if found is None:
        return None
    q0, q1, length = found
    r0, r1 = axes.T @ q0, axes.T @ q1
    if cylinder:
        l0 = np.hypot(p0[0] - r0[0], p0[1] - r0[1])
        l1 = np.hypot(p1[0] - r1[0], p1[1] - r1[1])
        r0[2] = p0[2] + (p1[2] - p0[2]) * l0 / (l0 + length + l1)
        r1[2] = p0[2] + (p1[2] - p0[2]) * (l0 + length) / (l0 + length + l1)
        length = np.sqrt(length * length + (r1[2] - r0[2]) ** 2)
    return length, xmat @ r0 + xpos, xmat @ r1 + xpos


def _plane_axes(p0, p1, cylinder: bool):
    """(2, 3): the plane the wrap is solved in, in the geom's frame: a cylinder's xy; for a
    sphere the plane through its centre and both points (p0 its first axis)."""
    if cylinder:
        return np.array([[1.0, 0, 0], [0, 1.0, 0]])
    a0 = _normalized(p0)
    normal = np.cross(p0, p1)
    if np.linalg.norm(normal) < _MINVAL:
        x, y, z = np.abs(a0)
        i = 1 if y > x and y > z else 2 if z > x and z > y else 0
        other = np.ones(3)
        other[i] = 0
        normal = np.cross(a0, other)
    normal = _normalized(normal)
    return np.array([a0, _normalized(np.cross(normal, a0))])


def spatial_tendon(m: M.Model, t: int, site_xpos, geom_frame, point_jacobian):
    """(length, Jacobian (nv,)) of spatial tendon t, given the sites' world positions
    (nsite, 3), ``geom_frame(g)`` -> (xpos, xmat) and ``point_jacobian(body, point)`` ->
    (3, nv) translational Jacobian."""
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    kinds, ids, prm = m.wrap_type[adr:adr + num], m.wrap_objid[adr:adr + num], m.wrap_prm[adr:adr + num]
    length, jac, divisor, j = 0.0, np.zeros(m.nv), 1.0, 0
    while j < num - 1:
        if kinds[j] == M.WRAP_PULLEY or kinds[j + 1] == M.WRAP_PULLEY:
            if kinds[j] == M.WRAP_PULLEY:
                divisor = prm[j]
            j += 1
            continue
        s0 = ids[j]
        points, bodies = [site_xpos[s0]], [m.site_bodyid[s0]]
        found, advance = None, 1
        if kinds[j + 1] in (M.WRAP_SPHERE, M.WRAP_CYLINDER):
            g, s1, side = ids[j + 1], ids[j + 2], int(round(prm[j + 1]))
            xpos, xmat = geom_frame(g)
            found = wrap(site_xpos[s0], site_xpos[s1], xpos, xmat, m.geom_size[g, 0],
                         kinds[j + 1] == M.WRAP_CYLINDER, site_xpos[side] if side >= 0 else None)
            advance = 2
        else:
            s1 = ids[j + 1]
        if found is not None:
            points += [found[1], found[2]]
            bodies += [m.geom_bodyid[g]] * 2
            length += found[0] / divisor
        points.append(site_xpos[s1])
        bodies.append(m.site_bodyid[s1])
        for k in range(len(points) - 1):
            if not (found is not None and k == 1):  # the arc between tangent points is counted above
                length += np.linalg.norm(points[k + 1] - points[k]) / divisor
            if bodies[k] != bodies[k + 1]:
                direction = _normalized(points[k + 1] - points[k])
                jac += direction @ (point_jacobian(bodies[k + 1], points[k + 1])
                                    - point_jacobian(bodies[k], points[k])) / divisor
        j += advance
    return length, jac
