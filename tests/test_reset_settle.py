"""Reset-time physics of the vector env: ``reset_steps`` (the drawn state left to settle at
zero control before the first observation, dm_control's cheetah), ``reset_first_step`` and
``reset_until_no_contact`` (states that touch drawn again, dm_control's humanoid and finger)."""

import numpy as np
import pytest
from gymnasium.utils import seeding
from taigym.physics.model import JNT_HINGE, JNT_SLIDE

from taigym import physics

TASK = "TaiGym/cheetah-run-v0"
DRAWN = {"reset_first_step": "drawn"}


def _env(num_envs, mode="NextStep", **overrides):
    from taigym.envs.vector import TaiGymVectorEnv

    return TaiGymVectorEnv(TASK, num_envs=num_envs, autoreset_mode=mode,
                           overrides={"simulation.solver_iterations": 200, **overrides})


def _draws(env, seed, count):
    """Each env's first ``count`` drawn initial positions, replayed from its seed."""
    out = []
    for i in range(env.num_envs):
        rng = seeding.np_random(seed + i)[0]
        out.append([env.task.initial_state(rng)[0] for _ in range(count)])
    return np.array(out)  # (num_envs, count, nq)


def _settled(env, qpos, steps):
    """qpos (n, nq) at rest after ``steps`` steps of a World of every env, from its first step."""
    world = physics.World(env.task.model, num_envs=len(qpos), precision="float64")
    world.set_state(qpos=qpos)
    world.step(steps)
    return world.get("qpos"), world.get("qvel")


def test_reset_steps_settle_only_the_resetting_envs():
    env = _env(3, reset_steps=50, **DRAWN)
    obs, _ = env.reset(seed=4)
    drawn = _draws(env, 4, 2)
    qpos, qvel = _settled(env, drawn[:, 0], 50)
    np.testing.assert_array_equal(env.world.get("qpos"), qpos)
    np.testing.assert_array_equal(env.world.get("qvel"), qvel)
    np.testing.assert_array_equal(obs[:, : env.task.model.nq - 1], qpos[:, 1:])
    assert not np.array_equal(qpos, drawn[:, 0]) and (env.world.get("time") == 0).all()
    # a partial reset: env 1 settles from its second draw, the others untouched bit for bit
    env.step(np.zeros((3, 6)))
    before = env.world.get("qpos"), env.world.get("qvel"), env.world.get("time")
    env.reset(options={"reset_mask": np.array([False, True, False])})
    after = env.world.get("qpos"), env.world.get("qvel"), env.world.get("time")
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a[[0, 2]], b[[0, 2]])
    np.testing.assert_array_equal(after[0][1], _settled(env, drawn[1:2, 1], 50)[0][0])
    assert after[2][1] == 0


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_autoreset_settles_the_ended_envs(mode):
    env = _env(2, mode, reset_steps=30, episode_length=2, **DRAWN)
    env.reset(seed=1)
    steps = 3 if mode == "NextStep" else 2  # the step after the ending one resets, or the ending one
    for _ in range(steps):
        obs, *_ = env.step(np.full((2, 6), 0.5))
    drawn = _draws(env, 1, 2)
    qpos, qvel = _settled(env, drawn[:, 1], 30)
    np.testing.assert_array_equal(env.world.get("qpos"), qpos)
    np.testing.assert_array_equal(obs[:, env.task.model.nq - 1 :], qvel)
    assert (env.world.get("time") == 0).all()


def test_reset_first_step_from_the_reference_state_is_dm_controls():
    # dm_control's Physics.step after a reset finishes (mj_step2) the forward pass its reset
    # ran at qpos0, with the drawn positions: its first step accelerates as qpos0 at rest does
    mujoco = pytest.importorskip("mujoco")
    from importlib.resources import files

    m = mujoco.MjModel.from_xml_path(str(files("dm_control.suite") / "cheetah.xml"))
    m.opt.iterations = 200
    d = mujoco.MjData(m)
    env = _env(2, reset_steps=40)
    env.reset(seed=2)
    for i, q in enumerate(_draws(env, 2, 1)[:, 0]):
        mujoco.mj_resetData(m, d)
        mujoco.mj_forward(m, d)
        d.qpos[:] = q
        mujoco.mj_step2(m, d)
        mujoco.mj_step(m, d, 39)
        np.testing.assert_allclose(env.world.get("qpos")[i], d.qpos, rtol=0, atol=1e-12)
        np.testing.assert_allclose(env.world.get("qvel")[i], d.qvel, rtol=0, atol=1e-10)


def test_reset_options_are_checked():
    from taigym.tasks.errors import ConfigError

    with pytest.raises(ConfigError, match="reset_first_step: reference needs reset_steps >= 1"):
        _env(1, reset_steps=0)
    with pytest.raises(ConfigError, match="reset_steps"):
        _env(1, reset_steps=-1)


def test_reset_until_no_contact_redraws_the_touching_envs():
    # the cheetah lowered by 0.2 m touches the floor with some of its leg poses, by 0.7 m
    # with all: drawn again until it does not, each env from its own generator
    low = {"robot.init_qpos": [0, -0.2, 0, 0, 0, 0, 0, 0, 0]}
    env = _env(6, reset_until_no_contact=200, reset_steps=0, reset_first_step="drawn", **low)
    env.reset(seed=0)
    env.world.forward()
    assert (env.world.contacts()["ncon"] == 0).all()
    drawn = _draws(env, 0, 200)
    world = physics.World(env.task.model, num_envs=1, precision="float64")
    redrawn = 0
    for i in range(6):  # env i's state is its first draw without a contact
        for k, q in enumerate(drawn[i]):
            world.set_state(qpos=q[None])
            world.forward()
            if world.contacts()["ncon"][0] == 0:
                break
        np.testing.assert_array_equal(env.world.get("qpos")[i], q)
        redrawn += k > 0
    assert redrawn
    stuck = _env(2, reset_until_no_contact=3, reset_steps=0, reset_first_step="drawn",
                 **{"robot.init_qpos": [0, -0.7, 0, 0, 0, 0, 0, 0, 0]})
    with pytest.raises(RuntimeError, match=r"envs \[0, 1\] still have contacts after 3 draws"):
        stuck.reset(seed=0)
