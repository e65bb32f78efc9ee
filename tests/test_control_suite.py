"""The Control Suite's tasks against dm_control's own, task by task (float64).

For each task file under configs/tasks/control_suite:

- rewards and observations on the same states: dm_control's env is reset (its own initial
  state), then for 200 random actions each step starts our env from dm_control's state and
  both step; reward and flattened observation must agree to 1e-9 (observed: ~1e-15);
- the same from states near each goal, for the tasks whose reward stays 0 under random
  actions (manipulator, pendulum, point_mass, reacher, finger): the ball at its target, the
  pole upright, the target moved to the fingertip, so the reward's rewarding branches agree;
- the initial state: 1,000 resets of each, a two-sample Kolmogorov-Smirnov test per
  coordinate of qpos and qvel and of the model parameters drawn each episode (a target's
  geom_pos) (p above 1e-4, fixed seeds; a coordinate that is constant in both must be the
  same constant);
- the spec: control period, episode length and action bounds are dm_control's.

The solvers run to 1e-15 on both sides, so that contacts agree to round-off rather than to
the default tolerance.
"""

import numpy as np
import pytest
from dm_control_oracle import domain_and_task, flat, shipped_tasks, suite

TASKS = shipped_tasks()
NSTEP = 200
TOL = 1e-9
CONVERGED = {"simulation.solver_tolerance": 1e-15, "simulation.solver_iterations": 200}


def _dm_env(task_id, seed):
    domain, task = domain_and_task(task_id)
    env = suite().load(domain, task, task_kwargs={"random": seed})
    env.physics.model.opt.tolerance = 1e-15
    env.physics.model.opt.iterations = 200
    return env


def _drawn_parameters(ours) -> list[str]:
    """The model parameters the task draws each episode (its randomization and reset terms')."""
    return sorted({*(name for _, term in ours.task.randomization for name in term.info["parameters"]),
                   *ours.task.reset_parameters()})


def _dm_parameter(physics, name) -> np.ndarray:
    """dm_control's current value of our per-env parameter ``name`` (named as mjModel's)."""
    return np.array(getattr(physics.model, name))


def _ours(task_id, num_envs, **overrides):
    from taigym.envs.vector import TaiGymVectorEnv

    return TaiGymVectorEnv(task_id, num_envs=num_envs, overrides={**CONVERGED, **overrides})


def test_every_benchmarking_task_has_a_file():
    """Each task file names one of dm_control's benchmarking tasks."""
    benchmarking = set(suite().BENCHMARKING)
    assert TASKS and {domain_and_task(t) for t in TASKS} <= benchmarking


@pytest.mark.parametrize("task_id", TASKS)
def test_spec_is_dm_controls(task_id):
    env = _dm_env(task_id, 0)
    ours = _ours(task_id, 1)
    spec = env.action_spec()
    np.testing.assert_array_equal(ours.single_action_space.low, spec.minimum.astype(np.float32))
    np.testing.assert_array_equal(ours.single_action_space.high, spec.maximum.astype(np.float32))
    assert ours.task.dt == pytest.approx(env.control_timestep(), rel=1e-12)
    assert ours.episode_length == round(env._step_limit)  # noqa: SLF001 (dm_control keeps no public one)
    assert ours.task.obs_size == sum(int(np.prod(s.shape)) for s in env.observation_spec().values())


def _compare_steps(task_id, nstep, toward_goal=None):
    """dm_control's env and ours stepped side by side, ours started each step from
    dm_control's state and drawn parameters (``toward_goal(physics, rng)`` first moves
    dm_control's state or target there); the largest errors and dm_control's rewards."""
    from taigym.tasks.term_program import RESET

    env = _dm_env(task_id, 0)
    ours = _ours(task_id, 1)
    ours.reset(seed=0)
    world, program = ours.world, ours.program
    physics = env.physics
    ts = env.reset()
    drawn = _drawn_parameters(ours)
    for name in drawn:
        world.set_param(name, _dm_parameter(physics, name)[None])
    # the reset observation, of dm_control's initial state
    world.set_state(qpos=physics.data.qpos[None].copy(), qvel=physics.data.qvel[None].copy())
    world.forward(segments=(0, RESET))
    errors = {"reset observation": np.max(np.abs(program.outputs(world.registers()).obs[0] - flat(ts.observation)))}
    spec = env.action_spec()
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(nstep):
        if toward_goal is not None:
            toward_goal(physics, rng)
            physics.forward()
            for name in drawn:
                world.set_param(name, _dm_parameter(physics, name)[None])
        world.set_state(qpos=physics.data.qpos[None].copy(), qvel=physics.data.qvel[None].copy())
        world.forward()
        action = rng.uniform(spec.minimum, spec.maximum)
        ts = env.step(action)
        obs, reward, terminated, truncated, _ = ours.step(action[None])
        assert not terminated[0] and not truncated[0]
        rewards.append(ts.reward)
        errors["reward"] = max(errors.get("reward", 0.0), abs(reward[0] - ts.reward))
        errors["observation"] = max(errors.get("observation", 0.0), np.max(np.abs(obs[0] - flat(ts.observation))))
    print(task_id, {k: f"{v:.1e}" for k, v in errors.items()}, f"mean reward {np.mean(rewards):.3f}")
    return errors, np.array(rewards)


@pytest.mark.parametrize("task_id", TASKS)
def test_rewards_and_observations_match_dm_control(task_id):
    errors, rewards = _compare_steps(task_id, NSTEP)
    assert max(errors.values()) <= TOL, errors
    assert all(0.0 <= r <= 1.0 for r in rewards)


def _ball_at_target(physics, rng):
    """manipulator: the ball within 3 cm of its target, at rest (close within 1 cm)."""
    target = physics.named.data.site_xpos["target_ball"]
    physics.named.data.qpos[["ball_x", "ball_z"]] = target[[0, 2]] + rng.uniform(-0.03, 0.03, 2)
    physics.named.data.qvel[["ball_x", "ball_z", "ball_y"]] = 0


def _pole_near_upright(physics, rng):
    """pendulum: the pole within 0.25 rad of upright (rewarded within 8 degrees)."""
    physics.named.data.qpos["hinge"] = rng.uniform(-0.25, 0.25)
    physics.named.data.qvel["hinge"] = rng.uniform(-1, 1)


def _mass_near_target(physics, rng):
    """point_mass: the mass within 4 cm of the target (its radius 1.5 cm, as much margin)."""
    target = physics.named.data.geom_xpos["target", :2]
    physics.named.data.qpos[["root_x", "root_y"]] = target + rng.uniform(-0.04, 0.04, 2)


def _target_at_finger(physics, rng):
    """reacher: the target moved to within 2 cm of the fingertip, the arm at rest."""
    physics.named.model.geom_pos["target", ["x", "y"]] = (physics.named.data.geom_xpos["finger", :2]
                                                         + rng.uniform(-0.02, 0.02, 2))
    physics.data.qvel[:] = 0


def _target_at_tip(physics, rng):
    """finger turn: the target moved to within 4 cm of the tip (rewarded inside the target)."""
    physics.named.model.site_pos["target", ["x", "z"]] = (physics.named.data.site_xpos["tip"][[0, 2]]
                                                         + rng.uniform(-0.04, 0.04, 2))


def _spinning(physics, rng):
    """finger spin: the hinge turning at 10 or 20 rad/s (rewarded past 15)."""
    physics.named.data.qvel["hinge"] = rng.choice([-20.0, -10.0])


# tasks whose reward stays 0 under random actions, started each step near their goal
NEAR_GOAL = {"TaiGym/manipulator-bring_ball-v0": _ball_at_target, "TaiGym/pendulum-swingup-v0": _pole_near_upright,
             "TaiGym/point_mass-easy-v0": _mass_near_target, "TaiGym/reacher-easy-v0": _target_at_finger,
             "TaiGym/reacher-hard-v0": _target_at_finger, "TaiGym/finger-turn_easy-v0": _target_at_tip,
             "TaiGym/finger-turn_hard-v0": _target_at_tip, "TaiGym/finger-spin-v0": _spinning}


@pytest.mark.parametrize("task_id", sorted(NEAR_GOAL))
def test_rewards_near_the_goal_match_dm_control(task_id):
    """The reward's rewarding branches, not only its zeros: the same comparison from states
    near each goal, where the reward is 1, falling off, or 0 as the state sits."""
    errors, rewards = _compare_steps(task_id, 60, NEAR_GOAL[task_id])
    assert max(errors.values()) <= TOL, errors
    assert (rewards >= 0).all() and (rewards > 0).mean() > 0.2 and rewards.max() > 0.5


@pytest.mark.parametrize("task_id", TASKS)
def test_initial_states_match_dm_controls(task_id):
    from scipy.stats import ks_2samp

    n = 1000
    env = _dm_env(task_id, 1)
    ours = _ours(task_id, n)
    drawn = _drawn_parameters(ours)
    theirs = []
    for _ in range(n):
        env.reset()
        theirs.append(np.concatenate([env.physics.data.qpos, env.physics.data.qvel,
                                      *(_dm_parameter(env.physics, name).ravel() for name in drawn)]))
    theirs = np.array(theirs)
    ours.reset(seed=1)
    mine = np.concatenate([ours.world.get("qpos"), ours.world.get("qvel"),
                           *(ours.world.get_param(name).reshape(n, -1) for name in drawn)], axis=1)
    for k in range(mine.shape[1]):
        if np.ptp(theirs[:, k]) == 0 or np.ptp(mine[:, k]) == 0:
            np.testing.assert_allclose(mine[:, k], theirs[:, k], rtol=0, atol=1e-12, err_msg=f"coordinate {k}")
            continue
        p = ks_2samp(mine[:, k], theirs[:, k]).pvalue
        assert p > 1e-4, (k, p, mine[:, k].mean(), theirs[:, k].mean(), mine[:, k].std(), theirs[:, k].std())


# one task goes through training and the large batch in the quick set, the others in the slow tier
QUICK = "TaiGym/cartpole-swingup-v0"
ENV_IDS = [pytest.param(t, marks=[] if t == QUICK else [pytest.mark.slow]) for t in TASKS]


@pytest.mark.parametrize("task_id", TASKS)
def test_gym_make_passes_check_env(task_id):
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    from taigym import envs  # noqa: F401 - registers the ids

    env = gym.make(task_id)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("task_id", ENV_IDS)
def test_1024_envs_step_in_one_world(task_id):
    import gymnasium as gym

    from taigym import envs  # noqa: F401

    vec = gym.make_vec(task_id, num_envs=1024, vectorization_mode="vector_entry_point")
    obs, _ = vec.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs, reward, *_ = vec.step(rng.uniform(vec.action_space.low, vec.action_space.high).astype(np.float32))
    assert obs.shape == (1024, vec.single_observation_space.shape[0])
    assert np.isfinite(obs).all() and np.isfinite(reward).all() and ((reward >= 0) & (reward <= 1)).all()


@pytest.mark.parametrize("task_id", ENV_IDS)
def test_taigym_train_runs(task_id, tmp_path, capsys):
    """``taigym train`` on the task, in this process (its kernels already compiled here)."""
    pytest.importorskip("stable_baselines3")
    import json

    from taigym.scripts.cli import main as cli

    tiny = ["total_timesteps=256", "n_steps=32", "batch_size=32", "num_envs=2", "video_steps=0", "eval_episodes=1"]
    status = cli(["train", task_id, "--results", str(tmp_path), "--quiet", *tiny])
    assert status in (0, None), capsys.readouterr().err[-2000:]
    (metrics,) = tmp_path.glob("*/metrics.json")
    assert json.loads(metrics.read_text())


def test_dm_control_peer_env():
    """dm_control's own task as a Gymnasium env (scripts/dm_control_env.py), what benchmarks
    and the leaderboard step beside ours: check_env, seeded resets, truncation at its limit."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env
    from taigym.scripts.benchmark_envs import peer_id
    from taigym.scripts.dm_control_env import register_all

    suite()  # skips where dm_control is not installed
    assert len(register_all()) == len(suite().BENCHMARKING)
    assert peer_id("cartpole-swingup") == "dm_control/cartpole-swingup-v0" and peer_id("Ant") == "Ant-v5"
    env = gym.make("dm_control/cartpole-swingup-v0")
    check_env(env.unwrapped, skip_render_check=True)
    first, _ = env.reset(seed=3)
    again, _ = env.reset(seed=3)
    np.testing.assert_array_equal(first, again)
    steps, truncated = 0, False
    while not truncated:
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert not terminated and 0 <= reward <= 1
        steps += 1
    assert steps == 1000
