"""Gravity compensation (``<body gravcomp>``, ``<joint actuatorgravcomp>``) against mujoco 4 in
float64: an upward force of a fraction of each body's weight at its centre of mass, passive
unless its joint routes it through the actuators and their force clamp."""

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics import World
from taigym.physics.compiler.mjcf import load_mjcf_string

# an arm with gravcomp below, at and above 1 on hinges and a ball, one hinge routing it
# through its clamped actuators, and a free body held up by half its weight
ARM = """<mujoco><option timestep="0.002">{flag}</option><worldbody><geom type="plane" size="2 2 .1"/>
  <body name="base" pos="0 0 .5" gravcomp="1"><joint name="j0" type="hinge" axis="0 0 1"/>
    <geom type="capsule" size=".04" fromto="0 0 0 .2 0 0"/>
    <body name="l1" pos=".2 0 0" gravcomp="0.7">
      <joint name="j1" type="hinge" axis="0 1 0" actuatorgravcomp="true" actuatorfrcrange="-1 1"/>
      <geom type="capsule" size=".03" fromto="0 0 0 .25 0 0"/>
      <body name="l2" pos=".25 0 0" gravcomp="1.2"><joint name="j2" type="ball"/>
        <geom type="box" size=".05 .04 .03" pos=".05 0 0"/></body></body></body>
  <body name="f" pos=".5 .3 .3" gravcomp="0.5"><freejoint/><geom type="sphere" size=".05"/></body>
</worldbody><actuator><motor joint="j1" gear="1"/></actuator></mujoco>"""


@pytest.mark.parametrize("flag", ["", '<flag gravity="disable"/>', '<flag actuation="disable"/>'],
                         ids=["gravity", "no-gravity", "no-actuation"])
def test_gravity_compensation_follows_mujoco(flag, device):
    """300 steps of random controls: qpos to 1e-12 (measured 2e-15), and the passive,
    actuator and gravity-compensation forces of the last state to 1e-12."""
    xml = ARM.format(flag=flag)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    model = load_mjcf_string(xml)
    np.testing.assert_array_equal(model.body_gravcomp, mjm.body_gravcomp)
    np.testing.assert_array_equal(model.jnt_actgravcomp, mjm.jnt_actgravcomp)
    world = World(model, 1, device=device, precision="float64")
    rng = np.random.default_rng(0)
    for _ in range(300):
        d.ctrl[:] = rng.uniform(-1, 1, mjm.nu)
        world.set_ctrl(d.ctrl[None])
        mujoco.mj_step(mjm, d)
        world.step()
    np.testing.assert_allclose(world.get("qpos")[0], d.qpos, rtol=0, atol=1e-12)
    mujoco.mj_forward(mjm, d)
    world.set_state(qpos=d.qpos[None], qvel=d.qvel[None])
    world.forward()
    for name in ("qfrc_passive", "qfrc_actuator", "qfrc_gravcomp"):
        np.testing.assert_allclose(world.get(name)[0], getattr(d, name), rtol=0, atol=1e-12, err_msg=name)
    if not flag:  # the compensation did act: on the arm and through the clamped actuator
        assert np.abs(d.qfrc_gravcomp).max() > 1 and abs(d.qfrc_actuator[1]) == 1


def test_a_body_fully_compensated_floats(device):
    """gravcomp 1 on a free body: it stays where it was put, as MuJoCo's does."""
    xml = '<mujoco><worldbody><body pos="0 0 1" gravcomp="1"><freejoint/><geom size=".1"/></body></worldbody></mujoco>'
    world = World(load_mjcf_string(xml), 1, device=device, precision="float64")
    world.step(500)
    np.testing.assert_allclose(world.get("qpos")[0, :3], [0, 0, 1], atol=1e-12)
