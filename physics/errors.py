"""Errors raised while building a model or using a World."""

from __future__ import annotations


class ModelError(ValueError):
    """A model that cannot be built, with where the problem is.

    Attributes:
        file: the source file, or None for models built in code.
        element: the element kind and name (``joint 'hip'``), or None.
        attribute: the offending attribute, or None.
        line: the 1-based line in ``file``, or None.
    """

    def __init__(self, message: str, *, file=None, element=None, attribute=None, line=None):
        self.file, self.element, self.attribute, self.line = file, element, attribute, line
        self.reason = message
        where = []
        if file:
            where.append(f"{file}:{line}" if line else str(file))
        if element:
            where.append(f"<{element}>")
        if attribute:
            where.append(f"attribute '{attribute}'")
        super().__init__(f"{': '.join([' '.join(where), message]) if where else message}")


class WorldError(RuntimeError):
    """Misuse of a World: wrong shapes, unknown names, a second device."""
