"""PettingZoo and stable-baselines3 faces of the native batch."""

import numpy as np
import pytest

from taigym import envs


def test_parallel_api():
    parallel_test = pytest.importorskip("pettingzoo.test")
    assert "TaiGym/Swimmer2x1-v0" in envs.list_parallel()
    env = envs.make_parallel("Swimmer2x1")
    parallel_test.parallel_api_test(env, num_cycles=30)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"front", "back"} and obs["front"].shape == (4,)
    # each agent sees its own joint first, then its neighbour's
    np.testing.assert_array_equal(obs["front"][[0, 1]], obs["back"][[1, 0]])


def test_aec_and_overrides():
    pytest.importorskip("pettingzoo")
    env = envs.make_aec("Swimmer2x1", episode_length=3)
    env.reset(seed=0)
    steps = 0
    for agent in env.agent_iter(max_iter=100):
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else env.action_space(agent).sample())
        steps += 1
    assert steps == 3 * 2 + 2  # three cycles of two agents, then each agent's final turn
    with pytest.raises(KeyError, match="did you mean"):
        envs.make_parallel("TaiGym/Swimmer2x2-v0")


def test_render_mode_is_a_constructor_keyword_as_in_pettingzoo():
    pytest.importorskip("pettingzoo")
    import taigym

    env = taigym.make_parallel("Swimmer2x1", render_mode="rgb_array", episode_length=3)
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    aec = taigym.make_aec("Swimmer2x1", render_mode="rgb_array")
    aec.reset(seed=0)
    assert aec.render().shape == frame.shape


def test_sb3_vec_env_same_step_semantics():
    pytest.importorskip("stable_baselines3")
    import gymnasium as gym
    from stable_baselines3.common.env_checker import check_env
    from taigym.envs.sb3 import TaiGymVecEnv

    check_env(gym.make("TaiGym/Reacher-v0"))
    venv = TaiGymVecEnv("TaiGym/Reacher-v0", num_envs=3)
    venv.seed(0)
    first = venv.reset()
    ended = []
    for t in range(1, 52):
        obs, rew, dones, infos = venv.step(np.zeros((3, 2), np.float32))
        assert rew.shape == (3,) and obs.shape == (3, 10)
        for i, info in enumerate(infos):
            assert ("terminal_observation" in info) == bool(dones[i])
        if dones.any():
            ended.append(t)
            assert all(info["TimeLimit.truncated"] for info in infos)
            assert not np.array_equal(infos[0]["terminal_observation"], obs[0])
    assert ended == [50]
    venv.seed(0)
    np.testing.assert_array_equal(venv.reset(), first)
