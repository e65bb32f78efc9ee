"""The quantities World.get() names, and where each lives in the per-env tables.

Most are columns of a data table (layout.DATA_VIEWS) or a table's leading columns (the
state and its inputs); a few are assembled on the host: the dense mass matrix, the
constraint rows cut at each env's count, and the contact table's fields.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .collision.narrowphase import CON_DIM, CON_EFC_ADDRESS, CON_EXCLUDE, CON_GEOM1, CON_GEOM2, CONTACT_F
from .errors import WorldError

# quantities that are a data table's leading columns: table, and the model size naming them
DIRECT = {"qpos": "qpos", "joint_q": "qpos", "qvel": "qvel", "joint_qd": "qvel", "qacc": "qacc", "ctrl": "ctrl",
          "sensordata": "sensordata",
          "qfrc_applied": "qfrc_applied"}
_DIRECT_SIZE = {"qpos": "nq", "joint_q": "nq", "qvel": "nv", "joint_qd": "nv", "qacc": "nv", "ctrl": "nu",
                "sensordata": "nsensordata",
                "qfrc_applied": "nv"}
# width of each get() quantity when it is a matrix
_MATRICES = {"xmat": (3, 3), "ximat": (3, 3)}
# per-env counts of the last constraint solve: rows, rows that did not fit, iterations
EFC_COUNTS = {"nefc": L.EFC_N, "efc_overflow": L.EFC_OVERFLOW, "solver_niter": L.EFC_NITER}


# quantities that are a block of a data table: table, rows (a model size), first column,
# columns (a model size)
BLOCKS = {"ten_J": ("ten_d", "ntendon", L.TEN_D.tail.start, "nv")}


def is_table_view(name: str) -> bool:
    """Whether ``name`` is a slice of one data table (so a device copy of it serves)."""
    return name in DIRECT or name in L.DATA_VIEWS or name in BLOCKS


def known() -> list:
    return sorted([*DIRECT, *BLOCKS, "qM", "time", "body_q", "geom_xpos", "eq_active", *EFC_COUNTS, *L.DATA_VIEWS,
                   *L.MOCAP_COLUMNS, *(f"efc_{k}" for k in L.EFC_F)])


def table_view(name: str, table_of, model, num_envs: int):
    """The slice of a table (numpy or torch, from ``table_of(table name)``) that holds
    quantity ``name``; a view into that table."""
    if name in DIRECT:
        return table_of(DIRECT[name])[:, : getattr(model, _DIRECT_SIZE[name])]
    if name in BLOCKS:
        table, rows, start, cols = BLOCKS[name]
        return table_of(table)[:, : getattr(model, rows), start : start + getattr(model, cols)]
    if name not in L.DATA_VIEWS:
        raise WorldError(f"unknown quantity {name!r}; known: {known()}")
    table, start, width = L.DATA_VIEWS[name]
    rows = {"body_d": model.nbody, "jnt_d": model.njnt, "dof_d": model.nv, "act_d": model.nu,
            "ten_d": model.ntendon}[table]
    out = table_of(table)[:, :rows, start : start + width]
    if width == 1:
        out = out[..., 0]
    elif name in _MATRICES:
        out = out.reshape(num_envs, rows, *_MATRICES[name])
    return out


def geom_xpos(model, xpos: np.ndarray, xmat: np.ndarray, geom_pos: np.ndarray) -> np.ndarray:
    """mjData's geom_xpos (num_envs, ngeom, 3): xpos + xmat geom_pos of each geom's body,
    ``geom_pos`` (num_envs, ngeom, 3) being each env's."""
    body = np.asarray(model.geom_bodyid, dtype=np.int64)
    return xpos[:, body] + np.einsum("ngij,ngj->ngi", xmat[:, body], geom_pos)


def mocap_bodies(model) -> np.ndarray:
    """The mocap bodies, in mocap id order (MuJoCo's body_mocapid inverted)."""
    bodies = np.flatnonzero(model.body_mocapid >= 0)
    return bodies[np.argsort(model.body_mocapid[bodies])].astype(np.int32)


def mocap_rows(name: str, body_d: np.ndarray, model) -> np.ndarray:
    """mjData's mocap_pos (num_envs, nmocap, 3) or mocap_quat (num_envs, nmocap, 4), a copy,
    from the mocap bodies' rows of the body table."""
    start, width = L.BODY_D[name]
    return body_d[:, mocap_bodies(model), start : start + width].copy()


def efc_rows(name: str, efc_f: np.ndarray, efc_n: np.ndarray, capacity: int) -> np.ndarray:
    """Constraint row quantity ``name`` (efc_force...), (num_envs, capacity): rows past each
    env's nefc are stale, and zeroed here."""
    out = efc_f[:, :capacity, L.EFC_F[name[4:]][0]].copy()
    out[np.arange(capacity)[None, :] >= efc_n[:, :1]] = 0
    return out


def dense_mass_matrix(model, sparse: np.ndarray, num_envs: int) -> np.ndarray:
    """(num_envs, nv, nv) from the sparse mass matrix table qM."""
    cols = L.sparse_columns(model)[: model.nM]
    rows = np.repeat(np.arange(model.nv), np.diff(np.append(model.dof_Madr, model.nM)))
    sparse = sparse[:, : model.nM]
    dense = np.zeros((num_envs, model.nv, model.nv), dtype=sparse.dtype)
    dense[:, rows, cols] = sparse
    dense[:, cols, rows] = sparse
    return dense


def contact_fields(con_f: np.ndarray, con_i: np.ndarray, con_n: np.ndarray) -> dict:
    """World.contacts() from the contact tables: rows at or past each env's count zeroed."""
    num_envs, max_contacts = con_f.shape[:2]
    f, i = con_f.copy(), con_i.copy()
    stale = np.arange(max_contacts)[None, :] >= con_n[:, :1]
    f[stale] = 0
    i[stale] = 0
    out = {name: f[..., a : a + w].copy() if w > 1 else f[..., a].copy() for name, (a, w) in CONTACT_F.items()}
    out["frame"] = out["frame"].reshape(num_envs, max_contacts, 3, 3)
    out.update(geom=i[..., [CON_GEOM1, CON_GEOM2]], dim=i[..., CON_DIM].copy(),
               exclude=i[..., CON_EXCLUDE].copy(),
               efc_address=i[..., CON_EFC_ADDRESS].copy(), ncon=con_n[:, 0].copy(), overflow=con_n[:, 1].copy())
    return out
