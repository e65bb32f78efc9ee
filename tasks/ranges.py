"""The integer ranges of task-config values, each with the reason the engine sets it.

An integer of a config ends as a kernel's 32-bit argument or as an index into a model's
arrays. Past its range it would wrap (a frame skip of 2**32 + 4 steps as 4), overflow the
conversion, or index past the array at the first step; so each one is refused when the
config is read, and the message gives the value, the range and why.

Use them as annotations, in the schema and in a term factory's parameters::

    axes: Axes = [0, 1, 2]
    start: Index = 0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field
from pydantic_core import PydanticCustomError, core_schema

INT32_MAX = 2**31 - 1  # the largest count or index a kernel's 32-bit integer holds


@dataclass(frozen=True)
class IntRange:
    """pydantic metadata: an integer in ``lo..hi`` (both included); ``why`` says what sets the bounds."""

    lo: int
    hi: int
    why: str

    def __get_pydantic_core_schema__(self, source, handler):
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(self, schema, handler):
        return {**handler(schema), "minimum": self.lo, "maximum": self.hi}

    def _check(self, value: int) -> int:
        if not self.lo <= value <= self.hi:
            # the loader words "expected" into the one-line ConfigError, with the key and value
            raise PydanticCustomError("int_range", "out of range", {"expected": self.expected})
        return value

    @property
    def expected(self) -> str:
        return f"an integer in {self.lo:,}..{self.hi:,}: {self.why}"


def bounded(lo: int, hi: int, why: str):
    """``int`` restricted to ``lo..hi``, for an annotation."""
    return Annotated[int, IntRange(lo, hi, why)]


Axis = bounded(0, 2, "an axis of a frame: 0 is x, 1 y, 2 z")
Axes = Annotated[list[Axis], Field(min_length=1)]
# an element of a robot's qpos, dofs or bodies, negative from the end as in Python; checked
# against the robot's sizes once it is built
Index = bounded(-INT32_MAX, INT32_MAX, "an index of the robot's arrays, which kernels address with 32 bits")
Coordinate = bounded(0, INT32_MAX, "an index of the robot's qpos, which kernels address with 32 bits")
ImageSide = bounded(1, 16_384, "pixels a side; a frame's bytes must stay within the renderer's 32-bit indices")
CameraIndex = bounded(0, INT32_MAX, "a camera of the model, by its index, which kernels address with 32 bits")
