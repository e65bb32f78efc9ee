"""Rays against a world's geoms, as MuJoCo's mj_ray casts them for its rangefinders.

Distances along the ray (in units of the ray's direction vector) to the nearest geom the
ray meets ahead of its origin, or -1: planes (from their front), spheres, capsules,
ellipsoids, cylinders, boxes, height fields and meshes, with MuJoCo's rules: a geom of the
excluded body, or an invisible one (layout.GEOM_I ``rayable``), is not seen; primitives
first test a bounding sphere; a height field is its base box, the triangles of the grid
cells the ray's segment through its top box passes over, and the walls of that box below
the grid's edge; a mesh is its own triangles (not its hull), behind the box of its
geom_size, through its tree (physics/mesh_rays.py) in the geom tables' rows past the geoms.
Only a model whose rangefinders can see a mesh compiles the mesh code (Features.ray_meshes).
The renderer's ray caster (physics/render/raycast.py) draws in float32; these follow
MuJoCo's arithmetic in the World's precision.
"""

import functools
import types

from . import layout as L
from .access import make_access
from .mesh_rays import BIG, make_mesh_rays
from .model import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD, GEOM_MESH, GEOM_PLANE,
                    GEOM_SPHERE)
from .runtime.backend import ti
from .runtime.ti_math import make_math

MINVAL = 1e-15  # mjMINVAL


@functools.lru_cache(maxsize=None)
def make_rays(fp, meshes: bool = True):
    """The ray functions; ``meshes``: compile the mesh geoms' path (Features.ray_meshes)."""
    m = make_math(fp)
    A = make_access(fp)
    tri = make_mesh_rays(fp)
    vec6 = ti.types.vector(6, fp)

    @ti.func
    def quad(a, b, c):
        """Both roots of a x^2 + 2 b x + c (-1, -1 if none) and the smallest non-negative one
        (MuJoCo's ray_quad)."""
        x0, x1, best = fp(-1.0), fp(-1.0), fp(-1.0)
        det = b * b - a * c
        if det >= 0 and a >= MINVAL:
            det = ti.sqrt(det)
            x0, x1 = (-b - det) / a, (-b + det) / a
            if x0 >= 0:
                best = x0
            elif x1 >= 0:
                best = x1
        return x0, x1, best

    @ti.func
    def sphere(pos, dist_sqr, pnt, vec):
        dif = pnt - pos
        _, _, x = quad(vec.dot(vec), vec.dot(dif), dif.dot(dif) - dist_sqr)
        return x

    @ti.func
    def nearer(x, sol):
        out = x
        if sol >= 0 and (x < 0 or sol < x):
            out = sol
        return out

    @ti.func
    def plane(lpnt, lvec, size):
        x = fp(-1.0)
        if lvec[2] <= -MINVAL:
            t = -lpnt[2] / lvec[2]
            p0, p1 = lpnt[0] + t * lvec[0], lpnt[1] + t * lvec[1]
            if t >= 0 and (size[0] <= 0 or ti.abs(p0) <= size[0]) and (size[1] <= 0 or ti.abs(p1) <= size[1]):
                x = t
        return x

    @ti.func
    def capsule(lpnt, lvec, size):
        r, h = size[0], size[1]
        _, _, sol = quad(lvec[0] * lvec[0] + lvec[1] * lvec[1], lvec[0] * lpnt[0] + lvec[1] * lpnt[1],
                         lpnt[0] * lpnt[0] + lpnt[1] * lpnt[1] - r * r)
        x = fp(-1.0)
        if sol >= 0 and ti.abs(lpnt[2] + sol * lvec[2]) <= h:
            x = sol
        a = lvec.dot(lvec)
        for side in ti.static((1.0, -1.0)):
            dif = m.vec3(lpnt[0], lpnt[1], lpnt[2] - side * h)
            x0, x1, _ = quad(a, lvec.dot(dif), dif.dot(dif) - r * r)
            for xx in ti.static((x0, x1)):
                if xx >= 0 and side * (lpnt[2] + xx * lvec[2]) >= h:
                    x = nearer(x, xx)
        return x

    @ti.func
    def ellipsoid(lpnt, lvec, size):
        s = m.vec3(1 / (size[0] * size[0]), 1 / (size[1] * size[1]), 1 / (size[2] * size[2]))
        _, _, x = quad((s * lvec * lvec).sum(), (s * lvec * lpnt).sum(), (s * lpnt * lpnt).sum() - 1)
        return x

    @ti.func
    def cylinder(lpnt, lvec, size):
        r, h = size[0], size[1]
        x = fp(-1.0)
        if ti.abs(lvec[2]) > MINVAL:
            for side in ti.static((-1.0, 1.0)):
                sol = (side * h - lpnt[2]) / lvec[2]
                p0, p1 = lpnt[0] + sol * lvec[0], lpnt[1] + sol * lvec[1]
                if sol >= 0 and p0 * p0 + p1 * p1 <= r * r:
                    x = nearer(x, sol)
        _, _, sol = quad(lvec[0] * lvec[0] + lvec[1] * lvec[1], lvec[0] * lpnt[0] + lvec[1] * lpnt[1],
                         lpnt[0] * lpnt[0] + lpnt[1] * lpnt[1] - r * r)
        if sol >= 0 and ti.abs(lpnt[2] + sol * lvec[2]) <= h:
            x = nearer(x, sol)
        return x

    @ti.func
    def box(lpnt, lvec, size):
        """The nearest face hit, and every face's (-x, +x, -y, +y, -z, +z; -1 where missed)."""
        x = fp(-1.0)
        faces = vec6(-1.0)
        for i in ti.static(range(3)):
            j, k = ti.static((i + 1) % 3, (i + 2) % 3)
            if ti.abs(lvec[i]) > MINVAL:
                for side in ti.static((-1.0, 1.0)):
                    sol = (side * size[i] - lpnt[i]) / lvec[i]
                    if sol >= 0 and ti.abs(lpnt[j] + sol * lvec[j]) <= size[j] \
                            and ti.abs(lpnt[k] + sol * lvec[k]) <= size[k]:
                        x = nearer(x, sol)
                        faces[2 * i + (1 if side > 0 else 0)] = sol
        return x, faces

    @ti.func
    def primitive(gtype, pos, rot, size, pnt, vec):
        """MuJoCo's mju_rayGeom: the primitive geom at (pos, rot) of ``size``."""
        lpnt, lvec = rot.transpose() @ (pnt - pos), rot.transpose() @ vec
        x = fp(-1.0)
        if gtype == GEOM_PLANE:
            x = plane(lpnt, lvec, size)
        elif gtype == GEOM_SPHERE:
            x = sphere(pos, size[0] * size[0], pnt, vec)
        elif gtype == GEOM_CAPSULE:
            if sphere(pos, (size[0] + size[1]) * (size[0] + size[1]), pnt, vec) >= 0:
                x = capsule(lpnt, lvec, size)
        elif gtype == GEOM_ELLIPSOID:
            x = ellipsoid(lpnt, lvec, size)
        elif gtype == GEOM_CYLINDER:
            if sphere(pos, size[0] * size[0] + size[1] * size[1], pnt, vec) >= 0:
                x = cylinder(lpnt, lvec, size)
        elif gtype == GEOM_BOX:
            if sphere(pos, size.dot(size), pnt, vec) >= 0:
                x, _ = box(lpnt, lvec, size)
        return x

    @ti.func
    def sample(geom_f: ti.template(), mg, k):
        return geom_f[mg, k // geom_f.shape[2], k % geom_f.shape[2]]

    @ti.func
    def hfield(g, pos, rot, pnt, vec, geom_i: ti.template(), geom_f: ti.template(), mg):
        """MuJoCo's mj_rayHfield."""
        size = A.geom_hfield_size(geom_f, mg, g)
        base, nrow, ncol = A.geom_hf_base(geom_i, g), A.geom_hf_nrow(geom_i, g), A.geom_hf_ncol(geom_i, g)
        zaxis = m.vec3(rot[0, 2], rot[1, 2], rot[2, 2])
        lpnt, lvec = rot.transpose() @ (pnt - pos), rot.transpose() @ vec
        base_pos = pos - zaxis * size[3] * 0.5
        x, _ = box(rot.transpose() @ (pnt - base_pos), lvec, m.vec3(size[0], size[1], size[3] * 0.5))
        if sphere(base_pos, size[0] * size[0] + size[1] * size[1] + size[3] * size[3] * 0.25, pnt, vec) < 0:
            x = fp(-1.0)
        top_pos = pos + zaxis * size[2] * 0.5
        top_half = m.vec3(size[0], size[1], size[2] * 0.5)
        top, faces = box(rot.transpose() @ (pnt - top_pos), lvec, top_half)
        if sphere(top_pos, top_half.dot(top_half), pnt, vec) < 0:
            top = fp(-1.0)
        if top >= 0:
            x = hfield_grid(lpnt, lvec, size, base, nrow, ncol, top, faces, x, geom_f, mg)
        return x

    @ti.func
    def hfield_grid(lpnt, lvec, size, base, nrow, ncol, top, faces, x0, geom_f: ti.template(), mg):
        """The grid's triangles over the ray's segment through the top box, then its walls."""
        x = x0
        b0, b1 = tri.basis(lvec)
        seg0, seg1 = fp(0.0), top
        for i in ti.static(range(6)):
            if faces[i] > seg1:
                seg0, seg1 = top, faces[i]
        dx, dy = 2.0 * size[0] / (ncol - 1), 2.0 * size[1] / (nrow - 1)
        sx0, sx1 = (lpnt[0] + seg0 * lvec[0] + size[0]) / dx, (lpnt[0] + seg1 * lvec[0] + size[0]) / dx
        sy0, sy1 = (lpnt[1] + seg0 * lvec[1] + size[1]) / dy, (lpnt[1] + seg1 * lvec[1] + size[1]) / dy
        cmin = ti.max(0, ti.cast(ti.floor(ti.min(sx0, sx1)), ti.i32) - 1)
        cmax = ti.min(ncol - 1, ti.cast(ti.ceil(ti.max(sx0, sx1)), ti.i32) + 1)
        rmin = ti.max(0, ti.cast(ti.floor(ti.min(sy0, sy1)), ti.i32) - 1)
        rmax = ti.min(nrow - 1, ti.cast(ti.ceil(ti.max(sy0, sy1)), ti.i32) + 1)
        for r in range(rmin, rmax):
            for c in range(cmin, cmax):
                v00 = m.vec3(dx * c - size[0], dy * r - size[1], sample(geom_f, mg, base + r * ncol + c) * size[2])
                v01 = m.vec3(dx * (c + 1) - size[0], dy * r - size[1],
                             sample(geom_f, mg, base + r * ncol + c + 1) * size[2])
                v11 = m.vec3(dx * (c + 1) - size[0], dy * (r + 1) - size[1],
                             sample(geom_f, mg, base + (r + 1) * ncol + c + 1) * size[2])
                v10 = m.vec3(dx * c - size[0], dy * (r + 1) - size[1],
                             sample(geom_f, mg, base + (r + 1) * ncol + c) * size[2])
                x = nearer(x, tri.triangle(v00, v01, v11, lpnt, lvec, b0, b1))
                x = nearer(x, tri.triangle(v00, v11, v10, lpnt, lvec, b0, b1))
        for i in ti.static(range(4)):
            hit = faces[i]
            if hit >= 0 and (hit < x or x < 0):
                z = (lpnt[2] + hit * lvec[2]) / size[2]
                y, y0, z0, z1 = fp(0.0), fp(0.0), fp(0.0), fp(0.0)
                if ti.static(i < 2):  # the walls across x: a column of the grid
                    y = (lpnt[1] + hit * lvec[1] + size[1]) / dy
                    y0 = ti.max(0.0, ti.min(nrow - 2.0, ti.floor(y)))
                    row = ti.cast(ti.round(y0), ti.i32)
                    at = base + (ncol - 1 if ti.static(i == 1) else 0)
                    z0 = sample(geom_f, mg, at + row * ncol)
                    z1 = sample(geom_f, mg, at + (row + 1) * ncol)
                else:  # across y: a row of the grid
                    y = (lpnt[0] + hit * lvec[0] + size[0]) / dx
                    y0 = ti.max(0.0, ti.min(ncol - 2.0, ti.floor(y)))
                    k = ti.cast(ti.round(y0), ti.i32) + ((nrow - 1) * ncol if ti.static(i == 3) else 0)
                    z0 = sample(geom_f, mg, base + k)
                    z1 = sample(geom_f, mg, base + k + 1)
                if z < z0 * (y0 + 1 - y) + z1 * (y - y0):
                    x = hit
        return x

    @ti.func
    def mesh(g, pos, rot, size, pnt, vec, geom_i: ti.template(), geom_f: ti.template(), mg):
        """MuJoCo's mj_rayMesh: the box of the geom's size first, then the mesh's triangles."""
        x = fp(-1.0)
        if primitive(GEOM_BOX, pos, rot, size, pnt, vec) >= 0:
            lpnt, lvec = rot.transpose() @ (pnt - pos), rot.transpose() @ vec
            x, _ = tri.walk(geom_i, geom_f, mg, A.geom_hf_ncol(geom_i, g), lpnt, lvec, fp(0.0), fp(BIG))
        return x

    @ti.func
    def cast(w, pnt, vec, exclude, t: ti.template()):
        """Distance to the nearest geom along the ray, -1 if none (MuJoCo's mj_ray with every
        group and the static geoms, ``exclude`` the body left out)."""
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mg = m.param_set(w, t.geom_f)
        x = fp(-1.0)
        for g in range(t.sizes[L.SIZE_NGEOM]):
            body = A.geom_body(t.geom_i, g)
            if body != exclude and A.geom_rayable(t.geom_i, g) != 0:
                bq = A.body_xquat(t.body_d, o, body)
                pos = A.body_xpos(t.body_d, o, body) + A.body_xmat(t.body_d, o, body) @ A.geom_pos(t.geom_f, mg, g)
                rot = m.quat_to_mat(m.quat_mul(bq, A.geom_quat(t.geom_f, mg, g)))
                gtype = A.geom_type(t.geom_i, g)
                sol = fp(-1.0)
                if gtype == GEOM_HFIELD:
                    sol = hfield(g, pos, rot, pnt, vec, t.geom_i, t.geom_f, mg)
                else:
                    sol = primitive(gtype, pos, rot, A.geom_size(t.geom_f, mg, g), pnt, vec)
                if ti.static(meshes):
                    if gtype == GEOM_MESH:
                        sol = mesh(g, pos, rot, A.geom_size(t.geom_f, mg, g), pnt, vec, t.geom_i, t.geom_f, mg)
                x = nearer(x, sol)
        return x

    return types.SimpleNamespace(cast=cast)
