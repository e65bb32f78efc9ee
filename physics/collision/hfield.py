"""Height-field collisions: every primitive against an hfield geom (geom1).

MuJoCo splits each grid cell (r, c) along the diagonal from sample (r, c) to (r + 1,
c + 1) into two triangles and collides the prisms under them with its convex solver.
Here the primitives meet the triangles' top surfaces exactly instead, in the hfield's
frame, over the cells under the primitive's bounding box:

- face contacts: the primitive's deepest points along a triangle's normal that lie over
  the triangle (sphere centres and capsule ends, box corners), with the face normal;
- sphere and capsule against the grid's edges and vertices, where the nearest segment
  point lies over no triangle (ridges and peaks), with the normal from the edge toward
  the segment;
- ridges (convex grid edges) clipped to a box: their points inside it push it out along
  its axis nearest the hfield's up direction (bumps and ridges under a box face).

Ellipsoids and cylinders collide as MuJoCo collides every geom: with the prism under
each triangle, by the convex solver (GJK and EPA, physics/collision/convex.py). The prisms' walls
inside the grid are not terrain, so a contact whose normal leaves a prism through a wall
(a sliver of the geom reaching into a neighbouring prism) is left out, as is every
contact with the grid's outer walls; MuJoCo keeps those.

Candidates go through a small table that merges duplicates (the same point reached from
neighbouring triangles) and keeps the deepest few; contacts are emitted with MuJoCo's
frame convention, the normal pointing from the hfield (geom1) to the other geom.
"""


import functools
import types

from ..collision.convex import make_convex
from ..collision.narrowphase import MINVAL, make_narrowphase
from ..model import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_SPHERE
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

# rows of the candidate table (a pair's own limit may be lower): the prisms' path keeps up
# to 16, so that the contacts under a flat face average out the arbitrary points EPA picks
HF_MAXCON, HF_MAXCON_CONVEX = 8, 16
_MERGE = 1e-3  # candidates closer than this fraction of a cell, with the same normal, are one
_WALL = 1e-3  # a prism contact whose normal's up component is below this leaves through a wall


@functools.cache
def make_hfield(fp, convex: bool = False):
    """The height-field colliders; ``convex`` compiles in the prisms' convex path
    (ellipsoids and cylinders), which only models with such pairs need."""
    m = make_math(fp)
    nph = make_narrowphase(fp)
    cvx = make_convex(fp) if convex else None
    vec3 = m.vec3
    # candidate rows: dist, pos (3), normal (3), in the hfield frame
    buf_t = ti.types.matrix(HF_MAXCON_CONVEX if convex else HF_MAXCON, 7, fp)

    # --- the grid ---------------------------------------------------------------------
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

    # --- the candidate table ------------------------------------------------------------
    @ti.func
    def keep(buf: ti.template(), n, maxcon, dist, pos, normal, merge2, spread: ti.template()):
        """Add a candidate: merged with one at the same place and normal (the deeper wins),
        else appended. A full table replaces its shallowest if the new one is deeper; with
        ``spread`` it drops the shallower of its two closest candidates instead (the new one
        included), so that contacts from many prisms under a flat face stay spread over the
        face rather than crowding the first cells visited. Returns the count."""
        slot = -1
        for k in range(n):
            d = pos - vec3(buf[k, 1], buf[k, 2], buf[k, 3])
            if d.dot(d) < merge2 and normal.dot(vec3(buf[k, 4], buf[k, 5], buf[k, 6])) > fp(0.99):
                slot = k
        write = True
        if slot >= 0:
            write = dist < buf[slot, 0]
        elif n < maxcon:
            slot = n
            n += 1
        elif ti.static(spread):
            closest = fp(1e30)
            for i in range(n + 1):
                pi = pos
                di = dist
                if i < n:
                    pi = vec3(buf[i, 1], buf[i, 2], buf[i, 3])
                    di = buf[i, 0]
                for j in range(i):
                    d = pi - vec3(buf[j, 1], buf[j, 2], buf[j, 3])
                    if d.dot(d) < closest:
                        closest = d.dot(d)
                        slot = i if di >= buf[j, 0] else j
            write = slot < n
        else:
            slot = 0
            for k in range(1, n):
                if buf[k, 0] > buf[slot, 0]:
                    slot = k
            write = dist < buf[slot, 0]
        if write:
            buf[slot, 0] = dist
            for i in ti.static(range(3)):
                buf[slot, 1 + i] = pos[i]
                buf[slot, 4 + i] = normal[i]
        return n

    # --- ellipsoid and cylinder: the prisms under the triangles ---------------------------
    @ti.func
    def convex_prisms(buf: ti.template(), n, maxcon, geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, r1,
                      c0, c1, type2, pos2, rot, size, zmin, margin, merge2):
        half = fp(0.5) * margin
        obj = cvx.make_obj(type2, pos2, rot, size, size[0], half)
        bare = cvx.make_obj(type2, pos2, rot, size, size[0], fp(0.0))  # not grown: for exact face contacts
        for item in range(2 * (r1 - r0) * (c1 - c0)):
            v0, v1, v2 = nth_triangle(geom_f, mg, base, ncol, hsize, dx, dy, r0, c0, c1, item)
            if ti.max(ti.max(v0[2], v1[2]), v2[2]) >= zmin - margin:
                prism = cvx.make_prism(v0, v1, v2, -hsize[3], half)
                dist, x1, x2 = cvx.overlap(prism, obj)
                if dist < 0:
                    dist += margin
                    nrm = cvx.normalize(x1 - x2)
                    pos = (x1 + x2) * fp(0.5)
                    face = face_normal(v0, v1, v2)
                    found = 0
                    if nrm.dot(face) > fp(0.99):
                        if type2 == GEOM_ELLIPSOID:
                            dist, pos, nrm = ellipsoid_face(dist, pos, nrm, v0, v1, v2, face, bare)
                        else:
                            n, found = cylinder_face(buf, n, maxcon, v0, v1, v2, face, pos2, rot, size, margin,
                                                     merge2)
                    if found == 0 and nrm[2] > fp(_WALL):
                        n = keep(buf, n, maxcon, dist, pos, nrm, merge2, True)
        return n

    @ti.func
    def cylinder_face(buf: ti.template(), n, maxcon, v0, v1, v2, face, pos2, rot, size, margin, merge2):
        """A cylinder's contacts through a prism's top face, as against a plane: the rim
        points that lie over the triangle (EPA's points on a flat face are arbitrary, and
        change from step to step enough to rattle a resting cylinder). Returns the count
        and how many points were over the triangle."""
        dist, points = nph.cylinder_rim(face, face.dot(pos2 - v0), pos2, rot, size, margin)
        found = 0
        for k in ti.static(range(4)):
            p = vec3(points[k, 0], points[k, 1], points[k, 2])
            if dist[k] <= margin and over_face(p, v0, v1, v2, face):
                found += 1
                n = keep(buf, n, maxcon, dist[k], p - face * (dist[k] / 2), face, merge2, True)
        return n, found

    @ti.func
    def ellipsoid_face(dist, pos, nrm, v0, v1, v2, face, bare):
        """An ellipsoid's contact through a prism's top face, exact: its deepest point
        below the face's plane, where EPA's (within its tolerance) would tilt the normal
        and move the point enough to rock a resting ellipsoid."""
        deepest = cvx.support(bare, -face)
        if over_face(deepest, v0, v1, v2, face):
            dist = face.dot(deepest - v0)
            pos = deepest - face * (dist / 2)
            nrm = face
        return dist, pos, nrm

    # --- sphere and capsule: a segment a-b of radius rad --------------------------------
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

    # --- box --------------------------------------------------------------------------------
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

    # --- entry ------------------------------------------------------------------------------
    @ti.func
    def hfield_collide(w, con_f: ti.template(), con_n: ti.template(), geom_f: ti.template(), mg, base, nrow, ncol,
                       hsize, pos1, mat1, type2, pos2, mat2, size2, margin, maxcon):
        """Contacts of geom2 (any primitive; ellipsoids and cylinders where compiled
        with ``convex``) with the hfield geom1 whose samples
        start at flat index ``base`` of geom_f and whose size (4) is ``hsize``."""
        pos = mat1.transpose() @ (pos2 - pos1)
        rot = mat1.transpose() @ mat2
        axis = vec3(rot[0, 2], rot[1, 2], rot[2, 2])
        half = vec3(size2[0])  # half-extents of geom2's box in the hfield frame
        if type2 == GEOM_CAPSULE:
            half = ti.abs(axis) * size2[1] + size2[0]
        elif type2 == GEOM_BOX:
            half = ti.abs(rot) @ size2
        elif type2 == GEOM_ELLIPSOID:
            for i in ti.static(range(3)):
                half[i] = vec3(rot[i, 0] * size2[0], rot[i, 1] * size2[1], rot[i, 2] * size2[2]).norm()
        elif type2 == GEOM_CYLINDER:
            for i in ti.static(range(3)):
                half[i] = ti.abs(axis[i]) * size2[1] + size2[0] * ti.sqrt(ti.max(fp(0.0), 1 - axis[i] * axis[i]))
        lo = pos - half - margin
        hi = pos + half + margin
        if not (lo[0] > hsize[0] or hi[0] < -hsize[0] or lo[1] > hsize[1] or hi[1] < -hsize[1]
                or lo[2] > hsize[2] or hi[2] < -hsize[3]):
            dx = 2 * hsize[0] / (ncol - 1)
            dy = 2 * hsize[1] / (nrow - 1)
            c0 = ti.max(0, ti.cast(ti.floor((lo[0] + hsize[0]) / dx), ti.i32))
            c1 = ti.min(ncol - 1, ti.cast(ti.ceil((hi[0] + hsize[0]) / dx), ti.i32))
            r0 = ti.max(0, ti.cast(ti.floor((lo[1] + hsize[1]) / dy), ti.i32))
            r1 = ti.min(nrow - 1, ti.cast(ti.ceil((hi[1] + hsize[1]) / dy), ti.i32))
            merge = fp(_MERGE) * ti.min(dx, dy)
            merge2 = merge * merge
            zmin = pos[2] - half[2]
            buf = buf_t(0)
            n = 0
            if type2 == GEOM_BOX:
                n = box_faces(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, pos, rot, size2,
                              zmin, margin, merge2)
                n = box_edges(buf, n, maxcon, geom_f, mg, base, nrow, ncol, hsize, dx, dy, r0, r1, c0, c1, pos, rot,
                              size2, margin, merge2)
            elif type2 == GEOM_SPHERE or type2 == GEOM_CAPSULE:
                a = pos
                b = pos
                if type2 == GEOM_CAPSULE:
                    a = pos + axis * size2[1]
                    b = pos - axis * size2[1]
                n = segment_faces(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, a, b,
                                  size2[0], zmin, margin, merge2)
                n = segment_edges(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, a, b,
                                  size2[0], margin, merge2)
            elif ti.static(convex):
                n = convex_prisms(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, type2, pos,
                                  rot, size2, zmin, margin, merge2)
            for k in range(n):
                p = vec3(buf[k, 1], buf[k, 2], buf[k, 3])
                nrm = vec3(buf[k, 4], buf[k, 5], buf[k, 6])
                nph.emit(w, con_f, con_n, buf[k, 0], mat1 @ p + pos1, mat1 @ nrm, vec3(0))

    return types.SimpleNamespace(collide=hfield_collide)


__all__ = ["HF_MAXCON", "HF_MAXCON_CONVEX", "make_hfield"]
