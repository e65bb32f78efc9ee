"""The fixed-base arm reaching task (TaiGym/ArmReach-v0): actions as PD-drive position
targets, its manipulation terms, and refusals of bad drive-action configs."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks import ConfigError, Task

from taigym import (
    envs,  # noqa: F401 - registers the ids
    physics,
)

ID = "TaiGym/ArmReach-v0"
ARM = 6  # the arm's joints are the first six coordinates; the target's three slides follow
# a bent, reachable pose: shoulder turned and pitched forward, elbow and wrist bent
GOAL_POSE = np.array([0.6, 0.7, 0.3, 1.0, -0.4, 0.5])


@pytest.fixture(scope="module")
def task():
    return Task.from_source(ID)


def test_check_env():
    env = gym.make(ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (ARM + ARM + 3 + ARM,)
    assert env.action_space.shape == (ARM,)
    np.testing.assert_array_equal(env.action_space.low, -1.0)  # scale is half of each joint's range
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(ID), warn=False)


def test_reset_holds_the_reset_pose(task):
    env = TaiGymVectorEnv(task, num_envs=2)
    obs, _ = env.reset(seed=3)
    qpos = env.world.get("qpos")
    # the drives start out pointing at the drawn pose, not at the last episode's targets
    np.testing.assert_allclose(env.world.get("drive_qpos_target")[:, :ARM], qpos[:, :ARM])
    np.testing.assert_allclose(obs[:, -ARM:], qpos[:, :ARM])
    radius = np.linalg.norm(qpos[:, ARM:], axis=1)
    assert ((radius >= 0.25) & (radius < 0.6)).all() and (qpos[:, ARM + 2] >= -0.05).all()


def test_drives_track_the_commanded_targets(task):
    """After 1 s of a constant command the joints are at rest where the drive balances
    gravity: stiffness * (q* - q) = qfrc_bias (joint damping vanishes at rest; the limits
    are far). So q* - q is bounded by gravity's torque over the stiffness — 11 N m / 400
    N m/rad at the shoulder at full stretch, under 0.03 rad — and equals it here to the
    residual motion of the settling arm."""
    env = TaiGymVectorEnv(task, num_envs=2)
    env.reset(seed=0)
    action = np.stack([GOAL_POSE / task.scale, -0.5 * GOAL_POSE / task.scale])
    for _ in range(50):
        obs, *_ = env.step(action)
    target = task.offset + task.scale * action
    np.testing.assert_allclose(env.world.get("drive_qpos_target")[:, :ARM], target)
    np.testing.assert_allclose(obs[:, -ARM:], target)  # the last action, observed as joint targets
    q, qd = env.world.get("qpos")[:, :ARM], env.world.get("qvel")[:, :ARM]
    stiffness = task.model.dof_drive_stiffness[:ARM]
    bias = env.world.get("qfrc_bias")[:, :ARM]
    assert np.abs(qd).max() < 1e-3
    np.testing.assert_allclose(stiffness * (target - q), bias, atol=0.02)  # N m
    assert np.abs(target - q).max() < 0.03


def test_commanding_a_reachable_pose_brings_the_fingertip_to_the_target(task):
    """A scripted policy: put the target where the fingertip is at GOAL_POSE, then command
    GOAL_POSE. The distance shrinks to the gravity sag (< 0.03 rad over 0.7 m) and the
    success bonus is paid."""
    env = TaiGymVectorEnv(task, num_envs=1)
    env.reset(seed=1)
    qpos = env.world.get("qpos")
    qpos[0, ARM:] = fingertip_offset(task.model, GOAL_POSE)
    env.world.set_state(qpos=qpos, qvel=env.world.get("qvel"))
    distances, bonus = [], []
    for _ in range(60):
        _, _, _, _, info = env.step((GOAL_POSE / task.scale)[None])
        distances.append(-info["reward_body_distance"][0])
        bonus.append(info["reward_body_within"][0])
    assert distances[0] > 0.3
    assert distances[-1] < 0.02
    assert bonus[-1] == 1.0 and bonus[0] == 0.0


def fingertip_offset(model, arm_qpos):
    """Where the fingertip is at ``arm_qpos``, from the target body's frame (the shoulder)."""
    world = physics.World(model, num_envs=1, device="cpu", precision="float32")
    qpos = np.array(model.qpos0, dtype=np.float64)[None]
    qpos[0, :ARM] = arm_qpos
    world.set_state(qpos=qpos, qvel=np.zeros((1, model.nv)))
    world.forward()
    xpos = world.get("xpos")[0]
    return xpos[model.body_name.index("fingertip")] - xpos[model.body_name.index("target")]


@pytest.mark.parametrize(("source", "override", "path", "message"), [
    (ID, "actions.joints=[shoulder_yw, elbow]", r"actions\.joints\[0\]", "did you mean 'shoulder_yaw'"),
    (ID, "actions.joints=[target_x]", r"actions\.joints\[0\]", "has no PD drive"),
    (ID, "actions.joints=[elbow, elbow]", r"actions\.joints", "twice"),
    (ID, "actions.scale=[1, 2]", r"actions\.scale", "one per commanded joint"),
    (ID, "actions.kind=torque", r"actions\.joints", "not drive targets"),
    (ID, "actions.actuators=[elbow]", r"actions\.actuators", "commands joints, not actuators"),
    (ID, "actions.kind=drive_postion", r"actions\.kind", "drive_position"),
    (ID, "observations.3.params.joints=[target_x]", r"observations\[3\]\.params\.joints", "has no PD drive"),
    (ID, "resets.2.params.inner_radius=0.7", r"resets\[2\]\.params\.inner_radius", "inner_radius < outer_radius"),
    ("TaiGym/Reacher-v0", "actions.kind=drive_position;actions.actuators=all", r"actions\.kind", "no PD drives"),
])
def test_bad_drive_actions_name_the_key_path(source, override, path, message):
    with pytest.raises(ConfigError, match=path) as e:
        Task.from_source(source, override.split(";"))
    assert e.match(message)
