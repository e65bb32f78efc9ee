"""Sphere and capsule pairs: spheres and segments (a capsule is the segment along its z
axis, half length size[1], grown by its radius size[0]) against a sphere, capsule,
cylinder or box.

As MuJoCo's mjc_SphereSphere, mjc_SphereCapsule, mjc_SphereCylinder, mjc_CapsuleCapsule
and mjc_SphereBox: the nearest points of the two shapes' cores, then a sphere-sphere
contact between them. sphere_box also serves capsule-box, at points along the segment.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .contact import MINVAL, make_contact


@functools.cache
def make_spheres(fp):
    m = make_math(fp)
    vec3 = m.vec3
    c = make_contact(fp)
    col, normalize, emit = c.col, c.normalize, c.emit

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

    return types.SimpleNamespace(sphere_sphere=sphere_sphere, sphere_capsule=sphere_capsule,
                                 sphere_cylinder=sphere_cylinder, capsule_capsule=capsule_capsule,
                                 sphere_box=sphere_box)
