"""MuJoCo's contact sensor (``<sensor><contact>``) against mujoco 4 in float64: matching by
geom, body, subtree and site, the reductions (none, mindist, maxforce, netforce), every data
field, and the direction convention (seen from the sensor's first object)."""

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics import ModelError, World
from taigym.physics.compiler.mjcf import load_mjcf_string

SCENE = """<mujoco><option cone="{cone}" timestep="0.005" iterations="200" tolerance="1e-15"/><worldbody>
  <geom name="floor" type="plane" size="2 2 .1"/>
  <body name="a" pos="0 0 .2"><freejoint/><geom name="ga" type="box" size=".1 .08 .05"/>
    <body name="a2" pos=".15 0 0"><joint type="hinge" axis="0 1 0"/>
      <geom name="ga2" type="capsule" size=".03 .06" condim="6"/></body>
    <site name="zone" type="box" size=".3 .3 .2" pos="0 0 -.1"/></body>
  <body name="b" pos=".05 .02 .35"><freejoint/><geom name="gb" type="sphere" size=".07" condim="4"/></body>
  <body name="c" pos="-.2 0 .1"><freejoint/><geom name="gc" type="ellipsoid" size=".05 .06 .04"/></body>
</worldbody><sensor>
  <contact name="all" num="6" data="found force torque dist pos normal tangent"/>
  <contact name="floor_mindist" geom1="floor" num="3" reduce="mindist" data="found dist normal tangent"/>
  <contact name="a_maxforce" subtree1="a" num="4" reduce="maxforce" data="found force torque normal"/>
  <contact name="b_on_a" body1="b" subtree2="a" num="2" data="found force normal linvel angvel"/>
  <contact name="a_on_floor" geom2="floor" body1="a" num="2" data="force normal linvel angvel"/>
  <contact name="in_zone_net" site="zone" reduce="netforce" data="found force torque dist pos normal tangent"/>
  <contact name="in_zone_b" site="zone" body2="b" num="2" data="found normal"/>
  <contact name="c_net" body2="c" reduce="netforce" data="found force torque pos"/>
  <contact name="c_velocity" geom1="gc" num="2" data="linvel angvel"/>
</sensor></mujoco>"""


def test_contact_sensors_compile_as_mujocos():
    xml = SCENE.format(cone="pyramidal")
    ours, mjm = load_mjcf_string(xml), mujoco.MjModel.from_xml_string(xml)
    for key in ("type", "objtype", "objid", "reftype", "refid", "dim", "adr", "needstage"):
        np.testing.assert_array_equal(getattr(ours, f"sensor_{key}"), getattr(mjm, f"sensor_{key}"), err_msg=key)
    np.testing.assert_array_equal(ours.sensor_intprm, mjm.sensor_intprm.reshape(mjm.nsensor, -1)[:, :3])


# the contact forces' agreement, relative to the largest value: pyramidal cones to the
# solvers' rounding (measured 6e-10); the elliptic cones' Newton solves end up 5e-8 apart
@pytest.mark.slow  # the contact sensor's kernel, compiled for this test alone
@pytest.mark.parametrize("cone, tol", [("pyramidal", 1e-9), ("elliptic", 2e-7)])
def test_contact_sensors_read_mujocos_contacts(cone, tol, device):
    """Bodies tumbling onto a floor and onto each other, 150 steps: at each, from
    mujoco's state, every sensor equals mujoco's sensordata to ``tol`` x max(1, the largest
    |value|), with 1 to 8 contacts, empty slots included."""
    xml = SCENE.format(cone=cone)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    world = World(load_mjcf_string(xml), 1, device=device, precision="float64")
    rng = np.random.default_rng(0)
    counts = set()
    for k in range(150):
        if k % 50 == 0:
            d.qvel[:] += rng.normal(size=mjm.nv) * 0.5
        mujoco.mj_step(mjm, d)
        mujoco.mj_forward(mjm, d)
        world.set_state(qpos=d.qpos[None], qvel=d.qvel[None])
        world.forward()
        got = world.get("sensordata")[0]
        scale = max(1.0, float(np.abs(d.sensordata).max()))
        np.testing.assert_allclose(got, d.sensordata, rtol=0, atol=tol * scale, err_msg=f"step {k}")
        counts.add(d.ncon)
    assert min(counts) <= 1 and max(counts) >= 6


@pytest.mark.parametrize("attrs, attribute, message", [
    ('data="force found"', "data", "in the order"),
    ('data="found speed"', "data", "fields among"),
    ('reduce="netforce" data="linvel"', "data", "cannot be combined"),
    ('reduce="most"', "reduce", "reduce must be one of"),
    ('geom1="ga" body1="b"', "body1", "at most one of"),
    ('num="0"', "num", "at least 1"),
])
def test_a_malformed_contact_sensor_is_refused_in_one_line(attrs, attribute, message):
    xml = SCENE.format(cone="pyramidal").replace('<contact name="all" num="6" data="found force torque dist pos '
                                                 'normal tangent"/>', f'<contact name="bad" {attrs}/>')
    with pytest.raises(ModelError) as e:
        load_mjcf_string(xml)
    text = str(e.value)
    assert "\n" not in text and message in text and "contact 'bad'" in text and attribute in text, text
