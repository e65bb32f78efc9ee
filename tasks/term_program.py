"""A task's env step as a World program (physics/step/program.py): one launch per step.

The program's segments:

- ``PRE``, before an env's physics substeps: keeps the quantities terms read as they were
  before the step (``c.prev``), then maps the action registers to controls (clip, then
  offset + scale * action), or to drive targets.
- ``POST``, after them: the termination flags and their ``any``, each reward term's weighted
  value and their sum, the observation (each term clipped as configured), and whether the
  state is finite.
- ``RESET``, after a reset's forward pass: the observation alone.

A step term is only its ``ops``: the env runs them here, and tasks/reference.py runs the
same instructions on arrays (tests hold both to closed forms and to Gymnasium). Observation
noise, command draws and resets stay on the host: they draw from each env's own generator.
Commands and term memory live in registers, written by the host at resets and resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from taigym.physics.step.program import ProgramBuilder, Regs

from .user_terms import origin_of, source_of

PRE, POST, RESET = 1, 2, 3


class TermCompiler:
    """What a term's ``ops(c)`` builds with: the builder ``c.b``, the World's quantities now
    (``c.load``) and before the step (``c.prev``), the step's action registers and
    termination flag, the model and the control period. All of these are registers of
    ``c.b``, so Python operators and ``taigym.tasks.tolerance`` work on them."""

    def __init__(self, task, builder: ProgramBuilder, action, terminated):
        self.task, self.b, self.model, self.dt = task, builder, task.model, task.dt
        self.paths: dict = {}  # id(term) -> its key path in the config, for messages
        self.action, self.terminated = action, terminated
        self._loaded: dict = {}
        self._prev: dict = {}
        # per-env state the host keeps in registers: each command twice (the one the step's
        # action was chosen for, which rewards judge, and the one drawn for the next step,
        # which the observation shows) and each term memory once
        self.commands_now = {name: builder.alloc(term.size) for name, term, _ in task.commands}
        self.commands_next = {name: builder.alloc(term.size) for name, term, _ in task.commands}
        self.memories = {name: builder.alloc(width) for name, width in task.memory.items()}
        self.observing = False
        self.at(POST)

    def build(self, term, width: int) -> Regs:
        """The registers ``term.ops`` computes into, checked to be ``width`` wide; a failure
        raises TermBuildError naming the term's config key and its own code's line."""
        path = self.paths.get(id(term), ())
        try:
            out = term.ops(self)
        except Exception as e:
            raise TermBuildError(path, f"{_where(self.task.config, path)}: building its instructions raised "
                                 f"{type(e).__name__}: {e} ({origin_of(e)})") from e
        if not isinstance(out, Regs) or out.n != width:
            got = f"{out.n} values" if isinstance(out, Regs) else f"a {type(out).__name__}"
            raise TermBuildError(path, f"{_where(self.task.config, path)}: its ops gave {got}, expected {width} "
                                 f"({source_of(term.ops)})")
        return out

    def at(self, segment: int) -> None:
        self._segment = segment
        self.b.segment(segment)

    def load(self, name: str, rows, cols=None):
        """Quantity ``name`` now (after the step, or after a reset's forward pass)."""
        key = (self._segment, name, _key(rows), _key(cols))
        if key not in self._loaded:
            if name in ("cfrc_ext", "cfrc_int", "cacc") and (self._segment, "rne") not in self._loaded:
                self.b.rne_post()
                self._loaded[(self._segment, "rne")] = True
            self._loaded[key] = self.b.load(name, rows, cols)
        return self._loaded[key]

    def command(self, name: str):
        """Command ``name``: the step's own while rewards are built, the next one for observations."""
        return (self.commands_next if self.observing else self.commands_now)[name]

    def memory(self, name: str):
        """Term memory ``name`` (Term.memory), kept across steps, zeroed by the host at a reset."""
        return self.memories[name]

    def prev(self, name: str, rows, cols=None):
        """Quantity ``name`` as it was before the step (kept by the PRE segment)."""
        key = (name, _key(rows), _key(cols))
        if key not in self._prev:
            segment = self._segment
            self.b.segment(PRE)
            self._prev[key] = self.b.load(name, rows, cols)
            self.b.segment(segment)
        return self._prev[key]


def _key(x):
    return None if x is None else tuple(int(v) for v in (x if hasattr(x, "__len__") else [x]))


def _where(cfg, path) -> str:
    """'agents[0].rewards[2] (body_distance)': a step term's place in the config and its name."""
    node, text = cfg, ""
    for key in path:
        node = node[key] if isinstance(key, int) else getattr(node, key)
        text += f"[{key}]" if isinstance(key, int) else ("." if text else "") + key
    return f"{text} ({node.term})"


def build_program(task) -> "TermProgram":
    """``task``'s TermProgram, or a ConfigError naming the term's key in the task file and,
    for a term that fails while its instructions are built, the term's own file and line."""
    from .loader import error_at

    for path, term in task._step_terms():
        if term.ops is None:
            raise error_at(task.config, path, f"{_where(task.config, path)} gives no ops: a step term is written "
                           "as World-program instructions (docs/environments.md, 'Writing your own term')")
    try:
        return TermProgram(task)
    except TermBuildError as e:
        raise error_at(task.config, e.path, e.reason) from e.__cause__


class TermBuildError(Exception):
    """A step term whose instructions could not be built; ``path`` is its key in the config."""

    def __init__(self, path, reason):
        super().__init__(reason)
        self.path, self.reason = path, reason


@dataclass
class StepOutputs:
    """An env step's results as the host reads them from the registers (TermProgram.outputs)."""

    obs: np.ndarray
    reward: np.ndarray
    parts: dict
    terminated: np.ndarray
    finite: np.ndarray


@dataclass
class AgentRegisters:
    """An agent's registers: ``own_terminated`` (its own terminations), ``ended`` (those or the
    scene's), its own rewards' ``reward`` and ``parts``, and its observation ``obs``."""

    own_terminated: Regs
    ended: Regs
    reward: Regs
    parts: list
    obs: Regs


class TermProgram:
    """The registers and program of ``task``'s env step. Attributes (register runs): ``action``
    (input, written before a step), ``obs``, ``reward``, ``parts`` [(name, regs)],
    ``terminated``, ``nonfinite``; ``commands_now``, ``commands_next`` and ``memories``
    ({name: regs}, kept by the host); ``agents`` {name: AgentRegisters}; ``program`` is
    what World.set_program takes."""

    def __init__(self, task):
        b = ProgramBuilder()
        self.action = b.alloc(task.action_size)
        self.terminated = b.alloc(1)
        c = TermCompiler(task, b, self.action, self.terminated)
        c.paths = {id(term): path for path, term in task._step_terms()}
        self.commands_now, self.commands_next, self.memories = c.commands_now, c.commands_next, c.memories
        _any_of(c, task.terminations, self.terminated)
        self.reward, self.parts = _weighted_sum(c, task.rewards)
        self.part_names = [name for name, _ in self.parts]
        self.part_columns = np.array([at.start for _, at in self.parts], dtype=np.int64)
        self.agents = {name: self._agent(c, spec) for name, spec in task.agents.items()}
        self.obs = b.alloc(task.obs_size)
        c.observing = True
        for segment in (POST, RESET):
            c.at(segment)
            _observe_into(c, task.observations, self.obs)
            for name, spec in task.agents.items():
                _observe_into(c, spec["observations"], self.agents[name].obs)
        c.at(POST)
        self.override = b.override()  # envs reset before a step run RESET in its launch
        self.nonfinite = b.alloc(1)
        state = b.alloc(task.model.nq + task.model.nv)
        b.load("qpos", range(task.model.nq), out=state[: task.model.nq])
        b.load("qvel", range(task.model.nv), out=state[task.model.nq:])
        b.nonfinite(state, out=self.nonfinite)
        c.at(PRE)  # after the kept quantities, which the compiler put there while binding
        self._actions(b, task)
        self.program = b.build()

    def outputs(self, regs) -> StepOutputs:
        """What a step's registers ((n, nregisters), numpy) hold: observations, total reward, each
        reward term's weighted value by name (a name given twice sums its terms), the
        termination flags and whether the state stayed finite, all as float64 or bool."""
        parts = self.summed_parts(regs[:, self.part_columns].astype(np.float64))
        return StepOutputs(regs[:, self.obs.start : self.obs.stop].astype(np.float64),
                           regs[:, self.reward.start].astype(np.float64), parts,
                           regs[:, self.terminated.start] != 0, regs[:, self.nonfinite.start] == 0)

    def summed_parts(self, values) -> dict:
        """Each reward term's weighted value by name from ``values``, (n, len(part_names)) in
        part order (a numpy array or a torch tensor): a name given twice sums its terms."""
        parts = {}
        for k, name in enumerate(self.part_names):
            parts[name] = parts[name] + values[:, k] if name in parts else values[:, k]
        return parts

    def _agent(self, c, spec) -> AgentRegisters:
        # an agent's own rewards see its own ending (alive is 0 on the step it is out)
        b = c.b
        own, both = b.alloc(1), b.alloc(2)
        _any_of(c, spec["terminations"], own)
        b.copy(self.terminated, out=both[0])
        b.copy(own, out=both[1])
        ended = b.any(both)
        scene, c.terminated = c.terminated, ended
        reward, parts = _weighted_sum(c, spec["rewards"])
        c.terminated = scene
        return AgentRegisters(own, ended, reward, parts, b.alloc(sum(o.term.size for o in spec["observations"])))

    def _actions(self, b, task):
        action = self.action
        if task.config.actions.clip:
            action = b.clip(action, task.action_low, task.action_high)
        if task.drive is None:
            b.store("ctrl", task.actuators, b.affine(action, task.scale, task.offset))
            return
        # drive targets: the commanded dofs' positions,
        # 0 for the others, and every velocity target 0
        nv, dofs = task.model.nv, task.drive.dofs
        b.store("drive_qpos_target", dofs, b.affine(action, task.drive.scale, task.drive.offset))
        others = [d for d in range(nv) if d not in set(dofs.tolist())]
        if others:
            b.store("drive_qpos_target", others, b.const(np.zeros(len(others))))
        b.store("drive_qvel_target", range(nv), b.const(np.zeros(nv)))


def _any_of(c, terms, out) -> None:
    """out = 1 if any of the termination ``terms`` fires."""
    flags = c.b.alloc(max(1, len(terms)))
    for i, term in enumerate(terms):
        c.b.copy(c.build(term, 1), out=flags[i])
    c.b.any(flags, out=out)


def _weighted_sum(c, rewards):
    """(total, [(name, weighted value)]) of reward terms [(name, weight, term)]."""
    parts = []
    values = c.b.alloc(max(1, len(rewards)))
    for i, (name, weight, term) in enumerate(rewards):
        c.b.affine(c.build(term, 1), weight, 0.0, out=values[i])
        parts.append((name, values[i]))
    return c.b.sum(values), parts


def _observe_into(c, observations, out) -> None:
    """The observation terms, each clipped as configured, one after another into ``out``."""
    at = 0
    for o in observations:
        value = c.build(o.term, o.term.size)
        part = out[at : at + value.n]
        if o.clip is not None:
            c.b.clip(value, *o.clip, out=part)
        else:
            c.b.copy(value, out=part)
        at += value.n
