"""The convex collider's contacts (MuJoCo's mjc_Convex with multi-CCD): one where the
geoms, grown by half the pair's margin each, overlap, at the midpoint of the witness
points with the normal from geom1 to geom2. Where no geom of the pair is a sphere or an
ellipsoid, MuJoCo 4 adds up to four contacts by rotating the geoms slightly about the
first contact's tangent axes; each new contact far enough from the others is kept, with
the first contact's depth.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import make_narrowphase
from .common import MULTICCD_ANGLE, MULTICCD_TOLERANCE, make_common
from .penetration import make_penetration


@functools.lru_cache(maxsize=None)
def make_multiccd(fp):
    m = make_math(fp)
    nph = make_narrowphase(fp)
    cm = make_common(fp)
    vec3 = m.vec3
    row, set_row, normalize = cm.row, cm.set_row, cm.normalize
    penetration = make_penetration(fp).penetration

    @ti.func
    def collide(w, con_f: ti.template(), con_n: ti.template(), type1, pos1, mat1, size1, rbound1, type2, pos2,
                mat2, size2, rbound2, margin, npass, hull1, hull2, tab: ti.template()):
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
            dist, x1, x2 = penetration(type1, p1, m1, size1, type2, p2, m2, size2, margin, hull1, hull2, tab)
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

    return types.SimpleNamespace(collide=collide)
