"""A mesh against a plane, as MuJoCo 4 collides them: the hull vertex deepest below the
plane makes the first contact; the others are the vertices within the margin of the hull
face (coplanar triangles make one face) that has that vertex and faces the plane most,
up to four contacts in all. Each contact lies halfway between its vertex and the plane.

This is what the mujoco package (4.0) does on hull faces of three and four vertices (a
tetrahedron, an icosphere, a box: tests/test_meshes.py). On a face of more vertices it keeps
four spread over the face by a rule of its own; here the four are the deepest vertex, the
face vertex farthest from it, and the two farthest on either side of the line through
them.

The hull's data in the geom table (physics/collision/driver.py, _pack_hulls): the n
vertices, then for each vertex where its faces' normals start, then those normals, each
vertex's ended by a zero vector.
"""


import functools
import types

from ...model import GEOM_MESH
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import make_narrowphase
from .common import BIG
from .support import make_support

MAX_CONTACTS = 4
FLAT = 1e-5  # a vertex is on a face within this many bounding radii of its plane


@functools.lru_cache(maxsize=None)
def make_plane_mesh(fp):
    m = make_math(fp)
    nph = make_narrowphase(fp)
    sup = make_support(fp)
    vec3 = m.vec3

    @ti.func
    def table_at(tab: ti.template(), hull, k):
        """Entry k of the flat table, in the model row hull names."""
        width = tab.shape[2]
        return tab[ti.cast(hull[2], ti.i32), k // width, k % width]

    @ti.func
    def facing_face(tab: ti.template(), hull, best, down):
        """The normal of the face around hull vertex best that points most along down."""
        n = ti.cast(hull[1], ti.i32)
        base = ti.cast(hull[0], ti.i32)
        at = base + 4 * n + ti.cast(table_at(tab, hull, base + 3 * n + best), ti.i32)
        face = vec3(0)
        most = -fp(BIG)
        for j in range(n):
            nrm = vec3(table_at(tab, hull, at + 3 * j), table_at(tab, hull, at + 3 * j + 1),
                       table_at(tab, hull, at + 3 * j + 2))
            if nrm.dot(nrm) == 0:
                break
            if nrm.dot(down) > most:
                most = nrm.dot(down)
                face = nrm
        return face

    @ti.func
    def plane_mesh(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, pos2, mat2, rbound2, margin, hull2,
                   tab: ti.template()):
        """Contacts of a plane (geom1, its z axis the normal) and a mesh (geom2, hull2 as
        support.with_hull takes it); returns how many."""
        normal = vec3(mat1[0, 2], mat1[1, 2], mat1[2, 2])
        obj = sup.with_hull(sup.make_obj(GEOM_MESH, pos2, mat2, vec3(0), fp(0.0), fp(0.0)), hull2)
        down = mat2.transpose() @ (-normal)
        deepest, best = sup.hull_support(obj, tab, down)
        dist = normal.dot(mat2 @ deepest + pos2 - pos1)
        count = 0
        if dist <= margin:
            emit_vertex(w, con_f, con_n, deepest, pos1, normal, pos2, mat2)
            count = 1
            face = facing_face(tab, hull2, best, down)
            # a vertex is within the margin when it reaches this far along down
            threshold = normal.dot(pos2 - pos1) - margin
            flat = fp(FLAT) * rbound2
            nface = 0
            far = -1
            farthest = -fp(1.0)
            for i in range(ti.cast(hull2[1], ti.i32)):
                v = sup.hull_vertex(obj, tab, i)
                if i != best and ti.abs(face.dot(v - deepest)) <= flat and down.dot(v) > threshold:
                    nface += 1
                    if (v - deepest).norm() > farthest:
                        farthest = (v - deepest).norm()
                        far = i
            if nface <= MAX_CONTACTS - 1:
                for i in range(ti.cast(hull2[1], ti.i32)):
                    v = sup.hull_vertex(obj, tab, i)
                    if i != best and ti.abs(face.dot(v - deepest)) <= flat and down.dot(v) > threshold:
                        emit_vertex(w, con_f, con_n, v, pos1, normal, pos2, mat2)
                        count += 1
            else:
                count += spread(w, con_f, con_n, obj, tab, deepest, best, far, face, flat, threshold, down, pos1,
                                normal, pos2, mat2)
        return count

    @ti.func
    def spread(w, con_f: ti.template(), con_n: ti.template(), obj, tab: ti.template(), deepest, best, far, face,
               flat, threshold, down, pos1, normal, pos2, mat2):
        """Three more contacts on a face of many vertices: the farthest from the deepest,
        then the farthest on either side of the line through the two."""
        tip = sup.hull_vertex(obj, tab, far)
        emit_vertex(w, con_f, con_n, tip, pos1, normal, pos2, mat2)
        axis = tip - deepest
        left = -1
        right = -1
        most = fp(0.0)
        least = fp(0.0)
        for i in range(ti.cast(obj[6, 1], ti.i32)):
            v = sup.hull_vertex(obj, tab, i)
            if i != best and i != far and ti.abs(face.dot(v - deepest)) <= flat and down.dot(v) > threshold:
                side = axis.cross(v - deepest).dot(face)
                if side > most:
                    most = side
                    left = i
                if side < least:
                    least = side
                    right = i
        added = 1
        for k in ti.static(range(2)):
            i = left if k == 0 else right
            if i >= 0:
                emit_vertex(w, con_f, con_n, sup.hull_vertex(obj, tab, i), pos1, normal, pos2, mat2)
                added += 1
        return added

    @ti.func
    def emit_vertex(w, con_f: ti.template(), con_n: ti.template(), v, pos1, normal, pos2, mat2):
        p = mat2 @ v + pos2
        d = normal.dot(p - pos1)
        nph.emit(w, con_f, con_n, d, p - normal * (fp(0.5) * d), normal, vec3(0))

    return types.SimpleNamespace(plane_mesh=plane_mesh)
