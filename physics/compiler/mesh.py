"""Triangle meshes compiled as MuJoCo compiles them (its mjCMesh).

A mesh's vertices are moved by the user's ``refpos``/``refquat`` and ``scale``; its volume,
centre of mass and inertia come from its triangles (or its convex hull) by one of
MuJoCo's four inertia modes; then the mesh is re-expressed about its centre of mass in
its principal axes. That frame (``pos``, ``quat``) is folded into every geom that uses
the mesh, which is why a mesh geom's compiled pose differs from the one in the file.

The convex hull, which collision uses, is Qhull's (scipy.spatial.ConvexHull), computed on
the vertices as read, before any transformation, with MuJoCo's options (``maxhullvert``
stops Qhull after that many vertices).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .mass_properties import MESH_EIG_REL, principal_axes
from .transforms import quat_normalize, quat_to_mat

INERTIA_MODES = ("convex", "exact", "legacy", "shell")
_MINVAL = 1e-15  # mjMINVAL


@dataclass
class Mesh:
    """A compiled mesh, in its own frame: centred at its centre of mass, along its
    principal axes (as mjModel's mesh_vert)."""

    name: str
    vert: np.ndarray  # (nvert, 3), float32-rounded, as mjModel.mesh_vert
    face: np.ndarray  # (nface, 3) int
    hull: np.ndarray  # indices of the convex hull's vertices into vert
    hull_face: np.ndarray  # (nhullface, 3) hull triangles, outward
    graph: np.ndarray  # the hull as mjModel.mesh_graph lays it out (hull_graph)
    pos: np.ndarray  # the centre of mass in the frame the vertices were given in
    quat: np.ndarray  # the principal axes in that frame
    volume: float  # volume, or surface area for inertia="shell" [m^3 or m^2]
    inertia: np.ndarray  # principal moments per unit density, descending
    aamm: np.ndarray  # (6,) bounding box min, max in the mesh frame
    flat: str = ""  # why it has no hull (its vertices in a plane or on a line), '' if it has one


def compile_mesh(name: str, vert, face=None, *, scale=(1.0, 1.0, 1.0), refpos=(0.0, 0.0, 0.0),
                 refquat=(1.0, 0.0, 0.0, 0.0), inertia: str = "legacy", maxhullvert: int = -1) -> Mesh:
    """Compile raw vertices (nvert, 3) and triangles (nface, 3), or the hull's triangles when
    ``face`` is None, into a :class:`Mesh` (errors name the mesh)."""
    where = f"mesh '{name}'" if name else "mesh"
    raw = np.asarray(vert, dtype=np.float32).astype(np.float64).reshape(-1, 3)
    if len(raw) < 4:
        raise ModelError(f"a mesh needs at least 4 vertices, got {len(raw)}", element=where)
    if not np.all(np.isfinite(raw)):
        raise ModelError("a vertex coordinate is not finite", element=where)
    if inertia not in INERTIA_MODES:
        raise ModelError(f"inertia must be one of {', '.join(INERTIA_MODES)}, got {inertia!r}", element=where,
                         attribute="inertia")
    if maxhullvert != -1 and maxhullvert < 4:
        raise ModelError(f"maxhullvert must be -1 or at least 4, got {maxhullvert}", element=where,
                         attribute="maxhullvert")
    given = face is not None and len(face) > 0
    hull, hull_face, simplices, flat = _hull_unless_flat(raw, maxhullvert, where, given and inertia != "convex")
    face = _checked_faces(face, len(raw), where) if given else hull_face.copy()
    if inertia == "exact":
        _check_orientation(raw, face, where)
    scale = np.asarray(scale, dtype=float)
    if np.prod(scale) < 0:  # a mirror: keep the triangles' outward winding
        face = face[:, [0, 2, 1]]
    dvert = transform_vertices(raw, scale, refpos, refquat)
    hull_face = _outward(dvert, hull_face) if len(hull_face) else hull_face
    volume, com, full = _mass_properties(dvert, face, hull_face, inertia, where)
    quat, moments = principal_axes(full, MESH_EIG_REL)
    _check_moments(moments, where)
    rot = quat_to_mat(quat)
    local = (dvert - com) @ rot  # rows: R^T (v - com)
    aamm = np.concatenate([local.min(axis=0), local.max(axis=0)])
    graph = hull_graph(hull, hull_face, simplices) if len(hull) else np.zeros(0, np.int64)
    return Mesh(name, local.astype(np.float32).astype(np.float64), face, hull, hull_face, graph, com, quat, volume,
                moments, aamm, flat)


def _hull_unless_flat(raw, maxhullvert: int, where: str, may_be_flat: bool):
    """convex_hull's (vertices, triangles, Qhull's triangles) and '', or, for a mesh that
    has no hull (its vertices in a plane) but needs none for its inertia, empty ones and
    why: MuJoCo builds a hull only for a mesh that collides, so a flat visual mesh loads,
    and a geom that would collide with it is refused (compile.check_mesh_hulls)."""
    try:
        return (*convex_hull(raw, maxhullvert, where), "")
    except ModelError as e:
        if not may_be_flat:
            raise
        empty = np.zeros((0, 3), np.int64)
        return np.zeros(0, np.int64), empty, empty, str(e).split(": ", 1)[-1]


def hull_graph(hull, hull_face, simplices) -> np.ndarray:
    """MuJoCo's mesh_graph of a hull: vertex and face counts, each hull vertex's first
    neighbour (vert_edgeadr), its mesh vertex (vert_globalid), the neighbours of each
    (hull indices, in the order of the hull's triangles, each list ended by -1) and the
    outward triangles (mesh vertices). The neighbour sets are MuJoCo's; their order, which
    Qhull's internal lists decide there, may differ."""
    local = {int(v): i for i, v in enumerate(hull)}
    neighbours = [[] for _ in hull]
    for tri in simplices:
        for a in tri:
            for b in tri:
                if a != b and local[int(b)] not in neighbours[local[int(a)]]:
                    neighbours[local[int(a)]].append(local[int(b)])
    edges = [n for nb in neighbours for n in nb + [-1]]
    edgeadr = np.cumsum([0] + [len(nb) + 1 for nb in neighbours[:-1]])
    return np.concatenate([[len(hull), len(hull_face)], edgeadr, hull, edges, hull_face.reshape(-1)]).astype(np.int32)


def transform_vertices(raw, scale, refpos, refquat) -> np.ndarray:
    """MuJoCo's order: refpos is subtracted and refquat undone on the vertices as given,
    then the result is scaled."""
    out = raw - np.asarray(refpos, dtype=float)
    q = quat_normalize(np.asarray(refquat, dtype=float))
    out = out @ quat_to_mat(q)  # rows: R^T v
    return out * np.asarray(scale, dtype=float)


def convex_hull(points, maxhullvert: int, where: str):
    """(hull vertex indices, hull triangles wound outward, Qhull's triangles as it lists
    them) from Qhull; degenerate point sets (all at one point, on a line or in a plane) are
    refused as MuJoCo refuses them."""
    from scipy.spatial import ConvexHull, QhullError

    _check_spread(points, where)
    options = "Qt" if maxhullvert < 0 else f"Qt Q9 TA{maxhullvert - 4}"
    try:
        hull = ConvexHull(points, qhull_options=options)
    except QhullError as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else "Qhull failed"
        raise ModelError(f"cannot compute the convex hull: {reason}", element=where) from None
    simplices = hull.simplices.astype(np.int64)
    faces = simplices.copy()
    normals = hull.equations[:, :3]
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), normals) < 0
    faces[flip] = faces[flip][:, [1, 0, 2]]  # as MuJoCo turns Qhull's triangles outward
    used = np.unique(faces)
    return used, faces, simplices


def _check_spread(points, where: str) -> None:
    span = points - points[0]
    lengths = np.linalg.norm(span, axis=1)
    if not np.any(lengths > _MINVAL):
        raise ModelError("the vertices are all at one point: no convex hull (use a small sphere)", element=where)
    if np.linalg.matrix_rank(span, tol=_MINVAL * max(1.0, lengths.max()) ** 2) < 3:
        raise ModelError("the vertices lie on a line or in a plane: no convex hull (use a capsule, a plane or a "
                         "thin box)", element=where)


def _outward(vert, faces) -> np.ndarray:
    """Hull triangles wound outward about the hull's vertex centroid (a mirroring scale
    turns Qhull's winding inside out)."""
    centre = vert[np.unique(faces)].mean(axis=0)
    a, b, c = vert[faces[:, 0]], vert[faces[:, 1]], vert[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), (a + b + c) / 3 - centre) < 0
    out = faces.copy()
    out[inward] = out[inward][:, [0, 2, 1]]
    return out


def _checked_faces(face, nvert: int, where: str) -> np.ndarray:
    face = np.asarray(face, dtype=np.int64).reshape(-1, 3)
    bad = (face < 0) | (face >= nvert)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise ModelError(f"face {i} names vertex {int(face.reshape(-1)[bad.reshape(-1)][0])}, which does not exist",
                         element=where)
    return face


def _check_orientation(vert, face, where: str) -> None:
    """inertia="exact" integrates signed volumes: two triangles walking one edge the same
    way mean the surface's orientation is inconsistent."""
    area = _triangles(vert, face)[1]
    keep = face[area > np.sqrt(_MINVAL)]
    edges = np.concatenate([keep[:, [0, 1]], keep[:, [1, 2]], keep[:, [2, 0]]])
    unique, counts = np.unique(edges, axis=0, return_counts=True)
    if np.any(counts > 1):
        a, b = unique[np.argmax(counts > 1)] + 1
        raise ModelError(f"faces have inconsistent orientation (see the faces with vertices {a} and {b}); "
                         "use inertia='legacy' or 'convex'", element=where, attribute="inertia")


def _triangles(vert, face):
    """Per triangle: unit normal, area and centroid; triangles with an area below
    MuJoCo's threshold count as zero."""
    a, b, c = vert[face[:, 0]], vert[face[:, 1]], vert[face[:, 2]]
    cross = np.cross(b - a, c - a)
    length = np.linalg.norm(cross, axis=1)
    small = length < _MINVAL
    normal = np.where(small[:, None], 0.0, cross / np.where(small, 1.0, length)[:, None])
    area = np.where(small, 0.0, 0.5 * length)
    return normal, area, (a + b + c) / 3


def _mass_properties(vert, face, hull_face, mode: str, where: str):
    """(volume or area, centre of mass, inertia about it per unit density) by MuJoCo's
    mode: the hull's triangles ('convex'), signed cones to the surface ('exact'), their
    absolute values ('legacy'), or a thin shell ('shell')."""
    normal, area, centre = _triangles(vert, face)
    if area.sum() < _MINVAL:
        raise ModelError("the mesh's surface area is too small", element=where)
    facecen = (area[:, None] * centre).sum(axis=0) / area.sum()
    tris = hull_face if mode == "convex" else face
    if mode == "shell":
        weight = area
    else:
        normal, area, centre = _triangles(vert, tris)
        weight = np.einsum("ij,ij->i", centre - facecen, normal) * area / 3
        if mode == "legacy":
            weight = np.abs(weight)
    total = weight.sum()
    if total < _MINVAL:
        if mode == "shell":
            raise ModelError("the mesh's surface area is too small", element=where)
        if total < 0:
            raise ModelError("the mesh's volume is negative (triangles wound inward)", element=where)
        raise ModelError("the mesh's volume is too small; try inertia='shell'", element=where, attribute="inertia")
    com = (weight[:, None] * (0.75 * centre + 0.25 * facecen)).sum(axis=0) / total
    volume, full = _inertia_about(vert - com, tris, mode)
    return volume, com, full


def _inertia_about(vert, tris, mode: str):
    """Volume (or area) and inertia per unit density of the solid (or shell) the triangles
    bound, about the origin: cones from the origin to each triangle, each integrated in
    closed form."""
    normal, area, centre = _triangles(vert, tris)
    if mode == "shell":
        weight, denom = area, 12.0
    else:
        weight, denom = np.einsum("ij,ij->i", centre, normal) * area / 3, 20.0
        if mode == "legacy":
            weight = np.abs(weight)
    d, e, f = vert[tris[:, 0]], vert[tris[:, 1]], vert[tris[:, 2]]
    # second moments sum(x_i x_j) over each simplex: 2(DD + EE + FF) + the cross terms
    second = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            s = 2 * (d[:, i] * d[:, j] + e[:, i] * e[:, j] + f[:, i] * f[:, j]) + d[:, i] * e[:, j] + \
                d[:, j] * e[:, i] + d[:, i] * f[:, j] + d[:, j] * f[:, i] + e[:, i] * f[:, j] + e[:, j] * f[:, i]
            second[i, j] = (weight / denom * s).sum()
    full = np.trace(second) * np.eye(3) - second
    return float(weight.sum()), full


def _check_moments(moments, where: str) -> None:
    if moments[0] <= 0 or moments[2] <= 0:
        raise ModelError("the mesh's inertia has a non-positive principal moment", element=where)
    a, b, c = moments
    tol = lambda x: x * (1.0 - 1e-6) - 1e-9  # MuJoCo's tolerance on the triangle inequality
    if a + b < tol(c) or a + c < tol(b) or b + c < tol(a):
        raise ModelError(f"the mesh's principal moments {moments.tolist()} violate A + B >= C", element=where)


def inertia_box(mesh: Mesh) -> np.ndarray:
    """Half sizes of the box of uniform density with the mesh's volume and principal
    moments (MuJoCo's equivalent-inertia box)."""
    a, b, c = mesh.inertia
    return 0.5 * np.sqrt(6.0 * np.array([b + c - a, a + c - b, a + b - c]) / mesh.volume)


def fitted_size(gtype: int, mesh: Mesh) -> np.ndarray:
    """MuJoCo's geom_size of a primitive fitted to a mesh's equivalent-inertia box."""
    from ..model import GEOM_CAPSULE, GEOM_CYLINDER, GEOM_SPHERE

    box = inertia_box(mesh)
    if gtype == GEOM_SPHERE:
        return np.array([box.mean(), 0.0, 0.0])
    if gtype in (GEOM_CAPSULE, GEOM_CYLINDER):
        radius = 0.5 * (box[0] + box[1])
        half = max(0.0, box[2] - radius / 2) if gtype == GEOM_CAPSULE else box[2]
        return np.array([radius, half, 0.0])
    return box
