"""Term registry: observation, reward, termination, reset, randomization and command terms by name.

A term is registered as a *factory*: ``factory(model, **params)`` checks its parameters
against the robot (joint, body and site names exist; sizes fit) and returns a
:class:`Term`, whose function then runs batched on every step. Binding names once, before
any World exists, is what lets a bad config be refused before simulation.

Kinds, and what the bound :class:`Term` carries:

- observation, reward, termination: ``ops(c) -> Regs``, the term written once as
  instructions of the env step's World program (tasks/term_program.py), built with
  ``c.load`` (a World quantity now), ``c.prev`` (as it was before the step), ``c.command``,
  ``c.memory``, ``c.action``, ``c.terminated`` and the builder ``c.b``
  (physics/step/program.py). The env runs it inside the World's step launch;
  tasks/reference.py evaluates the same instructions on arrays. An observation gives its
  width in ``size``.
- reset: ``fn(rng, qpos, qvel) -> None``, one env at a time, editing that env's state rows in
  place; ``rng`` is the env's own generator, so every env has its own stream.
- randomization: ``fn(rng) -> dict[param, values]`` for one env, applied to the World.
- command: ``fn(rng) -> (size,)`` draws one env's command (a velocity to track), at each reset
  and every ``info["resampling_time"]`` seconds; step terms read it as ``c.command(name)``.

A factory is found by its registered name, or, for a term of one's own, by ``path.py:name``
(relative to the task file) or ``module:name`` in the task file (tasks/user_terms.py).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, ValidationError, create_model

KINDS = ("observation", "reward", "termination", "reset", "randomization", "command")
_REGISTRY: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}


class TermError(ValueError):
    """A term parameter that does not fit the robot; ``param`` names the parameter."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Term:
    """A bound term: ``ops`` for a step term, ``fn`` for the host-side kinds (module docstring)."""

    fn: Callable | None = None
    size: int | None = None  # observation (or command) width per env
    # per-env registers {name: width} kept across steps and zeroed at each env's reset, read
    # and written through c.memory(name) (a foot's time in the air)
    memory: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)  # randomization: which engine parameters it sets
    ops: Callable | None = None
    # observation: a camera's frames (tasks/terms/camera.py CameraView), rendered by the env
    # after the step's launch in place of ops
    view: Any = None


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    factory: Callable
    doc: str

    @property
    def params_model(self):
        """The pydantic model of the factory's keyword parameters, built when first asked
        for: a task validates a dozen of the ~70 registered terms, and building every model
        at registration was a tenth of making an env."""
        return _params_model(self.factory)


def register(kind: str, name: str | None = None):
    """Decorator: register ``factory(model, **params) -> Term`` as a term of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown term kind {kind!r}; kinds: {KINDS}")

    def wrap(factory):
        term_name = name or factory.__name__
        if term_name in _REGISTRY[kind]:
            raise ValueError(f"{kind} term {term_name!r} is already registered")
        inspect.signature(factory, eval_str=True)  # a factory whose annotations do not resolve fails here
        _REGISTRY[kind][term_name] = Entry(term_name, kind, factory, inspect.getdoc(factory) or "")
        return factory

    return wrap


def get(kind: str, name: str) -> Entry:
    _load_builtin_terms()
    return _REGISTRY[kind][name]


def names(kind: str) -> list[str]:
    _load_builtin_terms()
    return sorted(_REGISTRY[kind])


def validate_params(entry: Entry, params: dict) -> dict:
    """Validated keyword parameters, or pydantic's ValidationError."""
    return entry.params_model.model_validate(params).model_dump()


@functools.lru_cache(maxsize=None)
def _params_model(factory):
    # The factory's keyword-only parameters (after ``model``) define the YAML ``params``.
    fields = {}
    for p in list(inspect.signature(factory, eval_str=True).parameters.values())[1:]:
        annotation = Any if p.annotation is inspect.Parameter.empty else p.annotation
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (annotation, default)
    return create_model(f"{factory.__name__}_params", __config__=ConfigDict(extra="forbid"), **fields)


def _load_builtin_terms():
    from . import terms  # noqa: F401 - registers on import


__all__ = ["KINDS", "Entry", "Term", "TermError", "ValidationError", "get", "names", "register", "validate_params"]
