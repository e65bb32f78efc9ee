"""The interleaved layout of the per-env tables (physics/runtime/lanes.py) computes what the
env-major layout computes.

The layout is fixed when a process's kernels are traced, so each run is a process of its
own: the same seeded trajectory (random initial states and controls, contacts and joint
limits on the ant) under TAIGYM_LAYOUT=env_major and =interleaved on the CPU backend, with
a batch that is not a multiple of the 32 envs of an interleaved block, and every quantity
a user reads back after it: from the flat tables (bodies, dofs, the mass matrix) and from
the others (qpos, qvel, controls, actuators, constraint rows, contacts). Equality
constraints (their per-env state written from the host) and the standalone collision
stage are compared the same way.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import gym_asset
from taigym.physics import settings
from taigym.physics.runtime.lanes import (LANES, device_rows, device_shape, env_major, env_rows, interleaved, lane_index,
                                  padded_envs)

CHILD = """
import sys
import numpy as np
import mujoco
from taigym import physics

path, solver, cone, out = sys.argv[1:5]
mjm = mujoco.MjModel.from_xml_path(path)
n, steps = 37, 20
rng = np.random.default_rng(1)
qpos = np.tile(mjm.qpos0, (n, 1)) + rng.normal(0, 0.05, (n, mjm.nq))
for j in range(mjm.njnt):
    if mjm.jnt_type[j] == 0:  # a free joint's quaternion stays unit length
        a = mjm.jnt_qposadr[j] + 3
        qpos[:, a:a + 4] /= np.linalg.norm(qpos[:, a:a + 4], axis=1, keepdims=True)
qvel = rng.normal(0, 0.5, (n, mjm.nv))
model = physics.load_model(path)
if solver != "-":
    model = model.with_options(solver=solver, cone=cone)
world = physics.World(model, num_envs=n, precision="float64")
world.set_state(qpos=qpos, qvel=qvel)
trajectory = []
for _ in range(steps):
    world.set_ctrl(rng.uniform(-1, 1, (n, mjm.nu)))
    world.step(n=1)
    trajectory.append(np.concatenate([world.get("qpos"), world.get("qvel")], axis=1))
flat = {name: world.get(name) for name in ("qM", "xpos", "xquat", "cdof", "cinert", "qfrc_bias", "qacc",
                                           "qfrc_constraint", "cfrc_ext", "subtree_com")}
# and the (num_envs, ..., n) tables: controls, actuators, constraint rows, contacts
rows = {name: world.get(name) for name in ("ctrl", "actuator_force", "actuator_length", "efc_force", "efc_pos",
                                           "efc_type", "efc_id", "efc_overflow")}
contacts = {"contact_" + name: value for name, value in world.contacts().items()}
np.savez(out, trajectory=np.array(trajectory), nefc=world.get("nefc"), **flat, **rows, **contacts)
"""


DRIVES_CHILD = """
import sys
import numpy as np
from taigym import physics

b = physics.ModelBuilder()
b.opt.timestep = 0.01
for k in range(3):
    body = b.add_body(0, mass=1.0, inertia=(0.1 * (k + 1),) * 3, name=f"b{k}")
    j = b.add_joint_revolute(body, axis=(0, 1, 0), name=f"j{k}")
    b.add_drive(j, stiffness=50.0, damping=2.0, force_limit=5.0)
n = 35
world = physics.World(b.finalize(), num_envs=n, precision="float64")
targets = np.random.default_rng(0).uniform(-1, 1, (n, 3))
world.set_drive_target(q=targets)
world.set_drive_target(q=targets[::3] * 0.5, env_ids=np.arange(0, n, 3))  # a subset, through the column writer
world.step(n=30)
np.savez(sys.argv[1], qpos=world.get("qpos"), target=world.get("drive_qpos_target"), qfrc=world.get("qfrc_drive"))
"""


EQUALITY_CHILD = """
import sys
import numpy as np
from taigym import physics
from taigym.physics.compiler.mjcf import load_mjcf_string

sys.path.insert(0, sys.argv[1])
from test_equality import LINKAGE

n = 35
world = physics.World(load_mjcf_string(LINKAGE), num_envs=n, precision="float64")
rng = np.random.default_rng(2)
world.set_state(qvel=rng.normal(0, 0.3, (n, world.model.nv)))
active = np.ones((n, world.model.neq))
active[::4, 1] = 0  # the weld off in some envs, written through the equality state
world.set_equality_active(active)
world.step(n=25)
np.savez(sys.argv[2], qpos=world.get("qpos"), efc_force=world.get("efc_force"), efc_type=world.get("efc_type"),
         nefc=world.get("nefc"), broken=world.broken_equalities())
"""


COLLIDER_CHILD = """
import sys
import numpy as np
from taigym import physics
from taigym.physics.collision.driver import Collider

model = physics.load_model(sys.argv[1])
n = 33
world = physics.World(model, num_envs=n, precision="float64")
rng = np.random.default_rng(3)
world.set_state(qpos=world.get("qpos") + rng.normal(0, 0.3, (n, model.nq)))
world.forward()
collider = Collider(model, n, precision="float64")
collider.collide(world.get("xpos"), world.get("xquat"))
found = collider.get()
np.savez(sys.argv[2], geom_xpos=collider.geom_xpos(), ncon=found["ncon"], dist=found["dist"], geom=found["geom"],
         frame=found["frame"])
"""


VECTOR_CHILD = """
import sys
import gymnasium as gym
import numpy as np
import taigym  # noqa: F401  (registers the tasks)

vec = gym.make_vec("TaiGym/Ant-v0", num_envs=35, max_episode_steps=40)
rng = np.random.default_rng(4)
obs, _ = vec.reset(seed=5)
record = {"obs0": obs}
rewards, dones, observations = [], [], []
for _ in range(90):  # two truncations, and terminations, reset inside the launch
    obs, rew, term, trunc, _ = vec.step(rng.uniform(-1, 1, vec.action_space.shape))
    observations.append(obs)
    rewards.append(rew)
    dones.append(np.stack([term, trunc]))
np.savez(sys.argv[1], obs=np.array(observations), rew=np.array(rewards), done=np.array(dones), **record)
"""


def _run(tmp_path, layout: str, *args, child: str = CHILD) -> dict:
    env = dict(os.environ, TAIGYM_LAYOUT=layout, TAIGYM_TEST_DEVICE="cpu")
    out = tmp_path / f"{layout}.npz"
    proc = subprocess.run([sys.executable, "-c", child, *args, str(out)], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(out))


def _compare(tmp_path, model: str, solver: str = "-", cone: str = "-", atol: float = 1e-12):
    plain = _run(tmp_path, "env_major", gym_asset(model), solver, cone)
    lanes = _run(tmp_path, "interleaved", gym_asset(model), solver, cone)
    assert plain["nefc"].sum() > 0  # contacts and limits were in play
    assert plain["contact_ncon"].sum() > 0
    # the same arithmetic on other addresses, compiled apart: after one step the states agree
    # to round-off; over 20 steps of flailing with contacts, round-off grows, most through an
    # iterative CG solve, hence each case's ``atol`` (and 1e-9 relative, for accelerations of
    # hundreds) for the rest
    np.testing.assert_allclose(lanes["trajectory"][0], plain["trajectory"][0], rtol=1e-12, atol=1e-12)
    for name, value in plain.items():
        np.testing.assert_allclose(lanes[name], value, rtol=1e-9, atol=atol, err_msg=name)


@pytest.mark.slow
def test_interleaved_layout_steps_the_ant_as_the_env_major_one(tmp_path, device):
    if device != "cpu":
        pytest.skip("both layouts are compared on the CPU backend")
    _compare(tmp_path, "ant")  # Newton, pyramidal cones


@pytest.mark.slow
@pytest.mark.parametrize("model, solver, cone, atol", [("humanoid", "-", "-", 1e-10),  # PGS, pyramidal
                                                       ("ant", "CG", "elliptic", 1e-6),
                                                       ("ant", "Newton", "elliptic", 1e-9)])
def test_interleaved_layout_with_every_solver_and_cone(tmp_path, device, model, solver, cone, atol):
    if device != "cpu":
        pytest.skip("both layouts are compared on the CPU backend")
    _compare(tmp_path, model, solver, cone, atol)


@pytest.mark.slow
def test_interleaved_layout_writes_drive_targets_where_the_kernels_read_them(tmp_path, device):
    if device != "cpu":
        pytest.skip("both layouts are compared on the CPU backend")
    plain = _run(tmp_path, "env_major", child=DRIVES_CHILD)
    lanes = _run(tmp_path, "interleaved", child=DRIVES_CHILD)
    assert np.abs(plain["qpos"]).max() > 0.1  # the drives moved the joints
    for name, value in plain.items():
        np.testing.assert_allclose(lanes[name], value, rtol=0, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("num_envs", [1, 31, 32, 33, 70])
def test_host_order_round_trips_through_the_interleaved_entries(num_envs):
    rows = np.random.default_rng(num_envs).normal(size=(num_envs, 12))
    flat = interleaved(rows, LANES)
    assert flat.shape == (padded_envs(num_envs, LANES) * 12,)
    # entry e of env w sits at (w // 32) * stride * 32 + e * 32 + w % 32
    w, e = num_envs - 1, 5
    assert flat[(w // LANES) * 12 * LANES + e * LANES + w % LANES] == rows[w, e]
    np.testing.assert_array_equal(env_major(flat, num_envs, LANES), rows)
    np.testing.assert_array_equal(env_major(rows.ravel(), num_envs, 1), rows)


def test_torch_copies_come_back_in_env_major_order():
    torch = pytest.importorskip("torch")
    rows = np.random.default_rng(0).normal(size=(45, 7))
    back = env_major(torch.from_numpy(interleaved(rows, LANES)), 45, LANES)
    np.testing.assert_array_equal(back.numpy(), rows)


@pytest.mark.parametrize("shape", [(1, 5), (33, 5), (64, 4, 6), (70, 3, 2)])
def test_env_tables_round_trip_through_their_interleaved_shape(shape):
    torch = pytest.importorskip("torch")
    rows = np.random.default_rng(shape[0]).normal(size=shape)
    table = device_rows(rows, LANES)
    assert table.shape == device_shape(shape, LANES) == (padded_envs(shape[0], LANES) // LANES, *shape[1:-1],
                                                         shape[-1] * LANES)
    # the index a kernel builds (env_index) finds each env's entry; a warp's 32 envs' copies of
    # one entry are consecutive in memory
    w, entry = shape[0] - 1, tuple(n - 1 for n in shape[1:])
    assert table[lane_index(LANES, w, *entry)] == rows[(w, *entry)]
    block = table.reshape(-1)[: LANES]
    np.testing.assert_array_equal(block[: min(shape[0], LANES)], rows[:LANES].reshape(-1, int(np.prod(shape[1:])))[:, 0])
    np.testing.assert_array_equal(env_rows(table, shape[0], LANES), rows)
    np.testing.assert_array_equal(env_rows(torch.from_numpy(table), shape[0], LANES).numpy(), rows)
    assert env_rows(rows, shape[0], 1) is rows and device_rows(rows, 1) is rows


def test_each_device_takes_its_measured_layout_unless_told(monkeypatch):
    from taigym.physics.runtime import backend, lanes

    monkeypatch.delenv("TAIGYM_LAYOUT", raising=False)
    settings.reload()
    try:
        for device, layout, lanes_of_tables in (("cpu", "env_major", 1), ("cuda", "interleaved", LANES)):
            monkeypatch.setattr(backend, "_arch", device)
            assert lanes.table_layout() == layout and lanes.table_lanes() == lanes_of_tables
        monkeypatch.setattr(backend, "_arch", None)  # before the runtime starts: the CPU's
        assert lanes.table_layout() == "env_major"
        monkeypatch.setattr(backend, "_arch", "cuda")
        monkeypatch.setenv("TAIGYM_LAYOUT", "env_major")
        settings.reload()
        assert lanes.table_lanes() == 1
    finally:
        monkeypatch.undo()
        settings.reload()


def test_layout_setting_is_checked(monkeypatch):
    from taigym.physics.runtime.lanes import table_lanes

    monkeypatch.setenv("TAIGYM_LAYOUT", "interleaved")
    settings.reload()
    assert table_lanes() == LANES
    monkeypatch.setenv("TAIGYM_LAYOUT", "env_major")
    settings.reload()
    assert table_lanes() == 1
    monkeypatch.setenv("TAIGYM_LAYOUT", "striped")
    with pytest.raises(ValueError, match="TAIGYM_LAYOUT must be 'interleaved' or 'env_major'"):
        settings.reload()


@pytest.mark.slow
def test_interleaved_layout_keeps_equality_state_per_env(tmp_path, device):
    if device != "cpu":
        pytest.skip("both layouts are compared on the CPU backend")
    tests = os.path.dirname(os.path.abspath(__file__))
    plain = _run(tmp_path, "env_major", tests, child=EQUALITY_CHILD)
    lanes = _run(tmp_path, "interleaved", tests, child=EQUALITY_CHILD)
    assert len(set(plain["nefc"])) > 1  # envs with and without the weld
    for name, value in plain.items():
        np.testing.assert_allclose(lanes[name], value, rtol=1e-9, atol=1e-10, err_msg=name)


@pytest.mark.slow
def test_interleaved_layout_in_the_standalone_collision_stage(tmp_path, device):
    if device != "cpu":
        pytest.skip("both layouts are compared on the CPU backend")
    plain = _run(tmp_path, "env_major", gym_asset("ant"), child=COLLIDER_CHILD)
    lanes = _run(tmp_path, "interleaved", gym_asset("ant"), child=COLLIDER_CHILD)
    assert plain["ncon"].sum() > 0
    for name, value in plain.items():
        np.testing.assert_allclose(lanes[name], value, rtol=0, atol=1e-14, err_msg=name)


@pytest.mark.slow
def test_interleaved_layout_runs_the_vector_env_as_the_env_major_one(tmp_path, device):
    # observations, rewards and resets from the program inside the step launch, the actions
    # written every step
    if device != "cpu":
        pytest.skip("both layouts are compared on the CPU backend")
    plain = _run(tmp_path, "env_major", child=VECTOR_CHILD)
    lanes = _run(tmp_path, "interleaved", child=VECTOR_CHILD)
    assert plain["done"].any()
    np.testing.assert_array_equal(lanes["done"], plain["done"])
    for name in ("obs0", "obs", "rew"):
        np.testing.assert_allclose(lanes[name], plain[name], rtol=1e-5, atol=1e-5, err_msg=name)
