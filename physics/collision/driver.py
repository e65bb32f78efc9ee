"""Collision detection, batched: geom poses, bounding-sphere culling, narrow phase, contacts.

The candidate geom pairs and their mixed contact parameters come from
:func:`physics.broadphase.candidate_pairs` once per Model. Each step, per env: geom world
poses from the body poses (MuJoCo's geom_xpos/geom_xmat), a bounding-sphere test per
candidate (MuJoCo's mj_filterSphere, a plane against the other geom's sphere), the
narrow-phase routine of the pair (:mod:`physics.collision.narrowphase`), and the pair's parameters
copied onto each contact. Contacts go to a fixed-capacity table per env with ``ncon``
and an overflow count; a contact that does not fit is counted, never dropped silently.

Contact fields follow mjContact (MuJoCo 4): ``margin`` and ``gap`` are the sums of the
two geoms' values (or the explicit pair's), a contact is made when dist <= margin + gap,
``includemargin`` = margin, and ``exclude`` marks contacts in the gap band
(dist >= includemargin) that constrain nothing.

:class:`Collider` runs the stage on its own; :func:`make_collision` gives the ``@ti.func``
that a fused step kernel calls inside its loop over envs.
"""


import functools
import types

import numpy as np

from ..collision import broadphase as B
from ..collision.convex import make_convex
from ..collision.convex.polygons import pack_polygons
from ..collision.hfield import make_hfield
from ..compiler.sameframe import geom_poses
from ..compiler.sensors import rangefinders_see_meshes, ray_visible
from ..collision.narrowphase import (
    CON_DIM,
    CON_EFC_ADDRESS,
    CON_EXCLUDE,
    CON_GEOM1,
    CON_GEOM2,
    CON_PAIR,
    CONTACT_F,
    NCON,
    NCON_F,
    NCON_I,
    NOVERFLOW,
    make_narrowphase,
)
from ..errors import WorldError
from ..mesh_rays import append_trees
from ..features import ALL_COLLIDERS, CONVEX_COLLIDERS, HFIELD_COLLIDERS
from .. import layout as L
from ..runtime.lanes import device_shape, env_index, env_rows, table_lanes
from ..model import DSBL_CONSTRAINT, DSBL_CONTACT, GEOM_HFIELD, GEOM_MESH, GEOM_PLANE, Model
from ..access import make_access
from ..runtime.backend import ensure_runtime, ti
from ..runtime.taichi_adapter import upload
from ..runtime.ti_math import make_math

# --- the stage's tables, described in physics/layout.py; column positions for the host side
NPAIR_I, NPAIR_F = L.PAIR_I.width, L.PAIR_F.width
GEOM_TYPE, GEOM_BODY, GEOM_HF_BASE, GEOM_HF_NROW, GEOM_HF_NCOL, GEOM_RAYABLE = (L.GEOM_I.start(k) for k in L.GEOM_I)
NGEOM_I, NGEOM_F = L.GEOM_I.width, L.GEOM_F.width
# Geom world poses, (num_envs, ngeom, 12): position, then the rotation matrix row-major.
NGEOM_X = L.GEOM_X.width
P_FRICTION, G_HSIZE = L.PAIR_F.start("friction"), L.GEOM_F.start("hfield_size")
X_POS, X_MAT = L.GEOM_X.start("xpos"), L.GEOM_X.start("xmat")
C = {k: v[0] for k, v in L.CON_F.items()}


def pack_collision_model(m: Model, pairs: B.PairTable, dtype) -> dict:
    """The collision stage's model tables as numpy arrays (float tables in ``dtype``)."""
    n = max(pairs.npair, 1)
    pair_i = np.zeros((n, NPAIR_I), np.int32)
    pair_f = np.zeros((n, NPAIR_F))
    for p in range(pairs.npair):
        pair_i[p] = (pairs.geom1[p], pairs.geom2[p], pairs.collider[p], pairs.condim[p], pairs.maxcon[p])
        pair_f[p] = np.concatenate([[pairs.margin[p], pairs.gap[p]], pairs.friction[p], pairs.solref[p],
                                    pairs.solimp[p]])
    g = max(m.ngeom, 1)
    geom_i = np.zeros((g, NGEOM_I), np.int32)
    geom_f = np.zeros((g, NGEOM_F))
    if m.ngeom:
        geom_i[: m.ngeom, GEOM_TYPE] = m.geom_type
        geom_i[: m.ngeom, GEOM_BODY] = m.geom_bodyid
        geom_i[: m.ngeom, GEOM_RAYABLE] = ray_visible(m)
        pos, quat = geom_poses(m)
        geom_f[: m.ngeom, : G_HSIZE] = np.concatenate([m.geom_size, pos, quat, B.geom_rbound(m)[:, None]], axis=1)
    geom_f = _pack_hfields(m, geom_i, geom_f)
    geom_f = _pack_hulls(m, geom_i, geom_f)
    geom_i, geom_f = _pack_ray_trees(m, geom_i, geom_f)
    return {"pair_i": pair_i, "pair_f": pair_f[None].astype(dtype), "geom_i": geom_i, "geom_f": geom_f[None].astype(dtype)}


def _pack_hfields(m: Model, geom_i: np.ndarray, geom_f: np.ndarray) -> np.ndarray:
    """hfield geoms' grid columns, and every hfield's samples as rows after the geoms."""
    if not getattr(m, "nhfield", 0):
        return geom_f
    for g in np.nonzero(m.geom_type == GEOM_HFIELD)[0]:
        h = m.geom_dataid[g]
        geom_i[g, GEOM_HF_BASE] = geom_f.shape[0] * NGEOM_F + m.hfield_adr[h]
        geom_i[g, GEOM_HF_NROW] = m.hfield_nrow[h]
        geom_i[g, GEOM_HF_NCOL] = m.hfield_ncol[h]
        geom_f[g, G_HSIZE : G_HSIZE + 4] = m.hfield_size[h]
    samples = np.zeros(-(-m.nhfielddata // NGEOM_F) * NGEOM_F)
    samples[: m.nhfielddata] = m.hfield_data
    return np.concatenate([geom_f, samples.reshape(-1, NGEOM_F)])


def _pack_hulls(m: Model, geom_i: np.ndarray, geom_f: np.ndarray) -> np.ndarray:
    """mesh geoms' convex hulls as rows after the geoms and height fields, each mesh's
    once: its n hull vertices (x y z each, in the geom's frame), then where each vertex's
    list of faces starts (relative to the entry after these n) and the lists: the unit
    normals of the hull's faces around the vertex (coplanar triangles one face), x y z
    each, each list ended by a zero vector (physics/collision/convex/plane_mesh.py). The
    entry between the starts and the lists is where the hull's polygons begin, from the
    hull's first entry (physics/collision/convex/polygons.py). A mesh geom's first
    coordinate (a flat index, as a height field's first sample) and n go in the
    height-field columns."""
    meshes = sorted({int(k) for k in m.geom_dataid[m.geom_type == GEOM_MESH]}) if m.ngeom else []
    meshes = [k for k in meshes if m.mesh_graphadr[k] >= 0]  # a flat visual mesh has no hull
    if not meshes:
        return geom_f
    start, parts, offset = {}, [], geom_f.size
    for k in meshes:
        graph = m.mesh_graph[m.mesh_graphadr[k]:]
        n, nface = int(graph[0]), int(graph[1])
        hull = graph[2 + n: 2 + 2 * n]
        vert = m.mesh_vert[m.mesh_vertadr[k]:]
        faces = graph[2 + 3 * n + 3 * nface: 2 + 3 * n + 6 * nface].reshape(-1, 3)
        lists = _face_normals_around(vert, hull, faces)
        addr = 1 + np.cumsum([0] + [len(x) for x in lists[:-1]])
        polygons_at = 4 * n + 1 + sum(len(x) for x in lists)
        start[k] = offset
        parts.append(np.concatenate([vert[hull].reshape(-1), addr, [polygons_at], *lists,
                                     pack_polygons(vert, hull, faces, m.mesh_pos[k], m.mesh_quat[k])]))
        offset += parts[-1].size
    for g in np.nonzero(m.geom_type == GEOM_MESH)[0]:
        if int(m.geom_dataid[g]) not in start:
            continue
        geom_i[g, GEOM_HF_BASE] = start[int(m.geom_dataid[g])]
        geom_i[g, GEOM_HF_NROW] = m.mesh_hullnum[m.geom_dataid[g]]
    flat = np.concatenate(parts)
    rows = np.zeros(-(-flat.size // NGEOM_F) * NGEOM_F)
    rows[: flat.size] = flat
    return np.concatenate([geom_f, rows.reshape(-1, NGEOM_F)])


def _pack_ray_trees(m: Model, geom_i: np.ndarray, geom_f: np.ndarray):
    """The trees of the meshes rangefinders see (physics/mesh_rays.py), their ints in rows
    after the geoms, their floats after the hulls; a mesh geom's hf_ncol column holds its
    tree's header. Only a model whose rangefinders see meshes carries them."""
    if not rangefinders_see_meshes(m):
        return geom_i, geom_f
    geoms = np.flatnonzero((m.geom_type == GEOM_MESH) & (geom_i[: m.ngeom, GEOM_RAYABLE] != 0))
    geom_i, geom_f, head = append_trees(m, sorted({int(m.geom_dataid[g]) for g in geoms}), geom_i, geom_f)
    for g in geoms:
        geom_i[g, GEOM_HF_NCOL] = head[int(m.geom_dataid[g])]
    return geom_i, geom_f


def _face_normals_around(vert, hull, faces) -> list:
    """For each hull vertex, the distinct unit normals of the hull triangles around it
    (those of one flat face agree to float precision), flattened and ended by 0 0 0."""
    a, b, c = vert[faces[:, 0]], vert[faces[:, 1]], vert[faces[:, 2]]
    normal = np.cross(b - a, c - a)
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)
    out = []
    for v in hull:
        mine = []
        for nrm in normal[np.any(faces == v, axis=1)]:
            if all(np.abs(nrm - other).max() > 1e-5 for other in mine):
                mine.append(nrm)
        out.append(np.concatenate([*mine, np.zeros(3)]))
    return out


@functools.cache
def make_collision(fp, colliders: frozenset = ALL_COLLIDERS):
    """The collision stage's ``@ti.func``s, with the narrow-phase routines of the COLLIDE_*
    codes in ``colliders`` compiled in (a model's candidate pairs'; physics/features.py):
    the convex collider (physics/collision/convex/) and the height fields only where a pair
    needs them."""
    convex = bool(colliders & CONVEX_COLLIDERS)
    A = make_access(fp)
    m = make_math(fp)
    nph = make_narrowphase(fp)
    hfield = bool(colliders & HFIELD_COLLIDERS)
    hf_mesh = B.COLLIDE_HFIELD_MESH in colliders
    hf = make_hfield(fp, convex, hf_mesh) if hfield else None
    cvx = make_convex(fp) if convex else None
    clipped = B.COLLIDE_FACES in colliders
    vec3 = m.vec3

    @ti.func
    def geom_poses(w, ngeom, geom_i: ti.template(), geom_f: ti.template(), body: ti.template(), body_base, body_row,
                   xpos_col, xquat_col, geom_x: ti.template(), lanes: ti.template()):
        """Every geom's pose (geom_pose)."""
        for g in range(ngeom):
            geom_pose(w, g, geom_i, geom_f, body, body_base, body_row, xpos_col, xquat_col, geom_x, lanes)

    @ti.func
    def geom_pose(w, g, geom_i: ti.template(), geom_f: ti.template(), body: ti.template(), body_base, body_row,
                  xpos_col, xquat_col, geom_x: ti.template(), lanes: ti.template()):
        """geom_xpos = xpos + R(xquat) geom_pos, geom_xmat = R(xquat * geom_quat), as MuJoCo.
        ``body`` is a flat table: entry k of body b's pose at body_base + (b * body_row +
        xpos_col/xquat_col + k) * lanes (lanes 1: env-major; else interleaved, physics/runtime/lanes.py)."""
        mg = m.param_set(w, geom_f)
        b = A.geom_body(geom_i, g)
        xquat, xpos = m.vec4(0.0), m.vec3(0.0)
        if ti.static(lanes == 1):
            xquat = m.at4(body, body_base + b * body_row + xquat_col)
            xpos = m.at3(body, body_base + b * body_row + xpos_col)
        else:
            xquat = m.vec4([body[body_base + (b * body_row + xquat_col + k) * lanes] for k in ti.static(range(4))])
            xpos = m.vec3([body[body_base + (b * body_row + xpos_col + k) * lanes] for k in ti.static(range(3))])
        pos = xpos + m.quat_to_mat(xquat) @ A.geom_pos(geom_f, mg, g)
        mat = m.quat_to_mat(m.quat_mul(xquat, A.geom_quat(geom_f, mg, g)))
        A.set_geom_xpos(geom_x, w, g, pos)
        A.set_geom_xmat(geom_x, w, g, mat)

    @ti.func
    def may_touch(type1, type2, pos1, mat1, rbound1, pos2, mat2, rbound2, margin):
        """Bounding-sphere test; a plane (rbound 0) against the other geom's sphere."""
        touch = True
        if rbound1 > 0 and rbound2 > 0:
            d = pos1 - pos2
            bound = rbound1 + rbound2 + margin
            touch = d.dot(d) <= bound * bound
        elif type1 == GEOM_PLANE and rbound2 > 0:
            touch = (pos2 - pos1).dot(vec3(mat1[0, 2], mat1[1, 2], mat1[2, 2])) <= margin + rbound2
        return touch

    # the primitive pairs' routines by COLLIDE_* code; only those in ``colliders`` are compiled
    routines = {B.COLLIDE_PLANE_SPHERE: nph.plane_sphere, B.COLLIDE_PLANE_CAPSULE: nph.plane_capsule,
                B.COLLIDE_PLANE_BOX: nph.plane_box, B.COLLIDE_PLANE_CYLINDER: nph.plane_cylinder,
                B.COLLIDE_PLANE_ELLIPSOID: nph.plane_ellipsoid, B.COLLIDE_SPHERE_SPHERE: nph.sphere_sphere,
                B.COLLIDE_SPHERE_CAPSULE: nph.sphere_capsule, B.COLLIDE_SPHERE_CYLINDER: nph.sphere_cylinder,
                B.COLLIDE_SPHERE_BOX: nph.sphere_box, B.COLLIDE_CAPSULE_CAPSULE: nph.capsule_capsule,
                B.COLLIDE_CAPSULE_BOX: nph.capsule_box, B.COLLIDE_BOX_BOX: nph.box_box}
    compiled = tuple((code, routines[code]) for code in sorted(routines) if code in colliders)

    @ti.func
    def narrow(w, collider, con_f: ti.template(), con_n: ti.template(), pos1, mat1, size1, pos2, mat2, size2,
               margin):
        for code, routine in ti.static(compiled):
            if collider == code:
                routine(w, con_f, con_n, pos1, mat1, size1, pos2, mat2, size2, margin)

    @ti.func
    def primitive(w, p, g1, g2, collider, pair_i: ti.template(), geom_i: ti.template(), geom_f: ti.template(), mg,
                  con_f: ti.template(), con_n: ti.template(), pos1, mat1, pos2, mat2, margin):
        """A height field's or two primitives' analytic routine."""
        if ti.static(not hfield):
            narrow(w, collider, con_f, con_n, pos1, mat1, A.geom_size(geom_f, mg, g1), pos2, mat2,
                   A.geom_size(geom_f, mg, g2), margin)
        elif collider >= B.COLLIDE_HFIELD_SPHERE:
            hull2 = vec3(0)
            if ti.static(hf_mesh):
                hull2 = hull(geom_i, g2, mg)
            hf.collide(w, con_f, con_n, geom_f, mg, A.geom_hf_base(geom_i, g1), A.geom_hf_nrow(geom_i, g1),
                       A.geom_hf_ncol(geom_i, g1), A.geom_hfield_size(geom_f, mg, g1), pos1, mat1,
                       A.geom_type(geom_i, g2), pos2, mat2, A.geom_size(geom_f, mg, g2), margin,
                       A.pair_maxcon(pair_i, p), hull2)
        else:
            narrow(w, collider, con_f, con_n, pos1, mat1, A.geom_size(geom_f, mg, g1), pos2, mat2,
                   A.geom_size(geom_f, mg, g2), margin)

    @ti.func
    def set_params(w, p, c, mp, pair_i: ti.template(), pair_f: ti.template(), con_f: ti.template(),
                   con_i: ti.template()):
        """Copy pair p's geoms and mixed parameters onto contact c."""
        margin = A.pair_margin(pair_f, mp, p)
        for k in ti.static(range(5)):
            A.set_contact_friction_at(con_f, w, c, k, A.pair_friction_at(pair_f, mp, p, k))
            A.set_contact_solimp_at(con_f, w, c, k, A.pair_solimp_at(pair_f, mp, p, k))
        for k in ti.static(range(2)):
            A.set_contact_solref_at(con_f, w, c, k, A.pair_solref_at(pair_f, mp, p, k))
        A.set_contact_margin(con_f, w, c, margin)
        A.set_contact_gap(con_f, w, c, A.pair_gap(pair_f, mp, p))
        A.set_contact_includemargin(con_f, w, c, margin)
        A.set_contact_geom1(con_i, w, c, A.pair_geom1(pair_i, p))
        A.set_contact_geom2(con_i, w, c, A.pair_geom2(pair_i, p))
        A.set_contact_dim(con_i, w, c, A.pair_condim(pair_i, p))
        A.set_contact_exclude(con_i, w, c, 1 if A.contact_dist(con_f, w, c) >= margin else 0)
        A.set_contact_pair(con_i, w, c, p)
        A.set_contact_efc_address(con_i, w, c, -1)  # the constraint stage places the rows it makes

    @ti.func
    def collide(w, npair, ngeom, pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(),
                geom_f: ti.template(), body: ti.template(), body_base, body_row, xpos_col, xquat_col,
                geom_x: ti.template(), con_f: ti.template(), con_i: ti.template(), con_n: ti.template()):
        """Every contact of env w: geom poses, then the candidate pairs (collide_pairs)."""
        geom_poses(w, ngeom, geom_i, geom_f, body, body_base, body_row, xpos_col, xquat_col, geom_x, 1)
        collide_pairs(w, npair, pair_i, pair_f, geom_i, geom_f, geom_x, con_f, con_i, con_n)

    @ti.func
    def collide_pairs(
        w, npair,
        # Model: the candidate pairs and the geoms
        pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(), geom_f: ti.template(),
        # Data in: geom poses (geom_poses)
        geom_x: ti.template(),
        # Data out: the contacts (con_f, con_i) and their count and overflow (con_n)
        con_f: ti.template(), con_i: ti.template(), con_n: ti.template(),
    ):
        """Every contact of env w from its geom poses in geom_x: each candidate pair that
        passes the bounding-sphere test goes through its narrow-phase routine."""
        A.set_ncon(con_n, w, 0)
        A.set_ncon_overflow(con_n, w, 0)
        mp = m.param_set(w, pair_f)
        mg = m.param_set(w, geom_f)
        for p in range(npair):
            g1 = A.pair_geom1(pair_i, p)
            g2 = A.pair_geom2(pair_i, p)
            margin = A.pair_margin(pair_f, mp, p) + A.pair_gap(pair_f, mp, p)
            pos1 = A.geom_xpos(geom_x, w, g1)
            pos2 = A.geom_xpos(geom_x, w, g2)
            mat1 = A.geom_xmat(geom_x, w, g1)
            mat2 = A.geom_xmat(geom_x, w, g2)
            if may_touch(A.geom_type(geom_i, g1), A.geom_type(geom_i, g2), pos1, mat1, A.geom_rbound(geom_f, mg, g1),
                         pos2, mat2, A.geom_rbound(geom_f, mg, g2), margin):
                pair_narrow(w, p, mp, mg, g1, g2, margin, pos1, mat1, pos2, mat2, pair_i, pair_f, geom_i, geom_f,
                            con_f, con_i, con_n)

    @ti.func
    def test_pair(w, p, pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(), geom_f: ti.template(),
                  geom_x: ti.template(), pair_hit: ti.template()):
        """Candidate pair p's bounding-sphere test, kept in pair_hit for pair_contacts (the
        broad phase apart from the narrow one: a GPU tests every pair of every env at once)."""
        pair_hit[env_index(w, p)] = 1 if pair_touches(w, p, pair_i, pair_f, geom_i, geom_f, geom_x) else 0

    @ti.func
    def pair_touches(w, p, pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(),
                     geom_f: ti.template(), geom_x: ti.template()):
        """Whether candidate pair p's geoms' bounding spheres (a plane's half space) are
        within the pair's margin and gap."""
        mp = m.param_set(w, pair_f)
        mg = m.param_set(w, geom_f)
        g1 = A.pair_geom1(pair_i, p)
        g2 = A.pair_geom2(pair_i, p)
        margin = A.pair_margin(pair_f, mp, p) + A.pair_gap(pair_f, mp, p)
        return may_touch(A.geom_type(geom_i, g1), A.geom_type(geom_i, g2), A.geom_xpos(geom_x, w, g1),
                         A.geom_xmat(geom_x, w, g1), A.geom_rbound(geom_f, mg, g1), A.geom_xpos(geom_x, w, g2),
                         A.geom_xmat(geom_x, w, g2), A.geom_rbound(geom_f, mg, g2), margin)

    @ti.func
    def collide_pair_into(w, v, p, pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(),
                          geom_f: ti.template(), geom_x: ti.template(), con_f: ti.template(), con_i: ti.template(),
                          con_n: ti.template()):
        """Candidate pair p's narrow phase from env w's geom poses: its contacts appended to
        row v of the contact tables (env w's own, or the pair's row of pair_contacts)."""
        mp = m.param_set(w, pair_f)
        mg = m.param_set(w, geom_f)
        g1 = A.pair_geom1(pair_i, p)
        g2 = A.pair_geom2(pair_i, p)
        margin = A.pair_margin(pair_f, mp, p) + A.pair_gap(pair_f, mp, p)
        pair_narrow(v, p, mp, mg, g1, g2, margin, A.geom_xpos(geom_x, w, g1), A.geom_xmat(geom_x, w, g1),
                    A.geom_xpos(geom_x, w, g2), A.geom_xmat(geom_x, w, g2), pair_i, pair_f, geom_i, geom_f, con_f,
                    con_i, con_n)

    @ti.func
    def pair_narrow(v, p, mp, mg, g1, g2, margin, pos1, mat1, pos2, mat2, pair_i: ti.template(),
                    pair_f: ti.template(), geom_i: ti.template(), geom_f: ti.template(), con_f: ti.template(),
                    con_i: ti.template(), con_n: ti.template()):
        """Pair p's narrow phase from its geoms' poses, already loaded (collide_pairs loads
        them once for the bounding-sphere test and this), its contacts appended to row v."""
        first = A.ncon(con_n, v)
        collider = A.pair_collider(pair_i, p)
        if ti.static(convex):
            if collider == B.COLLIDE_CONVEX or (ti.static(clipped) and collider == B.COLLIDE_FACES):
                convex_pair(v, g1, g2, collider, geom_i, geom_f, mg, con_f, con_n, pos1, mat1, pos2, mat2, margin)
            elif collider == B.COLLIDE_PLANE_MESH:
                cvx.plane_mesh(v, con_f, con_n, pos1, mat1, pos2, mat2, A.geom_rbound(geom_f, mg, g2), margin,
                               hull(geom_i, g2, mg), geom_f)
            else:
                primitive(v, p, g1, g2, collider, pair_i, geom_i, geom_f, mg, con_f, con_n, pos1, mat1, pos2, mat2,
                          margin)
        else:
            primitive(v, p, g1, g2, collider, pair_i, geom_i, geom_f, mg, con_f, con_n, pos1, mat1, pos2, mat2,
                      margin)
        for c in range(first, A.ncon(con_n, v)):
            nph.complete_frame(v, c, con_f)
            set_params(v, p, c, mp, pair_i, pair_f, con_f, con_i)

    @ti.func
    def convex_pair(w, g1, g2, collider, geom_i: ti.template(), geom_f: ti.template(), mg, con_f: ti.template(),
                    con_n: ti.template(), pos1, mat1, pos2, mat2, margin):
        """A pair of the convex collider's, one contact, or of the multi-CCD pairs' clipped
        features where those are compiled in: then both take the faces path, whose solvers
        (GJK, EPA) are the kernel's largest code, at one call site."""
        type1, size1, hull1 = A.geom_type(geom_i, g1), A.geom_size(geom_f, mg, g1), hull(geom_i, g1, mg)
        type2, size2, hull2 = A.geom_type(geom_i, g2), A.geom_size(geom_f, mg, g2), hull(geom_i, g2, mg)
        if ti.static(clipped):
            cvx.faces(w, con_f, con_n, type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2,
                      geom_f, collider == B.COLLIDE_FACES)
        else:
            cvx.collide(w, con_f, con_n, type1, pos1, mat1, size1, type2, pos2, mat2, size2, margin, hull1, hull2,
                        geom_f)

    @ti.func
    def hull(geom_i: ti.template(), g, mg):
        """A mesh geom's hull in geom_f, as the convex collider takes it (support.with_hull)."""
        return vec3(A.geom_hf_base(geom_i, g), A.geom_hf_nrow(geom_i, g), mg)

    @ti.func
    def collide_pair(w, p, pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(),
                     geom_f: ti.template(), geom_x: ti.template(), con_f: ti.template(), con_i: ti.template(),
                     con_n: ti.template()):
        """Candidate pair p's narrow phase: its contacts appended to env w's."""
        collide_pair_into(w, w, p, pair_i, pair_f, geom_i, geom_f, geom_x, con_f, con_i, con_n)

    @ti.func
    def pair_contacts(w, p, v, pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(),
                      geom_f: ti.template(), geom_x: ti.template(), pair_hit: ti.template(), pair_con_f: ti.template(),
                      pair_con_i: ti.template(), pair_con_n: ti.template()):
        """Candidate pair p's narrow phase in env w, apart from the env's other pairs: its
        contacts (none where the broad phase ruled it out) in row v of the pair tables
        pair_con_* (shaped as the contact tables, a row per env and pair, each as long as
        the most contacts a pair makes), for gather_contacts to copy in pair order."""
        A.set_ncon(pair_con_n, v, 0)
        A.set_ncon_overflow(pair_con_n, v, 0)
        if pair_hit[env_index(w, p)] != 0:
            collide_pair_into(w, v, p, pair_i, pair_f, geom_i, geom_f, geom_x, pair_con_f, pair_con_i, pair_con_n)

    @ti.func
    def gather_contacts(w, npair, rows, pair_con_f: ti.template(), pair_con_i: ti.template(),
                        pair_con_n: ti.template(), con_f: ti.template(), con_i: ti.template(), con_n: ti.template()):
        """Env w's contacts from its pairs' rows (pair_contacts; pair p's in row p * rows + w),
        in pair order: the table collide_pairs makes, the contacts past its capacity counted
        as overflow."""
        n, over = 0, 0
        for p in range(npair):
            v = p * rows + w
            for c in range(A.ncon(pair_con_n, v)):
                if n < con_f.shape[1]:
                    for k in ti.static(range(L.CON_F.used)):
                        con_f[env_index(w, n, k)] = pair_con_f[env_index(v, c, k)]
                    for k in ti.static(range(L.CON_I.used)):
                        con_i[env_index(w, n, k)] = pair_con_i[env_index(v, c, k)]
                    n += 1
                else:
                    over += 1
        A.set_ncon(con_n, w, n)
        A.set_ncon_overflow(con_n, w, over)

    i2 = ti.types.ndarray(dtype=ti.i32, ndim=2)
    f1 = ti.types.ndarray(dtype=fp, ndim=1)
    f3 = ti.types.ndarray(dtype=fp, ndim=3)
    i3 = ti.types.ndarray(dtype=ti.i32, ndim=3)

    @ti.kernel
    def collide_kernel(npair: ti.i32, ngeom: ti.i32, pair_i: i2, pair_f: f3, geom_i: i2, geom_f: f3, body: f1,
                       body_stride: ti.i32, body_row: ti.i32, xpos_col: ti.i32, xquat_col: ti.i32, geom_x: f3,
                       con_f: f3, con_i: i3, con_n: i2, num_envs: ti.i32):
        for w in range(num_envs):
            collide(w, npair, ngeom, pair_i, pair_f, geom_i, geom_f, body, w * body_stride, body_row, xpos_col,
                    xquat_col, geom_x, con_f, con_i, con_n)

    return types.SimpleNamespace(collide=collide, collide_pairs=collide_pairs, geom_poses=geom_poses,
                                 geom_pose=geom_pose, test_pair=test_pair,
                                 pair_contacts=pair_contacts, gather_contacts=gather_contacts,
                                 kernel=collide_kernel)


_PRECISIONS = {"float32": (ti.f32, np.float32), "float64": (ti.f64, np.float64)}


class Collider:
    """The collision stage for ``num_envs`` worlds of one Model.

    Args:
        model: the Model whose geoms collide.
        num_envs: number of worlds.
        precision: "float32" or "float64", as the World's.
        device: "cpu", "cuda" or "auto"; the Taichi runtime of the process.
        max_contacts: rows of the contact table per env; by default the most contacts
            all candidate pairs can make at once, so the table cannot overflow.
        exclude, pairs: see :func:`physics.broadphase.candidate_pairs`.

    ``collide(xpos, xquat)`` (numpy or Taichi ndarrays, (num_envs, nbody, 3/4)) or
    ``collide_body_table(body, row, xpos_col, xquat_col)`` (a flat table of body rows)
    fills the contact table; ``get()`` reads it back.
    """

    def __init__(self, model: Model, num_envs: int = 1, *, precision: str = "float32", device: str = "cpu",
                 max_contacts=None, exclude=None, pairs=None):
        if precision not in _PRECISIONS:
            raise WorldError(f"precision must be 'float32' or 'float64', got {precision!r}")
        self.model = model
        self.num_envs = int(num_envs)
        self.device = ensure_runtime(device)
        self._fp, self.dtype = _PRECISIONS[precision]
        self.pairs = B.candidate_pairs(model, exclude=exclude, pairs=pairs)
        # every primitive routine, the convex ones where a pair needs them: one kernel serves
        # most models
        self._k = make_collision(self._fp, ALL_COLLIDERS if self.pairs.convex else ALL_COLLIDERS - CONVEX_COLLIDERS)
        disabled = model.opt.disableflags & (DSBL_CONTACT | DSBL_CONSTRAINT)
        self.npair = 0 if disabled else self.pairs.npair
        most = int(self.pairs.maxcon[: self.npair].sum())
        self.capacity = max(int(most if max_contacts is None else max_contacts), 1)
        packed = pack_collision_model(model, self.pairs, self.dtype)
        self._m = {k: _upload(v) for k, v in packed.items()}
        n, self._lanes = self.num_envs, table_lanes()  # laid out as a World's (physics/runtime/lanes.py)
        self._geom_x = ti.ndarray(self._fp, device_shape((n, max(model.ngeom, 1), NGEOM_X), self._lanes))
        self._con_f = ti.ndarray(self._fp, device_shape((n, self.capacity, NCON_F), self._lanes))
        self._con_i = ti.ndarray(ti.i32, device_shape((n, self.capacity, NCON_I), self._lanes))
        self._con_n = ti.ndarray(ti.i32, device_shape((n, 2), self._lanes))
        self._poses = None  # (num_envs, nbody, 7) staging table for numpy poses

    def collide(self, xpos, xquat) -> None:
        """Contacts of the worlds whose bodies are at ``xpos`` (num_envs, nbody, 3) and
        ``xquat`` (num_envs, nbody, 4), numpy arrays or torch tensors."""
        nbody = self.model.nbody
        xpos = _host(xpos).reshape(self.num_envs, nbody, 3)
        xquat = _host(xquat).reshape(self.num_envs, nbody, 4)
        if self._poses is None:
            self._poses = ti.ndarray(self._fp, (self.num_envs * nbody * 7,))
        self._poses.from_numpy(np.concatenate([xpos, xquat], axis=2).astype(self.dtype).ravel())
        self.collide_body_table(self._poses, 7, 0, 3)

    def collide_body_table(self, body, row: int, xpos_col: int, xquat_col: int) -> None:
        """Contacts from a flat device table of (num_envs, nbody, row) entries holding
        each body's position at columns xpos_col..+3 and quaternion at xquat_col..+4."""
        mm = self._m
        self._k.kernel(self.npair, self.model.ngeom, mm["pair_i"], mm["pair_f"], mm["geom_i"], mm["geom_f"], body,
                       self.model.nbody * int(row), int(row), int(xpos_col), int(xquat_col), self._geom_x,
                       self._con_f, self._con_i, self._con_n, self.num_envs)

    def _env_major(self, table) -> np.ndarray:
        return env_rows(table.to_numpy(), self.num_envs, self._lanes)

    # --- reading --------------------------------------------------------------------------
    def get(self) -> dict:
        """The contact table as numpy arrays with a leading env axis.

        ``ncon`` (num_envs,) counts the valid rows of each env; ``overflow`` (num_envs,)
        counts contacts that did not fit (nonzero means raise ``max_contacts``). Per row:
        ``dist``, ``pos`` (3), ``frame`` (3, 3; row 0 is the normal from geom1 to geom2),
        ``friction`` (5), ``solref`` (2), ``solimp`` (5), ``margin``, ``gap``,
        ``includemargin``, ``geom`` (2: geom1, geom2), ``dim``, ``exclude``, ``pair``
        (row of the candidate pair table), ``efc_address`` (the contact's first constraint
        row, -1 where it has none). Rows at or past ``ncon`` are stale.
        """
        f, i, n = self._env_major(self._con_f), self._env_major(self._con_i), self._env_major(self._con_n)
        out = {name: f[..., a : a + w] if w > 1 else f[..., a] for name, (a, w) in CONTACT_F.items()}
        out["frame"] = out["frame"].reshape(self.num_envs, self.capacity, 3, 3)
        out.update(geom=i[..., [CON_GEOM1, CON_GEOM2]], dim=i[..., CON_DIM], exclude=i[..., CON_EXCLUDE],
                   pair=i[..., CON_PAIR], efc_address=i[..., CON_EFC_ADDRESS], ncon=n[:, NCON],
                   overflow=n[:, NOVERFLOW])
        return out

    def geom_xpos(self) -> np.ndarray:
        return self._env_major(self._geom_x)[:, : self.model.ngeom, X_POS : X_POS + 3]

    def geom_xmat(self) -> np.ndarray:
        return self._env_major(self._geom_x)[:, : self.model.ngeom, X_MAT : X_MAT + 9].reshape(
            self.num_envs, self.model.ngeom, 3, 3)


def _upload(arr: np.ndarray) -> ti.Ndarray:
    return upload(arr, ti.i32 if arr.dtype == np.int32 else (ti.f64 if arr.dtype == np.float64 else ti.f32))


def _host(value) -> np.ndarray:
    if hasattr(value, "to_numpy"):  # Taichi ndarray
        return value.to_numpy()
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)
