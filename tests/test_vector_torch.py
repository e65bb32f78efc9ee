"""The native vector env's torch outputs (``tensor_backend="torch"``): the numpy outputs'
numbers, on the World's device, in the numpy outputs' dtypes, owning their memory. Both
come from the same launch and the same registers, so they are compared exactly."""

import gymnasium as gym
import numpy as np
import pytest

from taigym import envs  # noqa: F401  registers the task ids

torch = pytest.importorskip("torch")

TASK = "TaiGym/InvertedDoublePendulum-v0"  # terminates early under random actions: autoresets happen


def make(backend, **kwargs):
    return gym.make_vec(TASK, num_envs=4, vectorization_mode="vector_entry_point", tensor_backend=backend, **kwargs)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_torch_outputs_equal_numpy_outputs(mode):
    ref, env = make("numpy", autoreset_mode=mode), make("torch", autoreset_mode=mode)
    obs_np, _ = ref.reset(seed=3)
    obs_t, _ = env.reset(seed=3)
    assert isinstance(obs_t, torch.Tensor) and obs_t.device == torch.device(env.unwrapped.device)
    np.testing.assert_allclose(obs_t.numpy(), obs_np, rtol=0, atol=0)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(40):
        action = rng.uniform(-1, 1, ref.action_space.shape).astype(np.float32)
        out_np = ref.step(action)
        out_t = env.step(torch.from_numpy(action))  # actions as tensors too
        for a, t in zip(out_np[:4], out_t[:4], strict=True):
            assert isinstance(t, torch.Tensor) and t.dtype == torch.from_numpy(np.asarray(a)).dtype
            np.testing.assert_allclose(t.numpy(), a, rtol=0, atol=0)
        info_np, info_t = out_np[4], out_t[4]
        np.testing.assert_array_equal(info_t["physics_diverged"].numpy(), info_np["physics_diverged"])
        if "final_obs" in info_np:
            mask = info_np["_final_obs"]
            np.testing.assert_array_equal(info_t["_final_obs"].numpy(), mask)
            np.testing.assert_allclose(info_t["final_obs"].numpy()[mask], np.stack(info_np["final_obs"][mask]),
                                       rtol=0, atol=0)
            assert not info_t["final_obs"].numpy()[~mask].any()
        ended += int((out_np[2] | out_np[3]).sum())
    assert ended > 0  # the comparison went through autoresets


def test_torch_outputs_do_not_alias_the_env():
    env = make("torch")
    obs, _ = env.reset(seed=0)
    inner = env.unwrapped
    held = lambda x: np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    kept = held(inner._obs).copy()
    obs += 100.0  # a user writing into a returned tensor changes nothing the env holds
    np.testing.assert_array_equal(held(inner._obs), kept)
    obs2, reward, terminated, truncated, _ = env.step(torch.zeros(env.action_space.shape))
    for t in (obs2, reward, terminated, truncated):
        assert not np.shares_memory(t.numpy(), held(inner._obs))
        assert not np.shares_memory(t.numpy(), inner._needs_reset)
        assert not np.shares_memory(t.numpy(), inner.world.registers())  # the program's registers
    before = held(inner._obs).copy()
    obs2.zero_()
    reward.zero_()
    np.testing.assert_array_equal(held(inner._obs), before)


def test_tensor_backend_is_checked():
    with pytest.raises(ValueError, match="tensor_backend must be one of"):
        make("jax")


@pytest.mark.cuda
def test_torch_outputs_on_a_cuda_world():
    # Taichi runs one backend per process: the CUDA World lives in a subprocess
    import os
    import subprocess
    import sys

    from taigym.physics.runtime.backend import _probe_cuda

    if not _probe_cuda() or not torch.cuda.is_available():
        pytest.skip("no NVIDIA GPU with CUDA torch on this machine")
    probe = (
        "import gymnasium as gym, torch, taigym\n"
        f"env = gym.make_vec({TASK!r}, num_envs=4, vectorization_mode='vector_entry_point', tensor_backend='torch',\n"
        "                   overrides=['simulation.device=cuda'])\n"
        "obs, _ = env.reset(seed=0)\n"
        "out = env.step(torch.zeros(env.action_space.shape, device='cuda'))\n"
        "assert all(t.device.type == 'cuda' for t in (obs, *out[:4])), [t.device for t in (obs, *out[:4])]\n"
        "assert torch.isfinite(out[0]).all()\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True,
                            timeout=600, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert result.returncode == 0, result.stderr[-3000:]
