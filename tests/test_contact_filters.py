"""MJCF <contact> <pair> and <exclude>: the same contacts as mujoco (float64)."""

import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

SCENE = """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="0.8"/>
    <body name="a" pos="0 0 0.09">
      <freejoint/>
      <geom name="ga" type="sphere" size="0.1" contype="2" conaffinity="2"/>
    </body>
    <body name="b" pos="0.15 0 0.09">
      <freejoint/>
      <geom name="gb" type="box" size="0.08 0.08 0.08"/>
    </body>
    <body name="c" pos="-0.15 0 0.09">
      <freejoint/>
      <geom name="gc" type="capsule" size="0.05 0.1" euler="0 90 0"/>
    </body>
  </worldbody>
  <contact>
    <pair name="ball_floor" geom1="floor" geom2="ga" condim="4" friction="1.5 1.5 0.01"/>
    <pair geom1="ga" geom2="gb"/>
    <exclude body1="a" body2="c"/>
    <exclude body1="b" body2="c"/>
  </contact>
</mujoco>"""


def test_pairs_and_excludes_give_mujocos_contacts(device):
    mjm = mujoco.MjModel.from_xml_string(SCENE)
    d = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, d)
    model = load_mjcf_string(SCENE)
    assert model.pair_name == ["ball_floor", ""] and model.exclude_body1.tolist() == [1, 2]
    np.testing.assert_allclose(model.pair_friction[0], [1.5, 1.5, 0.01, 0.0001, 0.0001])
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.forward()
    ours = world.contacts()
    n = ours["ncon"][0]
    assert n == d.ncon > 0
    key = lambda g, dist: (tuple(sorted(g)), round(float(dist), 9))  # noqa: E731
    theirs = sorted((key(c.geom, c.dist), c.dim, tuple(np.round(c.friction, 12))) for c in d.contact)
    mine = sorted((key(ours["geom"][0, i], ours["dist"][0, i]), int(ours["dim"][0, i]),
                   tuple(np.round(ours["friction"][0, i], 12))) for i in range(n))
    assert mine == theirs


def test_bad_pairs_are_refused():
    base = SCENE.split("<contact>")[0]
    with pytest.raises(ModelError, match="missing geom 'nope'"):
        load_mjcf_string(base + '<contact><pair geom1="ga" geom2="nope"/></contact></mujoco>')
    with pytest.raises(ModelError, match="needs attribute 'body2'") as info:
        load_mjcf_string(base + '<contact><exclude body1="a"/></contact></mujoco>')
    assert info.value.element == "exclude"


def test_a_pair_leaves_out_what_mujocos_defaults_fill():
    """A <pair>'s missing attributes take MuJoCo's pair defaults (and its default class),
    not the two geoms' mix."""
    xml = """<mujoco>
      <default><pair solref="0.05 0.9"/></default>
      <worldbody>
        <geom name="p" type="plane" size="5 5 0.1" margin="0.03" gap="0.01" solref="0.03 1.1" condim="6"
              solimp="0.7 0.96 0.002 0.4 2.5" friction="1.2 0.006 0.0003"/>
        <body pos="0 0 0.12"><freejoint/><geom name="s" size="0.1" margin="0.05" condim="4"/></body>
      </worldbody>
      <contact><pair geom1="p" geom2="s"/><pair geom1="s" geom2="p" friction="0.7" margin="0.01"/></contact>
    </mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml)
    model = load_mjcf_string(xml)
    for name in ("dim", "friction", "solref", "solimp", "margin", "gap"):
        np.testing.assert_allclose(getattr(model, "pair_" + name), getattr(mjm, "pair_" + name), rtol=1e-15,
                                   err_msg=name)
