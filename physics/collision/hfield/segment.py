"""Spheres and capsules against a height field: a segment a-b of radius rad (a sphere's is
a point) against the triangles' faces (the segment's ends over a triangle) and against
the grid's edges and vertices where the nearest segment point lies over no triangle
(ridges and peaks), with the normal from the edge toward the segment.
"""


import functools
import types

from ...runtime.backend import ti
from ..narrowphase import MINVAL
from .candidates import make_candidates
from .grid import make_grid


@functools.cache
def make_segment(fp):
    g = make_grid(fp)
    nth_triangle, face_normal, clip_segment = g.nth_triangle, g.face_normal, g.clip_segment
    grid_edge, closest_segments, normalize_up, over_any_face = (g.grid_edge, g.closest_segments, g.normalize_up,
                                                                g.over_any_face)
    keep = make_candidates(fp).keep

    @ti.func
    def segment_faces(buf: ti.template(), n, maxcon, geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, r1,
                      c0, c1, a, b, rad, zmin, margin, merge2):
        for item in range(2 * (r1 - r0) * (c1 - c0)):
            v0, v1, v2 = nth_triangle(geom_f, mg, base, ncol, hsize, dx, dy, r0, c0, c1, item)
            if ti.max(ti.max(v0[2], v1[2]), v2[2]) >= zmin - margin:
                nrm = face_normal(v0, v1, v2)
                t0, t1 = clip_segment(a, b, v0, v1, v2, nrm)
                # only the segment's own ends: where the segment leaves a triangle over
                # a flat or concave edge the ends are deeper, over a ridge the edge
                # pass finds the contact
                if t0 <= t1:
                    for k in range(2):
                        t = t0 if k == 0 else t1
                        if (k == 0 and t0 == 0) or (k == 1 and t1 == 1 and t1 - t0 > fp(MINVAL)):
                            p = a + (b - a) * t
                            dist = nrm.dot(p - v0) - rad
                            if dist <= margin:
                                n = keep(buf, n, maxcon, dist, p - nrm * (rad + dist / 2), nrm, merge2, False)
        return n

    @ti.func
    def segment_edges(buf: ti.template(), n, maxcon, geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, r1,
                      c0, c1, a, b, rad, margin, merge2):
        """Ridges and peaks: grid edges whose nearest segment point is over no face (a face
        contact covers it otherwise)."""
        nr = r1 - r0 + 1
        nc = c1 - c0 + 1
        for item in range(nr * nc * 3):
            r = r0 + item // (3 * nc)
            c = c0 + (item // 3) % nc
            kind = item % 3
            if (kind != 1 and c >= c1) or (kind != 0 and r >= r1):
                continue
            ea, eb = grid_edge(geom_f, mg, base, ncol, hsize, dx, dy, r, c, kind)
            ps, pe = closest_segments(a, b, ea, eb)
            nrm, length = normalize_up(ps - pe)
            dist = length - rad
            if dist <= margin and length >= fp(MINVAL) and nrm[2] > 0:
                if not over_any_face(geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, ps):
                    n = keep(buf, n, maxcon, dist, pe + nrm * (dist / 2), nrm, merge2, False)
        return n

    return types.SimpleNamespace(segment_faces=segment_faces, segment_edges=segment_edges)
