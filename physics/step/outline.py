"""Parts of the step kernel compiled as functions of their own.

Taichi inlines every ``@ti.func``, so the step kernel was one function of some 60,000
LLVM instructions, and LLVM's optimizer grows faster than linearly with a function's
size: most of a cold start went to optimizing it. A part called through
:func:`make_outline` is a ``@ti.real_func`` of its own instead: the world index and every
table of the step kernel go down as arguments (about a hundred stores a call), and the
part is optimized as a unit. The step kernel outlines one part, the constraints (about
half its code); physics/step/forward.py says why not more.

Where several parts are given, they form a chain, each calling the next: Taichi 1.7.4 keys
a kernel's offline cache on the syntax of the real functions each callable calls, taken
in the order of a hash map keyed by their addresses, so a callable that called two or
more would key differently from one process to the next and compile every time.

With the loops compiled as scalar loops (physics/runtime/taichi_adapter/loops.py,
``scalar_loops``), a task's kernel compiles about as fast inlined, but then it steps slower: measured in one
process at 1024 envs, Humanoid ran at 0.69 and Ant at 0.82 of LLVM's own loops inlined,
and at 1.00 and 0.99 with the constraint stage outlined. So the two go together.

Outlining needs a Taichi whose real functions may call inlined functions (taichi 1.7.4
with the fix in physics/runtime/taichi_adapter/real_functions.py) and the CPU backend (the
only one tried); elsewhere the parts are inlined. Both build the same arithmetic, so
results agree to round-off (tests/test_outline.py).
"""

import functools
import types

from ..runtime.backend import current_device, ti
from ..runtime.taichi_adapter import calls_inside_real_functions
from .env_tables import arrays_of, baked_of, env_sets, env_view, sizes_in_registers
from .tables import TABLES, with_tables


def outlining() -> bool:
    """Whether this process's step kernels call their parts as functions."""
    return current_device() == "cpu" and calls_inside_real_functions()


def table_types(fp) -> tuple:
    """The step kernels' typed array annotations (i1, f1, i2, f2, f3, i3: int32 or ``fp``
    of rank 1 to 3). Typed annotations let LLVM see the element type and rank: accesses
    ran ~2x faster than through untyped ndarray arguments."""
    return (ti.types.ndarray(dtype=ti.i32, ndim=1), ti.types.ndarray(dtype=fp, ndim=1),
            ti.types.ndarray(dtype=ti.i32, ndim=2), ti.types.ndarray(dtype=fp, ndim=2),
            ti.types.ndarray(dtype=fp, ndim=3), ti.types.ndarray(dtype=ti.i32, ndim=3))


@functools.lru_cache(maxsize=None)
def make_outline(fp, separate: bool = False):
    """``call(parts, w, t)``, a ``@ti.func`` that runs ``part(w, t)`` for each of a tuple of
    parts, world ``w`` and the step kernel's tables ``t`` (a physics/step/tables.py
    ``StepTables``): with ``separate`` (where :func:`outlining` holds), each part as a
    function of its own."""

    @ti.func
    def call(parts: ti.template(), w, t: ti.template()):
        if ti.static(separate):
            ti.static(outlined_call(t))(parts, w, t)
        else:
            for part in ti.static(parts):
                part(w, t)

    return types.SimpleNamespace(call=call)


def outlined_call(t):
    """``call_outlined(parts, w, t)`` for tables like ``t``: one real function per
    ``StepTables`` type and baked sizes (physics/step/env_tables.py), written with a
    parameter per table of its declaration."""
    return _outlined_call(type(arrays_of(t)), baked_of(t))


@functools.lru_cache(maxsize=None)
def _outlined_call(Tables, baked):
    @ti.real_func
    @with_tables(Tables)
    def outlined(parts: ti.template(), w: ti.i32, t: TABLES):
        sets = env_sets(w, t)
        registers = sizes_in_registers(t, baked)
        ti.static(parts[0])(w, ti.static(env_view(t, sets, registers, baked)))
        if ti.static(len(parts) > 1):
            call_outlined(ti.static(parts[1:]), w, t)

    @ti.func
    def call_outlined(parts: ti.template(), w, t: ti.template()):
        outlined(parts, w, *ti.static(arrays_of(t)))
        if w < 0:
            # never taken (w indexes an env), but LLVM cannot know: a second call site
            # keeps it from inlining the function back into its one caller
            outlined(parts, w, *ti.static(arrays_of(t)))

    return call_outlined
