"""The env step's World program (tasks/term_program.py) against the host reference
(tasks/reference.py): the same instructions, once in the step kernel and once interpreted
with numpy on the World's quantities as they were before and after each step.

Tolerances: in float64 both evaluate the same operations in the same order, 1e-12. A float32
World computes in float32 where the reference computes in float64 from the same float32
quantities: agreement to float32 round-off, 2e-5. The terms' values themselves are checked
against closed forms in tests/test_terms_closed_form.py.
"""

import numpy as np
import pytest
from conftest import missing_task_packages
from taigym.envs.vector import TaiGymVectorEnv
from taigym.physics import World, settings
from taigym.physics.step.program import ProgramBuilder
from taigym.tasks import reference as R
from taigym.tasks.errors import ConfigError
from taigym.tasks.loader import CONFIG_DIR
from taigym.tasks.task import Task
from taigym.tasks.term_program import POST, PRE, TermCompiler

TASK_DIR = CONFIG_DIR / "tasks"
SHIPPED = sorted(p.name for p in TASK_DIR.glob("*.yaml") if not p.name.startswith("_"))


def _task_id(path) -> str:
    """'Hopper' of a task file whose ``id:`` line is 'TaiGym/Hopper-v0'."""
    line = next(x for x in path.read_text().splitlines() if x.startswith("id:"))
    return line.split("/")[1].strip().removesuffix("-v0")


TASK_IDS = sorted(_task_id(TASK_DIR / p) for p in SHIPPED)

# commands resampled every 10 steps, a standing command now and then: the draws are exercised
EXTRA = {"QuadrupedFlat": ["commands.0.params.resampling_time=0.2", "commands.0.params.standing_probability=0.3"],
         "QuadrupedRough": ["commands.0.params.resampling_time=0.2"],
         "ArmReach": ["episode_length=30"]}  # time-limit resets, which point the drives at the reset pose
ENDING = ("Hopper", "Walker2d", "InvertedPendulum", "InvertedDoublePendulum", "QuadrupedFlat")


def make_env(task, n, precision, seed=3, **kwargs):
    env = TaiGymVectorEnv(f"TaiGym/{task}-v0", n, overrides=[f"simulation.precision={precision}",
                                                              *EXTRA.get(task, [])], **kwargs)
    env.reset(seed=seed)
    return env


def close(actual, expected, tol, what):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), rtol=tol, atol=tol,
                               err_msg=what)


def check_step(env, action, tol) -> int:
    """Step ``env`` and compare what it returns, and what its program left in the registers,
    with the reference on the quantities captured around the step; returns how many envs
    were compared (those not reset by the step, whose pre-step state is the step's)."""
    task, p, world = env.task, env.program, env.world
    resetting = env._needs_reset.copy()
    before, regs = R.quantities(world, task), world.registers().astype(np.float64)
    obs, reward, terminated, _, info = env.step(action)
    after, now = R.quantities(world, task), world.registers().astype(np.float64)
    # the observation shows the command drawn for after the step; the env's bookkeeping has
    # made it the current one too, so the registers after the step hold it in both places
    for at in p.commands_next.values():
        regs[:, at.start : at.stop] = now[:, at.start : at.stop]
    ref = R.step(task, before, after, np.asarray(action, np.float64), regs)
    kernel = p.outputs(now)
    keep = ~resetting & ref.finite
    noisy = any(o.noise is not None for o in task.observations)
    for name, got, want in _register_runs(p, now, regs):
        close(got[keep], want[keep], tol, name)
    close(kernel.obs[keep], ref.obs[keep], tol, "obs")
    if not noisy:
        close(obs[keep], ref.obs[keep], tol, "returned obs")
    close(reward[keep], ref.reward[keep], tol, "reward")
    np.testing.assert_array_equal(terminated[keep], ref.terminated[keep])
    for name, value in ref.parts.items():
        close(info[f"reward_{name}"][keep], value[keep], tol, f"reward_{name}")
    if resetting.any():  # observed by the RESET segment, after the reset's forward pass
        ids = np.flatnonzero(resetting)
        fresh = R.observe(task, {k: v[ids] for k, v in after.items()}, now[ids])
        close(kernel.obs[ids], fresh, tol, "reset obs")
        if not noisy:
            close(obs[ids], fresh, tol, "returned reset obs")
        assert not terminated[ids].any() and (reward[ids] == 0).all()
    return int(keep.sum())


def _register_runs(p, kernel, ref):
    """(name, kernel's values, reference's) of every result run the program writes: reward
    parts, term memory and each agent's own results."""
    runs = [(f"part {name}", at) for name, at in p.parts]
    runs += [(f"memory {name}", at) for name, at in p.memories.items()]
    for agent, a in p.agents.items():
        runs += [(f"{agent} terminated", a.own_terminated), (f"{agent} ended", a.ended), (f"{agent} reward", a.reward),
                 (f"{agent} obs", a.obs)] + [(f"{agent} part {name}", at) for name, at in a.parts]
    return [(name, kernel[:, at.start : at.stop], ref[:, at.start : at.stop]) for name, at in runs]


@pytest.mark.parametrize("task", TASK_IDS)
def test_env_step_equals_the_reference_in_float64(task):
    """100 random-action steps of 4 envs, autoresets and command resamples included."""
    env = make_env(task, 4, "float64")
    rng = np.random.default_rng(0)
    compared = ended = 0
    for _ in range(100):
        ended += int(env._needs_reset.sum())
        compared += check_step(env, rng.uniform(-1, 1, env.action_space.shape), 1e-12)
    assert compared > 250
    if task in ENDING:
        assert ended > 0, "the comparison should cover terminations and autoresets"


# Humanoid in float32 needs a kernel no other task does: the slow tier runs it
@pytest.mark.parametrize("task", [pytest.param(t, marks=pytest.mark.slow) if t == "Humanoid" else t for t in TASK_IDS])
def test_float32_env_step_agrees_with_the_reference_to_round_off(task):
    env = make_env(task, 4, "float32")
    rng = np.random.default_rng(1)
    for _ in range(40):
        check_step(env, rng.uniform(-1, 1, env.action_space.shape), 2e-5)


def test_program_step_through_register_copies(monkeypatch):
    """Where registers() is a copy (a CUDA World, or a Taichi whose ndarrays have no host
    view), actions and resets are written back: the same results as the reference, resets
    included."""
    from taigym.physics import data

    monkeypatch.setattr(data, "host_view", lambda table: None)
    env = make_env("InvertedPendulum", 3, "float64")
    assert not env.world.registers_shared()
    rng = np.random.default_rng(5)
    ended = 0
    for _ in range(60):
        ended += int(env._needs_reset.sum())
        check_step(env, rng.uniform(-1, 1, env.action_space.shape), 1e-12)
    assert ended > 0


def test_register_columns_are_read_and_written_on_the_worlds_device():
    """World.register_tensor gathers columns into a torch tensor on the World's device and
    World.set_register_rows writes rows of columns, each by one kernel: what a CUDA World's
    vector env reads and writes, checked and refused by name."""
    torch = pytest.importorskip("torch")
    from taigym.physics.errors import WorldError

    t = Task.from_source("TaiGym/InvertedPendulum-v0", ["simulation.precision=float64"])
    world = World(t.model, num_envs=3, precision="float64")
    world.set_program(t.program.program)
    n = world.registers().shape[1]
    values = np.arange(3 * n, dtype=np.float64).reshape(3, n)
    world.set_registers(values)
    got = world.register_tensor([2, 0])
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_array_equal(got.numpy(), values[:, [2, 0]])
    world.set_register_rows(1, torch.tensor([[7.0, 8.0], [9.0, 10.0]]), env_ids=[0, 2])
    world.set_register_rows(n - 1, np.full((3, 1), -1.0))
    values[[0, 2], 1:3] = [[7.0, 8.0], [9.0, 10.0]]
    values[:, n - 1] = -1.0
    np.testing.assert_array_equal(world.registers(), values)
    with pytest.raises(WorldError, match=rf"registers must be in \[0, {n}\)"):
        world.register_tensor([n])
    with pytest.raises(WorldError, match="registers must be in"):
        world.set_register_rows(n - 1, np.zeros((3, 2)))
    with pytest.raises(WorldError, match="register values has non-finite values in rows \\[1\\]"):
        world.set_register_rows(0, np.array([[0.0], [np.nan], [0.0]]))


def test_torch_outputs_through_register_copies_stay_on_the_device(monkeypatch):
    """Where registers() is a copy (a CUDA World), a torch env reads and writes them by
    kernels (envs/_registers.py's DeviceRegisters), with the numpy env's results."""
    torch = pytest.importorskip("torch")
    from taigym.envs._registers import DeviceRegisters
    from taigym.physics import data

    monkeypatch.setattr(data, "host_view", lambda table: None)
    ref = make_env("InvertedPendulum", 3, "float64")
    env = make_env("InvertedPendulum", 3, "float64", tensor_backend="torch")
    assert isinstance(env._regs, DeviceRegisters)
    np.testing.assert_array_equal(env.reset(seed=1)[0].numpy(), ref.reset(seed=1)[0])
    rng = np.random.default_rng(5)
    ended = 0
    for _ in range(60):
        action = rng.uniform(-1, 1, env.action_space.shape)
        out_np, out_t = ref.step(action), env.step(torch.from_numpy(action))
        for t, a in zip(out_t[:4], out_np[:4], strict=True):
            np.testing.assert_array_equal(t.numpy(), a)
        ended += int(out_np[2].sum() + out_np[3].sum())
    assert ended > 0


@pytest.mark.parametrize("task", ["Ant", "Humanoid", "Hopper", "Walker2d", "InvertedPendulum", "InvertedDoublePendulum",
                                  "Reacher", "ArmReach", "QuadrupedFlat"])
def test_program_equals_the_reference_at_random_states(task):
    """Far from any trajectory: random coordinates and velocities (so out-of-range
    terminations fire), a step that leaves the state as it is (a forward pass between the
    segments), and the controls the action maps to."""
    t = Task.from_source(f"TaiGym/{task}-v0", ["simulation.precision=float64"])
    m, n, p = t.model, 16, t.program
    world = World(m, num_envs=n, precision="float64")
    world.set_program(p.program)
    rng = np.random.default_rng(2)
    world.set_state(qpos=t.init_qpos + rng.normal(0, 0.5, (n, m.nq)), qvel=rng.normal(0, 2.0, (n, m.nv)))
    world.forward()
    before, regs = R.quantities(world, t), world.registers().copy()
    action = rng.uniform(-1, 1, (n, t.action_size))
    regs[:, p.action.start : p.action.stop] = action
    world.set_registers(regs)
    world.forward(segments=(PRE, POST))
    after, now = R.quantities(world, t), world.registers()
    ref, kernel = R.step(t, before, after, action, regs.copy()), p.outputs(now)
    np.testing.assert_array_equal(kernel.terminated, ref.terminated)
    close(kernel.reward, ref.reward, 1e-12, "reward")
    for name, value in ref.parts.items():
        close(kernel.parts[name], value, 1e-12, name)
    close(kernel.obs, ref.obs, 1e-12, "obs")
    written = "ctrl" if t.drive is None else "drive_qpos_target"
    np.testing.assert_array_equal(after[written], before[written])  # the reference's store, the kernel's
    if task in ("Hopper", "Walker2d", "InvertedPendulum", "InvertedDoublePendulum"):
        assert ref.terminated.any() and not ref.terminated.all()


@pytest.mark.parametrize("config", SHIPPED)
def test_every_step_term_compiled_alone_equals_the_reference(config):
    """Each step term of a shipped config (agents' own included), compiled alone into a
    World program, against tasks.reference.term at random states, with random actions,
    termination flags, commands and term memory (float64, 1e-12)."""
    t = Task.from_source(str(TASK_DIR / config), ["simulation.precision=float64"])
    terms = list(t._step_terms())
    m, n, p = t.model, 8, t.program
    world = World(m, num_envs=n, precision="float64")
    b = ProgramBuilder()
    action, terminated = b.alloc(t.action_size), b.alloc(1)
    c = TermCompiler(t, b, action, terminated)
    outputs = [(path, term, term.ops(c)) for path, term in terms]
    world.set_program(b.build())
    rng = np.random.default_rng(4)
    world.set_state(qpos=t.init_qpos + rng.normal(0, 0.3, (n, m.nq)), qvel=rng.normal(0, 1.0, (n, m.nv)))
    world.forward()
    regs, task_regs = world.registers().copy(), R.registers(t, n)
    actions, ended = rng.uniform(-1, 1, (n, t.action_size)), rng.uniform(size=n) < 0.5
    regs[:, action.start : action.stop], regs[:, terminated.start] = actions, ended
    # commands (the same for the step and the next) and memory: some zero, some not
    for name, at in c.commands_now.items():
        values = rng.uniform(-1, 1, (n, at.n)) * (rng.uniform(size=(n, 1)) < 0.8)
        for mine, theirs in ((at, p.commands_now[name]), (c.commands_next[name], p.commands_next[name])):
            regs[:, mine.start : mine.stop] = task_regs[:, theirs.start : theirs.stop] = values
    for name, at in c.memories.items():
        values = rng.uniform(0, 1, (n, at.n)) * (rng.uniform(size=(n, at.n)) < 0.5)
        regs[:, at.start : at.stop] = task_regs[:, p.memories[name].start : p.memories[name].stop] = values
    world.set_registers(regs)
    world.forward(segments=(PRE, POST))
    now = R.quantities(world, t)
    regs = world.registers()
    for path, term, out in outputs:
        # each term from the memory as it was: a term that updates memory updates its own copy
        ref = R.term(t, term, now, now, actions, ended, task_regs.copy() if term.memory else task_regs)
        close(regs[:, out.start : out.stop], ref, 1e-12, str(path))
    for name, at in c.memories.items():  # updated in place by both
        mem = task_regs.copy()
        for _, term, _ in [o for o in outputs if name in o[1].memory]:
            R.term(t, term, now, now, actions, ended, mem)
        close(regs[:, at.start : at.stop], mem[:, p.memories[name].start : p.memories[name].stop], 1e-12, name)


def test_every_shipped_task_builds_its_program_and_a_term_without_ops_is_refused(monkeypatch):
    from taigym.tasks import registry
    from taigym.tasks.registry import Entry, Term

    for path in SHIPPED:
        if path in missing_task_packages():
            continue
        assert Task.from_source(str(TASK_DIR / path)).program.program.nregisters > 0, path

    def forward_velocity(model, *, coordinate: int = 0):
        return Term()

    registry.get("reward", "forward_velocity")  # the built-in terms are registered first
    monkeypatch.setitem(registry._REGISTRY["reward"], "forward_velocity",
                        Entry("forward_velocity", "reward", forward_velocity, ""))
    with pytest.raises(ConfigError, match=r"rewards\[0\] \(forward_velocity\) gives no ops"):
        Task.from_source("TaiGym/Hopper-v0")


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
