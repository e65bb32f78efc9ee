"""The height field's grid, in the hfield's frame: its samples, the two triangles of each
cell (split along the diagonal from sample (r, c) to (r + 1, c + 1), as MuJoCo), their
normals, what lies over a triangle, the grid's edges and which of them are ridges, and
the closest points of two segments.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import MINVAL


@functools.cache
def make_grid(fp):
    m = make_math(fp)
    vec3 = m.vec3

    @ti.func
    def vertex(geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r, c):
        """Sample (r, c) in the hfield frame; samples follow the geoms in geom_f's rows."""
        k = base + r * ncol + c
        h = geom_f[mg, k // geom_f.shape[2], k % geom_f.shape[2]]
        return vec3(c * dx - hsize[0], r * dy - hsize[1], h * hsize[2])

    @ti.func
    def triangle(geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r, c, which):
        """Counter-clockwise corners (seen from +z) of triangle ``which`` of cell (r, c):
        0 above the diagonal (r, c)-(r+1, c+1), 1 below it."""
        v0 = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r, c)
        v1 = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r + 1, c + 1)
        v2 = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r + 1, c)
        if which == 1:
            v2 = v1
            v1 = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r, c + 1)
        return v0, v1, v2

    @ti.func
    def nth_triangle(geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, c0, c1, item):
        """Triangle ``item`` of the cells from (r0, c0), row by row over columns c0..c1 - 1,
        two triangles a cell."""
        cell = item // 2
        return triangle(geom_f, mg, base, ncol, hsize, dx, dy, r0 + cell // (c1 - c0), c0 + cell % (c1 - c0), item % 2)

    @ti.func
    def face_normal(v0, v1, v2):
        n, _ = normalize_up((v1 - v0).cross(v2 - v0))
        return n

    @ti.func
    def normalize_up(v):
        """v / |v| and |v|; +z when v is too short (a degenerate triangle faces up)."""
        n = v.norm()
        r = vec3(0, 0, 1)
        if n >= fp(MINVAL):
            r = v / n
        return r, n

    @ti.func
    def edge_side(p, a, b, n):
        """> 0 when p is on the triangle's side of edge a->b (projected along n)."""
        return n.cross(b - a).dot(p - a)

    @ti.func
    def over_face(p, v0, v1, v2, n):
        return edge_side(p, v0, v1, n) >= 0 and edge_side(p, v1, v2, n) >= 0 and edge_side(p, v2, v0, n) >= 0

    @ti.func
    def clip_segment(a, b, v0, v1, v2, n):
        """Parameter interval [t0, t1] of segment a-b lying over the triangle; t0 > t1 if none."""
        t0 = fp(0.0)
        t1 = fp(1.0)
        for e in ti.static(range(3)):
            p = v0
            q = v1
            if e == 1:
                p = v1
                q = v2
            elif e == 2:
                p = v2
                q = v0
            f0 = edge_side(a, p, q, n)
            f1 = edge_side(b, p, q, n)
            if f0 < 0 and f1 < 0:
                t0 = fp(2.0)
            elif f0 < 0:
                t0 = ti.max(t0, f0 / (f0 - f1))
            elif f1 < 0:
                t1 = ti.min(t1, f0 / (f0 - f1))
        return t0, t1

    @ti.func
    def closest_segments(p1, q1, p2, q2):
        """Closest points of segments p1-q1 and p2-q2."""
        d1 = q1 - p1
        d2 = q2 - p2
        r = p1 - p2
        a = d1.dot(d1)
        e = d2.dot(d2)
        f = d2.dot(r)
        s = fp(0.0)
        t = fp(0.0)
        if a > fp(MINVAL) and e <= fp(MINVAL):
            s = ti.math.clamp(-d1.dot(r) / a, 0, 1)
        elif a <= fp(MINVAL) and e > fp(MINVAL):
            t = ti.math.clamp(f / e, 0, 1)
        elif a > fp(MINVAL):
            c = d1.dot(r)
            b = d1.dot(d2)
            denom = a * e - b * b
            if denom > fp(MINVAL) * a * e:
                s = ti.math.clamp((b * f - c * e) / denom, 0, 1)
            t = (b * s + f) / e
            if t < 0:
                t = fp(0.0)
                s = ti.math.clamp(-c / a, 0, 1)
            elif t > 1:
                t = fp(1.0)
                s = ti.math.clamp((b - c) / a, 0, 1)
        return p1 + d1 * s, p2 + d2 * t

    @ti.func
    def over_any_face(geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, p):
        """Whether p lies over a triangle of the cells [r0, r1) x [c0, c1), along its normal."""
        inside = False
        for item in range((r1 - r0) * (c1 - c0) * 2):
            if not inside:
                r = r0 + item // (2 * (c1 - c0))
                c = c0 + (item // 2) % (c1 - c0)
                v0, v1, v2 = triangle(geom_f, mg, base, ncol, hsize, dx, dy, r, c, item % 2)
                inside = over_face(p, v0, v1, v2, face_normal(v0, v1, v2))
        return inside

    @ti.func
    def convex_edge(geom_f: ti.template(), mg, base, nrow, ncol, hsize, dx, dy, r, c, kind, a, b):
        """Whether grid edge a-b is a ridge: each triangle beside it lies below the other's
        plane (edges of the grid's border count as ridges). On flat or planar terrain no
        edge is, so a box there rests on its corners alone."""
        r1, c1, r2, c2 = r + 1, c + 1, r - 1, c  # apexes of the triangles beside an edge along +x
        if kind == 1:
            r2, c2 = r, c - 1
        elif kind == 2:
            r1, c1, r2, c2 = r + 1, c, r, c + 1
        convex = True
        if 0 <= r2 and c2 >= 0 and r1 < nrow and c1 < ncol:
            o1 = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r1, c1)
            o2 = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r2, c2)
            n1 = (b - a).cross(o1 - a)
            if n1[2] < 0:
                n1 = -n1
            convex = n1.dot(o2 - a) < -fp(1e-6) * n1.norm() * ti.max(dx, dy)
        return convex

    @ti.func
    def grid_edge(geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r, c, kind):
        a = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r, c)
        b = vertex(geom_f, mg, base, ncol, hsize, dx, dy, r + (0 if kind == 0 else 1), c + (0 if kind == 1 else 1))
        return a, b

    return types.SimpleNamespace(vertex=vertex, triangle=triangle, nth_triangle=nth_triangle, face_normal=face_normal,
                                 normalize_up=normalize_up, over_face=over_face, clip_segment=clip_segment,
                                 closest_segments=closest_segments, over_any_face=over_any_face,
                                 convex_edge=convex_edge, grid_edge=grid_edge)
