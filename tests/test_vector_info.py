"""The native vector env's ``info`` in Gymnasium's vector convention: a bool mask ``_key``
beside every key, ``final_obs``/``final_info`` in SAME_STEP mode as Gymnasium's own
SyncVectorEnv gives them, Gymnasium's vector wrappers on top, the torch backend's masks;
and the errors the single and vector envs raise alike."""

import gymnasium as gym
import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import DictInfoToList, NormalizeObservation, RecordEpisodeStatistics
from taigym.envs.single import TaiGymEnv
from taigym.envs.vector import TaiGymVectorEnv

from taigym import envs  # noqa: F401 - registers the ids

TASK = "TaiGym/InvertedPendulum-v0"  # random actions end its episodes within a few steps
N = 4


def random_actions(steps, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-scale, scale, (N, 1)).astype(np.float32) for _ in range(steps)]


def assert_masked(info, n=N):
    """Every key has its bool (n,) mask and every mask its key, nested dicts alike."""
    for key, value in info.items():
        if key.startswith("_"):
            assert key[1:] in info, key
            assert isinstance(value, np.ndarray) and value.dtype == bool and value.shape == (n,), key
            continue
        assert f"_{key}" in info, key
        if isinstance(value, dict):
            assert_masked(value, n)
        else:
            assert len(value) == n, key


def step_keys(info):
    return {k for k in info if not k.startswith("_") and k not in ("final_obs", "final_info")}


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_every_key_has_a_mask_saying_which_envs_carry_it(mode):
    env = gym.make_vec(TASK, num_envs=N, autoreset_mode=mode)
    env.reset(seed=0)
    done = np.zeros(N, bool)
    ended = 0
    for actions in random_actions(30):
        if mode == "Disabled" and done.any():
            env.reset(options={"reset_mask": done})
        _, _, terminated, truncated, info = env.step(actions)
        assert_masked(info)
        assert step_keys(info) == {"physics_diverged", "reward_alive"}
        carried = {"NextStep": ~done, "SameStep": ~(terminated | truncated), "Disabled": np.ones(N, bool)}[mode]
        for key in step_keys(info):
            np.testing.assert_array_equal(info[f"_{key}"], carried, err_msg=key)
        done = terminated | truncated
        ended += done.sum()
        if mode == "SameStep" and done.any():
            np.testing.assert_array_equal(info["_final_obs"], done)
            np.testing.assert_array_equal(info["_final_info"], done)
            for key in step_keys(info["final_info"]):
                np.testing.assert_array_equal(info["final_info"][f"_{key}"], done, err_msg=key)
        else:
            assert "final_obs" not in info and "final_info" not in info
    assert ended > 0


def test_a_partial_key_is_masked_to_the_envs_that_carry_it():
    env = gym.make_vec(TASK, num_envs=N, overrides=["actions.nonfinite=zero"])
    env.reset(seed=0)
    actions = np.zeros((N, 1), np.float32)
    actions[2] = np.nan
    info = env.step(actions)[4]
    assert_masked(info)
    np.testing.assert_array_equal(info["_action_nonfinite"], [False, False, True, False])
    assert "action_nonfinite" not in env.step(np.zeros((N, 1), np.float32))[4]


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_dict_info_to_list_gives_each_env_its_own_info(mode):
    env = DictInfoToList(gym.make_vec(TASK, num_envs=N, autoreset_mode=mode))
    env.reset(seed=0)
    done = np.zeros(N, bool)
    for actions in random_actions(20):
        _, _, terminated, truncated, infos = env.step(actions)
        for i, info in enumerate(infos):
            if mode == "NextStep" and done[i]:
                assert info == {}  # the step that reset it has the reset's info
            elif mode == "SameStep" and (terminated[i] or truncated[i]):
                assert set(info) == {"final_obs", "final_info"}
                assert set(info["final_info"]) == {"physics_diverged", "reward_alive"}
            else:
                assert set(info) == {"physics_diverged", "reward_alive"}
        done = terminated | truncated


def test_same_step_final_info_as_gymnasium_sync_vector_env():
    pytest.importorskip("imageio")  # gymnasium's MuJoCo envs import it
    same_step = {"autoreset_mode": AutoresetMode.SAME_STEP}
    ref = gym.make_vec("InvertedPendulum-v5", num_envs=N, vectorization_mode="sync", vector_kwargs=same_step)
    env = gym.make_vec(TASK, num_envs=N, autoreset_mode="SameStep")
    ref.reset(seed=0)
    env.reset(seed=0)
    compared = 0
    for actions in random_actions(30):
        _, _, term_ref, _, info_ref = ref.step(actions)
        _, _, term, _, info = env.step(actions)
        np.testing.assert_array_equal(term, term_ref)
        final_keys = {"final_obs", "_final_obs", "final_info", "_final_info"}
        assert final_keys & set(info) == final_keys & set(info_ref)
        none = np.zeros(N, bool)
        # their reward_survive is our reward_alive; keys no env carries they leave out
        np.testing.assert_array_equal(info["_reward_alive"], info_ref.get("_reward_survive", none))
        if "final_obs" not in info_ref:
            continue
        compared += 1
        mask = info_ref["_final_obs"]
        for name in ("_final_obs", "_final_info"):
            np.testing.assert_array_equal(info[name], info_ref[name])
        assert info["final_obs"].dtype == object and info["final_obs"].shape == (N,)
        for i in np.flatnonzero(mask):
            np.testing.assert_allclose(info["final_obs"][i], info_ref["final_obs"][i], rtol=1e-9, atol=1e-9)
        final, final_ref = info["final_info"], info_ref["final_info"]
        assert type(final) is type(final_ref) is dict
        np.testing.assert_array_equal(final["_reward_alive"], final_ref["_reward_survive"])
        np.testing.assert_allclose(final["reward_alive"][mask], final_ref["reward_survive"][mask])
    assert compared > 0


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_record_episode_statistics_records_returns_and_lengths(mode):
    env = RecordEpisodeStatistics(gym.make_vec(TASK, num_envs=N, autoreset_mode=mode))
    env.reset(seed=0)
    returns, lengths = np.zeros(N), np.zeros(N, int)
    done = np.zeros(N, bool)
    recorded = 0
    for actions in random_actions(40):
        _, reward, terminated, truncated, info = env.step(actions)
        if mode == "NextStep":  # the step that resets an env starts its next episode afresh
            returns[done], lengths[done] = 0.0, 0
            returns[~done] += reward[~done]
            lengths[~done] += 1
        else:
            returns += reward
            lengths += 1
        done = terminated | truncated
        if not done.any():
            assert "episode" not in info
            continue
        np.testing.assert_array_equal(info["_episode"], done)
        np.testing.assert_allclose(info["episode"]["r"][done], returns[done])
        np.testing.assert_array_equal(info["episode"]["l"][done], lengths[done])
        recorded += done.sum()
        if mode == "SameStep":
            returns[done], lengths[done] = 0.0, 0
    assert recorded > 0 and len(env.return_queue) == recorded


def test_normalize_observation_on_top():
    env = RecordEpisodeStatistics(NormalizeObservation(gym.make_vec(TASK, num_envs=N)))
    obs, _ = env.reset(seed=0)
    for actions in random_actions(30):
        obs, _, _, _, info = env.step(actions)
        assert np.isfinite(obs).all()
        # the wrapper's own "episode" dict holds r, l and t under the one mask "_episode"
        assert_masked({k: v for k, v in info.items() if k not in ("episode", "_episode")})
    rms = env.env.obs_rms
    assert rms.count > 30 * N and np.abs(obs.mean(0)).max() < 3.0


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_torch_backend_masks_are_bool_tensors(mode):
    torch = pytest.importorskip("torch")
    ref = gym.make_vec(TASK, num_envs=N, autoreset_mode=mode)
    env = gym.make_vec(TASK, num_envs=N, autoreset_mode=mode, tensor_backend="torch")
    ref.reset(seed=0)
    env.reset(seed=0)
    finals = 0

    def check(info_t, info_np):
        assert set(info_t) == set(info_np)
        for key, value in info_t.items():
            if key == "final_obs":
                continue  # one tensor, zero rows for the envs that did not end
            if isinstance(value, dict):
                check(value, info_np[key])
                continue
            assert isinstance(value, torch.Tensor), key
            if key.startswith("_"):
                assert value.dtype == torch.bool and tuple(value.shape) == (N,), key
            np.testing.assert_allclose(value.numpy(), info_np[key], rtol=1e-12, atol=1e-12, err_msg=key)

    for actions in random_actions(30):
        info_np = ref.step(actions)[4]
        info_t = env.step(torch.from_numpy(actions))[4]
        check(info_t, info_np)
        finals += "final_info" in info_t
    assert finals > 0 or mode == "NextStep"


def test_step_before_reset_needs_a_reset_in_every_env():
    for env in (TaiGymVectorEnv(TASK, N), gym.make_vec(TASK, num_envs=N)):
        with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
            env.step(np.zeros((N, 1), np.float32))
    for env in (TaiGymEnv(TASK), gym.make(TASK)):
        with pytest.raises(ResetNeeded):
            env.step(np.zeros(1, np.float32))


def test_single_env_info_has_no_masks_and_its_errors_no_env_index():
    env = TaiGymEnv(TASK)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^action contains NaN or inf; .*actions.nonfinite=zero") as err:
        env.step(np.array([np.nan], np.float32))
    assert "env" not in str(err.value).replace("actions.nonfinite", "")
    info = env.step(np.zeros(1, np.float32))[4]
    assert set(info) == {"physics_diverged", "reward_alive"}
    zeroing = gym.make(TASK, overrides=["actions.nonfinite=zero"])
    zeroing.reset(seed=0)
    info = zeroing.step(np.array([np.inf], np.float32))[4]
    assert info["action_nonfinite"] is True and not any(k.startswith("_") for k in info)
    assert "action_nonfinite" not in zeroing.step(np.zeros(1, np.float32))[4]


def test_sb3_adapter_reports_a_diverged_env_from_its_final_info():
    pytest.importorskip("stable_baselines3")
    from taigym.envs.sb3 import TaiGymVecEnv

    venv = TaiGymVecEnv("TaiGym/Swimmer-v0", num_envs=3)
    venv.reset()
    qvel = venv.venv.world.get("qvel")
    qvel[1] = 1e200  # squares overflow to inf within the next step
    venv.venv.world.set_state(qvel=qvel)
    _, _, dones, infos = venv.step(np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(dones, [False, True, False])
    assert infos[1]["physics_diverged"] and infos[1]["TimeLimit.truncated"]
    assert np.isfinite(infos[1]["terminal_observation"]).all()
    assert "physics_diverged" not in infos[0] and "physics_diverged" not in infos[2]
