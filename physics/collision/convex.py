"""Convex narrow phase: the pairs of primitives without an analytic routine.

Capsule-cylinder, cylinder-cylinder, cylinder-box and the ellipsoid pairs (with sphere,
capsule, ellipsoid, cylinder and box) collide as MuJoCo's general convex collider does
with its default native solver (mjc_Convex, engine_collision_gjk.c): both geoms are
described by their support functions, grown by half the pair's margin each; GJK decides
whether they overlap and EPA expands a polytope inside the Minkowski difference until
the face nearest the origin is within ``CCD_TOLERANCE`` of its surface. That face gives
the penetration depth, the normal (from geom1 to geom2) and a witness point on each
geom; the contact lies midway between them. A sphere or capsule first collides as its
centre point or segment, whose distance GJK finds to ~1e-10, and is grown by its radius
afterwards; only when that core itself penetrates does EPA run on the full shapes.

Iterations are bounded by ``CCD_ITERATIONS`` (MuJoCo's ``ccd_iterations`` default),
tolerances are MuJoCo's defaults. Everything is written for Taichi: no recursion, local
arrays of fixed size, the polytope's horizon found by each face's visibility from the new
vertex rather than a walk over face adjacency.

Where no geom of the pair is a sphere or an ellipsoid, MuJoCo 4 adds up to four contacts
by rotating the geoms slightly about the first contact (multi-CCD); :func:`make_convex`
does the same when ``multiccd`` is set: the same solver runs on the perturbed poses,
each new contact far enough from the others kept with the first contact's depth.
"""


import functools
import types

from ..collision.narrowphase import make_narrowphase
from ..model import GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_SPHERE
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

CCD_ITERATIONS = 35  # mjOption.ccd_iterations default
CCD_TOLERANCE = 1e-6  # mjOption.ccd_tolerance default
MINVAL = 1e-15  # mjMINVAL
BIG = 1e30
NVERT = 5 + CCD_ITERATIONS  # polytope vertices: the initial ones and one per EPA iteration
NFACE = 2 * NVERT  # live faces of a closed triangulated polytope: 2 V - 4
NVIS = 32  # faces visible from a new vertex, and horizon edges, at most
MULTICCD_TOLERANCE = 1e-3  # distinct contacts are farther apart than this times the smaller rbound
MULTICCD_ANGLE = 1e-3  # radians of each perturbation
PRISM = 100  # not a geom type: the prism under one height-field triangle (physics/collision/hfield.py)


@functools.lru_cache(maxsize=None)
def make_convex(fp):
    m = make_math(fp)
    nph = make_narrowphase(fp)
    vec3 = m.vec3
    mat3 = m.mat3
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
    def msupport(o1, o2, d):
        """Support point of the Minkowski difference geom1 - geom2 along d, and its two parts."""
        a = support(o1, d)
        b = support(o2, -d)
        return a - b, a, b

    # --- GJK distance subalgorithm (signed volumes, Montanari et al. 2017) -------------
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

    @ti.func
    def signed_distance(v1, v2, v3):
        """Outward normal of face (v1, v2, v3) and its distance from the origin."""
        nrm = (v3 - v1).cross(v2 - v1)
        n2 = nrm.dot(nrm)
        d = fp(BIG)
        if n2 > fp(MINVAL * MINVAL) and n2 < fp(1e20):
            nrm = nrm / ti.sqrt(n2)
            d = nrm.dot(v1)
        return nrm, d

    @ti.func
    def gjk_intersect(o1, o2, sv: ti.template(), s1: ti.template(), s2: ti.template(), k0):
        """From a tetrahedron, replace the vertex opposite the face nearest the origin until
        the origin is inside (1), outside the Minkowski difference (0) or undecided (-1)."""
        s = ivec4(0, 1, 2, 3)
        ret = -1
        k = k0
        while k < CCD_ITERATIONS:
            n0, d0 = signed_distance(row(sv, s[2]), row(sv, s[1]), row(sv, s[3]))
            n1, d1 = signed_distance(row(sv, s[0]), row(sv, s[2]), row(sv, s[3]))
            n2, d2 = signed_distance(row(sv, s[1]), row(sv, s[0]), row(sv, s[3]))
            n3, d3 = signed_distance(row(sv, s[0]), row(sv, s[1]), row(sv, s[2]))
            if d0 == 0 or d1 == 0 or d2 == 0 or d3 == 0:
                break
            i = 0 if d0 < d1 else 1
            di = d0 if d0 < d1 else d1
            j = 2 if d2 < d3 else 3
            dj = d2 if d2 < d3 else d3
            index = i if di < dj else j
            dbest = di if di < dj else dj
            if dbest > 0:
                ret = 1
                break
            nrm = n0
            if index == 1:
                nrm = n1
            elif index == 2:
                nrm = n2
            elif index == 3:
                nrm = n3
            v, a, b = msupport(o1, o2, nrm)
            set_row(sv, s[index], v)
            set_row(s1, s[index], a)
            set_row(s2, s[index], b)
            if nrm.dot(v) < 0:
                ret = 0
                break
            ia = (index + 1) & 3
            ib = (index + 2) & 3
            tmp = s[ia]
            s[ia] = s[ib]
            s[ib] = tmp
            k += 1
        if ret == 1:  # the simplex in the orientation found
            t0 = simplex_t(0)
            t1 = simplex_t(0)
            t2 = simplex_t(0)
            for r in ti.static(range(4)):
                set_row(t0, r, row(sv, r))
                set_row(t1, r, row(s1, r))
                set_row(t2, r, row(s2, r))
            for r in ti.static(range(4)):
                set_row(sv, r, row(t0, s[r]))
                set_row(s1, r, row(t1, s[r]))
                set_row(s2, r, row(t2, s[r]))
        return ret, k

    @ti.func
    def gjk(o1, o2, sv: ti.template(), s1: ti.template(), s2: ti.template(), xw: ti.template(), cutoff):
        """GJK from the centres in xw's rows 0 and 1 (geom1's, geom2's). With a cutoff > 0 it returns the distance (and the
        witness points in x1, x2); with cutoff 0 it only decides overlap, handing over to
        the tetrahedron test once it has four vertices. Returns (separated, dist, nsimplex);
        the witness points replace the centres."""
        get_dist = cutoff > 0
        backup = not get_dist
        tol = fp(CCD_TOLERANCE)
        eps = fp(0.5) * tol * tol
        xk = row(xw, 0) - row(xw, 1)
        xnorm = xk.norm()
        xprev = fp(0.0)
        n = 0
        lam = vec4(1, 0, 0, 0)
        separated = 0
        done = 0  # 1: separated found early, 2: the tetrahedron holds the origin
        k = 0
        while k < CCD_ITERATIONS:
            if xnorm < tol or ti.abs(xprev - xnorm) < fp(MINVAL):
                break
            v, a, b = msupport(o1, o2, -xk / xnorm)
            set_row(sv, n, v)
            set_row(s1, n, a)
            set_row(s2, n, b)
            if xk.dot(xk - v) < eps:
                break
            lower = xk.dot(v)
            if lower > 0 and (not get_dist or lower >= cutoff * xnorm):
                done = 1
                break
            if n == 3 and backup:
                ret, k = gjk_intersect(o1, o2, sv, s1, s2, k)
                if ret != -1:
                    done = 1 if ret == 0 else 2
                    break
                backup = False
            lam = subdistance(sv, n + 1)
            nkeep = 0
            for i in range(4):
                if lam[i] != 0:
                    set_row(sv, nkeep, row(sv, i))
                    set_row(s1, nkeep, row(s1, i))
                    set_row(s2, nkeep, row(s2, i))
                    lam[nkeep] = lam[i]
                    nkeep += 1
            n = nkeep
            if n < 1:
                done = 1
                break
            xk = lincomb(sv, lam, n)
            xprev = xnorm
            xnorm = xk.norm()
            if n == 4:
                break
            k += 1
        dist = fp(0.0)
        if done == 1:
            separated = 1
            dist = fp(BIG)
            n = 0
        elif done == 2:
            n = 4
        else:
            if n > 0:
                set_row(xw, 0, lincomb(s1, lam, n))
                set_row(xw, 1, lincomb(s2, lam, n))
            vf, af, bf = msupport(o1, o2, -xk / xnorm)
            if xk.dot(vf) > 0:
                separated = 1
            dist = xnorm
            if n == 4 and not separated:
                dist = fp(0.0)
        return separated, dist, n

    # --- EPA ----------------------------------------------------------------------------
    @ti.func
    def test_tetra(p0, p1, p2, p3):
        """True when the origin is inside the tetrahedron."""
        inside = True
        for i in ti.static(range(4)):
            a, b, c, d = (p0, p1, p2, p3) if i == 0 else ((p1, p2, p3, p0) if i == 1 else (
                (p2, p3, p0, p1) if i == 2 else (p3, p0, p1, p2)))
            nrm = (b - a).cross(c - a)
            dot1 = nrm.dot(d - a)
            dot2 = -nrm.dot(a)
            inside = inside and ((dot1 > 0 and dot2 > 0) or (dot1 < 0 and dot2 < 0))
        return inside

    @ti.func
    def tri_point_intersect(v1, v2, v3, p):
        x, y, mmax = plane_axes(v1, v2, v3)
        lam = tri_coords(v1, v2, v3, p, x, y) / mmax
        hit = False
        if lam[0] >= 0 and lam[1] >= 0 and lam[2] >= 0:
            hit = (v1 * lam[0] + v2 * lam[1] + v3 * lam[2] - p).norm() < fp(MINVAL)
        return hit

    @ti.func
    def ray_triangle(v1, v2, v3, v4, v5):
        d12 = v2 - v1
        vol1 = det3(v3 - v1, v4 - v1, d12)
        vol2 = det3(v4 - v1, v5 - v1, d12)
        vol3 = det3(v5 - v1, v3 - v1, d12)
        return (vol1 >= 0 and vol2 >= 0 and vol3 >= 0) or (vol1 <= 0 and vol2 <= 0 and vol3 <= 0)

    @ti.func
    def face_projection(pv: ti.template(), a, b, c, center):
        """The origin projected on face (a, b, c), pointing away from the centre, and its
        squared length (0 when the face is degenerate)."""
        fail, v = project_origin_plane(row(pv, c), row(pv, b), row(pv, a))
        d2 = fp(0.0)
        if not fail:
            if v.dot(row(pv, a) - center) < 0:
                v = -v
            d2 = v.dot(v)
        return v, d2

    @ti.func
    def epa(o1, o2, sv: ti.template(), s1: ti.template(), s2: ti.template(), nsimplex):
        """Penetration depth and witness points from GJK's simplex (2, 3 or 4 vertices
        around the origin). Returns (found, depth, x1, x2)."""
        pv = verts_t(0)
        p1 = verts_t(0)
        p2 = verts_t(0)
        fv = faces_t(0)
        fvec = facev_t(0)
        fd2 = facef_t(0)
        fstate = facei_t(0)  # 0: free slot, 1: face, 2: face that may be the nearest
        nv = 0
        nfaces = 0
        center = vec3(0)
        ok = 1
        ns = nsimplex
        tri = ivec3(0, 1, 2)  # the face a degenerate start falls back to, as a triangle
        if ns == 4:
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
        elif ns == 2:
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
                v, a, b = msupport(o1, o2, d / d.norm())
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
        else:
            for r in ti.static(range(3)):
                set_row(pv, r, row(sv, r))
                set_row(p1, r, row(s1, r))
                set_row(p2, r, row(s2, r))
        if ns == 3 and ok:
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
                    v, a, b = msupport(o1, o2, nrm * ((fp(2.0) * (r - 3) - 1) / nn))
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

        found = 0
        depth = fp(0.0)
        x1 = vec3(0)
        x2 = vec3(0)
        if ok:
            upper = fp(BIG)
            upper2 = fp(BIG)
            face = -1
            fverts = ivec3(0)
            fproj = vec3(0)
            fdist2 = fp(0.0)
            for k in range(CCD_ITERATIONS):
                # the candidate face nearest the origin: a lower bound of the depth
                best = -1
                lower2 = fp(BIG)
                for i in range(nfaces):
                    if fstate[i] == 2 and fd2[i] < lower2:
                        best = i
                        lower2 = fd2[i]
                if best < 0 or lower2 > upper2:
                    break  # keep the previous face
                face = best
                fverts = ivec3(fv[best, 0], fv[best, 1], fv[best, 2])
                fproj = row(fvec, best)
                fdist2 = lower2
                if lower2 <= 0 or nv >= NVERT:
                    break
                lower = ti.sqrt(lower2)
                wv, wa, wb = msupport(o1, o2, fproj / lower)
                wi = nv
                set_row(pv, wi, wv)
                set_row(p1, wi, wa)
                set_row(p2, wi, wb)
                nv += 1
                upper_k = fproj.dot(wv) / lower
                if upper_k < upper:
                    upper = upper_k
                    upper2 = upper * upper
                if upper - lower < fp(CCD_TOLERANCE):
                    if k == 0 and upper < lower - fp(1e-10):
                        face = -1
                    break
                # faces the new vertex sees: they go, and the horizon's edges get new faces
                vis = list_t(0)
                nvis = 1
                vis[0] = best
                overflow = False
                for i in range(nfaces):
                    if fstate[i] > 0 and i != best:
                        if row(fvec, i).dot(wv) - fd2[i] > fp(MINVAL):
                            if nvis < NVIS:
                                vis[nvis] = i
                                nvis += 1
                            else:
                                overflow = True
                edges = edges_t(0)
                nedges = 0
                for q in range(nvis):
                    f = vis[q]
                    for e in range(3):
                        ea = fv[f, e]
                        eb = fv[f, (e + 1) % 3]
                        interior = False
                        for q2 in range(nvis):
                            g = vis[q2]
                            for e2 in ti.static(range(3)):
                                if fv[g, e2] == eb and fv[g, (e2 + 1) % 3] == ea:
                                    interior = True
                        if not interior:
                            if nedges < NVIS:
                                edges[nedges, 0] = ea
                                edges[nedges, 1] = eb
                            nedges += 1
                if overflow or nedges < 3 or nedges > NVIS:
                    face = -1
                    break
                for q in range(nvis):
                    fstate[vis[q]] = 0
                slot = 0
                nmap = 0
                for q in range(nedges):
                    while slot < NFACE and fstate[slot] != 0:
                        slot += 1
                    if slot >= NFACE:
                        face = -1
                        break
                    a, b = edges[q, 0], edges[q, 1]
                    v, d2 = face_projection(pv, a, b, wi, center)
                    if d2 == 0:
                        face = -1
                        break
                    fv[slot, 0] = a
                    fv[slot, 1] = b
                    fv[slot, 2] = wi
                    set_row(fvec, slot, v)
                    fd2[slot] = d2
                    fstate[slot] = 2 if (d2 >= lower2 and d2 <= upper2) else 1
                    if slot >= nfaces:
                        nfaces = slot + 1
                if face < 0:
                    break
                for i in range(nfaces):
                    if fstate[i] == 2:
                        nmap += 1
                if nmap == 0:
                    break
            if face >= 0:
                va, vb, vc = row(pv, fverts[0]), row(pv, fverts[1]), row(pv, fverts[2])
                x, y, mmax = plane_axes(va, vb, vc)
                lam = tri_coords(va, vb, vc, fproj, x, y) / mmax
                x1 = row(p1, fverts[0]) * lam[0] + row(p1, fverts[1]) * lam[1] + row(p1, fverts[2]) * lam[2]
                x2 = row(p2, fverts[0]) * lam[0] + row(p2, fverts[1]) * lam[1] + row(p2, fverts[2]) * lam[2]
                depth = ti.sqrt(fdist2)
                found = 1
        return found, depth, x1, x2

    @ti.func
    def penetration(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin):
        """Signed distance of the two geoms each grown by margin / 2 (negative: they
        overlap), and the witness points on them; dist is BIG when they do not overlap."""
        half = fp(0.5) * margin
        sv = simplex_t(0)
        s1 = simplex_t(0)
        s2 = simplex_t(0)
        xw = ti.types.matrix(2, 3, fp)(0)
        set_row(xw, 0, pos1)
        set_row(xw, 1, pos2)
        dist = fp(BIG)
        full = True
        core1 = type1 == GEOM_SPHERE or type1 == GEOM_CAPSULE
        core2 = type2 == GEOM_SPHERE or type2 == GEOM_CAPSULE
        if core1 or core2:
            # a sphere or capsule as its centre point or segment, grown afterwards
            grow1 = size1[0] + half if core1 else fp(0.0)
            grow2 = size2[0] + half if core2 else fp(0.0)
            o1 = make_obj(type1, pos1, mat1, size1, fp(0.0), fp(0.0) if core1 else half)
            o2 = make_obj(type2, pos2, mat2, size2, fp(0.0), fp(0.0) if core2 else half)
            sep0, d, ns0 = gjk(o1, o2, sv, s1, s2, xw, grow1 + grow2)
            if d > fp(CCD_TOLERANCE):
                full = False
                a = row(xw, 0)
                b = row(xw, 1)
                nrm = normalize(b - a)
                set_row(xw, 0, a + nrm * grow1)
                set_row(xw, 1, b - nrm * grow2)
                dist = d - grow1 - grow2
                if dist > 0:
                    dist = fp(BIG)
            else:
                set_row(xw, 0, pos1)
                set_row(xw, 1, pos2)
        if full:
            o1 = make_obj(type1, pos1, mat1, size1, size1[0], half)
            o2 = make_obj(type2, pos2, mat2, size2, size2[0], half)
            dist, x1, x2 = overlap(o1, o2)
            set_row(xw, 0, x1)
            set_row(xw, 1, x2)
        return dist, row(xw, 0), row(xw, 1)

    @ti.func
    def overlap(o1, o2):
        """Signed distance of two objects (negative: they overlap, BIG: they do not) and
        the witness points on them: GJK decides, EPA measures."""
        sv = simplex_t(0)
        s1 = simplex_t(0)
        s2 = simplex_t(0)
        xw = ti.types.matrix(2, 3, fp)(0)
        set_row(xw, 0, center(o1))
        set_row(xw, 1, center(o2))
        dist = fp(BIG)
        separated, d, ns = gjk(o1, o2, sv, s1, s2, xw, fp(0.0))
        if d <= fp(CCD_TOLERANCE) and ns > 1 and not separated:
            found, depth, w1, w2 = epa(o1, o2, sv, s1, s2, ns)
            if found:
                dist = -depth
                set_row(xw, 0, w1)
                set_row(xw, 1, w2)
        return dist, row(xw, 0), row(xw, 1)

    @ti.func
    def collide(w, con_f: ti.template(), con_n: ti.template(), type1, pos1, mat1, size1, rbound1, type2, pos2,
                mat2, size2, rbound2, margin, npass):
        """One contact where the geoms (grown by half the margin each) overlap, at the
        midpoint of the witness points, normal from geom1 to geom2; with npass 5, up to
        four more from slightly rotated poses (multi-CCD: the pair table asks for it where
        neither geom is a sphere or an ellipsoid, as MuJoCo)."""
        dist0 = fp(0.0)
        pos0 = vec3(0)
        ty = vec3(0)
        tz = vec3(0)
        made = ti.types.matrix(5, 3, fp)(0)
        nmade = 0
        tol = fp(MULTICCD_TOLERANCE) * ti.min(rbound1, rbound2)
        for k in range(npass):
            if k > 0 and nmade == 0:
                break
            p1, m1, p2, m2 = pos1, mat1, pos2, mat2
            if k > 0:
                # geom1 turned by -+angle about a tangent axis through the first contact,
                # geom2 by the inverse
                axis = ty if k <= 2 else tz
                half_angle = fp(0.5 * MULTICCD_ANGLE) * (fp(-1.0) if k % 2 == 1 else fp(1.0))
                sn = ti.sin(half_angle)
                rot = m.quat_to_mat(m.vec4(ti.cos(half_angle), axis[0] * sn, axis[1] * sn, axis[2] * sn))
                m1 = rot @ mat1
                p1 = pos1 - (rot @ (pos0 - pos1) - (pos0 - pos1))
                m2 = rot.transpose() @ mat2
                p2 = pos2 - (rot.transpose() @ (pos0 - pos2) - (pos0 - pos2))
            dist, x1, x2 = penetration(type1, p1, m1, size1, type2, p2, m2, size2, margin)
            if dist < 0:
                pos = (x1 + x2) * fp(0.5)
                nrm = normalize(x1 - x2)
                distinct = True
                for q in range(nmade):
                    if (row(made, q) - pos).norm() <= tol:
                        distinct = False
                if k == 0:
                    dist0 = margin + dist
                    pos0 = pos
                    # the tangent axes of the contact frame (mju_makeFrame)
                    ty = vec3(0, 1, 0)
                    if nrm[1] >= fp(0.5) or nrm[1] <= fp(-0.5):
                        ty = vec3(0, 0, 1)
                    ty = normalize(ty - nrm * nrm.dot(ty))
                    tz = nrm.cross(ty)
                if distinct:
                    set_row(made, nmade, pos)
                    nmade += 1
                    nph.emit(w, con_f, con_n, dist0, pos, nrm, vec3(0))
        return nmade

    return types.SimpleNamespace(support=support, penetration=penetration, collide=collide, make_obj=make_obj,
                                 make_prism=make_prism, overlap=overlap, normalize=normalize)
