"""Robots from a public package as tasks: mjlab's Unitree Go1 (quadruped), Unitree G1
(humanoid) and I2RT YAM (arm), with their meshes and IMUs. Each, standing on the scene file
its task adds, agrees with MuJoCo; each task file passes Gymnasium's checks and steps 1,024
envs in one World; a missing asset package is named with its install line.

mjlab is installed without its dependencies (``pip install --no-deps mjlab==1.6.0``, as
scripts/test.sh does): only its robot files are used, found on disk without importing it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gymnasium as gym
import mujoco  # noqa: F401  (a dev dependency: the oracle)
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from taigym.envs.vector import TaiGymVectorEnv
from taigym.scripts.cli import main as cli
from taigym.tasks import ConfigError, Task
from taigym.tasks.loader import CONFIG_DIR

from taigym import envs  # noqa: F401 - registers the ids

MJLAB = importlib.util.find_spec("mjlab")
needs_mjlab = pytest.mark.skipif(MJLAB is None, reason="mjlab is not installed: pip install --no-deps mjlab==1.6.0")
ROBOTS = Path(MJLAB.submodule_search_locations[0]) / "asset_zoo" / "robots" if MJLAB else None

# task id -> (robot file under mjlab's asset_zoo/robots, the scene its task adds, observation size)
TASKS = {
    "TaiGym/Go1Flat-v0": ("unitree_go1/xmls/go1.xml", "flat_ground.xml", 3 * 3 + 3 + 3 * 12),
    "TaiGym/G1Flat-v0": ("unitree_g1/xmls/g1.xml", "flat_ground.xml", 3 * 3 + 3 + 3 * 29),
    "TaiGym/YamReach-v0": ("i2rt_yam/xmls/yam.xml", "reach_target.xml", 6 + 6 + 3 + 6),
}
# the humanoid's 35 dofs and their contacts make its checks the long ones
SLOW = {"TaiGym/G1Flat-v0"}
IDS = [pytest.param(i, marks=[needs_mjlab] + ([pytest.mark.slow] if i in SLOW else [])) for i in TASKS]


def _scene_file(tmp_path: Path, task_id: str) -> Path:
    """The robot and its task's scene in one MJCF file that MuJoCo loads as taigym's tasks
    do: both included, from a folder where the robot's relative mesh folder resolves."""
    robot, scene, _ = TASKS[task_id]
    robot = ROBOTS / robot
    (tmp_path / "assets").symlink_to(robot.parent / "assets", target_is_directory=True)
    path = tmp_path / "scene.xml"
    path.write_text(f'<mujoco model="{robot.stem}"><include file="{robot}"/>'
                    f'<include file="{CONFIG_DIR / "assets" / scene}"/></mujoco>')
    return path


@pytest.mark.parametrize("task_id", IDS)
def test_the_robot_on_its_scene_agrees_with_mujoco(tmp_path, capsys, task_id):
    status = cli(["fidelity", str(_scene_file(tmp_path, task_id))])
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    assert "all within tolerance" in out.out


@pytest.mark.parametrize("task_id", IDS)
def test_check_env(task_id):
    env = gym.make(task_id)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (TASKS[task_id][2],)


@pytest.mark.parametrize("task_id", IDS)
def test_1024_envs_step_in_one_world(task_id):
    vec = gym.make_vec(task_id, num_envs=1024, vectorization_mode="vector_entry_point")
    assert isinstance(vec, TaiGymVectorEnv)
    obs, _ = vec.reset(seed=0)
    rng = np.random.default_rng(0)
    low, high = np.maximum(vec.action_space.low, -1.0), np.minimum(vec.action_space.high, 1.0)
    for _ in range(3):
        obs, reward, *_ = vec.step(rng.uniform(low, high).astype(np.float32))
    assert obs.shape == (1024, TASKS[task_id][2])
    assert np.isfinite(obs).all() and np.isfinite(reward).all()


@needs_mjlab
def test_the_go1_holds_its_stance_with_zero_actions():
    """Zero actions are the standing pose's targets: the drives, with mjlab's gains, hold
    the Go1 up for 2 s (only a policy keeps the humanoid up that long)."""
    env = TaiGymVectorEnv(Task.from_source("TaiGym/Go1Flat-v0"), num_envs=2)
    env.reset(seed=0)
    ended = np.zeros(2, bool)
    for _ in range(100):
        _, _, terminated, _, _ = env.step(np.zeros((2, 12), np.float32))
        ended |= terminated
    assert not ended.any()
    assert (env.world.get("qpos")[:, 2] > 0.2).all()


def test_a_missing_asset_package_is_named_with_its_install_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mjlab" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install --no-deps mjlab==1\.6\.0"):
        Task.from_source(str(CONFIG_DIR / "tasks" / "go1_flat.yaml"))
