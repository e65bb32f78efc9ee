"""What every part of the convex collider shares: MuJoCo's iteration bound and tolerances
(``ccd_iterations``, ``ccd_tolerance``, mjMINVAL), the sizes of the fixed local arrays
that stand in for MuJoCo's heap-allocated simplex and polytope, and row access to them.

An object (``obj_t``) is a geom as the support functions see it: rows 0-2 its rotation,
row 3 its centre, row 4 its MuJoCo size, row 5 (type, radius, growth); a height-field
prism (type ``PRISM``) keeps its three top corners in rows 6-8.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math

CCD_ITERATIONS = 35  # mjOption.ccd_iterations default
CCD_TOLERANCE = 1e-6  # mjOption.ccd_tolerance default
MINVAL = 1e-15  # mjMINVAL
BIG = 1e30
NVERT = 5 + CCD_ITERATIONS  # polytope vertices: the initial ones and one per EPA iteration
NFACE = 2 * NVERT  # live faces of a closed triangulated polytope: 2 V - 4
NVIS = 32  # faces visible from a new vertex, and horizon edges, at most
PRISM = 100  # not a geom type: the prism under one height-field triangle (physics/collision/hfield/)


@functools.lru_cache(maxsize=None)
def make_common(fp):
    m = make_math(fp)
    vec3 = m.vec3
    vec2 = ti.types.vector(2, fp)
    vec4 = ti.types.vector(4, fp)
    ivec3 = ti.types.vector(3, ti.i32)
    ivec4 = ti.types.vector(4, ti.i32)
    simplex_t = ti.types.matrix(4, 3, fp)
    # rows: mat (3), pos, size, (type, radius, growth); a prism's corners after them
    obj_t = ti.types.matrix(9, 3, fp)
    verts_t = ti.types.matrix(NVERT, 3, fp)
    faces_t = ti.types.matrix(NFACE, 3, ti.i32)
    facev_t = ti.types.matrix(NFACE, 3, fp)
    facef_t = ti.types.vector(NFACE, fp)
    facei_t = ti.types.vector(NFACE, ti.i32)
    list_t = ti.types.vector(NVIS, ti.i32)
    edges_t = ti.types.matrix(NVIS, 2, ti.i32)

    # --- helpers ------------------------------------------------------------------------
    @ti.func
    def row(a: ti.template(), r):
        return vec3(a[r, 0], a[r, 1], a[r, 2])

    @ti.func
    def set_row(a: ti.template(), r, v):
        for c in ti.static(range(3)):
            a[r, c] = v[c]

    @ti.func
    def normalize(v):
        n = v.norm()
        r = vec3(1, 0, 0)
        if n >= fp(MINVAL):
            r = v / n
        return r

    @ti.func
    def det3(a, b, c):
        return a.dot(b.cross(c))

    @ti.func
    def same_sign(a, b):
        return (a > 0 and b > 0) or (a < 0 and b < 0)

    return types.SimpleNamespace(vec2=vec2, vec4=vec4, ivec3=ivec3, ivec4=ivec4, simplex_t=simplex_t, obj_t=obj_t,
                                 verts_t=verts_t, faces_t=faces_t, facev_t=facev_t, facef_t=facef_t,
                                 facei_t=facei_t, list_t=list_t, edges_t=edges_t, row=row, set_row=set_row,
                                 normalize=normalize, det3=det3, same_sign=same_sign)
