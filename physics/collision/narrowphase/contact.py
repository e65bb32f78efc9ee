"""The contact table and the helpers that write to it, shared by every collider.

Contacts go to the env's row of the table through :func:`emit`, which writes the signed
distance, the position and the frame's first two rows (the normal from geom1 to geom2,
and a tangent or zero); :func:`complete_frame` then makes the frame orthonormal, once
per contact, as MuJoCo's mju_makeFrame. :func:`normalize` is mju_normalize3 and
:func:`col` a column of a rotation matrix (a geom's axis).
"""


import functools
import types

from ...layout import _columns
from ...runtime.backend import ti
from ...runtime.ti_math import make_math

# Contact table, one row per contact: floats (num_envs, capacity, NCON_F) and ints
# (num_envs, capacity, NCON_I); names as mjContact. ``exclude`` marks contacts in the gap
# band (dist >= includemargin) that the constraint stage skips, as MuJoCo's con.exclude.
CONTACT_F, NCON_F = _columns(("dist", 1), ("pos", 3), ("frame", 9), ("friction", 5), ("solref", 2), ("solimp", 5),
                             ("margin", 1), ("gap", 1), ("includemargin", 1))
CON_GEOM1, CON_GEOM2, CON_DIM, CON_EXCLUDE, CON_PAIR = range(5)
NCON_I = 5
# Per-env counters: contacts made, and contacts that did not fit in the table.
NCON, NOVERFLOW = 0, 1

C_DIST, C_POS, C_FRAME = CONTACT_F["dist"][0], CONTACT_F["pos"][0], CONTACT_F["frame"][0]

MINVAL = 1e-15  # mjMINVAL
FAR = 1e30  # the distance of a candidate point that makes no contact
MAXVAL = 1e10  # mjMAXVAL


@functools.cache
def make_contact(fp):
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
        n = con_n[w, NCON]
        if n < con_f.shape[1]:
            con_f[w, n, C_DIST] = dist
            for k in ti.static(range(3)):
                con_f[w, n, C_POS + k] = pos[k]
                con_f[w, n, C_FRAME + k] = normal[k]
                con_f[w, n, C_FRAME + 3 + k] = tangent[k]
            con_n[w, NCON] = n + 1
        else:
            con_n[w, NOVERFLOW] += 1

    @ti.func
    def complete_frame(w, c, con_f: ti.template()):
        """Orthonormal contact frame from the emitted normal and tangent, as mju_makeFrame:
        the second axis is the tangent (or y, or z, when none was given) made orthogonal
        to the normal; the third is their cross product."""
        x, _ = normalize(vec3(con_f[w, c, C_FRAME], con_f[w, c, C_FRAME + 1], con_f[w, c, C_FRAME + 2]))
        y = vec3(con_f[w, c, C_FRAME + 3], con_f[w, c, C_FRAME + 4], con_f[w, c, C_FRAME + 5])
        if y.dot(y) < fp(0.25):
            y = vec3(0, 1, 0)
            if x[1] >= fp(0.5) or x[1] <= fp(-0.5):
                y = vec3(0, 0, 1)
        y, _ = normalize(y - x * x.dot(y))
        z = x.cross(y)
        for k in ti.static(range(3)):
            con_f[w, c, C_FRAME + k] = x[k]
            con_f[w, c, C_FRAME + 3 + k] = y[k]
            con_f[w, c, C_FRAME + 6 + k] = z[k]

    return types.SimpleNamespace(col=col, normalize=normalize, emit=emit, complete_frame=complete_frame)
