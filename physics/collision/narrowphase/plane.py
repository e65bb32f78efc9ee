"""Plane pairs: geom1 is the plane z = 0 of its frame, whose normal is the frame's z axis,
against a sphere, capsule, cylinder, box or ellipsoid (geom2).

As MuJoCo's mjc_PlaneSphere, mjc_PlaneCapsule (both end spheres), mjc_PlaneCylinder (up
to four rim points) and mjc_PlaneBox (up to four corners); plane-ellipsoid takes the
ellipsoid's support point, as MuJoCo's plane-convex routine does. :func:`cylinder_rim`
also serves the height fields, against a triangle's plane.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .contact import FAR, MINVAL, make_contact


@functools.cache
def make_plane(fp):
    m = make_math(fp)
    vec3 = m.vec3
    c = make_contact(fp)
    col, normalize, emit = c.col, c.normalize, c.emit

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

    return types.SimpleNamespace(plane_sphere=plane_sphere, plane_capsule=plane_capsule, plane_cylinder=plane_cylinder,
                                 cylinder_rim=cylinder_rim, plane_box=plane_box, plane_ellipsoid=plane_ellipsoid)
