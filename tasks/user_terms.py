"""A task file's own terms: ``term: my_terms.py:forward_bonus`` or ``term: mypkg.terms:forward_bonus``.

The part before the last colon is a Python file (a path ending in ``.py``, relative to the
task file, or absolute) or an importable module; the part after it names a factory written
exactly as a shipped term is (tasks/registry.py): ``factory(model, *, params...) -> Term``,
its keyword parameters the YAML ``params``. No registration is needed, and the factory is
validated and bound as the shipped ones are, before any World exists.

A file is loaded once per process (by its resolved path and modification time), under a
module name of its own, so two task files may each have a ``terms.py``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path

from .errors import did_you_mean
from .registry import Entry

_PACKAGE = Path(__file__).resolve().parents[1]
_loaded: dict = {}


class UserTermError(ValueError):
    """A term reference that cannot be loaded; the message says why and where."""


def is_reference(name: str) -> bool:
    """Whether a config's ``term`` names a user's factory rather than a registered term."""
    return ":" in name


def entry(kind: str, name: str, origin) -> Entry:
    """The Entry of ``name`` (``file.py:factory`` or ``module:factory``), its file relative to
    ``origin`` (the task file, or the working directory for a config given as a dict)."""
    where, _, attr = name.rpartition(":")
    if not where or not attr:
        raise UserTermError(f"{name!r} is not 'file.py:function' or 'module:function'")
    module = _module(where, origin)
    factory = getattr(module, attr, None)
    if factory is None:
        names = [k for k, v in vars(module).items() if inspect.isfunction(v) and not k.startswith("_")]
        hint = did_you_mean(attr, names)
        raise UserTermError(f"{module.__file__} has no function {attr!r}"
                            + (f"; did you mean {hint!r}?" if hint else f"; its functions: {names}"))
    if not callable(factory):
        raise UserTermError(f"{attr!r} in {module.__file__} is a {type(factory).__name__}, not a term factory")
    try:
        inspect.signature(factory, eval_str=True)
    except Exception as e:
        raise UserTermError(f"the annotations of {attr!r} do not resolve: {e} ({source_of(factory)})") from None
    return Entry(name, kind, factory, inspect.getdoc(factory) or "")


def _module(where: str, origin):
    if where.endswith(".py"):
        base = Path(origin).parent if origin and Path(str(origin)).is_file() else Path.cwd()
        return _load_file((base / where).resolve())
    try:
        return importlib.import_module(where)
    except ImportError as e:
        raise UserTermError(f"cannot import module {where!r}: {e}") from None
    except Exception as e:
        raise UserTermError(f"importing module {where!r} raised {type(e).__name__}: {e} ({origin_of(e)})") from None


def _load_file(path: Path):
    if not path.is_file():
        raise UserTermError(f"no file {path}")
    key = (str(path), path.stat().st_mtime_ns)
    if key in _loaded:
        return _loaded[key]
    name = "taigym_user_terms_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(name, None)
        raise UserTermError(f"{e.filename}, line {e.lineno}: {e.msg}") from None
    except Exception as e:
        sys.modules.pop(name, None)
        raise UserTermError(f"loading {path} raised {type(e).__name__}: {e} ({origin_of(e)})") from None
    _loaded[key] = module
    return module


def origin_of(exc) -> str:
    """'file, line N' of the innermost traceback frame outside taigym's own code (where a
    user's term went wrong), or the innermost frame when all are taigym's."""
    frames = traceback.extract_tb(exc.__traceback__)
    outside = [f for f in frames if not Path(f.filename).resolve().is_relative_to(_PACKAGE)]
    frame = (outside or frames or [None])[-1]
    return "unknown place" if frame is None else f"{frame.filename}, line {frame.lineno}"


def source_of(fn) -> str:
    """'file, line N' where function ``fn`` is defined."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}, line {code.co_firstlineno}" if code else repr(fn)


def is_users(factory) -> bool:
    """Whether ``factory`` is defined outside taigym (a user's term)."""
    code = getattr(factory, "__code__", None)
    return code is not None and not Path(code.co_filename).resolve().is_relative_to(_PACKAGE)
