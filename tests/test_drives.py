"""PD drives (physics/smooth/drives.py), float64: stiff gains are stable at task time steps because
they are integrated implicitly, the force never exceeds its limit, acceleration drives
move alike whatever the inertia, and targets are per env."""

import numpy as np
import pytest
from taigym.physics.compiler.builder import D6Axis
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics


def _hinges(inertias, *, stiffness, damping, force_limit=np.inf, acceleration=False, h=0.01,
            integrator=physics.model.INT_EULER):
    """Independent hinges, one per inertia, each with the same drive; no gravity."""
    b = physics.ModelBuilder()
    b.opt.timestep = h
    b.opt.gravity = np.zeros(3)
    b.opt.integrator = integrator
    for k, inertia in enumerate(inertias):
        body = b.add_body(0, mass=1.0, inertia=(inertia, inertia, inertia), name=f"b{k}")
        j = b.add_joint_revolute(body, axis=(0, 0, 1), name=f"j{k}")
        b.add_drive(j, stiffness=stiffness, damping=damping, force_limit=force_limit, acceleration=acceleration)
    return b.finalize()


def _run(world, steps, velocities=None):
    q, f = [], []
    for _ in range(steps):
        world.step()
        q.append(world.get("qpos")[0])
        f.append(world.get("qfrc_drive")[0])
        if velocities is not None:
            velocities.append(world.get("qvel")[0])
    return np.array(q), np.array(f)


def _peaks(error):
    """The error's largest magnitude in each run of one sign (one per half oscillation)."""
    runs = np.split(np.abs(error), np.nonzero(np.diff(np.sign(error)) != 0)[0] + 1)
    return np.array([r.max() for r in runs])


@pytest.mark.parametrize("h", [0.002, 0.01, 0.02])
@pytest.mark.parametrize("damping", [0.0, 2 * np.sqrt(1e5)])
@pytest.mark.parametrize("integrator", ["Euler", "implicitspringdamper"])
def test_stiff_drive_settles_at_task_time_steps(h, damping, integrator, device):
    """Stiffness 1e5 on unit inertia (period 20 ms, as long as the largest step): the
    error to a 0.5 rad step never grows and ends below 1e-6; with a force limit of 500
    the force stays within it at every step. (Undamped and saturated, the drive is a
    constant force nearly all the way: that oscillation keeps its amplitude, as it
    physically should, so it is only checked for growth.)"""
    integ = physics.model.INTEGRATORS[integrator]
    for limit in (np.inf, 500.0):
        world = physics.World(_hinges([1.0], stiffness=1e5, damping=damping, force_limit=limit, h=h,
                                      integrator=integ), device=device, precision="float64")
        world.set_drive_target(q=[0.5])
        v = [np.zeros(1)]
        q, f = _run(world, round(1.5 / h), v)
        error = q[:, 0] - 0.5
        applied = np.diff(np.array(v)[:, 0]) / h  # unit inertia: the force the steps applied
        assert np.abs(applied).max() <= limit * (1 + 1e-9)
        peaks = _peaks(error)[1:]  # the first run starts mid-swing, at the step
        assert np.all(peaks[2:] <= peaks[:-2] + 1e-9), "oscillation grows"  # same-side extrema
        assert np.all(np.isfinite(q)) and np.abs(error).max() <= 0.5 + 1e-12
        if damping > 0 or not np.isfinite(limit):
            assert abs(error[-1]) < 1e-6
        assert np.abs(f).max() <= limit
        if np.isfinite(limit):
            assert np.abs(f).max() == limit  # it saturated on the way


def test_explicit_integration_of_the_same_drive_diverges(device):
    """The same drive under RK4 (explicit) blows up at 10 ms: why drives are implicit."""
    world = physics.World(_hinges([1.0], stiffness=1e5, damping=0.0, h=0.01, integrator=physics.model.INT_RK4),
                          device=device, precision="float64")
    world.set_drive_target(q=[0.5])
    q, _ = _run(world, 20)
    assert not np.all(np.abs(q[-1]) < 10)


def test_acceleration_drive_is_independent_of_inertia(device):
    inertias = [0.1, 1.0, 25.0]
    world = physics.World(_hinges(inertias, stiffness=400.0, damping=20.0, acceleration=True), device=device,
                          precision="float64")
    world.set_drive_target(q=np.full(3, 0.8), qd=np.zeros(3))
    q, f = _run(world, 150)
    np.testing.assert_allclose(q[:, 1:], np.repeat(q[:, :1], 2, axis=1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(f / inertias, np.repeat(f[:, :1] / inertias[0], 3, axis=1), rtol=1e-9)  # force ~ inertia
    assert abs(q[-1, 0] - 0.8) < 1e-3
    # a force drive with the same gains does depend on the inertia
    world = physics.World(_hinges(inertias, stiffness=400.0, damping=20.0), device=device, precision="float64")
    world.set_drive_target(q=np.full(3, 0.8))
    q, _ = _run(world, 50)
    assert np.ptp(q[-1]) > 0.1


def test_targets_per_env_and_velocity_targets(device):
    world = physics.World(_hinges([1.0], stiffness=0.0, damping=50.0), num_envs=3, device=device, precision="float64")
    world.set_drive_target(qd=np.array([[1.0], [-2.0], [0.5]]))
    world.set_drive_target(qd=[3.0], env_ids=[2])
    world.step(200)
    np.testing.assert_allclose(world.get("qvel")[:, 0], [1.0, -2.0, 3.0], rtol=1e-9)
    np.testing.assert_allclose(world.get("drive_qvel_target")[:, 0], [1.0, -2.0, 3.0])
    world.reset()
    np.testing.assert_allclose(world.get("drive_qvel_target")[:, 0], [1.0, -2.0, 3.0])  # targets persist


def test_drive_from_mjcf_and_d6(device):
    xml = """<mujoco xmlns:taigym="urn:taigym">
      <option gravity="0 0 0" timestep="0.01"/>
      <worldbody><body><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
        <joint name="j" axis="0 0 1" taigym:drive_stiffness="1e5" taigym:drive_damping="600"
               taigym:drive_forcelimit="200" taigym:drive_acceleration="false"/>
      </body></worldbody>
    </mujoco>"""
    m = load_mjcf_string(xml)
    assert (m.dof_drive_stiffness[0], m.dof_drive_damping[0], m.dof_drive_forcelimit[0]) == (1e5, 600, 200)
    b = physics.ModelBuilder()
    body = b.add_body(0, mass=1.0, inertia=(1, 1, 1))
    b.add_joint_d6(body, linear_axes=[D6Axis((1, 0, 0), drive_stiffness=10.0, drive_damping=1.0)],
                   angular_axes=[D6Axis((0, 0, 1), drive_stiffness=5.0, drive_acceleration=True)])
    m = b.finalize()
    np.testing.assert_allclose(m.dof_drive_stiffness, [10.0, 5.0])
    assert list(m.dof_drive_acceleration) == [0, 1] and np.all(np.isinf(m.dof_drive_forcelimit))
    world = physics.World(m, device=device, precision="float64")
    world.set_drive_target(q=[0.1, -0.2])
    world.forward()
    force = np.array([1.0, -0.2 * 5.0 / m.dof_invweight0[1]])  # k e, times the inertia for an acceleration drive
    np.testing.assert_allclose(world.get("qfrc_actuator")[0], force)
    h, k, c = m.opt.timestep, np.array([10.0, 5.0 / m.dof_invweight0[1]]), np.array([1.0, 0.0])
    # at rest, what the implicit step applies: force / (1 + h (h k + c) / inertia)
    np.testing.assert_allclose(world.get("qfrc_drive")[0], force / (1 + h * (h * k + c) * m.dof_invweight0))


@pytest.mark.parametrize("load, holds", [(0.3, True), (1.0, False)])
def test_drive_holds_a_load_only_within_its_limit(load, holds, device):
    """A stiff drive (limit 0.5) against a constant load: it holds 0.3 with exactly that
    force; a load of 1 pushes it away while it pushes back with its limit."""
    world = physics.World(_hinges([1.0], stiffness=1e5, damping=600.0, force_limit=0.5), device=device,
                          precision="float64")
    world.set_qfrc_applied([load])
    v = []
    q, f = _run(world, 300, v)
    applied = np.diff(np.array([np.zeros(1), *v])[:, 0]) / 0.01 - load
    assert np.abs(f).max() <= 0.5 and np.abs(applied).max() <= 0.5 * (1 + 1e-9)
    if holds:
        assert abs(q[-1, 0]) < 1e-5 and abs(f[-1, 0] + load) < 1e-9
    else:
        assert q[-1, 0] > 1.0 and f[-1, 0] == -0.5
