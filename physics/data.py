"""The device tables of ``num_envs`` worlds: a Model's packed constants and each env's state.

The one place a World's tables are allocated, each as physics/layout.py declares it
(KERNEL_TABLES): by the name the kernels give its parameter, so a kernel's arguments are
looked up by the names in its signature rather than listed a second time.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .collision.driver import pack_collision_model
from .errors import WorldError
from .runtime.lanes import device_shape, padded_envs, table_lanes
from .runtime.backend import ti
from .runtime.taichi_adapter import host_view, upload

PRECISIONS = {"float32": (ti.f32, np.float32), "float64": (ti.f64, np.float64)}
MAX_ENTRIES = 2**31 - 1  # Taichi indexes an array's entries with 32-bit integers
DEFAULT_MAX_CONTACTS = 64


class Tables:
    """Every device table of a World, by name.

    ``model``: the packed Model (shared by the envs until a per-env parameter gives a table
    one row set per env); ``data``: the per-env tables (mjData's, the contacts, the
    constraint counts, the equality state); ``program``: the program's tables and
    registers; ``all_ids``/``some_ids``: the env ids a launch steps. ``packed`` keeps host
    copies of the model tables, which per-env parameters edit and upload; ``declared``, the
    declarations the tables follow (layout.KernelTable by name).
    """

    def __init__(self, model, num_envs: int, fp, dtype, pairs, max_contacts=None, staged: bool = False,
                 group: bool = False):
        self.num_envs, self.fp, self.npair = num_envs, fp, pairs.npair
        self.max_contacts, self.nefc_capacity = _capacities(model, pairs, max_contacts)
        # the staged schedule's narrow phase writes each env's pairs' contacts apart
        # (collision/driver.py, pair_contacts): a row per env and pair, as long as the most
        # contacts one pair makes; elsewhere one unused row
        self.pair_rows = (padded_envs(num_envs, table_lanes()) * pairs.npair if staged and pairs.npair else 1,
                          max(1, int(pairs.maxcon[: pairs.npair].max(initial=1))))
        self.declared = {t.name: t for t in L.kernel_tables()}
        self.packed = L.pack_model(model, dtype, self.nefc_capacity, pairs.npair)
        self.packed.update(pack_collision_model(model, pairs, dtype))
        self.model = self._model_tables()
        self.shapes = L.data_shapes(model, num_envs, self.nefc_capacity, self.max_contacts, pairs.npair,
                                    self.pair_rows, group)
        self.lanes = table_lanes()  # the per-env tables' layout (physics/runtime/lanes.py)
        _check_entries(self.shapes, num_envs)
        self.data = self._data_tables()
        self.program: dict = {}
        self.all_ids = upload(np.arange(num_envs, dtype=np.int32), ti.i32)
        self.some_ids = ti.ndarray(ti.i32, (num_envs,))  # a subset's ids, staged for a launch
        self.plan = ti.ndarray(ti.i32, (num_envs, L.NPLAN))  # each env's part in a staged launch
        # a whole staged launch's count-downs of its steps and of a step's forward() passes
        self.steps_left, self.stages_left = ti.ndarray(ti.i32, ()), ti.ndarray(ti.i32, ())
        self._arguments: dict = {}  # (names, every env) -> a kernel's array arguments
        self._views: dict = {}  # id(table) -> (table, numpy array over its memory or None)

    def _of(self, role: str) -> tuple:
        return tuple(t for t in self.declared.values() if t.role == role)

    def dtype_of(self, name: str):
        """The element type of declared table ``name``: int32 or the World's precision."""
        return ti.i32 if self.declared[name].dtype == L.INT else self.fp

    def _model_tables(self) -> dict:
        return {t.name: upload(self.device_layout(t.name, self.packed[t.name]), self.dtype_of(t.name))
                for t in self._of(L.MODEL)}

    def _data_tables(self) -> dict:
        out = {}
        for t in self._of(L.DATA):
            shape = self.shapes[t.name]
            if t.flat:  # 1-D, each env's rows one after another (layout.FLAT_TABLES)
                shape = (padded_envs(self.num_envs, self.lanes) * int(np.prod(shape[1:])),)
            elif len(shape) != t.ndim:
                raise ValueError(f"table {t.name} is declared of rank {t.ndim}, its shape is {shape}")
            out[t.name] = ti.ndarray(self.dtype_of(t.name), device_shape(shape, 1 if t.flat else self.lanes))
        return out

    def set_program(self, program) -> None:
        """The tables of ``program`` (physics/step/program.py), with fresh zeroed registers."""
        host = {"prog_i": program.ints, "prog_f": program.floats, "reg": np.zeros((self.num_envs, program.nregisters))}
        self.program = {t.name: upload(host[t.name], self.dtype_of(t.name)) for t in self._of(L.PROGRAM)}
        self._arguments.clear()

    def arguments(self, names: tuple, every_env: bool = True) -> tuple:
        """The tables called ``names`` (a kernel's array parameters), ``env_ids`` being every
        env's ids or the staged subset's. The same tuple object each call until a table is
        replaced: a kept launch given it skips its check of the arrays."""
        key = (names, every_env)
        if key not in self._arguments:
            by_name = {**self.model, **self.data, **self.program,
                       "env_ids": self.all_ids if every_env else self.some_ids, "plan": self.plan,
                       "steps_left": self.steps_left, "stages_left": self.stages_left}
            self._arguments[key] = tuple(by_name[name] for name in names)
        return self._arguments[key]

    # --- per-env model tables ----------------------------------------------------------------
    def model_rows(self, table: str) -> np.ndarray:
        """The host values of a model table with one row set per env (the shared one
        repeated while the table has no per-env rows)."""
        host = self.packed.get(table + "/per_env")
        return np.repeat(self.packed[table][:1], self.num_envs, axis=0) if host is None else host

    def per_env(self, table: str) -> np.ndarray:
        """The host copy of a model table with one row set per env, made so on first use: the
        device table is then allocated anew with a row set per env."""
        key = table + "/per_env"
        if key not in self.packed:
            self.packed[key] = np.repeat(self.packed[table][:1], self.num_envs, axis=0).copy()
            self.model[table] = upload(self.device_layout(table, self.packed[key]), self.fp)
            self._arguments.clear()
        return self.packed[key]

    def upload_per_env(self, table: str) -> None:
        """Copy the per-env host values of a model table (per_env) to the device."""
        self.model[table].from_numpy(self.device_layout(table, self.packed[table + "/per_env"]))

    def device_layout(self, name: str, table: np.ndarray) -> np.ndarray:
        """A packed model table as the kernels index it: raveled where declared flat
        (layout.FLAT_MODEL_TABLES)."""
        return np.ascontiguousarray(table).ravel() if self.declared[name].flat else table

    # --- host access ---------------------------------------------------------------------------
    def env_rows(self, name: str) -> bool:
        """Whether data table ``name`` holds (num_envs, ..., n) rows, interleaved by the
        lanes layout (layout.ENV_TABLES), rather than flat rows (layout.FLAT_TABLES)."""
        return not self.declared[name].flat

    def view_of(self, table):
        """A numpy array over ``table``'s memory on a CPU World (made once per table), or None."""
        key = id(table)
        hit = self._views.get(key)
        if hit is None or hit[0] is not table:
            hit = (table, host_view(table))
            self._views[key] = hit
        return hit[1]


def _capacities(model, pairs, max_contacts) -> tuple:
    """(contacts an env holds, constraint rows an env holds): by default every contact the
    candidate pairs can make, capped at DEFAULT_MAX_CONTACTS, and the rows they all need."""
    npair = pairs.npair
    possible = int(pairs.maxcon[:npair].sum())
    contacts = max(1, min(possible, DEFAULT_MAX_CONTACTS) if max_contacts is None else int(max_contacts))
    rows_per_contact = max([1] + [2 * (int(c) - 1) for c in pairs.condim[:npair]])
    rows = (L.equality_rows(model) + L.friction_rows(model) + L.limit_rows(model)
            + (contacts * rows_per_contact if npair else 0))
    return contacts, rows


def _check_entries(shapes: dict, num_envs: int) -> None:
    """Refuse a batch whose largest per-env table would hold more entries than a 32-bit
    index reaches: the kernels would read and write outside it (on CUDA an illegal address
    that ends the process, seen with 65,536 humanoids)."""
    name, shape = max(shapes.items(), key=lambda item: int(np.prod(item[1], dtype=np.int64)))
    entries = int(np.prod(shape, dtype=np.int64))
    if entries > MAX_ENTRIES:
        per_env = entries // num_envs
        raise WorldError(
            f"num_envs={num_envs:,} is too many for one World of this model: its table {name} would hold "
            f"{entries:,} entries ({' x '.join(f'{d:,}' for d in shape)}), and Taichi indexes an array with 32-bit "
            f"integers; at most {MAX_ENTRIES // per_env:,} envs per World (use several Worlds, or fewer constraint "
            f"rows per env through max_contacts)")
