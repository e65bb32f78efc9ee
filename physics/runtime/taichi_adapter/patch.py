"""A patch to Taichi: what it relies on, how that is checked, and its one fallback.

Each patch names the internals it relies on (``relies_on``, for the reader and the log)
and finds them with ``find`` (imports and attribute look-ups that fail where Taichi lays
them out otherwise); ``apply`` then replaces what it replaces. A failed check leaves
Taichi as it is and logs one line on the ``taigym`` logger.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

log = logging.getLogger("taigym")


class Unsupported(LookupError):
    """The running Taichi is not laid out as a patch relies on."""


@dataclasses.dataclass(frozen=True)
class Patch:
    name: str
    relies_on: str  # the internals, in words
    find: Callable  # find(ti) -> what apply needs; raises ImportError, AttributeError or Unsupported
    apply: Callable  # apply(ti, found) -> None; leaves an applied patch as it is
    applies: Callable = lambda ti: True  # False where the patch has nothing to do: no check, no line

    def install(self, ti) -> bool:
        """Apply the patch where its check passes; else log one line and leave Taichi as it is."""
        if not self.applies(ti):
            return False
        try:
            found = self.find(ti)
        except (ImportError, AttributeError, Unsupported) as reason:
            log.warning("%s %s is not laid out as taigym's %r patch relies on (%s: %s); Taichi's own path is used",
                        ti.__name__, ".".join(map(str, ti.__version__)), self.name, self.relies_on, reason)
            return False
        self.apply(ti, found)
        return True
