"""The engine imports Taichi in one place (physics/runtime/taichi_import.py), runs on taichi 1.7.4 and on
the quadrants fork, and touches Taichi's internals only in physics/runtime/taichi_adapter/."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import imported_modules
from taigym.physics.runtime.backend import TAICHIS

REPO = Path(__file__).resolve().parents[1]
SOURCES = [p for folder in ("physics", "envs", "tasks", "scripts", "taigym") for p in (REPO / folder).rglob("*.py")]


def test_only_one_module_imports_taichi():
    importers = sorted(str(p.relative_to(REPO)) for p in SOURCES if imported_modules(p) & set(TAICHIS))
    assert importers == []  # physics/runtime/taichi_import.py imports it by name, with importlib
    assert "import_module(name)" in (REPO / "physics" / "runtime" / "taichi_import.py").read_text()


def test_only_the_adapter_reaches_into_taichi_internals():
    # ".lang." is where Taichi keeps what it does not export; current_cfg is read in taichi_import.py
    users = sorted(str(p.relative_to(REPO)) for p in SOURCES if ".lang." in p.read_text() or ".lang " in p.read_text())
    assert all(u == "physics/runtime/taichi_import.py" or u.startswith("physics/runtime/taichi_adapter/") for u in users), users


def test_an_unknown_choice_is_refused_by_name():
    env = dict(os.environ, TAIGYM_TAICHI="taichi2")
    proc = subprocess.run([sys.executable, "-c", "import taigym.physics.world"], env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode != 0
    assert "TAIGYM_TAICHI must be 'taichi' or 'quadrants', got 'taichi2'" in proc.stderr


_STEP = """
import json, sys
import numpy as np
from taigym import physics
from taigym.physics.runtime.taichi_adapter import launch as _launch
from taigym.physics.runtime.backend import NAME
model = physics.load_model(sys.argv[1])
world = physics.World(model, num_envs=3, device="cpu", precision="float64")
rng = np.random.default_rng(0)
qpos = np.tile(model.qpos0, (3, 1)) + rng.uniform(-0.1, 0.1, (3, model.nq))
world.set_state(qpos=qpos, qvel=rng.uniform(-0.5, 0.5, (3, model.nv)))
world.set_ctrl(rng.uniform(-0.5, 0.5, (3, model.nu)))
for _ in range(20):
    world.step(n=1)   # one launch per call: the second and later reuse the launch setup where they can
print(json.dumps({"taichi": NAME, "reused": _launch.fast_path_available(), "qpos": world.get("qpos").tolist()}))
"""


def _step_with(name: str) -> dict:
    from conftest import gym_asset

    env = dict(os.environ, TAIGYM_TAICHI=name)
    proc = subprocess.run([sys.executable, "-c", _STEP, gym_asset("inverted_double_pendulum")], env=env,
                          capture_output=True, text=True, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_installed_taichi_steps_alike():
    installed = [name for name in TAICHIS if importlib.util.find_spec(name) is not None]
    if len(installed) < 2:
        pytest.skip(f"only {installed} installed; pip install -e '.[quadrants]' adds the fork")
    runs = {name: _step_with(name) for name in installed}
    assert {name: run["taichi"] for name, run in runs.items()} == {name: name for name in installed}
    base = np.array(runs[installed[0]]["qpos"])
    for name in installed[1:]:
        # the same kernels compiled by two LLVMs: contractions and ordering may differ in the last bits
        np.testing.assert_allclose(np.array(runs[name]["qpos"]), base, rtol=0, atol=1e-12, err_msg=name)
