"""The staged schedule (physics/step/staged.py) against the fused one: the same phases, the
same tables, each phase a parallel loop over env x element instead of one loop per env.
Float64 trajectories must agree to round-off (1e-9, relative to each quantity's scale)
on the shipped robots, on random trees with contacts, under every solver and cone, with
RK4 and the implicit integrators, for subsets of envs and for envs a program resets."""

import contextlib
import os

import gymnasium
import numpy as np
import pytest
from every_part import every_part_mjcf
from taigym.physics import settings
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.runtime.backend import ti
from taigym.physics.runtime.taichi_adapter import graph_kernels
from taigym.physics.errors import WorldError
from taigym.physics.settings import SettingsError
from taigym.physics.step.program import ProgramBuilder

from taigym import physics

TOL = 1e-9
NUM_ENVS = 5
# the state, and what each tree pass gives (subtree_com: the physics is the same about any
# point, so only its own value shows a wrong sum)
COMPARED = ("qpos", "qvel", "qacc", "qfrc_constraint", "xpos", "subtree_com", "cvel", "cdof_dot")
ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
# quadrants compiles every stage inlined: about a minute and a half per kernel variant on a
# 2-core VM, fused and staged each, which the whole sweep would spend some half an hour on.
# The schedules' arithmetic is the engine's own, not the Taichi's: the sweep runs on taichi
# 1.7.4, and on quadrants Ant (contacts, Newton) and the every-part model run, the program
# resets and the settings on Ant's kernels.
SWEEP = pytest.mark.skipif(ti.__name__ == "quadrants", reason="quadrants compiles each variant for ~1.5 min: the "
                           "sweep runs on taichi 1.7.4, Ant and the every-part model on both")


def rollout(model, schedule, device, steps=30, nstep=2, seed=0):
    """States of a float64 World under random velocities and controls, ``nstep`` steps a
    launch, and a forward pass of a subset of envs at the end."""
    world = physics.World(model, NUM_ENVS, device=device, precision="float64", schedule=schedule, serial=False)
    assert world.schedule == schedule
    rng = np.random.default_rng(seed)
    world.set_state(qvel=rng.normal(0, 0.5, (NUM_ENVS, model.nv)))
    out = []
    for _ in range(steps):
        world.set_ctrl(rng.uniform(-1, 1, (NUM_ENVS, model.nu)))
        world.step(nstep)
        out.append([world.get(name) for name in COMPARED])
        world.most_contacts = max(getattr(world, "most_contacts", 0), int(world.contacts()["ncon"].max()))
    world.set_state(qvel=rng.normal(0, 0.5, (2, model.nv)), env_ids=[1, 3])
    world.forward(env_ids=[1, 3])
    out.append([world.get(name) for name in COMPARED])
    return world, out


def assert_same_trajectory(model, device, solve="thread", **kwargs):
    """The staged schedule's states against the fused one's, its constraint solve ``solve``
    (TAIGYM_SOLVE: a thread per env, or a lane group per env)."""
    fused_world, fused = rollout(model, "fused", device, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAIGYM_SOLVE", solve)
        settings.reload()
        staged_world, staged = rollout(model, "staged", device, **kwargs)
    settings.reload()
    assert staged_world.solve == solve
    for t, (a_step, b_step) in enumerate(zip(fused, staged)):
        for name, a, b in zip(COMPARED, a_step, b_step):
            scale = max(1.0, float(np.abs(a).max()))
            err = float(np.abs(a - b).max()) / scale
            assert err <= TOL, f"{name} after launch {t}: staged differs from fused by {err:.2e} (relative)"
    for name in ("ncon", "efc_address"):  # the staged rows a thread per contact, where the env's thread put them
        np.testing.assert_array_equal(fused_world.contacts()[name], staged_world.contacts()[name], err_msg=name)
    return fused_world


@pytest.mark.parametrize("robot", ["ant", *(pytest.param(r, marks=[SWEEP, pytest.mark.slow])
                                           for r in ("humanoid", "hopper", "inverted_pendulum"))])
def test_staged_steps_the_shipped_robots_as_fused(robot, device):
    model = physics.load_model(os.path.join(ASSETS, f"{robot}.xml"))
    world = assert_same_trajectory(model, device)
    if robot in ("ant", "hopper"):
        assert world.most_contacts > 0  # the contact phases had work


def test_staged_contact_table_past_its_capacity_is_fused(device):
    """The staged narrow phase (a thread per env and candidate pair, then the env's table in
    pair order) keeps the contacts the fused one keeps when they do not all fit, and counts
    the rest as overflow."""
    model = physics.load_model(os.path.join(ASSETS, "ant.xml"))
    found = {}
    for schedule in ("fused", "staged"):
        world = physics.World(model, NUM_ENVS, device=device, precision="float64", schedule=schedule,
                              serial=False, max_contacts=2)
        rng = np.random.default_rng(5)
        qpos = world.get("qpos")
        qpos[:, 2] = 0.1  # the torso sunk in the floor: its sphere and legs touch it
        world.set_state(qpos=qpos, qvel=rng.normal(0, 0.3, (NUM_ENVS, model.nv)))
        world.step(3)
        found[schedule] = world.contacts(), world.get("qacc")
    (fused, fused_qacc), (staged, staged_qacc) = found["fused"], found["staged"]
    assert fused["overflow"].min() > 0  # every env made more contacts than fit
    for name, value in fused.items():  # the same contacts; their floats from states equal to round-off
        if value.dtype.kind == "f":
            np.testing.assert_allclose(staged[name], value, rtol=TOL, atol=TOL, err_msg=name)
        else:
            np.testing.assert_array_equal(staged[name], value, err_msg=name)
    np.testing.assert_allclose(staged_qacc, fused_qacc, rtol=TOL, atol=TOL)


@pytest.mark.slow
@SWEEP
@pytest.mark.parametrize("robot", ["half_cheetah", "walker2d", "swimmer", "reacher", "inverted_double_pendulum"])
def test_staged_steps_more_shipped_robots_as_fused(robot, device):
    assert_same_trajectory(physics.load_model(os.path.join(ASSETS, f"{robot}.xml")), device)


SOLVERS = [("Newton", "pyramidal", "Euler"), ("Newton", "elliptic", "RK4"),
           ("PGS", "pyramidal", "implicitspringdamper"), ("PGS", "elliptic", "Euler"),
           ("CG", "pyramidal", "Euler"), ("CG", "elliptic", "RK4")]


# in the slow tier: the every-part model's staged kernel is compiled for these alone (the
# quick set's staged coverage is Ant's)
@pytest.mark.slow
@pytest.mark.parametrize("solver,cone,integrator", [SOLVERS[0], pytest.param(*SOLVERS[1], marks=SWEEP)])
def test_staged_steps_every_part_as_fused(solver, cone, integrator, device):
    world = assert_same_trajectory(load_mjcf_string(every_part_mjcf(integrator, solver, cone)), device)
    assert world.most_contacts > 0


@pytest.mark.slow
@SWEEP
@pytest.mark.parametrize("solver,cone,integrator", SOLVERS[2:])
def test_staged_steps_every_part_as_fused_under_every_solver(solver, cone, integrator, device):
    assert_same_trajectory(load_mjcf_string(every_part_mjcf(integrator, solver, cone)), device)


def random_tree_with_contacts(seed: int, nbody: int = 7, parents: list | None = None) -> str:
    """A random tree of hinge, slide and ball joints under a free root, each body a random
    sphere, capsule or box, dropped on a plane: self-contacts and floor contacts. The
    tree's shape is random too unless ``parents`` (of bodies 1..nbody-1) gives it."""
    rng = np.random.default_rng(seed)
    parts = []
    parents = [-1, *(parents or [int(rng.integers(0, k)) for k in range(1, nbody)])]
    nbody = len(parents)

    def vec(n, scale=1.0):
        return " ".join(f"{x:.5f}" for x in rng.normal(scale=scale, size=n))

    def body(k, depth):
        kind = rng.choice(["sphere", "capsule", "box"])
        size = {"sphere": "0.07", "capsule": "0.05 0.1", "box": "0.06 0.05 0.04"}[kind]
        joint = "<freejoint/>" if k == 0 else {
            "hinge": f'<joint type="hinge" axis="{vec(3)}" range="-1 1" limited="true"/>',
            "slide": f'<joint type="slide" axis="{vec(3)}" range="-0.1 0.1" limited="true"/>',
            "ball": '<joint type="ball" damping="0.05"/>'}[rng.choice(["hinge", "hinge", "slide", "ball"])]
        pos = "0 0 0.8" if k == 0 else f"{vec(2, 0.15)} {-0.12 - 0.1 * rng.random():.4f}"
        inner = "".join(body(c, depth + 1) for c in range(nbody) if parents[c] == k)
        return (f'<body pos="{pos}">{joint}<geom type="{kind}" size="{size}" '
                f'euler="{vec(3)}" mass="{rng.uniform(0.2, 1.0):.3f}"/>{inner}</body>')

    parts.append(body(0, 0))
    motors = "".join(f'<motor joint="{j}"/>' for j in ())
    return (f'<mujoco><option timestep="0.004"/><worldbody><geom type="plane" size="4 4 0.1"/>{"".join(parts)}'
            f"</worldbody><actuator>{motors}</actuator></mujoco>")


@pytest.mark.slow
@SWEEP
@pytest.mark.parametrize("seed", [0, 1])
def test_staged_steps_random_trees_with_contacts_as_fused(seed, device):
    world = assert_same_trajectory(load_mjcf_string(random_tree_with_contacts(seed)), device, steps=40, nstep=3)
    assert world.most_contacts > 0


@pytest.mark.slow
@SWEEP
def test_staged_walks_a_tree_deeper_than_its_level_loops_as_fused(device):
    """Levels past TREE_LEVELS run per env, in breadth-first order down the tree and in
    reverse up it: a chain of 11 bodies with branches off its middle and its end."""
    from taigym.physics.layout import TREE_LEVELS, tree_levels

    parents = [*range(10), 4, 9, 11]
    model = load_mjcf_string(random_tree_with_contacts(3, parents=parents))
    starts = tree_levels(model)[0]
    assert starts[TREE_LEVELS] < model.nbody  # some bodies are deeper than the level loops
    world = assert_same_trajectory(model, device, steps=30, nstep=2)
    assert world.most_contacts > 0


def test_staged_runs_a_programs_resets_as_fused(device):
    """An env whose override register asks for a forward pass runs that pass, and no steps,
    in a launch that steps the others (physics/step/program.py)."""
    model = physics.load_model(os.path.join(ASSETS, "ant.xml"))
    out = {}
    for schedule in ("fused", "staged"):
        world = physics.World(model, NUM_ENVS, device=device, precision="float64", schedule=schedule,
                              serial=False)
        builder = ProgramBuilder()
        override = builder.override()
        builder.segment(1)
        builder.load("qpos", np.arange(model.nq))
        builder.segment(2)
        builder.load("qvel", np.arange(model.nv))
        world.set_program(builder.build())
        world.set_state(qvel=np.random.default_rng(1).normal(0, 0.5, (NUM_ENVS, model.nv)))
        registers = world.registers()
        registers[2, override.start] = 2 | 1 << 8  # env 2: a forward pass between segments 2 and 1
        world.set_registers(registers)
        world.step(3, segments=(1, 2))
        out[schedule] = (world.get("qpos"), world.get("qacc"), world.registers())
    for a, b in zip(out["fused"], out["staged"]):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


class CountedLaunch:
    """A kept launch that counts its calls."""

    def __init__(self, kept):
        self.kept, self.calls = kept, 0

    def with_arrays(self, *args):
        self.calls += 1
        self.kept.with_arrays(*args)


def test_a_staged_launch_is_one_kernel_call_where_the_taichi_makes_graphs(device):
    """Where the Taichi compiles graph kernels (quadrants), a launch of n steps, RK4's four
    forward() passes in each, is one call of one kernel that counts its steps and passes
    down itself; elsewhere (taichi 1.7.4) one call per part: a begin, each pass and each
    step's finish, an end. InvertedPendulum integrates with RK4."""
    model = physics.load_model(os.path.join(ASSETS, "inverted_pendulum.xml"))
    assert_same_trajectory(model, device, steps=10, nstep=3)
    world = physics.World(model, NUM_ENVS, device=device, precision="float64", schedule="staged", serial=False)
    staged = world._staged
    staged._every = tuple(map(CountedLaunch, staged._every))
    staged._some = tuple(map(CountedLaunch, staged._some))
    world.step(3)
    world.forward(env_ids=[1, 3])
    every, some = (sum(k.calls for k in kernels) for kernels in (staged._every, staged._some))
    if graph_kernels():
        assert staged.whole_launch and (every, some) == (1, 1)
    else:
        assert not staged.whole_launch and (every, some) == (1 + 3 * (4 + 1) + 1, 1 + 1 + 1)


# the constraint solve by a lane group per env (physics/constraint/primal/lane_group.py):
# on the CPU its lanes run in turn, the same arithmetic as a GPU block's threads
GROUP_CASES = [("Newton", "pyramidal", "Euler"), ("CG", "pyramidal", "RK4"), ("Newton", "pyramidal", "implicitfast")]


@pytest.mark.slow
def test_a_lane_group_solves_ant_as_the_fused_schedule(device):
    assert_same_trajectory(physics.load_model(os.path.join(ASSETS, "ant.xml")), device, solve="group")


@pytest.mark.slow
@SWEEP
@pytest.mark.parametrize("robot", ["hopper", "half_cheetah", "walker2d", "swimmer", "reacher", "pusher",
                                   "inverted_pendulum", "inverted_double_pendulum"])
def test_a_lane_group_solves_the_shipped_robots_as_the_fused_schedule(robot, device):
    """Every shipped robot whose solver a lane group takes (Humanoid's PGS keeps a thread)."""
    assert_same_trajectory(physics.load_model(os.path.join(ASSETS, f"{robot}.xml")), device, solve="group")


@pytest.mark.slow
@SWEEP
@pytest.mark.parametrize("solver,cone,integrator", GROUP_CASES)
def test_a_lane_group_solves_every_part_as_the_fused_schedule(solver, cone, integrator, device):
    model = load_mjcf_string(every_part_mjcf(integrator, solver, cone))
    assert_same_trajectory(model, device, solve="group")


@pytest.mark.slow
@SWEEP
@pytest.mark.parametrize("seed", [0, 1])
def test_a_lane_group_solves_random_trees_with_contacts_as_the_fused_schedule(seed, device):
    world = assert_same_trajectory(load_mjcf_string(random_tree_with_contacts(seed)), device, solve="group",
                                   steps=40, nstep=3)
    assert world.most_contacts > 0


def test_a_lane_group_solves_where_the_solver_and_cone_allow(monkeypatch):
    """TAIGYM_SOLVE=group: the primal solvers with pyramidal cones; PGS and elliptic cones
    stay a thread per env, as does the fused schedule."""
    from taigym.physics.world import _choose_solve

    def model(solver, cone):
        return load_mjcf_string(every_part_mjcf("Euler", solver, cone))

    assert _choose_solve("staged", model("Newton", "pyramidal")) == "thread"  # unset
    with switched(monkeypatch, "TAIGYM_SOLVE", "group"):
        for solver, cone, solve in (("Newton", "pyramidal", "group"), ("CG", "pyramidal", "group"),
                                    ("PGS", "pyramidal", "thread"), ("Newton", "elliptic", "thread")):
            assert _choose_solve("staged", model(solver, cone)) == solve, (solver, cone)
        assert _choose_solve("fused", model("Newton", "pyramidal")) == "thread"
        refused(monkeypatch, "TAIGYM_SOLVE", "warp")


@contextlib.contextmanager
def switched(monkeypatch, variable, value):
    """The engine's settings with ``variable`` set to ``value``, then without it."""
    monkeypatch.setenv(variable, value)
    settings.reload()
    try:
        yield
    finally:
        monkeypatch.delenv(variable)
        settings.reload()


def refused(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=variable):
        settings.reload()


def test_a_schedule_is_fused_or_staged(monkeypatch, device):
    model = physics.load_model(os.path.join(ASSETS, "ant.xml"))
    with pytest.raises(WorldError, match="schedule must be one of"):
        physics.World(model, 1, schedule="pipelined")
    with switched(monkeypatch, "TAIGYM_SCHEDULE", "staged"):
        assert physics.World(model, NUM_ENVS, device=device, precision="float64", serial=False).schedule == "staged"
        refused(monkeypatch, "TAIGYM_SCHEDULE", "tiled")
    # unset: the device's fastest, as measured on an H200 (docs/performance.md)
    expected = {"cpu": "fused", "cuda": "staged"}[device]
    assert physics.World(model, NUM_ENVS, device=device, precision="float64", serial=False).schedule == expected


GPU_SHAPE_CHILD = """
import sys
import numpy as np
from taigym import physics

path, out = sys.argv[1:3]
model = physics.load_model(path)
n = 37  # not a multiple of an interleaved block's 32 envs
world = physics.World(model, n, precision="float64", serial=False)
rng = np.random.default_rng(3)
world.set_state(qvel=rng.normal(0, 0.5, (n, model.nv)))
trajectory = []
for _ in range(15):
    world.set_ctrl(rng.uniform(-1, 1, (n, model.nu)))
    world.step(2)
    trajectory.append(np.concatenate([world.get("qpos"), world.get("qvel"), world.get("qacc")], axis=1))
np.savez(out, trajectory=np.array(trajectory), ncon=world.contacts()["ncon"], schedule=world.schedule)
"""


@pytest.mark.slow
@SWEEP
@pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda", reason="the GPU's layout on the CPU backend")
def test_staged_in_the_gpus_layout_steps_as_fused_on_the_cpu(tmp_path):
    """The staged schedule in the GPU's layout (interleaved tables), each in a process of its
    own (the layout is fixed when kernels are traced), against the CPU's fused kernel."""
    import subprocess
    import sys

    path = os.path.join(ASSETS, "ant.xml")
    runs = {"fused": {}, "staged": {"TAIGYM_SCHEDULE": "staged", "TAIGYM_LAYOUT": "interleaved"}}
    out = {}
    for name, extra in runs.items():
        env = {k: v for k, v in os.environ.items() if k not in ("TAIGYM_SCHEDULE", "TAIGYM_LAYOUT")}
        env.update(extra)
        target = tmp_path / f"{name}.npz"
        subprocess.run([sys.executable, "-c", GPU_SHAPE_CHILD, path, str(target)], env=env, check=True, timeout=600)
        out[name] = np.load(target)
    assert str(out["staged"]["schedule"]) == "staged"
    np.testing.assert_array_equal(out["fused"]["ncon"], out["staged"]["ncon"])
    a, b = out["fused"]["trajectory"], out["staged"]["trajectory"]
    assert np.abs(a - b).max() <= TOL * max(1.0, np.abs(a).max())


def test_per_env_phases_in_a_row_share_a_staged_loop():
    """Consecutive per-env phases run in one thread per env, in order: one loop; an element
    phase reads what other threads wrote, so it starts a loop of its own."""
    from taigym.physics.step.schedule import Phase, staged_loops

    a, b, c, d, e = (Phase(n, None, None if n in "abe" else len) for n in "abcde")
    assert [tuple(p.name for p in loop) for loop in staged_loops((a, b, c, d, e))] == [
        ("a", "b"), ("c",), ("d",), ("e",)]
    assert staged_loops(()) == ()


def test_tree_levels_order_bodies_by_level_with_siblings_side_by_side():
    """layout.tree_levels on random trees: the breadth-first order, each level's start, and
    each body's children as a run of that order, in body order."""
    from taigym.physics.layout import TREE_LEVELS, tree_levels
    from types import SimpleNamespace

    rng = np.random.default_rng(5)
    for nbody in (1, 2, 9, 30):
        parent = np.array([0, *(int(rng.integers(max(0, k - 3), k)) for k in range(1, nbody))], np.int32)
        depth = np.zeros(nbody, int)
        for b in range(1, nbody):
            depth[b] = depth[parent[b]] + 1
        starts, order, childadr, childnum = tree_levels(SimpleNamespace(nbody=nbody, body_parentid=parent))
        assert sorted(order) == list(range(nbody)) and list(depth[order]) == sorted(depth)
        for level in range(TREE_LEVELS + 1):
            assert starts[level] == np.sum(depth < level)
        for b in range(nbody):
            children = [c for c in range(1, nbody) if parent[c] == b]
            assert list(order[childadr[b]:childadr[b] + childnum[b]]) == children
