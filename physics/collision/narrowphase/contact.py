"""The contact table and the helpers that write to it, shared by every collider.

Contacts go to the env's row of the table through :func:`emit`, which writes the signed
distance, the position and the frame's first two rows (the normal from geom1 to geom2,
and a tangent or zero); :func:`complete_frame` then makes the frame orthonormal, once
per contact, as MuJoCo's mju_makeFrame. :func:`normalize` is mju_normalize3 and
:func:`col` a column of a rotation matrix (a geom's axis).
"""


import functools
import types

from ... import layout as L
from ...access import make_access
from ...runtime.backend import ti
from ...runtime.ti_math import make_math

# The contact table (physics/layout.py: con_f, con_i, con_n, one row per contact, names as
# mjContact); column positions for the host side.
CONTACT_F, NCON_F = L.CON_F, L.CON_F.width
CON_GEOM1, CON_GEOM2, CON_DIM, CON_EXCLUDE, CON_PAIR, CON_EFC_ADDRESS = (L.CON_I.start(k) for k in L.CON_I)
NCON_I = L.CON_I.width
NCON, NOVERFLOW = L.CON_N.start("ncon"), L.CON_N.start("ncon_overflow")

MINVAL = 1e-15  # mjMINVAL
FAR = 1e30  # the distance of a candidate point that makes no contact
MAXVAL = 1e10  # mjMAXVAL


@functools.cache
def make_contact(fp):
    A = make_access(fp)
    m = make_math(fp)
    vec3 = m.vec3

    @ti.func
    def col(mat, k):
        return vec3(mat[0, k], mat[1, k], mat[2, k])

    @ti.func
    def normalize(v):
        """v / |v| and |v|; (1, 0, 0) when v is too short, as mju_normalize3."""
        n = v.norm()
        r = vec3(1, 0, 0)
        if n >= fp(MINVAL):
            r = v / n
        return r, n

    @ti.func
    def emit(w, con_f: ti.template(), con_n: ti.template(), dist, pos, normal, tangent):
        """Append one contact to env w's rows: dist, pos, and the normal and tangent as
        the frame's first two rows (:func:`complete_frame` finishes them, once per
        contact, which keeps this inlined-everywhere helper small). A contact that does
        not fit is counted, never written."""
        n = A.ncon(con_n, w)
        if n < con_f.shape[1]:
            A.set_contact_dist(con_f, w, n, dist)
            for k in ti.static(range(3)):
                A.set_contact_pos_at(con_f, w, n, k, pos[k])
                A.set_contact_frame_at(con_f, w, n, k, normal[k])
                A.set_contact_frame_at(con_f, w, n, 3 + k, tangent[k])
            A.set_ncon(con_n, w, n + 1)
        else:
            A.set_ncon_overflow(con_n, w, A.ncon_overflow(con_n, w) + 1)

    @ti.func
    def complete_frame(w, c, con_f: ti.template()):
        """Orthonormal contact frame from the emitted normal and tangent, as mju_makeFrame:
        the second axis is the tangent (or y, or z, when none was given) made orthogonal
        to the normal; the third is their cross product."""
        x, _ = normalize(vec3(A.contact_frame_at(con_f, w, c, 0), A.contact_frame_at(con_f, w, c, 1), A.contact_frame_at(con_f, w, c, 2)))
        y = vec3(A.contact_frame_at(con_f, w, c, 3), A.contact_frame_at(con_f, w, c, 4), A.contact_frame_at(con_f, w, c, 5))
        if y.dot(y) < fp(0.25):
            y = vec3(0, 1, 0)
            if x[1] >= fp(0.5) or x[1] <= fp(-0.5):
                y = vec3(0, 0, 1)
        y, _ = normalize(y - x * x.dot(y))
        z = x.cross(y)
        for k in ti.static(range(3)):
            A.set_contact_frame_at(con_f, w, c, k, x[k])
            A.set_contact_frame_at(con_f, w, c, 3 + k, y[k])
            A.set_contact_frame_at(con_f, w, c, 6 + k, z[k])

    return types.SimpleNamespace(col=col, normalize=normalize, emit=emit, complete_frame=complete_frame)
