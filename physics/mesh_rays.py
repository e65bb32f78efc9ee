"""Rays against triangles: MuJoCo's ray_triangle, and a mesh's triangles through its tree.

The rangefinders (physics/rays.py) and the renderer (physics/render/raycast.py) both walk
a mesh's tree (physics/compiler/mesh_bvh.py) with :func:`make_mesh_rays`'s ``walk``, from
tables of their own laid out alike by :func:`append_trees`: an int table (rows of any
width, read flat) and a float table (row sets of any width, read flat in row set ``mg``).
Per mesh, its int block is a header (the flat index of its float block, its node count),
its nodes (first, count: children first and first + 1 when count is 0, else a leaf's
first triangle and triangle count), then its triangles' vertex ids, leaf by leaf; its
float block is its nodes' boxes (min xyz, max xyz), then its vertices, in the mesh frame.

The walk follows MuJoCo's mju_rayTree: a stack of nodes, a slab test per node, MuJoCo's
ray_triangle per triangle, the nearest hit kept. It also skips the nodes that start beyond
the nearest hit so far, and visits the nearer child first, which changes no result.
"""


import functools
import types

import numpy as np

from .compiler.mesh_bvh import STACK_SIZE
from .runtime.backend import ti
from .runtime.ti_math import make_math

MINVAL = 1e-15  # mjMINVAL
BIG = 1e30
HEADER = 2  # ints before a mesh's nodes: its float block's flat index, its node count


# --- host side: the tables ----------------------------------------------------------------
def tree_blocks(model, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mesh k's int block past its header, and its float block (module docstring)."""
    node, box = model.bvh_node[model.mesh_bvhadr[k]:][:model.mesh_bvhnum[k]], \
        model.bvh_box[model.mesh_bvhadr[k]:][:model.mesh_bvhnum[k]]
    faces = model.mesh_face[model.mesh_faceadr[k]:][:model.mesh_facenum[k]]
    order = model.bvh_face[model.mesh_faceadr[k]:][:model.mesh_facenum[k]]
    vert = model.mesh_vert[model.mesh_vertadr[k]:][:model.mesh_vertnum[k]]
    return (np.concatenate([node.reshape(-1), faces[order].reshape(-1)]),
            np.concatenate([box.reshape(-1), vert.reshape(-1)]))


def append_trees(model, meshes, ints: np.ndarray, floats: np.ndarray):
    """(ints, floats) with the trees of ``meshes`` in rows past the given ones, and
    {mesh: flat index of its header in ints}."""
    head, int_parts, float_parts = {}, [], []
    at_int, at_float = ints.size, floats.size
    for k in meshes:
        if model.mesh_bvhadr[k] < 0:
            raise ValueError(f"mesh {k} has no ray tree: the compiler builds them for the meshes rays see")
        block_i, block_f = tree_blocks(model, int(k))
        head[int(k)] = at_int
        int_parts.append(np.concatenate([[at_float, model.mesh_bvhnum[k]], block_i]))
        float_parts.append(block_f)
        at_int += int_parts[-1].size
        at_float += block_f.size
    if not head:
        return ints, floats, head
    return _rows_past(ints, int_parts), _rows_past(floats, float_parts), head


def _rows_past(table: np.ndarray, parts) -> np.ndarray:
    flat = np.concatenate(parts)
    width = table.shape[1]
    rows = np.zeros(-(-flat.size // width) * width, dtype=table.dtype)
    rows[: flat.size] = flat
    return np.concatenate([table, rows.reshape(-1, width)])


# --- kernel side ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def make_mesh_rays(fp):
    m = make_math(fp)
    vec2 = ti.types.vector(2, fp)

    @ti.func
    def basis(lvec):
        """Two unit vectors across the ray's direction, as MuJoCo's ray-triangle tests
        project the triangles on them."""
        b0 = m.vec3(1.0, 1.0, 1.0)
        if ti.abs(lvec[0]) >= ti.abs(lvec[1]) and ti.abs(lvec[0]) >= ti.abs(lvec[2]):
            b0[0] = 0
        elif ti.abs(lvec[1]) >= ti.abs(lvec[2]):
            b0[1] = 0
        else:
            b0[2] = 0
        b1 = (b0 - lvec * (lvec.dot(b0) / lvec.dot(lvec))).normalized()
        b0 = b1.cross(lvec).normalized()
        return b0, b1

    @ti.func
    def triangle(v0, v1, v2, lpnt, lvec, b0, b1):
        """MuJoCo's ray_triangle: the ray's plane projection inside the triangle's, then the
        distance to the triangle's plane (-1 if none)."""
        x = fp(-1.0)
        d0, d1, d2 = v0 - lpnt, v1 - lpnt, v2 - lpnt
        p0, p1, p2 = vec2(b0.dot(d0), b1.dot(d0)), vec2(b0.dot(d1), b1.dot(d1)), vec2(b0.dot(d2), b1.dot(d2))
        same_side = False
        for k in ti.static(range(2)):
            if (p0[k] > 0 and p1[k] > 0 and p2[k] > 0) or (p0[k] < 0 and p1[k] < 0 and p2[k] < 0):
                same_side = True
        if not same_side:
            a00, a01, a10, a11 = p0[0] - p2[0], p1[0] - p2[0], p0[1] - p2[1], p1[1] - p2[1]
            det = a00 * a11 - a01 * a10
            if ti.abs(det) >= MINVAL:
                t0 = (a11 * -p2[0] - a01 * -p2[1]) / det
                t1 = (-a10 * -p2[0] + a00 * -p2[1]) / det
                if t0 >= 0 and t1 >= 0 and t0 + t1 <= 1:
                    nrm = (v0 - v2).cross(v1 - v2)
                    denom = lvec.dot(nrm)
                    if ti.abs(denom) >= MINVAL:
                        x = -(lpnt - v2).dot(nrm) / denom
        return x

    @ti.func
    def int_at(ints: ti.template(), k):
        return ints[k // ints.shape[1], k % ints.shape[1]]

    @ti.func
    def float_at(floats: ti.template(), mg, k):
        return floats[mg, k // floats.shape[2], k % floats.shape[2]]

    @ti.func
    def point(floats: ti.template(), mg, k):
        return m.vec3(float_at(floats, mg, k), float_at(floats, mg, k + 1), float_at(floats, mg, k + 2))

    @ti.func
    def enters(floats: ti.template(), mg, k, lpnt, lvec, near, far):
        """Whether the ray meets the box at float k within [near, far] (a slab test)."""
        lo, hi = point(floats, mg, k), point(floats, mg, k + 3)
        t0, t1, inside = near, far, True
        for i in ti.static(range(3)):
            if ti.abs(lvec[i]) < MINVAL:  # along the slab: inside it or never
                if lpnt[i] < lo[i] or lpnt[i] > hi[i]:
                    inside = False
            else:
                a, b = (lo[i] - lpnt[i]) / lvec[i], (hi[i] - lpnt[i]) / lvec[i]
                t0, t1 = ti.max(t0, ti.min(a, b)), ti.min(t1, ti.max(a, b))
        return inside and t0 <= t1

    @ti.func
    def nearer_first(floats: ti.template(), mg, boxes, first, lvec):
        """Children first, first + 1 ordered (farther, nearer) by their boxes' centres
        along the ray."""
        c0 = point(floats, mg, boxes + 6 * first) + point(floats, mg, boxes + 6 * first + 3)
        c1 = point(floats, mg, boxes + 6 * first + 6) + point(floats, mg, boxes + 6 * first + 9)
        far, near = first, first + 1
        if (c1 - c0).dot(lvec) > 0:
            far, near = first + 1, first
        return far, near

    @ti.func
    def leaf(ints: ti.template(), floats: ti.template(), mg, tris, verts, first, count, lpnt, lvec, b0, b1, near,
             reach):
        """(distance, normal) of the nearest of a leaf's triangles hit in [near, reach);
        distance -1 if none."""
        x, normal = fp(-1.0), m.vec3(0.0)
        for i in range(first, first + count):
            k = tris + 3 * i
            v0 = point(floats, mg, verts + 3 * int_at(ints, k))
            v1 = point(floats, mg, verts + 3 * int_at(ints, k + 1))
            v2 = point(floats, mg, verts + 3 * int_at(ints, k + 2))
            sol = triangle(v0, v1, v2, lpnt, lvec, b0, b1)
            if sol >= near and sol < reach and (x < 0 or sol < x):
                x = sol
                normal = (v0 - v2).cross(v1 - v2)
        return x, normal

    @ti.func
    def walk(ints: ti.template(), floats: ti.template(), mg, head, lpnt, lvec, near, far):
        """(distance, the hit triangle's normal, not unit) of the nearest triangle of the
        mesh whose header is at int ``head``, hit at a distance in [near, far); -1 if none.
        ``lpnt``, ``lvec``: the ray in the mesh frame."""
        boxes, nnode = int_at(ints, head), int_at(ints, head + 1)
        nodes = head + 2
        tris, verts = nodes + 2 * nnode, boxes + 6 * nnode
        b0, b1 = basis(lvec)
        x, normal = fp(-1.0), m.vec3(0.0)
        stack = ti.Vector([0] * STACK_SIZE, dt=ti.i32)
        top, reach = 1, far
        while top > 0:
            top -= 1
            node = stack[top]
            if enters(floats, mg, boxes + 6 * node, lpnt, lvec, near, reach):
                first, count = int_at(ints, nodes + 2 * node), int_at(ints, nodes + 2 * node + 1)
                if count == 0:
                    farther, nearer = nearer_first(floats, mg, boxes, first, lvec)
                    stack[top] = farther
                    stack[top + 1] = nearer
                    top += 2
                else:
                    sol, nrm = leaf(ints, floats, mg, tris, verts, first, count, lpnt, lvec, b0, b1, near, reach)
                    if sol >= 0:
                        x, normal, reach = sol, nrm, sol
        return x, normal

    return types.SimpleNamespace(basis=basis, triangle=triangle, walk=walk)
