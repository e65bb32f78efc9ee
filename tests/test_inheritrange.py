"""Servos whose ctrlrange (intvelocity: actrange) is inherited from their joint's or
tendon's range (MuJoCo's inheritrange), compiled as MuJoCo compiles them."""

import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string

MODEL = """<mujoco><compiler angle="degree"/>
<worldbody><body><joint name="a" axis="0 1 0" range="-30 90"/><geom size="0.1"/>
  <body pos="0.3 0 0"><joint name="s" type="slide" range="-0.1 0.3"/><geom size="0.1"/></body></body></worldbody>
<tendon><fixed name="t" range="-0.2 0.4"><joint joint="a" coef="1"/></fixed></tendon>
<actuator>
  <position joint="a" kp="10" inheritrange="1"/>
  <position joint="s" kp="10" inheritrange="0.5"/>
  <position tendon="t" kp="10" inheritrange="2"/>
  <intvelocity joint="a" kp="10" inheritrange="1"/>
</actuator></mujoco>"""


def test_inherited_ranges_are_mujocos():
    ours, mj = load_mjcf_string(MODEL), mujoco.MjModel.from_xml_string(MODEL)
    np.testing.assert_allclose(ours.actuator_ctrlrange[:3], mj.actuator_ctrlrange[:3], atol=1e-15)
    np.testing.assert_allclose(ours.actuator_actrange[3], mj.actuator_actrange[3], atol=1e-15)
    assert ours.actuator_ctrllimited[:3].tolist() == mj.actuator_ctrllimited[:3].tolist() == [1, 1, 1]


@pytest.mark.parametrize("change, words", [
    ('kp="10" inheritrange="1"/>', "ctrlrange and inheritrange"),
    ('<joint name="a" axis="0 1 0" range="-30 90"/>', "has no range"),
])
def test_inheritrange_errors_name_the_attribute(change, words):
    text = {"ctrlrange and inheritrange": MODEL.replace(change, 'kp="10" inheritrange="1" ctrlrange="0 1"/>', 1),
            "has no range": MODEL.replace(change, '<joint name="a" axis="0 1 0"/>')}[words]
    with pytest.raises(ModelError, match=words) as info:
        load_mjcf_string(text)
    assert info.value.attribute == "inheritrange"
