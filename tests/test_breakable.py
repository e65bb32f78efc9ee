"""Breakable equality constraints: a constraint whose transmitted force or torque passes
its limit turns off in that env only, and the break is recorded for the env layer."""

import numpy as np
import pytest
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics


def _hanging_box(**limits):
    b = physics.ModelBuilder()
    box = b.add_body(0, pos=(0, 0, 1), name="box", mass=1.0, inertia=(0.01, 0.01, 0.01))
    b.add_joint_free(box)
    b.add_equality_weld("box", name="hook", **limits)
    return b.finalize()


def test_overloaded_weld_breaks_in_its_env_only(device):
    """A 1 kg box hangs from a weld that holds 15 N: its weight alone (9.81 N) and 3 N
    more are held; 20 N more breaks it, and that box falls while the others hang on."""
    world = physics.World(_hanging_box(break_force=15.0), num_envs=3, device=device, precision="float64")
    push = np.zeros((3, 6))
    push[1, 2], push[2, 2] = -20.0, -3.0
    world.set_qfrc_applied(push)
    world.step(200)
    np.testing.assert_array_equal(world.get("eq_active")[:, 0], [True, False, True])
    np.testing.assert_array_equal(world.broken_equalities()[:, 0], [False, True, False])
    assert not world.broken_equalities().any()  # the event is reported once
    height = world.get("qpos")[:, 2]
    assert abs(height[0] - 1) < 1e-3 and abs(height[2] - 1) < 1e-3 and height[1] < 0


def test_torque_limit_and_reset(device):
    world = physics.World(_hanging_box(break_torque=2.0), num_envs=2, device=device, precision="float64")
    twist = np.zeros((2, 6))
    twist[1, 5] = 3.0  # 3 N m about z against a 2 N m limit
    world.set_qfrc_applied(twist)
    world.step(50)
    np.testing.assert_array_equal(world.get("eq_active")[:, 0], [True, False])
    world.reset(env_ids=[1])
    assert world.get("eq_active").all() and not world.broken_equalities().any()


def test_switching_constraints_per_env(device):
    world = physics.World(_hanging_box(), num_envs=2, device=device, precision="float64")
    world.set_equality_active([[True], [False]])
    world.step(100)
    height = world.get("qpos")[:, 2]
    assert abs(height[0] - 1) < 1e-3 and height[1] < 0.9


def test_break_limits_from_mjcf():
    xml = """<mujoco xmlns:taigym="urn:taigym"><worldbody><body name="b" pos="0 0 1"><freejoint/>
      <geom size="0.1"/></body></worldbody><equality>
      <weld body1="b" taigym:break_force="40" taigym:break_torque="7"/>
      <connect body1="b" anchor="0 0 0" taigym:break_force="10"/></equality></mujoco>"""
    model = load_mjcf_string(xml)
    np.testing.assert_array_equal(model.eq_break_force, [40.0, 10.0])
    np.testing.assert_array_equal(model.eq_break_torque, [7.0, np.inf])
    with pytest.raises(ModelError, match="only a weld transmits torque") as info:
        load_mjcf_string(xml.replace('taigym:break_force="10"', 'taigym:break_torque="10"'))
    assert info.value.attribute == "taigym:break_torque"
    with pytest.raises(ModelError, match="must be > 0"):
        physics.ModelBuilder().add_equality_weld(0, break_force=0.0)
