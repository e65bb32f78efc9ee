"""The quadruped velocity-tracking task (TaiGym/QuadrupedFlat-v0) and its locomotion terms."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks import ConfigError, Task
from taigym.tasks import reference as R

from taigym import envs  # noqa: F401 - registers the ids

ID = "TaiGym/QuadrupedFlat-v0"
COMMAND = slice(9, 12)  # lin vel 3, ang vel 3, gravity 3, then the command


@pytest.fixture(scope="module")
def task():
    return Task.from_source(ID)


def test_check_env():
    env = gym.make(ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (3 + 3 + 3 + 3 + 12 + 12 + 12,)
    assert env.action_space.shape == (12,)
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(ID), warn=False)


def test_stands_still_under_zero_action(task):
    env = TaiGymVectorEnv(task, num_envs=2)
    env.reset(seed=0)
    for _ in range(100):  # 2 s at 50 Hz
        _, reward, terminated, truncated, _ = env.step(np.zeros((2, 12), np.float32))
        assert not terminated.any() and not truncated.any()
        assert np.isfinite(reward).all()
    qpos = env.world.get("qpos")
    assert (qpos[:, 2] > 0.28).all()  # base height: 0.33 at rest, before settling on the feet
    tilt = np.arccos(env.world.get("xmat")[:, 1, 2, 2])
    assert (tilt < 0.1).all()


def test_commands_resampled_on_schedule_per_env(task):
    # resampling every 0.1 s = 5 control steps; env 1 reset two steps later than env 0
    env = TaiGymVectorEnv(Task.from_source(ID, ["commands.0.params.resampling_time=0.1"]), num_envs=3,
                          autoreset_mode="Disabled")
    obs, _ = env.reset(seed=1)
    first = env.current_commands()["base_velocity"]
    assert len({tuple(c) for c in first}) == 3  # each env its own draw
    np.testing.assert_allclose(obs[:, COMMAND], first, rtol=1e-6)
    zero = np.zeros((3, 12), np.float32)
    history = []
    for t in range(12):
        if t == 2:
            env.reset(options={"reset_mask": np.array([False, True, False])})
        obs, *_ = env.step(zero)
        history.append(env.current_commands()["base_velocity"])
        np.testing.assert_allclose(obs[:, COMMAND], history[-1], rtol=1e-6)  # observed as it is now
    changed = [np.flatnonzero((history[t] != (history[t - 1] if t else first)).any(1)).tolist() for t in range(12)]
    # env 0 and 2 after steps 5 and 10; env 1 redrawn at its reset (before step 3), then 5 steps later
    assert changed[4] == [0, 2] and changed[9] == [0, 2]
    assert changed[2] == [1] and changed[6] == [1] and changed[11] == [1]
    assert sum(map(len, changed)) == 7


def _state(task, qvel_base, command):
    """(quantities, registers): the standing pose with base velocity ``qvel_base`` (world
    frame, the base level so that is its own frame too), set through the World, and
    registers holding the command ``command`` (for the step and after it) and no memory."""
    from taigym import physics

    n = len(qvel_base)
    world = physics.World(task.model, num_envs=n, device="cpu", precision="float64")
    qvel = np.zeros((n, task.model.nv))
    qvel[:, :6] = qvel_base
    world.set_state(qpos=np.tile(task.model.qpos0, (n, 1)), qvel=qvel)
    world.forward()
    regs, p = R.registers(task, n), task.program
    for at in (p.commands_now["base_velocity"], p.commands_next["base_velocity"]):
        regs[:, at.start : at.stop] = command
    return R.quantities(world, task), regs


def test_rewards_finite_and_tracking_prefers_matching_velocity(task):
    command = [[0.5, -0.2, 0.4]] * 3
    now, regs = _state(task, [[0.5, -0.2, 0, 0, 0, 0.4], [0, 0, 0, 0, 0, 0], [-0.5, 0.3, 0, 0, 0, -0.4]], command)
    # a step that left the state as it was
    out = R.step(task, now, {k: v.copy() for k, v in now.items()}, np.zeros((3, 12)), regs)
    reward, parts = out.reward, out.parts
    assert np.isfinite(reward).all() and all(np.isfinite(v).all() for v in parts.values())
    lin, ang = parts["track_lin_vel_xy_exp"], parts["track_ang_vel_z_exp"]
    np.testing.assert_allclose([lin[0], ang[0]], [1.0, 0.5])  # exact match: kernel 1 times the weights
    assert lin[0] > lin[1] > lin[2] and ang[0] > ang[1] > ang[2]
    assert reward[0] > reward[1] > reward[2]
    # observed in the base frame, which is the world's for the level, unyawed standing pose
    obs = out.obs
    np.testing.assert_allclose(obs[0, :3], [0.5, -0.2, 0.0], atol=1e-12)
    np.testing.assert_allclose(obs[0, 6:9], [0, 0, -1], atol=1e-12)  # level: gravity straight down


def test_feet_air_time_rewards_touchdown_after_long_swing(task):
    now, regs = _state(task, [[0] * 6] * 2, [[0.5, 0, 0], [0.0, 0, 0]])
    _, term = next((n, t) for n, _, t in task.rewards if n == "feet_air_time")
    memory = task.program.memories["feet_air_time"]
    regs[:, memory.start : memory.stop] = 0.8  # every foot 0.8 s in the air, now touching down
    now["cfrc_ext"][:, [5, 9, 13, 17], 5] = 30.0  # upward contact force on each foot
    value = R.term(task, term, now, now, regs=regs)[:, 0]
    np.testing.assert_allclose(value, [4 * (0.8 - 0.5), 0.0])  # no reward while told to stand
    np.testing.assert_array_equal(regs[:, memory.start : memory.stop], 0.0)  # the feet start over


@pytest.mark.parametrize(("override", "path", "message"), [
    ("rewards.8.params.feet=[FL_fot]", r"rewards\[8\]\.params\.feet", "did you mean 'FL_foot'"),
    ("commands.0.params.lin_vel_x=[1, -1]", r"commands\[0\]\.params\.lin_vel_x", "must be <="),
    ("commands.0.params.resampling_time=0", r"commands\[0\]\.params\.resampling_time", "must be > 0"),
    ("rewards.0.params.command=nope", r"rewards\[0\]\.params\.command", "no command named 'nope'"),
    ("rewards.2.params={body: FL_hip}", r"rewards\[2\]\.params\.body", "no free joint"),
    ("terminations.1.params.bodies=[bse]", r"terminations\[1\]\.params\.bodies", "did you mean 'base'"),
    ("terminations.2.params.max_angle=-1", r"terminations\[2\]\.params\.max_angle", r"\(0, pi\]"),
    ("commands.0.term=base_velocty", r"commands\[0\]\.term", "base_velocity"),
])
def test_bad_parameters_name_the_key_path(override, path, message):
    with pytest.raises(ConfigError, match=path) as e:
        Task.from_source(ID, [override])
    assert e.match(message)
