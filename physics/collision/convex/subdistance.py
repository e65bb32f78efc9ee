"""GJK's distance subalgorithm: the point of a simplex (1 to 4 vertices) nearest the
origin, as barycentric coordinates, by signed volumes (Montanari, Petrinic and Barbieri
2017; MuJoCo's S1D/S2D/S3D in engine_collision_gjk.c). The projection of the origin on a
plane and the barycentric coordinates in a triangle also serve EPA's start and its final
witness points.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .common import BIG, MINVAL, make_common


@functools.lru_cache(maxsize=None)
def make_subdistance(fp):
    m = make_math(fp)
    cm = make_common(fp)
    vec3 = m.vec3
    vec2, vec4 = cm.vec2, cm.vec4
    row, det3, same_sign = cm.row, cm.det3, cm.same_sign

    @ti.func
    def project_origin_plane(v1, v2, v3):
        """The origin projected on the plane through v1, v2, v3; fail when degenerate."""
        d21 = v2 - v1
        d31 = v3 - v1
        d32 = v3 - v2
        res = vec3(0)
        fail = 0
        n = d32.cross(d21)
        nv = n.dot(v2)
        nn = n.dot(n)
        if nn == 0:
            fail = 1
        elif nv != 0 and nn > fp(MINVAL):
            res = n * (nv / nn)
        else:
            n = d21.cross(d31)
            nv = n.dot(v1)
            nn = n.dot(n)
            if nn == 0:
                fail = 1
            elif nv != 0 and nn > fp(MINVAL):
                res = n * (nv / nn)
            else:
                n = d31.cross(d32)
                nv = n.dot(v3)
                nn = n.dot(n)
                if nn > 0:
                    res = n * (nv / nn)
        return fail, res

    @ti.func
    def s1d(s1, s2):
        diff = s2 - s1
        p = s2 - diff * (s2.dot(diff) / diff.dot(diff))
        mu = s1 - s2
        k = 0
        for i in ti.static(range(1, 3)):
            if ti.abs(mu[i]) >= ti.abs(mu[k]):
                k = i
        c1 = p[k] - s2[k]
        c2 = s1[k] - p[k]
        lam = vec2(0, 1)
        if same_sign(mu[k], c1) and same_sign(mu[k], c2):
            lam = vec2(c1 / mu[k], c2 / mu[k])
        return lam

    @ti.func
    def plane_axes(v1, v2, v3):
        """The two coordinates kept when projecting a triangle on the axis plane where it
        is largest, and the triangle's signed area there."""
        m14 = v2[1] * v3[2] - v2[2] * v3[1] - v1[1] * v3[2] + v1[2] * v3[1] + v1[1] * v2[2] - v1[2] * v2[1]
        m24 = v2[0] * v3[2] - v2[2] * v3[0] - v1[0] * v3[2] + v1[2] * v3[0] + v1[0] * v2[2] - v1[2] * v2[0]
        m34 = v2[0] * v3[1] - v2[1] * v3[0] - v1[0] * v3[1] + v1[1] * v3[0] + v1[0] * v2[1] - v1[1] * v2[0]
        x, y, mmax = 0, 1, m34
        if ti.abs(m14) >= ti.abs(m24) and ti.abs(m14) >= ti.abs(m34):
            x, y, mmax = 1, 2, m14
        elif ti.abs(m24) >= ti.abs(m34):
            x, y, mmax = 0, 2, m24
        return x, y, mmax

    @ti.func
    def tri_coords(v1, v2, v3, p, x, y):
        """Signed areas of (p, v2, v3), (p, v3, v1), (p, v1, v2) in coordinates x, y."""
        c1 = p[x] * v2[y] + p[y] * v3[x] + v2[x] * v3[y] - p[x] * v3[y] - p[y] * v2[x] - v3[x] * v2[y]
        c2 = p[x] * v3[y] + p[y] * v1[x] + v3[x] * v1[y] - p[x] * v1[y] - p[y] * v3[x] - v1[x] * v3[y]
        c3 = p[x] * v1[y] + p[y] * v2[x] + v1[x] * v2[y] - p[x] * v2[y] - p[y] * v1[x] - v2[x] * v1[y]
        return vec3(c1, c2, c3)

    @ti.func
    def s2d(s1, s2, s3):
        lam = vec3(0)
        fail, p = project_origin_plane(s1, s2, s3)
        if fail:
            l1 = s1d(s1, s2)
            lam = vec3(l1[0], l1[1], 0)
        else:
            x, y, mmax = plane_axes(s1, s2, s3)
            c = tri_coords(s1, s2, s3, p, x, y)
            inside = True
            for i in ti.static(range(3)):
                inside = inside and same_sign(mmax, c[i])
            if inside:
                lam = c / mmax
            else:
                dmin = fp(BIG)
                for i in range(3):  # the edge opposite vertex i, where the origin is beyond it
                    if not same_sign(mmax, c[i]):
                        a = s1 if i != 0 else s2
                        b = s3 if i != 2 else s2
                        l1 = s1d(a, b)
                        xx = a * l1[0] + b * l1[1]
                        d = xx.dot(xx)
                        if d < dmin:
                            dmin = d
                            lam = vec3(0)
                            lam[0 if i != 0 else 1] = l1[0]
                            lam[2 if i != 2 else 1] = l1[1]
        return lam

    @ti.func
    def s3d(sv: ti.template()):
        s1, s2, s3, s4 = row(sv, 0), row(sv, 1), row(sv, 2), row(sv, 3)
        c = vec4(-det3(s2, s3, s4), det3(s1, s3, s4), -det3(s1, s2, s4), det3(s1, s2, s3))
        mdet = c.sum()
        inside = True
        for i in ti.static(range(4)):
            inside = inside and same_sign(mdet, c[i])
        lam = vec4(0)
        if inside:
            lam = c / mdet
        else:
            dmin = fp(BIG)
            for i in range(4):  # the face opposite vertex i
                if not same_sign(mdet, c[i]):
                    ia = 1 if i == 0 else 0
                    ib = 2 if i <= 1 else 1
                    ic = 3 if i <= 2 else 2
                    a, b, cc = row(sv, ia), row(sv, ib), row(sv, ic)
                    l2 = s2d(a, b, cc)
                    xx = a * l2[0] + b * l2[1] + cc * l2[2]
                    d = xx.dot(xx)
                    if d < dmin:
                        dmin = d
                        lam = vec4(0)
                        lam[ia] = l2[0]
                        lam[ib] = l2[1]
                        lam[ic] = l2[2]
        return lam

    @ti.func
    def subdistance(sv: ti.template(), n):
        """Barycentric coordinates of the point of the simplex (n vertices) nearest the origin."""
        lam = vec4(1, 0, 0, 0)
        if n == 4:
            lam = s3d(sv)
        elif n == 3:
            l2 = s2d(row(sv, 0), row(sv, 1), row(sv, 2))
            lam = vec4(l2[0], l2[1], l2[2], 0)
        elif n == 2:
            l1 = s1d(row(sv, 0), row(sv, 1))
            lam = vec4(l1[0], l1[1], 0, 0)
        return lam

    @ti.func
    def lincomb(a: ti.template(), lam, n):
        x = vec3(0)
        for i in range(n):
            x += lam[i] * row(a, i)
        return x

    return types.SimpleNamespace(project_origin_plane=project_origin_plane, plane_axes=plane_axes,
                                 tri_coords=tri_coords, subdistance=subdistance, lincomb=lincomb)
