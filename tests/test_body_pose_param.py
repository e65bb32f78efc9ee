"""Per-env body frames (World.set_param("body_pos"/"body_quat")) against MuJoCo with the
model's body_pos and body_quat changed: body poses, a site on a moved static body, geom_xpos,
and the contacts and accelerations of a moved jointed body."""

import mujoco
import numpy as np
import pytest
from taigym.physics import WorldError
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

# a static target (a ghost sphere and a site), and a pendulum whose arm hangs from a moved hinge
XML = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="target" pos=".4 0 .4">
      <geom name="target" type="sphere" size=".02" contype="0" conaffinity="0"/>
      <site name="target" pos=".01 0 .02"/>
    </body>
    <body name="pole" pos="0 0 .5">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom name="pole" type="capsule" fromto="0 0 0 0 0 -.3" size=".03" mass="1"/>
      <body name="bob" pos="0 0 -.3">
        <geom name="bob" type="sphere" size=".05" mass=".5"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""
TARGET, POLE, BOB = 1, 2, 3
QUATS = [(1.0, 0.0, 0.0, 0.0), (np.cos(0.4), 0.0, np.sin(0.4), 0.0), (np.cos(1.3), 0.0, np.sin(1.3), 0.0)]
# per env: the target and the bob's frame moved; the last lowers the pole so the bob touches the floor
MOVES = [((0.4, 0.0, 0.4), (0.0, 0.0, -0.3), (0.0, 0.0, 0.5)),
         ((-0.3, 0.1, 0.2), (0.05, 0.0, -0.25), (0.0, 0.0, 0.5)),
         ((0.1, 0.0, 0.7), (0.0, 0.0, -0.3), (0.0, 0.0, 0.34))]


def _poses(model):
    pos = np.repeat(np.asarray(model.body_pos, dtype=np.float64)[None], len(MOVES), axis=0)
    quat = np.repeat(np.asarray(model.body_quat, dtype=np.float64)[None], len(MOVES), axis=0)
    for k, (target, bob, pole) in enumerate(MOVES):
        pos[k, TARGET], pos[k, BOB], pos[k, POLE] = target, bob, pole
        quat[k, TARGET] = quat[k, BOB] = QUATS[k]
    return pos, quat


def test_moved_bodies_match_mujoco(device):
    model = load_mjcf_string(XML).with_options(solver="PGS", iterations=3000, tolerance=1e-15)
    world = physics.World(model, num_envs=len(MOVES), device=device, precision="float64")
    pos, quat = _poses(model)
    world.set_param("body_pos", pos)
    world.set_param("body_quat", quat)
    qpos = np.array([[0.3], [-0.2], [0.0]])
    world.set_state(qpos=qpos)
    world.forward()
    for k in range(len(MOVES)):
        mjm = mujoco.MjModel.from_xml_string(XML)
        mjm.opt.solver, mjm.opt.iterations, mjm.opt.tolerance = mujoco.mjtSolver.mjSOL_PGS, 3000, 1e-15
        mjm.body_pos[:], mjm.body_quat[:] = pos[k], quat[k]
        d = mujoco.MjData(mjm)
        d.qpos[:] = qpos[k]
        mujoco.mj_forward(mjm, d)
        np.testing.assert_allclose(world.get("xpos")[k], d.xpos, atol=1e-12)
        np.testing.assert_allclose(world.get("xquat")[k], d.xquat, atol=1e-12)
        np.testing.assert_allclose(world.get("geom_xpos")[k], d.geom_xpos, atol=1e-12)
        xmat = world.get("xmat")[k].reshape(-1, 3, 3)
        site = world.get("xpos")[k, TARGET] + xmat[TARGET] @ mjm.site_pos[0]
        np.testing.assert_allclose(site, d.site_xpos[0], atol=1e-12)
        assert world.contacts()["ncon"][k] == d.ncon
        np.testing.assert_allclose(world.get("qacc")[k], d.qacc, rtol=1e-7, atol=1e-9)
    assert world.contacts()["ncon"][2] > 0  # the lowered pole's bob on the floor
    np.testing.assert_array_equal(world.get_param("body_pos"), pos)
    np.testing.assert_array_equal(world.get_param("body_quat"), quat)


def test_body_quat_must_be_unit(device):
    world = physics.World(load_mjcf_string(XML), num_envs=1, device=device, precision="float64")
    quat = np.asarray(world.model.body_quat, dtype=np.float64)[None].copy()
    quat[0, TARGET] = (2.0, 0.0, 0.0, 0.0)
    with pytest.raises(WorldError, match="body_quat must be unit quaternions"):
        world.set_param("body_quat", quat)


def test_host_body_poses_match_mujoco():
    """physics.compiler.articulation.body_poses: the host's kinematics of one state, as a
    reset term places a thing by another (dm_control's humanoid: a free joint, ball joints
    and hinges)."""
    humanoid = pytest.importorskip("dm_control.suite.humanoid")
    from taigym.physics.compiler.articulation import body_poses

    xml, assets = humanoid.get_model_and_assets()
    mjm = mujoco.MjModel.from_xml_string(xml, assets)
    d = mujoco.MjData(mjm)
    rng = np.random.default_rng(0)
    d.qpos[:] = mjm.qpos0 + rng.uniform(-0.5, 0.5, mjm.nq)
    d.qpos[3:7] /= np.linalg.norm(d.qpos[3:7])
    mujoco.mj_kinematics(mjm, d)
    xpos, xquat = body_poses(load_mjcf_string(xml, assets=assets), d.qpos)
    np.testing.assert_allclose(xpos, d.xpos, atol=1e-12)
    np.testing.assert_allclose(xquat, d.xquat, atol=1e-12)
