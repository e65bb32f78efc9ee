"""Joint-limit models (physics/smooth/limits.py), float64: a hinge driven into each kind of limit by
a constant torque rests where that model says; the cubic penalty's energy and force
follow the formula; a hard limit bounces with its restitution; a ball joint's elliptical
cone and twist range hold; the taigym: MJCF attributes reach the Model."""

import mujoco
import numpy as np
import pytest
from taigym.physics.compiler.builder import JointLimit
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.errors import ModelError
from taigym.physics.model import LIMIT_CUBIC, LIMIT_HARD, LIMIT_SOFT, LIMIT_SPRING
from taigym.physics.smooth.limits import cubic_limit

from taigym import physics

TORQUE = 1.0
UPPER = 0.5

HINGE = """<mujoco xmlns:taigym="urn:taigym">
  <compiler angle="radian"/>
  <option timestep="{h}" gravity="0 0 0" integrator="{integrator}"/>
  <worldbody>
    <body name="arm">
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
      <joint name="hinge" axis="0 1 0" range="-0.5 0.5" damping="3" {limit}/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge"/></actuator>
</mujoco>"""


def _rest(xml, steps, device, qvel0=0.0, ctrl=TORQUE):
    world = physics.World(load_mjcf_string(xml), num_envs=1, device=device, precision="float64")
    world.set_state(qvel=[qvel0])
    world.set_ctrl([ctrl])
    world.step(steps)
    return world.get("qpos")[0, 0], world.get("qvel")[0, 0]


def seed_energy(x, l, u, s):
    """The cubic limit exactly as the revolute-limit seed writes it."""
    if u == l:
        return s * abs(x - l) ** 3
    if x > u:
        return s * ((x - u) / (u - l)) ** 3
    if x < l:
        return s * ((l - x) / (u - l)) ** 3
    return 0.0


@pytest.mark.parametrize("l, u", [(-0.5, 0.5), (0.2, 0.2), (-2.0, 1.0)])
def test_cubic_energy_and_force_follow_the_formula(l, u):
    s = 3.0
    xs = np.concatenate([np.linspace(l - 1.5, u + 1.5, 41), [l, u, np.nextafter(u, 9), np.nextafter(l, -9)]])
    energy, force, stiffness = cubic_limit(xs, l, u, s)
    np.testing.assert_allclose(energy, [seed_energy(x, l, u, s) for x in xs], rtol=1e-12, atol=1e-300)
    assert energy[-4] == energy[-3] == 0.0 and force[-4] == force[-3] == 0.0  # bounds are inside
    eps = 1e-6
    np.testing.assert_allclose(force, [(seed_energy(x + eps, l, u, s) - seed_energy(x - eps, l, u, s)) / (2 * eps)
                                       for x in xs], atol=1e-7)
    np.testing.assert_allclose(stiffness, (cubic_limit(xs + eps, l, u, s)[1] - cubic_limit(xs - eps, l, u, s)[1])
                               / (2 * eps), atol=1e-5)  # one-sided at the bounds: O(eps)


def test_cubic_force_in_the_pipeline(device):
    """qfrc_passive of the kernels is -dE/dx, at the bounds, inside, outside and for u = l."""
    b = physics.ModelBuilder()
    for k, (l, u) in enumerate([(-0.5, 0.5), (0.3, 0.3)]):
        body = b.add_body(0, mass=1.0, inertia=(1, 1, 1), name=f"b{k}")
        b.add_joint(body, "slide" if k else "hinge", axis=(1, 0, 0), range=(l, u),
                    limit=JointLimit("cubic", strength=2.5))
    model = b.finalize()
    assert list(model.jnt_limit_model) == [LIMIT_CUBIC, LIMIT_CUBIC]
    xs = np.array([[-0.9, 0.3], [-0.5, 0.3], [0.0, 0.1], [0.5, 0.45], [0.8, -0.2]])
    world = physics.World(model, num_envs=len(xs), device=device, precision="float64")
    world.set_state(qpos=xs)
    world.forward()
    expect = -np.stack([cubic_limit(xs[:, 0], -0.5, 0.5, 2.5)[1], cubic_limit(xs[:, 1], 0.3, 0.3, 2.5)[1]], axis=1)
    np.testing.assert_allclose(world.get("qfrc_passive"), expect, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(world.get("implicit_stiffness")[:, 1], cubic_limit(xs[:, 1], 0.3, 0.3, 2.5)[2])
    assert world.get("nefc").sum() == 0  # a cubic limit makes no constraint rows


@pytest.mark.parametrize("integrator", ["Euler", "implicitspringdamper"])
def test_hinge_rests_where_each_limit_model_says(integrator, device):
    h, steps = 0.01, 2000
    # MuJoCo's soft limit: the same MJCF run by mujoco
    xml = HINGE.format(h=h, integrator=integrator, limit="")
    q_soft, _ = _rest(xml, steps, device)
    if integrator == "Euler":
        mjm = mujoco.MjModel.from_xml_string(xml.replace(' xmlns:taigym="urn:taigym"', ""))
        d = mujoco.MjData(mjm)
        d.ctrl[0] = TORQUE
        for _ in range(steps):
            mujoco.mj_step(mjm, d)
        assert q_soft > UPPER and abs(q_soft - d.qpos[0]) < 1e-9
    # hard limit: at the bound, within its contact distance
    q_hard, v_hard = _rest(HINGE.format(h=h, integrator=integrator,
                                        limit='taigym:limit="hard" taigym:limit_distance="0.05"'), steps, device)
    # the row is near-rigid (R = 1e-4 A): it gives by h^2 R torque = 1e-8 rad
    assert UPPER - 0.05 <= q_hard <= UPPER + 2e-8 and abs(v_hard) < 1e-9
    # cubic limit: dE/dx = torque, i.e. x = u + w sqrt(torque w / (3 s))
    s, w = 2.0, 1.0
    q_cubic, _ = _rest(HINGE.format(h=h, integrator=integrator,
                                    limit=f'taigym:limit="cubic" taigym:limit_strength="{s}"'), steps, device)
    assert abs(q_cubic - (UPPER + w * np.sqrt(TORQUE * w / (3 * s)))) < 1e-8
    # spring limit: k (x - u) = torque
    k = 40.0
    q_spring, _ = _rest(HINGE.format(h=h, integrator=integrator,
                                     limit=f'taigym:limit="spring" taigym:limit_stiffness="{k}" '
                                           'taigym:limit_damping="1"'), steps, device)
    assert abs(q_spring - (UPPER + TORQUE / k)) < 1e-8


@pytest.mark.parametrize("restitution", [0.0, 0.5, 0.9])
def test_hard_limit_bounces_with_its_restitution(restitution, device):
    """Thrown at 3 rad/s against the upper bound: it comes back at e * 3 rad/s and never
    passes the bound."""
    xml = HINGE.format(h=0.002, integrator="Euler", limit=f'taigym:limit="hard" taigym:limit_restitution='
                                                           f'"{restitution}" taigym:limit_bounce="0.1"')
    xml = xml.replace('damping="3"', 'damping="0"')
    world = physics.World(load_mjcf_string(xml), num_envs=1, device=device, precision="float64")
    world.set_state(qvel=[3.0])
    qs, vs = [], []
    for _ in range(200):  # it reaches the bound after ~83 steps; back at the other bound after 650
        world.step()
        qs.append(world.get("qpos")[0, 0])
        vs.append(world.get("qvel")[0, 0])
    assert max(qs) <= UPPER + 1e-4 * 3.0 * 0.002  # near-rigid: 1e-4 of one step's travel
    after = np.array(vs[100:])
    np.testing.assert_allclose(after, -restitution * 3.0, atol=1e-3)


def _swing_twist(q):
    """(swing rotation vector (y, z), twist angle) of unit quaternions q (..., 4), PhysX's
    split q = swing * twist with the twist about x."""
    q = np.where(q[..., :1] < 0, -q, q)
    w, x, y, z = np.moveaxis(q, -1, 0)
    twist = 2 * np.arctan2(x, w)
    d = np.stack([w * w + x * x - y * y - z * z, 2 * (x * y + w * z), 2 * (x * z - w * y)], axis=-1)
    sin = np.linalg.norm(d[..., 1:], axis=-1)
    phi = np.arctan2(sin, d[..., 0])
    scale = np.where(sin > 1e-12, phi / np.maximum(sin, 1e-12), 1.0)
    return np.stack([-d[..., 2] * scale, d[..., 1] * scale], axis=-1), twist


@pytest.mark.parametrize("model", ["hard", "spring"])
def test_ball_cone_and_twist_hold(model, device):
    """Torques in eight directions press a ball joint into an elliptical cone (0.4 rad
    about y, 0.8 about z) and against its twist range (+-0.3): the swing stays inside
    the ellipse and the twist in its range, and each rests on the boundary."""
    cone, twist = (0.4, 0.8), (-0.3, 0.3)
    b = physics.ModelBuilder()
    b.opt.gravity = np.zeros(3)
    body = b.add_body(0, mass=1.0, inertia=(1, 1, 1))
    b.add_joint_ball(body, damping=2.0, limit=JointLimit(model, cone=cone, twist=twist, stiffness=1e4, damping=50.0,
                                                        distance=0.05))
    m = b.finalize()
    assert m.jnt_limit_model[0] == (LIMIT_HARD if model == "hard" else LIMIT_SPRING)
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    torque = np.stack([0.5 * np.sign(np.cos(3 * angles)), 2 * np.cos(angles), 2 * np.sin(angles)], axis=1)
    world = physics.World(m, num_envs=len(angles), device=device, precision="float64")
    world.set_qfrc_applied(torque)
    worst = 0.0
    for _ in range(150):
        world.step(10)
        swing, tw = _swing_twist(world.get("qpos"))
        worst = max(worst, np.max((swing[:, 0] / cone[0]) ** 2 + (swing[:, 1] / cone[1]) ** 2),
                    np.max(np.abs(tw)) / twist[1])
    # hard: the rows hold the linearized cone, which the curved ellipse leaves by O(step^2)
    # while the swing slides along it (3e-5: ~3e-6 rad); spring: it gives by torque /
    # stiffness at rest, and a little more on impact
    tol = 3e-5 if model == "hard" else 2e-3
    assert worst <= 1 + (tol if model == "hard" else 0.05)
    ellipse = (swing[:, 0] / cone[0]) ** 2 + (swing[:, 1] / cone[1]) ** 2
    assert np.all(ellipse > 1 - tol) and np.all(np.abs(np.abs(tw) - twist[1]) < tol)


def test_mjcf_limit_attributes():
    xml = """<mujoco xmlns:taigym="urn:taigym">
      <default><joint taigym:limit_distance="2"/></default>
      <worldbody><body><geom size="0.1"/>
        <joint name="a" ref="10" taigym:limit="cubic" taigym:limit_lower="-30" taigym:limit_upper="45"
               taigym:limit_strength="7"/>
        <body><geom size="0.1"/><joint name="b" type="slide" range="-1 1" taigym:limit="hard"
               taigym:limit_restitution="0.5"/></body>
        <body><geom size="0.1"/><joint name="c" type="ball" taigym:limit="spring" taigym:cone="20 40"
               taigym:twist="-10 10" taigym:limit_stiffness="100" taigym:limit_acceleration="true"/></body>
        <body><geom size="0.1"/><joint name="d" range="-10 10"/></body>
      </body></worldbody>
    </mujoco>"""
    m = load_mjcf_string(xml)
    assert list(m.jnt_limit_model) == [LIMIT_CUBIC, LIMIT_HARD, LIMIT_SPRING, LIMIT_SOFT]
    assert list(m.jnt_limited) == [1, 1, 1, 1]
    np.testing.assert_allclose(m.jnt_range[0], np.deg2rad([-20, 55]))  # bounds measured from ref
    np.testing.assert_allclose(m.qpos0[0], np.deg2rad(10))
    assert m.jnt_limit_strength[0] == 7 and m.jnt_limit_restitution[1] == 0.5
    np.testing.assert_allclose(m.jnt_limit_distance[:3], [np.deg2rad(2), 2, np.deg2rad(2)])  # angles convert
    np.testing.assert_allclose(m.jnt_cone[2], np.deg2rad([20, 40]))
    np.testing.assert_allclose(m.jnt_twist[2], np.deg2rad([-10, 10]))
    assert m.jnt_limit_acceleration[2] == 1 and m.jnt_limit_stiffness[2] == 100


_NS = ' xmlns:taigym="urn:taigym"'


def _joint_xml(attrs, namespace=_NS):
    return f'<mujoco{namespace}><worldbody><body><geom size=".1"/><joint {attrs}/></body></worldbody></mujoco>'


@pytest.mark.parametrize("xml, attribute, message", [
    (_joint_xml('taigym:limit="cubic" range="0 1"', namespace=""), "taigym:limit", "xmlns:taigym"),
    (_joint_xml('taigym:limt="cubic"'), "taigym:limt", "not supported"),
    (_joint_xml('taigym:limit="rubber" range="0 1"'), "taigym:limit", "expected one of"),
    (_joint_xml('taigym:limit="cubic"'), "range", "needs a range"),
])
def test_mjcf_limit_errors_name_the_attribute(xml, attribute, message):
    with pytest.raises(ModelError) as e:
        load_mjcf_string(xml)
    text = str(e.value)
    assert attribute in text and message in text and ":1" in text and "joint" in text
