"""Sensors against MuJoCo: ``sensordata`` after forward() and after each step, float64.

The Control Suite's models (the dm_control package's, not written here) and one model that
holds every sensor kind the engine computes, each frame sensor with and without a reference
frame of each object type, touch zones of every site shape, and cutoffs.
"""

import os
import warnings

import dm_control.suite
import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError, World, load_model
from taigym.physics.compiler.mjcf import load_mjcf_string

SUITE = os.path.dirname(dm_control.suite.__file__)
# |taigym - MuJoCo| <= ATOL + RTOL |MuJoCo|: contact forces (touch, force, torque) follow
# the constraint solver's answer, which both solve to its tolerance, not to round-off
ATOL, RTOL = 1e-9, 1e-9

EVERY_KIND = """
<mujoco>
  <option timestep="0.004" magnetic="0.1 -0.4 0.3"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <site name="fixed" pos=".3 .2 .1" euler="10 0 30"/>
    <body name="torso" pos="0 0 .3" euler="3 2 1">
      <freejoint name="root"/>
      <geom name="torso_geom" type="box" size=".2 .1 .05" pos=".01 0 0" euler="0 0 5"/>
      <site name="imu" pos=".05 .02 .01" euler="10 20 30"/>
      <site name="zone_box" type="box" size=".03 .03 .03" pos=".21 .1 -.05"/>
      <site name="zone_sphere" type="sphere" size=".04" pos="-.19 .1 -.05"/>
      <site name="zone_ellipsoid" type="ellipsoid" size=".05 .03 .02" pos=".21 -.1 -.05"/>
      <site name="zone_cylinder" type="cylinder" size=".03 .02" pos="-.19 -.1 -.06"/>
      <site name="zone_capsule" type="capsule" size=".02 .05" pos="0 0 -.06" euler="0 90 0"/>
      <site name="zone_beside" type="sphere" size=".02" pos=".4 .3 -.05"/>
      <body name="arm" pos=".2 0 .1">
        <joint name="shoulder" type="ball" damping=".1"/>
        <inertial pos=".15 .01 0" mass="1.2" diaginertia=".01 .02 .03" euler="5 10 15"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <body name="forearm" pos=".3 0 0">
          <joint name="elbow" type="hinge" axis="0 1 0" range="-1 1" damping=".05"/>
          <joint name="slide" type="slide" axis="1 0 0" damping=".5"/>
          <inertial pos=".2 0 .01" mass=".6" diaginertia=".003 .004 .005" euler="-5 0 10"/>
          <geom name="hand" type="sphere" size=".05" pos=".2 0 0" euler="20 0 0"/>
          <site name="tip" pos=".25 .01 0" euler="0 30 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="coupled"><joint joint="elbow" coef=".5"/><joint joint="slide" coef="-1"/></fixed>
  </tendon>
  <actuator>
    <motor name="elbow_motor" joint="elbow" gear="2"/>
    <position name="slide_servo" joint="slide" kp="20"/>
    <motor name="tendon_motor" tendon="coupled"/>
  </actuator>
  <sensor>
    <jointpos joint="elbow"/>
    <jointvel name="slide_vel" joint="slide" cutoff=".5"/>
    <jointactuatorfrc joint="elbow"/>
    <ballquat joint="shoulder"/>
    <ballangvel joint="shoulder"/>
    <tendonpos tendon="coupled"/>
    <tendonvel tendon="coupled"/>
    <tendonactuatorfrc tendon="coupled"/>
    <actuatorpos actuator="slide_servo"/>
    <actuatorvel actuator="slide_servo"/>
    <actuatorfrc actuator="elbow_motor"/>
    <framepos objtype="site" objname="imu"/>
    <framepos objtype="body" objname="torso" reftype="xbody" refname="arm"/>
    <framequat objtype="geom" objname="hand" reftype="site" refname="imu"/>
    <framequat objtype="body" objname="forearm"/>
    <framexaxis objtype="body" objname="arm" reftype="geom" refname="torso_geom"/>
    <frameyaxis objtype="xbody" objname="forearm"/>
    <framezaxis objtype="site" objname="tip" reftype="site" refname="fixed"/>
    <framelinvel objtype="site" objname="tip" reftype="body" refname="arm"/>
    <framelinvel objtype="geom" objname="hand"/>
    <frameangvel objtype="geom" objname="hand" reftype="xbody" refname="torso"/>
    <framelinacc objtype="site" objname="tip"/>
    <frameangacc objtype="body" objname="forearm"/>
    <subtreecom body="torso"/>
    <subtreelinvel body="arm"/>
    <subtreeangmom body="torso"/>
    <subtreeangmom body="forearm"/>
    <accelerometer name="imu_acc" site="imu" cutoff="30"/>
    <velocimeter site="imu"/>
    <gyro site="tip"/>
    <force site="tip"/>
    <torque site="imu"/>
    <magnetometer site="imu"/>
    <touch site="zone_box"/>
    <touch site="zone_sphere" cutoff="3"/>
    <touch site="zone_ellipsoid"/>
    <touch site="zone_cylinder"/>
    <touch site="zone_capsule"/>
    <touch site="zone_beside"/>
  </sensor>
</mujoco>
"""


def _worst_by_sensor(mjm, ours, theirs):
    err = np.abs(ours - theirs) - RTOL * np.abs(theirs)
    return {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_SENSOR, i) or f"sensor {i} (type {mjm.sensor_type[i]})":
            float(err[..., mjm.sensor_adr[i]: mjm.sensor_adr[i] + mjm.sensor_dim[i]].max()) for i in range(mjm.nsensor)}


def _assert_close(mjm, ours, theirs, when):
    worst = _worst_by_sensor(mjm, ours, theirs)
    bad = {k: v for k, v in worst.items() if v > ATOL}
    assert not bad, f"{when}: sensors off MuJoCo's by more than {ATOL} + {RTOL} |value|: {bad}"


def _rollout(model, mjm, steps, seed, device, kick=0.0):
    """Step both with the same random controls; compare sensordata after each step."""
    rng = np.random.default_rng(seed)
    md = mujoco.MjData(mjm)
    world = World(model, 1, device=device, precision="float64")
    md.qvel[:] = kick * rng.standard_normal(mjm.nv)
    world.set_state(qpos=md.qpos[None], qvel=md.qvel[None])
    seen = np.zeros(mjm.nsensordata)
    for k in range(steps):
        u = rng.uniform(-1, 1, mjm.nu)
        md.ctrl[:] = u
        world.set_ctrl(u[None])
        mujoco.mj_step(mjm, md)
        world.step()
        _assert_close(mjm, world.get("sensordata")[0], md.sensordata, f"step {k + 1}")
        seen = np.maximum(seen, np.abs(md.sensordata))
    return world, seen


@pytest.mark.parametrize("domain", ["cheetah", "walker", "hopper", "finger", "fish", "humanoid", "humanoid_CMU"])
def test_control_suite_sensors_match_mujoco(domain, device):
    path = os.path.join(SUITE, f"{domain}.xml")
    model = load_model(path)
    mjm = mujoco.MjModel.from_xml_path(path)
    assert model.nsensordata == mjm.nsensordata
    _, seen = _rollout(model, mjm, 150, seed=1, device=device)
    assert seen.max() > 0


def test_every_sensor_kind_matches_mujoco_while_stepping(device):
    model = load_mjcf_string(EVERY_KIND)
    mjm = mujoco.MjModel.from_xml_string(EVERY_KIND)
    world, seen = _rollout(model, mjm, 150, seed=2, device=device, kick=1.0)
    touches = [mjm.sensor_adr[i] for i in range(mjm.nsensor) if mjm.sensor_type[i] == mujoco.mjtSensor.mjSENS_TOUCH]
    # the box's corners rest on the floor: four zones hold contacts, the one beside none
    assert np.count_nonzero(seen[touches]) >= 4 and seen[touches[-1]] == 0
    assert np.all(np.abs(world.sensor("slide_vel")) <= 0.5) and np.abs(world.sensor("imu_acc")).max() <= 30


def test_sensors_after_forward_match_mujoco_at_random_states(device):
    model = load_mjcf_string(EVERY_KIND)
    mjm = mujoco.MjModel.from_xml_string(EVERY_KIND)
    md = mujoco.MjData(mjm)
    rng = np.random.default_rng(3)
    n = 4
    world = World(model, n, device=device, precision="float64")
    qpos = np.tile(mjm.qpos0, (n, 1)) + 0.2 * rng.standard_normal((n, mjm.nq))
    qvel, ctrl = rng.standard_normal((n, mjm.nv)), rng.uniform(-1, 1, (n, mjm.nu))
    world.set_state(qpos=qpos, qvel=qvel)
    world.set_ctrl(ctrl)
    world.forward()
    ours = world.get("sensordata")
    for e in range(n):
        md.qpos[:], md.qvel[:], md.ctrl[:] = qpos[e], qvel[e], ctrl[e]
        mujoco.mj_forward(mjm, md)
        _assert_close(mjm, ours[e], md.sensordata, f"env {e}")


CHAIN_RK4 = """
<mujoco>
  <option timestep="0.01" integrator="RK4"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="j1" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/>
      <body name="lower" pos="0 0 -.5">
        <joint name="j2" axis="1 1 0"/>
        <geom type="capsule" fromto="0 0 0 .1 0 -.5" size=".04"/>
        <site name="tip" pos=".1 0 -.5"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="j1"/><motor joint="j2"/></actuator>
  <sensor>
    <jointpos joint="j2"/><jointvel joint="j1"/><framepos objtype="site" objname="tip"/>
    <accelerometer site="tip"/><gyro site="tip"/><subtreeangmom body="upper"/>
  </sensor>
</mujoco>
"""


def test_rk4_sensors_read_the_step_start(device):
    """MuJoCo's RK4 computes sensors in its first pass only."""
    _rollout(load_mjcf_string(CHAIN_RK4), mujoco.MjModel.from_xml_string(CHAIN_RK4), 100, seed=4, device=device,
             kick=1.0)


@pytest.mark.slow
def test_staged_schedule_gives_the_fused_sensors(device):
    model = load_mjcf_string(EVERY_KIND)
    rng = np.random.default_rng(5)
    worlds = [World(model, 3, device=device, precision="float64", schedule=s) for s in ("fused", "staged")]
    qvel = rng.standard_normal((3, model.nv))
    for world in worlds:
        world.set_state(qvel=qvel)
    for _ in range(40):
        ctrl = rng.uniform(-1, 1, (3, model.nu))
        for world in worlds:
            world.set_ctrl(ctrl)
            world.step()
        np.testing.assert_allclose(worlds[1].get("sensordata"), worlds[0].get("sensordata"), rtol=1e-12, atol=1e-12)


def test_sensor_by_name_and_errors():
    model = load_mjcf_string(EVERY_KIND)
    assert model.sensor("imu_acc") == 27 and model.sensor_dim[model.sensor("imu_acc")] == 3
    with pytest.raises(KeyError, match="no sensor named 'nope'"):
        model.sensor("nope")
    bad = EVERY_KIND.replace('<gyro site="tip"/>', '<gyro site="tipp"/>')
    with pytest.raises(ModelError, match=r"<string>:\d+ <gyro 29> attribute 'site': no such object 'tipp'"):
        load_mjcf_string(bad)
    ball = EVERY_KIND.replace('<ballquat joint="shoulder"/>', '<ballquat joint="elbow"/>')
    with pytest.raises(ModelError, match="ballquat.*must be a ball joint"):
        load_mjcf_string(ball)
    ranged = EVERY_KIND.replace("<sensor>", '<sensor><clock/>')
    with pytest.raises(ModelError, match=r"<string>:\d+ <sensor>: element <clock> inside <sensor> is not supported"):
        load_mjcf_string(ranged)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loose = load_mjcf_string(ranged, strict=False)
    assert loose.nsensor == model.nsensor and "clock" in str(caught[0].message)


def test_disabled_sensors_stay_zero(device):
    text = EVERY_KIND.replace('<option timestep="0.004"', '<option timestep="0.004"><flag sensor="disable"/></option><option')
    world = World(load_mjcf_string(text), 2, device=device, precision="float64")
    world.step(3)
    assert not world.get("sensordata").any()


def test_sensor_observation_term_reads_sensordata(tmp_path):
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.tasks.errors import ConfigError

    task = """id: TaiGym/CheetahSensors-v0
robot:
  asset: dm_control:suite/cheetah.xml
simulation: {precision: float64, device: cpu}
actions: {kind: torque, actuators: all}
observations:
  - term: sensor
    params: {names: [torso_subtreelinvel]}
  - term: qvel
rewards:
  - term: alive
    weight: 1.0
terminations:
  - term: nonfinite_state
episode_length: 50
"""
    path = tmp_path / "cheetah_sensors.yaml"
    path.write_text(task)
    env = TaiGymVectorEnv(str(path), 3)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.step(env.action_space.sample())
        np.testing.assert_allclose(obs[:, :3], env.world.get("sensordata"), rtol=0, atol=1e-12)
    assert np.abs(obs[:, :3]).max() > 0  # the first step read the state at rest
    path.write_text(task.replace("[torso_subtreelinvel]", "[torso_subtreelinvl]"))
    with pytest.raises(ConfigError, match="no sensor named 'torso_subtreelinvl'; did you mean 'torso_subtreelinvel'"):
        TaiGymVectorEnv(str(path), 1)


RAYS = """
<mujoco>
  <asset><hfield name="bumps" nrow="9" ncol="12" size="1.5 1 .4 .1"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="4 4 .1" pos="0 0 -.2"/>
    <geom name="field" type="hfield" hfield="bumps" pos="2 0 0" euler="0 0 20"/>
    <geom type="sphere" size=".3" pos="-1.5 .5 .5"/>
    <geom type="capsule" size=".1 .4" pos="-1 -1.2 .6" euler="30 60 0"/>
    <geom type="ellipsoid" size=".7 .5 .3" pos=".5 1.9 .7" euler="10 0 40"/>
    <geom type="cylinder" size=".2 .3" pos="-.5 1.3 .4" euler="80 0 10"/>
    <geom type="box" size=".3 .2 .4" pos="0 -1.5 .5" euler="0 10 25"/>
    <geom name="ghost" type="box" size="5 5 .01" pos="0 0 2.2" rgba="1 1 1 0"/>
    <body name="head" pos="0 0 1">
      <freejoint/>
      <geom name="own" type="sphere" size=".15"/>
      <site name="down" euler="180 0 0"/>
      <site name="side" euler="0 100 0"/>
      <site name="back" euler="0 -100 30"/>
      <site name="up"/>
      <site name="slant" euler="120 40 0"/>
      <site name="field_ray" pos=".5 0 0" euler="0 150 0"/>
    </body>
  </worldbody>
  <sensor>
    <rangefinder site="down"/><rangefinder site="side"/><rangefinder site="back"/>
    <rangefinder site="up" cutoff="2"/><rangefinder site="slant"/><rangefinder site="field_ray"/>
  </sensor>
</mujoco>"""


def test_rangefinders_match_mujoco_on_every_geom_kind(device):
    """Rays from a body turned every way, against each primitive, a height field (cells,
    walls and base), an invisible geom (not seen) and the sensor's own body (left out)."""
    rng = np.random.default_rng(6)
    elevation = np.round(rng.uniform(0, 1, 9 * 12), 3)
    elevation[:2] = 0, 1  # already normalized: both compile the same samples
    text = RAYS.replace('size="1.5 1 .4 .1"/>', 'size="1.5 1 .4 .1" elevation="' + " ".join(map(str, elevation))
                        + '"/>')
    mjm = mujoco.MjModel.from_xml_string(text)
    model = load_mjcf_string(text)
    md = mujoco.MjData(mjm)
    n = 128
    world = World(model, n, device=device, precision="float64")
    qpos = np.zeros((n, 7))
    qpos[:, :3] = rng.uniform((-1.5, -1.5, 0.3), (3, 1.5, 1.6), (n, 3))
    quat = rng.standard_normal((n, 4))
    qpos[:, 3:] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    world.set_state(qpos=qpos)
    world.forward()
    ours = world.get("sensordata")
    hits = np.zeros(mjm.nsensordata)
    for e in range(n):
        md.qpos[:] = qpos[e]
        mujoco.mj_forward(mjm, md)
        np.testing.assert_allclose(ours[e], md.sensordata, rtol=1e-9, atol=1e-9, err_msg=f"env {e}")
        hits += md.sensordata >= 0
    assert hits.min() > 0 and (hits < n).any()  # every ray hits somewhere, and some miss


def test_control_suite_quadruped_rangefinders_match_mujoco(device):
    path = os.path.join(SUITE, "quadruped.xml")
    model = load_model(path)
    mjm = mujoco.MjModel.from_xml_path(path)
    rangefinders = np.flatnonzero(mjm.sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER)
    assert len(rangefinders) == 20 and model.nsensordata == mjm.nsensordata
    _rollout(model, mjm, 60, seed=7, device=device)


def test_rangefinders_see_visible_meshes(device):
    """A tetrahedron's triangles (tests/test_mesh_rays.py for non-convex meshes), unless it
    is invisible."""
    text = """<mujoco><asset><mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
      <worldbody><geom type="mesh" mesh="tet"/><body pos=".2 .3 2"><freejoint/><geom size=".1"/>
      <site name="s" euler="180 0 0"/></body></worldbody><sensor><rangefinder name="rf" site="s"/></sensor></mujoco>"""
    seen = []
    for shown in (text, text.replace('mesh="tet"/>', 'mesh="tet" rgba="1 1 1 0"/>')):
        world = World(load_mjcf_string(shown), 1, device=device, precision="float64")
        world.forward()
        mjm = mujoco.MjModel.from_xml_string(shown)
        md = mujoco.MjData(mjm)
        mujoco.mj_forward(mjm, md)
        np.testing.assert_allclose(world.get("sensordata")[0], md.sensordata, rtol=0, atol=1e-12)
        seen.append(float(md.sensordata[0]))
    assert seen == [pytest.approx(1.5), -1.0]  # down onto the face x + y + z = 1; through it unseen