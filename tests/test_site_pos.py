"""Per-env site positions (World.set_param("site_pos")) against MuJoCo with the model's
site_pos changed, through what reads a site: frame sensors (the site as object and as
reference frame), a touch sensor's zone and spatial tendons (a site on the path and a
wrapping geom's side site); the refusal for an equality's site; site_pos_polar, the
randomization term that draws one (dm_control's finger target); qpos_set_uniform, the reset
term that places the ball of the same family's ball-in-cup, drawn again in place.
"""

import mujoco
import numpy as np
import pytest
from taigym.physics import WorldError
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

# an arm on a hinge, tied to the world by a spring tendon that wraps a cylinder; a ball
# resting on the floor under a touch sensor's zone
XML = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <site name="anchor" pos="0 0 1"/>
    <site name="side" pos="0.2 0 .6"/>
    <geom name="pulley" type="cylinder" size=".05 .05" pos=".2 0 .5" zaxis="0 1 0"/>
    <body name="arm" pos="0 0 .5">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .4 0 0" size=".02" contype="0" conaffinity="0"/>
      <site name="tip" pos=".4 0 0"/>
      <site name="mid" pos=".2 0 .01"/>
    </body>
    <body name="ball" pos="1 0 .05">
      <freejoint/>
      <geom name="ball" type="sphere" size=".05"/>
      <site name="pad" type="sphere" size=".06" pos="0 0 -.03"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="rope" stiffness="50">
      <site site="anchor"/><geom geom="pulley" sidesite="side"/><site site="tip"/>
    </spatial>
  </tendon>
  <sensor>
    <framepos name="tip" objtype="site" objname="tip"/>
    <framepos name="mid_from_anchor" objtype="site" objname="mid" reftype="site" refname="anchor"/>
    <tendonpos tendon="rope"/>
    <touch site="pad"/>
  </sensor>
</mujoco>"""
ANCHOR, SIDE, TIP, MID, PAD = range(5)
# per env: the model's sites; the anchor, tip and mid moved; the side site across the pulley
# and the touch zone off the ball's contact
MOVES = [{}, {ANCHOR: (0.1, 0, 0.9), TIP: (0.35, 0, 0.02), MID: (0.1, 0, -0.02)},
         {SIDE: (0.2, 0, 0.4), PAD: (0.3, 0, 0.3)}]


def _positions(model):
    out = np.repeat(np.asarray(model.site_pos, dtype=np.float64)[None], len(MOVES), axis=0)
    for k, moves in enumerate(MOVES):
        for site, pos in moves.items():
            out[k, site] = pos
    return out


def test_each_env_senses_and_pulls_at_its_own_site_positions(device):
    model = load_mjcf_string(XML).with_options(iterations=200, tolerance=1e-15)
    world = physics.World(model, num_envs=len(MOVES), device=device, precision="float64")
    positions = _positions(world.model)
    world.set_param("site_pos", positions)
    np.testing.assert_array_equal(world.get_param("site_pos"), positions)
    qpos = np.zeros(model.nq)
    qpos[0], qpos[1:4], qpos[4] = 0.3, (1, 0, 0.049), 1  # the ball just into the floor
    world.set_state(qpos=qpos)
    world.step(5)
    sensordata, qacc = world.get("sensordata"), world.get("qacc")
    lengths = set()
    for k in range(len(MOVES)):
        mjm = mujoco.MjModel.from_xml_string(XML)
        mjm.opt.iterations, mjm.opt.tolerance = 200, 1e-15
        mjm.site_pos[:] = positions[k]
        d = mujoco.MjData(mjm)
        d.qpos[:] = qpos
        mujoco.mj_step(mjm, d, 5)
        np.testing.assert_allclose(sensordata[k], d.sensordata, rtol=1e-10, atol=1e-12, err_msg=str(k))
        np.testing.assert_allclose(qacc[k], d.qacc, rtol=1e-8, atol=1e-9, err_msg=str(k))
        lengths.add(round(float(d.ten_length[0]), 6))
    assert len(lengths) == len(MOVES)  # the moves change the tendon's path


def test_an_equality_site_is_not_moved(device):
    xml = XML.replace("</tendon>", "</tendon><equality><connect site1=\"pad\" site2=\"mid\"/></equality>")
    world = physics.World(load_mjcf_string(xml), num_envs=1, device=device, precision="float64")
    positions = np.asarray(world.model.site_pos, dtype=np.float64)[None].copy()
    world.set_param("site_pos", positions)  # unchanged: accepted
    positions[0, PAD, 0] += 0.1
    with pytest.raises(WorldError, match="site_pos: site 'pad' holds an equality constraint"):
        world.set_param("site_pos", positions)


def test_site_pos_polar_draws_dm_controls_finger_targets():
    from taigym.envs.vector import TaiGymVectorEnv

    env = TaiGymVectorEnv("TaiGym/finger-turn_hard-v0", num_envs=300)
    env.reset(seed=0)
    model = env.task.model
    target = list(model.site_name).index("target")
    pos = env.world.get_param("site_pos")[:, target]
    np.testing.assert_allclose(np.hypot(pos[:, 0] - 0.2, pos[:, 2] - 0.4), 0.13, rtol=0, atol=1e-15)
    assert np.all(pos[:, 1] == model.site_pos[target, 1]) and np.ptp(np.arctan2(pos[:, 0] - 0.2, pos[:, 2] - 0.4)) > 6
    # the target's framepos sensor follows it
    adr = model.sensor_adr[list(model.sensor_name).index("target")]
    np.testing.assert_allclose(env.world.get("sensordata")[:, adr : adr + 3], pos, rtol=0, atol=1e-15)


@pytest.mark.parametrize(("params", "message"), [
    ({"site": "target", "radius": [0.2, 0.1]}, "0 <= low <= high"),
    ({"site": "target", "radius": [0.1, 0.2], "angle": [1, 0]}, "low <= high"),
    ({"site": "target", "radius": [0.1, 0.2], "axes": [0, 0]}, "two distinct axes"),
    ({"site": "nowhere", "radius": [0.1, 0.2]}, "no site named 'nowhere'"),
])
def test_site_pos_polar_refuses_bad_parameters(params, message):
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.tasks.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        TaiGymVectorEnv("TaiGym/finger-turn_hard-v0", num_envs=1,
                        overrides={"randomization": [{"term": "site_pos_polar", "params": params}]})


def test_qpos_set_uniform_replaces_a_rejected_draw():
    """Drawn again in place (reset_until_no_contact), a coordinate stays in its box: the set
    term keeps nothing of the state it is given, as dm_control's ball-in-cup places its ball."""
    from taigym.tasks.terms.resets import qpos_set_uniform

    model = load_mjcf_string(XML)
    term = qpos_set_uniform(model, joints=["hinge"], low=0.2, high=0.5)
    rng, qpos = np.random.default_rng(0), np.zeros(model.nq)
    for _ in range(200):
        term.fn(rng, qpos, np.zeros(model.nv))
        assert 0.2 <= qpos[0] <= 0.5
