"""A World program run on arrays: the reference the step kernel's interpreter is tested against.

``run_segment`` executes one segment of a :class:`~physics.step.program.Program` over a batch
of register rows with numpy on the host or torch on any device, reading the World's
quantities by name (``World.get`` names and shapes) rather than through its tables. The
same instructions are what the step launch runs (``make_program``), so a term written once
as instructions has two independent evaluations: this one, element by element in float64
(or the arrays' own precision), and the kernel's.

``touches(program)`` names the quantities a program loads or stores, so a caller fetches only those.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import layout as L
from . import program as P


@functools.lru_cache(maxsize=None)
def _columns(table: str, width: int) -> tuple:
    """For each column of an env's row of ``table`` (body_d or dof_d), (quantity, column)."""
    out = [None] * width
    for name, (t, start, count) in L.DATA_VIEWS.items():
        if t == table:
            for c in range(max(count, 1)):
                out[start + c] = (name, c)
    return tuple(out)


def element(src: int, e: int) -> tuple:
    """(quantity name, row, column or None) that LOAD/STORE element ``e`` of source ``src`` is."""
    if src == P.SRC_QPOS:
        return "qpos", e, None
    if src == P.SRC_QVEL:
        return "qvel", e, None
    if src == P.SRC_CTRL:
        return "ctrl", e, None
    if src == P.SRC_SENSOR:
        return "sensordata", e, None
    if src == P.SRC_GEOM:
        return "geom_xpos", *divmod(e, 3)
    table, width = ("body_d", L.NBODY_D) if src == P.SRC_BODY else ("dof_d", L.NDOF_D)
    row, col = divmod(e, width)
    name, c = _columns(table, width)[col]
    return name, row, c


def _rows(program: P.Program, segment: int):
    ints = program.ints
    for i in range(int(ints[2 * segment]), int(ints[2 * segment + 1])):
        at = P.HEADER + P.ROW * i
        yield (int(v) for v in ints[at : at + 7])


def touches(program: P.Program, segments=None) -> set:
    """The names of the quantities ``program`` loads or stores (in ``segments``, default all)."""
    out = set()
    for s in range(1, P.NSEGMENTS) if segments is None else segments:
        for op, n, _, a, b, c, _ in _rows(program, s):
            if op in (P.LOAD, P.STORE):
                at = a if op == P.LOAD else c
                out.update(element(b, int(e))[0] for e in program.ints[at : at + n])
    return out


class _Numpy:
    sin, cos, exp, sqrt, isfinite, abs, log, log1p, tanh, cosh = (np.sin, np.cos, np.exp, np.sqrt, np.isfinite, np.abs,
                                                                   np.log, np.log1p, np.tanh, np.cosh)
    minimum, maximum = np.minimum, np.maximum

    @staticmethod
    def zeros(shape, like):
        return np.zeros(shape, dtype=like.dtype)

    @staticmethod
    def where(cond, x, y):
        return np.where(cond, x, y)

    @staticmethod
    def const(values, like):
        return np.asarray(values, dtype=like.dtype)


class _Torch:
    def __init__(self):
        import torch

        self.t = torch

    def __getattr__(self, name):  # sin, cos, exp, sqrt, isfinite, where, abs, log, ...
        return getattr(self.t, name)

    def zeros(self, shape, like):
        return self.t.zeros(shape, dtype=like.dtype, device=like.device)

    def const(self, values, like):
        return self.t.as_tensor(np.asarray(values), dtype=like.dtype, device=like.device)


def _ops_for(regs):
    return _Numpy if isinstance(regs, np.ndarray) else _Torch()


def _quantity(quantities: dict, name: str, n: int):
    """(n, rows, columns) view of a quantity given with World.get's shape."""
    value = quantities[name]
    return value.reshape(n, value.shape[1] if value.ndim > 1 else 1, -1)


def run_segment(program: P.Program, segment: int, regs, quantities: dict) -> None:
    """Run ``segment`` of ``program`` on ``regs`` ((n, nregisters), numpy or torch), in place.

    ``quantities`` maps names to arrays as ``World.get`` shapes them (leading env axis), in
    the namespace of ``regs``; STORE writes into its ctrl and dof quantities. RNE_POST does
    nothing here: the caller gives cfrc_ext as the World computes it.
    """
    xp = _ops_for(regs)
    ints, floats = program.ints, program.floats
    n = regs.shape[0]
    for op, count, dst, a, b, c, single in _rows(program, segment):
        if op in (P.LOAD, P.STORE):
            elements = ints[(a if op == P.LOAD else c) : (a if op == P.LOAD else c) + count]
            for k, e in enumerate(elements):
                name, row, col = element(b, int(e))
                q = _quantity(quantities, name, n)
                if op == P.LOAD:
                    regs[:, dst + k] = q[:, row, 0 if col is None else col]
                else:
                    q[:, row, 0 if col is None else col] = regs[:, a + k]
        elif op == P.ROT_T:
            r, v = regs[:, a : a + 9], regs[:, b : b + 3]
            for i in range(3):
                regs[:, dst + i] = r[:, i] * v[:, 0] + r[:, 3 + i] * v[:, 1] + r[:, 6 + i] * v[:, 2]
        elif op == P.CROSS:
            u, v = regs[:, a : a + 3] * 1.0, regs[:, b : b + 3] * 1.0  # copies: dst may overlap
            regs[:, dst] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
            regs[:, dst + 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
            regs[:, dst + 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
        elif op == P.RNE_POST:
            continue
        elif op in P.REDUCTIONS:
            regs[:, dst] = _reduce(xp, op, regs[:, a : a + count], regs)
        else:
            with np.errstate(all="ignore"):  # as the kernel: inf and NaN where the arithmetic gives them
                _elementwise(xp, op, count, dst, a, b, c, single, floats, regs)


def _reduce(xp, op, x, like):
    if op in (P.SUM, P.PROD, P.MIN, P.MAX):
        acc = xp.zeros(x.shape[0], like) + (1.0 if op == P.PROD else 0.0)
        if op in (P.MIN, P.MAX):
            acc = x[:, 0] * 1.0
        for k in range(x.shape[1]):  # in the kernel's order, so that sums and products round alike
            if op == P.SUM:
                acc = acc + x[:, k]
            elif op == P.PROD:
                acc = acc * x[:, k]
            else:
                acc = (xp.minimum if op == P.MIN else xp.maximum)(acc, x[:, k])
        return acc
    flag = ~xp.isfinite(x)
    if op == P.ANY:
        flag = flag | (x != 0)
    return flag.any(1) * 1.0


def _operand(regs, at, n, single, bit):
    """Register operand ``at``: n columns, or its one column where ``single`` marks it."""
    return regs[:, at : at + 1] if single >> bit & 1 else regs[:, at : at + n]


def _elementwise(xp, op, n, dst, a, b, c, single, floats, regs):
    x = _operand(regs, a, n, single, 0)
    lo = xp.const(floats[c : c + n], regs)
    hi = xp.const(floats[c + n : c + 2 * n], regs)
    if op == P.COPY:
        y = x * 1.0
    elif op == P.AFFINE:
        y = lo * x + hi
    elif op == P.CLIP:
        y = xp.where(x < lo, lo, xp.where(x > hi, hi, x))
    elif op in _UNARY:
        y = getattr(xp, _UNARY[op])(x)
    elif op == P.SQUARE:
        y = x * x
    elif op in P.BINARY:
        z = _operand(regs, b, n, single, 1)
        y = {P.ADD: lambda: x + z, P.SUB: lambda: x - z, P.MUL: lambda: x * z, P.DIV: lambda: x / z,
             P.MINIMUM: lambda: xp.minimum(x, z), P.MAXIMUM: lambda: xp.maximum(x, z),
             P.LESS: lambda: (x < z) * 1.0, P.LESS_EQUAL: lambda: (x <= z) * 1.0}[op]()
    elif op == P.WHERE:
        y = xp.where(x != 0, _operand(regs, b, n, single, 1), _operand(regs, c, n, single, 2))
    elif op == P.OUTSIDE:
        inside = ((x >= lo) & (x <= hi)) if b != 0 else ((x > lo) & (x < hi))
        y = 1.0 - (inside & xp.isfinite(x)) * 1.0
    elif op == P.CONST:
        y = xp.zeros(x.shape, regs) + lo
    elif op == P.GREATER:
        y = ((x > float(floats[c])) & xp.isfinite(x)) * 1.0
    elif op == P.TOLERANCE:
        margin = xp.const(floats[c + 2 * n : c + 3 * n], regs)
        scale = xp.const(floats[c + 3 * n : c + 4 * n], regs)
        inside = (lo <= x) & (x <= hi)
        d = xp.where(x < lo, lo - x, x - hi) / margin
        y = xp.where(inside, 1.0, xp.where(margin == 0, 0.0, _sigmoid(xp, b, d, scale)))
    else:
        raise ValueError(f"unknown program instruction {op}")
    regs[:, dst : dst + n] = y


_UNARY = {P.SIN: "sin", P.COS: "cos", P.EXP: "exp", P.SQRT: "sqrt", P.ABS: "abs", P.LOG: "log", P.LOG1P: "log1p",
          P.TANH: "tanh"}


def _sigmoid(xp, code, d, scale):
    """dm_control's sigmoid ``code`` of distance ``d`` in margins, in its order of operations."""
    z = d * scale
    if code == P.GAUSSIAN:
        return xp.exp(-0.5 * (z * z))
    if code == P.HYPERBOLIC:
        return 1 / xp.cosh(z)
    if code == P.LONG_TAIL:
        return 1 / (z * z + 1)
    if code == P.RECIPROCAL:
        return 1 / (xp.abs(d) * scale + 1)
    if code == P.TANH_SQUARED:
        return 1 - xp.tanh(z) ** 2
    inside = xp.abs(z) < 1
    if code == P.COSINE:
        return xp.where(inside, (1 + xp.cos(np.pi * z)) / 2, 0.0)
    if code == P.LINEAR:
        return xp.where(inside, 1 - z, 0.0)
    return xp.where(inside, 1 - z * z, 0.0)  # QUADRATIC
