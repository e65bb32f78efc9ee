"""Support functions: the point of a geom farthest along a direction, which is all GJK and
EPA know of a shape (MuJoCo's mjc_support and the per-type support routines of
engine_collision_convex.c).

A geom is packed into an object (``make_obj``; a height-field prism by ``make_prism``):
sphere, capsule, ellipsoid, cylinder and box by their MuJoCo sizes, each grown by half the
pair's margin; ``msupport`` is the support point of the Minkowski difference geom1 -
geom2, with the two points it is made of.

A mesh is its convex hull, as MuJoCo collides it: ``with_hull`` records where its hull
vertices lie in the geom table (flat, x y z each, in the geom's frame; rows past the geoms,
physics/collision/driver.py) and the support point is the hull vertex farthest along the
direction, found by visiting them all (MuJoCo climbs the hull's graph to the same vertex).
The table is the ``tab`` argument of every function that reaches a support point.
"""


import functools
import types

from ...model import GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_MESH, GEOM_SPHERE
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .common import BIG, MINVAL, PRISM, make_common


@functools.lru_cache(maxsize=None)
def make_support(fp):
    m = make_math(fp)
    cm = make_common(fp)
    vec3 = m.vec3
    mat3 = m.mat3
    obj_t = cm.obj_t
    row, set_row = cm.row, cm.set_row

    @ti.func
    def make_obj(gtype, pos, mat, size, radius, growth):
        o = obj_t(0)
        for r in ti.static(range(3)):
            for c in ti.static(range(3)):
                o[r, c] = mat[r, c]
            o[3, r] = pos[r]
            o[4, r] = size[r]
        o[5, 0] = fp(gtype)
        o[5, 1] = radius
        o[5, 2] = growth
        return o

    @ti.func
    def make_prism(v0, v1, v2, zbottom, growth):
        """The prism under triangle (v0, v1, v2) down to height zbottom: its top corners
        in rows 6-8, zbottom in row 4, in an identity frame."""
        o = obj_t(0)
        for r in ti.static(range(3)):
            o[r, r] = fp(1.0)
        set_row(o, 6, v0)
        set_row(o, 7, v1)
        set_row(o, 8, v2)
        o[4, 0] = zbottom
        o[5, 0] = fp(float(PRISM))
        o[5, 2] = growth
        return o

    @ti.func
    def with_hull(o, hull):
        """A mesh object: ``hull`` = (flat index of its first hull vertex in the table,
        number of hull vertices, the table's model row), kept in row 6."""
        set_row(o, 6, hull)
        return o

    @ti.func
    def hull_vertex(o, tab: ti.template(), i):
        k = ti.cast(o[6, 0], ti.i32) + 3 * i
        mg = ti.cast(o[6, 2], ti.i32)
        width = tab.shape[2]
        return vec3(tab[mg, k // width, k % width], tab[mg, (k + 1) // width, (k + 1) % width],
                    tab[mg, (k + 2) // width, (k + 2) % width])

    @ti.func
    def hull_support(o, tab: ti.template(), local):
        """The hull vertex farthest along local (the first of equals), and its index."""
        best = vec3(0)
        most = -fp(BIG)
        index = -1
        for i in range(ti.cast(o[6, 1], ti.i32)):
            v = hull_vertex(o, tab, i)
            if v.dot(local) > most:
                most = v.dot(local)
                best = v
                index = i
        return best, index

    @ti.func
    def center(o):
        """The point GJK starts from: the geom's centre, a prism's centroid."""
        c = row(o, 3)
        if ti.cast(o[5, 0], ti.i32) == PRISM:
            c = (row(o, 6) + row(o, 7) + row(o, 8)) / 3
            c[2] = fp(0.5) * (c[2] + o[4, 0])
        return c

    @ti.func
    def prism_support(o, d):
        best = vec3(0)
        most = -fp(BIG)
        for i in ti.static(range(3)):
            v = row(o, 6 + i)
            if d[2] < 0:
                v[2] = o[4, 0]
            if v.dot(d) > most:
                most = v.dot(d)
                best = v
        return best

    @ti.func
    def obj_mat(o):
        return mat3(o[0, 0], o[0, 1], o[0, 2], o[1, 0], o[1, 1], o[1, 2], o[2, 0], o[2, 1], o[2, 2])

    # --- support functions: the geom's point farthest along unit direction d ------------
    @ti.func
    def support(o, d):
        """MuJoCo's geom sizes: sphere (r), capsule (r, half length), ellipsoid (three
        semi-axes), cylinder (r, half height), box (half sizes). Spheres and capsules use
        the radius in row 5 (0 reduces them to their centre or segment); every geom is
        grown by row 5's growth (half the margin)."""
        mat = obj_mat(o)
        size = row(o, 4)
        gtype = ti.cast(o[5, 0], ti.i32)
        radius = o[5, 1]
        local = mat.transpose() @ d
        s = vec3(0)
        if gtype == GEOM_SPHERE:
            s = local * radius
        elif gtype == GEOM_CAPSULE:
            s = local * radius
            s[2] += size[1] if local[2] >= 0 else -size[1]
        elif gtype == GEOM_ELLIPSOID:
            e = vec3(local[0] * size[0], local[1] * size[1], local[2] * size[2])
            n2 = e.dot(e)
            s = vec3(size[0], 0, 0)
            if n2 >= fp(MINVAL * MINVAL):
                e = e / ti.sqrt(n2)
                s = vec3(e[0] * size[0], e[1] * size[1], e[2] * size[2])
        elif gtype == GEOM_CYLINDER:
            n2 = local[0] * local[0] + local[1] * local[1]
            scl = fp(0.0)
            if n2 >= fp(MINVAL * MINVAL):
                scl = size[0] / ti.sqrt(n2)
            s = vec3(scl * local[0], scl * local[1], size[1] if local[2] >= 0 else -size[1])
        elif gtype == PRISM:  # its frame is the world's (identity, origin)
            s = prism_support(o, local)
        else:  # box
            s = vec3(size[0] if local[0] >= 0 else -size[0], size[1] if local[1] >= 0 else -size[1],
                     size[2] if local[2] >= 0 else -size[2])
        return mat @ (s + local * o[5, 2]) + row(o, 3)

    @ti.func
    def support_in(o, d, tab: ti.template()):
        """support, meshes included (their hull vertices are in tab)."""
        out = vec3(0)
        if ti.cast(o[5, 0], ti.i32) == GEOM_MESH:
            mat = obj_mat(o)
            local = mat.transpose() @ d
            s, _ = hull_support(o, tab, local)
            out = mat @ (s + local * o[5, 2]) + row(o, 3)
        else:
            out = support(o, d)
        return out

    @ti.func
    def msupport(o1, o2, tab: ti.template(), d):
        """Support point of the Minkowski difference geom1 - geom2 along d, and its two parts."""
        a = support_in(o1, d, tab)
        b = support_in(o2, -d, tab)
        return a - b, a, b

    return types.SimpleNamespace(make_obj=make_obj, make_prism=make_prism, with_hull=with_hull, center=center,
                                 support=support, support_in=support_in, hull_vertex=hull_vertex,
                                 hull_support=hull_support, msupport=msupport, obj_mat=obj_mat)
