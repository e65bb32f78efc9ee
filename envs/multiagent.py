"""PettingZoo ParallelEnv for multi-agent task configs (``agents:`` in the YAML).

Agents own disjoint sets of the scene's actuators: the legs of one robot, as in Multi-Agent
MuJoCo (Ant4x2), or whole robots in one shared World that meet through contacts (SumoAnts,
BoxPush). Each agent acts on its own actuators and sees only its own observation terms.
Its reward is the task's shared reward terms plus its own (``agents[i].rewards``); the
task's terminations and time limit end every agent's episode together, since the scene
resets as a whole. ``state()`` is the task's top-level observation, the scene as a
centralized critic would see it.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from pettingzoo import ParallelEnv

from taigym.tasks.loader import error_at

from .vector import TaiGymVectorEnv


class TaiGymParallelEnv(ParallelEnv):
    """Args: ``config`` (a multi-agent task's YAML path or id), ``overrides`` (config overrides)."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "name": "taigym_parallel", "is_parallelizable": True}

    def __init__(self, config, *, overrides=None, render_mode=None):
        self._batch = TaiGymVectorEnv(config, 1, overrides=overrides, autoreset_mode=AutoresetMode.DISABLED,
                                      render_mode=render_mode)
        self.task = self._batch.task
        if not self.task.config.multi_agent:
            raise error_at(self.task.config, ("agents",), "this task defines no agents", expected="a list of agents")
        self.render_mode = render_mode
        self.possible_agents = list(self.task.agents)
        self.agents = []
        self._slots = self._action_slots()
        dtype = self._batch.single_observation_space.dtype
        self._obs_spaces = {
            a: spaces.Box(-np.inf, np.inf, (sum(o.term.size for o in spec["observations"]),), dtype)
            for a, spec in self.task.agents.items()}
        low, high = self._batch.single_action_space.low, self._batch.single_action_space.high
        self._act_spaces = {a: spaces.Box(low[s], high[s], dtype=np.float32) for a, s in self._slots.items()}
        self.state_space = self._batch.single_observation_space
        self._state = None

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act_spaces[agent]

    def reset(self, seed=None, options=None):
        self._state, _ = self._batch.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for agents {missing}")
        full = np.zeros((1, self.task.action_size))
        for agent in self.agents:
            full[0, self._slots[agent]] = np.asarray(actions[agent], dtype=np.float64).reshape(-1)
        self._state, reward, terminated, truncated, info = self._batch.step(full)
        obs = self._observe()
        live = self.agents
        diverged = bool(info["physics_diverged"][0])
        rewards, infos = {}, {}
        for a in live:
            own, parts = self.task.reward(self._batch.last_context, self.task.agents[a]["rewards"])
            # a diverged step judges nothing, for the shared terms (zeroed by the batch) and own ones
            rewards[a] = 0.0 if diverged else float(reward[0] + own[0])
            infos[a] = {"physics_diverged": diverged, **_reward_parts(info, parts, diverged)}
        terms = {a: bool(terminated[0]) for a in live}
        truncs = {a: bool(truncated[0]) for a in live}
        if terminated[0] or truncated[0]:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def state(self):
        """The scene's global observation (the task's top-level ``observations``)."""
        return self._state[0]

    def render(self):
        """The scene's (H, W, 3) uint8 frame, or None without a render mode."""
        if self.render_mode is None:
            return None
        return self._batch.render_frames()[0]

    def close(self):
        self._batch.close()

    def _observe(self):
        ctx, noise = self._batch.last_context, self._batch._noise_rngs
        dtype = self._batch.single_observation_space.dtype
        return {a: self.task.observe(ctx, noise, self.task.agents[a]["observations"])[0].astype(dtype)
                for a in self.possible_agents}

    def _action_slots(self):
        # each agent's actuators as positions in the task's action vector; no actuator twice
        owner = {}
        slots = {}
        for i, (name, spec) in enumerate(self.task.agents.items()):
            slots[name] = []
            for u in spec["actuators"]:
                if u not in self.task.actuators:
                    raise error_at(self.task.config, ("agents", i, "actuators"), f"actuator {u} is not in actions.actuators")
                if u in owner:
                    raise error_at(self.task.config, ("agents", i, "actuators"),
                                   f"actuator {u} already belongs to agent {owner[u]!r}")
                owner[u] = name
                slots[name].append(self.task.actuators.index(u))
        return {a: np.array(s) for a, s in slots.items()}


def _reward_parts(info, own, diverged) -> dict:
    # the shared and own terms of one name add up, as the terms of one list do, so the
    # parts always sum to the agent's reward
    parts = {k: float(v[0]) for k, v in info.items() if k.startswith("reward_")}
    for name, value in own.items():
        key = f"reward_{name}"
        parts[key] = parts.get(key, 0.0) + (0.0 if diverged else float(value[0]))
    return parts
