"""Mesh files, read into raw vertices and triangles: STL (binary and ASCII) and OBJ through
trimesh, and MuJoCo's binary ``.msh`` with numpy. Vertices are single precision in
every one of these formats, as MuJoCo keeps them.

Other formats (COLLADA ``.dae``, glTF, PLY...) are refused: MuJoCo does not read them, and
a model using them would not compile there either.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

READABLE = (".stl", ".obj", ".msh")
_CONTENT_TYPES = {"model/stl": ".stl", "model/obj": ".obj", "model/vnd.mujoco.msh": ".msh"}


class MeshFileError(ValueError):
    """A mesh file that cannot be read; the message names the file."""


def mesh_format(path: Path, content_type=None) -> str:
    """The reader a file takes (``.stl``, ``.obj`` or ``.msh``) from its content type,
    else its extension."""
    if content_type is not None:
        if content_type not in _CONTENT_TYPES:
            raise MeshFileError(f"unsupported content_type {content_type!r} (expected one of "
                                f"{', '.join(_CONTENT_TYPES)})")
        return _CONTENT_TYPES[content_type]
    suffix = path.suffix.lower()
    if suffix not in READABLE:
        raise MeshFileError(f"{path}: {suffix or 'a file without extension'} meshes are not supported; convert "
                            f"it to STL or OBJ")
    return suffix


def read_mesh(path, content_type=None) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3) float64 holding float32 values, triangles (m, 3) int64) of a file;
    an ``.msh`` without triangles gives an empty (0, 3) array."""
    path = Path(path)
    fmt = mesh_format(path, content_type)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise MeshFileError(f"cannot read mesh file {str(path)!r}: {e.strerror}") from None
    if fmt == ".msh":
        return _read_msh(raw, path)
    return _read_with_trimesh(raw, fmt, path)


def _read_with_trimesh(raw: bytes, fmt: str, path: Path):
    import io

    import trimesh

    try:
        # process=False: the triangles as written, repeated vertices and all, as MuJoCo
        # reads them (merging would not change the solid but would change the faces' count)
        mesh = trimesh.load(io.BytesIO(raw), file_type=fmt[1:], force="mesh", process=False)
    except Exception as e:  # trimesh raises many kinds; all mean "not a readable mesh"
        raise MeshFileError(f"{path}: not a readable {fmt[1:].upper()} file ({e})") from None
    vert = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=np.float32)
    face = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    if len(vert) == 0:
        raise MeshFileError(f"{path}: the file holds no vertices")
    return _merge_repeated(vert, face)


def _merge_repeated(vert, face):
    """One vertex per distinct position, in order of first appearance (STL writes each
    triangle's corners anew; MuJoCo merges them the same way)."""
    unique, first, inverse = np.unique(vert, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return unique[order].astype(np.float64), rank[inverse.reshape(-1)][face]


def _read_msh(raw: bytes, path: Path):
    """MuJoCo's format: int32 counts of vertices, normals, texture coordinates and faces,
    then float32 vertices (3 each), normals (3), texcoords (2) and int32 faces (3)."""
    if len(raw) < 16:
        raise MeshFileError(f"{path}: MSH file without a header")
    nv, nn, nt, nf = (int(x) for x in np.frombuffer(raw[:16], dtype="<i4"))
    if nv < 4 or nf < 0 or nn < 0 or nt < 0 or (nn and nn != nv) or (nt and nt != nv):
        raise MeshFileError(f"{path}: invalid sizes in the MSH header ({nv} vertices, {nn} normals, {nt} texcoords, "
                            f"{nf} faces)")
    expected = 16 + 4 * (3 * nv + 3 * nn + 2 * nt + 3 * nf)
    if len(raw) != expected:
        raise MeshFileError(f"{path}: MSH file of {len(raw)} bytes, its header says {expected}")
    vert = np.frombuffer(raw, dtype="<f4", count=3 * nv, offset=16).reshape(nv, 3)
    start = 16 + 4 * (3 * nv + 3 * nn + 2 * nt)
    face = np.frombuffer(raw, dtype="<i4", count=3 * nf, offset=start).reshape(nf, 3)
    return vert.astype(np.float64), face.astype(np.int64)
