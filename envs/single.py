"""The single env: a one-env batch of the native vector env behind ``gymnasium.Env``.

It shares every line of task logic with the vector env, so env 0 of a batch seeded ``s``
and a single env seeded ``s`` follow the same trajectory. Truncation is left to the
TimeLimit wrapper that ``gymnasium.make`` adds from the registered episode length.
Rewards are Python floats and flags Python bools, as Gymnasium's checker expects. With
``render_mode="rgb_array"``, ``render()`` returns the env's (H, W, 3) uint8 frame.
``step`` before ``reset`` raises ``gymnasium.error.ResetNeeded``, as the vector env does.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from ._render import RENDER_MODES
from .vector import TaiGymVectorEnv


class TaiGymEnv(gym.Env):
    """One environment of a task.

    Args:
        config: a YAML path, a registered id, or a :class:`tasks.Task`.
        overrides: config overrides, ``["key.sub=value"]`` or ``{"key.sub": value}``.
        render_mode: None or "rgb_array" (frames from the config's ``render`` settings).
    """

    metadata: ClassVar[dict] = {"render_modes": RENDER_MODES}

    def __init__(self, config, *, overrides=None, render_mode=None):
        self._batch = TaiGymVectorEnv(config, 1, overrides=overrides, autoreset_mode=AutoresetMode.DISABLED,
                                      time_limit=False, render_mode=render_mode)
        self.task = self._batch.task
        self.render_mode = render_mode
        self.observation_space = self._batch.single_observation_space
        self.action_space = self._batch.single_action_space
        self.metadata = {**type(self).metadata, "render_fps": round(1.0 / self.task.dt)}

    @property
    def world(self):
        return self._batch.world

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, _ = self._batch.reset(seed=seed)
        # the env's own generator is the one its resets draw from
        self._np_random = self._batch._rngs[0]
        return _first(obs), {}

    def step(self, action):
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {action.shape}")
        if self.task.config.actions.nonfinite == "error" and not np.isfinite(action).all():
            # checked here so that the message speaks of this env's action, not of a batch's envs
            raise ValueError("action contains NaN or inf; "
                             "set actions.nonfinite=zero in the task config to zero it instead")
        obs, reward, terminated, truncated, info = self._batch.step(action[None])
        return _first(obs), float(reward[0]), bool(terminated[0]), bool(truncated[0]), _unbatch(info)

    def render(self):
        """The env's (H, W, 3) uint8 frame, or None without a render mode."""
        if self.render_mode is None:
            return None
        return self._batch.render_frames()[0]

    def close(self):
        self._batch.close()


def _first(obs):
    """The env's observation from its batch's (a Dict observation's, key by key)."""
    return {key: v[0] for key, v in obs.items()} if isinstance(obs, dict) else obs[0]


def _unbatch(info: dict) -> dict:
    """The env's info from its batch's: the keys it carries, without the batch's masks."""
    out = {}
    for key, value in info.items():
        mask = info.get(f"_{key}")
        if key.startswith("_") or (mask is not None and not mask[0]):
            continue
        item = np.asarray(value)[0]
        out[key] = item.item() if isinstance(item, np.generic) else item
    return out
