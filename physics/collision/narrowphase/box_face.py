"""Box-box face contacts: the incident box's face most opposed to the reference box's
face (the separating axis a face normal), clipped to the reference face's sides
(Sutherland-Hodgman), each clipped vertex within the margin a contact, as the face case
of MuJoCo's box-box (engine_collision_box.c).
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .contact import make_contact

# rounding slack of two face contacts at the same place, in units of float64 epsilon
# (MuJoCo's mjBOXBOX_* in double)
BOX_DUPEPS = 1e-14
BOX_MAXVERT = 12  # a quad clipped by four half-planes has at most 8 vertices; room to spare


@functools.cache
def make_box_face(fp):
    m = make_math(fp)
    vec3 = m.vec3
    c = make_contact(fp)
    col, emit = c.col, c.emit
    poly_t = ti.types.matrix(BOX_MAXVERT, 3, fp)
    accepted_t = ti.types.matrix(BOX_MAXVERT, 2, fp)

    @ti.func
    def clip_half_plane(poly: ti.template(), n, coord, sign, limit):
        """Clip polygon poly (n vertices, in place) to sign * v[coord] <= limit
        (Sutherland-Hodgman); the third coordinate is interpolated along."""
        out = poly_t(0)
        nout = 0
        for k in range(n):
            k1 = 0 if k + 1 == n else k + 1
            dp = sign * poly[k, coord] - limit
            dq = sign * poly[k1, coord] - limit
            if dp <= 0 and nout < BOX_MAXVERT:
                for c in ti.static(range(3)):
                    out[nout, c] = poly[k, c]
                nout += 1
            if ((dp < 0 and dq > 0) or (dp > 0 and dq < 0)) and nout < BOX_MAXVERT:
                t = dp / (dp - dq)
                for c in ti.static(range(3)):
                    out[nout, c] = poly[k, c] + t * (poly[k1, c] - poly[k, c])
                nout += 1
        for k in range(nout):
            for c in ti.static(range(3)):
                poly[k, c] = out[k, c]
        return nout

    @ti.func
    def box_box_face(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, rot, pos21,
                     pos12, code, margin):
        """The incident box's face most opposed to the reference face, clipped to the
        reference face's sides; each clipped vertex within the margin is a contact."""
        ref1 = code < 3
        a = code if ref1 else code - 3
        sizeref = size1 if ref1 else size2
        sizeinc = size2 if ref1 else size1
        posref = pos1 if ref1 else pos2
        matref = mat1 if ref1 else mat2
        posoi = pos21 if ref1 else pos12
        rinc = rot if ref1 else rot.transpose()  # incident axes (columns) in the reference frame
        sgn = fp(1.0) if posoi[a] >= 0 else fp(-1.0)
        binc = 0
        for k in range(1, 3):
            if ti.abs(rinc[a, k]) > ti.abs(rinc[a, binc]):
                binc = k
        tinc = fp(-1.0) if sgn * rinc[a, binc] > 0 else fp(1.0)
        ax, ay = (a + 1) % 3, (a + 2) % 3
        bu, bv = (binc + 1) % 3, (binc + 2) % 3
        # incident face in (x, y) = reference face axes and z = height above the face
        cx = vec3(0)
        du = vec3(0)
        dv = vec3(0)
        for r in range(3):
            c = a
            if r == 0:
                c = ax
            elif r == 1:
                c = ay
            cx[r] = posoi[c] + tinc * sizeinc[binc] * rinc[c, binc]
            du[r] = sizeinc[bu] * rinc[c, bu]
            dv[r] = sizeinc[bv] * rinc[c, bv]
        cx[2] = sgn * cx[2] - sizeref[a]
        du[2] *= sgn
        dv[2] *= sgn
        poly = poly_t(0)
        for k in range(4):
            su = fp(1.0) if (k == 0 or k == 3) else fp(-1.0)
            sv = fp(1.0) if k < 2 else fp(-1.0)
            for c in ti.static(range(3)):
                poly[k, c] = cx[c] + su * du[c] + sv * dv[c]
        n = 4
        for side in range(4):  # +x, -x, +y, -y sides of the reference face
            coord = side // 2
            n = clip_half_plane(poly, n, coord, fp(1.0) - 2 * (side % 2), sizeref[ax] if coord == 0 else sizeref[ay])
        normal = col(matref, a) * (sgn if ref1 else -sgn)
        dupe2 = fp(BOX_DUPEPS) * (sizeref[ax] * sizeref[ax] + sizeref[ay] * sizeref[ay])
        accepted = accepted_t(0)
        naccept = 0
        for k in range(n):
            if poly[k, 2] <= margin:
                dupe = False
                for q in range(naccept):
                    dx = accepted[q, 0] - poly[k, 0]
                    dy = accepted[q, 1] - poly[k, 1]
                    if dx * dx + dy * dy < dupe2:
                        dupe = True
                if not dupe:
                    accepted[naccept, 0] = poly[k, 0]
                    accepted[naccept, 1] = poly[k, 1]
                    naccept += 1
                    local = vec3(0)
                    local[ax] = poly[k, 0]
                    local[ay] = poly[k, 1]
                    local[a] = sgn * (sizeref[a] + fp(0.5) * poly[k, 2])
                    emit(w, con_f, con_n, poly[k, 2], matref @ local + posref, normal, vec3(0))

    return types.SimpleNamespace(box_box_face=box_box_face)
