"""MuJoCo's implicitfast integrator against MuJoCo, float64: dof and tendon dampers, the
actuators' velocity terms (position servos with kv, a velocity servo, an affine-gain
actuator, a force-limited one), contacts with a floor and free bodies, standalone ones
with their own 6x6 solve and one carrying a jointed child."""

import mujoco
import numpy as np
import pytest
from taigym.physics import World
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.errors import ModelError

MODEL = """
<mujoco>
  <option timestep="0.004" integrator="implicitfast" tolerance="1e-13"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="a" pos="0 0 1.2">
      <joint name="h1" axis="0 1 0" damping=".3"/>
      <geom type="capsule" fromto="0 0 0 .4 0 0" size=".05"/>
      <body pos=".4 0 0">
        <joint name="h2" axis="0 1 0" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
        <body pos=".4 0 0">
          <joint name="s3" type="slide" axis="1 0 0" damping="2" range="-.1 .2" limited="true"/>
          <geom type="box" size=".06 .05 .05" pos=".05 0 0"/>
        </body>
      </body>
    </body>
    <body name="ball" pos=".3 .6 .4">
      <freejoint/>
      <geom type="sphere" size=".1" pos=".02 .01 0"/>
      <geom type="box" size=".02 .07 .05" pos=".02 .01 0" contype="0" conaffinity="0"/>
    </body>
    <body name="spinner" pos="-.5 -.5 6">
      <freejoint/>
      <geom type="box" size=".2 .1 .05"/>
    </body>
    <body name="cart" pos="-.8 .7 .3">
      <freejoint/>
      <geom type="sphere" size=".1"/>
      <body pos="0 0 .2">
        <joint name="pole" axis="1 0 0" damping=".05"/>
        <geom type="capsule" fromto="0 0 0 0 0 .3" size=".03"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="couple" damping=".7">
      <joint joint="h1" coef="1"/>
      <joint joint="h2" coef="-.5"/>
    </fixed>
  </tendon>
  <actuator>
    <position joint="h1" kp="20" kv="3"/>
    <position joint="s3" kp="50" kv="4" forcelimited="true" forcerange="-3 3"/>
    <velocity joint="h2" kv="1.5"/>
    <general joint="pole" gaintype="affine" gainprm="1 0 .4"/>
    <general tendon="couple" biastype="affine" biasprm="0 0 -.6"/>
  </actuator>
</mujoco>"""
# measured over 200 steps: 3e-14 (round-off of the same operations in another order). The
# bodies land on spheres: a box resting flat on the floor has a degenerate contact set, whose
# forces the solvers split differently (1e-7 in qvel, as much under Euler), whatever the integrator.
TOL = 1e-9


def rollout(xml, steps, ctrl_fn, device, qvel=None):
    mjm = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(mjm)
    world = World(load_mjcf_string(xml), 1, device=device, precision="float64")
    if qvel is not None:
        md.qvel[:] = qvel
        world.set_state(qvel=np.array(qvel, dtype=float)[None])
    worst = 0.0
    for k in range(steps):
        u = ctrl_fn(k, mjm.nu)
        md.ctrl[:] = u
        world.set_ctrl(u[None])
        mujoco.mj_step(mjm, md)
        world.step()
        for name in ("qpos", "qvel"):
            np.testing.assert_allclose(world.get(name)[0], getattr(md, name), rtol=TOL, atol=TOL,
                                       err_msg=f"{name} at step {k}")
            worst = max(worst, float(np.max(np.abs(world.get(name)[0] - getattr(md, name)))))
    return mjm, md, worst


def test_rollout_matches_mujoco_implicitfast(device):
    rng = np.random.default_rng(1)
    mjm = mujoco.MjModel.from_xml_string(MODEL)
    md = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, md)
    qvel = np.zeros(mjm.nv)
    qvel[6:9] = [2, -1, 3]  # the ball and the spinner spin: their gyroscopic derivative counts
    qvel[12:15] = [4, 1, -2]
    _, md, worst = rollout(MODEL, 200, lambda k, nu: rng.uniform(-1, 1, nu), device, qvel)
    assert md.ncon > 0  # the ball and the cart reached the floor
    print("implicitfast rollout, worst |difference|:", worst)


SPIN = """
<mujoco>
  <option timestep="0.01" integrator="implicitfast" gravity="0 0 0"/>
  <worldbody>
    <body pos="0 0 1">
      <freejoint/>
      <geom type="box" size=".1 .2 .3" pos=".05 .02 0"/>
    </body>
  </worldbody>
</mujoco>"""


def test_standalone_free_body_takes_the_gyroscopic_derivative(device):
    """A spinning asymmetric free body: implicitfast differs from Euler by the 6x6 solve."""
    mjm = mujoco.MjModel.from_xml_string(SPIN)
    md = mujoco.MjData(mjm)
    md.qvel[3:] = [3, 1, 2]
    world = World(load_mjcf_string(SPIN), 1, device=device, precision="float64")
    world.set_state(qvel=md.qvel[None].copy())
    for k in range(200):
        mujoco.mj_step(mjm, md)
        world.step()
    np.testing.assert_allclose(world.get("qvel")[0], md.qvel, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(world.get("qpos")[0], md.qpos, rtol=TOL, atol=TOL)


def test_full_implicit_and_implicitfast_with_fluid_are_refused():
    with pytest.raises(ModelError, match="implicit"):
        load_mjcf_string(MODEL.replace('integrator="implicitfast"', 'integrator="implicit"'))
    with pytest.raises(ModelError, match="fluid"):
        load_mjcf_string(MODEL.replace('integrator="implicitfast"', 'integrator="implicitfast" density="1.2"'))


GAINS = """
<mujoco>
  <option timestep="0.005" integrator="implicitfast"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="h1" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/>
      <body pos="0 0 -.5">
        <joint name="h2" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="h1" gaintype="affine" gainprm="1 0 -.8" ctrllimited="true" ctrlrange="-.3 .3"/>
    <general joint="h2" dyntype="filter" dynprm=".03" gaintype="affine" gainprm="2 0 -.5" actearly="true"/>
    <general joint="h2" dyntype="integrator" gaintype="affine" gainprm="1 0 -.7" actlimited="true" actrange="0 1"/>
  </actuator>
</mujoco>"""


def test_affine_gains_take_the_clamped_ctrl_or_the_activation(device):
    """The gain's velocity term times what the force multiplies: ctrl clamped to its range
    (driven beyond it here), a filter's next activation (actearly), an integrator's."""
    rng = np.random.default_rng(0)

    def ctrl(k, nu):
        u = rng.uniform(-2, 2, nu)
        u[2] = abs(u[2])
        return u

    _, md, worst = rollout(GAINS, 300, ctrl, device)
    assert md.act[1] > 0.5  # the integrator ran into its bound
    print("affine gains, worst |difference|:", worst)


ROPES = """
<mujoco>
  <option timestep="0.005" integrator="implicitfast"/>
  <worldbody>
    <site name="anchor" pos="0 0 2"/>
    <body pos="0 0 1">
      <joint name="h1" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <site name="tip" pos=".5 0 0"/>
    </body>
    <body name="float" pos=".6 .2 .5">
      <freejoint/>
      <geom type="box" size=".1 .05 .08" pos=".03 0 0"/>
      <site name="hook" pos=".05 .02 .08"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="rope" damping="3" stiffness="50">
      <site site="tip"/><site site="hook"/>
    </spatial>
    <spatial name="hang" damping="2" stiffness="40">
      <site site="anchor"/><site site="hook"/>
    </spatial>
  </tendon>
  <actuator>
    <general tendon="hang" biastype="affine" biasprm="0 0 -1.5"/>
    <position joint="h1" kp="10" kv="2"/>
  </actuator>
</mujoco>"""


def test_damped_spatial_tendons_on_a_standalone_free_body(device):
    """Tendon dampers and a tendon actuator's kv in the free body's own 6x6 block; the rope
    between two trees couples them in MuJoCo's qDeriv only within each tree (M's pattern)."""
    rng = np.random.default_rng(0)
    qvel = np.zeros(7)
    qvel[4:7] = [3, -2, 1]
    _, _, worst = rollout(ROPES, 200, lambda k, nu: rng.uniform(-1, 1, nu), device, qvel)
    print("spatial tendons, worst |difference|:", worst)
