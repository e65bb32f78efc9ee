"""The engine's switches, read from the environment in one place.

Every ``TAIGYM_*`` variable the engine obeys is a field of :class:`Settings`. They are read
once per process, on first use (:func:`current`), and checked as they are read: a value
the engine does not know is an error naming its variable, not a silent default. Changing
the environment afterwards changes nothing until :func:`reload` reads it again (what a
script that sets a variable after importing taigym, or a test that sets one with
``monkeypatch.setenv``, calls next). ``Settings.from_env(mapping)`` builds one from any
mapping without touching the cached one.

``taichi`` and ``debug`` are read when the runtime starts, and Taichi keeps them for the
process; the others when a World is made or a kernel is traced.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from .errors import WorldError


class SettingsError(WorldError, ValueError):
    """A ``TAIGYM_*`` variable with a value the engine does not know."""


def _choice(*allowed):
    # "" (or unset) is the field's default; anything else must be one of `allowed`
    def parse(name, text):
        if text not in allowed:
            raise SettingsError(f"{name} must be {' or '.join(repr(a) for a in allowed)}, got {text!r}")
        return text

    return parse


def _integer_flag(name, text):
    try:
        return bool(int(text))
    except ValueError:
        raise SettingsError(f"{name} must be an integer (0 off, else on), got {text!r}") from None


def _variable(env: str, parse, default):
    return dataclasses.field(default=default, metadata={"env": env, "parse": parse})


@dataclasses.dataclass(frozen=True)
class Settings:
    """The engine's switches: each field's variable, values and default. Each is one a
    user sets, or one a measurement in docs/engine.md ("Switches") still has to decide.

    Attributes:
        taichi: ``TAIGYM_TAICHI=taichi|quadrants``, which Taichi to import; None: the
            first of them that imports (physics/runtime/taichi_import.py).
        debug: ``TAIGYM_DEBUG``, an integer: nonzero starts Taichi with its debug mode
            and bounds checks.
        schedule: ``TAIGYM_SCHEDULE=fused|staged``, how a World's step kernel is scheduled
            (physics/step/schedule.py) where the World does not say; None: by device,
            the fastest measured on each (fused on the CPU, staged on CUDA).
        solve: ``TAIGYM_SOLVE=thread|group``, the staged schedule's constraint solve: a
            thread per env, or a group of lanes per env (a GPU block;
            physics/constraint/primal/lane_group.py) where the solver and cone allow it.
        layout: ``TAIGYM_LAYOUT=env_major|interleaved``, the per-env tables' layout
            (physics/runtime/lanes.py); None: by device, the fastest measured under its
            default schedule (env-major on the CPU, interleaved on CUDA).
        kernels: ``TAIGYM_KERNELS=own|shared``: ``shared`` gives every World of the
            process the one step kernel of its precision, solver and cone, with the
            common parts compiled in (every part for a model beyond them) and one-env Worlds on the batched launch, for a
            process that goes through many models (physics/features.py).
    """

    taichi: str | None = _variable("TAIGYM_TAICHI", _choice("taichi", "quadrants"), None)
    debug: bool = _variable("TAIGYM_DEBUG", _integer_flag, False)
    schedule: str | None = _variable("TAIGYM_SCHEDULE", _choice("fused", "staged"), None)
    solve: str = _variable("TAIGYM_SOLVE", _choice("thread", "group"), "thread")
    layout: str | None = _variable("TAIGYM_LAYOUT", _choice("interleaved", "env_major"), None)
    kernels: str = _variable("TAIGYM_KERNELS", _choice("own", "shared"), "own")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (default: this process's environment) asks for; an
        unset or empty variable leaves its field's default."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in dataclasses.fields(cls):
            text = environ.get(f.metadata["env"], "").strip()
            if text:
                values[f.name] = f.metadata["parse"](f.metadata["env"], text)
        return cls(**values)

    @property
    def shared_kernels(self) -> bool:
        """Whether every World takes its precision's and solver's one shared kernel."""
        return self.kernels == "shared"


def variables() -> dict[str, str]:
    """Each field's environment variable, by field name."""
    return {f.name: f.metadata["env"] for f in dataclasses.fields(Settings)}


_current: Settings | None = None


def current() -> Settings:
    """This process's settings, read from the environment on first use."""
    global _current
    if _current is None:
        _current = Settings.from_env()
    return _current


def reload() -> Settings:
    """Read the environment again and make that the process's settings. Switches read when
    the runtime started keep the values Taichi was started with."""
    global _current
    _current = None
    return current()
