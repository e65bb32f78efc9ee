"""Box-box, as MuJoCo's separating-axis routine (engine_collision_box.c): the 3 + 3 face
normals and the 9 edge crosses, then a face manifold (:mod:`.box_face`) or one contact
between the two supporting edges.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .box_face import make_box_face
from .contact import MAXVAL, MINVAL, make_contact

# box-box rounding slacks in units of float64 epsilon (MuJoCo's mjBOXBOX_* in double)
BOX_SEPEPS, BOX_PAREPS, BOX_SGNEPS, BOX_EDGEBIAS = 1e-13, 1e-16, 1e-9, 1e-6


@functools.cache
def make_box_box(fp):
    m = make_math(fp)
    vec3 = m.vec3
    c = make_contact(fp)
    col, normalize, emit = c.col, c.normalize, c.emit
    box_box_face = make_box_face(fp).box_box_face

    @ti.func
    def edge_axis(rot, i, j):
        """Unnormalized e_i x (column j of rot), in box1's frame."""
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        a = vec3(0)
        a[i1] = -rot[i2, j]
        a[i2] = rot[i1, j]
        return a

    @ti.func
    def box_box_edge(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, size2, rot, pos21, i, j,
                     septol):
        """One contact at the midpoint of the closest points of the two supporting edges."""
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        j1, j2 = (j + 1) % 3, (j + 2) % 3
        axis, _ = normalize(edge_axis(rot, i, j))
        if axis.dot(pos21) < 0:
            axis = -axis
        a2 = rot.transpose() @ axis
        # a near-zero axis component leaves the supporting edge ambiguous: try both
        amb1 = -1
        amb2 = -1
        if ti.abs(axis[i1]) < fp(BOX_SGNEPS):
            amb1 = i1
        elif ti.abs(axis[i2]) < fp(BOX_SGNEPS):
            amb1 = i2
        if ti.abs(a2[j1]) < fp(BOX_SGNEPS):
            amb2 = j1
        elif ti.abs(a2[j2]) < fp(BOX_SGNEPS):
            amb2 = j2
        d2 = col(rot, j)
        b = d2[i]
        denom = 1 - b * b
        w1 = vec3(0)
        w2 = vec3(0)
        best_d2 = fp(MAXVAL)
        for v1 in range(2 if amb1 >= 0 else 1):
            for v2 in range(2 if amb2 >= 0 else 1):
                c1 = vec3(0)
                c1[i1] = size1[i1] if axis[i1] >= 0 else -size1[i1]
                c1[i2] = size1[i2] if axis[i2] >= 0 else -size1[i2]
                if amb1 >= 0 and v1 == 1:
                    c1[amb1] = -c1[amb1]
                cc = vec3(0)
                cc[j1] = -size2[j1] if a2[j1] >= 0 else size2[j1]
                cc[j2] = -size2[j2] if a2[j2] >= 0 else size2[j2]
                if amb2 >= 0 and v2 == 1:
                    cc[amb2] = -cc[amb2]
                c2 = rot @ cc + pos21
                e = c2 - c1
                d1e = e[i]
                d2e = d2.dot(e)
                s = fp(0.0)
                if denom >= fp(MINVAL):
                    s = (d1e - b * d2e) / denom
                s = ti.math.clamp(s, -size1[i], size1[i])
                t = ti.math.clamp(b * s - d2e, -size2[j], size2[j])
                s = ti.math.clamp(d1e + b * t, -size1[i], size1[i])
                p1 = c1
                p1[i] += s
                p2 = c2 + d2 * t
                g = p2 - p1
                if g.dot(g) < best_d2:
                    best_d2 = g.dot(g)
                    w1 = p1
                    w2 = p2
        dist = (w2 - w1).dot(axis)
        if dist <= septol:
            emit(w, con_f, con_n, dist, mat1 @ ((w1 + w2) * fp(0.5)) + pos1, mat1 @ axis, vec3(0))

    @ti.func
    def box_box(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """Separating-axis test over 3 + 3 face normals and 9 edge crosses; face axes win
        near-ties because a face manifold has several points."""
        pos21 = mat1.transpose() @ (pos2 - pos1)
        pos12 = mat2.transpose() @ (pos1 - pos2)
        rot = mat1.transpose() @ mat2  # box2 axes (columns) in box1's frame
        rotabs = ti.abs(rot)
        septol = margin + fp(BOX_SEPEPS) * (size1.sum() + size2.sum())
        separated = False
        sep_best = fp(-MAXVAL)
        code = -1
        for i in range(3):
            sep = ti.abs(pos21[i]) - size1[i] - rotabs[i, 0] * size2[0] - rotabs[i, 1] * size2[1] - rotabs[i, 2] * size2[2]
            separated = separated or sep > septol
            if sep > sep_best:
                sep_best = sep
                code = i
        for j in range(3):
            sep = ti.abs(pos12[j]) - size2[j] - rotabs[0, j] * size1[0] - rotabs[1, j] * size1[1] - rotabs[2, j] * size1[2]
            separated = separated or sep > septol
            if sep > sep_best:
                sep_best = sep
                code = 3 + j
        sep_face = sep_best
        code_face = code
        for e in range(9):
            i, j = e // 3, e % 3
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            ax = edge_axis(rot, i, j)
            norm2 = ax[i1] * ax[i1] + ax[i2] * ax[i2]
            # nearly parallel edges: the cross product is rounding noise, and the face
            # axes already cover that direction
            if norm2 >= fp(BOX_PAREPS):
                ax = ax / ti.sqrt(norm2)
                radius1 = size1[i1] * ti.abs(ax[i1]) + size1[i2] * ti.abs(ax[i2])
                a2 = rot.transpose() @ ax
                radius2 = size2[j1] * ti.abs(a2[j1]) + size2[j2] * ti.abs(a2[j2])
                sep = ti.abs(ax.dot(pos21)) - radius1 - radius2
                separated = separated or sep > septol
                if sep - fp(BOX_EDGEBIAS) * ti.abs(sep) > sep_best and sep > sep_face:
                    sep_best = sep
                    code = 6 + e
        if not separated:
            if code >= 6:
                # an edge axis within ~8 degrees of the best face axis, and not clearly
                # deeper, duplicates that face: prefer the face's multi-point manifold
                axis, _ = normalize(edge_axis(rot, (code - 6) // 3, (code - 6) % 3))
                face_dot = fp(0.0)
                if code_face < 3:
                    face_dot = ti.abs(axis[code_face])
                else:
                    face_dot = ti.abs(axis.dot(col(rot, code_face - 3)))
                if face_dot > fp(0.99) and sep_best < sep_face + fp(0.05) * ti.abs(sep_face) + fp(MINVAL):
                    code = code_face
            if code >= 6:
                box_box_edge(w, con_f, con_n, pos1, mat1, size1, size2, rot, pos21, (code - 6) // 3, (code - 6) % 3,
                             septol)
            else:
                box_box_face(w, con_f, con_n, pos1, mat1, size1, pos2, mat2, size2, rot, pos21, pos12, code, margin)

    return types.SimpleNamespace(box_box=box_box)
