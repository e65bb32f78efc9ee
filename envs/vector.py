"""The native vector env: every env of a task in one batched World.

Autoreset modes follow Gymnasium 1.x (``metadata["autoreset_mode"]``):

- NEXT_STEP (default): the step after an episode ends returns the reset observation,
  with reward 0 and both flags False; the action given for it is ignored.
- SAME_STEP: an ended env is reset in the step that ended it; the observation returned is
  the reset one and the last one of the episode is in ``info["final_obs"]``, its info in
  ``info["final_info"]``.
- DISABLED: ended envs wait for ``reset(options={"reset_mask": mask})``.

``info`` follows Gymnasium's vector convention: each key holds one value per env and
``info["_key"]``, a bool array, says which envs carry it. A step's keys are
``physics_diverged``, ``reward_<term>`` (each reward term's contribution) and, when an
action had NaN or inf entries and ``actions.nonfinite=zero``, ``action_nonfinite`` (carried
by those envs). As in Gymnasium's own vector envs, an env reset within the step carries
its reset's info, which is empty: in NEXT_STEP mode the envs reset by this step, in
SAME_STEP mode the envs that ended, whose step info is ``final_info`` (a dict in the same
convention, with ``_final_info``; ``final_obs`` is an object array with ``_final_obs``).
The arrays still hold every env's values, so reading one without its mask sees them all.

Each env has its own generator: ``reset(seed=s)`` seeds env i with ``s + i``, so env i of a
batch replays a single env seeded ``s + i``. An env whose physics turns non-finite is put
back to the model's reference state at once and reported as truncated with
``physics_diverged`` True in its info; its last finite observation is returned. The World
steps every env independently, so the others are unaffected.

With ``render_mode="rgb_array"``, ``render()`` returns a tuple of (H, W, 3) uint8 frames, one
per env (as Gymnasium's vector envs do), made by the Taichi ray caster with the task
config's ``render`` settings; ``physics.render.tile`` makes them one grid image.

With ``tensor_backend="torch"`` (``gym.make_vec(id, num_envs=n, tensor_backend="torch")``),
observations, rewards, terminated and truncated are torch tensors on the World's device
(``env.device``), and actions may be torch tensors. Every tensor returned owns its memory,
so nothing the env keeps can be changed through it. In ``info``, arrays become tensors too,
the masks bool tensors (as gymnasium's ``NumpyToTorch`` gives them); ``final_obs`` is then
one (num_envs, obs_size) tensor (a dict of them for a Dict observation) whose rows of envs
that did not end are zero (``_final_obs`` says which rows hold a final observation). From a
CUDA World the observations, rewards and reward terms go from the program's registers to
tensors on the device by one kernel, never through host memory, and actions, reset
overrides and commands reach the registers by kernels that write only their columns
(envs/_registers.py); the termination flags come to the host, where the bookkeeping runs.
A task with observation noise or camera terms reads its registers on the host.

With ``camera`` observation terms (tasks/terms/camera.py), every env's frames are ray cast
after the step's launch (envs/_pixels.py: a uint8 Box, or a Dict of ``"state"`` and
``"pixels"``); a reset env's frames are of its reset state.

A step is one launch of the World on any device: the task's terms are instructions of the
World's program (tasks/term_program.py), run after each env's physics substeps, reading
the actions from the program's registers and writing the observations, rewards and flags
there. Envs that autoreset are reset on the host first (each from its own generator) and
observed in the same launch. Observation noise and command draws stay on the host.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from taigym.tasks.task import Task
from taigym.tasks.term_program import POST, PRE, RESET

from taigym import physics

from ._pixels import Pixels
from ._randomization import ParameterWriter
from ._registers import registers_for
from ._render import RENDER_MODES, FrameSource, check_render_mode

_MODES = {m.value: m for m in AutoresetMode}
TENSOR_BACKENDS = ("numpy", "torch")


class TaiGymVectorEnv(VectorEnv):
    """A batch of ``num_envs`` copies of a task, simulated in one World.

    Args:
        config: a YAML path, a registered id, or a :class:`tasks.Task`.
        num_envs: batch size.
        overrides: config overrides, ``["key.sub=value"]`` or ``{"key.sub": value}``.
        autoreset_mode: an ``AutoresetMode`` or its name ("NextStep", "SameStep", "Disabled").
        time_limit: truncate at the config's ``episode_length`` (the single env leaves this to
            Gymnasium's TimeLimit wrapper).
        max_episode_steps: replaces ``episode_length`` (``gym.make_vec`` passes the registered one).
        render_mode: None or "rgb_array".
        tensor_backend: "numpy" (default) or "torch": outputs as torch tensors on the World's
            device, and torch actions accepted.
        serial: step the envs in the calling thread (``physics.World``'s ``serial``; by
            default at one env). ``serial=False`` shares a batch's compiled kernels.
    """

    metadata: ClassVar[dict] = {"render_modes": RENDER_MODES, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, config, num_envs: int = 1, *, overrides=None, autoreset_mode=AutoresetMode.NEXT_STEP,
                 time_limit: bool = True, max_episode_steps=None, render_mode=None, tensor_backend="numpy",
                 serial=None):
        check_render_mode(render_mode)
        if tensor_backend not in TENSOR_BACKENDS:
            raise ValueError(f"tensor_backend must be one of {TENSOR_BACKENDS}, got {tensor_backend!r}")
        self.tensor_backend = tensor_backend
        self.task = config if isinstance(config, Task) else Task.from_source(config, overrides)
        cfg = self.task.config
        self.num_envs = int(num_envs)
        self.autoreset_mode = _MODES.get(autoreset_mode, autoreset_mode)
        if not isinstance(self.autoreset_mode, AutoresetMode):
            raise TypeError(f"autoreset_mode must be one of {list(_MODES)}, got {autoreset_mode!r}")
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode,
                         "render_fps": round(1.0 / self.task.dt)}
        self.render_mode = render_mode
        self._frames = FrameSource(self.task)  # checks the config's camera names now
        self.world = physics.World(self.task.model, num_envs=self.num_envs, device=cfg.simulation.device,
                                   precision=cfg.simulation.precision, serial=serial,
                                   name=cfg.id)
        self._params = (ParameterWriter(self.task, self.world)
                        if self.task.randomization or self.task.reset_parameters() else None)
        self.device = self.world.device  # where torch outputs live
        self._torch = _TorchOutputs(self.device) if tensor_backend == "torch" else None
        self._time_limit = time_limit
        self.episode_length = int(max_episode_steps or self.task.episode_length)
        self._frame_skip = cfg.simulation.frame_skip
        self._reset_draws, self._reset_steps = cfg.reset_until_no_contact, cfg.reset_steps
        self._first_from_reference = cfg.reset_first_step == "reference"
        self._refresh = cfg.simulation.refresh_after_step
        self._obs_dtype = np.float64 if cfg.simulation.precision == "float64" else np.float32
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (self.task.obs_size,), self._obs_dtype)
        self.single_action_space = spaces.Box(self.task.action_low.astype(np.float32),
                                              self.task.action_high.astype(np.float32), dtype=np.float32)
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.num_envs, self.task.obs_size), self._obs_dtype)
        self._pixels = Pixels(self.task, self.world) if self.task.cameras else None
        if self._pixels is not None:
            self.single_observation_space = self._pixels.space(self.single_observation_space)
            self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        low = np.tile(self.single_action_space.low, (self.num_envs, 1))
        self.action_space = spaces.Box(low, np.tile(self.single_action_space.high, (self.num_envs, 1)), dtype=np.float32)
        self._rngs = self._noise_rngs = None
        self._steps = np.zeros(self.num_envs, dtype=np.int64)
        self._needs_reset = np.ones(self.num_envs, dtype=bool)
        self.program = self.task.program  # the step's registers (tasks/term_program.py)
        self.world.set_program(self.program.program)
        self._noisy = any(o.noise is not None for o in self.task.observations)
        # noise and pixels are added on the host: their outputs come from there
        self._regs = registers_for(self.world, self.program, self._obs_dtype, tensor_backend == "torch"
                                   and not self._noisy and self._pixels is None)
        self._obs = self._regs.empty_obs(self.num_envs, self.task.obs_size)

    # --- Gymnasium API ----------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask")
        ids = np.arange(self.num_envs) if mask is None else np.flatnonzero(self._mask(mask))
        self._seed(ids, seed)
        self._reset_envs(ids)
        obs = self._obs_out()
        return (obs, {}) if self._torch is None else (self._torch.array(obs), {})

    def step(self, actions):
        if self._rngs is None:
            raise ResetNeeded("call reset() before step()")
        actions, bad_action = self._checked_actions(actions)
        resetting = self._needs_reset & (self.autoreset_mode == AutoresetMode.NEXT_STEP)
        obs, reward, parts, terminated, finite = self._step_program(actions, resetting)
        self._steps += 1
        truncated = self._steps >= self.episode_length if self._time_limit else np.zeros(self.num_envs, bool)
        diverged = ~finite & ~resetting
        if self._pixels is not None:  # a diverged env keeps its last frames, as its observation
            self._pixels.render(np.flatnonzero(~diverged) if diverged.any() else None)
        if diverged.any():
            self._contain_divergence(np.flatnonzero(diverged), obs, reward, terminated, truncated)
        self._obs = obs
        if resetting.any():
            ids = np.flatnonzero(resetting)
            self._steps[ids] = 0  # reset before the launch, observed by it
            self._regs.zero_rows(reward, ids)
            terminated[ids], truncated[ids] = False, False
        ended = terminated | truncated
        values, carriers = self._step_info(parts, resetting | diverged, diverged, bad_action)
        info = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            info = {**self._reset_ended(ended), **final_info(values, carriers, ended)}
        info.update(with_masks(values, carriers, self._envs_with_step_info(resetting, ended)))
        self._needs_reset = ended
        out = (self._obs_out(), reward, terminated, truncated, info)
        return out if self._torch is None else self._torch.step(out)

    def _step_program(self, actions, resetting):
        """The step as one launch: actions in, terms computed by the World's program. Envs that
        autoreset now (NEXT_STEP) are reset on the host first and observed in the same launch,
        their steps replaced by a forward pass (the override register)."""
        p = self.program
        reset_ids = np.flatnonzero(resetting) if resetting.any() else None
        self._program_inputs(actions, resetting, reset_ids)
        self.world.step(self._frame_skip, segments=(PRE, POST), refresh=self._refresh)
        out = self._regs.outputs()
        if reset_ids is not None or p.commands_now:
            self._program_bookkeeping(reset_ids)
        if self._noisy:
            self._add_step_noise(out.obs, reset_ids)
        return out.obs, out.reward, out.parts, out.terminated, out.finite

    def _program_inputs(self, actions, resetting, reset_ids):
        # the registers a step reads: actions, the override of envs reset now, commands due
        p = self.program
        rows = []  # (env ids, first register, values)
        if reset_ids is not None:
            self._draw_resets(reset_ids)
            rows.append((reset_ids, p.override.start, np.full((len(reset_ids), 1), float(RESET << 8))))
        # commands due after this step are drawn now, into the registers the observation reads
        # (the rewards read the step's own), each env's from its own generator
        if p.commands_now:
            for name, due in self.task.commands_due(self._steps + 1).items():
                ids = np.flatnonzero(due & ~resetting)
                if len(ids):
                    rows.append((ids, p.commands_next[name].start,
                                 np.stack([self.task.draw_commands(self._rngs[i], (name,))[name] for i in ids])))
        self._regs.write_inputs(actions, rows)

    def _program_bookkeeping(self, reset_ids):
        # the next commands become the current ones; overrides cleared
        if self.program.commands_now:
            self._regs.shift_commands()
        if reset_ids is not None:
            self._regs.write_rows([(reset_ids, self.program.override.start, np.zeros((len(reset_ids), 1)))])
            self.world.time[reset_ids] = 0.0  # they ran a forward pass: no time passed

    def _add_step_noise(self, obs, reset_ids):
        if reset_ids is None:
            self.task.add_noise(obs, self._noise_rngs)
            return
        # a reset env's generator draws the step's noise, then its reset's, as a single env's would
        clean = obs[reset_ids]
        self.task.add_noise(obs, self._noise_rngs)
        self.task.add_noise(clean, [self._noise_rngs[i] for i in reset_ids])
        obs[reset_ids] = clean

    def current_commands(self) -> dict:
        """{command name: (num_envs, size)}: each env's current command (what its observation
        shows), a copy, wherever the env keeps it."""
        regs = self.world.registers()
        return {name: regs[:, at.start : at.stop].astype(np.float64) for name, at in self.program.commands_next.items()}

    def term_memory(self) -> dict:
        """{memory name: (num_envs, width)}: the terms' per-env memory (Term.memory), a copy."""
        regs = self.world.registers()
        return {name: regs[:, at.start : at.stop].astype(np.float64) for name, at in self.program.memories.items()}

    def agent_outputs(self, agent: str) -> dict:
        """A multi-agent task's agent's own results of the last step or reset, per env:
        ``terminated`` (bool, by its own terminations), ``reward`` (its own reward terms, which
        see its own ending), ``parts`` ({name: weighted value}) and ``obs`` (its observation,
        noise drawn from each env's generator as the task's are)."""
        regs, own = self.world.registers(), self.program.agents[agent]
        parts = {}
        for name, at in own.parts:
            parts[name] = parts.get(name, 0.0) + regs[:, at.start].astype(np.float64)
        obs = regs[:, own.obs.start : own.obs.stop].astype(np.float64)
        spec = self.task.agents[agent]["observations"]
        if any(o.noise is not None for o in spec):
            self.task.add_noise(obs, self._noise_rngs, spec)
        return {"terminated": regs[:, own.own_terminated.start] != 0,
                "reward": regs[:, own.reward.start].astype(np.float64), "parts": parts, "obs": obs}

    def render(self):
        """One (H, W, 3) uint8 frame per env, or None without a render mode."""
        if self.render_mode is None:
            return None
        return tuple(self.render_frames())

    def render_frames(self, env_ids=None) -> np.ndarray:
        """Frames of all envs (or ``env_ids``) as one uint8 array (n, H, W, 3)."""
        return self._frames.frames(self.world, env_ids)

    def close_extras(self, **kwargs):
        self.world = None

    # --- internals ------------------------------------------------------------------------
    def _seed(self, ids, seed):
        if seed is None:
            if self._rngs is None:
                self._rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
                self._noise_rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
            return
        if np.ndim(seed):
            seeds = np.asarray(seed, dtype=np.int64)
            if seeds.shape != (self.num_envs,):
                raise ValueError(f"a list of seeds needs one per env ({self.num_envs}), got {seeds.shape}")
        else:
            seeds = int(seed) + np.arange(self.num_envs)
        if self._rngs is None:
            self._rngs, self._noise_rngs = [None] * self.num_envs, [None] * self.num_envs
        for i in ids:
            self._rngs[i] = seeding.np_random(int(seeds[i]))[0]
            # observation noise has its own stream, so it never shifts the reset draws
            self._noise_rngs[i] = np.random.default_rng([int(seeds[i]), 1])

    def _reset_envs(self, ids):
        """Fresh initial states (and parameters) for envs ``ids``; their observations."""
        if len(ids) == 0:
            return
        self._draw_resets(ids)
        every = len(ids) == self.num_envs
        self.world.forward(None if every else ids, segments=(0, RESET))
        self._observe_reset(ids)
        if self._pixels is not None:
            self._pixels.render(None if every else ids)

    def _draw_resets(self, ids):
        """The host's part of a reset: each env's draws from its own generator (initial state,
        parameters, then commands) written into the World (and the program's registers); with
        ``reset_until_no_contact`` states that touch drawn again, with ``reset_steps`` the
        state then left to settle."""
        qpos, qvel, drawn = self._draw_states(ids)
        chosen = [self.task.draw_parameters(self._rngs[i]) for i in ids] if self._params is not None else None
        if self._params is not None:
            self._params.write(ids, [{**d, **c} for d, c in zip(drawn, chosen)])
        self.world.reset(env_ids=ids)
        self.world.set_state(qpos=qpos, qvel=qvel, env_ids=ids)
        if self._reset_draws:
            self._draw_until_no_contact(ids, qpos, qvel, chosen)
        self.task.hold_reset_pose(self.world, ids, qpos)
        if self._reset_steps:
            self._settle(ids, qpos)
        p = self.program
        rows = [(ids, at.start, np.zeros((len(ids), at.stop - at.start))) for at in p.memories.values()]
        if p.commands_now:
            drawn = [self.task.draw_commands(self._rngs[i]) for i in ids]
            for name, now in p.commands_now.items():
                values = np.stack([d[name] for d in drawn])
                rows += [(ids, now.start, values), (ids, p.commands_next[name].start, values)]
        if rows:
            self._regs.write_rows(rows)

    def _settle(self, ids, qpos):
        """``reset_steps`` physics steps of envs ``ids`` at the zero control the reset left; with
        ``reset_first_step: reference`` the first one's velocity is that of a step from the
        reference state at rest, the drawn positions moved by it."""
        steps = self._reset_steps
        if self._first_from_reference:
            self.world.set_state(qpos=np.tile(self.task.model.qpos0, (len(ids), 1)),
                                 qvel=np.zeros((len(ids), self.task.model.nv)), env_ids=ids)
            self.world.step(1, env_ids=ids)
            qvel = self.world.get("qvel")[ids]
            self.world.set_state(qpos=qpos + self.task.model.opt.timestep * qvel, qvel=qvel, env_ids=ids)
            steps -= 1
        if steps:
            self.world.step(steps, env_ids=ids)
        self.world.time[ids] = 0.0

    def _draw_states(self, ids, qpos=None, qvel=None):
        # (qpos, qvel, the reset terms' parameters per env); from the rows of qpos, qvel given
        states = [self.task.draw_initial(self._rngs[i], *(() if qpos is None else (qpos[k], qvel[k])))
                  for k, i in enumerate(ids)]
        return np.stack([s[0] for s in states]), np.stack([s[1] for s in states]), [s[2] for s in states]

    def _draw_until_no_contact(self, ids, qpos, qvel, chosen):
        """Envs ``ids`` whose state (rows of ``qpos``, ``qvel``, updated in place) has a contact
        draw again from their own generators, from the state drawn before, the others keep
        theirs, as dm_control's tasks redraw in place until a forward pass finds none (with
        the parameters the reset terms draw; ``chosen``: the randomization terms', kept); past
        the config's number of draws, an error."""
        rows = np.arange(len(ids))
        for draw in range(self._reset_draws):
            if draw:
                qpos[rows], qvel[rows], drawn = self._draw_states(ids[rows], qpos[rows], qvel[rows])
                if any(drawn):
                    self._params.write(ids[rows], [{**d, **chosen[k]} for d, k in zip(drawn, rows)])
                self.world.set_state(qpos=qpos[rows], qvel=qvel[rows], env_ids=ids[rows])
            self.world.forward(ids[rows])
            rows = rows[self.world.contacts()["ncon"][ids[rows]] > 0]
            if not rows.size:
                return
        raise RuntimeError(f"envs {ids[rows].tolist()[:10]} still have contacts after {self._reset_draws} draws of "
                           "their initial state: raise reset_until_no_contact or draw states apart")

    def _observe_reset(self, ids):
        # the observations the program's RESET segment wrote, noise added on the host
        obs = self._regs.observations(ids)
        if self._noisy:
            self.task.add_noise(obs, [self._noise_rngs[i] for i in ids])
        self._regs.put_rows(self._obs, ids, obs)
        self._steps[ids] = 0
        self._needs_reset[ids] = False

    def _step_info(self, parts, zeroed, diverged, bad_action):
        """(the step's info arrays, for each the envs that carry it where not all do)."""
        values, carriers = {"physics_diverged": diverged}, {}
        if bad_action is not None:
            values["action_nonfinite"] = carriers["action_nonfinite"] = bad_action
        for name, value in parts.items():
            values[f"reward_{name}"] = self._regs.zeroed(zeroed, value)
        return values, carriers

    def _envs_with_step_info(self, resetting, ended):
        # as in Gymnasium's vector envs, an env reset within the step has its reset's (empty)
        # info; in SAME_STEP mode the step's info of an ended env is in info["final_info"]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return ~resetting
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            return ~ended
        return np.ones(self.num_envs, dtype=bool)

    def _reset_ended(self, ended):
        ids = np.flatnonzero(ended)
        if self._torch is not None:
            # one tensor, rows of envs that did not end zero
            final_obs = self._obs_out()
            for part in final_obs.values() if isinstance(final_obs, dict) else (final_obs,):
                self._regs.zero_rows(part, np.flatnonzero(~ended))
            final_obs = self._torch.array(final_obs)
        else:
            final_obs = np.empty(self.num_envs, dtype=object)
            for i in ids:
                state = self._obs[i].astype(self._obs_dtype)
                final_obs[i] = state if self._pixels is None else self._pixels.observation(state, i)
        self._reset_envs(ids)
        return {"final_obs": final_obs, "_final_obs": ended.copy()}

    def _obs_out(self):
        """A copy of the current observations in the observation space's dtype."""
        state = self._regs.obs_out(self._obs)
        return state if self._pixels is None else self._pixels.observation(state)

    def _contain_divergence(self, ids, obs, reward, terminated, truncated):
        # back to the reference state now, so no non-finite value stays in the World;
        # the episode ends as truncated (nothing the policy did is being judged)
        self.world.reset(env_ids=ids)
        self._regs.copy_rows(obs, self._obs, ids)
        self._regs.zero_rows(reward, ids)
        terminated[ids], truncated[ids] = False, True

    def _mask(self, mask):
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.shape != (self.num_envs,):
            raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask.dtype} {mask.shape}")
        if self._rngs is None and not mask.all():
            raise RuntimeError("the first reset() must reset every env")
        return mask

    def _checked_actions(self, actions):
        """(actions as float64 in the env's namespace, per-env non-finite flags or None)."""
        shape = (self.num_envs, self.task.action_size)
        if hasattr(actions, "detach"):  # a torch tensor, on any device
            actions = actions.detach().to("cpu").numpy()
        arr = np.asarray(actions, dtype=np.float64)
        if tuple(arr.shape) != shape:
            raise ValueError(f"actions must have shape {shape}, got {tuple(arr.shape)}")
        bad = ~np.isfinite(arr)
        if not bad.any():
            return arr, None
        rows = np.flatnonzero(bad.any(1))
        if self.task.config.actions.nonfinite == "error":
            raise ValueError(f"actions contain NaN or inf in envs {rows.tolist()[:10]}; "
                             "set actions.nonfinite=zero in the task config to zero them instead")
        return np.where(bad, 0.0, arr), bad.any(1)


def with_masks(values: dict, carriers: dict, envs) -> dict:
    """Gymnasium's vector info: each key's per-env values and ``_key``, the bool mask of the
    envs (among ``envs``) that carry it; keys not in ``carriers`` are carried by every env."""
    info = {}
    for key, value in values.items():
        info[key] = value
        info[f"_{key}"] = envs & carriers[key] if key in carriers else envs.copy()
    return info


def final_info(values: dict, carriers: dict, ended) -> dict:
    """SAME_STEP's ``final_info``: the ended envs' step info, in the same convention."""
    ended_info = with_masks({key: _copy(value) for key, value in values.items()}, carriers, ended)
    return {"final_info": ended_info, "_final_info": ended.copy()}


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value.clone()


class _TorchOutputs:
    """Step results as torch tensors on ``device``, each owning its memory: host arrays
    (the flags) are copied up, tensors the env made for this step are passed on."""

    def __init__(self, device):
        import torch

        self.torch, self.device = torch, torch.device(device)

    def array(self, a):
        if isinstance(a, dict):  # a Dict observation (state and pixels)
            return {key: self.array(v) for key, v in a.items()}
        if isinstance(a, self.torch.Tensor):
            return a
        return self.torch.from_numpy(np.array(a)).to(self.device)

    def info(self, info: dict) -> dict:
        """Arrays as tensors (masks as bool tensors, as gymnasium's NumpyToTorch gives them),
        nested dicts (``final_info``) alike."""
        return {key: self.info(v) if isinstance(v, dict)
                else self.array(v) if isinstance(v, np.ndarray) and v.dtype != object else v
                for key, v in info.items()}

    def step(self, out):
        obs, reward, terminated, truncated, info = out
        return self.array(obs), self.array(reward), self.array(terminated), self.array(truncated), self.info(info)
