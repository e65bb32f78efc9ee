"""Analytic checks: a pendulum's period and energy conservation (float64)."""

import numpy as np
import pytest
from taigym.physics.model import INT_RK4

from taigym import physics


def _pendulum(length, mass, links=1, timestep=1e-3):
    """Chain of ``links`` hinges about y, each a point-like mass ``length`` below the last."""
    b = physics.ModelBuilder()
    b.opt.timestep = timestep
    b.opt.integrator = INT_RK4
    parent = 0
    for k in range(links):
        body = b.add_body(parent, pos=(0, 0, 0 if k == 0 else -length), name=f"link{k}",
                          mass=mass, com=(0, 0, -length), inertia=(1e-6, 1e-6, 1e-6))
        b.add_joint_revolute(body, axis=(0, 1, 0), name=f"hinge{k}")
        parent = body
    return b.finalize()


@pytest.mark.slow
def test_small_angle_period(device):
    # T = 2 pi sqrt(I / (m g L)) for a physical pendulum with I = m L^2 + I_com
    length, mass, g = 0.7, 1.3, 9.81
    model = _pendulum(length, mass)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qpos=[0.01])
    expected = 2 * np.pi * np.sqrt((mass * length**2 + 1e-6) / (mass * g * length))
    angles = []
    for _ in range(int(3.2 * expected / model.opt.timestep)):
        world.step(1)
        angles.append(world.get("qpos")[0, 0])
    angles = np.array(angles)
    t = (np.arange(len(angles)) + 1) * model.opt.timestep
    # downward zero crossings, interpolated
    idx = np.nonzero((angles[:-1] > 0) & (angles[1:] <= 0))[0]
    crossings = t[idx] + angles[idx] / (angles[idx] - angles[idx + 1]) * model.opt.timestep
    period = np.mean(np.diff(crossings))
    # amplitude 0.01 rad lengthens the period by (1/16) theta^2 ~ 6e-6, far inside 0.1 %
    assert abs(period - expected) / expected < 1e-3, (period, expected)


def _energy(world, model):
    """Kinetic 1/2 v^T M v plus potential -sum m g . xipos."""
    qvel = world.get("qvel")
    kinetic = 0.5 * np.einsum("ni,nij,nj->n", qvel, world.get("qM"), qvel)
    potential = -np.einsum("b,nbk,k->n", model.body_mass, world.get("xipos"), model.opt.gravity)
    return kinetic + potential


def test_double_pendulum_energy_drift(device):
    model = _pendulum(0.5, 1.0, links=2, timestep=1e-3)
    world = physics.World(model, num_envs=3, device=device, precision="float64")
    world.set_state(qpos=np.array([[1.0, -0.5], [2.0, 1.0], [0.3, 2.5]]))
    world.forward()
    e0 = _energy(world, model)
    worst = 0.0
    for _ in range(100):  # 10 s
        world.step(100)
        world.forward()
        worst = max(worst, np.max(np.abs(_energy(world, model) - e0) / np.abs(e0)))
    assert worst < 1e-4, worst
