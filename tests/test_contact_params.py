"""Contact parameters of geom pairs as MuJoCo's mj_contactParam (float64, against mujoco):
the higher-priority geom's condim, friction, solref and solimp outright; at equal priority
the larger condim and frictions, solref and solimp weighed by solmix (direct, negative
solrefs taking the smaller), margins and gaps summed. Contacts are matched by geoms and
distance; their parameters agree to 1e-12 and the accelerations to 1e-9 relative."""

import importlib.util
import os

import mujoco
import numpy as np
import pytest
from oracle import rel_err
from taigym.physics.compiler.mjcf import load_mjcf, load_mjcf_string

from taigym import physics

SCENE = """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.9 0.004 0.0002" solmix="2" margin="0.01"
          gap="0.005"/>
    <body name="a" pos="0 0 0.095">
      <freejoint/>
      <geom name="wins" size="0.1" priority="1" condim="1" friction="0.6 0.01 0.001" solref="0.05 0.8"
            solimp="0.8 0.9 0.002 0.4 3"/>
    </body>
    <body name="b" pos="0.5 0 0.079">
      <freejoint/>
      <geom name="mixed" type="box" size="0.08 0.08 0.08" solmix="0.5" condim="4" friction="0.5 0.02 0.0001"
            solref="0.03 1.2" solimp="0.85 0.92 0.003 0.6 2.5" margin="0.02" gap="0.01"/>
    </body>
    <body name="c" pos="-0.5 0 0.049" euler="0 90 0">
      <freejoint/>
      <geom name="direct" type="capsule" size="0.05 0.1" solmix="0" solref="-2000 -40" condim="6"
            solimp="0.7 0.8 0.01 0.5 2"/>
    </body>
    <body name="d" pos="1 0 0.112">
      <freejoint/>
      <geom name="loses" size="0.1" priority="-1" condim="4" friction="2 0.1 0.01" margin="0.003" gap="0.004"/>
    </body>
    <body name="e" pos="1.5 0 0.118">
      <freejoint/>
      <geom name="in_gap" size="0.1" priority="-1" margin="0.003" gap="0.004"/>
    </body>
    <body name="f" pos="0 1 0.5">
      <freejoint/>
      <geom name="f" size="0.1" priority="2" solmix="0" solref="0.04 1" friction="0.3 0.01 0.001"/>
    </body>
    <body name="g" pos="0.195 1 0.5">
      <freejoint/>
      <geom name="g" size="0.1" priority="2" solmix="0" solref="0.06 0.5" solimp="0.5 0.6 0.01 0.5 2"/>
    </body>
  </worldbody>
</mujoco>"""


def _contact_rows(fields, n):
    """(key, dim, friction, solref, solimp, includemargin, exclude) per contact, sorted by key."""
    rows = [((tuple(sorted(fields["geom"][i])), round(float(fields["dist"][i]), 9)), int(fields["dim"][i]),
             np.asarray(fields["friction"][i]), np.asarray(fields["solref"][i]), np.asarray(fields["solimp"][i]),
             float(fields["includemargin"][i]), int(fields["exclude"][i])) for i in range(n)]
    return sorted(rows, key=lambda r: r[0])


def _mujoco_rows(d):
    fields = {name: [getattr(c, name) for c in d.contact] for name in
              ("geom", "dist", "dim", "friction", "solref", "solimp", "includemargin", "exclude")}
    return _contact_rows(fields, d.ncon)


def _assert_same_contacts(world, mjm, d):
    ours = world.contacts()
    n = int(ours["ncon"][0])
    assert n == d.ncon
    mine = _contact_rows({k: v[0] for k, v in ours.items() if k not in ("ncon", "overflow")}, n)
    for a, b in zip(mine, _mujoco_rows(d)):
        assert a[0] == b[0] and a[1] == b[1] and a[6] == b[6], (a, b)
        for x, y in zip(a[2:6], b[2:6]):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=str(a[0]))
    g1, g2 = ours["geom"][0, :n].T
    np.testing.assert_allclose(ours["margin"][0, :n], mjm.geom_margin[g1] + mjm.geom_margin[g2], rtol=1e-12)
    np.testing.assert_allclose(ours["gap"][0, :n], mjm.geom_gap[g1] + mjm.geom_gap[g2], rtol=1e-12)


def test_contact_parameters_mix_as_mujocos(device):
    mjm = mujoco.MjModel.from_xml_string(SCENE)
    d = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, d)
    model = load_mjcf_string(SCENE)
    np.testing.assert_array_equal(model.geom_priority, mjm.geom_priority)
    np.testing.assert_array_equal(model.geom_solmix, mjm.geom_solmix)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.forward()
    _assert_same_contacts(world, mjm, d)
    # every rule has a contact: the winner's dim 1, a mix, a direct solref, the floor's
    # over a lower priority, one in the gap band, and two solmix 0 at equal priority
    assert {int(c.dim) for c in d.contact} == {1, 3, 4, 6} and sum(c.exclude for c in d.contact) == 1
    assert rel_err(world.get("qacc")[0], d.qacc) <= 1e-9


def test_randomized_friction_follows_priority(device):
    """set_param's geom frictions reach each automatic pair as a compiled model's would."""
    mjm = mujoco.MjModel.from_xml_string(SCENE)
    world = physics.World(load_mjcf_string(SCENE), num_envs=1, device=device, precision="float64")
    friction = np.random.default_rng(1).uniform(0.2, 1.5, mjm.ngeom)
    world.set_param("geom_friction", friction[None])
    world.forward()
    mjm.geom_friction[:, 0] = friction
    d = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, d)
    _assert_same_contacts(world, mjm, d)


def test_builder_takes_priority_and_solmix():
    b = physics.ModelBuilder()
    body = b.add_body(0, pos=(0, 0, 1), name="a")
    b.add_geom(body, size=(0.1,), priority=3, solmix=0.25)
    model = b.finalize()
    assert model.geom_priority.tolist() == [3] and model.geom_solmix.tolist() == [0.25]


DM_CONTROL = importlib.util.find_spec("dm_control")


@pytest.mark.skipif(DM_CONTROL is None, reason="dm_control's suite models are not installed")
def test_dm_control_quadruped_ball_takes_its_own_parameters(device):
    """The quadruped's ball (priority 1, condim 6, friction below the floor's) resting on
    the floor: its contact takes the ball's parameters, as mujoco's."""
    folder = os.path.join(DM_CONTROL.submodule_search_locations[0], "suite")
    path = os.path.join(folder, "quadruped.xml")
    mjm = mujoco.MjModel.from_xml_path(path)
    model = physics.load_model(path)
    np.testing.assert_array_equal(model.geom_priority, mjm.geom_priority)
    ball = mjm.jnt_qposadr[mjm.joint("ball_root").id]
    d = mujoco.MjData(mjm)
    d.qpos[ball: ball + 3] = (3.0, 0.0, 0.149)  # away from the robot, 1 mm into the floor
    mujoco.mj_forward(mjm, d)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qpos=d.qpos[None])
    world.forward()
    fields = world.contacts()
    ball_geom = mjm.geom("ball").id
    mine = [i for i in range(fields["ncon"][0]) if ball_geom in fields["geom"][0, i]]
    theirs = [c for c in d.contact if ball_geom in c.geom]
    assert len(mine) == len(theirs) == 1
    assert fields["dim"][0, mine[0]] == theirs[0].dim == 6
    for name in ("friction", "solref", "solimp", "includemargin"):
        np.testing.assert_allclose(fields[name][0, mine[0]], getattr(theirs[0], name), rtol=1e-12, err_msg=name)


@pytest.mark.skipif(DM_CONTROL is None, reason="dm_control's suite models are not installed")
def test_dm_control_dog_priorities_compile_as_mujocos():
    """The dog's geoms take priority from their default classes, as mujoco compiles them."""
    path = os.path.join(DM_CONTROL.submodule_search_locations[0], "suite", "dog.xml")
    mjm = mujoco.MjModel.from_xml_path(path)
    model = load_mjcf(path)
    np.testing.assert_array_equal(model.geom_priority, mjm.geom_priority)
    np.testing.assert_array_equal(model.geom_solmix, mjm.geom_solmix)
    assert set(np.unique(model.geom_priority)) == {0, 1, 2}
