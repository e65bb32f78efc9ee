"""Capsule-box, as MuJoCo's mjc_CapsuleBox: the capsule segment's closest feature to the
box (a segment end over a face, or the closest points to one of the 12 edges), then a
sphere-box contact there and, where the capsule lies along a box face or edge, at a
second segment point; all in the box's frame.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .contact import MINVAL, make_contact
from .spheres import make_spheres


@functools.cache
def make_capsule_box(fp):
    m = make_math(fp)
    vec3 = m.vec3
    col = make_contact(fp).col
    sphere_box = make_spheres(fp).sphere_box

    @ti.func
    def capsule_box_closest(pos, halfaxis, size1, size2, margin):
        """Closest approach of the capsule segment (centre ``pos``, half axis
        ``halfaxis``, box frame) to the box: segment ends against faces, then the
        segment against each of the 12 edges. Returns the segment parameter (-1..1) and
        edge parameter of the closest points and what is closest: ``cltype`` -3/-1
        for a segment end over face ``clface`` (-1: end inside the box), 0..8 for an
        edge (3 * box-side clamp + segment-side clamp), -4 when nothing qualifies."""
        bestdist = margin + 2 * (size1[0] + size1[1] + size2.sum())
        bestsegmentpos = fp(0.0)
        bestboxpos = fp(0.0)
        cltype = -4
        clface = -1
        clcorner = 0
        cledge = 0
        for s in range(2):
            end = 2 * s - 1
            p = pos + halfaxis * end
            clamped = p
            nout = 0
            face = -1
            for j in range(3):
                if clamped[j] < -size2[j]:
                    nout += 1
                    face = j
                    clamped[j] = -size2[j]
                elif clamped[j] > size2[j]:
                    nout += 1
                    face = j
                    clamped[j] = size2[j]
            if nout <= 1:
                d = (clamped - p).dot(clamped - p)
                if d < bestdist:
                    bestdist = d
                    bestsegmentpos = fp(end)
                    cltype = -2 + end
                    clface = face
        mc = size1[1] * size1[1]
        for j in range(3):
            for i in range(8):
                if (i & (1 << j)) == 0:
                    corner = vec3(size2[0] if i & 1 else -size2[0], size2[1] if i & 2 else -size2[1],
                                  size2[2] if i & 4 else -size2[2])
                    corner[j] = 0
                    dif = corner - pos
                    ma = size2[j] * size2[j]
                    mb = -size2[j] * halfaxis[j]
                    u = -size2[j] * dif[j]
                    v = halfaxis.dot(dif)
                    det = ma * mc - mb * mb
                    if ti.abs(det) >= fp(MINVAL):
                        idet = 1 / det
                        x1 = (mc * u - mb * v) * idet
                        x2 = (ma * v - mb * u) * idet
                        s1 = 1
                        s2 = 1
                        if x1 > 1:
                            x1, s1 = fp(1.0), 2
                            x2 = (v - mb) * (1 / mc)
                        elif x1 < -1:
                            x1, s1 = fp(-1.0), 0
                            x2 = (v + mb) * (1 / mc)
                        if x2 > 1 or x2 < -1:
                            if x2 > 1:
                                x2, s2 = fp(1.0), 2
                                x1 = (u - mb) * (1 / ma)
                            else:
                                x2, s2 = fp(-1.0), 0
                                x1 = (u + mb) * (1 / ma)
                            if x1 > 1:
                                x1, s1 = fp(1.0), 2
                            elif x1 < -1:
                                x1, s1 = fp(-1.0), 0
                        dif = dif - halfaxis * x2
                        dif[j] += size2[j] * x1
                        d = dif.dot(dif)
                        # the MINVAL slack keeps a segment numerically parallel to a face
                        # with its face contact
                        if d < bestdist - fp(MINVAL):
                            bestdist = d
                            bestsegmentpos = x2
                            bestboxpos = x1
                            c = s1 * 3 + s2
                            clcorner = i + (1 << j) * (c // 6)
                            cledge = j
                            cltype = c
        return cltype, clface, clcorner, cledge, bestsegmentpos, bestboxpos

    @ti.func
    def capsule_box_second(axis, halfaxis, pos, size2, cltype, clface, clcorner, cledge, bsp, bestboxpos):
        """Segment parameter offset of a second contact where the capsule lies along a
        box face or edge: the farthest segment point still over the box; below -3 for
        none (the capsule points at or away from the box)."""
        axisdir = (1 if halfaxis[0] > 0 else 0) + (2 if halfaxis[1] > 0 else 0) + (4 if halfaxis[2] > 0 else 0)
        secondpos = fp(-4.0)
        if cltype >= 0 and cltype // 3 != 1:  # a box corner is closest
            c1 = axisdir ^ clcorner
            if c1 != 0 and c1 != 7:
                mul, de, dp = fp(1.0), 1 - bsp, 1 + bsp
                if c1 == 3 or c1 == 5 or c1 == 6:
                    mul, de, dp = fp(-1.0), 1 + bsp, 1 - bsp
                    c1 = 7 - c1
                ax = 0 if c1 == 1 else (1 if c1 == 2 else 2)
                ax1, ax2 = (ax + 1) % 3, (ax + 2) % 3
                if axis[ax] * axis[ax] > fp(0.5):  # along the box edge
                    secondpos = ti.min(de, 2 * size2[ax] / ti.abs(halfaxis[ax])) * mul
                else:  # across a box face
                    secondpos = dp
                    secondpos = ti.min(secondpos, 2 * size2[ax1] / ti.abs(halfaxis[ax1]))
                    secondpos = ti.min(secondpos, 2 * size2[ax2] / ti.abs(halfaxis[ax2]))
                    secondpos *= -mul
        elif cltype >= 0:  # the middle of a box edge is closest
            c1 = (axisdir ^ clcorner) & (7 - (1 << cledge))
            if c1 == 1 or c1 == 2 or c1 == 4:  # crossing the edge, not a T
                ax = cledge
                ax1, ax2 = (ax + 1) % 3, (ax + 2) % 3
                if ti.abs(axis[ax1]) > ti.abs(axis[ax2]):
                    ax1 = ax2
                ax2 = 3 - ax - ax1
                mul = fp(-1.0)
                secondpos = 1 + bsp
                if c1 & (1 << ax2):
                    mul = fp(1.0)
                    secondpos = 1 - bsp
                secondpos = ti.min(secondpos, 2 * size2[ax2] / ti.abs(halfaxis[ax2]))
                e2 = 1 + bestboxpos
                if ((axisdir & (1 << ax)) != 0) == ((c1 & (1 << ax2)) != 0):
                    e2 = 1 - bestboxpos
                secondpos = ti.min(secondpos, size2[ax] * e2 / ti.abs(halfaxis[ax]))
                secondpos *= mul
        elif clface != -1:  # a segment end over a face: follow the segment while over the box
            mul = fp(1.0) if cltype == -3 else fp(-1.0)
            secondpos = fp(2.0)
            other = pos - halfaxis * mul
            for i in range(3):
                if i != clface:
                    e1 = (size2[i] - other[i]) / halfaxis[i] * mul
                    if e1 > 0 and e1 < secondpos:
                        secondpos = e1
                    e1 = (-size2[i] - other[i]) / halfaxis[i] * mul
                    if e1 > 0 and e1 < secondpos:
                        secondpos = e1
            secondpos *= mul
        return secondpos

    @ti.func
    def capsule_box(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """Sphere-box at the segment point closest to the box and, where the capsule
        lies along the box, at a second segment point (MuJoCo's capsule-box)."""
        pos = mat2.transpose() @ (pos1 - pos2)
        axis = mat2.transpose() @ col(mat1, 2)
        halfaxis = axis * size1[1]
        cltype, clface, clcorner, cledge, bsp, bestboxpos = capsule_box_closest(pos, halfaxis, size1, size2, margin)
        if cltype != -4:
            secondpos = capsule_box_second(axis, halfaxis, pos, size2, cltype, clface, clcorner, cledge, bsp,
                                           bestboxpos)
            for k in range(2 if secondpos > -3 else 1):
                at = bsp + (secondpos if k == 1 else fp(0.0))
                sphere_box(w, con_f, con_n, mat2 @ (pos + halfaxis * at) + pos2, mat1, size1, pos2, mat2, size2, margin)

    return types.SimpleNamespace(capsule_box=capsule_box)
