"""dm_control's Control Suite as the oracle of taigym's Control Suite tasks: ``suite()`` is
dm_control.suite fitted to the installed MuJoCo (taigym/scripts/dm_control_env.py)."""

from __future__ import annotations

import pytest
from taigym.scripts.dm_control_env import flat  # noqa: F401 (the tests' flattening is the peer env's)
from taigym.tasks.loader import TASK_DIR

SUITE_DIR = TASK_DIR / "control_suite"


def suite():
    pytest.importorskip("mujoco")
    pytest.importorskip("dm_control.suite")
    from taigym.scripts.dm_control_env import suite as fitted

    return fitted()


def shipped_tasks() -> list[str]:
    """The ids of the Control Suite's task files, ``TaiGym/<domain>-<task>-v0``."""
    import yaml

    return sorted(yaml.safe_load(p.read_text())["id"] for p in SUITE_DIR.glob("[!_]*.yaml"))


def domain_and_task(task_id: str) -> tuple[str, str]:
    domain, task = task_id.split("/")[1].rsplit("-v", 1)[0].split("-")
    return domain, task
