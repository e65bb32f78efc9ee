"""The host reference (tasks/reference.py, physics/step/program_host.py) computed with torch
tensors on the World's device gives what it gives with numpy arrays, on every shipped task:
the same quantities, taken from a World as tensors (``World.get_tensor``) or as arrays
(``World.get``), the same registers, one step's outputs and every register the program
writes (term memory and agents' results included), and a reset's observation.

Both evaluate in float64 (the registers' precision), element by element in the same order;
only the last bit of a transcendental function (sin, exp) may differ: 1e-12.
"""

from pathlib import Path

import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks import reference as R

torch = pytest.importorskip("torch")

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "tasks"
CONFIGS = sorted(p.name for p in CONFIG_DIR.glob("[!_]*.yaml"))
STEPS = 6
TOL = 1e-12


def _env(config, overrides=(), steps=STEPS):
    env = TaiGymVectorEnv(str(CONFIG_DIR / config), num_envs=4, overrides=list(overrides))
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        env.step(rng.uniform(-1, 1, env.action_space.shape))
    return env, rng


def _both(world, task):
    return R.quantities(world, task), R.quantities(world, task, tensors=True)


def _torch_registers(task, values):
    regs = R.registers(task, values.shape[0], like=torch.zeros(1))
    regs[:] = torch.from_numpy(values)
    return regs


def _close(got, want, what):
    got = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=TOL, atol=TOL,
                               err_msg=what)


def _compare_step(env, rng, what):
    """One more step's reference outputs and registers, numpy against torch."""
    task, world, p = env.task, env.world, env.program
    (before, before_t), regs = _both(world, task), world.registers().astype(np.float64)
    for name, value in before.items():
        assert isinstance(before_t[name], torch.Tensor)
        np.testing.assert_array_equal(before_t[name].numpy(), value, err_msg=f"{what} {name}")
    action = rng.uniform(-1, 1, env.action_space.shape)
    env.step(action)
    after, after_t = _both(world, task)
    now = world.registers()
    for at in p.commands_next.values():
        regs[:, at.start : at.stop] = now[:, at.start : at.stop]
    regs_t = _torch_registers(task, regs)
    ref = R.step(task, before, after, action, regs)
    out = R.step(task, before_t, after_t, torch.from_numpy(action), regs_t)
    _close(out.obs, ref.obs, f"{what} obs")
    _close(out.reward, ref.reward, f"{what} reward")
    np.testing.assert_array_equal(out.terminated, ref.terminated, err_msg=what)
    np.testing.assert_array_equal(out.finite, ref.finite, err_msg=what)
    assert out.parts.keys() == ref.parts.keys()
    for name, value in ref.parts.items():
        _close(out.parts[name], value, f"{what} reward part {name}")
    _close(regs_t, regs, f"{what} registers")  # memory and agents' results among them
    for name, value in before.items():  # the controls (or drive targets) the action maps to among them
        _close(before_t[name], value, f"{what} {name} as the step left it")
    return ref


@pytest.mark.parametrize("config", CONFIGS)
def test_reference_on_torch_equals_numpy(config):
    env, rng = _env(config, ["simulation.precision=float64"])
    _compare_step(env, rng, config)
    now, now_t = _both(env.world, env.task)
    regs = env.world.registers().astype(np.float64)
    _close(R.observe(env.task, now_t, _torch_registers(env.task, regs.copy())), R.observe(env.task, now, regs),
           f"{config} reset observation")


def test_capped_contact_cost():
    # a cap that binds, once the Ant has landed
    env, rng = _env("ant.yaml", ["simulation.precision=float64", "rewards.3.params.max_value=0.1"], steps=30)
    assert env.task.config.rewards[3].term == "contact_force_l2"
    name, weight, _ = env.task.rewards[3]
    capped = False
    for _ in range(30):  # until a step has a leg pressing on the floor
        capped = (_compare_step(env, rng, "ant.yaml").parts[name] == weight * 0.1).any()
        if capped:
            break
    assert capped


def test_tilt_at_float32_rounding_of_threshold():
    # an xmat[2, 2] equal to float32(cos(max_angle)), which is below cos(max_angle): the
    # float64 registers compare it with the float64 threshold (tilted), with either namespace
    env, _ = _env("quadruped_flat.yaml", ["simulation.precision=float32"])
    task = env.task
    i = next(i for i, t in enumerate(task.config.terminations) if t.term == "base_tilt_above")
    now, now_t = _both(env.world, task)
    assert now["xmat"].dtype == np.float32 and now_t["xmat"].dtype == torch.float32
    now["xmat"][:, :, 2, 2] = np.float32(np.cos(1.0))  # the config's max_angle
    now_t["xmat"][:, :, 2, 2] = float(np.float32(np.cos(1.0)))
    assert R.term(task, task.terminations[i], now, now).all()
    flags = R.step(task, now_t, now_t, torch.zeros(4, task.action_size, dtype=torch.float64)).terminated
    assert flags.all()
