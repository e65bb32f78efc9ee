"""Writing rows of a World's per-env data tables, the cheapest way each kind of input allows:
numpy rows land in place in a CPU World's memory; every env's numpy rows otherwise go
through a kept staging buffer and launch (a control every step); a subset's rows and torch
tensors on the World's device go by a kernel on the device.

The caller says which table a write changes (physics/readback.py), before writing.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .runtime import device_io
from .runtime.taichi_adapter import ReusedLaunch
from .torch_bridge import ids_beside, is_tensor


class TableWriter:
    """Writes into the data tables of ``tables`` (physics/data.py) in the World's ``dtype``."""

    def __init__(self, tables, dtype):
        self._tables = tables
        self._dtype = dtype
        self._staged: dict = {}  # (table, width) -> (staging buffer, env ids, its launch)

    def rows(self, key: str, rows, env_ids=None) -> None:
        """table[env_ids, :width] = rows, of all envs or of ``env_ids``."""
        table = self._tables.data[key]
        lanes = self._lanes(key)
        view = None if is_tensor(rows) or lanes > 1 else self._tables.view_of(table)
        if view is not None:  # a CPU World's env-major memory, written in place
            ids = slice(None) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
            view[ids, : rows.shape[1]] = rows
            return
        if env_ids is None and not is_tensor(rows):
            self._all_rows(key, rows)
            return
        num_envs = self._tables.num_envs
        ids = np.arange(num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        if not is_tensor(rows):
            rows = np.ascontiguousarray(rows, dtype=self._dtype)
        device_io.write_rows(table, rows, ids_beside(rows, ids), lanes)

    def _lanes(self, key: str) -> int:
        # the layout of data table `key` (physics/runtime/lanes.py)
        return self._tables.lanes if self._tables.env_rows(key) else 1

    def _all_rows(self, key: str, rows) -> None:
        # every env's rows (a control every step) go through a staging buffer kept per
        # quantity, so that the write's launch is set up once
        stage = self._staged.get((key, rows.shape[1]))
        if stage is None:
            num_envs = self._tables.num_envs
            stage = (np.empty((num_envs, rows.shape[1]), self._dtype), np.arange(num_envs, dtype=np.int32),
                     ReusedLaunch(device_io.rows_kernel(self._lanes(key))))
            self._staged[(key, rows.shape[1])] = stage
        buffer, ids, launch = stage
        buffer[...] = rows
        if buffer.size:
            launch(self._tables.data[key], buffer, ids)

    def dof_column(self, name: str, rows, ids) -> None:
        """dof_d[ids, :nv, column name] = rows, by a small kernel: no whole-table round trip."""
        from .smooth.drives import make_dof_column_kernel

        tables = self._tables
        dof_d, dofs = tables.data["dof_d"], tables.shapes["dof_d"][1]
        column = L.DOF_D[name][0]
        if not is_tensor(rows):  # a tensor is on the World's device (torch_bridge): ids go there too
            rows = np.ascontiguousarray(rows, dtype=self._dtype)
            view = tables.view_of(dof_d) if tables.lanes == 1 else None
            if view is not None:  # a CPU World's env-major table, written in place
                ids = np.asarray(ids, dtype=np.int32)
                table = view.reshape(tables.num_envs, dofs, L.NDOF_D)
                table[ids[:, None], np.arange(rows.shape[1])[None, :], column] = rows
                return
        make_dof_column_kernel(tables.fp)(dof_d, rows, ids_beside(rows, ids), "dof_" + name, dofs * L.NDOF_D)

    def mocap(self, name: str, values, bodies: np.ndarray, ids) -> None:
        """body_d[ids, bodies, column name] = values (n, nmocap, width): the mocap bodies'
        poses (mjData's mocap_pos, mocap_quat), kept in their rows of the body table."""
        from .smooth.kinematics import make_mocap_kernel

        tables = self._tables
        body_d, nbody = tables.data["body_d"], tables.shapes["body_d"][1]
        start, width = L.BODY_D[name]
        if not is_tensor(values):  # a tensor is on the World's device (torch_bridge): ids go there too
            values = np.ascontiguousarray(values, dtype=self._dtype)
            view = tables.view_of(body_d) if tables.lanes == 1 else None
            if view is not None:  # a CPU World's env-major table, written in place
                table = view.reshape(tables.num_envs, nbody, L.NBODY_D)
                table[np.asarray(ids)[:, None], bodies[None, :], start : start + width] = values
                return
        make_mocap_kernel(tables.fp)(body_d, values, ids_beside(values, bodies), ids_beside(values, ids),
                                     f"body_{name}_at", nbody * L.NBODY_D)
