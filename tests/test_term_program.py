"""The env step as a World program (tasks/term_program.py) against the numpy terms it
replaces, which stay the reference.

Tolerances: float64 observations are the same numbers (the program reads the World's
tables and applies the same operations); rewards agree to 1e-12 (a difference divides
by dt where the program multiplies by 1/dt, and sums run in another order). float32
Worlds compute the program in float32 where numpy computes in float64 from float32
inputs: agreement to float32 round-off, 2e-5 relative.
"""

import dataclasses

import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv
from taigym.physics import World, settings
from taigym.physics.step.program import ProgramBuilder
from taigym.tasks.context import StepContext, snapshot
from taigym.tasks.loader import CONFIG_DIR
from taigym.tasks.task import Task
from taigym.tasks.term_program import POST, PRE, TermCompiler, TermProgram, missing_ops

TASK_DIR = CONFIG_DIR / "tasks"
SHIPPED = sorted(p.name for p in TASK_DIR.glob("*.yaml") if not p.name.startswith("_"))
GYMNASIUM_SET = ["Ant", "Humanoid", "Hopper", "HalfCheetah", "Walker2d", "Swimmer", "InvertedPendulum",
                 "InvertedDoublePendulum", "Reacher"]


# commands resampled every 10 steps, a standing command now and then: the draws are exercised
EXTRA = {"QuadrupedFlat": ["commands.0.params.resampling_time=0.2", "commands.0.params.standing_probability=0.3"],
         "ArmReach": ["episode_length=30"]}  # time-limit resets, which point the drives at the reset pose


def _pair(task, n, precision, seed=3):
    overrides = [f"simulation.precision={precision}", *EXTRA.get(task, [])]
    envs = [TaiGymVectorEnv(f"TaiGym/{task}-v0", n, overrides=overrides, program=p) for p in (False, True)]
    assert envs[0]._program is None and envs[1]._program is not None
    return envs, [e.reset(seed=seed)[0] for e in envs]


@pytest.mark.parametrize("task", [*GYMNASIUM_SET, "QuadrupedFlat", "ArmReach"])
def test_program_step_equals_numpy_terms_in_float64(task):
    """100 random-action steps of 4 envs, autoresets included: the same observations,
    terminations and truncations, rewards and each reward term to 1e-12."""
    envs, (obs_np, obs_pr) = _pair(task, 4, "float64")
    np.testing.assert_array_equal(obs_np, obs_pr)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(100):
        action = rng.uniform(-1, 1, envs[0].action_space.shape)
        ref, out = (e.step(action) for e in envs)
        np.testing.assert_array_equal(ref[0], out[0])
        np.testing.assert_allclose(out[1], ref[1], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(ref[2], out[2])
        np.testing.assert_array_equal(ref[3], out[3])
        for key, value in ref[4].items():
            if key.startswith("reward_"):
                np.testing.assert_allclose(out[4][key], value, rtol=1e-12, atol=1e-12)
        ended += int(ref[2].sum())
    if task in ("Hopper", "Walker2d", "InvertedPendulum", "InvertedDoublePendulum", "QuadrupedFlat"):
        assert ended > 0, "the comparison should cover terminations and autoresets"


@pytest.mark.parametrize("task", ["Ant", "Hopper", "InvertedDoublePendulum"])
def test_program_step_agrees_with_numpy_terms_to_float32_round_off(task):
    # the two envs are held at the same state each step: float32 round-off would otherwise
    # grow along the trajectory and compare two different states
    envs, (obs_np, obs_pr) = _pair(task, 4, "float32")
    np.testing.assert_allclose(obs_pr, obs_np, rtol=2e-5, atol=2e-5)
    rng = np.random.default_rng(1)
    for _ in range(50):
        action = rng.uniform(-1, 1, envs[0].action_space.shape)
        ref, out = (e.step(action) for e in envs)
        np.testing.assert_allclose(out[0], ref[0], rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(out[1], ref[1], rtol=2e-5, atol=2e-5)
        np.testing.assert_array_equal(ref[2], out[2])
        envs[1].world.set_state(qpos=envs[0].world.get("qpos"), qvel=envs[0].world.get("qvel"))


@pytest.mark.parametrize("task", GYMNASIUM_SET)
def test_program_terms_equal_numpy_terms_at_random_states(task):
    """Far from any trajectory: random coordinates and velocities (so out-of-range
    terminations fire), actions as the step saw them."""
    t = Task.from_source(f"TaiGym/{task}-v0", ["simulation.precision=float64"])
    m, n = t.model, 16
    world = World(m, num_envs=n, precision="float64")
    program = TermProgram(t)
    world.set_program(program.program)
    rng = np.random.default_rng(2)
    qpos = t.init_qpos + rng.normal(0, 0.5, (n, m.nq))
    qvel = rng.normal(0, 2.0, (n, m.nv))
    action = rng.uniform(-1, 1, (n, t.action_size))
    world.set_state(qpos=qpos, qvel=qvel)
    world.forward()
    regs = world.registers().copy()
    regs[:, program.action.start : program.action.stop] = action
    world.set_registers(regs)
    # PRE keeps the quantities as they are and writes the controls; POST sees the same state
    world.forward(segments=(PRE, POST))
    regs = world.registers()
    ctx = StepContext(m, snapshot(world, t.needs), dt=t.dt, action=action,
                      prev=snapshot(world, t.prev_needs))
    terminated = t.terminated(ctx)
    ctx.terminated = terminated
    reward, parts = t.reward(ctx)
    np.testing.assert_array_equal(regs[:, program.terminated.start] != 0, terminated)
    np.testing.assert_allclose(regs[:, program.reward.start], reward, rtol=1e-12, atol=1e-12)
    for name, at in program.parts:
        np.testing.assert_allclose(regs[:, at.start], parts[name], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(regs[:, program.obs.start : program.obs.stop], t.observe(ctx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(world.get("ctrl"), t.action_to_ctrl(action), rtol=0, atol=0)


def test_builder_operations_against_numpy():
    m = Task.from_source("TaiGym/InvertedPendulum-v0").model
    world = World(m, num_envs=3, precision="float64")
    b = ProgramBuilder()
    b.segment(2)
    x = b.alloc(4)
    y = b.alloc(4)
    ops = {
        "affine": (b.affine(x, [1, 2, 3, 4], 0.5), lambda x, y: x * [1, 2, 3, 4] + 0.5),
        "clip": (b.clip(x, -0.5, 0.25), lambda x, y: np.clip(x, -0.5, 0.25)),
        "sin": (b.sin(x), lambda x, y: np.sin(x)),
        "cos": (b.cos(x), lambda x, y: np.cos(x)),
        "exp": (b.exp(x), lambda x, y: np.exp(x)),
        "sqrt": (b.sqrt(b.square(x)), lambda x, y: np.abs(x)),
        "sub": (b.sub(x, y), lambda x, y: x - y),
        "mul": (b.mul(x, y), lambda x, y: x * y),
        "sum": (b.sum(x), lambda x, y: x.sum(1, keepdims=True)),
        "norm": (b.norm(x), lambda x, y: np.linalg.norm(x, axis=1, keepdims=True)),
        "outside_closed": (b.outside(x, -0.5, 0.5), lambda x, y: ~((x >= -0.5) & (x <= 0.5))),
        "outside_open": (b.outside(x, -0.5, 0.5, inclusive=False), lambda x, y: ~((x > -0.5) & (x < 0.5))),
        "greater": (b.greater(x, 0.1), lambda x, y: x > 0.1),
        "any": (b.any(b.greater(x, 0.9)), lambda x, y: (x > 0.9).any(1, keepdims=True)),
        "cross": (b.cross(x[:3], y[:3]), lambda x, y: np.cross(x[:, :3], y[:, :3])),
        "const": (b.const([7.0, -2.5]), lambda x, y: np.tile([7.0, -2.5], (3, 1))),
    }
    world.set_program(b.build())
    rng = np.random.default_rng(0)
    regs = world.registers().copy()
    regs[:, x.start : x.stop] = rng.uniform(-1, 1, (3, 4))
    regs[:, y.start : y.stop] = rng.uniform(-1, 1, (3, 4))
    xv, yv = regs[:, x.start : x.stop].copy(), regs[:, y.start : y.stop].copy()
    world.set_registers(regs)
    world.forward(segments=(0, 2))
    out = world.registers()
    for name, (at, ref) in ops.items():
        np.testing.assert_allclose(out[:, at.start : at.stop], np.asarray(ref(xv, yv), float), rtol=1e-14,
                                   atol=1e-15, err_msg=name)


def test_non_finite_values_are_caught_under_fast_math():
    """NaN and inf are told by their bits: fast-math comparisons may not see NaN."""
    m = Task.from_source("TaiGym/InvertedPendulum-v0").model
    for precision in ("float64", "float32"):
        world = World(m, num_envs=4, precision=precision)
        b = ProgramBuilder()
        b.segment(2)
        x = b.alloc(2)
        bad, out, outside = b.nonfinite(x), b.any(x), b.outside(x, -1.0, 1.0)
        world.set_program(b.build())
        regs = world.registers().copy()
        regs[:, x.start : x.stop] = [[0.0, 0.5], [np.nan, 0.0], [0.0, np.inf], [-np.inf, 0.0]]
        world.set_registers(regs)
        world.forward(segments=(0, 2))
        r = world.registers()
        np.testing.assert_array_equal(r[:, bad.start], [0, 1, 1, 1], err_msg=precision)
        np.testing.assert_array_equal(r[:, out.start], [1, 1, 1, 1], err_msg=precision)
        np.testing.assert_array_equal(r[:, outside.start : outside.stop], [[0, 0], [1, 0], [0, 1], [1, 0]],
                                      err_msg=precision)


def test_env_takes_the_program_path_where_it_can_and_says_why_not():
    env = TaiGymVectorEnv("TaiGym/Hopper-v0", 2)
    assert env._program is not None
    assert TaiGymVectorEnv("TaiGym/Hopper-v0", 2, program=False)._program is None
    # every shipped task runs as a program; a term without a program form (a user's own) keeps
    # its task on the numpy path
    for path in SHIPPED:
        assert missing_ops(Task.from_source(str(TASK_DIR / path))) == [], path
    task = Task.from_source("TaiGym/Hopper-v0")
    name, weight, term = task.rewards[0]
    task.rewards[0] = (name, weight, dataclasses.replace(term, ops=None))
    assert missing_ops(task) == ["rewards[0] (forward_velocity) has no program form"]
    assert TaiGymVectorEnv(task, 2)._program is None
    with pytest.raises(ValueError, match=r"Hopper-v0 cannot run its terms as a program: rewards\[0\] \(forward"):
        TaiGymVectorEnv(task, 2, program=True)
    # a torch namespace for the terms keeps them out of the program
    torch = pytest.importorskip("torch")
    env = TaiGymVectorEnv("TaiGym/Hopper-v0", 2, tensor_backend="torch", torch_terms=True)
    assert env._program is None
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor)




@pytest.mark.parametrize("config", SHIPPED)
def test_every_term_with_ops_equals_its_numpy_form_at_random_states(config):
    """Each step term of a shipped config (agents' own included) that has a program form,
    compiled alone, against its numpy form at random states (float64, 1e-12)."""
    t = Task.from_source(str(TASK_DIR / config), ["simulation.precision=float64"])
    terms = [(path, term) for path, term in t._step_terms() if term.ops is not None]
    if not terms:
        pytest.skip(f"{config} has no term with a program form")
    m, n = t.model, 8
    world = World(m, num_envs=n, precision="float64")
    b = ProgramBuilder()
    action, terminated = b.alloc(t.action_size), b.alloc(1)
    c = TermCompiler(t, b, action, terminated)
    outputs = [(path, term, term.ops(c)) for path, term in terms]
    world.set_program(b.build())
    rng = np.random.default_rng(4)
    world.set_state(qpos=t.init_qpos + rng.normal(0, 0.3, (n, m.nq)), qvel=rng.normal(0, 1.0, (n, m.nv)))
    world.forward()
    regs = world.registers().copy()
    actions, ended = rng.uniform(-1, 1, (n, t.action_size)), rng.uniform(size=n) < 0.5
    regs[:, action.start : action.stop], regs[:, terminated.start] = actions, ended
    # commands (the same for the step and the next) and memory: some zero, some not
    commands = {name: rng.uniform(-1, 1, (n, at.n)) * (rng.uniform(size=(n, 1)) < 0.8)
                for name, at in c.commands_now.items()}
    memory = {name: rng.uniform(0, 1, (n, at.n)) * (rng.uniform(size=(n, at.n)) < 0.5)
              for name, at in c.memories.items()}
    for name, values in commands.items():
        for at in (c.commands_now[name], c.commands_next[name]):
            regs[:, at.start : at.stop] = values
    for name, values in memory.items():
        regs[:, c.memories[name].start : c.memories[name].stop] = values
    world.set_registers(regs)
    world.forward(segments=(PRE, POST))
    regs = world.registers()
    prev_keys = sorted({key for _, term in terms for key in term.needs_prev})
    ctx = StepContext(m, snapshot(world, sorted({"qpos", "qvel", *(k for _, tm in terms for k in tm.needs)})),
                      dt=t.dt, action=actions, prev=snapshot(world, prev_keys), terminated=ended,
                      commands=commands, memory={k: v.copy() for k, v in memory.items()})
    for path, term, out in outputs:
        ref = np.asarray(term.fn(ctx), dtype=np.float64).reshape(n, -1)
        np.testing.assert_allclose(regs[:, out.start : out.stop], ref, rtol=1e-12, atol=1e-12, err_msg=str(path))
    for name, at in c.memories.items():  # updated in place by both
        np.testing.assert_allclose(regs[:, at.start : at.stop], ctx.memory[name], rtol=1e-12, atol=1e-12)


def test_an_env_whose_override_register_is_set_runs_a_forward_pass_in_the_launch():
    m = Task.from_source("TaiGym/InvertedPendulum-v0", ["simulation.precision=float64"]).model
    world = World(m, num_envs=3, precision="float64")
    b = ProgramBuilder()
    override = b.override()
    b.segment(2)
    after_step = b.load("qpos", range(m.nq))
    b.segment(3)
    after_forward = b.affine(b.load("qpos", range(m.nq)), 1.0, 100.0)
    world.set_program(b.build())
    world.set_state(qpos=np.full((3, m.nq), 0.1), qvel=np.ones((3, m.nv)))
    regs = world.registers().copy()
    regs[1, override.start] = 3 << 8  # env 1: a forward pass, then segment 3
    world.set_registers(regs)
    world.step(4, segments=(0, 2))
    qpos, out = world.get("qpos"), world.registers()
    np.testing.assert_array_equal(qpos[1], np.full(m.nq, 0.1))  # not advanced
    assert (qpos[[0, 2]] != 0.1).all()  # stepped
    np.testing.assert_array_equal(out[[0, 2], after_step.start : after_step.stop], qpos[[0, 2]])
    np.testing.assert_array_equal(out[1, after_forward.start : after_forward.stop], qpos[1] + 100.0)
    assert (out[[0, 2], after_forward.start : after_forward.stop] == 0).all()  # segment 3 ran for env 1 only


def test_an_autoreset_costs_no_launch_of_its_own(monkeypatch):
    env = TaiGymVectorEnv("TaiGym/InvertedPendulum-v0", 4)
    env.reset(seed=0)
    launches = []
    real = env.world._launch
    monkeypatch.setattr(env.world, "_launch", lambda *a, **k: (launches.append(k.get("ids")), real(*a, **k)))
    resets = 0
    for _ in range(200):
        needs_reset = env._needs_reset.copy()
        launches.clear()
        env.step(np.ones((4, 1), np.float32))
        assert len(launches) == 1
        resets += int(needs_reset.sum())
    assert resets > 0, "the pendulum falls under a constant push: episodes end and autoreset"


@pytest.mark.parametrize("task", ["SumoAnts", "BoxPush", "Ant4x2", "LastAntStanding", "Swimmer2x1"])
def test_multi_agent_program_step_equals_numpy_terms(task):
    """Each agent's observation, reward (shared and own terms), own ending and reward parts,
    float64, until every agent is out or 150 steps."""
    from taigym.envs.multiagent import TaiGymParallelEnv

    envs = [TaiGymParallelEnv(f"TaiGym/{task}-v0", overrides=["simulation.precision=float64"], program=p)
            for p in (False, True)]
    assert envs[0]._batch._program is None and envs[1]._batch._program is not None
    (ref, _), (out, _) = (e.reset(seed=1) for e in envs)
    for a in ref:
        np.testing.assert_array_equal(out[a], ref[a])
    rng = np.random.default_rng(0)
    for _ in range(150):
        if not envs[0].agents:
            break
        assert envs[1].agents == envs[0].agents
        actions = {a: rng.uniform(-1, 1, envs[0].action_space(a).shape) for a in envs[0].agents}
        ref, out = (e.step(actions) for e in envs)
        for a in ref[0]:
            np.testing.assert_array_equal(out[0][a], ref[0][a], err_msg=a)
            np.testing.assert_allclose(out[1][a], ref[1][a], rtol=1e-12, atol=1e-12, err_msg=a)
            assert (out[2][a], out[3][a]) == (ref[2][a], ref[3][a])
            assert out[4][a].keys() == ref[4][a].keys()
            for key, value in ref[4][a].items():
                np.testing.assert_allclose(out[4][a][key], value, rtol=1e-12, atol=1e-12, err_msg=f"{a} {key}")


def test_program_step_through_register_copies(monkeypatch):
    """Where registers() is a copy (a CUDA World, or TAIGYM_LAUNCH=plain on CPU), actions and
    resets are written back: the same trajectory as the numpy terms."""
    monkeypatch.setenv("TAIGYM_LAUNCH", "plain")
    settings.reload()
    envs, _ = _pair("InvertedPendulum", 3, "float64")
    assert not envs[1].world.registers_shared()
    rng = np.random.default_rng(5)
    ended = 0
    for _ in range(60):
        action = rng.uniform(-1, 1, envs[0].action_space.shape)
        ref, out = (e.step(action) for e in envs)
        for k in range(4):
            np.testing.assert_array_equal(ref[k], out[k])
        ended += int(ref[2].sum())
    assert ended > 0
