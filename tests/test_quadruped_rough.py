"""TaiGym/QuadrupedRough-v0: QuadrupedFlat's task on a height field."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks import Task

from taigym import envs  # noqa: F401 - registers the ids

ID = "TaiGym/QuadrupedRough-v0"


def test_check_env():
    env = gym.make(ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (3 + 3 + 3 + 3 + 12 + 12 + 12,)
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(ID), warn=False)


def test_the_terrain_is_deterministic_and_flat_where_the_robot_starts():
    model = Task.from_source(ID).model
    h = model.hfield("rough")
    data = model.hfield_data[model.hfield_adr[h]:].reshape(model.hfield_nrow[h], model.hfield_ncol[h])
    assert data.std() > 0.1  # rough
    centre = model.hfield_nrow[h] // 2
    assert np.all(data[centre - 4:centre + 5, centre - 4:centre + 5] == 0)  # the start pad: 0.4 m around 0
    from taigym.scripts.make_terrain import rough_terrain

    np.testing.assert_allclose(data, np.round(rough_terrain() * 255) / 255, atol=1e-6)


def test_stands_on_rough_ground():
    """Dropped onto the bumps 2 m from the start, with its joints held at the standing
    pose, the robot comes to rest on its feet, touching the height field."""
    env = TaiGymVectorEnv(Task.from_source(ID), num_envs=2)
    env.reset(seed=0)
    world = env.world
    qpos = world.get("qpos")
    qpos[:, 0:3] = [[2.0, 1.0, 0.45], [-1.5, 2.5, 0.45]]
    world.set_state(qpos=qpos, qvel=np.zeros_like(world.get("qvel")))
    for _ in range(100):  # 2 s
        env.step(np.zeros((2, 12), np.float32))
    contacts = world.contacts()
    terrain = world.model.geom("terrain")
    for e in range(2):
        geoms = contacts["geom"][e, :contacts["ncon"][e]]
        assert (geoms[:, 0] == terrain).sum() >= 3  # feet on the bumps
    assert np.all(np.isfinite(world.get("qpos")))
    assert np.all(np.arccos(world.get("xmat")[:, 1, 2, 2]) < 0.5)  # upright
