"""Equality constraints (connect, weld, joint and tendon coupling) against mujoco (float64).

Forces at a state are compared with both solvers run to convergence (1e-7 relative;
observed ~2e-10); a closed kinematic loop is then simulated on both sides. Tendon
couplings, with no contacts or with few, are compared with mujoco's own Newton solver to
1e-9 relative (observed ~1e-14).
"""

import importlib.util
import os
import re

import mujoco
import numpy as np
import pytest
from oracle import rel_err
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.model import DSBL_CONTACT, EQ_CONNECT, EQ_JOINT, EQ_TENDON, EQ_WELD, OBJ_TENDON

from taigym import physics

# the staged schedule compiles kernels of its own for this model: the slow tier runs it
STAGED = pytest.param("staged", marks=pytest.mark.slow)

LINKAGE = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <body name="b" pos="0.5 0 0">
        <joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
      </body>
    </body>
    <body name="c" pos="0.5 0.3 0.5">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1"/>
    </body>
    <body name="d" pos="-0.5 0 1">
      <joint name="j3" axis="1 0 0"/>
      <joint name="j4" axis="0 1 0"/>
      <geom type="sphere" size="0.1" pos="0 0 -0.3"/>
    </body>
  </worldbody>
  <equality>
    <connect name="loop" body1="b" body2="c" anchor="0 0 -0.5"/>
    <weld name="hold" body1="c" relpose="0.5 0.3 0.5 1 0 0 0" torquescale="2" solref="0.05 1"/>
    <joint name="gear" joint1="j3" joint2="j4" polycoef="0.1 0.5 0.2 0 0"/>
  </equality>
</mujoco>"""


def _converged(xml):
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    mjm.opt.solver, mjm.opt.iterations, mjm.opt.tolerance = mujoco.mjtSolver.mjSOL_PGS, 3000, 1e-15
    model = load_mjcf_string(xml).with_options(iterations=3000, tolerance=1e-15, disableflags=DSBL_CONTACT)
    return mjm, model


def _check_rows_and_forces(world, mjm, states, nefc):
    """Each env's rows (count, residuals, reference accelerations) and constraint forces
    against mujoco's at the same state."""
    for e, (qpos, qvel) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, d)
        assert world.get("nefc")[e] == d.nefc == nefc
        np.testing.assert_allclose(world.get("efc_pos")[e], d.efc_pos, atol=1e-12)
        np.testing.assert_allclose(world.get("efc_aref")[e], d.efc_aref, rtol=1e-9, atol=1e-9)
        assert rel_err(world.get("qfrc_constraint")[e], d.qfrc_constraint) <= 1e-7
        assert rel_err(world.get("qacc")[e], d.qacc) <= 1e-7


def test_model_records_the_constraints():
    model = load_mjcf_string(LINKAGE)
    assert model.neq == 3 and model.eq_name == ["loop", "hold", "gear"]
    np.testing.assert_array_equal(model.eq_type, [EQ_CONNECT, EQ_WELD, EQ_JOINT])
    np.testing.assert_array_equal(model.eq_obj2id, [model.body("c"), 0, model.joint("j4")])
    np.testing.assert_allclose(model.eq_solref[1], [0.05, 1.0])


def test_equality_forces_match_mujoco(device):
    mjm, model = _converged(LINKAGE)
    rng = np.random.default_rng(0)
    world = physics.World(model, num_envs=4, device=device, precision="float64")
    states = []
    for _ in range(4):
        qpos = mjm.qpos0 + rng.normal(scale=0.3, size=mjm.nq)
        qpos[5:9] /= np.linalg.norm(qpos[5:9])
        states.append((qpos, rng.normal(size=mjm.nv)))
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    _check_rows_and_forces(world, mjm, states, nefc=10)


def test_closed_loop_moves_like_mujoco(device):
    """1 s of the loop, the weld and the coupling from rest under gravity."""
    mjm, model = _converged(LINKAGE)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    d = mujoco.MjData(mjm)
    world.step(500)
    mujoco.mj_step(mjm, d, nstep=500)
    assert rel_err(world.get("qpos")[0], d.qpos) <= 1e-7
    assert rel_err(world.get("qvel")[0], d.qvel) <= 1e-6


def test_builder_makes_the_same_constraints():
    b = physics.ModelBuilder()
    arm = b.add_body(0, pos=(0, 0, 1), name="arm", mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_revolute(arm, axis=(0, 1, 0), name="h1")
    tip = b.add_body(arm, pos=(0.5, 0, 0), name="tip", mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_revolute(tip, axis=(0, 1, 0), name="h2")
    b.add_equality_connect("tip", anchor=(0.2, 0, 0), name="pin")
    b.add_equality_joint("h1", "h2", polycoef=(0, -1), name="mirror")
    model = b.finalize()
    # the world-frame anchor at qpos0 is (0.7, 0, 1): connect stores it in body2's (world) frame
    np.testing.assert_allclose(model.eq_data[0, 3:6], [0.7, 0.0, 1.0], atol=1e-15)
    assert model.eq_obj2id[1] == model.joint("h2")


@pytest.mark.parametrize("xml, words, attribute", [
    ('<equality><connect body1="a"/></equality>', "needs attribute 'anchor'", "anchor"),
    ('<equality><connect body1="nope" anchor="0 0 0"/></equality>', "missing body 'nope'", "body"),
    ('<equality><weld body1="a" body2="a"/></equality>', "two different bodies", "body2"),
    ('<equality><joint joint1="free"/></equality>', "hinge and slide joints only", "joint"),
    ('<equality><connect site1="s" site2="t" body1="a"/></equality>', "does not go with site1/site2", "body1"),
    ('<equality><weld site1="s"/></equality>', "needs attribute 'site2'", "site2"),
    ('<equality><connect site1="s" site2="nope"/></equality>', "missing site 'nope'", "site"),
])
def test_bad_equalities_name_the_element(xml, words, attribute):
    text = ('<mujoco><worldbody><site name="t"/><body name="a"><joint name="free" type="free"/><geom size="0.1"/>'
            f'<site name="s"/></body></worldbody>{xml}</mujoco>')
    with pytest.raises(ModelError) as info:
        load_mjcf_string(text)
    assert words in str(info.value) and info.value.attribute == attribute and info.value.line == 1


SITES = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <site name="anchor" pos="0.2 0.1 1.2" euler="10 20 30"/>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.05"/>
      <site name="a_tip" pos="0.1 0.2 0.05" euler="0 30 0"/>
      <site name="a_side" pos="-0.1 0 0" euler="45 0 0"/>
    </body>
    <body name="b" pos="0.5 0 1">
      <freejoint/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      <site name="b_end" pos="0.3 0 0" euler="0 0 90"/>
    </body>
  </worldbody>
  <equality>
    <connect name="pin" site1="a_tip" site2="anchor"/>
    <weld name="glue" site1="b_end" site2="a_side" torquescale="3" solref="0.05 1"/>
  </equality>
</mujoco>"""


def test_site_equalities_match_mujoco(device):
    """connect and weld between sites (MuJoCo's site semantics: the sites' positions and
    frames are held together, nothing taken from qpos0)."""
    mjm, model = _converged(SITES)
    assert list(model.eq_objtype) == [6, 6] and list(mjm.eq_objtype) == [6, 6]
    rng = np.random.default_rng(2)
    states = []
    for _ in range(4):
        qpos = mjm.qpos0 + rng.normal(scale=0.3, size=mjm.nq)
        for a in (3, 10):
            qpos[a:a + 4] /= np.linalg.norm(qpos[a:a + 4])
        states.append((qpos, rng.normal(size=mjm.nv)))
    world = physics.World(model, num_envs=4, device=device, precision="float64")
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    _check_rows_and_forces(world, mjm, states, nefc=9)


TENDONS = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" axis="0 1 0" damping="0.05" ref="6"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.05"/>
      <body name="b" pos="0.4 0 0">
        <joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      </body>
    </body>
    <body name="c" pos="0 0.5 1">
      <joint name="j3" axis="1 0 0"/>
      <joint name="j4" type="slide" axis="0 0 1" ref="0.05"/>
      <geom type="sphere" size="0.1" pos="0 0 -0.3"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed>
    <fixed name="t2"><joint joint="j3" coef="0.7"/><joint joint="j4" coef="2"/><joint joint="j2" coef="0.3"/></fixed>
    <fixed name="t3"><joint joint="j4" coef="1"/></fixed>
  </tendon>
  <equality>
    <tendon name="poly" tendon1="t1" tendon2="t2" polycoef="0.05 0.8 -0.3 0.2 0.1"/>
    <tendon name="hold" tendon1="t3" polycoef="0.02 0 0 0 0" solref="0.05 1"/>
  </equality>
</mujoco>"""


def test_model_records_tendon_couplings():
    model = load_mjcf_string(TENDONS)
    np.testing.assert_array_equal(model.eq_type, [EQ_TENDON, EQ_TENDON])
    np.testing.assert_array_equal(model.eq_objtype, [OBJ_TENDON, OBJ_TENDON])
    np.testing.assert_array_equal(model.eq_obj1id, [model.tendon_name.index("t1"), model.tendon_name.index("t3")])
    np.testing.assert_array_equal(model.eq_obj2id, [model.tendon_name.index("t2"), -1])
    np.testing.assert_allclose(model.eq_data[0, :5], [0.05, 0.8, -0.3, 0.2, 0.1])


@pytest.mark.parametrize("schedule", ["fused", STAGED])
def test_tendon_couplings_match_mujoco(schedule, device):
    """Rows and forces at random states, then 1 s from a push: two tendons coupled by a
    quartic (lengths measured from qpos0, which the joints' refs move off zero) and a
    tendon held at a constant, against mujoco to round-off."""
    mjm = mujoco.MjModel.from_xml_string(TENDONS)
    model = load_mjcf_string(TENDONS)
    rng = np.random.default_rng(3)
    states = [(mjm.qpos0 + rng.normal(scale=0.3, size=mjm.nq), rng.normal(size=mjm.nv)) for _ in range(4)]
    world = physics.World(model, num_envs=4, device=device, precision="float64", schedule=schedule)
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    for e, (qpos, qvel) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, d)
        assert world.get("nefc")[e] == d.nefc == 2
        np.testing.assert_allclose(world.get("efc_pos")[e][:2], d.efc_pos, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(world.get("efc_aref")[e][:2], d.efc_aref, rtol=1e-9, atol=1e-9)
        assert rel_err(world.get("qacc")[e], d.qacc) <= 1e-9
    world = physics.World(model, num_envs=1, device=device, precision="float64", schedule=schedule)
    d = mujoco.MjData(mjm)
    d.qvel[:] = (1.0, -0.5, 0.3, 0.2)
    world.set_state(qvel=d.qvel[None])
    world.step(500)
    mujoco.mj_step(mjm, d, nstep=500)
    assert rel_err(world.get("qpos")[0], d.qpos) <= 1e-9
    assert rel_err(world.get("qvel")[0], d.qvel) <= 1e-9


def test_builder_couples_tendons():
    b = physics.ModelBuilder()
    arm = b.add_body(0, pos=(0, 0, 1), name="arm", mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_revolute(arm, axis=(0, 1, 0), name="h1")
    tip = b.add_body(arm, pos=(0.5, 0, 0), name="tip", mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_revolute(tip, axis=(0, 1, 0), name="h2")
    b.add_tendon_fixed([("h1", 1.0)], name="first")
    b.add_tendon_fixed([("h1", 0.5), ("h2", 0.5)], name="both")
    b.add_equality_tendon("both", "first", polycoef=(0, -1), name="mirror")
    model = b.finalize()
    assert model.eq_type[0] == EQ_TENDON and (model.eq_obj1id[0], model.eq_obj2id[0]) == (1, 0)


@pytest.mark.parametrize("xml, words, attribute", [
    ('<equality><tendon tendon2="t"/></equality>', "needs attribute 'tendon1'", "tendon1"),
    ('<equality><tendon tendon1="nope"/></equality>', "missing tendon 'nope'", "tendon"),
    ('<equality><tendon tendon1="t" joint1="j"/></equality>', "joint1", "joint1"),
])
def test_bad_tendon_equalities_name_the_element(xml, words, attribute):
    text = ('<mujoco><worldbody><body><joint name="j"/><geom size="0.1"/></body></worldbody>'
            f'<tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>{xml}</mujoco>')
    with pytest.raises(ModelError) as info:
        load_mjcf_string(text)
    assert words in str(info.value) and info.value.attribute == attribute and info.value.line == 1


DM_CONTROL = importlib.util.find_spec("dm_control")


@pytest.mark.skipif(DM_CONTROL is None, reason="dm_control's suite models are not installed")
@pytest.mark.parametrize("name", ["manipulator", "stacker"])
def test_dm_control_grippers_couple_their_fingers_as_mujoco(name, device):
    """dm_control's manipulator and stacker hold their fingers together with a tendon
    equality. Their <sensor> sections, which do not act on the dynamics, are left out
    here; MuJoCo reads the whole file. 200 steps from a random push against mujoco."""
    folder = os.path.join(DM_CONTROL.submodule_search_locations[0], "suite")
    path = os.path.join(folder, f"{name}.xml")
    text = re.sub(r"<sensor>.*?</sensor>", "", open(path).read(), flags=re.S)
    model = load_mjcf_string(text, base_dir=folder)
    mjm = mujoco.MjModel.from_xml_path(path)
    assert list(model.eq_type) == list(mjm.eq_type) == [EQ_TENDON]
    d = mujoco.MjData(mjm)
    d.qvel[:] = np.random.default_rng(0).normal(scale=0.5, size=mjm.nv)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qvel=d.qvel[None])
    world.forward()
    mujoco.mj_forward(mjm, d)
    assert rel_err(world.get("qacc")[0], d.qacc) <= 1e-9
    world.step(200)
    mujoco.mj_step(mjm, d, nstep=200)
    assert rel_err(world.get("qpos")[0], d.qpos) <= 1e-9
    assert rel_err(world.get("qvel")[0], d.qvel) <= 1e-9
