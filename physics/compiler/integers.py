"""The Model's integers: 32-bit, as MuJoCo's, and checked as they come in (builder.py,
mjcf.py, compile.py)."""

from __future__ import annotations

from ..errors import ModelError

# The Model's integer arrays are 32-bit, as MuJoCo's: integer attributes stay within them
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def int32(value, element, attribute) -> int:
    """``value`` as a model integer; out of 32 bits, a ModelError naming the attribute."""
    number = int(value)
    if not INT32_MIN <= number <= INT32_MAX:
        raise ModelError(f"number is too large: {number} (an integer from {INT32_MIN} to {INT32_MAX})",
                         element=element, attribute=attribute)
    return number
