"""Tests and projections on EPA's polytope: whether the origin is inside a tetrahedron,
whether a point lies on a triangle, whether a segment's line passes through a triangle
(MuJoCo's testTetra, triPointIntersect and rayTriangle in engine_collision_gjk.c), and a
face's projection of the origin, which orders the faces by distance.
"""


import functools
import types

from ...runtime.backend import ti
from .common import MINVAL, make_common
from .subdistance import make_subdistance


@functools.lru_cache(maxsize=None)
def make_polytope(fp):
    cm = make_common(fp)
    sd = make_subdistance(fp)
    row, det3 = cm.row, cm.det3
    project_origin_plane, plane_axes, tri_coords = sd.project_origin_plane, sd.plane_axes, sd.tri_coords

    @ti.func
    def test_tetra(p0, p1, p2, p3):
        """True when the origin is inside the tetrahedron."""
        inside = True
        for i in ti.static(range(4)):
            a, b, c, d = (p0, p1, p2, p3) if i == 0 else ((p1, p2, p3, p0) if i == 1 else (
                (p2, p3, p0, p1) if i == 2 else (p3, p0, p1, p2)))
            nrm = (b - a).cross(c - a)
            dot1 = nrm.dot(d - a)
            dot2 = -nrm.dot(a)
            inside = inside and ((dot1 > 0 and dot2 > 0) or (dot1 < 0 and dot2 < 0))
        return inside

    @ti.func
    def tri_point_intersect(v1, v2, v3, p):
        x, y, mmax = plane_axes(v1, v2, v3)
        lam = tri_coords(v1, v2, v3, p, x, y) / mmax
        hit = False
        if lam[0] >= 0 and lam[1] >= 0 and lam[2] >= 0:
            hit = (v1 * lam[0] + v2 * lam[1] + v3 * lam[2] - p).norm() < fp(MINVAL)
        return hit

    @ti.func
    def ray_triangle(v1, v2, v3, v4, v5):
        d12 = v2 - v1
        vol1 = det3(v3 - v1, v4 - v1, d12)
        vol2 = det3(v4 - v1, v5 - v1, d12)
        vol3 = det3(v5 - v1, v3 - v1, d12)
        return (vol1 >= 0 and vol2 >= 0 and vol3 >= 0) or (vol1 <= 0 and vol2 <= 0 and vol3 <= 0)

    @ti.func
    def face_projection(pv: ti.template(), a, b, c, center):
        """The origin projected on face (a, b, c), pointing away from the centre, and its
        squared length (0 when the face is degenerate)."""
        fail, v = project_origin_plane(row(pv, c), row(pv, b), row(pv, a))
        d2 = fp(0.0)
        if not fail:
            if v.dot(row(pv, a) - center) < 0:
                v = -v
            d2 = v.dot(v)
        return v, d2

    return types.SimpleNamespace(test_tetra=test_tetra, tri_point_intersect=tri_point_intersect,
                                 ray_triangle=ray_triangle, face_projection=face_projection)
