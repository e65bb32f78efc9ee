"""Boxes against a height field: the corners over a triangle, at or below its plane plus
the margin, with the face normal; and ridges (convex grid edges) clipped to the box,
whose points inside it push it out along its axis nearest the hfield's up direction
(bumps and ridges under a box face).
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import MINVAL
from .candidates import make_candidates
from .grid import make_grid


@functools.cache
def make_box(fp):
    m = make_math(fp)
    vec3 = m.vec3
    g = make_grid(fp)
    nth_triangle, face_normal, over_face, grid_edge, convex_edge = (g.nth_triangle, g.face_normal, g.over_face,
                                                                    g.grid_edge, g.convex_edge)
    keep = make_candidates(fp).keep

    @ti.func
    def box_faces(buf: ti.template(), n, maxcon, geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1,
                  pos, rot, size, zmin, margin, merge2):
        """Box corners over a triangle, at or below its plane plus the margin."""
        for item in range(2 * (r1 - r0) * (c1 - c0)):
            v0, v1, v2 = nth_triangle(geom_f, mg, base, ncol, hsize, dx, dy, r0, c0, c1, item)
            if ti.max(ti.max(v0[2], v1[2]), v2[2]) >= zmin - margin:
                nrm = face_normal(v0, v1, v2)
                for i in range(8):
                    local = vec3(size[0] if i & 1 else -size[0], size[1] if i & 2 else -size[1],
                                 size[2] if i & 4 else -size[2])
                    p = pos + rot @ local
                    dist = nrm.dot(p - v0)
                    if dist <= margin and over_face(p, v0, v1, v2, nrm):
                        n = keep(buf, n, maxcon, dist, p - nrm * (dist / 2), nrm, merge2, False)
        return n

    @ti.func
    def box_edges(buf: ti.template(), n, maxcon, geom_f: ti.template(), mg, base, nrow, ncol, hsize, dx, dy, r0, r1,
                  c0, c1, pos, rot, size, margin, merge2):
        """Ridges clipped to the box (grown by the margin): the ends of the part inside,
        measured from the box face that looks down on the hfield."""
        up = rot.transpose() @ vec3(0, 0, 1)
        k = 0
        for i in ti.static(range(1, 3)):
            if ti.abs(up[i]) > ti.abs(up[k]):
                k = i
        sgn = fp(1.0) if up[k] > 0 else fp(-1.0)
        axis = vec3(rot[0, k], rot[1, k], rot[2, k]) * sgn
        grown = size + margin
        nr = r1 - r0 + 1
        nc = c1 - c0 + 1
        for item in range(nr * nc * 3):
            r = r0 + item // (3 * nc)
            c = c0 + (item // 3) % nc
            kind = item % 3
            if (kind != 1 and c >= c1) or (kind != 0 and r >= r1):
                continue
            ea, eb = grid_edge(geom_f, mg, base, ncol, hsize, dx, dy, r, c, kind)
            if not convex_edge(geom_f, mg, base, nrow, ncol, hsize, dx, dy, r, c, kind, ea, eb):
                continue
            qa = rot.transpose() @ (ea - pos)
            qb = rot.transpose() @ (eb - pos)
            t0 = fp(0.0)
            t1 = fp(1.0)
            for i in ti.static(range(3)):
                d = qb[i] - qa[i]
                if ti.abs(d) < fp(MINVAL):
                    if ti.abs(qa[i]) > grown[i]:
                        t0 = fp(2.0)
                else:
                    lo = (-grown[i] - qa[i]) / d
                    hi = (grown[i] - qa[i]) / d
                    t0 = ti.max(t0, ti.min(lo, hi))
                    t1 = ti.min(t1, ti.max(lo, hi))
            if t0 <= t1:
                for j in range(2 if t1 - t0 > fp(MINVAL) else 1):
                    t = t0 if j == 0 else t1
                    q = qa + (qb - qa) * t
                    dist = -(sgn * q[k] + size[k])
                    if dist <= margin:
                        p = ea + (eb - ea) * t
                        n = keep(buf, n, maxcon, dist, p + axis * (dist / 2), axis, merge2, False)
        return n

    return types.SimpleNamespace(box_faces=box_faces, box_edges=box_edges)
