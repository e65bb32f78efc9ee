"""Task: a validated config bound to its robot Model — the batched maths of an env.

A Task knows nothing of Gymnasium: it holds the env step's terms compiled into one World
program (``program``, tasks/term_program.py: actions to controls, then observations, rewards
and terminations), and draws one env's initial state, randomized parameters and commands
from that env's generator. ``envs`` drives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from taigym.physics.model import BIAS_NONE, INT_RK4, JNT_HINGE, JNT_SLIDE

from . import registry, user_terms
from .drive_actions import DRIVE_KINDS, DriveActions, check_kind_fields
from .loader import _validate_term as validate_term
from .loader import error_at, load_task_config, per_item, term_entry
from .robot import actuator_index, build_model, reset_pose
from .schema import TaskConfig
from .term_program import build_program


@dataclass
class BoundObservation:
    name: str
    term: registry.Term
    clip: tuple | None
    noise: object | None


class Task:
    """A task config with its Model and bound terms.

    Build one with :meth:`from_source` (a YAML path or registered id, plus overrides) or
    from an already validated :class:`TaskConfig`.
    """

    @classmethod
    def from_source(cls, source, overrides=None) -> Task:
        """``source``: a YAML path or registered id; ``overrides``: ``["key.sub=value"]`` or a dict."""
        return cls(load_task_config(source, overrides))

    def __init__(self, cfg: TaskConfig):
        self.config = cfg
        self.model = build_model(cfg)
        self.init_qpos = reset_pose(cfg, self.model)
        self.dt = self.model.opt.timestep * cfg.simulation.frame_skip
        self.episode_length = cfg.episode_length
        bound = self._bind_observations(cfg.observations, ("observations",))
        # camera terms are rendered by the env after the step (envs/_pixels.py), the others
        # are instructions of the step's program
        self.observations = [o for o in bound if o.term.view is None]
        self.cameras = [o for o in bound if o.term.view is not None]
        self.rewards = self._bind_rewards(cfg.rewards, ("rewards",))
        self.terminations = [self._bind("termination", t, ("terminations", i)) for i, t in enumerate(cfg.terminations)]
        self.resets = [self._bind("reset", t, ("resets", i)) for i, t in enumerate(cfg.resets)]
        self.randomization = [(i, self._bind("randomization", t, ("randomization", i)))
                              for i, t in enumerate(cfg.randomization)]
        self.agents = {a.name: self._bind_agent(i, a) for i, a in enumerate(cfg.agents or ())}
        self.commands = self._bind_commands(cfg)
        self._check_command_references(cfg)
        self.memory = self._memory()
        self._bind_actions(cfg)
        self._check_reset_first_step(cfg)
        # the env step's terms as one World program, built now so that a term whose
        # instructions fail is refused before any World exists
        self.program = build_program(self)

    # --- sizes and spaces ---------------------------------------------------------------------
    @property
    def obs_size(self) -> int:
        return sum(o.term.size for o in self.observations)

    @property
    def action_size(self) -> int:
        return len(self.action_low)

    # --- actions ----------------------------------------------------------------------------
    def hold_reset_pose(self, world, env_ids, qpos: np.ndarray) -> None:
        """Drive actions: point reset envs' drive targets at their fresh poses (targets persist
        in the World across resets). Nothing to do for actuator actions: a reset zeroes ctrl."""
        if self.drive is not None:
            world.set_drive_target(q=self.drive.hold(qpos), qd=np.zeros((len(env_ids), self.model.nv)),
                                   env_ids=env_ids)

    # --- per-step terms -----------------------------------------------------------------------
    def add_noise(self, obs: np.ndarray, noise_rngs, observations=None) -> None:
        """Add the observation noise the config asks for to (num_envs, obs_size) ``obs`` in
        place, env i's from ``noise_rngs[i]``, term by term in observation order; of the
        task's observations or of ``observations`` (an agent's own)."""
        at = 0
        for o in self.observations if observations is None else observations:
            if o.noise is not None:
                obs[:, at : at + o.term.size] += _noise(o.noise, noise_rngs, o.term.size)
            at += o.term.size

    # --- resets -----------------------------------------------------------------------------
    def initial_state(self, rng) -> tuple[np.ndarray, np.ndarray]:
        """One env's fresh (qpos, qvel), the reset terms applied in order with ``rng``."""
        qpos, qvel, _ = self.draw_initial(rng)
        return qpos, qvel

    def draw_initial(self, rng, qpos=None, qvel=None) -> tuple[np.ndarray, np.ndarray, dict]:
        """One env's (qpos, qvel, parameters): the reset terms applied in order with ``rng``
        to the reset pose at rest, or to a copy of the state given (a draw that replaces a
        rejected one starts from it, as dm_control's redraw loops do); the parameters are
        those reset terms draw with the state ({name: (indices, values)}, a target that the
        state depends on)."""
        qpos = (self.init_qpos if qpos is None else qpos).copy()
        qvel = np.zeros(self.model.nv) if qvel is None else qvel.copy()
        params = {}
        for term in self.resets:
            params.update(term.fn(rng, qpos, qvel) or {})
        return qpos, qvel, params

    def reset_parameters(self) -> tuple:
        """The model parameters the reset terms draw with the state."""
        return tuple(name for term in self.resets for name in term.info.get("parameters", ()))

    def draw_parameters(self, rng) -> dict:
        """One env's randomized model parameters: {name: (indices, values)}."""
        out = {}
        for _, term in self.randomization:
            out.update(term.fn(rng))
        return out

    def _check_reset_first_step(self, cfg):
        # the drawn positions move by a step of the reference velocity, qpos += h qvel, which
        # holds for hinges and slides; dm_control's RK4 steps start afresh
        if cfg.reset_first_step != "reference":
            return
        if not cfg.reset_steps:
            raise error_at(cfg, ("reset_first_step",), "reset_first_step: reference needs reset_steps >= 1")
        if self.model.opt.integrator == INT_RK4:
            raise error_at(cfg, ("reset_first_step",), "reset_first_step: reference is for the Euler and implicit "
                           "integrators (dm_control's RK4 step starts from the drawn state)")
        if not np.isin(self.model.jnt_type, (JNT_HINGE, JNT_SLIDE)).all():
            raise error_at(cfg, ("reset_first_step",), "reset_first_step: reference needs a model of hinge and "
                           "slide joints only")

    # --- commands and memory ----------------------------------------------------------------
    def draw_commands(self, rng, names=None) -> dict:
        """One env's fresh commands {name: (size,)} (all, or those in ``names``), drawn with its
        generator in config order."""
        return {name: np.asarray(term.fn(rng), dtype=np.float64) for name, term, _ in self.commands
                if names is None or name in names}

    def commands_due(self, steps: np.ndarray) -> dict:
        """{name: (num_envs,) bool}: the envs whose command is resampled after step ``steps``
        (steps since each env's reset), every ``period`` control steps."""
        return {name: (steps > 0) & (steps % period == 0) for name, _, period in self.commands}

    # --- binding ----------------------------------------------------------------------------
    def _bind_commands(self, cfg):
        out = []
        for i, t in enumerate(cfg.commands):
            if any(name == t.term for name, _, _ in out):
                raise error_at(cfg, ("commands", i, "term"), f"command {t.term!r} is given twice")
            term = self._bind("command", t, ("commands", i))
            # the resampling period in whole control steps, at least one
            period = max(1, round(term.info["resampling_time"] / self.dt))
            out.append((t.term, term, period))
        return out

    def _step_terms(self):
        """(key path, bound term) of every term evaluated on a step: the task's observations,
        rewards and terminations, and each agent's observations, rewards and terminations."""
        out = [(("observations", i), o.term) for i, o in enumerate(self.observations)]
        out += [(("rewards", i), t) for i, (_, _, t) in enumerate(self.rewards)]
        out += [(("terminations", i), t) for i, t in enumerate(self.terminations)]
        for a, agent in enumerate(self.agents.values()):
            out += [(("agents", a, "observations", i), o.term) for i, o in enumerate(agent["observations"])]
            out += [(("agents", a, "rewards", i), t) for i, (_, _, t) in enumerate(agent["rewards"])]
            out += [(("agents", a, "terminations", i), t) for i, t in enumerate(agent["terminations"])]
        return out

    def _check_command_references(self, cfg):
        # terms that read a command name it in info["command"]; it must be one of the config's
        known = [name for name, _, _ in self.commands]
        for path, term in self._step_terms():
            name = term.info.get("command")
            if name is not None and name not in known:
                raise error_at(cfg, (*path, "params", "command"), f"no command named {name!r} in the config",
                               expected=f"one of {known}" if known else "a `commands:` entry that defines it")

    def _memory(self):
        sizes = {}
        for _, term in self._step_terms():
            for name, width in term.memory.items():
                if sizes.setdefault(name, width) != width:
                    raise ValueError(f"terms disagree on the width of memory {name!r}: {sizes[name]} and {width}")
        return sizes

    def _bind(self, kind, term_cfg, path):
        origin, data = self.config._source or (None, None)
        entry = term_entry(kind, term_cfg, path, data, origin)
        params = registry.validate_params(entry, term_cfg.params)
        # a user's factory is named by the line of its own code that failed
        own = user_terms.is_users(entry.factory)
        try:
            term = entry.factory(self.model, **params)
        except registry.TermError as e:
            where = (*path, "params", e.param) if e.param else path
            raise error_at(self.config, where, f"{term_cfg.term!r}: {e}"
                           + (f" ({user_terms.origin_of(e)})" if own else "")) from None
        except Exception as e:
            if not own:
                raise
            raise error_at(self.config, path, f"{term_cfg.term!r} raised {type(e).__name__} while it was built: {e} "
                           f"({user_terms.origin_of(e)})") from e
        if not isinstance(term, registry.Term):
            raise error_at(self.config, path, f"{term_cfg.term!r} returned a {type(term).__name__}, not a Term "
                           f"({user_terms.source_of(entry.factory)})")
        if kind == "observation" and term.view is None and not (isinstance(term.size, int) and term.size > 0):
            raise error_at(self.config, path, f"{term_cfg.term!r} gave no observation width: Term(size=...) must be "
                           f"a positive int, got {term.size!r} ({user_terms.source_of(entry.factory)})")
        return term

    def _bind_observations(self, terms, path):
        out = [BoundObservation(_short(t.term), self._bind("observation", t, (*path, i)), t.clip, t.noise)
               for i, t in enumerate(terms)]
        for i, o in enumerate(out):
            if o.term.view is None:
                continue
            if path != ("observations",):
                raise error_at(self.config, (*path, i, "term"), "a camera term is a task's observation, not an agent's")
            for key in ("clip", "noise"):
                if getattr(o, key) is not None:
                    raise error_at(self.config, (*path, i, key), f"a camera term's frames take no {key}")
        self._check_camera_keys(out, path)
        return out

    def _check_camera_keys(self, observations, path):
        # several cameras are keyed by their names in a Dict observation, beside "state"
        keys = [o.term.view.key for o in observations if o.term.view is not None]
        for i, o in enumerate(observations):
            key = None if o.term.view is None else o.term.view.key
            if key is not None and keys.count(key) > 1:
                raise error_at(self.config, (*path, i, "params", "camera"), f"camera {key!r} is observed twice")
            if key == "state" and len(keys) > 1:
                raise error_at(self.config, (*path, i, "params", "camera"),
                               "a camera named 'state' would share its key with the state observation")

    def _bind_agent(self, i, agent):
        acts = [actuator_index(self.config, self.model, a, ("agents", i, "actuators", k))
                for k, a in enumerate(agent.actuators)]
        return {"actuators": acts,
                "observations": self._bind_observations(agent.observations, ("agents", i, "observations")),
                "rewards": self._bind_rewards(agent.rewards, ("agents", i, "rewards")),
                "terminations": self._bind_agent_terminations(i, agent.terminations)}

    def _bind_agent_terminations(self, i, terms):
        # checked here with the loader's messages, as the loader's own checks cover the task's lists
        origin, data = self.config._source or (None, None)
        out = []
        for k, t in enumerate(terms):
            path = ("agents", i, "terminations", k)
            validate_term("termination", t, path, data, origin)
            out.append(self._bind("termination", t, path))
        return out

    def _bind_rewards(self, terms, path):
        return [(_short(t.term), t.weight, self._bind("reward", t, (*path, k))) for k, t in enumerate(terms)]

    def _bind_actions(self, cfg: TaskConfig):
        m, act = self.model, cfg.actions
        check_kind_fields(cfg)
        self.drive = DriveActions(cfg, m) if act.kind in DRIVE_KINDS else None
        if self.drive is not None:
            self.actuators = []  # no actuator is commanded: ctrl stays at its reset value, 0
            self.scale, self.offset = self.drive.scale, self.drive.offset
            self.action_low, self.action_high = self.drive.low, self.drive.high
            return
        if act.actuators == "all":
            self.actuators = list(range(m.nu))
        else:
            self.actuators = [actuator_index(cfg, m, a, ("actions", "actuators", k)) for k, a in enumerate(act.actuators)]
        if not self.actuators:
            raise error_at(cfg, ("actions", "actuators"), "the robot has no actuators to act on")
        for k, u in enumerate(self.actuators):
            kind = _actuator_kind(m, u)
            if kind != act.kind:
                raise error_at(cfg, ("actions", "kind"), f"actuator {u} of the robot is a {kind} actuator",
                               expected=f"'{kind}', or an asset whose actuators are {act.kind} drives")
        n = len(self.actuators)
        self.scale = per_item(cfg, act.scale, n, "scale", "actuator")
        self.offset = per_item(cfg, act.offset, n, "offset", "actuator")
        if np.any(self.scale == 0):
            raise error_at(cfg, ("actions", "scale"), "a zero scale makes the action meaningless", expected="non-zero")
        lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
        limited = m.actuator_ctrllimited[self.actuators].astype(bool)
        rng = m.actuator_ctrlrange[self.actuators]
        # the action space is the control range seen through ctrl = offset + scale * action
        a, b = (rng[:, 0] - self.offset) / self.scale, (rng[:, 1] - self.offset) / self.scale
        lo[limited], hi[limited] = np.minimum(a, b)[limited], np.maximum(a, b)[limited]
        self.action_low, self.action_high = lo, hi


def _actuator_kind(m, u) -> str:
    if m.actuator_biastype[u] == BIAS_NONE:
        return "torque"
    return "position" if m.actuator_biasprm[u, 1] != 0 else "velocity"


def _noise(noise, rngs, width):
    if noise.kind == "uniform":
        return np.stack([rng.uniform(-noise.scale, noise.scale, width) for rng in rngs])
    return np.stack([rng.normal(0.0, noise.scale, width) for rng in rngs])


def _short(term: str) -> str:
    """A term's name in info keys: a user's ``my_terms.py:forward_speed`` is ``forward_speed``."""
    return term.rpartition(":")[2]
