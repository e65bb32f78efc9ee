"""Pairs of capsules, cylinders, boxes and meshes with multi-CCD on, as MuJoCo 4 collides
them: GJK and EPA on the two (grown by half the margin each) find the contact, and the face
the solver ends on says which features of the geoms touch (MuJoCo's multicontact in
engine_collision_gjk.c). Where a face of one lies flat against a face of the other (normals
within mjFACE_TOL), or an edge of one lies flat on a face of the other (within mjEDGE_TOL),
the face or edge is clipped against the face's side planes and each vertex left within the
margin of the face becomes a contact, up to four: past four, the four that bound the most
area (MuJoCo's quadrilateral search). Otherwise the solver's one contact stands. (Two
boxes, and a capsule and a box, have analytic routines of their own.)

Features: each of the final face's three points on a geom is a support point, so a box
corner (the signs of its coordinates), a hull vertex (the nearest one), a cylinder's cap (0
top, 1 bottom) or, on a capsule, nothing; one, two or three distinct ones make a vertex, an
edge or a face, whose candidate faces are the hull polygons around them (polygons.py), the
box's sides, or the cap all three lie on (a regular 16-gon, its first corner on the local x
axis); a capsule has none. Edges: a box's or hull's from the vertex; a cylinder's side line
from its first point's rim point to the other cap; a capsule's, the segment through its
witness point parallel to its axis. Faces are tried first; then the edges of geom1's
feature, where it is no bigger than geom2's or geom1 has no faces, on geom2's faces; then
geom2's edges on geom1's faces. Where two edges or faces qualify, the first in the
polygons' order wins. Where a capsule's core segment does not penetrate, GJK's last simplex
stands in for EPA's face.

A clipped vertex v of the subject (geom2's face, or an edge) lies over the clipping face
(geom1's, or geom2's for an edge of geom1); the contact is at v's projection w on that
face's plane, at the distance from w to v along the contact normal (the subject face's
normal, or the clipping face's for an edge), halfway along it. This is what the mujoco
package 4.0 computes (its polygon search measures true quadrilateral areas, and it looks at
geom2's edges where geom1's do not lie flat); tests/test_mesh_multiccd.py checks it.

The geoms' types are run-time values, not compile-time ones, so that a kernel with several
of these pairs inlines this path (EPA's included) once: the per-type routines are small
next to it.
"""

import functools
import math
import types

from ...model import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_MESH
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import make_narrowphase
from .common import BIG, MINVAL, make_common
from .penetration import make_penetration
from .support import make_support

FACE_TOL = 0.996  # mjFACE_TOL: faces this anti-parallel lie flat against each other
EDGE_TOL = 0.0888  # mjEDGE_TOL: an edge this perpendicular to a face's normal lies flat on it
NDEG = 64  # candidate faces of a feature kept (the polygons around a hull vertex)
NCLIP = 128  # vertices of a face or a clipped polygon; where one would have more, EPA's contact stands
MAX_CONTACTS = 4
CAP_SIDES = 16  # a cylinder's cap clips as this regular polygon, its first corner on the local x axis
_CAP_COS = tuple(math.cos(2 * math.pi * k / CAP_SIDES) for k in range(CAP_SIDES))
_CAP_SIN = tuple(math.sin(2 * math.pi * k / CAP_SIDES) for k in range(CAP_SIDES))

# the corners of the box's sides in the order MuJoCo clips with (boxFace), as corner
# indices (bit 0: +x, bit 1: +y, bit 2: +z)
_BOX_FACES = ((7, 3, 1, 5), (2, 6, 4, 0), (2, 3, 7, 6), (4, 5, 1, 0), (6, 7, 5, 4), (3, 2, 0, 1))


@functools.cache
def make_faces(fp):
    m = make_math(fp)
    cm = make_common(fp)
    sup = make_support(fp)
    nph = make_narrowphase(fp)
    vec3 = m.vec3
    ivec3 = cm.ivec3
    row, set_row, normalize = cm.row, cm.set_row, cm.normalize
    make_obj, with_hull, hull_vertex, obj_mat = sup.make_obj, sup.with_hull, sup.hull_vertex, sup.obj_mat
    penetration_face = make_penetration(fp).penetration_face
    ids_t = ti.types.vector(NDEG, ti.i32)
    poly_t = ti.types.matrix(2 * NCLIP, 3, fp)
    face_t = ti.types.matrix(NCLIP, 3, fp)

    # --- a mesh's polygons in the geom table ---------------------------------------------
    @ti.func
    def entry(o, tab: ti.template(), k):
        """Entry k of the flat table, in the model row of o's hull."""
        width = tab.shape[2]
        return tab[ti.cast(o[6, 2], ti.i32), k // width, k % width]

    @ti.func
    def int_entry(o, tab: ti.template(), k):
        return ti.cast(entry(o, tab, k), ti.i32)

    @ti.func
    def section(o, tab: ti.template()):
        """Where a mesh's polygons start (physics/collision/driver.py, _pack_hulls)."""
        base = ti.cast(o[6, 0], ti.i32)
        return base + int_entry(o, tab, base + 4 * ti.cast(o[6, 1], ti.i32))

    @ti.func
    def polygon(o, tab: ti.template(), pid):
        """Where polygon pid's record starts: its normal (3), vertex count, vertices."""
        sec = section(o, tab)
        return sec + int_entry(o, tab, sec + 1 + ti.cast(o[6, 1], ti.i32) + pid)

    @ti.func
    def around(o, tab: ti.template(), i):
        """Where hull vertex i's list of polygons (ended by -1) starts."""
        sec = section(o, tab)
        return sec + int_entry(o, tab, sec + 1 + i)

    # --- features -----------------------------------------------------------------------
    @ti.func
    def in_world(o, local):
        return obj_mat(o) @ local + row(o, 3)

    @ti.func
    def box_corner(o, idx):
        """A box corner (bits of idx: x, y, z positive) in the box's frame."""
        size = row(o, 4)
        return vec3(size[0] if idx & 1 else -size[0], size[1] if idx & 2 else -size[1],
                    size[2] if idx & 4 else -size[2])

    @ti.func
    def vertex_index(gtype, o, tab: ti.template(), p):
        """What support point p is: a box corner (bits: x, y, z positive), a hull vertex, the
        cylinder cap it lies on (0 top, 1 bottom) or, on a capsule, nothing (-1: a capsule's
        feature is the segment through its witness point)."""
        local = obj_mat(o).transpose() @ (p - row(o, 3))
        idx = -1
        if gtype == GEOM_BOX:
            idx = (1 if local[0] > 0 else 0) + (2 if local[1] > 0 else 0) + (4 if local[2] > 0 else 0)
        elif gtype == GEOM_CYLINDER:
            idx = 0 if local[2] > 0 else 1
        elif gtype == GEOM_MESH:
            best = fp(BIG)
            for i in range(ti.cast(o[6, 1], ti.i32)):
                d = hull_vertex(o, tab, i) - local
                if d.dot(d) < best:
                    best = d.dot(d)
                    idx = i
        return idx

    @ti.func
    def vertex_at(gtype, o, tab: ti.template(), idx):
        """A box corner's or hull vertex's place in the world."""
        local = vec3(0)
        if gtype == GEOM_BOX:
            local = box_corner(o, idx)
        else:  # a branch, not a select: a box has no hull to read
            local = hull_vertex(o, tab, idx)
        return in_world(o, local)

    @ti.func
    def feature(gtype, o, tab: ti.template(), pts):
        """The vertices of EPA's face's points on a geom, as MuJoCo's simplexDim: a vertex
        (1), an edge (2: the first two distinct) or a face (3)."""
        idx = ivec3(0)
        for r in ti.static(range(3)):
            idx[r] = vertex_index(gtype, o, tab, row(pts, r))
        dim = 3
        if idx[0] == idx[1]:
            dim = 2
            if idx[0] == idx[2]:
                dim = 1
            else:
                idx[1] = idx[2]
        elif idx[2] == idx[0] or idx[2] == idx[1]:
            dim = 2
        return idx, dim

    @ti.func
    def box_faces(o, dim, idx, direction):
        """A box feature's candidate sides (0 +x, 1 -x, 2 +y, 3 -y, 4 +z, 5 -z), as
        boxNormals: a corner's three, an edge's two, a face's one; where the corners share
        no side (a diagonal), the side facing ``direction`` within FACE_TOL, if any."""
        ids = ids_t(-1)
        count = 0
        if dim == 1:
            for a in ti.static(range(3)):
                ids[a] = 2 * a + (0 if idx[0] & (1 << a) else 1)
            count = 3
        else:
            for a in ti.static(range(3)):
                every, none = True, True
                for r in ti.static(range(3)):
                    if r < dim:
                        if idx[r] & (1 << a):
                            none = False
                        else:
                            every = False
                if every or none:
                    ids[count] = 2 * a + (0 if every else 1)
                    count += 1
            if count != 4 - dim:
                count = 0
                local = normalize(obj_mat(o).transpose() @ direction)
                for i in ti.static(range(6)):
                    if count == 0 and (local[i // 2] if i % 2 == 0 else -local[i // 2]) > fp(FACE_TOL):
                        ids[0] = i
                        count = 1
        return ids, count

    @ti.func
    def shared(o, tab: ti.template(), a, b, most):
        """Up to ``most`` polygons around hull vertex a that are also around b, in a's order."""
        ids = ids_t(-1)
        count = 0
        la = around(o, tab, a)
        lb = around(o, tab, b)
        for i in range(NDEG):
            pa = int_entry(o, tab, la + i)
            if pa < 0 or count >= most:
                break
            for j in range(NDEG):
                pb = int_entry(o, tab, lb + j)
                if pb < 0:
                    break
                if pa == pb:
                    ids[count] = pa
                    count += 1
                    break
        return ids, count

    @ti.func
    def mesh_faces(o, tab: ti.template(), dim, idx):
        """A hull feature's candidate polygons, as meshNormals: all around a vertex, the (up
        to two) around an edge, the one around a face's three vertices."""
        ids = ids_t(-1)
        count = 0
        if dim == 1:
            start = around(o, tab, idx[0])
            for i in range(NDEG):
                p = int_entry(o, tab, start + i)
                if p < 0:
                    break
                ids[i] = p
                count += 1
        else:
            ids, count = shared(o, tab, idx[0], idx[1], 2)
            if dim == 3:
                keep = -1
                last = around(o, tab, idx[2])
                for i in range(2):
                    if keep < 0 and i < count:
                        for j in range(NDEG):
                            p = int_entry(o, tab, last + j)
                            if p < 0:
                                break
                            if p == ids[i]:
                                keep = p
                count = 0
                if keep >= 0:
                    ids[0] = keep
                    count = 1
        return ids, count

    @ti.func
    def faces_of(gtype, o, tab: ti.template(), dim, idx, direction):
        """A feature's candidate faces: a box's sides, a hull's polygons, the cap of a
        cylinder's points that all lie on one (a capsule has none)."""
        ids = ids_t(-1)
        count = 0
        if gtype == GEOM_BOX:
            ids, count = box_faces(o, dim, idx, direction)
        elif gtype == GEOM_MESH:
            ids, count = mesh_faces(o, tab, dim, idx)
        elif gtype == GEOM_CYLINDER and dim == 1:
            ids[0] = idx[0]
            count = 1
        return ids, count

    @ti.func
    def face_normal(gtype, o, tab: ti.template(), fid):
        local = vec3(0)
        if gtype == GEOM_BOX:
            local[fid // 2] = fp(1.0) if fid % 2 == 0 else fp(-1.0)
        elif gtype == GEOM_CYLINDER:
            local[2] = fp(1.0) if fid == 0 else fp(-1.0)
        else:
            rec = polygon(o, tab, fid)
            local = vec3(entry(o, tab, rec), entry(o, tab, rec + 1), entry(o, tab, rec + 2))
        return obj_mat(o) @ local

    @ti.func
    def box_side(fid):
        """The corners of box side fid, as _BOX_FACES."""
        corners = ti.Vector([0, 0, 0, 0])
        for f in ti.static(range(6)):
            if fid == f:
                corners = ti.Vector(_BOX_FACES[f])
        return corners

    @ti.func
    def load_face(gtype, o, tab: ti.template(), fid, out: ti.template()):
        """A face's vertices into out's rows, in the order MuJoCo clips with (boxFace;
        meshFace: the polygon's backwards; a cap's polygon clockwise about its outward
        normal); returns their count (-1: more than fit)."""
        n = 4
        if gtype == GEOM_BOX:
            corners = box_side(fid)
            for k in ti.static(range(4)):
                set_row(out, k, in_world(o, box_corner(o, corners[k])))
        elif gtype == GEOM_CYLINDER:
            n = CAP_SIDES
            size = row(o, 4)
            sgn = fp(1.0) if fid == 0 else fp(-1.0)
            for k in ti.static(range(CAP_SIDES)):
                set_row(out, k, in_world(o, vec3(size[0] * _CAP_COS[k], -sgn * size[0] * _CAP_SIN[k],
                                                 sgn * size[1])))
        else:
            rec = polygon(o, tab, fid)
            n = int_entry(o, tab, rec + 3)
            if n > NCLIP:
                n = -1
            else:
                for k in range(n):
                    set_row(out, k, in_world(o, hull_vertex(o, tab, int_entry(o, tab, rec + 4 + n - 1 - k))))
        return n

    @ti.func
    def edge_count(gtype, o, tab: ti.template(), dim, idx):
        """Edges of a vertex or edge feature (boxEdgeNormals, meshEdgeNormals): the edge
        itself, or those from the vertex: a box's three, a hull vertex's one per polygon
        around it (to the vertex before it in the polygon); a cylinder's or capsule's one
        side line."""
        n = 1
        if dim == 1:
            if gtype == GEOM_BOX:
                n = 3
            elif gtype == GEOM_MESH:
                _, n = mesh_faces(o, tab, 1, idx)
        return n

    @ti.func
    def edge_start(gtype, o, tab: ti.template(), idx, pts, witness):
        """Where a feature's edges start: a box corner or hull vertex; on a cylinder, the
        rim point of its first support point (on its cap, the margin's growth taken off);
        on a capsule, the witness point moved along the axis to the segment's bottom end."""
        start = vec3(0)
        axis = vec3(o[0, 2], o[1, 2], o[2, 2])
        size = row(o, 4)
        if gtype == GEOM_CYLINDER:
            start = row(pts, 0)
            if o[5, 2] > 0:
                local = obj_mat(o).transpose() @ (start - row(o, 3))
                r2 = local[0] * local[0] + local[1] * local[1]
                scl = size[0] / ti.sqrt(r2) if r2 >= fp(MINVAL * MINVAL) else fp(0.0)
                start = in_world(o, vec3(scl * local[0], scl * local[1], size[1] if idx[0] == 0 else -size[1]))
        elif gtype == GEOM_CAPSULE:
            start = witness - axis * ((witness - row(o, 3)).dot(axis) + size[1])
        else:
            start = vertex_at(gtype, o, tab, idx[0])
        return start

    @ti.func
    def edge_end(gtype, o, tab: ti.template(), dim, idx, k, start):
        """The far end of edge k of a vertex or edge feature (from ``start``); a cylinder's
        side line runs to the other cap, a capsule's the segment's length."""
        end = vec3(0)
        axis = vec3(o[0, 2], o[1, 2], o[2, 2])
        size = row(o, 4)
        if gtype == GEOM_CYLINDER:
            end = start + axis * (fp(2.0) * size[1] * (fp(1.0) if idx[0] != 0 else fp(-1.0)))
        elif gtype == GEOM_CAPSULE:
            end = start + axis * (fp(2.0) * size[1])
        elif dim == 2:
            end = vertex_at(gtype, o, tab, idx[1])
        elif gtype == GEOM_BOX:
            end = in_world(o, box_corner(o, idx[0] ^ (1 << k)))
        else:
            rec = polygon(o, tab, int_entry(o, tab, around(o, tab, idx[0]) + k))
            n = int_entry(o, tab, rec + 3)
            for j in range(n):
                if int_entry(o, tab, rec + 4 + j) == idx[0]:
                    end = in_world(o, hull_vertex(o, tab, int_entry(o, tab, rec + 4 + (j + n - 1) % n)))
        return end

    # --- which features lie flat on each other --------------------------------------------
    @ti.func
    def aligned_faces(type1, o1, ids1, n1, type2, o2, ids2, n2, tab: ti.template()):
        """The first faces (i of geom1, j of geom2) whose normals face each other."""
        fi, fj = -1, -1
        for i in range(n1):
            if fi < 0:
                a = face_normal(type1, o1, tab, ids1[i])
                for j in range(n2):
                    if fi < 0 and a.dot(face_normal(type2, o2, tab, ids2[j])) < -fp(FACE_TOL):
                        fi, fj = i, j
        return fi, fj

    @ti.func
    def edge_on_face(etype, eo, edim, eidx, start, ftype, fo, fids, nf, toward, tab: ti.template()):
        """The first (edge, face) of a vertex or edge feature (its edges from ``start``) and
        a geom's faces with the edge perpendicular to the face's normal, of the faces that
        turn ``toward`` the edge's geom (alignedFaceEdge)."""
        fe, ff = -1, -1
        ne = edge_count(etype, eo, tab, edim, eidx)
        for i in range(nf):
            nrm = face_normal(ftype, fo, tab, fids[i])
            if ff < 0 and nrm.dot(toward) > fp(MINVAL):
                for j in range(ne):
                    direction = normalize(edge_end(etype, eo, tab, edim, eidx, j, start) - start)
                    if ff < 0 and ti.abs(direction.dot(nrm)) < fp(EDGE_TOL):
                        fe, ff = j, i
        return fe, ff

    # --- clipping -----------------------------------------------------------------------
    @ti.func
    def clip(poly: ti.template(), npoly, face: ti.template(), nface, nrm):
        """Clip the polygon in poly's first half by the side planes of the face in face's
        rows (through its edges, along nrm), as polygonClip; the halves swap at each
        side. Returns where the result starts and its vertex count (-1: it did not fit)."""
        src = 0
        for e in range(nface):
            if npoly > 0:
                a = row(face, e)
                pn = normalize((row(face, (e + 1) % nface) - a).cross(nrm))
                pd = pn.dot(a)
                dst = NCLIP - src
                nout = 0
                for i in range(npoly):
                    p = row(poly, src + i)
                    q = row(poly, src + (i + 1) % npoly)
                    in1 = (p - a).dot(pn) > -fp(MINVAL)
                    in2 = (q - a).dot(pn) > -fp(MINVAL)
                    if in1 != in2:
                        t = pn.dot(q - p)
                        if t != 0:
                            s = (pd - pn.dot(p)) / t
                            if s >= 0 and s <= 1:
                                if nout < NCLIP:
                                    set_row(poly, dst + nout, p + (q - p) * s)
                                nout += 1
                    if in2:
                        if nout < NCLIP:
                            set_row(poly, dst + nout, q)
                        nout += 1
                npoly = nout if nout <= NCLIP else -1
                src = dst
        return src, npoly

    @ti.func
    def area4(poly: ti.template(), src, a, b, c, d):
        """The area of the quadrilateral of vertices a b c d."""
        return fp(0.5) * (row(poly, src + c) - row(poly, src + a)).cross(
            row(poly, src + d) - row(poly, src + b)).norm()

    @ti.func
    def largest_quad(poly: ti.template(), src, n):
        """Four of a convex polygon's vertices bounding a large area, by MuJoCo's search
        (polygonQuad) with true areas."""
        b, c, d = 1, 2, 3
        best = ti.Vector([0, 1, 2, 3])
        most = area4(poly, src, 0, 1, 2, 3)
        for a in range(n):
            while True:
                s = area4(poly, src, a, b, c, (d + 1) % n)
                if s <= most:
                    break
                most = s
                d = (d + 1) % n
                best = ti.Vector([a, b, c, d])
                while True:
                    s = area4(poly, src, a, b, (c + 1) % n, d)
                    if s <= most:
                        break
                    most = s
                    c = (c + 1) % n
                    best = ti.Vector([a, b, c, d])
                while True:
                    s = area4(poly, src, a, (b + 1) % n, c, d)
                    if s <= most:
                        break
                    most = s
                    b = (b + 1) % n
                    best = ti.Vector([a, b, c, d])
            if b == a:
                b = (b + 1) % n
                if c == b:
                    c = (c + 1) % n
                    if d == c:
                        d = (d + 1) % n
        return best

    @ti.func
    def farthest_two(poly: ti.template(), src, n):
        """The two most distant vertices (an edge clipped into more than two points)."""
        best = ti.Vector([0, 1, 0, 0])
        most = fp(0.0)
        for i in range(n):
            for j in range(i + 1, n):
                d = row(poly, src + j) - row(poly, src + i)
                if d.dot(d) > most:
                    most = d.dot(d)
                    best = ti.Vector([i, j, 0, 0])
        return best

    @ti.func
    def emit_clipped(w, con_f: ti.template(), con_n: ti.template(), poly: ti.template(), src, n, edge, corner,
                     nc, normal, subject_on_geom1, margin):
        """The clipped vertices within the margin of the clipping face (its first corner,
        its normal nc) as contacts along normal (geom1 to geom2); returns how many."""
        kept = 0
        for i in range(n):  # vertices beyond the margin go; the order stays
            p = row(poly, src + i)
            if (p - corner).dot(nc) <= margin:
                set_row(poly, src + kept, p)
                kept += 1
        pick = ti.Vector([0, 1, 2, 3])
        count = kept
        if kept > MAX_CONTACTS:
            pick = largest_quad(poly, src, kept)
            count = MAX_CONTACTS
        elif edge and kept > 2:
            pick = farthest_two(poly, src, kept)
            count = 2
        for k in range(count):
            v = row(poly, src + pick[k])
            on_face = v - nc * (v - corner).dot(nc)
            x1 = on_face
            dist = (v - on_face).dot(normal)
            if subject_on_geom1:
                x1 = v
                dist = -dist
            nph.emit(w, con_f, con_n, dist, x1 + normal * (dist / 2), normal, vec3(0))
        return count

    @ti.func
    def clip_contacts(w, con_f: ti.template(), con_n: ti.template(), type1, o1, type2, o2, tab: ti.template(), f1,
                      f2, x1, x2, margin):
        """MuJoCo's multi-contact from the solver's final face (its points f1 on geom1, f2
        on geom2): the contacts of the features that lie flat on each other, or none."""
        idx1, dim1 = feature(type1, o1, tab, f1)
        idx2, dim2 = feature(type2, o2, tab, f2)
        ids1, n1 = faces_of(type1, o1, tab, dim1, idx1, x1 - x2)
        ids2, n2 = faces_of(type2, o2, tab, dim2, idx2, x2 - x1)
        poly = poly_t(0)
        npoly = 0
        kind = 0  # 1: face on face, 2: an edge of geom1 on a face of geom2, 3: the converse
        fid = 0  # the clipping face: geom2's for kind 2, else geom1's
        normal = vec3(0)
        fi, fj = aligned_faces(type1, o1, ids1, n1, type2, o2, ids2, n2, tab)
        if fi >= 0:
            kind = 1
            fid = ids1[fi]
            normal = -face_normal(type2, o2, tab, ids2[fj])
            npoly = load_face(type2, o2, tab, ids2[fj], poly)
        else:
            e = -1
            if dim1 < 3 and (dim1 <= dim2 or n1 == 0):
                start = edge_start(type1, o1, tab, idx1, f1, x1 - normalize(x1 - x2) * o1[5, 2])
                e, f = edge_on_face(type1, o1, dim1, idx1, start, type2, o2, ids2, n2, x2 - x1, tab)
                if e >= 0:
                    kind = 2
                    fid = ids2[f]
                    normal = -face_normal(type2, o2, tab, fid)
                    set_row(poly, 0, start)
                    set_row(poly, 1, edge_end(type1, o1, tab, dim1, idx1, e, start))
            if e < 0 and dim2 < 3:
                start = edge_start(type2, o2, tab, idx2, f2, x2 + normalize(x1 - x2) * o2[5, 2])
                e, f = edge_on_face(type2, o2, dim2, idx2, start, type1, o1, ids1, n1, x1 - x2, tab)
                if e >= 0:
                    kind = 3
                    fid = ids1[f]
                    normal = face_normal(type1, o1, tab, fid)
                    set_row(poly, 0, start)
                    set_row(poly, 1, edge_end(type2, o2, tab, dim2, idx2, e, start))
            npoly = 2
        count = 0
        if kind > 0 and npoly > 0:
            face = face_t(0)
            nface = 0
            nc = vec3(0)
            if kind == 2:
                nface = load_face(type2, o2, tab, fid, face)
                nc = face_normal(type2, o2, tab, fid)
            else:
                nface = load_face(type1, o1, tab, fid, face)
                nc = face_normal(type1, o1, tab, fid)
            if nface > 0:
                src, n = clip(poly, npoly, face, nface, nc)
                if n > 0:
                    count = emit_clipped(w, con_f, con_n, poly, src, n, kind > 1, row(face, 0), nc, normal,
                                         kind == 2, margin)
        return count

    @ti.func
    def collide(w, con_f: ti.template(), con_n: ti.template(), type1, pos1, mat1, size1, type2, pos2, mat2, size2,
                margin, hull1, hull2, tab: ti.template(), multi):
        """Contacts of two convex geoms, each grown by half the margin; returns how many.
        With ``multi`` (each geom a capsule, cylinder, box or mesh, not a capsule and a
        box: those have their own routine) the clipped features' where they lie flat on
        each other, else (and without it) the solver's one, as convex.contact's: a kernel
        with both kinds of pair then inlines the solvers once."""
        dist, x1, x2, f1, f2 = penetration_face(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1,
                                                hull2, tab)
        count = 0
        if dist < 0:
            if multi:
                half = fp(0.5) * margin
                o1 = with_hull(make_obj(type1, pos1, mat1, size1, size1[0], half), hull1)
                o2 = with_hull(make_obj(type2, pos2, mat2, size2, size2[0], half), hull2)
                count = clip_contacts(w, con_f, con_n, type1, o1, type2, o2, tab, f1, f2, x1, x2, margin)
            if count == 0:
                nph.emit(w, con_f, con_n, margin + dist, (x1 + x2) * fp(0.5), normalize(x1 - x2), vec3(0))
                count = 1
        return count

    return types.SimpleNamespace(collide=collide)
