"""The World program's arithmetic (physics/step/program.py): each operation and Regs operator
run inside the step kernel and by the host reference (physics/step/program_host.py, numpy
and torch) against numpy, and ``tolerance`` against dm_control's ``rewards.tolerance``.

Tolerances: in float64 the kernel, the host and numpy do the same operations in the same
order; a transcendental function may differ in its last bits between libraries (the kernel
computes cosh from exp and log1p from log): 1e-15 relative, and 1e-14 for tolerance's
sigmoids, whose values are in [0, 1].
"""

from pathlib import Path

import numpy as np
import pytest
from dm_control.utils import rewards
from taigym.physics import ModelBuilder, World
from taigym.physics.step import program as P
from taigym.physics.step.program import ProgramBuilder, Regs
from taigym.physics.step.program_host import run_segment
from taigym.tasks import tolerance

ENVS = 16
SEGMENT = 2
INF = float("inf")


@pytest.fixture(scope="module")
def world(device):
    b = ModelBuilder()
    b.add_joint_revolute(b.add_body(0, name="pole", mass=1.0, inertia=(0.1, 0.1, 0.1)), axis=(0, 1, 0), name="hinge")
    return World(b.finalize(), num_envs=ENVS, device=device, precision="float64")


def evaluate(world, b, inputs):
    """Run ``b``'s program: in the kernel, and on the host with numpy and torch, from
    registers holding ``inputs`` ({regs: (ENVS, n) values}); the three register tables."""
    program = b.build()
    world.set_program(program)
    regs = world.registers().copy()
    regs[:] = 0.0
    for at, values in inputs.items():
        regs[:, at.start : at.stop] = values
    host = regs.copy()
    world.set_registers(regs)
    world.forward(segments=(0, SEGMENT))
    run_segment(program, SEGMENT, host, {})
    out = [("kernel", np.array(world.registers())), ("numpy", host)]
    torch = pytest.importorskip("torch")
    tensor = torch.from_numpy(regs.copy())
    run_segment(program, SEGMENT, tensor, {})
    return out + [("torch", tensor.numpy())]


def check(tables, results, rtol, atol=0.0):
    for where, regs in tables:
        for name, (at, want) in results.items():
            want = np.broadcast_to(np.asarray(want, np.float64), (ENVS, at.n))
            np.testing.assert_allclose(regs[:, at.start : at.stop], want, rtol=rtol, atol=atol,
                                       err_msg=f"{name} ({where})")


def test_operations_and_operators_against_numpy(world):
    rng = np.random.default_rng(0)
    b = ProgramBuilder()
    b.segment(SEGMENT)
    x, y, s, w = b.alloc(6), b.alloc(6), b.alloc(1), b.alloc(6)
    xv = rng.uniform(-2, 2, (ENVS, 6))
    yv = rng.uniform(-2, 2, (ENVS, 6))
    yv[:, 0] = xv[:, 0]  # ties, for the comparisons
    yv[:, 1] = rng.uniform(0.5, 2, ENVS)  # away from 0, for the divisions
    sv = rng.uniform(0.5, 2, (ENVS, 1)) * np.where(rng.uniform(size=(ENVS, 1)) < 0.5, -1, 1)
    wv = np.concatenate([10.0 ** rng.uniform(-20, -1, (ENVS, 2)), rng.uniform(-0.99, 30, (ENVS, 4))], axis=1)
    wv[:, 2] *= -1
    arr = np.array([1.5, -2.0, 0.3, 7.0, -0.1, 3.0])
    with np.errstate(all="ignore"):
        results = {
            "x + y": (x + y, xv + yv), "x - y": (x - y, xv - yv), "x * y": (x * y, xv * yv),
            "x / y": (x / y, xv / yv), "-x": (-x, -xv), "abs(x)": (abs(x), np.abs(xv)),
            "x < y": (x < y, xv < yv), "x <= y": (x <= y, xv <= yv), "x > y": (x > y, xv > yv),
            "x >= y": (x >= y, xv >= yv),
            "x + 2": (x + 2.0, xv + 2.0), "2 - x": (2.0 - x, 2.0 - xv), "x * 3": (x * 3, xv * 3),
            "x / 3": (x / 3.0, xv / 3.0), "x / 4": (x / 4.0, xv / 4.0), "x / 0.1": (x / 0.1, xv / 0.1),
            "3 / x": (3.0 / x, 3.0 / xv), "x - arr": (x - arr, xv - arr), "arr * x": (arr * x, arr * xv),
            "arr / x": (arr / x, arr / xv), "np scalar * x": (np.float64(1.7) * x, 1.7 * xv),
            "x * s": (x * s, xv * sv), "s - x": (s - x, sv - xv), "x - s": (x - s, xv - sv),
            "s / x": (s / x, sv / xv), "x / s": (x / s, xv / sv), "s + 1": (s + 1.0, sv + 1.0),
            "x < 0.5": (x < 0.5, xv < 0.5), "0.5 <= x": (0.5 <= x, 0.5 <= xv), "x >= s": (x >= s, xv >= sv),
            "s > x": (s > x, sv > xv),
            "minimum": (b.minimum(x, y), np.minimum(xv, yv)), "maximum": (b.maximum(x, s), np.maximum(xv, sv)),
            "minimum 0.25": (b.minimum(0.25, x), np.minimum(0.25, xv)),
            "where": (b.where(x < y, x, y), np.where(xv < yv, xv, yv)),
            "where single": (b.where(s < 0, x, 1.0), np.where(sv < 0, xv, 1.0)),
            "log": (b.log(abs(w)), np.log(np.abs(wv))), "log1p": (b.log1p(w), np.log1p(wv)),
            "tanh": (b.tanh(x * 4), np.tanh(xv * 4)),
            "sum": (x.sum(), xv.sum(1, keepdims=True)), "prod": (x.prod(), np.prod(xv, 1, keepdims=True)),
            "min": (x.min(), xv.min(1, keepdims=True)), "max": (x.max(), xv.max(1, keepdims=True)),
            "mean": (x.mean(), xv.mean(1, keepdims=True)), "mean of 4": (x[:4].mean(), xv[:, :4].mean(1, keepdims=True)),
            "square": (x.square(), xv * xv), "slice": (x[1:3] * y[4], xv[:, 1:3] * yv[:, 4:5]),
            # dm_control's cartpole: upright = (cos + 1) / 2, centered = (1 + tolerance) / 2
            "upright": ((b.cos(x) + 1) / 2, (np.cos(xv) + 1) / 2),
            "centered": ((1 + tolerance(x, margin=2)) / 2, (1 + rewards.tolerance(xv, margin=2)) / 2),
        }
    check(evaluate(world, b, {x: xv, y: yv, s: sv, w: wv}), results, 1e-15)


def test_the_documented_cartpole_reward_is_dm_control_s(world):
    """docs/environments.md's example term, on registers standing for the loaded quantities."""
    import types

    from dm_control.suite import cartpole

    doc = (Path(__file__).resolve().parents[1] / "docs" / "environments.md").read_text()
    code = doc[doc.index("from taigym.tasks import tolerance\nfrom taigym.tasks.registry"):]
    scope = {}
    exec(code[: code.index("```")], scope)
    rng = np.random.default_rng(1)
    b = ProgramBuilder()
    b.segment(SEGMENT)
    state = {"qpos": b.alloc(3), "qvel": b.alloc(3), "ctrl": b.alloc(1)}
    values = {"qpos": rng.uniform(-3, 3, (ENVS, 3)), "qvel": rng.uniform(-8, 8, (ENVS, 3)),
              "ctrl": rng.uniform(-1.5, 1.5, (ENVS, 1))}
    c = types.SimpleNamespace(b=b, load=lambda name, rows: state[name][rows] if np.ndim(rows) == 0
                              else state[name][rows[0] : rows[-1] + 1])
    out = scope["cartpole_balance"](None, poles=(1, 2)).ops(c)

    class Physics:  # what cartpole.Balance reads, from the same values
        def __init__(self, e):
            self.e = e

        def pole_angle_cosine(self):
            return np.cos(values["qpos"][self.e, 1:])

        def cart_position(self):
            return values["qpos"][self.e, 0]

        def control(self):
            return values["ctrl"][self.e]

        def angular_vel(self):
            return values["qvel"][self.e, 1:]

    task = cartpole.Balance(swing_up=False, sparse=False)
    want = [[task._get_reward(Physics(e), sparse=False)] for e in range(ENVS)]
    check(evaluate(world, b, {state[k]: values[k] for k in state}), {"cartpole": (out, want)}, 1e-15)


def test_scalars_cost_one_affine_instruction():
    b = ProgramBuilder()
    x = b.alloc(3)
    for expr in (lambda: x + 2.0, lambda: 2.0 - x, lambda: x * 0.3, lambda: -x, lambda: x / 8.0,
                 lambda: x - np.array([1.0, 2.0, 3.0])):
        before = len(b._rows[1])
        expr()
        assert [row[0] for row in b._rows[1][before:]] == [P.AFFINE]
    before = len(b._rows[1])
    x / 3.0  # not a multiplication by 1/3, which rounds differently
    assert [row[0] for row in b._rows[1][before:]] == [P.CONST, P.DIV]


SIGMOIDS = ("gaussian", "hyperbolic", "long_tail", "reciprocal", "cosine", "linear", "quadratic", "tanh_squared")
BOUNDS = [(0.0, 0.0), (-0.5, 1.0), (0.25, 0.25), (-INF, 0.5), (-1.0, INF), (-INF, INF)]


def _tolerance_cases():
    for sigmoid in SIGMOIDS:
        for bounds in BOUNDS:
            for margin in (0.0, 0.3, 2.0):
                values = (0.1, 0.5) if sigmoid not in ("cosine", "linear", "quadratic") else (0.0, 0.1, 0.7)
                for value_at_margin in values:
                    yield dict(bounds=bounds, margin=margin, sigmoid=sigmoid, value_at_margin=value_at_margin)


def test_tolerance_equals_dm_control(world):
    """Every sigmoid, finite, equal and infinite bounds, margins 0 and not, at x inside, at
    and outside the bounds and at a margin's distance from them."""
    grid = np.concatenate([np.linspace(-4, 4, 81), [-0.5 - 0.3, 1.3, -1.3, 0.55, 0.25 - 2, 0.25, 1e-9, -1e-9, 40, -1e3]])
    grid = np.concatenate([grid, np.zeros(-grid.size % ENVS)]).reshape(ENVS, -1)
    b = ProgramBuilder()
    b.segment(SEGMENT)
    x = b.alloc(grid.shape[1])
    results = {}
    for case in _tolerance_cases():
        want = rewards.tolerance(grid, **case)
        results[str(case)] = (tolerance(x, **case), want)
    tables = evaluate(world, b, {x: grid})
    check(tables, results, 1e-14, 1e-14)
    for where, regs in tables:  # inside the bounds exactly 1, outside with no margin exactly 0
        for name, (at, want) in results.items():
            exact = (want == 1.0) | ("'margin': 0.0" in name)
            np.testing.assert_array_equal(regs[:, at.start : at.stop][exact], want[exact], err_msg=f"{name} {where}")


def test_tolerance_at_infinite_and_per_element_arguments(world):
    b = ProgramBuilder()
    b.segment(SEGMENT)
    x = b.alloc(4)
    xv = np.tile([-3.0, 0.0, 0.7, 5.0], (ENVS, 1))
    lower, upper, margin = np.array([-1.0, 0.0, -INF, 4.0]), np.array([1.0, 0.5, 0.5, INF]), np.array([0.5, 0, 1, 2])
    out = b.tolerance(x, bounds=(lower, upper), margin=margin, sigmoid="long_tail", value_at_margin=0.2)
    want = np.stack([rewards.tolerance(xv[:, k], bounds=(lower[k], upper[k]), margin=margin[k], sigmoid="long_tail",
                                       value_at_margin=0.2) for k in range(4)], axis=1)
    check(evaluate(world, b, {x: xv}), {"per element": (out, want)}, 1e-15)
    # x itself infinite, on the host (the kernel's fast math assumes finite operands)
    h = ProgramBuilder()
    y = h.alloc(3)
    cases = [dict(bounds=(0.0, INF), margin=1.0), dict(bounds=(-INF, INF)), dict(bounds=(0.0, 1.0), margin=1.0,
                                                                                  sigmoid="cosine")]
    outs = [h.tolerance(y, **case) for case in cases]
    regs = np.zeros((1, h.nregisters))
    regs[0, : 3] = [INF, -INF, 0.5]
    run_segment(h.build(), 1, regs, {})
    for case, at in zip(cases, outs):
        np.testing.assert_array_equal(regs[0, at.start : at.stop], rewards.tolerance(regs[0, :3], **case), str(case))


@pytest.mark.parametrize("call, message", [
    (lambda b, x: b.tolerance(x, sigmoid="logistic", margin=1), "sigmoid must be one of"),
    (lambda b, x: b.tolerance(x, margin=1, value_at_margin=1.0), "value_at_margin must be strictly between 0 and 1"),
    (lambda b, x: b.tolerance(x, margin=1, value_at_margin=0.0), "value_at_margin"),
    (lambda b, x: b.tolerance(x, margin=1, sigmoid="linear", value_at_margin=-0.1), r"value_at_margin must be in \[0, 1\)"),
    (lambda b, x: b.tolerance(x, margin=-0.5), "margin must be non-negative"),
    (lambda b, x: b.tolerance(x, margin=[1.0, 2.0]), "margin: expected a number or 3 numbers"),
    (lambda b, x: b.tolerance(x, bounds=(1.0, 0.0)), "bounds must have lower <= upper"),
    (lambda b, x: b.tolerance(x, bounds=1.0), r"bounds must be a pair"),
    (lambda b, x: b.tolerance(x, bounds=([0.0, 1.0], 2.0)), r"bounds\[0\]: expected a number or 3 numbers"),
    (lambda b, x: x + b.alloc(2), r"add: operands differ in size \(3, 2 registers\)"),
    (lambda b, x: b.where(x, b.alloc(2), 0.0), r"where: operands differ in size \(3, 2, 1 registers\)"),
    (lambda b, x: x * np.ones(4), r"mul: operands differ in size \(3, 4 registers\)"),
    (lambda b, x: x + "a", "add: expected registers or numbers, got str"),
    (lambda b, x: x + ProgramBuilder().alloc(3), "belong to different ProgramBuilders"),
    (lambda b, x: x + Regs(0, 3), "has no builder"),
    (lambda b, x: Regs(0, 3) * 2.0, "has no builder"),
    (lambda b, x: tolerance(np.zeros(3)), "x must be registers"),
    (lambda b, x: b.min(x[:0]), "min and max of no registers"),
])
def test_bad_input_is_refused_with_one_line_naming_it(call, message):
    b = ProgramBuilder()
    x = b.alloc(3)
    with pytest.raises((ValueError, TypeError), match=message) as e:
        call(b, x)
    assert "\n" not in str(e.value)


def test_a_margin_of_zero_ignores_value_at_margin_as_dm_control_does():
    b = ProgramBuilder()
    x = b.alloc(1)
    b.tolerance(x, margin=0.0, value_at_margin=5.0)
    rewards.tolerance(0.0, margin=0.0, value_at_margin=5.0)


def test_regs_slices_keep_their_builder():
    b = ProgramBuilder()
    x = b.alloc(4)
    assert x[1:3].builder is b and x[2].builder is b
    assert x == Regs(0, 4) and hash(x) == hash(Regs(0, 4)) and "builder" not in repr(x)


def test_a_term_written_with_operators_through_the_task_compiler():
    """c.load, c.prev and c.action give registers of the term compiler's builder: a term's
    ops use operators and tolerance on them (evaluated by tasks.reference.term)."""
    from taigym.tasks import reference as R
    from taigym.tasks.registry import Term
    from taigym.tasks.task import Task

    task = Task.from_source("TaiGym/InvertedPendulum-v0", ["simulation.precision=float64"])
    nq = task.model.nq

    def ops(c):
        moved = (c.load("qpos", range(nq)) - c.prev("qpos", range(nq))) / c.dt
        return tolerance(abs(moved).max(), bounds=(0.0, 0.5), margin=1.0, sigmoid="linear") * (c.action[0] < 0.5)

    rng = np.random.default_rng(2)
    before, after = {"qpos": rng.normal(0, 0.1, (5, nq))}, {"qpos": rng.normal(0, 0.1, (5, nq))}
    for q in (before, after):
        q["qvel"] = np.zeros((5, task.model.nv))
    action = rng.uniform(-1, 1, (5, task.action_size))
    got = R.term(task, Term(ops=ops), before, after, action)
    moved = (after["qpos"] - before["qpos"]) / task.dt
    want = rewards.tolerance(np.abs(moved).max(1), bounds=(0.0, 0.5), margin=1.0, sigmoid="linear") * (action[:, 0] < 0.5)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-15, atol=0)
