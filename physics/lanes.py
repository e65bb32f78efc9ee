"""How the flat per-env tables are laid out for the schedule that reads them.

Env-major (the CPU's): env w's entries are one run, entry e at ``w * stride + e``, so one
CPU thread stepping env w reads along cache lines. Interleaved (CUDA's): the copies of an
entry for LANES consecutive envs lie side by side, entry e of env w at
``(w // LANES) * stride * LANES + e * LANES + w % LANES``: a warp whose 32 lanes step 32
consecutive envs (physics/step/pipeline.py) and load the same entry together reads it for
all of them in one transaction instead of 32. The flat tables (layout.FLAT_TABLES) take this layout; their
host and torch copies are put back in env-major order, so what a user sees is the same.

``TAIGYM_LAYOUT=interleaved`` or ``env_major`` picks one on either device (the tests run
the interleaved layout on the CPU backend this way). The default is env-major everywhere:
on an H200 the fused one-thread-per-env kernel stepped Ant 14% slower interleaved (223k
against 260k physics steps/s at 16,384 envs, 21.8k against 24.3k at 1,024;
docs/probe/2026-11-27-h200-interleaved.jsonl). Its warps diverge through contacts and
solver iterations, so their lanes seldom load the same entry together, while each lane
loses its rows' locality; the layout is for kernels whose warps run in step (one stage
across env x element threads).
"""

from __future__ import annotations

import numpy as np

from . import settings as _settings

LANES = 32  # envs per interleaved block: a warp


def table_lanes() -> int:
    """LANES where this process's flat tables are interleaved, else 1. Read when a kernel
    is traced and when a World allocates."""
    return LANES if _settings.current().layout == "interleaved" else 1


def padded_envs(num_envs: int, lanes: int) -> int:
    """Envs a flat table holds room for: whole blocks of ``lanes``."""
    return -(-num_envs // lanes) * lanes


def env_major(flat, num_envs: int, lanes: int):
    """A flat table's entries (numpy array or torch tensor, 1-D) as (num_envs, stride) in
    env-major order: a view where ``lanes`` is 1, else a copy."""
    if lanes == 1:
        return flat.reshape(num_envs, -1)
    blocks = flat.reshape(padded_envs(num_envs, lanes) // lanes, -1, lanes)
    rows = blocks.permute(0, 2, 1) if hasattr(blocks, "permute") else blocks.transpose(0, 2, 1)
    return rows.reshape(-1, blocks.shape[1])[:num_envs]


def interleaved(rows: np.ndarray, lanes: int) -> np.ndarray:
    """(num_envs, stride) env-major rows as a flat table's entries (the inverse of env_major)."""
    n, stride = rows.shape
    padded = np.zeros((padded_envs(n, lanes), stride), rows.dtype)
    padded[:n] = rows
    return np.ascontiguousarray(padded.reshape(-1, lanes, stride).transpose(0, 2, 1)).ravel()
