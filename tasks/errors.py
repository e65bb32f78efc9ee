"""ConfigError: a refused task config, told as file, line, key path, what was expected."""

from __future__ import annotations

import difflib


class ConfigError(ValueError):
    """A task config that cannot be used. The message names where and why.

    Attributes keep the parts so that callers (and tests) can inspect them.
    """

    def __init__(self, message: str, *, file=None, line=None, path=(), expected=None, suggestion=None):
        self.file, self.line, self.path = file, line, tuple(path)
        self.expected, self.suggestion, self.reason = expected, suggestion, message
        super().__init__(self._format())

    def _format(self) -> str:
        where = str(self.file) if self.file else "<config>"
        if self.line is not None:
            where += f", line {self.line}"
        parts = [where]
        if self.path:
            parts.append(f"key '{format_path(self.path)}'")
        text = ": ".join(parts) + ": " + self.reason
        if self.expected:
            text += f" (expected {self.expected})"
        if self.suggestion:
            text += f"; did you mean '{self.suggestion}'?"
        return text


def format_path(path) -> str:
    """('rewards', 0, 'weight') -> 'rewards[0].weight'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def did_you_mean(word: str, choices) -> str | None:
    """The closest of ``choices`` to a misspelt ``word``, if any is close enough."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


def given_value(err) -> str:
    """", got <value>" for a pydantic error whose input is a plain value, else ""."""
    value = err.get("input")
    return f", got {value!r}" if isinstance(value, (str, int, float, bool)) or value is None else ""
