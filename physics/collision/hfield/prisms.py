"""Ellipsoids, cylinders and meshes against a height field: the prism under each triangle,
by the convex solver (GJK and EPA, physics/collision/convex/), as MuJoCo collides every
geom. A contact through a prism's top face is made exact (the ellipsoid's deepest point,
the cylinder's rim points as against a plane, a mesh's hull vertices over the triangle as
a box's corners); one whose normal leaves the prism through a wall is left out (the walls
inside the grid are not terrain).

A mesh goes the prisms' way rather than the box's (its vertices against the triangles and
the grid's ridges against it), as MuJoCo's does and as the other shapes without an exact
routine do: its hull is any convex shape, and a ridge under a hull face meets the face
somewhere GJK and EPA find, where a box's clip against its slabs has no hull equivalent.
"""


import functools
import types

from ...model import GEOM_ELLIPSOID, GEOM_MESH
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..convex import make_convex
from ..convex.support import make_support
from ..narrowphase import make_narrowphase
from .candidates import make_candidates
from .grid import make_grid

_WALL = 1e-3  # a prism contact whose normal's up component is below this leaves through a wall


@functools.cache
def make_prisms(fp, mesh: bool = False):
    """The prisms' routines; ``mesh`` compiles in meshes (only models with a mesh on a
    height field need them)."""
    m = make_math(fp)
    nph = make_narrowphase(fp)
    cvx = make_convex(fp)
    sup = make_support(fp)
    vec3 = m.vec3
    g = make_grid(fp)
    nth_triangle, face_normal, over_face = g.nth_triangle, g.face_normal, g.over_face
    keep = make_candidates(fp).keep

    @ti.func
    def convex_prisms(buf: ti.template(), n, maxcon, geom_f: ti.template(), mg, base, ncol, hsize, dx, dy, r0, r1,
                      c0, c1, type2, pos2, rot, size, zmin, margin, merge2, hull2):
        half = fp(0.5) * margin
        obj = cvx.make_obj(type2, pos2, rot, size, size[0], half)
        bare = cvx.make_obj(type2, pos2, rot, size, size[0], fp(0.0))  # not grown: for exact face contacts
        if ti.static(mesh):
            obj = cvx.with_hull(obj, hull2)
            bare = cvx.with_hull(bare, hull2)
        for item in range(2 * (r1 - r0) * (c1 - c0)):
            v0, v1, v2 = nth_triangle(geom_f, mg, base, ncol, hsize, dx, dy, r0, c0, c1, item)
            if ti.max(ti.max(v0[2], v1[2]), v2[2]) >= zmin - margin:
                prism = cvx.make_prism(v0, v1, v2, -hsize[3], half)
                dist, x1, x2 = cvx.overlap(prism, obj, geom_f)
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
                            n, found = flat_face(buf, n, maxcon, v0, v1, v2, face, type2, bare, geom_f, pos2, rot,
                                                 size, margin, merge2)
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

    @ti.func
    def flat_face(buf: ti.template(), n, maxcon, v0, v1, v2, face, type2, bare, tab: ti.template(), pos2, rot, size,
                  margin, merge2):
        """A cylinder's or (where compiled in) a mesh's contacts through a prism's top face."""
        found = 0
        if ti.static(mesh):
            if type2 == GEOM_MESH:
                n, found = mesh_face(buf, n, maxcon, v0, v1, v2, face, bare, tab, margin, merge2)
            else:
                n, found = cylinder_face(buf, n, maxcon, v0, v1, v2, face, pos2, rot, size, margin, merge2)
        else:
            n, found = cylinder_face(buf, n, maxcon, v0, v1, v2, face, pos2, rot, size, margin, merge2)
        return n, found

    @ti.func
    def mesh_face(buf: ti.template(), n, maxcon, v0, v1, v2, face, bare, tab: ti.template(), margin, merge2):
        """A mesh's contacts through a prism's top face, as a box's corners: the hull
        vertices over the triangle within the margin of its plane (EPA's one point would
        wander over a flat hull face lying on the triangle). Returns the count and how
        many vertices were over the triangle."""
        found = 0
        for i in range(ti.cast(bare[6, 1], ti.i32)):
            p = vertex(bare, tab, i)
            dist = face.dot(p - v0)
            if dist <= margin and over_face(p, v0, v1, v2, face):
                found += 1
                n = keep(buf, n, maxcon, dist, p - face * (dist / 2), face, merge2, True)
        return n, found

    @ti.func
    def vertex(o, tab: ti.template(), i):
        """Hull vertex i of a mesh object, in the object's frame's parent (the hfield's)."""
        return sup.obj_mat(o) @ sup.hull_vertex(o, tab, i) + vec3(o[3, 0], o[3, 1], o[3, 2])

    @ti.func
    def hull_half(rot, hull, tab: ti.template()):
        """Half extents, about its centre, of a mesh's hull turned by rot (the geom in the
        hfield's frame): the farthest hull vertex along each axis, either way."""
        o = sup.with_hull(sup.make_obj(GEOM_MESH, vec3(0), rot, vec3(0), fp(0.0), fp(0.0)), hull)
        half = vec3(0)
        for i in range(ti.cast(hull[1], ti.i32)):
            half = ti.max(half, ti.abs(rot @ sup.hull_vertex(o, tab, i)))
        return half

    return types.SimpleNamespace(convex_prisms=convex_prisms, hull_half=hull_half)
