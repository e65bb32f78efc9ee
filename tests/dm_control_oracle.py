"""dm_control's Control Suite as the oracle of taigym's Control Suite tasks.

dm_control 1.0.50 names every mjModel and mjData array in a table written for MuJoCo 3;
MuJoCo 4 dropped a few of them (``flex_vertedge``), and dm_control's named indexing fails on
the first. ``suite()`` drops from that table the arrays this MuJoCo lacks, which dm_control's
tasks never read, and returns ``dm_control.suite``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from taigym.tasks.loader import TASK_DIR

SUITE_DIR = TASK_DIR / "control_suite"


@functools.lru_cache(maxsize=None)
def suite():
    mujoco = pytest.importorskip("mujoco")
    dm_suite = pytest.importorskip("dm_control.suite")
    from dm_control.mujoco.wrapper.mjbindings import sizes

    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    for struct, instance in (("mjmodel", model), ("mjdata", mujoco.MjData(model))):
        table = sizes.array_sizes[struct]
        for name in [name for name in table if not hasattr(instance, name)]:
            del table[name]
    return dm_suite


def shipped_tasks() -> list[str]:
    """The ids of the Control Suite's task files, ``TaiGym/<domain>-<task>-v0``."""
    import yaml

    return sorted(yaml.safe_load(p.read_text())["id"] for p in SUITE_DIR.glob("[!_]*.yaml"))


def domain_and_task(task_id: str) -> tuple[str, str]:
    domain, task = task_id.split("/")[1].rsplit("-v", 1)[0].split("-")
    return domain, task


def flat(observation) -> np.ndarray:
    """dm_control's observation dict flattened in its key order."""
    return np.concatenate([np.atleast_1d(v).ravel() for v in observation.values()])
