"""Render stage: a batched Taichi ray caster giving RGB frames of a World, headless.

One kernel launch renders every requested env: its parallel loop runs over (image, row,
column), casts one primary ray per pixel against the model's primitive geoms (plane,
sphere, capsule, ellipsoid, cylinder, box), and shades the closest hit with ambient,
headlight and one directional key light (Lambert plus a small specular term) with a hard
shadow ray toward the key light. Planes whose material has a ``checker`` builtin texture
get that checker (gymnasium's floors do); other planes a faint checker so that motion is
visible. Rays that miss everything see a vertical sky gradient (the model's gradient
skybox when it has one).

    from taigym import physics
    renderer = physics.Renderer(model, width=320, height=240)
    frames = renderer.render(world)                          # (num_envs, 240, 320, 3) uint8
    frames = renderer.render(world, env_ids=[0], camera="track")   # a camera of the model
    grid = physics.render.tile(frames)                       # one image of all envs

Cameras (the ``camera`` argument):

- ``None`` / :class:`TrackingCamera`: looks at a body of each env from a fixed distance,
  azimuth and elevation, as MuJoCo's tracking mjvCamera; by default the root of the first
  body that can translate freely (free joint, or two or more slide joints), otherwise the
  model's centre.
- :class:`FreeCamera`: MuJoCo's free camera (lookat, distance, azimuth, elevation).
- a name or index of one of the model's ``<camera>`` elements; like MuJoCo, a camera looks
  along -z of its frame with +y up, and its ``mode`` (fixed, track, trackcom, targetbody,
  targetbodycom) says how it follows its body.

Kernels take their arrays as arguments, so they compile once for every model, batch size
and image size. Height fields are ray-marched cell by cell over their grid (the two
triangles of each cell, as MuJoCo splits them). Meshes are drawn as their own triangles,
as MuJoCo draws them (non-convex ones too, though they collide as their convex hulls),
found through each mesh's tree of boxes (physics/mesh_rays.py) and shaded by the hit
triangle's normal, turned toward the camera. Sites and transparency are not drawn.
"""

import math
import weakref

import numpy as np

from ..model import (
    GEOM_BOX,
    GEOM_CAPSULE,
    GEOM_CYLINDER,
    GEOM_ELLIPSOID,
    GEOM_HFIELD,
    GEOM_MESH,
    GEOM_PLANE,
    GEOM_SPHERE,
    JNT_FREE,
    JNT_SLIDE,
    Model,
)
from .. import layout as L
from ..access import make_access
from ..mesh_rays import append_trees, make_mesh_rays
from ..runtime.backend import ensure_runtime, ti
from .cameras import Camera, FreeCamera, TrackingCamera

_DRAWN_TYPES = (GEOM_PLANE, GEOM_HFIELD, GEOM_SPHERE, GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX,
                GEOM_MESH)
_GROUND = (GEOM_PLANE, GEOM_HFIELD)
_MJ_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)  # MuJoCo's geom rgba default: the material's colour wins over it

# The ray caster's tables are described in physics/layout.py (DRAW_F, DRAW_X, CAM, SCENE)
# and read in the kernels through their accessors (A.draw_rgb, A.cam_fwd, ...); the column
# positions below are the host side's, for packing them.
G_SIZE, G_RGB, G_RGB2, G_CELL, G_RBOUND, G_HF_BASE, G_HF_NROW, G_HF_NCOL, G_HF_SIZE = (
    L.DRAW_F.start(k) for k in L.DRAW_F)
G_WIDTH = L.DRAW_F.width
X_POS, X_MAT, X_WIDTH = L.DRAW_X.start("xpos"), L.DRAW_X.start("xmat"), L.DRAW_X.width
C_POS, C_RIGHT, C_UP, C_FWD, C_TAN = (L.CAM.start(k) for k in L.CAM)
C_WIDTH = L.CAM.width
S_LIGHT_DIR, S_AMBIENT, S_HEADLIGHT, S_DIFFUSE, S_SPECULAR, S_SKY_TOP, S_SKY_BOTTOM, S_SHADOWS, S_HAZE = (
    L.SCENE.start(k) for k in L.SCENE)
S_WIDTH = L.SCENE.width

_INF = 1e30
_EPS = 1e-4  # [m] rays start this far from a surface, so they do not hit it again

vec3 = ti.types.vector(3, ti.f32)
vec4 = ti.types.vector(4, ti.f32)
vec5 = ti.types.vector(5, ti.f32)
mat3 = ti.types.matrix(3, 3, ti.f32)
A = make_access(ti.f32)  # the tables' accessors (physics/access.py), in the renderer's float32
_MESH = make_mesh_rays(ti.f32)  # rays against meshes' triangles through their trees
_TREE_WIDTH = 16  # entries a row of the mesh_i and mesh_f tables
_F = ti.f32  # the renderer computes in float32 whatever the World's precision


# --- cameras: physics/render/cameras.py ---------------------------------------------------


# --- host-side frames -------------------------------------------------------------------------
def quat_to_mats(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) in (w, x, y, z) order."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def reference_poses(model: Model):
    """Body positions (nbody, 3), rotations (nbody, 3, 3) and subtree coms (nbody, 3) at qpos0.

    At qpos0 every joint is at its reference, so the bodies sit where the model's
    ``body_pos``/``body_quat`` chain puts them; no simulation is needed.
    """
    nbody = model.nbody
    xpos = np.zeros((nbody, 3))
    xmat = np.tile(np.eye(3), (nbody, 1, 1))
    local = quat_to_mats(model.body_quat)
    for b in range(1, nbody):
        p = model.body_parentid[b]
        xpos[b] = xpos[p] + xmat[p] @ model.body_pos[b]
        xmat[b] = xmat[p] @ local[b]
    com = xpos + np.einsum("bij,bj->bi", xmat, model.body_ipos)
    mass = np.asarray(model.body_mass, dtype=np.float64)
    weighted, total = com * mass[:, None], mass.copy()
    for b in range(nbody - 1, 0, -1):  # children come after parents: accumulate leaves up
        p = model.body_parentid[b]
        weighted[p] += weighted[b]
        total[p] += total[b]
    subtree_com = np.where(total[:, None] > 0, weighted / np.maximum(total, 1e-12)[:, None], xpos)
    return xpos, xmat, subtree_com


def model_bounds(model: Model):
    """Centre (3,) and radius [m] of the box around the model's non-plane geoms at qpos0."""
    xpos, xmat, _ = reference_poses(model)
    solid = [g for g in range(model.ngeom) if model.geom_type[g] not in _GROUND]
    if not solid:
        return np.zeros(3), 1.0
    b = model.geom_bodyid[solid]
    centres = xpos[b] + np.einsum("gij,gj->gi", xmat[b], model.geom_pos[solid])
    rots = xmat[b] @ quat_to_mats(model.geom_quat[solid])
    half = np.array([_aabb_half(model.geom_type[g], model.geom_size[g], r) for g, r in zip(solid, rots)])
    low, high = (centres - half).min(0), (centres + half).max(0)
    return (low + high) / 2, float(max(np.linalg.norm(high - low) / 2, 0.1))


def default_tracked_body(model: Model) -> int:
    """The heaviest root body that can translate in two or more directions; -1 if none.

    Free-floating robots (ant, humanoid) and planar walkers (hopper, half cheetah, swimmer)
    are followed; fixed-base ones (reacher, a cart on a rail) are better seen whole, and a
    light free object beside them (reacher's target) is not worth following.
    """
    mass = np.asarray(model.body_subtreemass, dtype=np.float64)
    total = float(mass[0]) if mass[0] > 0 else 1.0
    best = -1
    for body in range(1, model.nbody):
        if model.body_parentid[body] != 0:
            continue
        joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] == body]
        slides = sum(model.jnt_type[j] == JNT_SLIDE for j in joints)
        movable = any(model.jnt_type[j] == JNT_FREE for j in joints) or slides >= 2
        if movable and mass[body] >= 0.25 * total and (best < 0 or mass[body] > mass[best]):
            best = body
    return best


def orbit_frame(lookat, distance, azimuth, elevation):
    """Camera position and (right, up, forward) of MuJoCo's free/tracking camera.

    ``lookat`` is (n, 3); azimuth and elevation in degrees. The camera sits ``distance``
    behind the look-at point along forward = (cos el cos az, cos el sin az, sin el).
    """
    az, el = math.radians(azimuth), math.radians(elevation)
    fwd = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    if np.linalg.norm(right) < 1e-6:  # looking straight up or down: keep +x to the right
        right = np.array([1.0, 0.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    lookat = np.atleast_2d(lookat)
    n = lookat.shape[0]
    return lookat - distance * fwd, np.tile(right, (n, 1)), np.tile(up, (n, 1)), np.tile(fwd, (n, 1))


def _camera_rows(pos, right, up, fwd, fovy) -> np.ndarray:
    rows = np.empty((pos.shape[0], C_WIDTH), dtype=np.float32)
    rows[:, C_POS:C_POS + 3] = pos
    rows[:, C_RIGHT:C_RIGHT + 3] = right
    rows[:, C_UP:C_UP + 3] = up
    rows[:, C_FWD:C_FWD + 3] = fwd
    rows[:, C_TAN] = math.tan(math.radians(fovy) / 2)
    return rows


def _bounding_radius(gtype, size) -> float:
    if gtype == GEOM_SPHERE:
        return float(size[0])
    if gtype == GEOM_CAPSULE:
        return float(size[0] + size[1])
    if gtype == GEOM_CYLINDER:
        return float(math.hypot(size[0], size[1]))
    if gtype in (GEOM_BOX, GEOM_MESH):  # a mesh's size: its box's half extents about its frame
        return float(np.linalg.norm(size[:3]))
    if gtype == GEOM_ELLIPSOID:
        return float(max(size[:3]))
    return 0.0  # planes are tested without a bound


def _aabb_half(gtype, size, rot) -> np.ndarray:
    """Half-extents (3,) along the world axes of a geom with rotation ``rot``."""
    axis = np.abs(rot[:, 2])
    if gtype == GEOM_CAPSULE:
        return axis * size[1] + size[0]
    if gtype == GEOM_CYLINDER:
        return axis * size[1] + size[0] * np.sqrt(np.clip(1 - axis * axis, 0, 1))
    if gtype == GEOM_BOX:
        return np.abs(rot) @ size[:3]
    if gtype == GEOM_ELLIPSOID:
        return np.sqrt((rot * rot) @ (size[:3] ** 2))
    if gtype == GEOM_MESH:
        return np.full(3, np.linalg.norm(size[:3]))
    return np.full(3, size[0])


# --- materials and lights -----------------------------------------------------------------------
def _floats(text, default):
    if text is None:
        return np.array(default, dtype=np.float64)
    if isinstance(text, str):
        return np.array([float(v) for v in text.split()], dtype=np.float64)
    return np.asarray(text, dtype=np.float64)


def _geom_colours(model: Model, g: int):
    """Base colour, second checker colour and checker cell sizes [m] of geom ``g``.

    As MuJoCo: a material's colour is used when the geom keeps the default rgba, and a
    texture's colour multiplies it. A checker texture alternates its two colours on
    planes; ``texrepeat`` counts repeats over the plane (per metre with ``texuniform`` or
    on an infinite plane), and MuJoCo's checker builtin has 2x2 squares per repeat.
    """
    visual = model.visual or {}
    names = visual.get("geom_material", [])
    material = visual.get("materials", {}).get(names[g] if g < len(names) else "", None)
    rgba = np.asarray(model.geom_rgba[g], dtype=np.float64)
    if material is not None and np.allclose(rgba, _MJ_DEFAULT_RGBA):
        rgba = _floats(material.get("rgba"), (1.0, 1.0, 1.0, 1.0))
    base = rgba[:3].copy()
    texture = visual.get("textures", {}).get(material.get("texture", "")) if material else None
    builtin = (texture or {}).get("builtin", "none")
    rgb1 = _floats((texture or {}).get("rgb1"), (0.8, 0.8, 0.8))
    rgb2 = _floats((texture or {}).get("rgb2"), (0.5, 0.5, 0.5))
    is_plane = model.geom_type[g] in _GROUND
    if builtin == "checker" and is_plane:
        repeat = _floats(material.get("texrepeat"), (1.0, 1.0))
        size = np.asarray(model.geom_size[g][:2], dtype=np.float64)
        uniform = str(material.get("texuniform", "false")).lower() == "true"
        period = np.where(uniform | (size <= 0), 1.0 / repeat, 2 * size / repeat)
        return base * rgb1, base * rgb2, period / 2
    if builtin == "flat":
        base = base * rgb1
    elif builtin in ("checker", "gradient"):
        base = base * (rgb1 + rgb2) / 2
    if is_plane:
        # a faint checker gives a plain floor the depth and motion cues a grid would
        size = np.asarray(model.geom_size[g][:2], dtype=np.float64)
        cell = np.where(size > 0, np.minimum(0.5, np.maximum(size, 1e-3) / 4), 0.5)
        return base, base * 0.85, cell
    return base, base, np.zeros(2)


def _pack_geoms(model: Model):
    """Ids, types (n,) and constants (n, G_WIDTH) of the geoms drawn (visible primitives)."""
    ids = [g for g in range(model.ngeom) if model.geom_type[g] in _DRAWN_TYPES and model.geom_rgba[g][3] > 0]
    draw_f = np.zeros((max(len(ids), 1), G_WIDTH), dtype=np.float32)
    for row, g in enumerate(ids):
        rgb, rgb2, cell = _geom_colours(model, g)
        draw_f[row, G_SIZE:G_SIZE + 3] = model.geom_size[g]
        draw_f[row, G_RGB:G_RGB + 3] = np.clip(rgb, 0, 1)
        draw_f[row, G_RGB2:G_RGB2 + 3] = np.clip(rgb2, 0, 1)
        draw_f[row, G_CELL:G_CELL + 2] = cell
        draw_f[row, G_RBOUND] = _bounding_radius(model.geom_type[g], model.geom_size[g])
    types = np.array([model.geom_type[g] for g in ids] or [-1], dtype=np.int32)
    return np.array(ids, dtype=np.int64), types, _pack_hfield_samples(model, ids, draw_f)


def _pack_mesh_trees(model: Model, ids):
    """The drawn meshes' trees (physics/mesh_rays.py) as the kernel's mesh_i and mesh_f
    tables (the latter one row set, float32). mesh_i's first entries, one per drawn geom,
    hold a mesh geom's tree header (a flat index into mesh_i), -1 for other geoms."""
    meshes = sorted({int(model.geom_dataid[g]) for g in ids if model.geom_type[g] == GEOM_MESH})
    ints = np.full((-(-max(len(ids), 1) // _TREE_WIDTH), _TREE_WIDTH), -1, np.int32)
    floats = np.zeros((1, _TREE_WIDTH), np.float32)
    ints, floats, head = append_trees(model, meshes, ints, floats)
    flat = ints.reshape(-1)  # a view: the heads go into ints
    for row, g in enumerate(ids):
        if model.geom_type[g] == GEOM_MESH:
            flat[row] = head[int(model.geom_dataid[g])]
    return ints, floats[None]


def _pack_hfield_samples(model: Model, ids, draw_f):
    hfields = [(row, g) for row, g in enumerate(ids) if model.geom_type[g] == GEOM_HFIELD]
    if not hfields:
        return draw_f
    samples = np.asarray(model.hfield_data, dtype=np.float32)
    for row, g in hfields:
        h = model.geom_dataid[g]
        size = np.asarray(model.hfield_size[h], dtype=np.float64)
        draw_f[row, G_HF_BASE] = draw_f.shape[0] * G_WIDTH + model.hfield_adr[h]
        draw_f[row, G_HF_NROW], draw_f[row, G_HF_NCOL] = model.hfield_nrow[h], model.hfield_ncol[h]
        draw_f[row, G_HF_SIZE:G_HF_SIZE + 4] = size
        draw_f[row, G_RBOUND] = math.sqrt(size[0] ** 2 + size[1] ** 2 + max(size[2], size[3]) ** 2)
    padded = np.zeros(-(-samples.size // G_WIDTH) * G_WIDTH, dtype=np.float32)
    padded[: samples.size] = samples
    return np.concatenate([draw_f, padded.reshape(-1, G_WIDTH)])


def _pack_scene(model: Model, shadows: bool, extent: float) -> np.ndarray:
    """Light direction and intensities, sky colours and switches as one float32 vector."""
    visual = model.visual or {}
    scene = np.zeros(S_WIDTH, dtype=np.float32)
    lights = visual.get("lights", [])
    if lights:
        direction = np.asarray(lights[0]["dir"], dtype=np.float64)
        diffuse = float(np.mean(_floats(lights[0].get("attrs", {}).get("diffuse"), (0.7, 0.7, 0.7))))
    else:  # a key light from behind the default camera, high up
        direction, diffuse = np.array([0.3, 0.6, -1.0]), 0.7
    norm = np.linalg.norm(direction)
    scene[S_LIGHT_DIR:S_LIGHT_DIR + 3] = direction / norm if norm > 0 else (0.0, 0.0, -1.0)
    scene[S_AMBIENT], scene[S_HEADLIGHT] = 0.25, 0.35
    scene[S_DIFFUSE], scene[S_SPECULAR] = min(diffuse, 1.0) * 0.6, 0.25
    top, bottom = np.array([0.45, 0.6, 0.8]), np.array([0.9, 0.92, 0.95])
    for texture in visual.get("textures", {}).values():
        if texture.get("type") == "skybox" and texture.get("builtin") == "gradient":
            top, bottom = _floats(texture.get("rgb1"), top), _floats(texture.get("rgb2"), bottom)
            break
    scene[S_SKY_TOP:S_SKY_TOP + 3] = top
    scene[S_SKY_BOTTOM:S_SKY_BOTTOM + 3] = bottom
    scene[S_SHADOWS] = 1.0 if shadows else 0.0
    scene[S_HAZE] = max(15.0 * extent, 10.0)
    return scene


# --- kernel -------------------------------------------------------------------------------
@ti.func
def _first_root(a, b, c):
    """Smallest t > eps with a t^2 + 2 b t + c = 0 where the ray enters; inf if none."""
    t = _F(_INF)
    disc = b * b - a * c
    if disc >= 0 and a > 0:
        t0 = (-b - ti.sqrt(disc)) / a
        if t0 > _EPS:
            t = t0
    return t


@ti.func
def _hit_sphere_at(o, d, centre, r):
    """(t, normal) of a ray (local origin o, direction d) against a sphere."""
    oc = o - centre
    t = _first_root(d.dot(d), oc.dot(d), oc.dot(oc) - r * r)
    n = (oc + t * d) / r
    return vec4(t, n[0], n[1], n[2])


@ti.func
def _hit_side(o, d, r, h):
    """(t, normal) against the side of a z-aligned cylinder of radius r, |z| <= h."""
    out = vec4(_INF, 0, 0, 0)
    t = _first_root(d[0] * d[0] + d[1] * d[1], o[0] * d[0] + o[1] * d[1], o[0] * o[0] + o[1] * o[1] - r * r)
    if t < _INF:
        p = o + t * d
        if ti.abs(p[2]) <= h:
            out = vec4(t, p[0] / r, p[1] / r, 0)
    return out


@ti.func
def _nearer(a, b):
    r = a
    if b[0] < a[0]:
        r = b
    return r


@ti.func
def _hit_capsule(o, d, size):
    # the capsule is the union of its side and two end balls: its first hit is theirs
    r, h = size[0], size[1]
    out = _hit_side(o, d, r, h)
    out = _nearer(out, _hit_sphere_at(o, d, vec3(0, 0, h), r))
    return _nearer(out, _hit_sphere_at(o, d, vec3(0, 0, -h), r))


@ti.func
def _hit_cylinder(o, d, size):
    r, h = size[0], size[1]
    out = _hit_side(o, d, r, h)
    if ti.abs(d[2]) > 1e-12:
        for s in ti.static((-1.0, 1.0)):
            t = (s * h - o[2]) / d[2]
            p = o + t * d
            if t > _EPS and p[0] * p[0] + p[1] * p[1] <= r * r and t < out[0]:
                out = vec4(t, 0, 0, s)
    return out


@ti.func
def _hit_ellipsoid(o, d, size):
    # in coordinates scaled by 1/size the ellipsoid is the unit sphere; t is unchanged
    os, ds = o / size, d / size
    t = _first_root(ds.dot(ds), os.dot(ds), os.dot(os) - 1)
    p = o + t * d
    n = (p / (size * size)).normalized()
    return vec4(t, n[0], n[1], n[2])


@ti.func
def _hit_box(o, d, size):
    """Slab test: the entry is the last of the three slab entries."""
    t_near, t_far, normal = _F(-_INF), _F(_INF), vec3(0)
    for k in ti.static(range(3)):
        if ti.abs(d[k]) < 1e-12:
            if ti.abs(o[k]) > size[k]:
                t_far = -_F(_INF)  # parallel to this slab and outside it
        else:
            t1 = (-size[k] - o[k]) / d[k]
            t2 = (size[k] - o[k]) / d[k]
            lo, hi = ti.min(t1, t2), ti.max(t1, t2)
            if lo > t_near:
                t_near = lo
                normal = vec3(0)
                normal[k] = -ti.math.sign(d[k])
            t_far = ti.min(t_far, hi)
    out = vec4(_INF, 0, 0, 0)
    if t_near <= t_far and t_near > _EPS:
        out = vec4(t_near, normal[0], normal[1], normal[2])
    return out


@ti.func
def _hit_plane(o, d, size):
    """Planes are one-sided, as MuJoCo draws them: seen only from above (+z)."""
    out = vec4(_INF, 0, 0, 0)
    if o[2] > 0 and d[2] < 0:
        t = -o[2] / d[2]
        p = o + t * d
        if (size[0] <= 0 or ti.abs(p[0]) <= size[0]) and (size[1] <= 0 or ti.abs(p[1]) <= size[1]):
            out = vec4(t, 0, 0, 1)
    return out


@ti.func
def _hf_vertex(draw_f: ti.template(), g, r, c, dx, dy):
    k = ti.cast(A.draw_hf_base(draw_f, g), ti.i32) + r * ti.cast(A.draw_hf_ncol(draw_f, g), ti.i32) + c
    return vec3(c * dx - A.draw_hf_size_at(draw_f, g, 0), r * dy - A.draw_hf_size_at(draw_f, g, 1),
                draw_f[k // draw_f.shape[1], k % draw_f.shape[1]] * A.draw_hf_size_at(draw_f, g, 2))


@ti.func
def _hit_triangle(o, d, v0, v1, v2):
    """(t, unit normal facing up) of a ray against a triangle (Moller-Trumbore); t = inf if none."""
    out = vec4(_INF, 0, 0, 0)
    e1, e2 = v1 - v0, v2 - v0
    pv = d.cross(e2)
    det = e1.dot(pv)
    if ti.abs(det) > 1e-12:
        tv = o - v0
        u = tv.dot(pv) / det
        qv = tv.cross(e1)
        v = d.dot(qv) / det
        t = e2.dot(qv) / det
        if u >= 0 and v >= 0 and u + v <= 1 and t > _EPS:
            n = e1.cross(e2).normalized()
            out = vec4(t, n[0], n[1], n[2])
    return out


@ti.func
def _hit_hfield(draw_f: ti.template(), g, o, d):
    """The ray's first hit on a height field's surface: the grid cells under the ray are
    visited in order (a 2D DDA) from where it enters the field's box to where it leaves."""
    nrow = ti.cast(A.draw_hf_nrow(draw_f, g), ti.i32)
    ncol = ti.cast(A.draw_hf_ncol(draw_f, g), ti.i32)
    sx, sy = A.draw_hf_size_at(draw_f, g, 0), A.draw_hf_size_at(draw_f, g, 1)
    box = _hit_box(o - vec3(0, 0, (A.draw_hf_size_at(draw_f, g, 2) - A.draw_hf_size_at(draw_f, g, 3)) / 2), d,
                   vec3(sx, sy, (A.draw_hf_size_at(draw_f, g, 2) + A.draw_hf_size_at(draw_f, g, 3)) / 2))
    t_in = _F(_EPS)
    if box[0] < _INF:
        t_in = box[0]
    out = vec4(_INF, 0, 0, 0)
    p = o + t_in * d
    if ti.abs(p[0]) <= sx * 1.0001 and ti.abs(p[1]) <= sy * 1.0001:
        dx, dy = 2 * sx / (ncol - 1), 2 * sy / (nrow - 1)
        c = ti.math.clamp(ti.cast(ti.floor((p[0] + sx) / dx), ti.i32), 0, ncol - 2)
        r = ti.math.clamp(ti.cast(ti.floor((p[1] + sy) / dy), ti.i32), 0, nrow - 2)
        step_c, step_r = 1 if d[0] > 0 else -1, 1 if d[1] > 0 else -1
        next_c, next_r = _F(_INF), _F(_INF)
        if ti.abs(d[0]) > 1e-12:
            next_c = ((c + (1 if d[0] > 0 else 0)) * dx - sx - o[0]) / d[0]
        if ti.abs(d[1]) > 1e-12:
            next_r = ((r + (1 if d[1] > 0 else 0)) * dy - sy - o[1]) / d[1]
        for _ in range(nrow + ncol):
            v0 = _hf_vertex(draw_f, g, r, c, dx, dy)
            v11 = _hf_vertex(draw_f, g, r + 1, c + 1, dx, dy)
            hit = _nearer(_hit_triangle(o, d, v0, v11, _hf_vertex(draw_f, g, r + 1, c, dx, dy)),
                          _hit_triangle(o, d, v0, _hf_vertex(draw_f, g, r, c + 1, dx, dy), v11))
            if hit[0] < _INF:
                out = hit
                break
            if next_c < next_r:
                c += step_c
                next_c += dx / ti.abs(d[0])
            else:
                r += step_r
                next_r += dy / ti.abs(d[1])
            if c < 0 or c > ncol - 2 or r < 0 or r > nrow - 2:
                break
    return out


@ti.func
def _hit_mesh(mesh_i: ti.template(), mesh_f: ti.template(), g, o, d, t_max):
    """(t, normal facing the ray) of drawn geom g's nearest triangle before t_max, through
    its mesh's tree."""
    head = mesh_i[g // mesh_i.shape[1], g % mesh_i.shape[1]]
    t, normal = _MESH.walk(mesh_i, mesh_f, 0, head, o, d, _F(_EPS), t_max)
    out = vec4(_INF, 0, 0, 0)
    if t >= 0:
        if normal.dot(d) > 0:  # a triangle seen from its back: shade the side in view
            normal = -normal
        normal = normal.normalized()
        out = vec4(t, normal[0], normal[1], normal[2])
    return out


@ti.func
def _hit_local(gtype, o, d, size):
    out = vec4(_INF, 0, 0, 0)
    if gtype == GEOM_PLANE:
        out = _hit_plane(o, d, size)
    elif gtype == GEOM_SPHERE:
        out = _hit_sphere_at(o, d, vec3(0), size[0])
    elif gtype == GEOM_CAPSULE:
        out = _hit_capsule(o, d, size)
    elif gtype == GEOM_ELLIPSOID:
        out = _hit_ellipsoid(o, d, size)
    elif gtype == GEOM_CYLINDER:
        out = _hit_cylinder(o, d, size)
    elif gtype == GEOM_BOX:
        out = _hit_box(o, d, size)
    return out


@ti.func
def _trace(geom_type: ti.template(), draw_f: ti.template(), mesh_i: ti.template(), mesh_f: ti.template(),
           draw_x: ti.template(), n, o, d, t_max, shadow):
    """Closest hit before ``t_max``: (t, geom row, world normal); t = inf when none.

    A shadow ray (``shadow`` 1) ignores planes and stops at its first hit. Each geom's
    bounding sphere is tested first: most rays miss most geoms.
    """
    best = vec5(t_max, -1, 0, 0, 0)
    for g in range(geom_type.shape[0]):
        gtype = geom_type[g]
        if gtype < 0 or (shadow == 1 and gtype == GEOM_PLANE):
            continue
        pos = A.draw_xpos(draw_x, n, g)
        candidate = gtype == GEOM_PLANE
        if not candidate:
            oc = o - pos
            b = oc.dot(d)
            rb = A.draw_rbound(draw_f, g)
            c = oc.dot(oc) - rb * rb
            disc = b * b - c
            candidate = disc >= 0 and -b - ti.sqrt(ti.max(disc, 0)) < best[0]
        if candidate:
            rot = A.draw_xmat(draw_x, n, g)
            local = vec4(_INF, 0, 0, 0)
            if gtype == GEOM_HFIELD:
                local = _hit_hfield(draw_f, g, rot.transpose() @ (o - pos), rot.transpose() @ d)
            elif gtype == GEOM_MESH:
                local = _hit_mesh(mesh_i, mesh_f, g, rot.transpose() @ (o - pos), rot.transpose() @ d, best[0])
            else:
                local = _hit_local(gtype, rot.transpose() @ (o - pos), rot.transpose() @ d, A.draw_size(draw_f, g))
            if local[0] < best[0]:
                normal = rot @ vec3(local[1], local[2], local[3])
                best = vec5(local[0], g, normal[0], normal[1], normal[2])
                if shadow == 1:
                    break
    return best


@ti.func
def _sky(scene: ti.template(), d):
    s = ti.math.clamp(0.5 + 0.5 * d[2], 0.0, 1.0)
    s = s * s * (3 - 2 * s)
    return A.scene_sky_bottom(scene) * (1 - s) + A.scene_sky_top(scene) * s


@ti.func
def _albedo(geom_type: ti.template(), draw_f: ti.template(), draw_x: ti.template(), n, g, p, d, t, normal,
            pixel_angle):
    """Surface colour at p; a checker on planes, faded out where its cells shrink below a
    pixel (distant floor) instead of aliasing into moire."""
    rgb = A.draw_rgb(draw_f, g)
    cell_x, cell_y = A.draw_cell_at(draw_f, g, 0), A.draw_cell_at(draw_f, g, 1)
    if (geom_type[g] == GEOM_PLANE or geom_type[g] == GEOM_HFIELD) and cell_x > 0 and cell_y > 0:
        rot = A.draw_xmat(draw_x, n, g)
        q = rot.transpose() @ (p - A.draw_xpos(draw_x, n, g))
        parity = (ti.cast(ti.floor(q[0] / cell_x), ti.i32) + ti.cast(ti.floor(q[1] / cell_y), ti.i32)) & 1
        rgb2 = A.draw_rgb2(draw_f, g)
        chosen = rgb
        if parity == 1:
            chosen = rgb2
        footprint = t * pixel_angle / ti.max(ti.abs(normal.dot(d)), 0.05)
        contrast = ti.math.clamp(1.5 - 2 * footprint / ti.min(cell_x, cell_y), 0.0, 1.0)
        mean = (rgb + rgb2) * 0.5
        rgb = mean + (chosen - mean) * contrast
    return rgb


@ti.kernel
def _render_kernel(
    # Model:
    geom_type: ti.types.ndarray(dtype=ti.i32, ndim=1),  # (ngeom_drawn,)
    draw_f: ti.types.ndarray(dtype=ti.f32, ndim=2),  # (ngeom_drawn + hfield sample rows, G_WIDTH)
    mesh_i: ti.types.ndarray(dtype=ti.i32, ndim=2),  # the drawn meshes' trees (_pack_mesh_trees)
    mesh_f: ti.types.ndarray(dtype=ti.f32, ndim=3),  # (1, rows, _TREE_WIDTH)
    scene: ti.types.ndarray(dtype=ti.f32, ndim=1),  # (S_WIDTH,)
    # Data in:
    draw_x: ti.types.ndarray(dtype=ti.f32, ndim=3),  # (nimage, ngeom_drawn, X_WIDTH)
    cam: ti.types.ndarray(dtype=ti.f32, ndim=2),  # (nimage, C_WIDTH)
    # Data out:
    image: ti.types.ndarray(dtype=ti.u8, ndim=4),  # (nimage, height, width, 3)
):
    height, width = image.shape[1], image.shape[2]
    light = A.scene_light_dir(scene)
    for n, y, x in ti.ndrange(image.shape[0], height, width):
        tan_half = A.cam_tan(cam, n)
        sx = (2 * (x + 0.5) / width - 1) * tan_half * width / height
        sy = (1 - 2 * (y + 0.5) / height) * tan_half
        o = A.cam_pos(cam, n)
        d = (A.cam_fwd(cam, n) + sx * A.cam_right(cam, n) + sy * A.cam_up(cam, n)).normalized()
        hit = _trace(geom_type, draw_f, mesh_i, mesh_f, draw_x, n, o, d, _INF, 0)
        colour = _sky(scene, d)
        if hit[1] >= 0:
            g = ti.cast(hit[1], ti.i32)
            t = hit[0]
            normal = vec3(hit[2], hit[3], hit[4]).normalized()
            p = o + t * d
            lit = _F(1.0)
            if A.scene_shadows(scene) > 0:
                blocker = _trace(geom_type, draw_f, mesh_i, mesh_f, draw_x, n, p + normal * (10 * _EPS), -light,
                                 _INF, 1)
                if blocker[1] >= 0:
                    lit = _F(0.0)
            albedo = _albedo(geom_type, draw_f, draw_x, n, g, p, d, t, normal, 2 * tan_half / height)
            diffuse = ti.max(normal.dot(-light), 0.0)
            head = ti.max(normal.dot(-d), 0.0)
            halfway = (-light - d).normalized()
            spec = ti.pow(ti.max(normal.dot(halfway), 0.0), 32.0) * A.scene_specular(scene) * lit
            shade = A.scene_ambient(scene) + A.scene_headlight(scene) * head + A.scene_diffuse(scene) * diffuse * lit
            colour_hit = albedo * shade + spec
            # haze toward the horizon colour hides the far edge of large floors
            haze = 1 - ti.exp(-(t / A.scene_haze(scene)) ** 2)
            horizon = (A.scene_sky_top(scene) + A.scene_sky_bottom(scene)) * 0.5
            colour = colour_hit * (1 - haze) + horizon * haze
        for c in ti.static(range(3)):
            image[n, y, x, c] = ti.cast(ti.cast(ti.math.clamp(colour[c], 0.0, 1.0) * 255 + 0.5, ti.i32), ti.u8)


# --- the renderer -----------------------------------------------------------------------------
class Renderer:
    """Renders a World's envs to RGB frames with a Taichi ray caster.

    Args:
        model: the Model whose Worlds will be rendered.
        width: image width [pixels].
        height: image height [pixels].
        device: Taichi device ("cpu", "cuda" or "auto"); the running one is kept if Taichi
            has started already.
        camera: the default camera (see the module docstring); None: a tracking camera.
        shadows: cast a shadow ray toward the key light from every hit.
    """

    def __init__(self, model: Model, *, width: int = 480, height: int = 480, device: str = "auto",
                 camera: Camera = None, shadows: bool = True):
        if int(width) < 1 or int(height) < 1:
            raise ValueError(f"width and height must be >= 1, got {width}x{height}")
        ensure_runtime(device)
        self.model = model
        self.width, self.height = int(width), int(height)
        self._geom_ids, self._geom_type, self._geom_f = _pack_geoms(model)
        self._mesh_i, self._mesh_f = _pack_mesh_trees(model, self._geom_ids)
        self._ref_xpos, self._ref_xmat, self._ref_com = reference_poses(model)
        self.center, self.extent = model_bounds(model)
        self._scene = _pack_scene(model, shadows, self.extent)
        self.camera = camera
        self.resolve_camera(camera)  # a bad default camera fails here, not at the first frame

    # --- public API -------------------------------------------------------------------------
    def render(self, world, env_ids=None, *, camera: Camera = None) -> np.ndarray:
        """Frames of ``world``'s envs (all, or ``env_ids``): uint8 (n, height, width, 3).

        ``camera`` replaces the renderer's default camera for this call.
        """
        if (world.model.nbody, world.model.ngeom) != (self.model.nbody, self.model.ngeom):
            raise ValueError("this Renderer was built for another model")
        ids = np.arange(world.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids, dtype=np.int64))
        if ids.size and (ids.min() < 0 or ids.max() >= world.num_envs):
            raise IndexError(f"env_ids must be in [0, {world.num_envs}), got {ids.tolist()[:10]}")
        spec = self.resolve_camera(self.camera if camera is None else camera)
        subtree_com = world.get("subtree_com")[ids] if spec[0] == "model" and spec[2] else None
        return self.render_poses(world.get("xpos")[ids], world.get("xquat")[ids], camera=camera,
                                 subtree_com=subtree_com, geom_pos=world.get_param("geom_pos")[ids])

    def render_poses(self, xpos, xquat, *, camera: Camera = None, subtree_com=None, geom_pos=None) -> np.ndarray:
        """Frames of bodies at given poses: ``xpos`` (n, nbody, 3), ``xquat`` (n, nbody, 4).

        ``subtree_com`` (n, nbody, 3) is needed only by the model's trackcom and
        targetbodycom cameras (body positions stand in for it otherwise). ``geom_pos``
        (n, ngeom, 3): each image's geom positions in their bodies (a World's per-env
        parameter), the model's by default.
        """
        xpos = np.asarray(xpos, dtype=np.float64).reshape(-1, self.model.nbody, 3)
        xmat = quat_to_mats(np.asarray(xquat, dtype=np.float64).reshape(-1, self.model.nbody, 4))
        image = np.zeros((xpos.shape[0], self.height, self.width, 3), dtype=np.uint8)
        if xpos.shape[0] == 0:
            return image
        com = xpos if subtree_com is None else np.asarray(subtree_com, dtype=np.float64).reshape(xpos.shape)
        cam = self.camera_rows(xpos, xmat, com, self.camera if camera is None else camera)
        _render_kernel(self._geom_type, self._geom_f, self._mesh_i, self._mesh_f, self._scene,
                       self.geom_frames(xpos, xmat, geom_pos), cam, image)
        return image

    def resolve_camera(self, camera: Camera):
        """("free", FreeCamera) | ("track", TrackingCamera, body id or -1) | ("model", index, uses com)."""
        if camera is None:
            camera = TrackingCamera()
        if isinstance(camera, FreeCamera):
            return ("free", camera)
        if isinstance(camera, TrackingCamera):
            body = camera.body
            if body is None:
                body = default_tracked_body(self.model)
            elif isinstance(body, str):
                body = self.model.body(body)
            elif not 0 <= int(body) < self.model.nbody:
                raise IndexError(f"tracked body id {body} is not in [0, {self.model.nbody})")
            return ("track", camera, int(body))
        cameras = (self.model.visual or {}).get("cameras", [])
        if isinstance(camera, str):
            names = [c.get("name", "") for c in cameras]
            if camera not in names:
                raise KeyError(f"no camera named {camera!r}; the model has {[n for n in names if n]}")
            camera = names.index(camera)
        if isinstance(camera, (int, np.integer)) and not isinstance(camera, bool):
            if not 0 <= camera < len(cameras):
                raise IndexError(f"camera index {camera} is not in [0, {len(cameras)})")
            return ("model", int(camera), cameras[camera].get("mode", "fixed") in ("trackcom", "targetbodycom"))
        raise TypeError(f"camera must be None, a FreeCamera, a TrackingCamera, or a model camera's name or index; "
                        f"got {camera!r}")

    # --- frames of geoms and cameras ------------------------------------------------------------
    def geom_frames(self, xpos: np.ndarray, xmat: np.ndarray, geom_pos=None) -> np.ndarray:
        """World pose of each drawn geom: (n, ngeom_drawn, X_WIDTH) float32, as MuJoCo's
        geom_xpos = xpos + R(xquat) geom_pos and geom_xmat = R(xquat) R(geom_quat), with
        ``geom_pos`` (n, ngeom, 3) in place of the model's where given."""
        out = np.zeros((xpos.shape[0], len(self._geom_type), X_WIDTH), dtype=np.float32)
        ids = self._geom_ids
        if ids.size:
            body = self.model.geom_bodyid[ids]
            rot = xmat[:, body]
            local = np.broadcast_to(self.model.geom_pos, (xpos.shape[0], self.model.ngeom, 3)) if geom_pos is None \
                else np.asarray(geom_pos, dtype=np.float64).reshape(xpos.shape[0], self.model.ngeom, 3)
            out[:, :ids.size, X_POS:X_POS + 3] = xpos[:, body] + np.einsum("ngij,ngj->ngi", rot, local[:, ids])
            geom_rot = rot @ quat_to_mats(self.model.geom_quat[ids])[None]
            out[:, :ids.size, X_MAT:X_MAT + 9] = geom_rot.reshape(xpos.shape[0], ids.size, 9)
        return out

    def camera_rows(self, xpos, xmat, com, camera: Camera) -> np.ndarray:
        """Per-image camera position, axes and field of view: (n, C_WIDTH) float32."""
        spec = self.resolve_camera(camera)
        n = xpos.shape[0]
        if spec[0] == "free":
            c = spec[1]
            lookat = np.tile(np.asarray(c.lookat, dtype=np.float64), (n, 1))
            return _camera_rows(*orbit_frame(lookat, c.distance, c.azimuth, c.elevation), c.fovy)
        if spec[0] == "track":
            c, body = spec[1], spec[2]
            lookat = np.tile(self.center, (n, 1)) if body < 0 else xpos[:, body]
            distance = c.distance if c.distance is not None else self.default_distance(c.fovy)
            return _camera_rows(*orbit_frame(lookat, distance, c.azimuth, c.elevation), c.fovy)
        return self._model_camera_rows(spec[1], xpos, xmat, com)

    def default_distance(self, fovy: float) -> float:
        """A distance at which the model's bounding sphere fills about 75% of the frame height."""
        return max(self.extent / math.tan(math.radians(fovy) / 2) / 0.75, 0.5)

    def _model_camera_rows(self, index, xpos, xmat, com) -> np.ndarray:
        c = self.model.visual["cameras"][index]
        body, mode = int(c.get("body", 0)), c.get("mode", "fixed")
        local_pos = np.asarray(c["pos"], dtype=np.float64)
        local_rot = quat_to_mats(np.asarray(c["quat"], dtype=np.float64))
        if mode in ("track", "trackcom"):
            # MuJoCo keeps the camera's world offset and orientation from the reference pose
            anchor, anchor0 = (com, self._ref_com) if mode == "trackcom" else (xpos, self._ref_xpos)
            pos0 = self._ref_xpos[body] + self._ref_xmat[body] @ local_pos
            pos = anchor[:, body] + (pos0 - anchor0[body])
            rot = np.broadcast_to(self._ref_xmat[body] @ local_rot, (xpos.shape[0], 3, 3))
        else:
            pos = xpos[:, body] + np.einsum("nij,j->ni", xmat[:, body], local_pos)
            rot = xmat[:, body] @ local_rot
        right, up, fwd = rot[:, :, 0], rot[:, :, 1], -rot[:, :, 2]
        if mode in ("targetbody", "targetbodycom") and c.get("target"):
            target = self.model.body(c["target"])
            aim = (com if mode == "targetbodycom" else xpos)[:, target] - pos
            fwd = aim / np.maximum(np.linalg.norm(aim, axis=1, keepdims=True), 1e-9)
            right = np.cross(fwd, [0.0, 0.0, 1.0])
            right /= np.maximum(np.linalg.norm(right, axis=1, keepdims=True), 1e-9)
            up = np.cross(right, fwd)
        return _camera_rows(pos, right, up, fwd, float(c.get("fovy", 45.0)))


# --- conveniences ------------------------------------------------------------------------------
_renderers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def render_world(world, env_ids=None, *, width: int = 480, height: int = 480, camera: Camera = None,
                 shadows: bool = True) -> np.ndarray:
    """Frames of a World's envs, uint8 (n, height, width, 3), with a Renderer kept per World
    and image size (built on first use)."""
    per_world = _renderers.setdefault(world, {})
    key = (int(width), int(height), bool(shadows))
    if key not in per_world:
        per_world[key] = Renderer(world.model, width=width, height=height, device=world.device, shadows=shadows)
    return per_world[key].render(world, env_ids, camera=camera)


def tile(frames, ncols: int | None = None, *, gap: int = 0) -> np.ndarray:
    """One image of several frames (n, H, W, 3) in a grid, row by row; empty cells are black.

    ``ncols`` defaults to the smallest number that makes the grid about square; ``gap``
    puts that many black pixels between cells.
    """
    frames = np.asarray(frames)
    if frames.ndim != 4:
        raise ValueError(f"frames must be (n, height, width, channels), got shape {frames.shape}")
    n, h, w, ch = frames.shape
    ncols = max(1, min(n, int(ncols) if ncols else math.ceil(math.sqrt(n))))
    nrows = max(1, math.ceil(n / ncols))
    out = np.zeros((nrows * h + (nrows - 1) * gap, ncols * w + (ncols - 1) * gap, ch), dtype=frames.dtype)
    for i in range(n):
        r, c = divmod(i, ncols)
        out[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = frames[i]
    return out


__all__ = ["Camera", "FreeCamera", "Renderer", "TrackingCamera", "orbit_frame", "reference_poses", "render_world",
           "tile"]
