"""The engine's switches, read from the environment in one place.

Every ``TAIGYM_*`` variable the engine obeys is a field of :class:`Settings`. They are read
once per process, on first use (:func:`current`), and checked as they are read: a value
the engine does not know is an error naming its variable, not a silent default. Changing
the environment afterwards changes nothing until :func:`reload` reads it again (what a
script that sets a variable after importing taigym, or a test that sets one with
``monkeypatch.setenv``, calls next). ``Settings.from_env(mapping)`` builds one from any
mapping without touching the cached one.

Some switches are read when the runtime starts (``taichi``, ``debug``, ``ti_init``,
``optimize``) and Taichi keeps them for the process; the others when a World is made or a
kernel is traced.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
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


def _switch(name, text):
    if text not in ("0", "1"):
        raise SettingsError(f"{name} must be 0 or 1, got {text!r}")
    return text == "1"


def _integer_flag(name, text):
    try:
        return bool(int(text))
    except ValueError:
        raise SettingsError(f"{name} must be an integer (0 off, else on), got {text!r}") from None


def _json_object(name, text):
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise SettingsError(f"{name} must be a JSON object of ti.init settings: {e}") from None
    if not isinstance(value, dict):
        raise SettingsError(f"{name} must be a JSON object of ti.init settings, got {text!r}")
    return types.MappingProxyType(value)


def _all_features(name, text):
    return _choice("all", "model")(name, text) == "all"


def _variable(env: str, parse, default):
    metadata = {"env": env, "parse": parse}
    if isinstance(default, Mapping):  # unhashable: each Settings gets its own
        return dataclasses.field(default_factory=lambda: types.MappingProxyType(dict(default)), hash=False,
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The engine's switches: each field's variable, values and default.

    Attributes:
        taichi: ``TAIGYM_TAICHI=taichi|quadrants``, which Taichi to import; None: the
            first of them that imports (physics/runtime/backend.py).
        debug: ``TAIGYM_DEBUG``, an integer: nonzero starts Taichi with its debug mode
            and bounds checks.
        ti_init: ``TAIGYM_TI_INIT``, a JSON object of extra ``ti.init`` settings (how
            scripts/gpu_probe.py measures compile options).
        optimize: ``TAIGYM_OPTIMIZE=0|1``, Taichi's whole-kernel optimizations; None: by
            device (on for CUDA, off for the CPU). See :meth:`optimize_on`.
        launch: ``TAIGYM_LAUNCH=reuse|plain``: ``plain`` runs Taichi as it is, with none of
            the engine's shortcuts into its internals (physics/runtime/taichi_adapter/).
        scalar_loops: ``TAIGYM_SCALAR_LOOPS=0|1``, the step kernel's loops kept from LLVM's
            vectorizer (CPU, taichi 1.7.4, with outlining).
        expand_access: ``TAIGYM_EXPAND_ACCESS=0|1``, table accessors and small matrix
            operations expanded in place while tracing.
        layout: ``TAIGYM_LAYOUT=env_major|interleaved``, the per-env tables' layout
            (physics/lanes.py).
        all_features: ``TAIGYM_FEATURES=all|model``: ``all`` compiles every part of the
            step kernel into each World's kernel rather than its model's own parts.
        outline: ``TAIGYM_OUTLINE=0|1``, the constraint stage as a function of its own
            (physics/step/outline.py).
        lanes: ``TAIGYM_LANES=strided|consecutive``, how env loops deal envs to threads;
            None: by device (consecutive on CUDA).
        serial: ``TAIGYM_SERIAL=0|1``, small batches stepped in the calling thread.
        machine_code: ``TAIGYM_MACHINE_CODE=0|1``, a serial step kernel's machine code kept
            beside Taichi's cache and launched from there in later processes
            (physics/runtime/taichi_adapter/machine_code.py).
        schedule: ``TAIGYM_SCHEDULE=fused|staged``, how a World's step kernel is scheduled
            (physics/step/schedule.py) where the World does not say.
    """

    taichi: str | None = _variable("TAIGYM_TAICHI", _choice("taichi", "quadrants"), None)
    debug: bool = _variable("TAIGYM_DEBUG", _integer_flag, False)
    ti_init: Mapping = _variable("TAIGYM_TI_INIT", _json_object, {})
    optimize: bool | None = _variable("TAIGYM_OPTIMIZE", _switch, None)
    launch: str = _variable("TAIGYM_LAUNCH", _choice("reuse", "plain"), "reuse")
    scalar_loops: bool = _variable("TAIGYM_SCALAR_LOOPS", _switch, True)
    expand_access: bool = _variable("TAIGYM_EXPAND_ACCESS", _switch, True)
    layout: str = _variable("TAIGYM_LAYOUT", _choice("interleaved", "env_major"), "env_major")
    all_features: bool = _variable("TAIGYM_FEATURES", _all_features, False)
    outline: bool = _variable("TAIGYM_OUTLINE", _switch, True)
    lanes: str | None = _variable("TAIGYM_LANES", _choice("strided", "consecutive"), None)
    serial: bool = _variable("TAIGYM_SERIAL", _switch, True)
    machine_code: bool = _variable("TAIGYM_MACHINE_CODE", _switch, True)
    schedule: str = _variable("TAIGYM_SCHEDULE", _choice("fused", "staged"), "fused")

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
    def plain(self) -> bool:
        """Whether Taichi runs as it is (``TAIGYM_LAUNCH=plain``)."""
        return self.launch == "plain"

    def optimize_on(self, device: str) -> bool:
        """Whether kernels on ``device`` get Taichi's whole-kernel optimizations."""
        return self.optimize if self.optimize is not None else device == "cuda"


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
