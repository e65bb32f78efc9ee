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

import collections
import functools
import inspect
import types

from ..runtime.backend import current_device, ti
from ..runtime.taichi_adapter import calls_inside_real_functions


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
    parts, world ``w`` and the step kernel's tables ``t``: with ``separate`` (where
    :func:`outlining` holds), each part as a function of its own; and ``Tables``, the
    namedtuple ``t`` is (the step kernel's array parameters, in order)."""
    i1, f1, i2, f2, f3, i3 = table_types(fp)

    @ti.real_func
    def outlined(
        parts: ti.template(), w: ti.i32,
        sizes: i1, body_i: i1, jnt_i: i1, dof_i: i1, act_i: i2, ten_i: i2, wrap_i: i2,
        body_f: f1, jnt_f: f1, dof_f: f1, q_f: f3, act_f: f3, ten_f: f3, wrap_f: f3, opt_f: f3,
        ctrl: f2, qfrc_applied: f2, qpos: f2, qvel: f2,
        qacc: f2, qpos_start: f2, body_d: f1, jnt_d: f1, dof_d: f1, dof_s: f1, qM: f1, qLD: f1, act_d: f3, ten_d: f3,
        efc_J: f3, efc_Y: f3, efc_f: f3, efc_n: i2,
        pair_i: i2, pair_f: f3, geom_i: i2, geom_f: f3, geom_x: f3, con_f: f3, con_i: i3, con_n: i2, pair_hit: i2,
        pair_con_f: f3, pair_con_i: i3, pair_con_n: i2,
        eq_i: i2, eq_f: f3, eq_d: i3, prog_i: i1, prog_f: f1, reg: f2, env_ids: i1,
    ):
        t = ti.static(Tables(
            sizes, body_i, jnt_i, dof_i, act_i, ten_i, wrap_i, body_f, jnt_f, dof_f, q_f, act_f, ten_f, wrap_f, opt_f,
            ctrl, qfrc_applied, qpos, qvel, qacc, qpos_start, body_d, jnt_d, dof_d, dof_s, qM, qLD, act_d, ten_d,
            efc_J, efc_Y, efc_f, efc_n, pair_i, pair_f, geom_i, geom_f, geom_x, con_f, con_i, con_n, pair_hit,
            pair_con_f, pair_con_i, pair_con_n, eq_i, eq_f, eq_d, prog_i, prog_f, reg, env_ids))
        ti.static(parts[0])(w, t)
        if ti.static(len(parts) > 1):
            call_outlined(ti.static(parts[1:]), w, t)

    @ti.func
    def call_outlined(parts: ti.template(), w, t: ti.template()):
        outlined(parts, w, *t)
        if w < 0:
            # never taken (w indexes an env), but LLVM cannot know: a second call site
            # keeps it from inlining the function back into its one caller
            outlined(parts, w, *t)

    Tables = collections.namedtuple("StepTables", list(inspect.signature(outlined).parameters)[2:])

    @ti.func
    def call(parts: ti.template(), w, t: ti.template()):
        if ti.static(separate):
            call_outlined(parts, w, t)
        else:
            for part in ti.static(parts):
                part(w, t)

    return types.SimpleNamespace(call=call, Tables=Tables)
