"""Per-env geom positions (World.set_param("geom_pos")) against MuJoCo with the model's
geom_pos changed, and what reads them: contacts, rangefinder rays, geom_xpos (World.get and
a World program's load), the renderer; the randomization terms that draw them, and the
task file's geom size override.

A state's forward pass is compared, with PGS run to convergence on both sides (as
test_contacts.py): contact counts, constraint forces and accelerations to 1e-7 relative.
"""

import mujoco
import numpy as np
import pytest
from taigym.physics import WorldError
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.step.program import ProgramBuilder
from taigym.physics.step.program_host import run_segment

from taigym import physics

# a ball on a box; the box (a world geom) and the ball's knob (a body geom) are moved per env,
# and a rangefinder on the ball looks straight down
XML = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <geom name="step" type="box" size=".2 .2 .05" pos="0 0 .05"/>
    <body name="ball" pos="0 0 .148">
      <freejoint/>
      <geom name="ball" type="sphere" size=".05" mass="1"/>
      <geom name="knob" type="sphere" size=".02" pos=".05 0 0" mass=".1"/>
      <site name="eye" pos="0 0 -.06" zaxis="0 0 -1"/>
    </body>
  </worldbody>
  <sensor><rangefinder site="eye"/></sensor>
</mujoco>"""
STEP, KNOB = 1, 3
# per env: the box under the ball and its lowered knob (two contacts), beside the ball under
# the knob alone (one), away (none)
MOVES = [((0.0, 0.0, 0.05), (0.05, 0.0, -0.03)), ((0.24, 0.0, 0.05), (0.05, 0.0, -0.03)),
         ((0.6, 0.3, 0.05), (0.0, 0.05, 0.0))]


def _mujoco(positions):
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjm.opt.solver, mjm.opt.iterations, mjm.opt.tolerance = mujoco.mjtSolver.mjSOL_PGS, 3000, 1e-15
    mjm.geom_pos[:] = positions
    return mjm


def _world(num_envs, device):
    model = load_mjcf_string(XML).with_options(solver="PGS", iterations=3000, tolerance=1e-15)
    return physics.World(model, num_envs=num_envs, device=device, precision="float64")


def _positions(model):
    out = np.repeat(np.asarray(model.geom_pos, dtype=np.float64)[None], len(MOVES), axis=0)
    for k, (step, knob) in enumerate(MOVES):
        out[k, STEP], out[k, KNOB] = step, knob
    return out


def test_each_env_collides_and_senses_at_its_own_geom_positions(device):
    world = _world(len(MOVES), device)
    positions = _positions(world.model)
    world.set_param("geom_pos", positions)
    qvel = np.zeros(world.model.nv)
    qvel[:3] = 0.3, -0.2, -0.5
    world.set_state(qvel=qvel)
    world.forward()
    np.testing.assert_array_equal(world.get_param("geom_pos"), positions)
    ncon = world.contacts()["ncon"]
    assert len(set(ncon.tolist())) == len(MOVES)  # the moves change which geoms touch
    for k in range(len(MOVES)):
        mjm = _mujoco(positions[k])
        d = mujoco.MjData(mjm)
        d.qvel[:] = qvel
        mujoco.mj_forward(mjm, d)
        assert ncon[k] == d.ncon, k
        np.testing.assert_allclose(world.get("geom_xpos")[k], d.geom_xpos, rtol=0, atol=1e-15)
        np.testing.assert_allclose(world.get("sensordata")[k], d.sensordata, rtol=1e-14)
        for key in ("qacc", "qfrc_constraint"):
            scale = max(np.abs(getattr(d, key)).max(), 1e-12)
            assert np.abs(world.get(key)[k] - getattr(d, key)).max() <= 1e-7 * scale, (k, key)


def test_a_program_reads_each_envs_geom_centres(device):
    world = _world(len(MOVES), device)
    world.set_param("geom_pos", _positions(world.model))
    world.set_state(qpos=np.array([0.1, -0.2, 0.3, 0.9, 0.1, 0.3, 0.2]))
    b = ProgramBuilder()
    b.segment(2)
    at = b.load("geom_xpos", [STEP, KNOB])
    at_xy = b.load("geom_xpos", KNOB, [1, 0])
    program = b.build()
    world.set_program(program)
    world.forward(segments=(0, 2))
    want = world.get("geom_xpos")
    regs = np.array(world.registers())
    np.testing.assert_allclose(regs[:, at.start : at.stop], want[:, [STEP, KNOB]].reshape(len(MOVES), 6),
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(regs[:, at_xy.start : at_xy.stop], want[:, KNOB, [1, 0]], rtol=0, atol=1e-15)
    host = np.zeros_like(regs)
    run_segment(program, 2, host, {"geom_xpos": want})
    np.testing.assert_allclose(host[:, at.start : at_xy.stop], regs[:, at.start : at_xy.stop], rtol=0, atol=1e-15)


def test_the_renderer_draws_each_envs_geoms_where_they_are(device):
    from taigym.physics.render import Renderer

    world = _world(len(MOVES), device)
    world.set_param("geom_pos", _positions(world.model))
    world.forward()
    renderer = Renderer(world.model, width=8, height=8, device=device)
    frames = renderer.geom_frames(world.get("xpos"), world.get("xmat"), world.get_param("geom_pos"))
    drawn = renderer._geom_ids  # which geoms the frames hold
    np.testing.assert_allclose(frames[:, : drawn.size, :3], world.get("geom_xpos")[:, drawn], atol=1e-6)
    images = renderer.render(world, camera=physics.render.FreeCamera(lookat=(0.3, 0.1, 0), distance=2,
                                                                    elevation=-60))
    assert not np.array_equal(images[0], images[2])  # the box is elsewhere


def test_geom_positions_are_checked(device):
    world = _world(2, device)
    with pytest.raises(WorldError, match="geom_pos has non-finite values"):
        world.set_param("geom_pos", np.full((world.model.ngeom, 3), np.nan))


def _reacher(num_envs, **overrides):
    from taigym.envs.vector import TaiGymVectorEnv

    return TaiGymVectorEnv("TaiGym/reacher-hard-v0", num_envs=num_envs, overrides=overrides)


def test_geom_pos_polar_draws_dm_controls_reacher_targets():
    env = _reacher(400)
    env.reset(seed=0)
    target = env.task.model.geom("target")
    pos = env.world.get_param("geom_pos")[:, target]
    radius, heading = np.hypot(pos[:, 0], pos[:, 1]), np.arctan2(pos[:, 1], pos[:, 0])
    assert radius.min() >= 0.05 and radius.max() <= 0.2 and np.ptp(heading) > 6
    assert np.all(pos[:, 2] == env.task.model.geom_pos[target, 2])
    np.testing.assert_array_equal(env.world.get("geom_xpos")[:, target], pos)  # a world geom
    assert env.task.model.geom_size[target, 0] == 0.015  # the hard task's size override


@pytest.mark.parametrize(("term", "params", "message"), [
    ("geom_pos_polar", {"geom": "target", "radius": [0.2, 0.1]}, "0 <= low <= high"),
    ("geom_pos_polar", {"geom": "target", "radius": [0.1, 0.2], "angle": [1, 0]}, "low <= high"),
    ("geom_pos_uniform", {"geom": "target", "low": [0, 0], "high": [1, -1], "axes": [0, 1]}, "must be <= high"),
    ("geom_pos_uniform", {"geom": "target", "low": [0, 0], "high": [1, 1], "axes": [0, 0]}, "axes must be distinct"),
    ("geom_pos_uniform", {"geom": "nowhere", "low": [0, 0, 0], "high": [1, 1, 1]}, "no geom named 'nowhere'"),
])
def test_geom_position_terms_refuse_bad_parameters(term, params, message):
    from taigym.tasks.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        _reacher(1, randomization=[{"term": term, "params": params}])


def test_geom_pos_uniform_draws_in_its_box_and_keeps_the_other_axes():
    env = _reacher(200, randomization=[{"term": "geom_pos_uniform",
                                        "params": {"geom": "target", "low": [-0.1, 0.02], "high": [0.1, 0.05],
                                                   "axes": [0, 2]}}])
    env.reset(seed=1)
    model = env.task.model
    pos = env.world.get_param("geom_pos")[:, model.geom("target")]
    assert np.all((pos[:, 0] >= -0.1) & (pos[:, 0] <= 0.1) & (pos[:, 2] >= 0.02) & (pos[:, 2] <= 0.05))
    assert np.all(pos[:, 1] == model.geom_pos[model.geom("target"), 1])


def test_a_mesh_geoms_size_is_not_overridden(tmp_path):
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.tasks.errors import ConfigError

    (tmp_path / "tetra.xml").write_text("""<mujoco><asset><mesh name="m" vertex="0 0 0 .1 0 0 0 .1 0 0 0 .1"/></asset>
      <worldbody><body><freejoint/><geom name="tetra" type="mesh" mesh="m"/></body></worldbody></mujoco>""")
    (tmp_path / "tetra.yaml").write_text(f"""id: Test/tetra-v0
episode_length: 10
robot:
  asset: {tmp_path / "tetra.xml"}
  geoms:
    tetra: {{size: [0.1]}}
observations:
  - term: qpos
""")
    with pytest.raises(ConfigError, match="size comes from its asset"):
        TaiGymVectorEnv(str(tmp_path / "tetra.yaml"), 1)
