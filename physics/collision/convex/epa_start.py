"""EPA's first polytope, built from GJK's final simplex around the origin (MuJoCo's
polytope2, polytope3 and polytope4 in engine_collision_gjk.c): a tetrahedron as it is; a
segment grown into a hexahedron by three support points at 120 degrees about it; a
triangle into a bipyramid by the support points on both sides of it. A degenerate
tetrahedron or hexahedron falls back to its flat face, as a triangle.

Each start writes the caller's polytope in place: its arguments are ``ti.template()``,
the caller's own variables, so that no copy is made (Taichi copies a ``@ti.func``'s
other arguments where it inlines the call).
"""

# ruff: noqa: F841 (the helpers assign to their ti.template() arguments: the caller's variables)


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .common import MINVAL, make_common
from .polytope import make_polytope
from .support import make_support


@functools.lru_cache(maxsize=None)
def make_epa_start(fp):
    m = make_math(fp)
    cm = make_common(fp)
    sup = make_support(fp)
    poly = make_polytope(fp)
    vec3 = m.vec3
    mat3 = m.mat3
    ivec3 = cm.ivec3
    row, set_row = cm.row, cm.set_row
    msupport = sup.msupport
    test_tetra, tri_point_intersect, ray_triangle = poly.test_tetra, poly.tri_point_intersect, poly.ray_triangle
    face_projection = poly.face_projection

    @ti.func
    def start_tetra(sv: ti.template(), s1: ti.template(), s2: ti.template(), pv: ti.template(), p1: ti.template(),
                    p2: ti.template(), fv: ti.template(), fvec: ti.template(), fd2: ti.template(),
                    fstate: ti.template(), nv: ti.template(), nfaces: ti.template(), center: ti.template(),
                    ok: ti.template(), ns: ti.template(), tri: ti.template()):
        """The tetrahedron GJK found (ns 4); ns 3 and its flat face in tri where it is degenerate."""
        for r in ti.static(range(4)):
            set_row(pv, r, row(sv, r))
            set_row(p1, r, row(s1, r))
            set_row(p2, r, row(s2, r))
        nv = 4
        center = (row(pv, 0) + row(pv, 1) + row(pv, 2) + row(pv, 3)) * fp(0.25)
        for f in range(4):
            a, b, c = 0, 1, 2
            if f == 1:
                a, b, c = 0, 3, 1
            elif f == 2:
                a, b, c = 0, 2, 3
            elif f == 3:
                a, b, c = 3, 2, 1
            if ns == 4:
                v, d2 = face_projection(pv, a, b, c, center)
                if d2 < fp(MINVAL * MINVAL):
                    ns = 3
                    tri = ivec3(a, b, c)
                else:
                    fv[f, 0] = a
                    fv[f, 1] = b
                    fv[f, 2] = c
                    set_row(fvec, f, v)
                    fd2[f] = d2
                    fstate[f] = 2
        if ns == 4:
            nfaces = 4
            if not test_tetra(row(pv, 0), row(pv, 1), row(pv, 2), row(pv, 3)):
                ok = 0

    @ti.func
    def start_segment(o1: ti.template(), o2: ti.template(), tab: ti.template(), sv: ti.template(), s1: ti.template(),
                      s2: ti.template(), pv: ti.template(), p1: ti.template(), p2: ti.template(), fv: ti.template(),
                      fvec: ti.template(), fd2: ti.template(), fstate: ti.template(), nv: ti.template(),
                      nfaces: ti.template(), center: ti.template(), ok: ti.template(), ns: ti.template(),
                      tri: ti.template()):
        """A hexahedron about GJK's segment (ns 2); ns 3 and its flat face in tri where it is degenerate."""
        for r in ti.static(range(2)):
            set_row(pv, r, row(sv, r))
            set_row(p1, r, row(s1, r))
            set_row(p2, r, row(s2, r))
        center = (row(pv, 0) + row(pv, 1)) * fp(0.5)
        diff = row(pv, 1) - row(pv, 0)
        k = 0
        for i in ti.static(range(1, 3)):
            if ti.abs(diff[i]) < ti.abs(diff[k]):
                k = i
        e = vec3(0)
        e[k] = fp(1.0)
        d = e.cross(diff)
        u = diff.normalized()
        cs, sn = fp(-0.5), fp(0.86602540378)
        rot = mat3(cs + u[0] * u[0] * (1 - cs), u[0] * u[1] * (1 - cs) - u[2] * sn, u[0] * u[2] * (1 - cs) + u[1] * sn,
                   u[1] * u[0] * (1 - cs) + u[2] * sn, cs + u[1] * u[1] * (1 - cs), u[1] * u[2] * (1 - cs) - u[0] * sn,
                   u[0] * u[2] * (1 - cs) - u[1] * sn, u[1] * u[2] * (1 - cs) + u[0] * sn, cs + u[2] * u[2] * (1 - cs))
        for r in range(2, 5):  # three more vertices at 120 degrees about the segment
            v, a, b = msupport(o1, o2, tab, d / d.norm())
            set_row(pv, r, v)
            set_row(p1, r, a)
            set_row(p2, r, b)
            d = rot @ d
        nv = 5
        for f in range(6):
            a, b, c = 0, 2, 3
            if f == 1:
                a, b, c = 0, 4, 2
            elif f == 2:
                a, b, c = 0, 3, 4
            elif f == 3:
                a, b, c = 1, 3, 2
            elif f == 4:
                a, b, c = 1, 2, 4
            elif f == 5:
                a, b, c = 1, 4, 3
            if ns == 2:
                v, d2 = face_projection(pv, a, b, c, center)
                if d2 < fp(MINVAL * MINVAL):
                    ns = 3
                    tri = ivec3(a, b, c)
                else:
                    fv[f, 0] = a
                    fv[f, 1] = b
                    fv[f, 2] = c
                    set_row(fvec, f, v)
                    fd2[f] = d2
                    fstate[f] = 2
        if ns == 2:
            nfaces = 6
            if not ray_triangle(row(pv, 0), row(pv, 1), row(pv, 2), row(pv, 3), row(pv, 4)):
                ok = 0

    @ti.func
    def start_triangle(o1: ti.template(), o2: ti.template(), tab: ti.template(), pv: ti.template(), p1: ti.template(),
                       p2: ti.template(), fv: ti.template(), fvec: ti.template(), fd2: ti.template(),
                       fstate: ti.template(), nv: ti.template(), nfaces: ti.template(), center: ti.template(),
                       ok: ti.template(), tri: ti.template()):
        """The start from the triangle tri of the polytope's vertices (ns 3)."""
        # a triangle (from GJK, or the face of a start that held the origin on it):
        # a bipyramid with the support points on both sides of it
        va, vb, vc = row(pv, tri[0]), row(pv, tri[1]), row(pv, tri[2])
        a1, a2, a3 = row(p1, tri[0]), row(p1, tri[1]), row(p1, tri[2])
        b1, b2, b3 = row(p2, tri[0]), row(p2, tri[1]), row(p2, tri[2])
        set_row(pv, 0, va)
        set_row(pv, 1, vb)
        set_row(pv, 2, vc)
        set_row(p1, 0, a1)
        set_row(p1, 1, a2)
        set_row(p1, 2, a3)
        set_row(p2, 0, b1)
        set_row(p2, 1, b2)
        set_row(p2, 2, b3)
        center = (va + vb + vc) / fp(3.0)
        nrm = (vb - va).cross(vc - va)
        nn = nrm.norm()
        if nn < fp(MINVAL):
            ok = 0
        else:
            for r in range(3, 5):  # vertex 3 below the triangle, vertex 4 above
                v, a, b = msupport(o1, o2, tab, nrm * ((fp(2.0) * (r - 3) - 1) / nn))
                set_row(pv, r, v)
                set_row(p1, r, a)
                set_row(p2, r, b)
                if tri_point_intersect(va, vb, vc, v):
                    ok = 0
            nv = 5
            for f in range(6):
                a, b, c = 4, 0, 1
                if f == 1:
                    a, b, c = 4, 2, 0
                elif f == 2:
                    a, b, c = 4, 1, 2
                elif f == 3:
                    a, b, c = 3, 1, 0
                elif f == 4:
                    a, b, c = 3, 0, 2
                elif f == 5:
                    a, b, c = 3, 2, 1
                v, d2 = face_projection(pv, a, b, c, center)
                if d2 < fp(MINVAL * MINVAL):
                    ok = 0
                fv[f, 0] = a
                fv[f, 1] = b
                fv[f, 2] = c
                set_row(fvec, f, v)
                fd2[f] = d2
                fstate[f] = 2
            nfaces = 6

    return types.SimpleNamespace(start_tetra=start_tetra, start_segment=start_segment, start_triangle=start_triangle)
