"""Signed distance of two convex geoms and their witness points, MuJoCo's mjc_penetration:
GJK decides whether they overlap and measures the distance where they do not, EPA
measures the depth where they do.

A sphere or capsule first collides as its centre point or segment, whose distance GJK
finds to ~1e-10, and is grown by its radius afterwards; only when that core itself
penetrates does EPA run on the full shapes.
"""


import functools
import types

from ...model import GEOM_CAPSULE, GEOM_SPHERE
from ...runtime.backend import ti
from .common import BIG, CCD_TOLERANCE, make_common
from .epa import make_epa
from .gjk import make_gjk
from .support import make_support


@functools.lru_cache(maxsize=None)
def make_penetration(fp):
    cm = make_common(fp)
    sup = make_support(fp)
    simplex_t = cm.simplex_t
    row, set_row, normalize = cm.row, cm.set_row, cm.normalize
    make_obj, center, with_hull = sup.make_obj, sup.center, sup.with_hull
    gjk = make_gjk(fp).gjk
    epa = make_epa(fp).epa

    @ti.func
    def penetration(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2, tab: ti.template()):
        """Signed distance of the two geoms each grown by margin / 2 (negative: they
        overlap), and the witness points on them; dist is BIG when they do not overlap.
        A mesh's hull (support.with_hull) is in tab."""
        dist, x1, x2, _, _ = measure_geoms(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2,
                                           tab, False)
        return dist, x1, x2

    @ti.func
    def penetration_face(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2,
                         tab: ti.template()):
        """penetration, and the face the solver ended on: its three points on each geom
        (rows of two 3 x 3 matrices), EPA's final face or, where a sphere's or capsule's
        core did not penetrate, GJK's last simplex (its points repeated up to three), as
        MuJoCo's multi-contact reads them."""
        return measure_geoms(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2, tab, True)

    @ti.func
    def measure_geoms(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2, tab: ti.template(),
                      keep_face: ti.template()):
        # two passes of one GJK call site (each call site inlines all of GJK, a large part of
        # the kernel's compile time): a sphere's or capsule's core first, where there is one,
        # then the full shapes, which EPA measures where they overlap
        half = fp(0.5) * margin
        core1 = type1 == GEOM_SPHERE or type1 == GEOM_CAPSULE
        core2 = type2 == GEOM_SPHERE or type2 == GEOM_CAPSULE
        grow1 = size1[0] + half if core1 else fp(0.0)
        grow2 = size2[0] + half if core2 else fp(0.0)
        core = core1 or core2
        xw = ti.types.matrix(2, 3, fp)(0)
        dist = fp(BIG)
        face1 = ti.types.matrix(3, 3, fp)(0)
        face2 = ti.types.matrix(3, 3, fp)(0)
        while True:
            radius1 = fp(0.0) if core else size1[0]
            radius2 = fp(0.0) if core else size2[0]
            o1 = with_hull(make_obj(type1, pos1, mat1, size1, radius1, fp(0.0) if core and core1 else half), hull1)
            o2 = with_hull(make_obj(type2, pos2, mat2, size2, radius2, fp(0.0) if core and core2 else half), hull2)
            sv = simplex_t(0)
            s1 = simplex_t(0)
            s2 = simplex_t(0)
            set_row(xw, 0, center(o1))
            set_row(xw, 1, center(o2))
            separated, d, ns = gjk(o1, o2, tab, sv, s1, s2, xw, grow1 + grow2 if core else fp(0.0))
            if core:
                if d > fp(CCD_TOLERANCE):  # the cores apart: the distance, grown by the radii
                    a = row(xw, 0)
                    b = row(xw, 1)
                    nrm = normalize(b - a)
                    set_row(xw, 0, a + nrm * grow1)
                    set_row(xw, 1, b - nrm * grow2)
                    dist = d - grow1 - grow2
                    if dist > 0:
                        dist = fp(BIG)
                    if ti.static(keep_face):
                        for r in ti.static(range(3)):
                            k = r if r < ns else 0
                            set_row(face1, r, row(s1, k))
                            set_row(face2, r, row(s2, k))
                    break
                core = False
                continue
            dist, face1, face2 = depth_after(o1, o2, tab, sv, s1, s2, xw, separated, d, ns, keep_face)
            break
        return dist, row(xw, 0), row(xw, 1), face1, face2

    @ti.func
    def overlap(o1, o2, tab: ti.template()):
        """Signed distance of two objects (negative: they overlap, BIG: they do not) and
        the witness points on them: GJK decides, EPA measures."""
        dist, x1, x2, _, _ = measure(o1, o2, tab, False)
        return dist, x1, x2

    @ti.func
    def overlap_face(o1, o2, tab: ti.template()):
        """overlap, and EPA's final face: its three points on each object (rows of two
        3 x 3 matrices; zero where the objects do not overlap)."""
        return measure(o1, o2, tab, True)

    @ti.func
    def measure(o1, o2, tab: ti.template(), keep_face: ti.template()):
        sv = simplex_t(0)
        s1 = simplex_t(0)
        s2 = simplex_t(0)
        xw = ti.types.matrix(2, 3, fp)(0)
        set_row(xw, 0, center(o1))
        set_row(xw, 1, center(o2))
        separated, d, ns = gjk(o1, o2, tab, sv, s1, s2, xw, fp(0.0))
        dist, face1, face2 = depth_after(o1, o2, tab, sv, s1, s2, xw, separated, d, ns, keep_face)
        return dist, row(xw, 0), row(xw, 1), face1, face2

    @ti.func
    def depth_after(o1, o2, tab: ti.template(), sv: ti.template(), s1: ti.template(), s2: ti.template(),
                    xw: ti.template(), separated, d, ns, keep_face: ti.template()):
        """After GJK's overlap test: where the objects overlap, minus EPA's depth (BIG where
        they do not or EPA finds no face), its witness points in xw's rows and its face."""
        dist = fp(BIG)
        face1 = ti.types.matrix(3, 3, fp)(0)
        face2 = ti.types.matrix(3, 3, fp)(0)
        if d <= fp(CCD_TOLERANCE) and ns > 1 and not separated:
            found, depth, w1, w2, f1, f2 = epa(o1, o2, tab, sv, s1, s2, ns, keep_face)
            if found:
                dist = -depth
                set_row(xw, 0, w1)
                set_row(xw, 1, w2)
                face1 = f1
                face2 = f2
        return dist, face1, face2

    return types.SimpleNamespace(penetration=penetration, penetration_face=penetration_face, overlap=overlap,
                                 overlap_face=overlap_face)
