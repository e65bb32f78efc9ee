"""PettingZoo ParallelEnv for multi-agent task configs (``agents:`` in the YAML).

Agents own disjoint sets of the scene's actuators: the legs of one robot, as in Multi-Agent
MuJoCo (Ant4x2), or whole robots in one shared World that meet through contacts (SumoAnts,
BoxPush). Each agent acts on its own actuators and sees only its own observation terms.
Its reward is the task's shared reward terms plus its own (``agents[i].rewards``). The
task's terminations and time limit end every agent's episode together. An agent's own
terminations (``agents[i].terminations``) end its episode alone: on that step it is
reported terminated, then it leaves ``agents`` and the others play on. The World goes on
simulating the whole scene: an agent that is out drives its actuators with action 0 (a
torque-driven robot goes limp and lies where it fell, in the others' way), and the scene
resets only on ``reset()``. ``state()`` is the task's top-level observation, the scene as
a centralized critic would see it.

``render_mode`` is a constructor keyword, as in PettingZoo; frames are drawn off-screen, so
only ``"rgb_array"`` is offered.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from pettingzoo import ParallelEnv
from taigym.tasks.loader import error_at

from ._render import RENDER_MODES, check_render_mode
from .vector import TaiGymVectorEnv


class TaiGymParallelEnv(ParallelEnv):
    """Args: ``config`` (a multi-agent task's YAML path or id), ``overrides`` (config overrides),
    ``render_mode`` (None or "rgb_array")."""

    metadata: ClassVar[dict] = {"render_modes": list(RENDER_MODES), "name": "taigym_parallel",
                                "is_parallelizable": True}

    def __init__(self, config, *, overrides=None, render_mode=None):
        self._unoffered_mode = _mode_refused_on_use(render_mode)
        self._batch = TaiGymVectorEnv(config, 1, overrides=overrides, autoreset_mode=AutoresetMode.DISABLED,
                                      render_mode=None if self._unoffered_mode else render_mode)
        self.task = self._batch.task
        if not self.task.config.multi_agent:
            raise error_at(self.task.config, ("agents",), "this task defines no agents", expected="a list of agents")
        self.metadata = {**type(self).metadata, "render_fps": self._batch.metadata["render_fps"]}
        self.render_mode = render_mode
        self.possible_agents = list(self.task.agents)
        self.agents = []
        self._slots = self._action_slots()
        self._dtype = dtype = self._batch.single_observation_space.dtype
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
        self._refuse_unoffered_mode()
        self._state, _ = self._batch.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return self._observe(self.agents), {a: {} for a in self.agents}

    def step(self, actions):
        """One step of the scene. ``actions`` holds an action for every agent in ``agents``; one
        for an agent that is out is ignored, as PettingZoo's wrappers may still send it.
        The returned dicts hold the agents that acted, those that ended on this step included."""
        live = list(self.agents)
        self._check_actions(actions, live)
        full = np.zeros((1, self.task.action_size))  # an agent that is out drives its actuators with 0
        for agent in live:
            full[0, self._slots[agent]] = np.asarray(actions[agent], dtype=np.float64).reshape(-1)
        self._state, reward, terminated, truncated, info = self._batch.step(full)
        own = {a: self._batch.agent_outputs(a) for a in live}
        diverged = bool(info["physics_diverged"][0])
        # a diverged step judges nothing: the batch has truncated the scene, and zeroed its rewards
        terms = {a: bool(terminated[0]) or (not diverged and bool(own[a]["terminated"][0])) for a in live}
        truncs = {a: bool(truncated[0]) for a in live}
        rewards, infos = {}, {}
        for a in live:
            parts = {name: value[:1] for name, value in own[a]["parts"].items()}
            rewards[a] = 0.0 if diverged else float(reward[0] + own[a]["reward"][0])
            infos[a] = {"physics_diverged": diverged, **_reward_parts(info, parts, diverged)}
        self.agents = [a for a in live if not (terms[a] or truncs[a])]
        return {a: own[a]["obs"][0].astype(self._dtype) for a in live}, rewards, terms, truncs, infos

    def state(self):
        """The scene's global observation (the task's top-level ``observations``)."""
        return self._state[0]

    def render(self):
        """The scene's (H, W, 3) uint8 frame, or None without a render mode."""
        self._refuse_unoffered_mode()
        if self.render_mode is None:
            return None
        return self._batch.render_frames()[0]

    def close(self):
        self._batch.close()

    def _refuse_unoffered_mode(self):
        if self._unoffered_mode is not None:
            raise ValueError(f"render_mode must be None or one of {RENDER_MODES}, got {self._unoffered_mode!r}: "
                             "frames are drawn off-screen; make the env with render_mode='rgb_array' and show "
                             "the frames render() returns")

    def _check_actions(self, actions, live):
        missing = [a for a in live if a not in actions]
        if missing:
            raise ValueError(f"no action for agents {missing}")
        unknown = [a for a in actions if a not in self._slots]
        if unknown:
            raise ValueError(f"actions for {unknown}, which are not agents of this env: {self.possible_agents}")

    def _observe(self, agents):
        return {a: self._batch.agent_outputs(a)["obs"][0].astype(self._dtype) for a in agents}

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


def _mode_refused_on_use(render_mode):
    """``"human"``, which is not offered, to be refused when the env is reset or rendered;
    None for an offered mode. Any other mode is refused at once.

    PettingZoo's render_test makes an env with render_mode="human" only to read the modes
    its metadata offers, then tests each of those: refusing "human" here would fail it."""
    if render_mode == "human" and render_mode not in RENDER_MODES:
        return render_mode
    check_render_mode(render_mode)
    return None
