"""PettingZoo's own tests on every registered multi-agent env, and per-agent endings.

PettingZoo checks its envs with ``parallel_api_test``, ``api_test`` (AEC), ``seed_test``,
``parallel_seed_test`` and ``render_test``; a user's multi-agent trainer relies on what they
check, so each runs on every task ``list_parallel()`` names.
"""

import functools

import numpy as np
import pytest

from taigym import envs

pz_test = pytest.importorskip("pettingzoo.test")

PARALLEL_IDS = envs.list_parallel()


def test_every_shipped_multi_agent_task_is_listed():
    assert {"TaiGym/Ant4x2-v0", "TaiGym/Swimmer2x1-v0", "TaiGym/SumoAnts-v0", "TaiGym/BoxPush-v0",
            "TaiGym/LastAntStanding-v0"} <= set(PARALLEL_IDS)


@pytest.mark.parametrize("task_id", PARALLEL_IDS)
def test_pettingzoo_api_seed_and_render_tests(task_id):
    # short episodes, so that the tests see endings and resets within their few cycles
    make = functools.partial(envs.make_parallel, task_id, episode_length=6)
    pz_test.parallel_api_test(make(), num_cycles=12)
    pz_test.parallel_seed_test(make, num_cycles=12)
    aec = functools.partial(envs.make_aec, task_id, episode_length=6)
    pz_test.api_test(aec(), num_cycles=12)
    pz_test.seed_test(aec, num_cycles=12)
    pz_test.render_test(aec)


def test_human_render_mode_is_refused_with_the_mode_offered():
    # PettingZoo's render_test makes an env with "human" only to read the modes it offers, so
    # the refusal comes when such an env is reset or rendered
    env = envs.make_parallel("Swimmer2x1", render_mode="human")
    assert env.metadata["render_modes"] == ["rgb_array"]
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['rgb_array'\], got 'human'"):
        env.reset(seed=0)
    with pytest.raises(ValueError, match="off-screen"):
        env.render()
    with pytest.raises(ValueError, match="got 'ansi'"):
        envs.make_parallel("Swimmer2x1", render_mode="ansi")


def _push_out(env, agent):
    # place the agent's torso outside the ring, as a push would, between two steps
    world = env._batch.world
    qpos = world.get("qpos").copy()
    start = 0 if agent == "red" else 15
    qpos[0, start:start + 2] = [4.0, 0.0]
    world.set_state(qpos=qpos, qvel=world.get("qvel"))
    env._batch.world.forward()


def test_an_agent_out_by_its_own_terms_leaves_while_the_other_plays_on():
    env = envs.make_parallel("LastAntStanding")
    env.reset(seed=0)
    assert env.agents == ["red", "blue"]
    zero = {a: np.zeros(env.action_space(a).shape) for a in env.agents}
    env.step(zero)
    _push_out(env, "red")
    obs, rewards, terms, truncs, infos = env.step(zero)
    # red is reported terminated on the step it went out, with its last observation and reward
    assert terms == {"red": True, "blue": False} and truncs == {"red": False, "blue": False}
    assert set(obs) == set(rewards) == set(infos) == {"red", "blue"}
    # red's own alive term sees its ending (0), blue is paid 1 for being in and 1 for red out
    assert infos["red"]["reward_alive"] == 0.0 and infos["blue"]["reward_alive"] == 1.0
    assert infos["blue"]["reward_body_outside_disc"] == 1.0
    assert env.agents == ["blue"]
    # the others go on; an action for the agent that is out is ignored, none is needed
    obs, rewards, terms, truncs, infos = env.step({"blue": zero["blue"], "red": np.ones(8)})
    assert set(obs) == {"blue"} and env.agents == ["blue"]
    red_ctrl = env._batch.world.get("ctrl")[0, :8]
    np.testing.assert_array_equal(red_ctrl, 0.0)  # its motors went limp
    _push_out(env, "blue")
    _, _, terms, _, _ = env.step({"blue": zero["blue"]})
    assert terms == {"blue": True} and env.agents == []
    env.reset(seed=1)
    assert env.agents == ["red", "blue"]


def test_an_action_for_no_agent_is_refused():
    env = envs.make_parallel("LastAntStanding")
    env.reset(seed=0)
    actions = {a: np.zeros(env.action_space(a).shape) for a in env.agents}
    with pytest.raises(ValueError, match=r"no action for agents \['blue'\]"):
        env.step({"red": actions["red"]})
    with pytest.raises(ValueError, match=r"'green'.*not agents of this env"):
        env.step({**actions, "green": actions["red"]})


def test_scene_wide_endings_stay_the_default():
    # SumoAnts ends the bout with the task's terms: one ant out ends both agents' episodes
    env = envs.make_parallel("SumoAnts")
    env.reset(seed=0)
    assert not any(env.task.agents[a]["terminations"] for a in env.agents)
    zero = {a: np.zeros(env.action_space(a).shape) for a in env.agents}
    env.step(zero)
    _push_out(env, "red")
    _, _, terms, truncs, _ = env.step(zero)
    assert terms == {"red": True, "blue": True} and truncs == {"red": False, "blue": False}
    assert env.agents == []
