"""Every task with torch outputs (``tensor_backend="torch"``) gives what the numpy env gives,
step by step through resets, resampled commands, term memory, observation noise and drive
actions. The env has one step path, the World's program, whichever outputs it hands back,
so the two envs run the same launches on the same inputs and agree exactly: tensors in the
numpy outputs' dtypes, the same numbers (tests/test_vector_torch.py checks the outputs'
devices and memory)."""

from pathlib import Path

import numpy as np
import pytest
from taigym.envs._registers import DeviceRegisters
from taigym.envs.vector import TaiGymVectorEnv

torch = pytest.importorskip("torch")

CONFIGS = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "configs" / "tasks").glob("[!_]*.yaml"))
STEPS = 60


def _envs(config, registers="host", **kwargs):
    """A numpy env and a torch env of ``config``; ``registers="device"``: the torch env reads
    and writes its registers as a CUDA World's env does (envs/_registers.py's
    DeviceRegisters: kernels, torch tensors on the World's device), here on the CPU."""
    path = Path(__file__).resolve().parents[1] / "configs" / "tasks" / config
    # short episodes: the comparison goes through time-limit resets too
    ref = TaiGymVectorEnv(str(path), num_envs=3, max_episode_steps=25, **kwargs)
    env = TaiGymVectorEnv(str(path), num_envs=3, max_episode_steps=25, tensor_backend="torch", **kwargs)
    if registers == "device":
        if env._noisy or env._pixels is not None:
            pytest.skip("noise and pixels are added on the host: such a task reads its registers there")
        env._regs = DeviceRegisters(env.world, env.program, env._obs_dtype)
        env._obs = env._regs.empty_obs(env.num_envs, env.task.obs_size)
    return ref, env


def _close(t, a, what):
    assert isinstance(t, torch.Tensor), what
    assert t.dtype == torch.from_numpy(np.asarray(a)).dtype, what
    np.testing.assert_array_equal(t.numpy(), a, err_msg=what)


# the device registers' path in the quick set on a task with commands (arm_reach) and on
# Ant; the rest of the matrix in the slow tier
DEVICE_QUICK = ("ant.yaml", "arm_reach.yaml")
CASES = [(c, "host") for c in CONFIGS] + [pytest.param(c, "device", marks=() if c in DEVICE_QUICK else pytest.mark.slow)
                                          for c in CONFIGS]


@pytest.mark.parametrize("config,registers", CASES)
def test_torch_path_matches_numpy_path(config, registers):
    ref, env = _envs(config, registers)
    _close(env.reset(seed=5)[0], ref.reset(seed=5)[0], "reset obs")
    rng = np.random.default_rng(1)
    for step in range(STEPS):
        action = rng.uniform(-1, 1, ref.action_space.shape)
        out_np = ref.step(action)
        out_t = env.step(torch.from_numpy(action))
        for name, t, a in zip(("obs", "reward", "terminated", "truncated"), out_t[:4], out_np[:4], strict=True):
            _close(t, a, f"{config} step {step} {name}")
        for key, value in out_np[4].items():
            if isinstance(value, np.ndarray) and value.dtype != object:
                _close(out_t[4][key], value, f"{config} step {step} info {key}")
        # the physics itself is the same on both sides
        np.testing.assert_array_equal(env.world.get("qpos"), ref.world.get("qpos"), err_msg=f"{config} step {step}")
    for name, rows in ref.term_memory().items():
        np.testing.assert_array_equal(env.term_memory()[name], rows, err_msg=name)
    for name, rows in ref.current_commands().items():
        np.testing.assert_array_equal(env.current_commands()[name], rows, err_msg=name)


@pytest.mark.parametrize("registers", ["host", "device"])
def test_float32_world_and_same_step_autoreset(registers):
    ref, env = _envs("hopper.yaml", registers, overrides=["simulation.precision=float32"], autoreset_mode="SameStep")
    _close(env.reset(seed=2)[0], ref.reset(seed=2)[0], "reset obs")
    rng = np.random.default_rng(2)
    finals = 0
    for step in range(STEPS):
        action = rng.uniform(-1, 1, ref.action_space.shape).astype(np.float32)
        out_np, out_t = ref.step(action), env.step(torch.from_numpy(action))
        for name, t, a in zip(("obs", "reward", "terminated", "truncated"), out_t[:4], out_np[:4], strict=True):
            _close(t, a, f"step {step} {name}")
        if "final_obs" in out_np[4]:
            mask = out_np[4]["_final_obs"]
            got = out_t[4]["final_obs"].numpy()
            np.testing.assert_array_equal(got[mask], np.stack(out_np[4]["final_obs"][mask]))
            assert not got[~mask].any()
            finals += int(mask.sum())
    assert finals > 0


@pytest.mark.parametrize("registers", ["host", "device"])
def test_nonfinite_torch_actions(registers):
    _, env = _envs("inverted_pendulum.yaml", registers, overrides=["actions.nonfinite=zero"])
    env.reset(seed=0)
    action = torch.zeros(env.action_space.shape, dtype=torch.float64)
    action[1, 0] = float("nan")
    info = env.step(action)[4]
    np.testing.assert_array_equal(info["action_nonfinite"].numpy(), [False, True, False])
    strict = TaiGymVectorEnv(str(Path(__file__).resolve().parents[1] / "configs" / "tasks" / "inverted_pendulum.yaml"),
                             num_envs=3, tensor_backend="torch")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions contain NaN or inf in envs \[1\]"):
        strict.step(action)
    with pytest.raises(ValueError, match=r"actions must have shape \(3, 1\)"):
        strict.step(torch.zeros((2, 1)))


@pytest.mark.parametrize("registers", ["host", "device"])
def test_a_diverging_env_is_contained_as_the_numpy_env_contains_it(registers):
    ref, env = _envs("swimmer.yaml", registers)
    _close(env.reset(seed=4)[0], ref.reset(seed=4)[0], "reset obs")
    rng = np.random.default_rng(3)
    flagged = 0
    for step in range(12):
        if step == 5:
            for e in (ref, env):
                qvel = e.world.get("qvel")
                qvel[1] = 1e200  # squares overflow to inf within the next step
                e.world.set_state(qvel=qvel)
        action = rng.uniform(-1, 1, ref.action_space.shape)
        out_np, out_t = ref.step(action), env.step(torch.from_numpy(action))
        for name, t, a in zip(("obs", "reward", "terminated", "truncated"), out_t[:4], out_np[:4], strict=True):
            _close(t, a, f"step {step} {name}")
        _close(out_t[4]["physics_diverged"], out_np[4]["physics_diverged"], f"step {step} diverged")
        flagged += int(out_np[4]["physics_diverged"].sum())
    assert flagged == 1
