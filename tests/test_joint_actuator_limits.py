"""A joint's actuatorfrcrange: the sum of its actuators' forces clamped, as MuJoCo clamps
qfrc_actuator after every transmission has added its part (robot models set it where a
motor's torque is the limit, whatever drives it)."""

import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError, World
from taigym.physics.compiler.mjcf import load_mjcf_string

MODEL = """<mujoco><compiler autolimits="true"/>
<worldbody>
  <body pos="0 0 1"><joint name="hip" axis="0 1 0" damping="0.1" actuatorfrcrange="-2 1.5"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
    <body pos="0.3 0 0"><joint name="knee" axis="0 1 0" actuatorfrcrange="-1 1" actuatorfrclimited="false"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body pos="0.3 0 0"><joint name="slide" type="slide" axis="1 0 0" range="-0.1 0.1" actuatorfrcrange="-3 3"/>
        <geom type="box" size="0.03 0.03 0.03"/></body></body></body>
</worldbody>
<tendon><fixed name="t"><joint joint="hip" coef="1"/><joint joint="knee" coef="-0.5"/></fixed></tendon>
<actuator>
  <motor joint="hip" gear="2" ctrlrange="-2 2"/>
  <position joint="hip" kp="20" kv="1"/>
  <motor tendon="t" gear="3" ctrlrange="-1 1"/>
  <motor joint="knee" gear="4" ctrlrange="-1 1"/>
  <position joint="slide" kp="100"/>
</actuator></mujoco>"""


def test_joint_actuator_limits_follow_mujoco(device):
    mjm = mujoco.MjModel.from_xml_string(MODEL)
    d = mujoco.MjData(mjm)
    model = load_mjcf_string(MODEL)
    assert model.jnt_actfrclimited.tolist() == mjm.jnt_actfrclimited.tolist() == [1, 0, 1]
    world = World(model, 1, device=device, precision="float64")
    rng = np.random.default_rng(0)
    clamped = 0
    for _ in range(200):
        u = rng.uniform(-1, 1, mjm.nu) * [2, 1, 1, 1, 0.1]
        d.ctrl[:] = u
        world.set_ctrl(u[None])
        mujoco.mj_step(mjm, d)
        world.step()
        np.testing.assert_allclose(world.get("qfrc_actuator")[0], d.qfrc_actuator, rtol=1e-9, atol=1e-9)
        clamped += int(abs(d.qfrc_actuator[0]) in (2.0, 1.5))
    np.testing.assert_allclose(world.get("qpos")[0], d.qpos, atol=1e-9)
    assert clamped > 10  # the hip's limit is met


def test_an_inverted_actuatorfrcrange_is_refused():
    with pytest.raises(ModelError, match="actuatorfrcrange"):
        load_mjcf_string(MODEL.replace('actuatorfrcrange="-2 1.5"', 'actuatorfrcrange="2 -1.5"'))
