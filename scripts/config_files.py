"""Training and leaderboard YAML files: read strictly, refused with file, line, key and value.

Task configs have their own loader (``taigym.tasks.loader``); the scripts' own files get the
same reading (YAML 1.2 numbers, no duplicate keys, syntax errors in plain words) and the
same shape of message, from these few functions.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path


class ConfigFileError(ValueError):
    """A training or protocol file that cannot be used; the message names where and why."""


def read_mapping(path: Path, error=ConfigFileError):
    """The file's top-level mapping, with the line of every key (a ``LineDict``); a file that
    cannot be read as YAML is ``error`` naming the file and the line."""
    from taigym.tasks.yaml_loader import read_yaml_file

    with _refused_as(error):
        raw = read_yaml_file(path) or {}
    if not isinstance(raw, dict):
        raise error(f"{path}: expected a mapping of keys, got {type(raw).__name__}")
    return raw


def read_text(path: Path, error=ConfigFileError) -> str:
    """A hand-written text file (notes beside a leaderboard); bytes that are not UTF-8 are
    ``error`` naming the file and the line."""
    from taigym.tasks.yaml_loader import read_text_file

    with _refused_as(error):
        return read_text_file(path)


@contextlib.contextmanager
def _refused_as(error):
    """The task loader's ConfigError, which words every unreadable file, as this file's ``error``."""
    from taigym.tasks.errors import ConfigError

    try:
        yield
    except ConfigError as e:
        raise error(str(e)) from None


def error_at(raw, path, source: str, reason: str, suggestion=None, error=ConfigFileError) -> ValueError:
    """``error`` naming the file, the line ``path`` was written on in ``raw`` (the file as
    read), the key path and the reason."""
    from taigym.tasks.errors import ConfigError
    from taigym.tasks.yaml_loader import where

    _, line = where(raw, path)
    return error(str(ConfigError(reason, file=source, line=line, path=path, suggestion=suggestion)))


def refuse_non_finite(data, raw, source: str, error=ConfigFileError) -> None:
    """NaN and inf anywhere are refused: no training setting wants one, and a NaN passes
    every range check."""
    from taigym.tasks.yaml_loader import non_finite_numbers

    for path, value in non_finite_numbers(data):
        shown = "NaN" if math.isnan(value) else str(value)
        raise error_at(raw, path, source, f"value is {shown} (expected a finite number)", error=error)


def schema_error(e, raw, source: str, fields, error=ConfigFileError) -> ValueError:
    """The first error of a pydantic ValidationError ``e``, with its line and the value given;
    ``fields`` are the valid keys, for a nearest-name hint on an unknown one."""
    from taigym.tasks.errors import did_you_mean, given_value

    err = e.errors()[0]
    more = f" ({len(e.errors()) - 1} more after this one)" if len(e.errors()) > 1 else ""
    if err["type"] == "extra_forbidden":
        return error_at(raw, err["loc"], source, f"unknown key {err['loc'][-1]!r}{more}",
                        suggestion=did_you_mean(err["loc"][-1], fields), error=error)
    return error_at(raw, err["loc"], source, f"{err['msg']}{given_value(err)}{more}", error=error)
