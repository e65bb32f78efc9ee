"""Kernels compiled with Taichi's whole-kernel optimizations (CUDA's default; on the CPU a
measurement tool's init setting, physics.runtime.backend.set_init_overrides) compute what
the CPU's default build computes.

The setting is read when Taichi starts, once per process, so the optimized run is a
subprocess; it steps gymnasium's ant with contacts and limits from states MuJoCo settled,
and this process repeats the same steps with its default build and checks both, and
MuJoCo's forward pass at those states.
"""

import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest
from conftest import gym_asset
from taigym.physics.runtime import backend
from taigym.physics.runtime.backend import set_init_overrides

from taigym import physics

CHILD = """
import sys
import numpy as np
from taigym import physics

from taigym.physics.runtime.backend import optimized, set_init_overrides

set_init_overrides(advanced_optimization=True, cfg_optimization=False)
states = np.load(sys.argv[1])
world = physics.World(physics.load_model(sys.argv[2]), num_envs=len(states["qpos"]), precision="float64")
world.set_state(qpos=states["qpos"], qvel=states["qvel"])
world.set_ctrl(states["ctrl"])
world.forward()
out = {name: world.get(name) for name in ("qM", "qfrc_bias", "xpos", "qacc")}
world.step(n=25)
out.update(qpos_after=world.get("qpos"), qvel_after=world.get("qvel"), nefc_after=world.get("nefc"))
np.savez(sys.argv[3], optimized=optimized(), **out)
"""


def _settled_ant_states(num_envs: int):
    mjm = mujoco.MjModel.from_xml_path(gym_asset("ant"))
    data = mujoco.MjData(mjm)
    rng = np.random.default_rng(3)
    qpos, qvel, ctrl = [], [], []
    for _ in range(num_envs):
        mujoco.mj_resetData(mjm, data)
        data.qpos[:] = mjm.qpos0 + rng.normal(0, 0.05, mjm.nq)
        data.ctrl[:] = rng.uniform(-1, 1, mjm.nu)
        for _ in range(60):  # 0.6 s: on its feet, with contacts
            mujoco.mj_step(mjm, data)
        qpos.append(data.qpos.copy())
        qvel.append(data.qvel.copy())
        ctrl.append(data.ctrl.copy())
    return mjm, np.array(qpos), np.array(qvel), np.array(ctrl)


@pytest.mark.slow
def test_optimized_build_matches_the_default_build_and_mujoco(tmp_path, device):
    if device != "cpu":
        pytest.skip("the optimized build is compared on the CPU backend")
    mjm, qpos, qvel, ctrl = _settled_ant_states(4)
    np.savez(tmp_path / "states.npz", qpos=qpos, qvel=qvel, ctrl=ctrl)
    # ant's own kernel (physics/features.py), as a user builds it: the full one takes Taichi's
    # optimizing passes several times as long
    env = {k: v for k, v in os.environ.items() if k != "TAIGYM_KERNELS"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "states.npz"), gym_asset("ant"),
                           str(tmp_path / "out.npz")], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    opt = np.load(tmp_path / "out.npz")
    assert bool(opt["optimized"])

    world = physics.World(physics.load_model(gym_asset("ant")), num_envs=len(qpos), precision="float64")
    world.set_state(qpos=qpos, qvel=qvel)
    world.set_ctrl(ctrl)
    world.forward()
    for name in ("qM", "qfrc_bias", "xpos", "qacc"):
        np.testing.assert_allclose(opt[name], world.get(name), rtol=1e-12, atol=1e-12, err_msg=name)
    world.step(n=25)
    assert np.all(opt["nefc_after"] > 0)
    np.testing.assert_array_equal(opt["nefc_after"], world.get("nefc"))
    # 25 steps with contacts amplify round-off differences; they stay far below physics
    np.testing.assert_allclose(opt["qpos_after"], world.get("qpos"), rtol=0, atol=1e-9)
    np.testing.assert_allclose(opt["qvel_after"], world.get("qvel"), rtol=0, atol=1e-7)

    # and the optimized forward pass is MuJoCo's at the settled states
    data = mujoco.MjData(mjm)
    for e in range(len(qpos)):
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[e], qvel[e], ctrl[e]
        mujoco.mj_forward(mjm, data)
        dense = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, data, dense)
        np.testing.assert_allclose(opt["qM"][e], dense, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(opt["qfrc_bias"][e], data.qfrc_bias, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(opt["xpos"][e], data.xpos, rtol=1e-8, atol=1e-10)


def test_init_overrides_are_refused_once_the_runtime_started(device):
    backend.ensure_runtime(device)
    set_init_overrides()  # the settings it started with: nothing to change
    with pytest.raises(physics.WorldError, match="before the first World"):
        set_init_overrides(advanced_optimization=True)
    assert backend.optimized() is (device == "cuda")


def test_unknown_init_overrides_are_named(monkeypatch):
    monkeypatch.setattr(backend, "_arch", None)
    with pytest.raises(physics.WorldError, match="no_such_option"):
        set_init_overrides(no_such_option=1)
