"""Narrow phase: contacts between two posed primitive geoms, as MuJoCo's primitive colliders.

Each routine takes the world pose (centre ``pos``, rotation ``mat`` whose columns are
the geom's axes) and MuJoCo ``size`` of both geoms plus the detection margin, and
appends its contacts to the env's row of the contact table through :func:`emit`: the
signed distance (negative = penetration), the position (midway between the surfaces),
and the frame whose first row is the normal from geom1 to geom2. Geom1 has the lower
geom type, as in MuJoCo's collision table. A contact is made when dist <= margin.

The geometry follows MuJoCo's analytic routines (engine_collision_primitive.c and the
separating-axis box-box of engine_collision_box.c) so that contact sets agree with it to
rounding; plane-ellipsoid uses the ellipsoid's support point, as MuJoCo's plane-convex
routine does.
"""


import functools
import types

from ..layout import _columns
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

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
# box-box rounding slacks in units of float64 epsilon (MuJoCo's mjBOXBOX_* in double)
BOX_SEPEPS, BOX_PAREPS, BOX_SGNEPS, BOX_DUPEPS, BOX_EDGEBIAS = 1e-13, 1e-16, 1e-9, 1e-14, 1e-6
BOX_MAXVERT = 12  # a quad clipped by four half-planes has at most 8 vertices; room to spare


@functools.cache
def make_narrowphase(fp):
    m = make_math(fp)
    vec3 = m.vec3
    poly_t = ti.types.matrix(BOX_MAXVERT, 3, fp)
    accepted_t = ti.types.matrix(BOX_MAXVERT, 2, fp)

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

    # --- plane: geom1 is the plane z = 0 of its frame, normal = its z axis ------------
    @ti.func
    def plane_sphere_raw(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, center, radius, margin, tangent):
        normal = col(mat1, 2)
        cdist = (center - pos1).dot(normal)
        made = 0
        if cdist <= margin + radius:
            dist = cdist - radius
            emit(w, con_f, con_n, dist, center - normal * (dist / 2 + radius), normal, tangent)
            made = 1
        return made

    @ti.func
    def plane_sphere(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        plane_sphere_raw(w, con_f, con_n, pos1, mat1, pos2, size2[0], margin, vec3(0))

    @ti.func
    def plane_capsule(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        # both end spheres; the contact frames are aligned with the capsule axis
        axis = col(mat2, 2)
        segment = axis * size2[1]
        plane_sphere_raw(w, con_f, con_n, pos1, mat1, pos2 + segment, size2[0], margin, axis)
        plane_sphere_raw(w, con_f, con_n, pos1, mat1, pos2 - segment, size2[0], margin, axis)

    @ti.func
    def plane_cylinder(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """Up to four points on the rim nearest the plane: the deepest point, the one
        across the rim on the other cap, and two more on the near rim at 120 degrees."""
        normal = col(mat1, 2)
        dist, points = cylinder_rim(normal, (pos2 - pos1).dot(normal), pos2, mat2, size2, margin)
        for k in ti.static(range(4)):
            if dist[k] <= margin:
                p = vec3(points[k, 0], points[k, 1], points[k, 2])
                emit(w, con_f, con_n, dist[k], p - normal * (dist[k] * fp(0.5)), normal, vec3(0))

    @ti.func
    def cylinder_rim(normal, dist0, pos2, mat2, size2, margin):
        """The rim points plane_cylinder weighs against a plane with this normal whose
        distance from the cylinder's centre is dist0, and their distances from it: the
        deepest, the one across on the other cap, the two at 120 degrees on the near rim.
        Points that make no contact (none does unless the deepest is within the margin)
        get distance FAR."""
        axis = col(mat2, 2)
        prjaxis = normal.dot(axis)
        if prjaxis > 0:  # make the axis point towards the plane
            axis = -axis
            prjaxis = -prjaxis
        # in-rim direction towards the plane: -normal without its axial component
        vec = axis * prjaxis - normal
        len_sqr = vec.dot(vec)
        if len_sqr >= fp(MINVAL * MINVAL):
            vec = vec * (size2[0] / ti.sqrt(len_sqr))
        else:  # disk parallel to the plane: any rim direction
            vec = col(mat2, 0) * size2[0]
        prjvec = vec.dot(normal)
        axis = axis * size2[1]
        prjaxis = prjaxis * size2[1]
        side, _ = normalize(vec.cross(axis))
        side = side * (size2[0] * ti.sqrt(fp(3.0)) / 2)
        near = -prjvec * fp(0.5)
        dist = ti.Vector([dist0 + prjaxis + prjvec, dist0 - prjaxis + prjvec, dist0 + prjaxis + near,
                          dist0 + prjaxis + near], fp)
        points = ti.Matrix.rows([pos2 + vec + axis, pos2 + vec - axis, pos2 + axis - vec * fp(0.5) + side,
                                 pos2 + axis - vec * fp(0.5) - side])
        if dist[0] > margin:
            dist = ti.Vector([fp(FAR)] * 4)
        return dist, points

    @ti.func
    def plane_box(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """The first four corners (in corner order) below the margin that face the plane."""
        normal = col(mat1, 2)
        dist = (pos2 - pos1).dot(normal)
        cnt = 0
        for i in range(8):
            local = vec3(size2[0] if i & 1 else -size2[0], size2[1] if i & 2 else -size2[1],
                         size2[2] if i & 4 else -size2[2])
            corner = mat2 @ local
            ldist = normal.dot(corner)
            if dist + ldist <= margin and ldist <= 0 and cnt < 4:
                d = dist + ldist
                emit(w, con_f, con_n, d, corner + pos2 - normal * (d / 2), normal, vec3(0))
                cnt += 1

    @ti.func
    def plane_ellipsoid(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """The ellipsoid's support point along -normal is its deepest point."""
        normal = col(mat1, 2)
        local = mat2.transpose() @ (-normal)
        s = vec3(local[0] * size2[0], local[1] * size2[1], local[2] * size2[2])
        norm2 = s.dot(s)
        support = col(mat2, 0) * size2[0] + pos2
        if norm2 >= fp(MINVAL * MINVAL):
            s = s / ti.sqrt(norm2)
            support = mat2 @ vec3(s[0] * size2[0], s[1] * size2[1], s[2] * size2[2]) + pos2
        dist = normal.dot(support - pos1)
        if dist <= margin:
            emit(w, con_f, con_n, dist, support - normal * (fp(0.5) * dist), normal, vec3(0))

    # --- spheres and segments --------------------------------------------------------------
    @ti.func
    def sphere_sphere_raw(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, r1, pos2, mat2, r2, margin):
        dif = pos1 - pos2
        cdist_sqr = dif.dot(dif)
        min_dist = margin + r1 + r2
        made = 0
        if cdist_sqr <= min_dist * min_dist:
            dist = ti.sqrt(cdist_sqr) - r1 - r2
            normal, length = normalize(pos2 - pos1)
            if length < fp(MINVAL):
                # coincident centres: any direction; MuJoCo takes the cross of the z axes
                normal, _ = normalize(col(mat1, 2).cross(col(mat2, 2)))
            emit(w, con_f, con_n, dist, pos1 + normal * (r1 + dist / 2), normal, vec3(0))
            made = 1
        return made

    @ti.func
    def sphere_sphere(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        sphere_sphere_raw(w, con_f, con_n, pos1, mat1, size1[0], pos2, mat2, size2[0], margin)

    @ti.func
    def sphere_capsule(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        # nearest point of the capsule's segment, then two spheres
        axis = col(mat2, 2)
        x = ti.math.clamp(axis.dot(pos1 - pos2), -size2[1], size2[1])
        sphere_sphere_raw(w, con_f, con_n, pos1, mat1, size1[0], pos2 + axis * x, mat2, size2[0], margin)

    @ti.func
    def sphere_cylinder(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """Side (sphere against the axis point), cap (sphere against the cap plane) or
        rim (sphere against the nearest rim point), chosen by where the centre projects."""
        radius, height = size2[0], size2[1]
        axis = col(mat2, 2)
        vec = pos1 - pos2
        x = axis.dot(vec)
        a_proj = axis * x
        p_proj = vec - a_proj
        p_proj_sqr = p_proj.dot(p_proj)
        collide_side = ti.abs(x) < height
        collide_cap = p_proj_sqr < radius * radius
        if collide_side and collide_cap:  # centre inside: leave by the nearer surface
            if height - ti.abs(x) < radius - ti.sqrt(p_proj_sqr):
                collide_side = False
            else:
                collide_cap = False
        if collide_side:
            sphere_sphere_raw(w, con_f, con_n, pos1, mat1, size1[0], pos2 + a_proj, mat2, radius, margin)
        elif collide_cap:
            cap_normal = axis if x > 0 else -axis
            cap = pos2 + cap_normal * height
            cdist = (pos1 - cap).dot(cap_normal)
            if cdist <= margin + size1[0]:
                dist = cdist - size1[0]
                # the cap's normal points out of the cylinder; the contact normal goes
                # from the sphere (geom1) into the cylinder
                emit(w, con_f, con_n, dist, pos1 - cap_normal * (dist / 2 + size1[0]), -cap_normal, vec3(0))
        else:
            rim = p_proj * (radius / ti.sqrt(p_proj_sqr)) + axis * (height if x > 0 else -height) + pos2
            sphere_sphere_raw(w, con_f, con_n, pos1, mat1, size1[0], rim, mat2, fp(0.0), margin)

    @ti.func
    def capsule_capsule(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """Closest points of the two segments, then two spheres; parallel segments give
        up to two contacts from the segments' end points."""
        axis1 = col(mat1, 2) * size1[1]
        axis2 = col(mat2, 2) * size2[1]
        dif = pos1 - pos2
        ma = axis1.dot(axis1)
        mb = -axis1.dot(axis2)
        mc = axis2.dot(axis2)
        u = -axis1.dot(dif)
        v = axis2.dot(dif)
        det = ma * mc - mb * mb
        if ti.abs(det) >= fp(MINVAL):
            x1 = (mc * u - mb * v) / det
            x2 = (ma * v - mb * u) / det
            if x1 > 1:
                x1 = fp(1.0)
                x2 = (v - mb) / mc
            elif x1 < -1:
                x1 = fp(-1.0)
                x2 = (v + mb) / mc
            if x2 > 1:
                x2 = fp(1.0)
                x1 = ti.math.clamp((u - mb) / ma, -1, 1)
            elif x2 < -1:
                x2 = fp(-1.0)
                x1 = ti.math.clamp((u + mb) / ma, -1, 1)
            sphere_sphere_raw(w, con_f, con_n, pos1 + axis1 * x1, mat1, size1[0], pos2 + axis2 * x2, mat2, size2[0],
                              margin)
        else:
            # ends of segment 1 against segment 2, then (while fewer than two contacts)
            # the ends of segment 2 against segment 1
            n = 0
            for k in range(4):
                if k < 2 or n < 2:
                    end = fp(1.0) - 2 * (k % 2)
                    p1 = pos1 + axis1 * end
                    p2 = pos2 + axis2 * end
                    if k < 2:
                        p2 = pos2 + axis2 * ti.math.clamp((v - mb * end) / mc, -1, 1)
                    else:
                        p1 = pos1 + axis1 * ti.math.clamp((u - mb * end) / ma, -1, 1)
                    n += sphere_sphere_raw(w, con_f, con_n, p1, mat1, size1[0], p2, mat2, size2[0], margin)

    @ti.func
    def sphere_box(w, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2, margin):
        """Nearest box point to the centre; a centre inside the box leaves by the nearest face."""
        center = mat2.transpose() @ (pos1 - pos2)
        clamped = ti.math.clamp(center, -size2, size2)
        tmp, dist = normalize(clamped - center)
        if dist - size1[0] <= margin:
            pos = vec3(0)
            normal = vec3(0)
            if dist <= fp(MINVAL):
                closest = (size2[0] + size2[1] + size2[2]) * 2
                k = 0
                for i in range(6):
                    face = (fp(1.0) if i % 2 else fp(-1.0)) * size2[i // 2] - center[i // 2]
                    if closest > ti.abs(face):
                        closest = ti.abs(face)
                        k = i
                nearest = vec3(0)
                nearest[k // 2] = fp(-1.0) if k % 2 else fp(1.0)
                pos = center + nearest * ((size1[0] - closest) / 2)
                normal = mat2 @ nearest
                dist = -closest
            else:
                pos = clamped * fp(0.5) + (center + tmp * size1[0]) * fp(0.5)
                normal = mat2 @ tmp
            emit(w, con_f, con_n, dist - size1[0], mat2 @ pos + pos2, normal, vec3(0))

    # --- capsule-box: the segment's closest feature to the box, then up to two spheres ----
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

    # --- box-box: separating axes, then a face manifold or an edge-edge point -------------
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

    return types.SimpleNamespace(
        emit=emit, complete_frame=complete_frame, plane_sphere=plane_sphere, plane_capsule=plane_capsule, plane_cylinder=plane_cylinder, cylinder_rim=cylinder_rim,
        plane_box=plane_box, plane_ellipsoid=plane_ellipsoid, sphere_sphere=sphere_sphere,
        sphere_capsule=sphere_capsule, sphere_cylinder=sphere_cylinder, capsule_capsule=capsule_capsule,
        sphere_box=sphere_box, capsule_box=capsule_box, box_box=box_box,
    )
