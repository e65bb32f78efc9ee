"""stable-baselines3 on the native batch: a ``VecEnv`` over one World, no DummyVecEnv copies.

SB3 expects SAME_STEP semantics: when an episode ends, ``step_wait`` returns the next
episode's first observation, ``dones[i]`` is True, ``infos[i]["terminal_observation"]``
holds the episode's last observation and ``infos[i]["TimeLimit.truncated"]`` says whether
it ended by the time limit rather than by a termination.

    from taigym.envs.sb3 import TaiGymVecEnv
    from stable_baselines3 import PPO
    PPO("MlpPolicy", TaiGymVecEnv("TaiGym/Reacher-v0", num_envs=64)).learn(100_000)
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv

from .vector import TaiGymVectorEnv


class TaiGymVecEnv(VecEnv):
    """Args: ``config`` (id, YAML path or Task), ``num_envs``, ``overrides`` (config overrides),
    ``render_mode`` (None or "rgb_array": ``get_images()`` and SB3's video recorder work)."""

    def __init__(self, config, num_envs: int = 1, *, overrides=None, render_mode=None):
        self.venv = TaiGymVectorEnv(config, num_envs, overrides=overrides, autoreset_mode=AutoresetMode.SAME_STEP,
                                    render_mode=render_mode)
        self.render_mode = render_mode
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        self._actions = None

    def reset(self):
        seeds = None if all(s is None for s in self._seeds) else [
            s if s is not None else np.random.randint(2**31) for s in self._seeds]
        obs, _ = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions):
        self._actions = np.asarray(actions).reshape(self.num_envs, -1)

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        infos = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            # a diverged env always ends, so its flag is in the ended envs' info
            if info["final_info"]["physics_diverged"][i]:
                infos[i]["physics_diverged"] = True
        return obs, reward.astype(np.float32), dones, infos

    def close(self):
        self.venv.close()

    def get_images(self):
        """One (H, W, 3) uint8 frame per env (SB3 tiles them in ``render()``)."""
        return list(self.venv.render_frames())

    # --- attribute access: every env is the same task, so attributes are shared -----------
    def get_attr(self, attr_name, indices=None):
        return [getattr(self.venv, attr_name) for _ in self._indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        raise AttributeError("the envs of one World share their attributes; set them on the task config instead")

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        raise AttributeError(f"per-env methods ({method_name!r}) are not available on a batched World")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._indices(indices)]

    def _indices(self, indices):
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else indices
