"""Host and torch copies of a World's per-env tables, each made once until its table changes:
an env step's terms read several quantities of the same table.

What makes a copy stale, and is declared by the World where it happens:

- a step launch writes every per-env table (``launched``);
- a write of rows or columns changes its own table (``changed``);
- the post kernel (cacc, cfrc_ext, cfrc_int; ``post_ran``) changes ``POST_WRITES``.

The post kernel's results are current until one of its inputs (the array parameters of its
signature, physics/step/pipeline.py) changes or a launch runs; a launch whose program
computed every env's contact wrenches leaves them current (World._launch).
"""

from __future__ import annotations

import numpy as np

from .runtime.lanes import env_major, env_rows
from .runtime import device_io
from .runtime.taichi_adapter import ReusedLaunch

POST_WRITES = ("body_d",)  # the tables the post kernel writes


class Copies:
    """Copies of the data tables of ``tables`` (physics/data.py) on the host and, as torch
    tensors, on the World's device (``bridge``, physics/torch_bridge.py); ``post_inputs``:
    the tables the post kernel reads."""

    def __init__(self, tables, bridge, post_inputs: tuple):
        self._tables = tables
        self._bridge = bridge
        self._post_inputs = frozenset(post_inputs)
        self._host: dict = {}
        self._tensor: dict = {}
        self._readers: dict = {}  # table -> (host buffer, its copy launch), made on first read
        self.post_current = False  # whether cacc, cfrc_ext and cfrc_int hold the last forward's

    # --- what went stale --------------------------------------------------------------------
    def changed(self, *names: str) -> None:
        """Tables ``names`` (data or model) were written on the device."""
        for name in names:
            self._host.pop(name, None)
            self._tensor.pop(name, None)
        if self._post_inputs.intersection(names):
            self.post_current = False

    def launched(self) -> None:
        """A step launch is about to write every per-env table."""
        self._host.clear()
        self._tensor.clear()
        self.post_current = False

    def post_ran(self) -> None:
        """The post kernel wrote its results from the current state."""
        self.changed(*POST_WRITES)
        self.post_current = True

    # --- copies ------------------------------------------------------------------------------
    def host(self, name: str) -> np.ndarray:
        """A host copy of a per-env table, shaped as the World views it."""
        if name not in self._host:
            table = self._tables.data[name]
            view = self._tables.view_of(table)
            if view is None:  # not the table's own memory: a copy, into a buffer kept per table
                view = self._copy(name, table)
            view = self._env_major(name, view)  # whatever the device's layout
            self._host[name] = view.reshape(self._tables.shapes.get(name, view.shape))
        return self._host[name]

    def _env_major(self, name: str, table):
        # a data table as allocated (physics/data.py, as declared) in env-major order (physics/runtime/lanes.py)
        if self._tables.env_rows(name):
            return env_rows(table, self._tables.num_envs, self._tables.lanes)
        return env_major(table, self._tables.num_envs, self._tables.lanes)

    def _copy(self, name: str, table) -> np.ndarray:
        buffer, copy = self._readers.get(name, (None, None))
        if buffer is None or buffer.shape != tuple(table.shape):
            buffer = np.empty(tuple(table.shape), dtype=device_io.numpy_dtype(table))
            copy = ReusedLaunch(device_io.copy_kernel)
            self._readers[name] = buffer, copy
        copy(table, buffer)
        return buffer

    def tensor(self, name: str):
        """A torch copy of a per-env table on the World's device, shaped as ``host``."""
        if name not in self._tensor:
            if not self._bridge.device_tensors:  # host memory is the device's: share the host copy
                import torch

                self._tensor[name] = torch.from_numpy(self.host(name))
            else:
                tensor = device_io.table_to_tensor(self._tables.data[name], self._bridge.device)
                tensor = self._env_major(name, tensor)
                self._tensor[name] = tensor.reshape(self._tables.shapes.get(name, tensor.shape))
        return self._tensor[name]
