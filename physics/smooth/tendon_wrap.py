"""Wrapping a spatial tendon around a sphere or cylinder, in the step (MuJoCo's mju_wrap):
the shortest path between two points that does not cross the geom, solved in a plane of
the geom's frame (a cylinder's cross-section, or the plane through a sphere's centre and
both points), a side site choosing the way around. physics/compiler/tendon_paths.py is
the host's copy, for the compiler's values at qpos0.

Taichi functions return once, at their end: the early exits of mju_wrap are flags here.
"""

import functools
import math
import types

from ..compiler.tendon_paths import INSIDE_CONVERGED
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

MINVAL = 1e-15
_INSIDE_ITERATIONS = 20
_INSIDE_TOLERANCE = 1e-6  # a residual above it: Newton overshot, MuJoCo's fallback
_SINGLE_TOLERANCE = 1e-5  # single precision's stop and overshoot
_INSIDE_START = 1 - 1e-7
_CROSSING = -10000.0  # the score of a solution whose tangent lines cross


@functools.lru_cache(maxsize=None)
def make_tendon_wrap(fp):
    m = make_math(fp)
    vec2 = ti.types.vector(2, fp)
    # single precision computes the residual only to a few 1e-6 (asin's slope near 1 is
    # ~1/sqrt(1 - z^2), some 80 at the root): it stops within 1e-5 (z then within ~1e-7 of
    # the root), or where the iterate stops moving short of it, and takes a residual past
    # +1e-5, not MuJoCo's 1e-6, as an overshoot
    single = fp == ti.f32
    converged = _SINGLE_TOLERANCE if single else INSIDE_CONVERGED
    overshoot = _SINGLE_TOLERANCE if single else _INSIDE_TOLERANCE

    @ti.func
    def unit2(v):
        """v / |v|, or (1, 0) when |v| < MINVAL, as mju_normalize."""
        n = v.norm()
        out = vec2(1.0, 0.0)
        if n >= MINVAL:
            out = v / n
        return out

    @ti.func
    def unit3(v):
        n = v.norm()
        out = m.vec3(1.0, 0.0, 0.0)
        if n >= MINVAL:
            out = v / n
        return out

    @ti.func
    def crosses(p1, p2, p3, p4):
        """Whether 2D segments p1-p2 and p3-p4 intersect."""
        det = (p4[1] - p3[1]) * (p2[0] - p1[0]) - (p4[0] - p3[0]) * (p2[1] - p1[1])
        out = False
        if ti.abs(det) >= MINVAL:
            a = ((p4[0] - p3[0]) * (p1[1] - p3[1]) - (p4[1] - p3[1]) * (p1[0] - p3[0])) / det
            b = ((p2[0] - p1[0]) * (p1[1] - p3[1]) - (p2[1] - p1[1]) * (p1[0] - p3[0])) / det
            out = a >= 0 and a <= 1 and b >= 0 and b <= 1
        return out

    @ti.func
    def arc(p0, p1, second, radius):
        """Length along the circle from p0 to p1, the way the chosen solution turns."""
        angle = ti.acos(ti.min(ti.max(unit2(p0).dot(unit2(p1)), fp(-1.0)), fp(1.0)))
        cross = p0[1] * p1[0] - p0[0] * p1[1]
        if (cross > 0 and second) or (cross < 0 and not second):
            angle = fp(2 * math.pi) - angle
        return radius * angle

    @ti.func
    def tangent(end, r, sqlen, sqrad, radius, sgn):
        """Where a line from ``end`` touches the circle, on the side ``sgn`` picks."""
        return vec2(end[0] * sqrad + sgn * radius * end[1] * r, end[1] * sqrad - sgn * radius * end[0] * r) / sqlen

    @ti.func
    def circle(end0, end1, side, has_side, radius):
        """(wraps, tangent point from end0, tangent point to end1, arc length) of the path
        around a circle at the origin: the shorter way, or the way facing ``side``."""
        sq0, sq1, sqrad = end0.dot(end0), end1.dot(end1), radius * radius
        dif = end1 - end0
        dd = dif.dot(dif)
        ok = not (sq0 < sqrad or sq1 < sqrad or radius < MINVAL or dd < MINVAL)
        s0, s1, length = vec2(0.0), vec2(0.0), fp(0.0)
        if ok:
            a = ti.min(ti.max(-dif.dot(end0) / dd, fp(0.0)), fp(1.0))
            near = a * dif + end0
            if near.dot(near) > sqrad and (not has_side or side.dot(near) >= 0):
                ok = False
        if ok:
            r0, r1 = ti.sqrt(sq0 - sqrad), ti.sqrt(sq1 - sqrad)
            good = vec2(0.0)
            for i in ti.static(range(2)):
                sgn = 1.0 if i == 0 else -1.0
                a0 = tangent(end0, r0, sq0, sqrad, radius, sgn)
                a1 = tangent(end1, r1, sq1, sqrad, radius, -sgn)
                g = -(a0 - a1).dot(a0 - a1)
                if has_side:
                    g = unit2(a0 + a1).dot(side)
                if crosses(end0, a0, end1, a1):
                    g = fp(_CROSSING)
                good[i] = g
            second = not good[0] > good[1]
            sgn = 1.0
            if second:
                sgn = -1.0
            s0 = tangent(end0, r0, sq0, sqrad, radius, sgn)
            s1 = tangent(end1, r1, sq1, sqrad, radius, -sgn)
            if crosses(end0, s0, end1, s1):
                ok = False
            else:
                length = arc(s0, s1, second, radius)
        return ok, s0, s1, length

    @ti.func
    def inside_residual(z, a, b, g):
        return ti.asin(a * z) + ti.asin(b * z) - 2 * ti.asin(z) + g

    @ti.func
    def inside(end0, end1, radius):
        """(wraps, touch point, touch point, 0) for a side site inside the circle: the one
        point the path touches, by Newton's method on asin(A z) + asin(B z) - 2 asin(z) + G
        as mju_wrap's inside wrap; the chord's midpoint pushed out to the circle when the
        method fails."""
        len0, len1 = end0.norm(), end1.norm()
        dif = end1 - end0
        dd = dif.dot(dif)
        ok = not (len0 <= radius or len1 <= radius or radius < MINVAL or len0 < MINVAL or len1 < MINVAL)
        if ok and dd > MINVAL:
            a = -dif.dot(end0) / dd
            if a > 0 and a < 1 and (end0 + a * dif).norm() <= radius:
                ok = False
        pnt = unit2(fp(0.5) * (end0 + end1)) * radius
        if ok:
            a, b = radius / len0, radius / len1
            cos_g = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1)
            if cos_g < -1 + MINVAL:
                ok = False
            elif cos_g <= 1 - MINVAL:
                g = ti.acos(cos_g)
                z = fp(_INSIDE_START)
                f = inside_residual(z, a, b, g)
                solved = f <= 0
                it = 0
                settled = False
                while solved and not settled and it < _INSIDE_ITERATIONS and ti.abs(f) > converged:
                    df = (a / ti.max(fp(MINVAL), ti.sqrt(1 - z * z * a * a))
                          + b / ti.max(fp(MINVAL), ti.sqrt(1 - z * z * b * b))
                          - 2 / ti.max(fp(MINVAL), ti.sqrt(1 - z * z)))
                    z1 = z - f / df
                    if df > -MINVAL or z1 > z:
                        solved = False
                    elif ti.static(single) and z1 == z:
                        settled = True  # a step below single precision's resolution: the root
                    else:
                        z = z1
                        f = inside_residual(z, a, b, g)
                        if f > overshoot:
                            solved = False
                        it += 1
                if solved and it < _INSIDE_ITERATIONS:
                    vec = unit2(end1)
                    ang = ti.asin(z) - ti.asin(b * z)
                    if end0[0] * end1[1] - end0[1] * end1[0] > 0:
                        vec = unit2(end0)
                        ang = ti.asin(z) - ti.asin(a * z)
                    c, s = ti.cos(ang), ti.sin(ang)
                    pnt = radius * vec2(c * vec[0] - s * vec[1], s * vec[0] + c * vec[1])
        return ok, pnt, pnt, fp(0.0)

    @ti.func
    def plane_axes(p0, p1, cylinder):
        """The plane the wrap is solved in, in the geom's frame: a cylinder's xy, or the
        plane through a sphere's centre and both points (p0 along its first axis)."""
        a0 = m.vec3(1.0, 0.0, 0.0)
        a1 = m.vec3(0.0, 1.0, 0.0)
        if not cylinder:
            a0 = unit3(p0)
            normal = p0.cross(p1)
            if normal.norm() < MINVAL:
                other = m.vec3(1.0)
                x, y, z = ti.abs(a0[0]), ti.abs(a0[1]), ti.abs(a0[2])
                if y > x and y > z:
                    other[1] = 0.0
                elif z > x and z > y:
                    other[2] = 0.0
                else:
                    other[0] = 0.0
                normal = a0.cross(other)
            a1 = unit3(unit3(normal).cross(a0))
        return a0, a1

    @ti.func
    def wrap(x0, x1, xpos, xmat, radius, cylinder, side, has_side):
        """(wraps, length over the geom, first and second tangent point in the world) of
        the path from x0 to x1 around a sphere or cylinder at xpos, xmat of ``radius``;
        ``side``: the side site's world position, when ``has_side``."""
        p0, p1 = xmat.transpose() @ (x0 - xpos), xmat.transpose() @ (x1 - xpos)
        ok = not (p0.norm() < MINVAL or p1.norm() < MINVAL)
        w0, w1, length = m.vec3(0.0), m.vec3(0.0), fp(0.0)
        if ok:
            a0, a1 = plane_axes(p0, p1, cylinder)
            d0, d1 = vec2(p0.dot(a0), p0.dot(a1)), vec2(p1.dot(a0), p1.dot(a1))
            s = xmat.transpose() @ (side - xpos)
            sd = unit2(vec2(s.dot(a0), s.dot(a1))) * radius
            q0, q1 = vec2(0.0), vec2(0.0)
            if has_side and s.norm() < radius:
                ok, q0, q1, length = inside(d0, d1, radius)
            else:
                ok, q0, q1, length = circle(d0, d1, sd, has_side, radius)
            if ok:
                r0, r1 = a0 * q0[0] + a1 * q0[1], a0 * q1[0] + a1 * q1[1]
                if cylinder:
                    l0 = ti.sqrt((p0[0] - r0[0]) ** 2 + (p0[1] - r0[1]) ** 2)
                    l1 = ti.sqrt((p1[0] - r1[0]) ** 2 + (p1[1] - r1[1]) ** 2)
                    r0[2] = p0[2] + (p1[2] - p0[2]) * l0 / (l0 + length + l1)
                    r1[2] = p0[2] + (p1[2] - p0[2]) * (l0 + length) / (l0 + length + l1)
                    height = ti.abs(r1[2] - r0[2])
                    length = ti.sqrt(length * length + height * height)
                w0, w1 = xmat @ r0 + xpos, xmat @ r1 + xpos
        return ok, length, w0, w1

    return types.SimpleNamespace(wrap=wrap, unit3=unit3)
