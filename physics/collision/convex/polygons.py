"""A mesh hull's polygons, host side, as MuJoCo makes them (mjCMesh::MakePolygons): the
hull's triangles grouped by their normal's azimuth and polar angles rounded to 0.01 rad
(in the frame the mesh's file was written in), each group's boundary traced into one
polygon per connected piece, counter-clockwise seen from outside, with the normal of its
first three vertices. MuJoCo's multi-contact clips such polygons against each other
(faces.py), so the same grouping and the same vertex order (which fixes where a clipped
polygon starts, and so which four of its vertices are kept) give the same contacts.

The polygons come in MuJoCo's order too, its hash map's (libc++'s unordered_map keyed by
the rounded angles, hashed as boost's hash_combine of the two doubles' bits, as the mujoco
package 4.0 builds it; tests/test_mesh_multiccd.py checks it on seven hulls): a search
for a face or edge that lies flat takes the first that qualifies, in that order.

:func:`pack_polygons` lays them out as the kernel reads them (faces.py): the count, where
each hull vertex's list of polygons starts, where each polygon starts, the lists (each
ended by -1), then per polygon its normal (3), its vertex count and its vertices (hull
indices), all as offsets from the section's first entry.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ...compiler.transforms import quat_to_mat

ANGLE_TOL = 0.01  # rad: MuJoCo's kAngleTol
MINVAL = 1e-15
_MASK = (1 << 64) - 1


def _round(x: float) -> float:
    # std::round: halves away from zero
    return math.copysign(math.floor(abs(x) + 0.5), x)


def _key(v1, v2, v3):
    """MuJoCo's MeshPolygonKey: the triangle's normal's rounded angles, None if degenerate."""
    normal = np.cross(v2 - v1, v3 - v1)
    norm = float(np.linalg.norm(normal))
    if norm < MINVAL:
        return None
    normal = normal / norm + 0.0
    if abs(normal[2]) > 1.0 - 1e-7:
        return (0.0, _round(math.pi / ANGLE_TOL) if normal[2] < 0 else 0.0)
    return (_round(math.atan2(normal[1], normal[0]) / ANGLE_TOL), _round(math.acos(normal[2]) / ANGLE_TOL))


class _Group:
    """Triangles of one key: their unshared edges, each tagged with its connected piece
    (MuJoCo's MeshPolygon: InsertFace, CombineIslands, Paths)."""

    def __init__(self, a: int, b: int, c: int):
        self.edges = [(a, b), (b, c), (c, a)]
        self.islands = [0, 0, 0]
        self.nisland = 1

    def _combine(self, one: int, two: int) -> int:
        one, two = min(one, two), max(one, two)
        self.islands = [one if k == two else (k - 1 if k > two else k) for k in self.islands]
        return one

    def insert(self, a: int, b: int, c: int) -> None:
        island = -1
        added = []
        for u, v in ((a, b), (b, c), (c, a)):
            shared = next((i for i, e in enumerate(self.edges) if e == (v, u)), None)
            if shared is None:
                added.append((u, v))
                continue
            other = self.islands[shared]
            if island == -1:
                island = other
            elif other != island:
                self.nisland -= 1
                island = self._combine(island, other)
            del self.edges[shared]
            del self.islands[shared]
        if island == -1:
            island = self.nisland
            self.nisland += 1
        for e in added:
            self.edges.append(e)
            self.islands.append(island)

    def paths(self) -> list:
        if len(self.edges) == 3:
            return [[e[0] for e in self.edges]]
        out = []
        for i in range(self.nisland):
            start = next((e for e, k in zip(self.edges, self.islands) if k == i), None)
            if start is None:
                continue
            path = list(start)
            nxt = path[-1]
            for _ in range(len(self.edges)):
                step = next((e for e, k in zip(self.edges[1:], self.islands[1:]) if k == i and e[0] == nxt), None)
                if step is None:
                    break
                nxt = step[1]
                if nxt == path[0]:
                    out.append(path)
                    break
                path.append(nxt)
        return out


def hull_polygons(vert: np.ndarray, faces: np.ndarray, pos=(0.0, 0.0, 0.0), quat=(1.0, 0.0, 0.0, 0.0)) -> list:
    """The polygons of a hull whose triangles ``faces`` (n, 3) index ``vert``, in MuJoCo's
    order: a list of (unit normal, vertex ids in order). ``pos`` and ``quat`` place the
    mesh frame in its file's frame (mjModel.mesh_pos, mesh_quat), where MuJoCo rounds the
    angles."""
    written = np.asarray(vert, float) @ quat_to_mat(np.asarray(quat, float)).T + np.asarray(pos, float)
    groups: dict = {}
    for a, b, c in np.asarray(faces, dtype=int):
        key = _key(written[a], written[b], written[c])
        if key is None:
            continue
        if key in groups:
            groups[key].insert(a, b, c)
        else:
            groups[key] = _Group(a, b, c)
    out = []
    for key in _hash_map_order(list(groups)):
        for path in groups[key].paths():
            if len(path) >= 3:
                v1, v2, v3 = (vert[i] for i in path[:3])
                normal = np.cross(v2 - v1, v3 - v1)
                out.append((normal / max(np.linalg.norm(normal), MINVAL), path))
    return out


def _double_hash(x: float) -> int:
    # libc++'s std::hash<double>: the bits, 0 for both zeros
    return 0 if x == 0 else struct.unpack("<Q", struct.pack("<d", x))[0]


def _key_hash(key) -> int:
    first, second = _double_hash(key[0]), _double_hash(key[1])
    return (first ^ ((second + 0x9E3779B9 + (first << 6) + (first >> 2)) & _MASK)) & _MASK


def _bucket(h: int, count: int) -> int:
    return h & (count - 1) if count & (count - 1) == 0 else h % count


def _next_prime(n: int) -> int:
    while any(n % d == 0 for d in range(2, math.isqrt(n) + 1)):
        n += 1
    return n


def _hash_map_order(keys: list) -> list:
    """The order libc++'s unordered_map iterates ``keys`` (distinct) in, inserted in this
    order: one list of nodes, each bucket's together, a node joining the front of its
    bucket (of the list where its bucket is empty), the buckets regrouped at each growth."""
    head = -1
    after = {head: None}
    hashes = [_key_hash(k) for k in keys]
    first: dict = {}  # bucket -> the node before its nodes
    count = 0
    for node, h in enumerate(hashes):
        if node + 1 > count:
            grown = max(2 * count + (0 if count > 2 and count & (count - 1) == 0 else 1), node + 1)
            grown = 2 if grown == 1 else (grown if grown & (grown - 1) == 0 else _next_prime(grown))
            if grown > count:
                count = grown
                first = _regroup(after, hashes, count)
        b = _bucket(h, count)
        before = first.get(b)
        if before is None:
            after[node], after[head] = after[head], node
            first[b] = head
            if after[node] is not None:
                first[_bucket(hashes[after[node]], count)] = node
        else:
            after[node], after[before] = after[before], node
    out, node = [], after[head]
    while node is not None:
        out.append(keys[node])
        node = after[node]
    return out


def _regroup(after: dict, hashes: list, count: int) -> dict:
    """libc++'s __do_rehash: walk the list, moving each node whose bucket was met before
    to the front of that bucket's nodes; returns each bucket's node before its nodes."""
    first: dict = {}
    before, node = -1, after[-1]
    if node is None:
        return first
    last = _bucket(hashes[node], count)
    first[last] = before
    before, node = node, after[node]
    while node is not None:
        b = _bucket(hashes[node], count)
        if b == last:
            before = node
        elif b not in first:
            first[b] = before
            before, last = node, b
        else:
            after[before] = after[node]
            after[node] = after[first[b]]
            after[first[b]] = node
        node = after[before]
    return first


def pack_polygons(vert: np.ndarray, hull: np.ndarray, faces: np.ndarray, pos, quat) -> np.ndarray:
    """The polygon section of one hull (module docstring): vertices as hull indices, the
    position of each in ``hull`` (mesh vertex ids); ``pos`` and ``quat`` as
    :func:`hull_polygons` takes them."""
    local = {int(v): i for i, v in enumerate(hull)}
    polygons = [(normal, [local[int(v)] for v in path]) for normal, path in hull_polygons(vert, faces, pos, quat)]
    around = [[] for _ in hull]
    for p, (_, path) in enumerate(polygons):
        for v in path:
            around[v].append(p)
    lists = [np.array(ids + [-1], float) for ids in around]
    records = [np.concatenate([normal, [len(path)], path]) for normal, path in polygons]
    head = 1 + len(hull) + len(polygons)
    list_start = head + np.cumsum([0] + [len(x) for x in lists[:-1]])
    record_start = head + sum(len(x) for x in lists) + np.cumsum([0] + [len(x) for x in records[:-1]])
    return np.concatenate([[len(polygons)], list_start, record_start, *lists, *records])
