"""The kernels' own sine and cosine (physics/runtime/ti_math.py, sincos), which every hinge's frame uses
in place of two library calls: accurate to a few ulp of the angle in both precisions."""

import numpy as np
import pytest
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.runtime.ti_math import make_math


def _angles() -> np.ndarray:
    quarter = np.pi / 4 * np.arange(-16, 17)
    near_quarters = np.concatenate([quarter + d for d in (-1e-9, 0.0, 1e-9)])
    wide = np.random.default_rng(0).uniform(-50.0, 50.0, 2000)
    tiny = np.array([0.0, -0.0, 1e-300, -1e-12, 3e-8])
    return np.concatenate([near_quarters, wide, tiny, [1e4, -12345.678]])


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_sincos_matches_numpy_within_a_few_ulp_of_the_angle(device, precision):
    ensure_runtime(device)
    fp = ti.f64 if precision == "float64" else ti.f32
    m = make_math(fp)
    x = _angles().astype(precision)
    array = ti.types.ndarray(dtype=fp, ndim=1)

    @ti.kernel
    def evaluate(x: array, s: array, c: array):
        for i in range(x.shape[0]):
            s[i], c[i] = m.sincos(x[i])

    s = np.zeros_like(x)
    c = np.zeros_like(x)
    evaluate(x, s, c)
    exact = x.astype(np.float64)
    eps = np.finfo(precision).eps
    # the reduction's error scales with |x| (about one ulp of x); the polynomials add a
    # few ulp of the result
    bound = 4 * eps * np.maximum(1.0, np.abs(exact))
    np.testing.assert_array_less(np.abs(s - np.sin(exact)), bound)
    np.testing.assert_array_less(np.abs(c - np.cos(exact)), bound)
    assert np.all(np.abs(s * s + c * c - 1) < 4 * eps)


def test_body_quaternions_stay_unit_without_normalizing_each_body(device):
    """Body frames multiply unit quaternions down the tree without renormalizing each
    body (physics/smooth/kinematics.py): the drift is rounding alone, even at wild angles."""
    from conftest import gym_asset

    from taigym import physics

    model = physics.load_model(gym_asset("humanoid"))
    rng = np.random.default_rng(0)
    num_envs = 32
    qpos = np.tile(model.qpos0, (num_envs, 1))
    qpos[:, 7:] += rng.uniform(-30.0, 30.0, (num_envs, model.nq - 7))
    quat = rng.normal(size=(num_envs, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    world = physics.World(model, num_envs=num_envs, device=device, precision="float64")
    world.set_state(qpos=qpos, qvel=np.zeros((num_envs, model.nv)))
    world.forward()
    assert np.abs(np.linalg.norm(world.get("xquat"), axis=-1) - 1).max() < 1e-14
