"""Gymnasium faces of the tasks: API checks, vector/single equivalence, autoreset timing,
determinism, partial resets, bad actions, divergence isolation, parity with Gymnasium v5."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from taigym.envs.vector import TaiGymVectorEnv

from taigym import envs  # noqa: F401 - registers the ids

IDS = ["TaiGym/InvertedPendulum-v0", "TaiGym/InvertedDoublePendulum-v0", "TaiGym/Reacher-v0", "TaiGym/Swimmer-v0"]


def actions_for(space, steps, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(space.low, space.high).astype(np.float32) for _ in range(steps)]


def rollout(env, actions, seed):
    out = [env.reset(seed=seed)[0]]
    for a in actions:
        obs, rew, term, trunc, _ = env.step(a)
        out.append((obs, rew, term, trunc))
    return out


@pytest.mark.parametrize("task_id", IDS)
def test_check_env(task_id):
    env = gym.make(task_id)
    check_env(env.unwrapped, skip_render_check=True)
    assert gym.spec(task_id).vector_entry_point == "taigym.envs.vector:TaiGymVectorEnv"
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(task_id), warn=False)


@pytest.mark.parametrize("task_id", sorted(i for i in gym.registry if i.startswith("TaiGym/")))
def test_every_registered_env_passes_gymnasium_and_sb3_checks_with_rendering(task_id):
    env = gym.make(task_id, render_mode="rgb_array")
    check_env(env.unwrapped)  # the render check included
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():  # SB3 advises [-1, 1] action boxes; Gymnasium's are the ctrlranges
        warnings.simplefilter("ignore", UserWarning)
        sb3_checker.check_env(gym.make(task_id))


def test_single_env_types_and_no_aliasing():
    env = gym.make("TaiGym/Swimmer-v0")
    _obs, _ = env.reset(seed=1)
    obs2, rew, term, trunc, info = env.step(env.action_space.sample())
    assert type(rew) is float and type(term) is bool and type(trunc) is bool
    obs2[:] = 123.0
    obs3, *_ = env.step(env.action_space.sample())
    assert not np.any(obs3 == 123.0)
    assert isinstance(info["physics_diverged"], bool)


def single_rollout_next_step(env, actions, seed):
    """A single env driven as a NEXT_STEP vector env drives each of its envs."""
    out = [env.reset(seed=seed)[0]]
    done = False
    for a in actions:
        if done:
            out.append((env.reset()[0], 0.0, False, False))
            done = False
            continue
        obs, rew, term, trunc, _ = env.step(a)
        out.append((obs, rew, term, trunc))
        done = term or trunc
    return out


@pytest.mark.parametrize("task_id", ["TaiGym/Reacher-v0", "TaiGym/InvertedPendulum-v0"])
def test_native_vector_equals_single_envs_across_resets(task_id):
    n, steps, seed = 8, 120, 7  # Reacher's episodes are 50 steps: two autoresets
    vec = gym.make_vec(task_id, num_envs=n)
    assert isinstance(vec, TaiGymVectorEnv) and vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    acts = actions_for(vec.action_space, steps)
    batch = rollout(vec, acts, seed)
    resets = 0
    for i in range(n):
        single = single_rollout_next_step(gym.make(task_id), [a[i] for a in acts], seed + i)
        np.testing.assert_array_equal(single[0], batch[0][i])
        for t in range(1, steps + 1):
            obs, rew, term, trunc = batch[t]
            np.testing.assert_array_equal(obs[i], single[t][0])
            assert (rew[i], term[i], trunc[i]) == single[t][1:], (i, t)
            resets += bool(term[i] or trunc[i])
    assert resets >= n


def test_native_vector_equals_sync_vector():
    task_id, n, steps = "TaiGym/Reacher-v0", 4, 110
    native = gym.make_vec(task_id, num_envs=n)
    sync = gym.make_vec(task_id, num_envs=n, vectorization_mode="sync")
    acts = actions_for(native.action_space, steps, seed=3)
    a, b = rollout(native, acts, 11), rollout(sync, acts, 11)
    np.testing.assert_array_equal(a[0], b[0])
    for x, y in zip(a[1:], b[1:]):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("mode,expected", [(AutoresetMode.NEXT_STEP, [5, 11, 17]), (AutoresetMode.SAME_STEP, [5, 10, 15])])
def test_truncation_steps(mode, expected):
    T = 5
    vec = gym.make_vec("TaiGym/Swimmer-v0", num_envs=2, max_episode_steps=T, autoreset_mode=mode)
    vec.reset(seed=0)
    when = []
    for t in range(1, 18):
        obs, _rew, _term, trunc, info = vec.step(np.zeros((2, 2), np.float32))
        if trunc.all():
            when.append(t)
            if mode == AutoresetMode.SAME_STEP:
                assert info["_final_obs"].all() and info["final_obs"][0].shape == obs[0].shape
    assert when == expected


def test_rollouts_are_bit_identical_run_to_run():
    def run():
        vec = gym.make_vec("TaiGym/InvertedDoublePendulum-v0", num_envs=4)
        return rollout(vec, actions_for(vec.action_space, 200, seed=5), 3)

    a, b = run(), run()
    np.testing.assert_array_equal(a[0], b[0])
    for x, y in zip(a[1:], b[1:]):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


def test_partial_reset_touches_only_masked_envs():
    vec = gym.make_vec("TaiGym/Swimmer-v0", num_envs=4, autoreset_mode=AutoresetMode.DISABLED)
    vec.reset(seed=0)
    for _ in range(5):
        vec.step(np.ones((4, 2), np.float32))
    before_q, before_v = vec.world.get("qpos"), vec.world.get("qvel")
    mask = np.array([False, True, False, True])
    _obs, _ = vec.reset(options={"reset_mask": mask})
    after_q, after_v = vec.world.get("qpos"), vec.world.get("qvel")
    np.testing.assert_array_equal(after_q[~mask], before_q[~mask])
    np.testing.assert_array_equal(after_v[~mask], before_v[~mask])
    assert np.all(np.abs(after_q[mask] - vec.task.model.qpos0) <= 0.1)
    assert not np.allclose(after_q[mask], before_q[mask])


def test_each_reset_draws_a_fresh_state():
    env = gym.make("TaiGym/Reacher-v0")
    first, _ = env.reset(seed=0)
    second, _ = env.reset()
    again, _ = env.reset(seed=0)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, again)


def test_nonfinite_actions_are_refused_or_zeroed():
    vec = gym.make_vec("TaiGym/Swimmer-v0", num_envs=3)
    vec.reset(seed=0)
    bad = np.zeros((3, 2), np.float32)
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf in envs \[1\].*actions.nonfinite=zero"):
        vec.step(bad)
    with pytest.raises(ValueError, match="shape"):
        vec.step(np.zeros((2, 2)))
    zeroing = gym.make_vec("TaiGym/Swimmer-v0", num_envs=3, overrides=["actions.nonfinite=zero"])
    zeroing.reset(seed=0)
    _, _, _, _, info = zeroing.step(bad)
    np.testing.assert_array_equal(info["action_nonfinite"], [False, True, False])
    assert np.isfinite(zeroing.world.get("qpos")).all()


def test_diverging_env_resets_alone():
    acts = actions_for(gym.spaces.Box(-1, 1, (8, 2)), 20, seed=2)

    def run(inject):
        vec = gym.make_vec("TaiGym/Swimmer-v0", num_envs=8)
        vec.reset(seed=4)
        out = []
        for t, a in enumerate(acts):
            if inject and t == 10:
                qvel = vec.world.get("qvel")
                qvel[3] = 1e200  # squares overflow to inf within the next step
                vec.world.set_state(qvel=qvel)
            out.append(vec.step(a))
        return out

    clean, hit = run(False), run(True)
    flagged = [np.flatnonzero(step[4]["physics_diverged"]).tolist() for step in hit]
    assert flagged[10] == [3] and all(f == [] for i, f in enumerate(flagged) if i != 10)
    others = np.arange(8) != 3
    for (o1, r1, te1, tr1, _), (o2, r2, te2, tr2, _) in zip(clean, hit):
        np.testing.assert_array_equal(o1[others], o2[others])
        np.testing.assert_array_equal(r1[others], r2[others])
    assert hit[10][3][3] and not hit[10][2][3] and hit[10][1][3] == 0.0
    assert all(np.isfinite(step[0]).all() for step in hit)
    assert not hit[11][3][3] and np.isfinite(hit[12][0]).all()  # reset at step 11, running again
