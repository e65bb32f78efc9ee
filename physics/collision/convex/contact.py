"""The convex collider's contact (MuJoCo's mjc_Convex for the pairs multi-CCD leaves alone,
and for every pair with it disabled): one where the geoms, grown by half the pair's margin
each, overlap, at the midpoint of the witness points with the normal from geom1 to geom2.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import make_narrowphase
from .common import make_common
from .penetration import make_penetration


@functools.lru_cache(maxsize=None)
def make_contact(fp):
    vec3 = make_math(fp).vec3
    nph = make_narrowphase(fp)
    normalize = make_common(fp).normalize
    penetration = make_penetration(fp).penetration

    @ti.func
    def collide(w, con_f: ti.template(), con_n: ti.template(), type1, pos1, mat1, size1, type2, pos2, mat2, size2,
                margin, hull1, hull2, tab: ti.template()):
        """The contact of two geoms, if they overlap; returns how many (0 or 1)."""
        dist, x1, x2 = penetration(type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2, tab)
        count = 0
        if dist < 0:
            nph.emit(w, con_f, con_n, margin + dist, (x1 + x2) * fp(0.5), normalize(x1 - x2), vec3(0))
            count = 1
        return count

    return types.SimpleNamespace(collide=collide)
