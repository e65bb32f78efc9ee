"""Per-env model parameters (domain randomization) without recompiling."""

import numpy as np
import pytest
from taigym.physics import WorldError

from taigym import physics


def _pendulum():
    b = physics.ModelBuilder()
    arm = b.add_body(0, pos=(0, 0, 1), name="arm")
    b.add_joint_revolute(arm, axis=(0, 1, 0), name="hinge", damping=0.1)
    b.add_shape_capsule(arm, radius=0.05, half_height=0.25, pos=(0.25, 0, 0), quat=(0.7071068, 0, 0.7071068, 0))
    b.add_actuator("hinge", kind="motor", gear=2.0)
    return b.finalize()


def test_each_env_moves_with_its_own_parameters(device):
    """Env k with parameters p_k steps exactly as a World whose model has p_k."""
    model = _pendulum()
    world = physics.World(model, num_envs=3, device=device, precision="float64")
    world.set_param("gravity", [[0, 0, -9.81], [0, 0, -1.62], [2.0, 0, -9.81]])
    world.set_param("dof_damping", [[0.1], [0.5], [2.0]])
    world.set_param("actuator_gear", [[2.0], [1.0], [4.0]])
    world.set_param("body_mass", np.array([[0, 1.0], [0, 2.0], [0, 0.5]]) * model.body_mass[1], env_ids=[0, 1, 2])
    world.set_state(qpos=np.array([0.3]))
    world.set_ctrl(np.array([0.2]))
    world.step(100)
    np.testing.assert_allclose(world.get_param("dof_damping")[:, 0], [0.1, 0.5, 2.0])
    for k, (g, damping, gear, mass) in enumerate([((0, 0, -9.81), 0.1, 2.0, 1.0), ((0, 0, -1.62), 0.5, 1.0, 2.0),
                                                   ((2.0, 0, -9.81), 2.0, 4.0, 0.5)]):
        b = physics.ModelBuilder()
        arm = b.add_body(0, pos=(0, 0, 1), name="arm", mass=model.body_mass[1] * mass, com=model.body_ipos[1],
                         inertia=model.body_inertia[1] * mass, inertia_quat=model.body_iquat[1])
        b.add_joint_revolute(arm, axis=(0, 1, 0), name="hinge", damping=damping)
        b.add_actuator("hinge", kind="motor", gear=gear)
        b.opt.gravity = np.array(g, dtype=float)
        single = physics.World(b.finalize(), num_envs=1, device=device, precision="float64")
        single.set_state(qpos=np.array([0.3]))
        single.set_ctrl(np.array([0.2]))
        single.step(100)
        np.testing.assert_allclose(world.get("qpos")[k], single.get("qpos")[0], rtol=0, atol=1e-12)


def test_bad_parameters_are_refused(device):
    world = physics.World(_pendulum(), num_envs=2, device=device, precision="float64")
    with pytest.raises(WorldError, match="unknown parameter 'mass'"):
        world.set_param("mass", [[1.0, 1.0]])
    with pytest.raises(WorldError, match="must have shape"):
        world.set_param("gravity", [[0, 0]])
    with pytest.raises(WorldError, match="> 0"):
        world.set_param("body_mass", [[0.0, 0.0], [0.0, 1.0]])
    with pytest.raises(WorldError, match="non-finite"):
        world.set_param("dof_damping", [[np.nan], [1.0]])


def test_task_randomization_draws_per_env_parameters(device):
    """A task's randomization terms give every env its own masses and gravity at each
    reset, from the env's own seeded stream."""
    from taigym.envs.vector import TaiGymVectorEnv

    overrides = {"randomization": [
        {"term": "body_mass_scale", "params": {"bodies": ["body0", "body1"], "low": 0.5, "high": 1.5}},
        {"term": "gravity_uniform", "params": {"low": [-1.0, 0.0, -10.0], "high": [1.0, 0.0, -9.0]}},
    ], "simulation.device": device}
    env = TaiGymVectorEnv("TaiGym/Reacher-v0", num_envs=4, overrides=overrides)
    env.reset(seed=3)
    model = env.task.model
    masses = env.world.get_param("body_mass")
    b0 = model.body("body0")
    ratios = masses[:, b0] / model.body_mass[b0]
    assert np.all((ratios >= 0.5) & (ratios <= 1.5)) and len(set(np.round(ratios, 12))) == 4
    gravity = env.world.get_param("gravity")[:, 2]
    assert np.all((gravity >= -10.0) & (gravity <= -9.0))
    first = ratios.copy()
    env.reset(seed=3)  # the same seeds draw the same parameters
    np.testing.assert_array_equal(env.world.get_param("body_mass")[:, b0] / model.body_mass[b0], first)
    env.step(env.action_space.sample())


SLIDER = """<mujoco><compiler angle="radian"/><option timestep="0.002"/><worldbody>
  <geom name="floor" type="plane" size="0 0 1" friction="{floor} 0.005 0.0001"/>
  <body name="box" pos="0 0 0.05"><freejoint/><geom name="box" type="box" size="0.1 0.1 0.05" friction="{box} 0.005 0.0001"/></body>
  <body name="arm" pos="0 2 1"><joint name="hinge" axis="0 1 0" range="{lo} {hi}"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" contype="0" conaffinity="0"/></body>
</worldbody></mujoco>"""


def test_friction_and_joint_range_per_env(device):
    """Env k with geom friction f_k and joint range r_k steps exactly as a World whose
    MJCF has them: a contact mixes the two geoms' friction by max, the range moves the
    soft limit."""
    from taigym.physics.compiler.mjcf import load_mjcf_string

    settings = [(1.0, 0.3, -0.5, 0.5), (0.2, 0.6, -0.2, 1.0), (0.9, 0.9, -1.0, 0.1)]
    model = load_mjcf_string(SLIDER.format(floor=1.0, box=1.0, lo=-1, hi=1))
    world = physics.World(model, num_envs=3, device=device, precision="float64")
    world.set_param("geom_friction", [[floor, box, 0.0] for floor, box, _, _ in settings])
    world.set_param("jnt_range", [[[0, 0], [lo, hi]] for _, _, lo, hi in settings])
    np.testing.assert_allclose(world.get_param("jnt_range")[1, 1], [-0.2, 1.0])
    qpos = model.qpos0.copy()
    qpos[2] = 0.0499
    qvel = np.zeros(model.nv)
    qvel[0], qvel[6] = 1.5, 3.0
    world.set_state(qpos=qpos, qvel=qvel)
    world.step(300)
    for k, (floor, box, lo, hi) in enumerate(settings):
        single = physics.World(load_mjcf_string(SLIDER.format(floor=floor, box=box, lo=lo, hi=hi)), num_envs=1,
                               device=device, precision="float64")
        single.set_state(qpos=qpos, qvel=qvel)
        single.step(300)
        np.testing.assert_allclose(world.get("qpos")[k], single.get("qpos")[0], rtol=0, atol=1e-12)


def test_friction_and_range_are_checked(device):
    world = physics.World(_pendulum(), num_envs=2, device=device, precision="float64")
    with pytest.raises(WorldError, match="lower bounds must be <= upper"):
        world.set_param("jnt_range", [[1.0, -1.0]])
    with pytest.raises(WorldError, match="geom_friction must be >= 0"):
        world.set_param("geom_friction", [-1.0])


def test_friction_and_range_randomization_terms(device):
    from taigym.envs.vector import TaiGymVectorEnv

    overrides = {"randomization": [
        {"term": "geom_friction_scale", "params": {"low": 0.5, "high": 1.5}},
        {"term": "jnt_range_scale", "params": {"joints": ["joint1"], "low": 0.8, "high": 1.2}},
    ], "simulation.device": device}
    env = TaiGymVectorEnv("TaiGym/Reacher-v0", num_envs=4, overrides=overrides)
    env.reset(seed=5)
    model = env.task.model
    ratios = env.world.get_param("geom_friction") / model.geom_friction[:, 0]
    assert np.all((ratios >= 0.5) & (ratios <= 1.5)) and len(set(np.round(ratios[:, 0], 12))) == 4
    j = model.joint("joint1")
    width = np.diff(env.world.get_param("jnt_range")[:, j], axis=1)[:, 0] / np.diff(model.jnt_range[j])[0]
    assert np.all((width >= 0.8) & (width <= 1.2))
    env.step(env.action_space.sample())
