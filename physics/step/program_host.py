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
    table, width = ("body_d", L.NBODY_D) if src == P.SRC_BODY else ("dof_d", L.NDOF_D)
    row, col = divmod(e, width)
    name, c = _columns(table, width)[col]
    return name, row, c


def _rows(program: P.Program, segment: int):
    ints = program.ints
    for i in range(int(ints[2 * segment]), int(ints[2 * segment + 1])):
        at = P.HEADER + P.ROW * i
        yield (int(v) for v in ints[at : at + 6])


def touches(program: P.Program, segments=None) -> set:
    """The names of the quantities ``program`` loads or stores (in ``segments``, default all)."""
    out = set()
    for s in range(1, P.NSEGMENTS) if segments is None else segments:
        for op, n, _, a, b, c in _rows(program, s):
            if op in (P.LOAD, P.STORE):
                at = a if op == P.LOAD else c
                out.update(element(b, int(e))[0] for e in program.ints[at : at + n])
    return out


class _Numpy:
    sin, cos, exp, sqrt, isfinite = np.sin, np.cos, np.exp, np.sqrt, np.isfinite

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

    def __getattr__(self, name):  # sin, cos, exp, sqrt, isfinite, where
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
    for op, count, dst, a, b, c in _rows(program, segment):
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
        elif op in (P.SUM, P.ANY, P.NONFINITE):
            regs[:, dst] = _reduce(xp, op, regs[:, a : a + count], regs)
        else:
            _elementwise(xp, op, count, dst, a, b, c, floats, regs)


def _reduce(xp, op, x, like):
    if op == P.SUM:
        total = xp.zeros(x.shape[0], like)
        for k in range(x.shape[1]):  # in the kernel's order, so that sums round alike
            total = total + x[:, k]
        return total
    flag = ~xp.isfinite(x)
    if op == P.ANY:
        flag = flag | (x != 0)
    return flag.any(1) * 1.0


def _elementwise(xp, op, n, dst, a, b, c, floats, regs):
    x = regs[:, a : a + n]
    lo = xp.const(floats[c : c + n], regs)
    hi = xp.const(floats[c + n : c + 2 * n], regs)
    if op == P.COPY:
        y = x * 1.0
    elif op == P.AFFINE:
        y = lo * x + hi
    elif op == P.CLIP:
        y = xp.where(x < lo, lo, xp.where(x > hi, hi, x))
    elif op in (P.SIN, P.COS, P.EXP, P.SQRT):
        y = getattr(xp, {P.SIN: "sin", P.COS: "cos", P.EXP: "exp", P.SQRT: "sqrt"}[op])(x)
    elif op == P.SQUARE:
        y = x * x
    elif op in (P.ADD, P.SUB, P.MUL):
        other = regs[:, b : b + n]
        y = x + other if op == P.ADD else x - other if op == P.SUB else x * other
    elif op == P.OUTSIDE:
        inside = ((x >= lo) & (x <= hi)) if b != 0 else ((x > lo) & (x < hi))
        y = 1.0 - (inside & xp.isfinite(x)) * 1.0
    elif op == P.CONST:
        y = xp.zeros(x.shape, regs) + lo
    elif op == P.GREATER:
        y = ((x > float(floats[c])) & xp.isfinite(x)) * 1.0
    else:
        raise ValueError(f"unknown program instruction {op}")
    regs[:, dst : dst + n] = y
