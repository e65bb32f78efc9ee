"""Spatial tendons against mujoco (float64): paths through sites, wrapping around spheres
and cylinders (with and without side sites, one inside its sphere), pulleys, and what acts
through them: springs and dampers, friction loss, limits, actuators and a tendon equality;
then dm_control's ball_in_cup, whose string is one.

Lengths and velocities are the same arithmetic as MuJoCo's: they agree to round-off
(1e-12). So do the Jacobians (and the velocities J qvel), but for a side site inside its
sphere, whose touch point is the root of an equation both engines iterate towards apart
(within 1e-10 rad): 1e-10.
Accelerations go through both engines' Newton solvers: 1e-9 relative.
"""

import os
import re

import mujoco
import numpy as np
import pytest
from oracle import model_from_mujoco, rel_err
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.model import WRAP_CYLINDER, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE

from taigym import physics

# the staged schedule compiles kernels of its own for this model: the slow tier runs it
STAGED = pytest.param("staged", marks=pytest.mark.slow)

ARM = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <site name="anchor" pos="0 0 0.3"/>
    <site name="side0" pos="-0.2 0 0.1"/>
    <body name="upper">
      <joint name="shoulder" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03"/>
      <geom name="elbow_wrap" type="cylinder" pos="0.4 0 0" zaxis="0 1 0" size="0.05 0.04" contype="0"
            conaffinity="0"/>
      <site name="upper_a" pos="0.1 0 0.06"/>
      <site name="upper_b" pos="0.3 0 0.07"/>
      <site name="upper_c" pos="0.2 0.02 -0.06"/>
      <site name="elbow_side" pos="0.4 0 0.1"/>
      <body name="fore" pos="0.4 0 0">
        <joint name="elbow" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.35 0 0" size="0.025"/>
        <geom name="ball" type="sphere" pos="0.2 0 0" size="0.04" contype="0" conaffinity="0"/>
        <site name="fore_a" pos="0.1 0 0.05"/>
        <site name="fore_b" pos="0.3 0 -0.03"/>
        <site name="fore_c" pos="0.33 0 0.02"/>
        <site name="ball_core" pos="0.2 0.01 -0.02"/>
        <body name="hand" pos="0.35 0 0">
          <joint name="wrist" type="ball" damping="0.05"/>
          <geom type="box" size="0.05 0.03 0.02" pos="0.05 0 0"/>
          <site name="hand_a" pos="0.08 0.01 0.03"/>
          <site name="hand_b" pos="0.08 -0.01 -0.04"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="flexor" stiffness="20" damping="0.5" springlength="0.6" limited="true" range="0.3 0.95">
      <site site="anchor"/>
      <site site="upper_a"/>
      <site site="upper_b"/>
      <geom geom="elbow_wrap" sidesite="elbow_side"/>
      <site site="fore_a"/>
      <geom geom="ball"/>
      <site site="fore_c"/>
      <site site="hand_a"/>
    </spatial>
    <spatial name="pulleyed" frictionloss="0.05" damping="0.2">
      <site site="upper_a"/>
      <geom geom="elbow_wrap"/>
      <site site="fore_b"/>
      <pulley divisor="2"/>
      <site site="side0"/>
      <site site="fore_a"/>
      <pulley divisor="3"/>
      <site site="upper_b"/>
      <site site="hand_a"/>
    </spatial>
    <spatial name="inside" stiffness="5">
      <site site="upper_c"/>
      <geom geom="ball" sidesite="ball_core"/>
      <site site="hand_b"/>
    </spatial>
    <fixed name="fixed">
      <joint joint="shoulder" coef="0.5"/>
      <joint joint="elbow" coef="-0.3"/>
    </fixed>
  </tendon>
  <equality>
    <tendon tendon1="inside" tendon2="fixed" polycoef="0 0.2 0 0 0" solref="0.05 1"/>
  </equality>
  <actuator>
    <motor tendon="flexor" gear="2" ctrlrange="-5 5" ctrllimited="true"/>
    <position tendon="pulleyed" kp="30"/>
  </actuator>
</mujoco>"""


# the arm without the tendon whose side site is inside its sphere, the equality moved to
# another: every step the same arithmetic as MuJoCo's
OUTSIDE = re.sub(r'<spatial name="inside".*?</spatial>', "", ARM, flags=re.S).replace('tendon1="inside"',
                                                                                      'tendon1="pulleyed"')


def _ball_in_cup():
    import dm_control.suite

    return os.path.join(os.path.dirname(dm_control.suite.__file__), "ball_in_cup.xml")


def _dense_ten_J(mjm, d):
    out = np.zeros((mjm.ntendon, mjm.nv))
    mujoco.mju_sparse2dense(out, d.ten_J, mjm.ten_J_rownnz, mjm.ten_J_rowadr, mjm.ten_J_colind)
    return out


def _random_states(mjm, rng, n, scale=0.6):
    states = []
    for _ in range(n):
        d = mujoco.MjData(mjm)
        d.qpos[:] = mjm.qpos0 + rng.normal(scale=scale, size=mjm.nq)
        mujoco.mj_normalizeQuat(mjm, d.qpos)
        states.append((d.qpos.copy(), rng.normal(size=mjm.nv), rng.uniform(-3, 3, size=mjm.nu)))
    return states


def test_compiled_paths_match_mujoco():
    """The wrap list, lengths at qpos0, the springs' rest lengths and invweight0."""
    mjm = mujoco.MjModel.from_xml_string(ARM)
    model = load_mjcf_string(ARM)
    np.testing.assert_array_equal(model.wrap_type, mjm.wrap_type)
    np.testing.assert_array_equal(model.wrap_objid, mjm.wrap_objid)
    np.testing.assert_array_equal(model.wrap_prm, mjm.wrap_prm)
    assert {WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER, WRAP_PULLEY} <= set(model.wrap_type.tolist())
    np.testing.assert_allclose(model.tendon_length0, mjm.tendon_length0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.tendon_lengthspring, mjm.tendon_lengthspring, rtol=0, atol=1e-12)
    # the inside wrap's touch point is a root that the two engines solve for apart: 1e-10
    np.testing.assert_allclose(model.tendon_invweight0, mjm.tendon_invweight0, rtol=1e-10)


def test_rebuilt_from_mujoco_through_the_builder():
    """tests/oracle.py's model_from_mujoco carries spatial tendons over, sites and all."""
    mjm = mujoco.MjModel.from_xml_string(ARM)
    model = model_from_mujoco(mjm)
    np.testing.assert_array_equal(model.wrap_type, mjm.wrap_type)
    np.testing.assert_array_equal(model.wrap_objid, mjm.wrap_objid)
    np.testing.assert_array_equal(model.wrap_prm, mjm.wrap_prm)
    np.testing.assert_allclose(model.tendon_length0, mjm.tendon_length0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("schedule", ["fused", STAGED])
def test_lengths_jacobians_and_forces_match_mujoco(schedule, device):
    """At random states: every tendon's length, velocity and Jacobian (ten_J), the
    actuators' lengths and forces, the passive and actuator forces, the constraint rows
    and qacc."""
    mjm = mujoco.MjModel.from_xml_string(ARM)
    states = _random_states(mjm, np.random.default_rng(0), 6)
    world = physics.World(load_mjcf_string(ARM), num_envs=len(states), device=device, precision="float64",
                          schedule=schedule)
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.set_ctrl(np.array([s[2] for s in states]))
    world.forward()
    wrapped = 0
    for e, (qpos, qvel, ctrl) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(mjm, d)
        wrapped += int(np.count_nonzero(d.wrap_obj[: d.ten_wrapnum.sum()] >= 0))
        np.testing.assert_allclose(world.get("ten_length")[e], d.ten_length, rtol=0, atol=1e-12)
        np.testing.assert_allclose(world.get("ten_velocity")[e], d.ten_velocity, rtol=0, atol=1e-10)
        np.testing.assert_allclose(world.get("ten_J")[e], _dense_ten_J(mjm, d), rtol=0, atol=1e-10)
        np.testing.assert_allclose(world.get("actuator_length")[e], d.actuator_length, rtol=0, atol=1e-12)
        np.testing.assert_allclose(world.get("actuator_force")[e], d.actuator_force, rtol=0, atol=1e-10)
        assert rel_err(world.get("qfrc_passive")[e], d.qfrc_passive) <= 1e-10
        assert rel_err(world.get("qfrc_actuator")[e], d.qfrc_actuator) <= 1e-10
        assert world.get("nefc")[e] == d.nefc
        assert rel_err(world.get("qacc")[e], d.qacc) <= 1e-9
    assert wrapped > 0  # the geoms were wrapped around, not only passed by


def test_single_precision_paths(device):
    """float32: every wrap's length and Jacobian to single precision, the inside wrap's root
    included (its residual is noisier than double precision's stop), and a swing's 50 steps."""
    mjm = mujoco.MjModel.from_xml_string(ARM)
    states = [(mjm.qpos0, np.zeros(mjm.nv), None)] + _random_states(mjm, np.random.default_rng(0), 6)
    world = physics.World(load_mjcf_string(ARM), num_envs=len(states), device=device, precision="float32")
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    for e, (qpos, qvel, _) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, d)
        np.testing.assert_allclose(world.get("ten_length")[e], d.ten_length, rtol=0, atol=1e-6)
        np.testing.assert_allclose(world.get("ten_J")[e], _dense_ten_J(mjm, d), rtol=0, atol=1e-5)
    # 50 steps of the swing: single precision's round-off, grown (measured 4e-5)
    d = mujoco.MjData(mjm)
    d.qvel[:] = (2.0, -3.0, 1.0, -0.5, 0.7)
    world = physics.World(load_mjcf_string(ARM), num_envs=1, device=device, precision="float32")
    world.set_state(qvel=d.qvel[None])
    rng = np.random.default_rng(7)
    for _ in range(50):
        ctrl = rng.uniform(-5, 5, size=mjm.nu)
        d.ctrl[:] = ctrl
        world.set_ctrl(ctrl[None])
        mujoco.mj_step(mjm, d)
        world.step()
    assert rel_err(world.get("qvel")[0], d.qvel) <= 1e-3


@pytest.mark.parametrize("schedule", ["fused", STAGED])
@pytest.mark.parametrize("xml, tol", [(OUTSIDE, 1e-9), (ARM, 1e-8)], ids=["outside", "inside"])
def test_trajectory_matches_mujoco(xml, tol, schedule, device):
    """300 steps under random controls from a swing: the tendons' limit, friction loss,
    springs, actuators and equality all at work. Measured: 1e-14 without the inside wrap,
    2e-9 with it (its touch point's 1e-11, grown)."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    d.qvel[:] = (2.0, -3.0, 1.0, -0.5, 0.7)
    world = physics.World(load_mjcf_string(xml), num_envs=1, device=device, precision="float64", schedule=schedule)
    world.set_state(qvel=d.qvel[None])
    rng = np.random.default_rng(7)
    rows = set()
    for _ in range(300):
        ctrl = rng.uniform(-5, 5, size=mjm.nu)
        d.ctrl[:] = ctrl
        world.set_ctrl(ctrl[None])
        mujoco.mj_step(mjm, d)
        world.step()
        rows.update(d.efc_type.tolist())
    assert {mujoco.mjtConstraint.mjCNSTR_FRICTION_TENDON, mujoco.mjtConstraint.mjCNSTR_EQUALITY} <= rows
    assert rel_err(world.get("qpos")[0], d.qpos) <= tol
    assert rel_err(world.get("qvel")[0], d.qvel) <= tol
    np.testing.assert_allclose(world.get("ten_length")[0], d.ten_length, rtol=0, atol=tol)


def test_ball_in_cup_matches_mujoco(device):
    """dm_control's ball_in_cup loads strict; 600 steps under random controls follow
    mujoco's, the string's limit taut for most of them."""
    path = _ball_in_cup()
    mjm = mujoco.MjModel.from_xml_path(path)
    model = physics.load_model(path)
    assert model.tendon_length0[0] == pytest.approx(mjm.tendon_length0[0], abs=1e-12)
    d = mujoco.MjData(mjm)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qpos=d.qpos[None], qvel=d.qvel[None])
    rng = np.random.default_rng(1)
    taut = 0
    for _ in range(600):
        ctrl = rng.uniform(-1, 1, size=mjm.nu)
        d.ctrl[:] = ctrl
        world.set_ctrl(ctrl[None])
        mujoco.mj_step(mjm, d)
        world.step()
        taut += d.nefc > 0
    assert taut > 300
    assert rel_err(world.get("qpos")[0], d.qpos) <= 1e-9
    assert rel_err(world.get("qvel")[0], d.qvel) <= 1e-9
    np.testing.assert_allclose(world.get("ten_length")[0], d.ten_length, rtol=0, atol=1e-12)
    np.testing.assert_allclose(world.get("ten_velocity")[0], d.ten_velocity, rtol=0, atol=1e-12)


def test_builder_spatial_tendon_matches_mjcf():
    """ModelBuilder.add_tendon_spatial builds the path MJCF's <spatial> does."""
    b = physics.ModelBuilder()
    arm = b.add_body(0, name="arm", mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_revolute(arm, axis=(0, 1, 0), name="h")
    b.add_site(0, pos=(0, 0, 0.3), name="top")
    b.add_site(arm, pos=(0.4, 0, 0.05), name="tip")
    b.add_site(arm, pos=(0.2, 0, 0.2), name="side")
    b.add_geom(arm, "sphere", size=(0.05, 0, 0), pos=(0.2, 0, 0.1), name="knob", mass=0.0)
    t = b.add_tendon_spatial([("site", "top"), ("geom", "knob", "side"), ("site", "tip")], name="cord",
                             stiffness=3.0)
    model = b.finalize()
    assert t == 0 and model.wrap_type.tolist() == [WRAP_SITE, WRAP_SPHERE, WRAP_SITE]
    assert model.wrap_prm[1] == 2.0  # the side site's id
    assert model.tendon_lengthspring[0, 0] == model.tendon_length0[0] > 0


@pytest.mark.parametrize("path, message", [
    ([("site", "top")], "at least two"),
    ([("site", "top"), ("geom", "knob")], "between two sites"),
    ([("site", "top"), ("geom", "knob"), ("site", "top"), ("pulley", 2.0)], "followed by a branch"),
    ([("pulley", 2.0), ("site", "top")], "neighbour that is not a pulley"),
    ([("site", "top"), ("pulley", 0.0), ("site", "top")], "positive divisor"),
    ([("site", "top"), ("geom", "box"), ("site", "top")], "sphere or cylinder"),
])
def test_builder_refuses_bad_paths(path, message):
    b = physics.ModelBuilder()
    body = b.add_body(0, mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_revolute(body, axis=(0, 1, 0))
    b.add_site(0, name="top")
    b.add_geom(body, "sphere", size=(0.05, 0, 0), name="knob")
    b.add_geom(body, "box", size=(0.05, 0.05, 0.05), name="box")
    with pytest.raises(ModelError, match=message):
        b.add_tendon_spatial(path)
        b.finalize()


def test_mjcf_refuses_what_is_not_done():
    """Tendon armature stays refused, one line naming the line, element and attribute."""
    xml = ARM.replace('<spatial name="inside" stiffness="5">', '<spatial name="inside" stiffness="5" armature="1">')
    with pytest.raises(ModelError) as err:
        load_mjcf_string(xml)
    line = xml[: xml.index('armature="1"')].count("\n") + 1
    assert str(err.value).startswith(f"<string>:{line} <spatial 'inside'> attribute 'armature'")
    assert "\n" not in str(err.value)
