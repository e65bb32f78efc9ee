"""Our ports of Gymnasium's MuJoCo v5 tasks against Gymnasium's own env classes.

Same seed, same actions: the initial state (our reset terms draw as Gymnasium does), then
observation, reward and termination at every step must agree. Gymnasium's MuJoCo envs
import imageio for rendering, so this module needs it installed.
"""

import gymnasium as gym
import numpy as np
import pytest

from taigym import envs  # noqa: F401

pytest.importorskip("imageio")
import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)

PAIRS = [("InvertedPendulum-v5", "TaiGym/InvertedPendulum-v0"),
         ("InvertedDoublePendulum-v5", "TaiGym/InvertedDoublePendulum-v0"),
         ("Reacher-v5", "TaiGym/Reacher-v0"),
         ("Swimmer-v5", "TaiGym/Swimmer-v0")]


@pytest.mark.parametrize("theirs,ours", PAIRS, ids=[p[0] for p in PAIRS])
def test_same_observation_reward_termination(theirs, ours):
    ref, env = gym.make(theirs).unwrapped, gym.make(ours).unwrapped
    assert ref.observation_space.shape == env.observation_space.shape
    np.testing.assert_array_equal(ref.action_space.low, env.action_space.low)
    np.testing.assert_array_equal(ref.action_space.high, env.action_space.high)
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        o_ref, _ = ref.reset(seed=seed)
        o, _ = env.reset(seed=seed)
        np.testing.assert_allclose(o, o_ref, rtol=0, atol=1e-12)
        for t in range(40):
            a = rng.uniform(ref.action_space.low, ref.action_space.high).astype(np.float32)
            o_ref, r_ref, term_ref, _, _ = ref.step(a)
            o, r, term, _, _ = env.step(a)
            np.testing.assert_allclose(o, o_ref, rtol=1e-9, atol=1e-9, err_msg=f"{theirs} step {t}")
            # Gymnasium squares the float32 action in float32 for its control cost; we square
            # it in float64, hence rewards agree to float32 rounding of a^2 (~1e-8), not 1e-12
            assert r == pytest.approx(r_ref, rel=1e-6, abs=1e-7), (theirs, t)
            assert term == term_ref, (theirs, t)
            if term:
                break
