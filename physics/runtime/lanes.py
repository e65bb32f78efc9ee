"""How the per-env tables are laid out for the schedule that reads them.

Env-major (the CPU's): env w's entries are one run, entry e at ``w * stride + e``, so one
CPU thread stepping env w reads along cache lines. Interleaved (for warps): the copies of an
entry for LANES consecutive envs lie side by side, entry e of env w at
``(w // LANES) * stride * LANES + e * LANES + w % LANES``: a warp whose 32 lanes step 32
consecutive envs (physics/step/pipeline.py) and load the same entry together reads it for
all of them in one transaction instead of 32. Every per-env table takes this layout:

- the flat ones (layout.FLAT_TABLES: bodies, joints, dofs, the mass matrix and its
  factor), through their accessors and ``env_start``/``entry`` (physics/runtime/ti_math.py);
- the others (layout.ENV_TABLES: qpos, qvel, qacc, controls, the constraint rows, the
  contacts, the counts), (num_envs, ..., n) tables kept (num_envs / LANES, ..., n * LANES)
  long, so that a kernel indexes them with as many indices either way:
  ``qpos[env_index(w, i)]``, and their accessors the same.

Their host and torch copies are put back in env-major order (``env_rows``), so what a
user sees is the same.

Each device takes the layout its default schedule steps fastest (DEFAULT_LAYOUT):

- CUDA, interleaved: on an H200 the staged schedule stepped Ant 1.20x, 1.26x, 1.82x and
  2.81x as fast interleaved as env-major at 1,024, 4,096, 16,384 and 65,536 envs (153k
  against 127k physics steps/s up to 2.50M against 888k;
  results/probe/2026-11-30-h200/probe-run2.jsonl). Even the constraint solve, one thread
  per env, gains: a warp's lanes load their envs' copies of a row together while they
  iterate in step, and at large batches the env-major loads used one 32-byte sector of
  each for a 4-byte entry.
- CPU, env-major: one thread walks an env's tables along cache lines.

The fused kernel alone ran the other way on CUDA: 14% slower interleaved (223k against
260k at 16,384 envs; results/probe/2026-11-27-h200-interleaved.jsonl), its warps diverging
through the whole step. ``TAIGYM_LAYOUT=interleaved`` or ``env_major`` picks one on either
device (the tests run the interleaved layout on the CPU backend this way).
"""

from __future__ import annotations

import numpy as np

from .. import settings as _settings
from . import backend as _backend
from .taichi_adapter import traced_helper

LANES = 32  # envs per interleaved block: a warp


DEFAULT_LAYOUT = {"cpu": "env_major", "cuda": "interleaved"}  # by the device the runtime runs on


def table_layout() -> str:
    """This process's layout of the per-env tables: ``TAIGYM_LAYOUT``, else its device's
    (DEFAULT_LAYOUT; the CPU's until the runtime starts)."""
    return _settings.current().layout or DEFAULT_LAYOUT[_backend.current_device() or "cpu"]


def table_lanes() -> int:
    """LANES where this process's per-env tables are interleaved, else 1. Read when a kernel
    is traced and when a World allocates."""
    return LANES if table_layout() == "interleaved" else 1


@traced_helper
def env_index(w, *entry) -> tuple:
    """The index of ``entry`` of env w in a table of layout.ENV_TABLES: Python that runs
    while Taichi traces a kernel (``qvel[env_index(w, d)]``), to the index this process's
    layout reads. Env-major, ``(w, *entry)``, the very code a kernel had before the layout
    existed; interleaved, the last axis holds LANES envs' copies of each entry side by side."""
    return lane_index(table_lanes(), w, *entry)


@traced_helper
def env_width(table):
    """Entries along the last axis of one env's rows in a table of layout.ENV_TABLES, as
    traced: its last extent, of which the interleaved layout holds LANES envs' copies."""
    last = table.shape[len(table.shape) - 1]
    lanes = table_lanes()
    return last if lanes == 1 else last // lanes


@traced_helper
def env_count(table):
    """The envs a table of layout.ENV_TABLES has rows for, as traced: num_envs, or whole
    blocks of LANES interleaved."""
    return table.shape[0] * table_lanes()


@traced_helper
def lane_index(lanes: int, w, *entry) -> tuple:
    """env_index for a table laid out for ``lanes`` (1: env-major)."""
    if lanes == 1:
        return (w, *entry)
    *head, last = entry
    return (w // lanes, *head, last * lanes + w % lanes)


def device_shape(shape: tuple, lanes: int) -> tuple:
    """The shape a (num_envs, ..., n) table of layout.ENV_TABLES is allocated with."""
    if lanes == 1:
        return tuple(shape)
    return (padded_envs(shape[0], lanes) // lanes, *shape[1:-1], shape[-1] * lanes)


def env_rows(table, num_envs: int, lanes: int):
    """A table of layout.ENV_TABLES (numpy array or torch tensor, as allocated) as
    (num_envs, ..., n) in env-major order: itself where ``lanes`` is 1, else a copy."""
    if lanes == 1:
        return table
    split = table.reshape(*table.shape[:-1], table.shape[-1] // lanes, lanes)
    moved = split.movedim(-1, 1) if hasattr(split, "movedim") else np.moveaxis(split, -1, 1)
    return moved.reshape(-1, *moved.shape[2:])[:num_envs]


def device_rows(rows: np.ndarray, lanes: int) -> np.ndarray:
    """(num_envs, ..., n) env-major rows as a table of layout.ENV_TABLES holds them (the
    inverse of env_rows)."""
    if lanes == 1:
        return rows
    padded = np.zeros((padded_envs(rows.shape[0], lanes), *rows.shape[1:]), rows.dtype)
    padded[: rows.shape[0]] = rows
    blocks = padded.reshape(-1, lanes, *rows.shape[1:])
    return np.ascontiguousarray(np.moveaxis(blocks, 1, -1)).reshape(device_shape(rows.shape, lanes))


def padded_envs(num_envs: int, lanes: int) -> int:
    """Envs a flat table holds room for: whole blocks of ``lanes``."""
    return -(-num_envs // lanes) * lanes


def env_major(flat, num_envs: int, lanes: int):
    """A flat table's entries (numpy array or torch tensor, 1-D) as (num_envs, stride) in
    env-major order: a view where ``lanes`` is 1, else a copy. A flat table is one row per
    block of ``lanes`` envs, each entry's copies side by side, as env_rows reads them."""
    if lanes == 1:
        return flat.reshape(num_envs, -1)
    return env_rows(flat.reshape(padded_envs(num_envs, lanes) // lanes, -1), num_envs, lanes)


def interleaved(rows: np.ndarray, lanes: int) -> np.ndarray:
    """(num_envs, stride) env-major rows as a flat table's entries (the inverse of env_major)."""
    return device_rows(rows, lanes).ravel()
