"""MuJoCo's no-slip pass (physics/constraint/rows/noslip.py) against mujoco, float64.

The scene's contacts are soft enough to creep: a box that gravity, tilted, pushes sideways
below its friction limit, a sphere of condim 6 and a capsule of condim 4 beside it, and a
hinge with friction loss, so that
every kind of row the pass updates (pyramid edges, elliptic friction, friction loss)
takes part. MuJoCo sweeps each island of rows on its own and stops each at its
tolerance; taigym sweeps an env's rows together, which updates each row in the same
order, so with islands off in MuJoCo the two agree to round-off.
"""

import mujoco
import numpy as np
import pytest
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

SCENE = """<mujoco>
  <option timestep="0.004" gravity="2 0 -9.81" cone="{cone}" solver="{solver}" noslip_iterations="{noslip}"/>
  <default><geom solref="0.05 1" friction="0.6 0.01 0.005"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body pos="0 0 0.05"><freejoint/><geom type="box" size="0.1 0.08 0.05" condim="3"/></body>
    <body pos="0.4 0 0.3"><freejoint/><geom type="sphere" size="0.1" condim="6"/></body>
    <body pos="-0.4 0.3 0.2"><freejoint/><geom type="capsule" size="0.05 0.1" euler="0 70 0" condim="4"/></body>
    <body pos="0 -0.6 0.8">
      <joint type="hinge" axis="0 1 0" frictionloss="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"""
STEPS = 200
# Newton stops at its tolerance (1e-8), where the two engines' last iterates differ a
# little; over 200 steps the elliptic cone's sliding sphere carries that to 4e-9, with
# or without the pass (measured; pyramidal cones stay at 1e-13)
TOL = 1e-8


def _rollout_mujoco(xml):
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    d = mujoco.MjData(mjm)
    out = []
    for _ in range(STEPS):
        mujoco.mj_step(mjm, d)
        out.append((d.qpos.copy(), d.qvel.copy()))
    return out


def _rollout_taigym(xml, device, schedule=None):
    world = physics.World(load_mjcf_string(xml), 1, device=device, precision="float64", schedule=schedule)
    out = []
    for _ in range(STEPS):
        world.step()
        out.append((world.get("qpos")[0], world.get("qvel")[0]))
    return out


# the elliptic cone's no-slip pass is a kernel variant of its own: the slow tier runs it
@pytest.mark.parametrize("cone", ["pyramidal", pytest.param("elliptic", marks=pytest.mark.slow)])
def test_noslip_follows_mujoco(cone, device):
    xml = SCENE.format(cone=cone, solver="Newton", noslip=4)
    for (q, v), (mq, mv) in zip(_rollout_taigym(xml, device), _rollout_mujoco(xml)):
        np.testing.assert_allclose(q, mq, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(v, mv, rtol=TOL, atol=TOL)


@pytest.mark.slow  # a kernel variant of its own (PGS)
def test_noslip_after_pgs(device):
    """After PGS, whose A the pass reuses. MuJoCo's PGS sweeps its rows in a shuffled
    order, so the two agree only as far as PGS converges: after 3000 sweeps a step, to
    4e-5 over 5 steps (measured; without the pass, 1.6e-4)."""
    xml = SCENE.format(cone="pyramidal", solver="PGS", noslip=4).replace('noslip_iterations', 'iterations="3000" '
                                                                         'noslip_iterations')
    for (q, v), (mq, mv) in list(zip(_rollout_taigym(xml, device), _rollout_mujoco(xml)))[:5]:
        np.testing.assert_allclose(v, mv, rtol=1e-4, atol=1e-4)


def test_noslip_stops_the_creep(device):
    """The box the soft contact lets creep (7e-4 m in 0.4 s) holds still with the pass
    (6e-6 m in MuJoCo)."""
    def travel(noslip):
        q = _rollout_taigym(SCENE.format(cone="pyramidal", solver="Newton", noslip=noslip), device)
        return np.linalg.norm(q[-1][0][:3] - q[STEPS // 2][0][:3])

    creep, held = travel(0), travel(10)
    assert creep > 3e-4 and held < 0.05 * creep, (creep, held)


@pytest.mark.slow  # a kernel variant of its own (staged)
def test_noslip_staged_schedule_equals_fused(device):
    xml = SCENE.format(cone="elliptic", solver="Newton", noslip=4)
    fused, staged = _rollout_taigym(xml, device), _rollout_taigym(xml, device, schedule="staged")
    np.testing.assert_allclose(staged[-1][1], fused[-1][1], rtol=1e-12, atol=1e-12)


def test_negative_noslip_iterations_are_refused():
    model = load_mjcf_string(SCENE.format(cone="pyramidal", solver="Newton", noslip=4))
    with pytest.raises(physics.WorldError, match="noslip_iterations"):
        physics.World(model.with_options(noslip_iterations=-1), 1)
