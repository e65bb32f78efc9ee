"""Every task on the torch path (``tensor_backend="torch", torch_terms=True``: task terms
computed with torch on the World's device, tasks/arrays.py, as a GPU World does by default) gives what the numpy path gives, step by step through
resets, resampled commands, term memory, observation noise and drive actions.

The World's state is the same on both sides; the terms' arithmetic may round differently
(torch's and numpy's sin, exp, norms and sums differ in the last bits, and on a float32 World
terms compute in float32 on both sides). So values agree to 1e-9 on float64 Worlds and to
float32's precision on float32 ones; flags (terminated, truncated) must be equal."""

from pathlib import Path

import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv

torch = pytest.importorskip("torch")

CONFIGS = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "configs" / "tasks").glob("[!_]*.yaml"))
STEPS = 60


def _envs(config, **kwargs):
    path = Path(__file__).resolve().parents[1] / "configs" / "tasks" / config
    # short episodes: the comparison goes through time-limit resets too; the reference is the
    # numpy terms (the program path is compared with them in tests/test_term_program.py)
    return (TaiGymVectorEnv(str(path), num_envs=3, max_episode_steps=25, program=False, **kwargs),
            TaiGymVectorEnv(str(path), num_envs=3, max_episode_steps=25, tensor_backend="torch", torch_terms=True,
                            **kwargs))


def _close(t, a, what, precision="float64"):
    assert isinstance(t, torch.Tensor), what
    assert t.dtype == torch.from_numpy(np.asarray(a)).dtype, what
    if a.dtype == bool:
        np.testing.assert_array_equal(t.numpy(), a, err_msg=what)
    else:
        tol = 1e-9 if precision == "float64" else 1e-5
        np.testing.assert_allclose(t.numpy(), a, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("config", CONFIGS)
def test_torch_path_matches_numpy_path(config):
    ref, env = _envs(config)
    prec = ref.world.precision
    _close(env.reset(seed=5)[0], ref.reset(seed=5)[0], "reset obs", prec)
    rng = np.random.default_rng(1)
    for step in range(STEPS):
        action = rng.uniform(-1, 1, ref.action_space.shape)
        out_np = ref.step(action)
        out_t = env.step(torch.from_numpy(action))
        for name, t, a in zip(("obs", "reward", "terminated", "truncated"), out_t[:4], out_np[:4], strict=True):
            _close(t, a, f"{config} step {step} {name}", prec)
        for key, value in out_np[4].items():
            if isinstance(value, np.ndarray) and value.dtype != object:
                _close(out_t[4][key], value, f"{config} step {step} info {key}", prec)
        # the physics itself is the same on both sides
        np.testing.assert_array_equal(env.world.get("qpos"), ref.world.get("qpos"), err_msg=f"{config} step {step}")
    for name, rows in ref.term_memory().items():
        np.testing.assert_allclose(env.term_memory()[name], rows, rtol=1e-6, atol=1e-6, err_msg=name)
    for name, rows in ref.current_commands().items():
        np.testing.assert_array_equal(env.current_commands()[name], rows, err_msg=name)


def test_float32_world_and_same_step_autoreset():
    ref, env = _envs("hopper.yaml", overrides=["simulation.precision=float32"], autoreset_mode="SameStep")
    _close(env.reset(seed=2)[0], ref.reset(seed=2)[0], "reset obs")
    rng = np.random.default_rng(2)
    finals = 0
    for step in range(STEPS):
        action = rng.uniform(-1, 1, ref.action_space.shape).astype(np.float32)
        out_np, out_t = ref.step(action), env.step(torch.from_numpy(action))
        for name, t, a in zip(("obs", "reward", "terminated", "truncated"), out_t[:4], out_np[:4], strict=True):
            _close(t, a, f"step {step} {name}", "float32")
        if "final_obs" in out_np[4]:
            mask = out_np[4]["_final_obs"]
            got = out_t[4]["final_obs"].numpy()
            np.testing.assert_allclose(got[mask], np.stack(out_np[4]["final_obs"][mask]), rtol=1e-5, atol=1e-5)
            assert not got[~mask].any()
            finals += int(mask.sum())
    assert finals > 0


def test_nonfinite_torch_actions():
    ref, env = _envs("inverted_pendulum.yaml", overrides=["actions.nonfinite=zero"])
    env.reset(seed=0)
    action = torch.zeros(env.action_space.shape, dtype=torch.float64)
    action[1, 0] = float("nan")
    info = env.step(action)[4]
    np.testing.assert_array_equal(info["action_nonfinite"].numpy(), [False, True, False])
    strict = TaiGymVectorEnv(str(Path(__file__).resolve().parents[1] / "configs" / "tasks" / "inverted_pendulum.yaml"),
                             num_envs=3, tensor_backend="torch", torch_terms=True)
    strict.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions contain NaN or inf in envs \[1\]"):
        strict.step(action)
    with pytest.raises(ValueError, match=r"actions must have shape \(3, 1\)"):
        strict.step(torch.zeros((2, 1)))
