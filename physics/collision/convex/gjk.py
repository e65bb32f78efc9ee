"""GJK on two objects' Minkowski difference (MuJoCo's gjk and gjkIntersect in
engine_collision_gjk.c): the distance between them and the witness points, or, with no
cutoff, only whether they overlap, handing a tetrahedron to the test that moves it until
it holds the origin or a face separates it. The simplex it ends with is EPA's start.
"""


import functools
import types

from ...runtime.backend import ti
from .common import BIG, CCD_ITERATIONS, CCD_TOLERANCE, MINVAL, make_common
from .subdistance import make_subdistance
from .support import make_support


@functools.lru_cache(maxsize=None)
def make_gjk(fp):
    cm = make_common(fp)
    sup = make_support(fp)
    sd = make_subdistance(fp)
    vec4, ivec4, simplex_t = cm.vec4, cm.ivec4, cm.simplex_t
    row, set_row = cm.row, cm.set_row
    msupport = sup.msupport
    subdistance, lincomb = sd.subdistance, sd.lincomb

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
    def gjk_intersect(o1, o2, tab: ti.template(), sv: ti.template(), s1: ti.template(), s2: ti.template(),
                      k0):
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
            v, a, b = msupport(o1, o2, tab, nrm)
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
    def gjk(o1, o2, tab: ti.template(), sv: ti.template(), s1: ti.template(), s2: ti.template(), xw: ti.template(),
            cutoff):
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
            v, a, b = msupport(o1, o2, tab, -xk / xnorm)
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
                ret, k = gjk_intersect(o1, o2, tab, sv, s1, s2, k)
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
            vf, af, bf = msupport(o1, o2, tab, -xk / xnorm)
            if xk.dot(vf) > 0:
                separated = 1
            dist = xnorm
            if n == 4 and not separated:
                dist = fp(0.0)
        return separated, dist, n

    return types.SimpleNamespace(gjk=gjk)
