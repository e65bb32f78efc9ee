"""Loading a task config: compose, validate the schema, then validate every term.

``load_task_config`` is the one door: it refuses a bad config with a ConfigError naming
the file, line, key path and what was expected, before any model or World is built.
"""

from __future__ import annotations

import importlib.resources
import math
import typing
from pathlib import Path

from pydantic import BaseModel, ValidationError

from . import registry, user_terms
from .compose import apply_overrides, read_config_file
from .errors import ConfigError, did_you_mean, given_value
from .schema import TaskConfig
from .yaml_loader import non_finite_numbers, where


def config_dir() -> Path:
    """The folder of task configs and robot assets: the ``taigym.configs`` package's data files.

    Installed, ``taigym.configs`` sits beside ``taigym.tasks``, as ``configs/`` sits beside
    ``tasks/`` in a source checkout.
    """
    found = Path(str(importlib.resources.files("taigym.configs")))
    if not (found / "tasks").is_dir():
        raise FileNotFoundError(f"taigym's configs are missing: {found} holds no tasks/ folder; reinstall taigym")
    return found


CONFIG_DIR = config_dir()
TASK_DIR = CONFIG_DIR / "tasks"

# which registry kind the terms of each list belong to
_TERM_LISTS = {"observations": "observation", "rewards": "reward", "terminations": "termination",
               "resets": "reset", "randomization": "randomization", "commands": "command"}


def task_files() -> list[Path]:
    """Every task config under configs/tasks and its folders, such as the Control Suite's
    (files starting with '_' are bases only)."""
    return sorted(p for p in (*TASK_DIR.glob("*.yaml"), *TASK_DIR.glob("*/*.yaml")) if not p.name.startswith("_"))


def load_task_config(source, overrides=None) -> TaskConfig:
    """Load and validate a task config.

    ``source`` is a YAML path, a registered id (``TaiGym/Reacher-v0``), or a mapping;
    ``overrides`` is a list of ``"key.sub=value"`` strings or a ``{"key.sub": value}`` dict.
    """
    data, origin = _read(source)
    data = apply_overrides(data, overrides)
    return validate(data, origin)


def validate(data, origin=None) -> TaskConfig:
    """Validate composed config data (schema, then terms)."""
    if not isinstance(data, dict):
        raise ConfigError("a task config must be a mapping", file=origin, expected="key: value pairs")
    _refuse_non_finite(data, origin)
    try:
        cfg = TaskConfig.model_validate(dict(data))
    except ValidationError as e:
        raise _schema_error(e, data, origin) from None
    _validate_terms(cfg, data, origin)
    cfg._source = (origin, data)
    return cfg


def error_at(cfg: TaskConfig, path, message, expected=None, suggestion=None) -> ConfigError:
    """A ConfigError for ``path`` of an already validated config (for checks against the model)."""
    origin, data = cfg._source or (None, None)
    file, line = where(data, path) if data is not None else (None, None)
    return ConfigError(message, file=file or origin, line=line, path=path, expected=expected, suggestion=suggestion)


# --- internals ---------------------------------------------------------------------------
def _read(source):
    if isinstance(source, dict):
        return source, "<dict>"
    text = str(source)
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        return read_config_file(text), text
    by_id = {}
    for f in task_files():
        by_id[_peek_id(f)] = f
    if text in by_id:
        return read_config_file(by_id[text]), str(by_id[text])
    hint = did_you_mean(text, by_id)
    raise ConfigError(f"no task config with id {text!r}", expected=f"one of {sorted(by_id)}", suggestion=hint)


def per_item(cfg: TaskConfig, value, n: int, key: str, item: str):
    """An ``actions.<key>`` value as n numbers: one broadcast to all, or one per ``item``."""
    import numpy as np

    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.size == 1:
        return np.full(n, arr[0])
    if arr.size != n:
        raise error_at(cfg, ("actions", key), f"has {arr.size} values", expected=f"1 or {n} (one per {item})")
    return arr


def _peek_id(path: Path) -> str:
    data = read_config_file(path)
    return data.get("id", path.stem)


def _first_error(e: ValidationError) -> dict:
    # a misspelt key also shows up as the real key "missing"; the misspelling is the news
    return min(e.errors(), key=lambda err: err["type"] != "extra_forbidden")


def _schema_error(e: ValidationError, data, origin) -> ConfigError:
    err = _first_error(e)
    path = tuple(err["loc"])
    file, line = where(data, path)
    suggestion = expected = None
    if err["type"] == "extra_forbidden":
        known = _fields_at(TaskConfig, path[:-1])
        suggestion = did_you_mean(path[-1], known)
        message = f"unknown key {path[-1]!r}"
        expected = f"one of {sorted(known)}" if known else None
    elif err["type"] == "missing":
        message = "required key is missing"
    elif err["type"] in ("literal_error", "enum"):
        choices = _choices(err)
        message = f"{err['input']!r} is not one of {', '.join(map(repr, choices))}"
        suggestion = did_you_mean(err["input"], choices)
    else:
        message = err["msg"] + given_value(err)
        expected = _expected(err)
    more = len(e.errors()) - 1
    if more:
        message += f" ({more} more error{'s' if more > 1 else ''} after this one)"
    return ConfigError(message, file=file or origin, line=line, path=path, expected=expected, suggestion=suggestion)


def _choices(err) -> list[str]:
    # pydantic words a Literal's values as "'PGS', 'CG' or 'Newton'"
    import re

    return re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))


def _refuse_non_finite(data, origin):
    """NaN compares false with every bound, so a NaN anywhere would pass range checks and
    reach every step; inf would be drawn into states, scale rewards or stall the clock. Both
    are refused with their place; only a bound of a judging term may be infinite."""
    for path, value in non_finite_numbers(data):
        nan = math.isnan(value)
        if nan or not _open_bound(path):
            file, line = where(data, path)
            raise ConfigError(f"value is {'NaN' if nan else value}", file=file or origin, line=line, path=path,
                              expected="a finite number" + ("" if nan else _where_inf_is_allowed()))


_JUDGING = ("rewards", "terminations")  # terms that compare a quantity with bounds


def _open_bound(path) -> bool:
    # (..., "terminations", i, "params", "high"): a one-sided range, such as Hopper's height
    return (len(path) >= 4 and path[-1] in ("low", "high") and path[-2] == "params"
            and path[-4] in _JUDGING)


def _where_inf_is_allowed() -> str:
    return "; only a reward or termination term's low/high bound may be .inf"


def _expected(err) -> str | None:
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        return str(ctx["expected"])
    for key, words in (("gt", "a number > {}"), ("ge", "a number >= {}"), ("min_length", "at least {} item(s)"),
                       ("pattern", "text matching {}")):
        if key in ctx:
            return words.format(ctx[key])
    return None


def _fields_at(model: type[BaseModel], path) -> list[str]:
    """Field names of the pydantic model reached by following ``path`` from ``model``."""
    annotation = model
    for part in path:
        annotation = _unwrap(annotation, part)
        if annotation is None:
            return []
    annotation = _unwrap(annotation, None)
    return list(annotation.model_fields) if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []


def _unwrap(annotation, part):
    # follow one step of a key path through Optional[...], list[...] and dict[str, ...]
    while True:
        origin = typing.get_origin(annotation)
        if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
            models = [a for a in typing.get_args(annotation) if a is not type(None) and not isinstance(a, str)]
            models = [a for a in models if typing.get_origin(a) in (list, dict) or
                      (isinstance(a, type) and issubclass(a, BaseModel))]
            if not models:
                return None
            annotation = models[0]
            continue
        break
    if part is None:
        return annotation
    if typing.get_origin(annotation) in (list, dict):
        return typing.get_args(annotation)[-1]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and part in annotation.model_fields:
        return annotation.model_fields[part].annotation
    return None


def _validate_terms(cfg: TaskConfig, data, origin):
    lists = [(key, getattr(cfg, key)) for key in _TERM_LISTS]
    for a, agent in enumerate(cfg.agents or ()):
        lists.append((("agents", a, "observations"), agent.observations))
        lists.append((("agents", a, "rewards"), agent.rewards))
    for key, terms in lists:
        prefix = key if isinstance(key, tuple) else (key,)
        kind = _TERM_LISTS[prefix[-1]]
        for i, term in enumerate(terms):
            _validate_term(kind, term, (*prefix, i), data, origin)


def term_entry(kind, term, path, data, origin) -> registry.Entry:
    """The registry Entry a config's term names: a registered term, or a user's factory
    (``file.py:name`` or ``module:name``, tasks/user_terms.py); a ConfigError at its key."""
    if user_terms.is_reference(term.term):
        try:
            return user_terms.entry(kind, term.term, origin)
        except user_terms.UserTermError as e:
            file, line = where(data, (*path, "term"))
            raise ConfigError(f"{kind} term {term.term!r}: {e}", file=file or origin, line=line,
                              path=(*path, "term")) from None
    known = registry.names(kind)
    if term.term not in known:
        file, line = where(data, (*path, "term"))
        raise ConfigError(f"unknown {kind} term {term.term!r}", file=file or origin, line=line, path=(*path, "term"),
                          expected=f"one of {known}, or 'file.py:function' for a term of your own",
                          suggestion=did_you_mean(term.term, known))
    return registry.get(kind, term.term)


def _validate_term(kind, term, path, data, origin):
    entry = term_entry(kind, term, path, data, origin)
    try:
        registry.validate_params(entry, term.params)
    except ValidationError as e:
        err = _first_error(e)
        param_path = (*path, "params", *err["loc"])
        file, line = where(data, param_path)
        params = list(entry.params_model.model_fields)
        if err["type"] == "extra_forbidden":
            message = f"{term.term!r} has no parameter {err['loc'][0]!r}"
            raise ConfigError(message, file=file or origin, line=line, path=param_path, expected=f"one of {params}",
                              suggestion=did_you_mean(err["loc"][0], params))
        message = "required parameter is missing" if err["type"] == "missing" else err["msg"] + given_value(err)
        raise ConfigError(f"{term.term!r}: {message}", file=file or origin, line=line, path=param_path,
                          expected=_expected(err)) from None


