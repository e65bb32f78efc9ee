"""Mocap bodies (MJCF ``<body mocap="true">``) against mujoco (float64).

A mocap body's pose is per-env data (mjData's mocap_pos, mocap_quat) that kinematics reads
in place of the body's pos and quat; everything downstream follows. The model below has
both uses robots make of them: a teleoperation target welded to a free body (as Fetch's
gripper is), with a pendulum hanging from the target, and a moving platform a ball rests
on. Each env gets its own mocap poses; after N steps qpos, qvel, xpos, xquat and the
contacts must match mujoco's MjData given the same poses to 1e-12 relative (both solvers
run to convergence; observed errors are printed by -s, ~1e-15).
"""

import mujoco
import numpy as np
import pytest
from oracle import model_from_mujoco, rel_err

from taigym import physics
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.errors import WorldError

# the staged schedule compiles kernels of its own for this model: the slow tier runs it
STAGED = pytest.param("staged", marks=pytest.mark.slow)

TOL = 1e-12
NSTEP = 40

MOCAP = """<mujoco model="mocap">
  <option timestep="0.002" tolerance="1e-15" iterations="100"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="target" mocap="true" pos="0.3 0 0.8" euler="0 0 30">
      <geom name="marker" type="sphere" size="0.02" contype="0" conaffinity="0"/>
      <body name="pendulum" pos="0 0.1 0">
        <joint name="swing" axis="1 0 0" damping="0.01"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/>
      </body>
    </body>
    <body name="gripper" pos="0.3 0 0.8" euler="0 0 30">
      <freejoint/>
      <geom type="box" size="0.03 0.04 0.05" contype="0" conaffinity="0"/>
    </body>
    <body name="platform" mocap="true" pos="-0.3 0 0.2">
      <geom name="platform" type="box" size="0.2 0.2 0.02"/>
      <body name="lip" pos="0.19 0 0.03">
        <geom name="lip" type="box" size="0.01 0.2 0.01"/>
      </body>
    </body>
    <body name="ball" pos="-0.3 0 0.27">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.05"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="gripper" body2="target" solref="0.02 1"/>
  </equality>
</mujoco>"""


def _poses(nenv, rng):
    """Per-env mocap poses near the model's: the target moved and turned, the platform
    lowered, shifted and tilted a little (the ball then rolls on it, against the lip)."""
    pos = np.zeros((nenv, 2, 3))
    quat = np.zeros((nenv, 2, 4))
    for e in range(nenv):
        pos[e, 0] = np.array([0.3, 0.0, 0.8]) + rng.uniform(-0.05, 0.05, 3)
        pos[e, 1] = np.array([-0.3, 0.0, 0.2]) + rng.uniform((-0.02, -0.02, -0.03), (0.02, 0.02, 0.0))
        for k, spread in ((0, 0.3), (1, 0.1)):
            q = np.array([1.0, *rng.uniform(-spread, spread, 3)])
            quat[e, k] = q * rng.uniform(0.5, 2.0)  # not normalized: kinematics normalizes a copy
    return pos, quat


def _mujoco_rollout(mjm, pos, quat, nstep):
    d = mujoco.MjData(mjm)
    d.mocap_pos[:], d.mocap_quat[:] = pos, quat
    for _ in range(nstep):
        mujoco.mj_step(mjm, d)
    mujoco.mj_forward(mjm, d)  # the World's get() after step: the last forward's state
    return d


def test_mocap_model_matches_mujoco():
    mjm = mujoco.MjModel.from_xml_string(MOCAP)
    model = load_mjcf_string(MOCAP)
    assert model.nmocap == mjm.nmocap == 2
    np.testing.assert_array_equal(model.body_mocapid, mjm.body_mocapid)
    np.testing.assert_array_equal(model.body_weldid, mjm.body_weldid)
    np.testing.assert_array_equal(model.body_rootid, mjm.body_rootid)
    # model_from_mujoco's route (ModelBuilder) gives the same compiled mocap arrays
    rebuilt = model_from_mujoco(mjm)
    np.testing.assert_array_equal(rebuilt.body_mocapid, mjm.body_mocapid)
    np.testing.assert_array_equal(rebuilt.body_weldid, mjm.body_weldid)


@pytest.mark.parametrize("schedule", ["fused", STAGED])
def test_mocap_rollouts_match_mujoco(schedule, device):
    nenv = 4
    mjm = mujoco.MjModel.from_xml_string(MOCAP)
    world = physics.World(load_mjcf_string(MOCAP), num_envs=nenv, device=device, precision="float64",
                          schedule=schedule)
    pos, quat = _poses(nenv, np.random.default_rng(3))
    world.set_mocap(pos=pos, quat=quat)
    np.testing.assert_array_equal(world.get("mocap_pos"), pos)
    np.testing.assert_array_equal(world.get("mocap_quat"), quat)  # kept as given
    world.step(NSTEP)
    world.forward()
    contacts = world.contacts()
    errors = {}
    for e in range(nenv):
        d = _mujoco_rollout(mjm, pos[e], quat[e], NSTEP)
        assert d.ncon > 0 and contacts["ncon"][e] == d.ncon, (e, contacts["ncon"][e], d.ncon)
        for key in ("qpos", "qvel", "xpos", "xquat"):
            errors[key] = max(errors.get(key, 0.0), rel_err(world.get(key)[e], getattr(d, key)))
        # contacts as sets of geom pairs; each pair's distance, point and normal
        ours = {tuple(contacts["geom"][e, i]): i for i in range(d.ncon)}
        assert set(ours) == {tuple(c.geom) for c in d.contact}, e
        for c in d.contact:
            i = ours[tuple(c.geom)]
            errors["contact"] = max(errors.get("contact", 0.0), rel_err(contacts["dist"][e, i], c.dist),
                                    rel_err(contacts["pos"][e, i], c.pos),
                                    rel_err(contacts["frame"][e, i].ravel(), c.frame))
    print(f"mocap rollout ({schedule}) max relative errors:", {k: f"{v:.1e}" for k, v in errors.items()})
    assert max(errors.values()) <= TOL, errors
    # the mocap bodies are where their envs put them, the quaternions normalized
    xquat = world.get("xquat")[:, mjm.body_mocapid >= 0]
    np.testing.assert_allclose(world.get("xpos")[:, mjm.body_mocapid >= 0], pos, rtol=0, atol=1e-15)
    np.testing.assert_allclose(xquat, quat / np.linalg.norm(quat, axis=-1, keepdims=True), rtol=0, atol=1e-15)


def test_reset_restores_mocap_poses(device):
    model = load_mjcf_string(MOCAP)
    world = physics.World(model, num_envs=3, device=device, precision="float64")
    home_pos = np.array([[0.3, 0, 0.8], [-0.3, 0, 0.2]])
    home_quat = model.body_quat[model.body_mocapid >= 0]
    np.testing.assert_allclose(world.get("mocap_pos"), np.broadcast_to(home_pos, (3, 2, 3)), atol=1e-15)
    np.testing.assert_allclose(world.get("mocap_quat"), np.broadcast_to(home_quat, (3, 2, 4)), atol=1e-15)
    pos, quat = _poses(3, np.random.default_rng(0))
    world.set_mocap(pos=pos, quat=quat)
    world.set_mocap(pos=home_pos + 1.0, env_ids=[1])  # one env's positions alone
    assert np.array_equal(world.get("mocap_pos")[1], home_pos + 1.0)
    assert np.array_equal(world.get("mocap_quat")[1], quat[1])
    world.reset(env_ids=[0])
    np.testing.assert_allclose(world.get("mocap_pos")[0], home_pos, atol=1e-15)
    np.testing.assert_allclose(world.get("mocap_quat")[0], home_quat, atol=1e-15)
    assert np.array_equal(world.get("mocap_pos")[2], pos[2])  # the others keep theirs
    world.reset()
    np.testing.assert_allclose(world.get("mocap_pos"), np.broadcast_to(home_pos, (3, 2, 3)), atol=1e-15)
    world.forward()
    np.testing.assert_allclose(world.get("xpos")[:, model.body_mocapid >= 0], np.broadcast_to(home_pos, (3, 2, 3)),
                               atol=1e-15)


def test_set_mocap_validates_its_input(device):
    world = physics.World(load_mjcf_string(MOCAP), num_envs=2, device=device, precision="float64")
    with pytest.raises(WorldError, match=r"mocap_pos must have shape \(2, 2, 3\) or \(2, 3\), got \(2, 3, 3\)"):
        world.set_mocap(pos=np.zeros((2, 3, 3)))
    with pytest.raises(WorldError, match=r"mocap_quat must have shape \(1, 2, 4\) or \(2, 4\), got \(2, 2, 4\)"):
        world.set_mocap(quat=np.ones((2, 2, 4)), env_ids=[0])
    bad = np.zeros((2, 2, 3))
    bad[1, 0, 2] = np.nan
    with pytest.raises(WorldError, match="mocap_pos has non-finite values in rows \\[1\\]"):
        world.set_mocap(pos=bad)
    with pytest.raises(WorldError, match="env_ids must be in"):
        world.set_mocap(pos=np.zeros((2, 3)), env_ids=[2])
    np.testing.assert_allclose(world.get("mocap_pos")[:, 0], [[0.3, 0, 0.8]] * 2)  # refused: nothing written
    world.set_mocap(pos=np.ones((2, 3)))  # one pose set for every env
    assert np.array_equal(world.get("mocap_pos"), np.ones((2, 2, 3)))
    # a model without mocap bodies: empty arrays
    plain = physics.World(load_mjcf_string("<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body>"
                                           "</worldbody></mujoco>"), num_envs=2, device=device, precision="float64")
    assert plain.get("mocap_pos").shape == (2, 0, 3) and plain.get("mocap_quat").shape == (2, 0, 4)
    plain.set_mocap(pos=np.zeros((2, 0, 3)))


@pytest.mark.parametrize("device_kernels", [False, True])
def test_set_mocap_takes_torch_tensors(device, device_kernels):
    # a tensor on the World's device is written there (by a kernel on CUDA; forced on CPU
    # too), and gives the same frames as the same numpy input
    torch = pytest.importorskip("torch")
    from taigym.physics.runtime.device_io import torch_device

    model = load_mjcf_string(MOCAP)
    a = physics.World(model, num_envs=3, device=device, precision="float64")
    b = physics.World(model, num_envs=3, device=device, precision="float64")
    a._device_tensors = device_kernels or a._device_tensors
    pos, quat = _poses(3, np.random.default_rng(5))
    a.set_mocap(pos=torch.as_tensor(pos[1:], device=torch_device(device)),
                quat=torch.as_tensor(quat[1:], device=torch_device(device)), env_ids=[1, 2])
    b.set_mocap(pos=pos[1:], quat=quat[1:], env_ids=[1, 2])
    a.forward()
    b.forward()
    for key in ("mocap_pos", "mocap_quat", "xpos", "xquat"):
        np.testing.assert_array_equal(a.get(key), b.get(key), err_msg=key)
    assert np.array_equal(a.get("mocap_pos")[1:], pos[1:]) and np.array_equal(a.get("mocap_quat")[1:], quat[1:])


@pytest.mark.parametrize("xml, match", [
    ("<body name='a' pos='0 0 1'><freejoint/><geom size='0.1'/><body name='m' mocap='true'><geom size='0.1'/>"
     "</body></body>", r"<body 'm'> attribute 'mocap': a mocap body must be a child of the world body"),
    ("<body name='m' mocap='true'><joint name='j'/><geom size='0.1'/></body>",
     r"<joint 'j'>: mocap body 'm' cannot have joints"),
    ("<body name='m' mocap='true'><freejoint/><geom size='0.1'/></body>", r"<freejoint>: mocap body 'm' cannot have joints"),
    ("<body name='m' mocap='yes'><geom size='0.1'/></body>", r"<body 'm'> attribute 'mocap': expected one of true, false"),
])
def test_misplaced_mocap_bodies_are_refused(xml, match):
    text = f"<mujoco><worldbody>{xml}</worldbody></mujoco>"
    with pytest.raises(ValueError):  # mujoco refuses them too
        mujoco.MjModel.from_xml_string(text)
    with pytest.raises(ModelError, match=match) as err:
        load_mjcf_string(text)
    assert "\n" not in str(err.value)


def test_builder_refuses_misplaced_mocap_bodies():
    b = physics.ModelBuilder()
    arm = b.add_body(0, name="arm")
    with pytest.raises(ModelError, match="a mocap body must be a child of the world body"):
        b.add_body(arm, name="m", mocap=True)
    m = b.add_body(0, name="m", mocap=True)
    with pytest.raises(ModelError, match="mocap body 'm' cannot have joints"):
        b.add_joint_revolute(m)


KEYED = MOCAP.replace("</equality>", """</equality>
  <actuator>
    <general name="swing" joint="swing" dyntype="integrator" gainprm="0.05" actlimited="true" actrange="-1 1"/>
  </actuator>
  <keyframe>
    <key name="home"/>
    <key name="reach" qpos="0.4 0.31 0.02 0.81 1 0 0 0 -0.3 0 0.27 1 0 0 0" ctrl="0.5" act="0.2"
         mpos="0.35 0.05 0.75 -0.3 0 0.18" mquat="1 0 0 0.3 1 0.05 0 0"/>
  </keyframe>""")


@pytest.mark.parametrize("key", ["reach", 1, "home"])
def test_reset_to_a_keyframe_matches_mujocos(key, device):
    """World.reset(key=...) as MuJoCo's mj_resetDataKeyframe: the keyframe's qpos, qvel,
    ctrl, activations and mocap poses, then the same rollout."""
    mjm = mujoco.MjModel.from_xml_string(KEYED)
    world = physics.World(load_mjcf_string(KEYED), num_envs=2, device=device, precision="float64")
    world.step(5)  # somewhere else first
    world.reset(key=key)
    d = mujoco.MjData(mjm)
    mujoco.mj_resetDataKeyframe(mjm, d, key if isinstance(key, int) else mjm.key(key).id)
    np.testing.assert_allclose(world.get("mocap_pos"), np.broadcast_to(d.mocap_pos, (2, 2, 3)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(world.get("ctrl"), np.broadcast_to(d.ctrl, (2, 1)), rtol=0, atol=1e-15)
    world.step(NSTEP)
    world.forward()
    for _ in range(NSTEP):
        mujoco.mj_step(mjm, d)
    mujoco.mj_forward(mjm, d)
    for name in ("qpos", "qvel", "act"):
        for e in range(2):
            assert rel_err(world.get(name)[e], getattr(d, name)) <= TOL, (name, e)


def test_reset_to_an_unknown_keyframe_names_the_models(device):
    world = physics.World(load_mjcf_string(KEYED), num_envs=1, device=device)
    with pytest.raises(WorldError, match=r"no keyframe named 'away'.*'home', 'reach'"):
        world.reset(key="away")
    with pytest.raises(WorldError, match=r"index in 0\.\.1, got 2"):
        world.reset(key=2)
