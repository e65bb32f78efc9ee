"""EPA, the expanding polytope algorithm (MuJoCo's epa in engine_collision_gjk.c): from
GJK's simplex around the origin, a polytope inside the Minkowski difference grows by the
support point beyond its face nearest the origin until that face is within
``CCD_TOLERANCE`` of the surface. The face gives the penetration depth, and its
projection of the origin, in barycentric coordinates, the witness point on each geom.

The polytope lives in fixed arrays: vertices (``pv``, with their points on geom1 and
geom2 in ``p1``, ``p2``), faces as vertex triples (``fv``) with their projections of the
origin (``fvec``, ``fd2``) and a state per slot (``fstate``). The faces a new vertex sees
are found by each face's visibility from it rather than a walk over face adjacency.
The helpers take the caller's variables as ``ti.template()`` and update them in place,
so that no copy is made (Taichi copies a ``@ti.func``'s other arguments where it inlines
the call).
"""

# ruff: noqa: F841 (the helpers assign to their ti.template() arguments: the caller's variables)


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .common import BIG, CCD_ITERATIONS, CCD_TOLERANCE, MINVAL, NFACE, NVERT, NVIS, make_common
from .epa_start import make_epa_start
from .polytope import make_polytope
from .subdistance import make_subdistance
from .support import make_support


@functools.lru_cache(maxsize=None)
def make_epa(fp):
    m = make_math(fp)
    cm = make_common(fp)
    sup = make_support(fp)
    sd = make_subdistance(fp)
    start = make_epa_start(fp)
    vec3 = m.vec3
    ivec3 = cm.ivec3
    verts_t, faces_t, facev_t, facef_t, facei_t = cm.verts_t, cm.faces_t, cm.facev_t, cm.facef_t, cm.facei_t
    list_t, edges_t = cm.list_t, cm.edges_t
    row, set_row = cm.row, cm.set_row
    msupport = sup.msupport
    plane_axes, tri_coords = sd.plane_axes, sd.tri_coords
    face_projection = make_polytope(fp).face_projection
    start_tetra, start_segment, start_triangle = start.start_tetra, start.start_segment, start.start_triangle

    @ti.func
    def witness(pv: ti.template(), p1: ti.template(), p2: ti.template(), fverts: ti.template(), fproj: ti.template(),
                fdist2: ti.template(), found: ti.template(), depth: ti.template(), x1: ti.template(),
                x2: ti.template(), face1: ti.template(), face2: ti.template(), keep_face: ti.template()):
        """The depth of the face fverts, and the witness points: the origin's projection on
        it (fproj) in barycentric coordinates, applied to the face's points on each geom.
        With ``keep_face``, the face's three points on each geom too (face1, face2), from
        which multi-contact finds the geoms' features (faces.py)."""
        if ti.static(keep_face):
            for r in ti.static(range(3)):
                set_row(face1, r, row(p1, fverts[r]))
                set_row(face2, r, row(p2, fverts[r]))
        va, vb, vc = row(pv, fverts[0]), row(pv, fverts[1]), row(pv, fverts[2])
        x, y, mmax = plane_axes(va, vb, vc)
        lam = tri_coords(va, vb, vc, fproj, x, y) / mmax
        x1 = row(p1, fverts[0]) * lam[0] + row(p1, fverts[1]) * lam[1] + row(p1, fverts[2]) * lam[2]
        x2 = row(p2, fverts[0]) * lam[0] + row(p2, fverts[1]) * lam[1] + row(p2, fverts[2]) * lam[2]
        depth = ti.sqrt(fdist2)
        found = 1

    @ti.func
    def expand(o1: ti.template(), o2: ti.template(), tab: ti.template(), pv: ti.template(), p1: ti.template(),
               p2: ti.template(), fv: ti.template(), fvec: ti.template(), fd2: ti.template(), fstate: ti.template(),
               nv: ti.template(), nfaces: ti.template(), center: ti.template(), found: ti.template(),
               depth: ti.template(), x1: ti.template(), x2: ti.template(), face1: ti.template(),
               face2: ti.template(), keep_face: ti.template()):
        """Grow the polytope until its face nearest the origin is within the tolerance of the
        surface (or the iterations, vertices or faces run out), and measure that face."""
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
            wv, wa, wb = msupport(o1, o2, tab, fproj / lower)
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
                v, d2 = face_projection(pv, wi, a, b, center)
                if d2 == 0:
                    face = -1
                    break
                fv[slot, 0] = wi  # the new vertex first, as MuJoCo's attachFace: a cylinder's
                fv[slot, 1] = a  # side line starts at the final face's first point (faces.py)
                fv[slot, 2] = b
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
            witness(pv, p1, p2, fverts, fproj, fdist2, found, depth, x1, x2, face1, face2, keep_face)

    @ti.func
    def epa(o1, o2, tab: ti.template(), sv: ti.template(), s1: ti.template(), s2: ti.template(), nsimplex,
            keep_face: ti.template()):
        """Penetration depth and witness points from GJK's simplex (2, 3 or 4 vertices
        around the origin). Returns (found, depth, x1, x2, face1, face2): with ``keep_face``
        the final face's three points on geom1 and on geom2 (rows of 3 x 3 matrices, zero
        without it)."""
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
            start_tetra(sv, s1, s2, pv, p1, p2, fv, fvec, fd2, fstate, nv, nfaces, center, ok, ns, tri)
        elif ns == 2:
            start_segment(o1, o2, tab, sv, s1, s2, pv, p1, p2, fv, fvec, fd2, fstate, nv, nfaces, center, ok, ns, tri)
        else:
            for r in ti.static(range(3)):
                set_row(pv, r, row(sv, r))
                set_row(p1, r, row(s1, r))
                set_row(p2, r, row(s2, r))
        if ns == 3 and ok:
            start_triangle(o1, o2, tab, pv, p1, p2, fv, fvec, fd2, fstate, nv, nfaces, center, ok, tri)

        found = 0
        depth = fp(0.0)
        x1 = vec3(0)
        x2 = vec3(0)
        face1 = m.mat3(0)
        face2 = m.mat3(0)
        if ok:
            expand(o1, o2, tab, pv, p1, p2, fv, fvec, fd2, fstate, nv, nfaces, center, found, depth, x1, x2, face1,
                   face2, keep_face)
        return found, depth, x1, x2, face1, face2

    return types.SimpleNamespace(epa=epa)
