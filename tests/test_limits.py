"""Joint limits as MuJoCo soft constraints, checked against mujoco (float64).

Both sides solve the same strictly convex dual with projected Gauss-Seidel run to
convergence (2000 iterations, tolerance near zero), so forces and accelerations agree to
the solvers' convergence, ~1e-10 relative; the tests allow 1e-8.
"""

import mujoco
import numpy as np
import pytest
from conftest import gym_asset
from oracle import random_state, rel_err, rk4_step
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

TOL = 1e-8


def _converged_pair(mjm, model):
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT  # limits only
    mjm.opt.solver, mjm.opt.iterations, mjm.opt.tolerance = mujoco.mjtSolver.mjSOL_PGS, 2000, 1e-15
    from taigym.physics.model import DSBL_CONTACT

    return mjm, model.with_options(iterations=2000, tolerance=1e-15, disableflags=model.opt.disableflags | DSBL_CONTACT)


@pytest.mark.parametrize("name", ["hopper", "walker2d_v5", "humanoid", "ant"])
def test_limit_forces_match_mujoco(name, device):
    path = gym_asset(name)
    mjm, model = _converged_pair(mujoco.MjModel.from_xml_path(path), physics.load_model(path))
    rng = np.random.default_rng(5)
    states = [random_state(mjm, rng, scale=1.5) for _ in range(4)]  # wide angles: many joints past a limit
    world = physics.World(model, num_envs=4, device=device, precision="float64")
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    assert world.get("nefc").sum() > 0
    for e, (qpos, qvel) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, d)
        assert world.get("nefc")[e] == d.nefc
        assert rel_err(world.get("qfrc_constraint")[e], d.qfrc_constraint) <= TOL
        assert rel_err(world.get("qacc")[e], d.qacc) <= TOL
        np.testing.assert_allclose(world.get("efc_pos")[e, : d.nefc], d.efc_pos, atol=1e-12)
    assert not world.get("efc_overflow").any()


PENDULUM = """<mujoco>
  <option timestep="0.002" integrator="{integrator}" gravity="0 0 0"/>
  <worldbody>
    <body name="arm">
      <joint name="hinge" axis="0 1 0" range="-30 45" solreflimit="0.05 1" solimplimit="0.8 0.95 0.01" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <body name="cup" pos="0.5 0 0">
        <joint name="ball" type="ball" range="0 40"/>
        <geom type="box" size="0.05 0.08 0.1" pos="0 0 -0.1"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="2"/></actuator>
</mujoco>"""


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_driven_into_limits_settles_like_mujoco(integrator, device):
    """A constant torque pushes a hinge into its upper limit while a ball joint swings
    into its cone: 1 s of motion agrees with mujoco, and the hinge rests at the soft
    limit's equilibrium, past the bound by the penetration the soft model allows."""
    xml = PENDULUM.format(integrator=integrator)
    mjm, model = _converged_pair(mujoco.MjModel.from_xml_string(xml), load_mjcf_string(xml))
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    d = mujoco.MjData(mjm)
    d.qvel[1:] = (0.0, 3.0, 1.0)
    d.ctrl[0] = 1.5
    world.set_state(qvel=d.qvel)
    world.set_ctrl(d.ctrl)
    world.step(500)
    if integrator == "RK4":
        for _ in range(500):  # mujoco 4's own RK4 departs from the classic scheme on quaternions
            rk4_step(mjm, d)
    else:
        mujoco.mj_step(mjm, d, nstep=500)
    assert rel_err(world.get("qpos")[0], d.qpos) <= 1e-9
    assert rel_err(world.get("qvel")[0], d.qvel) <= 1e-8
    hinge = world.get("qpos")[0, 0]
    assert np.deg2rad(45) < hinge < np.deg2rad(45) + 0.05  # soft: slightly past the bound, not far


def test_disabled_limits_leave_smooth_dynamics(device):
    xml = PENDULUM.format(integrator="Euler")
    model = load_mjcf_string(xml)
    from taigym.physics.model import DSBL_LIMIT

    world = physics.World(model.with_options(disableflags=DSBL_LIMIT), num_envs=1, device=device,
                          precision="float64")
    world.set_state(qpos=np.array([1.5, 1, 0, 0, 0]))  # far past the hinge's upper bound
    world.forward()
    assert world.get("nefc")[0] == 0
    np.testing.assert_array_equal(world.get("qfrc_constraint")[0], 0)


FRICTION = """<mujoco>
  <worldbody>
    <body pos="0 0 1">
      <joint name="j1" axis="0 1 0" frictionloss="0.5" solreffriction="0.03 1.2"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <body pos="0.5 0 0">
        <joint name="j2" axis="0 1 0" frictionloss="0.2" range="-20 20"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
        <body pos="0 0 -0.5">
          <joint name="j3" type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.08"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t" limited="true" range="-0.1 0.3" frictionloss="0.3" solreflimit="0.04 1">
      <joint joint="j1" coef="1"/><joint joint="j3" coef="-2"/>
    </fixed>
  </tendon>
</mujoco>"""


def test_friction_loss_and_tendon_limit_rows_match_mujoco(device):
    """Dof and tendon friction loss as bounded constraint rows, and a fixed tendon's
    limit, at states that exercise every row type (compared at convergence)."""
    mjm, model = _converged_pair(mujoco.MjModel.from_xml_string(FRICTION), load_mjcf_string(FRICTION))
    rng = np.random.default_rng(0)
    qpos = mjm.qpos0 + rng.normal(scale=0.5, size=(6, mjm.nq))
    qvel = rng.normal(size=(6, mjm.nv))
    world = physics.World(model, num_envs=6, device=device, precision="float64")
    world.set_state(qpos=qpos, qvel=qvel)
    world.forward()
    kinds = set()
    for e in range(6):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos[e], qvel[e]
        mujoco.mj_forward(mjm, d)
        kinds.update(d.efc_type.tolist())
        np.testing.assert_array_equal(world.get("efc_type")[e, : d.nefc], d.efc_type)
        assert rel_err(world.get("qfrc_constraint")[e], d.qfrc_constraint) <= TOL
        assert rel_err(world.get("qacc")[e], d.qacc) <= TOL
    assert {1, 2, 3, 4} <= kinds  # dof friction, tendon friction, joint limit, tendon limit


def test_smooth_friction_loss_is_selectable(device):
    model = load_mjcf_string(FRICTION).with_options(frictionloss="smooth")
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qvel=np.array([1.0, 0.0, 0.0]))
    world.forward()
    assert not (world.get("efc_type")[0, : world.get("nefc")[0]] <= 2).any()  # no friction rows
    # -frictionloss tanh(1000 v) of the joint and of the tendon (length q1 - 2 q3) through it
    assert world.get("qfrc_passive")[0, 0] == pytest.approx(-(0.5 + 0.3) * np.tanh(1000.0), rel=1e-12)
