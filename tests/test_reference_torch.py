"""Every step term of every task gives the same result computed with torch (``ctx.xp`` a
TorchOps, tasks/arrays.py) as with numpy, on the same inputs: the context a numpy vector env
kept from its last step, and a twin of it whose arrays are torch tensors.

Unlike tests/test_torch_backend_tasks.py, which runs whole envs on both paths, this checks the
terms one by one on identical inputs, so a failure names the term; terms that update their
memory in place must update it alike.

On a float64 World both sides compute in float64 and agree to 1e-12. On a float32 World the
terms that meet a float64 constant promote to float64 on both sides alike (result dtypes must
be equal); the others compute in float32, where numpy's and torch's kernels (sin, sums,
einsum, norms) may round the last bit differently, so those agree to float32's precision.
"""

from pathlib import Path

import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks.arrays import NUMPY, TorchOps
from taigym.tasks.context import StepContext

torch = pytest.importorskip("torch")

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "tasks"
CONFIGS = sorted(p.name for p in CONFIG_DIR.glob("[!_]*.yaml"))
STEPS = 6
TOL = {"float64": 1e-12, "float32": 1e-6}


def _last_context(config, overrides=()):
    # the numpy terms are what this compares with torch: not the program path
    env = TaiGymVectorEnv(str(CONFIG_DIR / config), num_envs=4, overrides=list(overrides), program=False)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        env.step(rng.uniform(-1, 1, env.action_space.shape))
    assert env.last_context.action is not None, "the last context is a step's"
    return env.task, env.last_context, env.world.precision


def _twin(ctx, xp, convert):
    def each(d):
        return None if d is None else {k: convert(v) for k, v in d.items()}

    return StepContext(ctx.model, each(ctx.data), dt=ctx.dt, action=convert(ctx.action), prev=each(ctx.prev),
                       terminated=convert(ctx.terminated), commands=each(ctx.commands), memory=each(ctx.memory),
                       xp=xp)


def _check_terms(name, task, ctx, tol):
    """Each step term on a numpy and a torch copy of ``ctx``; returns {path: numpy result}."""
    # copies on both sides: terms update memory in place, and the env's arrays stay as they were
    ref = _twin(ctx, NUMPY, np.array)
    dev = _twin(ctx, TorchOps("cpu"), lambda a: torch.from_numpy(np.array(a)))
    out = {}
    for path, term in task._step_terms():
        what = f"{name} {'.'.join(map(str, path))}"
        with np.errstate(all="ignore"):
            want = np.asarray(term.fn(ref))
        got = term.fn(dev)
        assert isinstance(got, torch.Tensor), what
        got = got.numpy()
        assert got.shape == want.shape, what
        assert got.dtype == want.dtype, f"{what}: torch gives {got.dtype}, numpy {want.dtype}"
        if want.dtype == bool:
            np.testing.assert_array_equal(got, want, err_msg=what)
        else:
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
        for key, rows in ref.memory.items():
            np.testing.assert_allclose(dev.memory[key].numpy(), rows, rtol=tol, atol=tol, err_msg=f"{what} {key}")
        out[path] = want
    assert out
    return out


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("config", CONFIGS)
def test_terms_on_torch_match_numpy(config, precision):
    task, ctx, prec = _last_context(config, [f"simulation.precision={precision}"])
    assert prec == precision and ctx.get("qpos").dtype == np.dtype(precision)
    _check_terms(f"{config} ({precision})", task, ctx, TOL[precision])


def test_capped_contact_cost():
    # a cap that binds, and that float32 cannot represent
    task, ctx, _ = _last_context("ant.yaml", ["simulation.precision=float64", "rewards.3.params.max_value=0.1"])
    path = next(p for p, t in task._step_terms() if t.fn.__qualname__.startswith("contact_force_l2"))
    assert path == ("rewards", 3)
    cost = _check_terms("ant.yaml", task, ctx, 1e-12)[path]
    assert (cost == 0.1).any()


def test_tilt_at_float32_rounding_of_threshold():
    # an xmat[2, 2] equal to float32(cos(max_angle)), which is below cos(max_angle): numpy
    # compares it with the float64 threshold (tilted), and so must torch
    task, ctx, _ = _last_context("quadruped_flat.yaml", ["simulation.precision=float32"])
    path = ("terminations", next(i for i, t in enumerate(task.terminations)
                                 if t.fn.__qualname__.startswith("base_tilt_above")))
    xmat = ctx.get("xmat").copy()
    xmat[:, :, 2, 2] = np.float32(np.cos(1.0))  # the config's max_angle
    ctx.data = {**ctx.data, "xmat": xmat}
    assert _check_terms("quadruped_flat.yaml", task, ctx, TOL["float32"])[path].all()
