"""Per-env programs: small vector computations on a World's data, run inside its step launch.

A World can carry a :class:`Program`: a list of instructions over a per-env register row
(``(num_envs, nregisters)``, the World's precision) that reads the World's quantities
(qpos, qvel, ctrl, any body or dof quantity), computes elementwise and reduces, and writes
controls. The step kernel runs one segment of it before an env's physics substeps and one
after, in the same parallel loop, so an env step that reads its inputs and writes its
outputs through registers costs one launch, with no copy per quantity.

The instructions are data, not code: one interpreter (``make_program``) is compiled into
the step kernel once per precision, and any program runs on it. A task's terms therefore
compile into no kernel of their own, and a new task starts on the cached step kernel.

Registers keep their values between launches: inputs written by the host before a launch
(actions), values a segment keeps for a later one (a position before the step), per-env
memory, and outputs the host reads after it.

An env's launch can be overridden through a register (``ProgramBuilder.override``): where it
holds a non-zero code ``pre | post << 8``, that env runs a forward pass with those segments
instead of the launch's steps and segments. An env reset on the host before a step gets
its first observation from the same launch that steps the others.

Instruction rows are 8 int32 entries ``op, n, dst, a, b, c, 0, 0`` after a header of
``2 * NSEGMENTS`` entries (each segment's first and end row) and the override register's
entry; index lists follow the rows in the same int table, constants sit in a float table.
"""

import functools
import types
from dataclasses import dataclass

import numpy as np

from .. import layout as L
from ..runtime.lanes import env_index
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

NSEGMENTS = 8  # segment 0 runs nothing
OVERRIDE = 2 * NSEGMENTS  # header entry: 1 + the override register (ProgramBuilder.override), 0 if none
HEADER = OVERRIDE + 1
ROW = 8

# opcodes
(LOAD, STORE, COPY, AFFINE, CLIP, SIN, COS, SQUARE, EXP, SQRT, ADD, SUB, MUL, SUM, OUTSIDE, ANY, NONFINITE, ROT_T,
 CROSS, GREATER, RNE_POST, CONST) = range(22)
# sources LOAD reads and STORE writes
SRC_QPOS, SRC_QVEL, SRC_CTRL, SRC_BODY, SRC_DOF, SRC_SENSOR = range(6)
_DIRECT = {"qpos": SRC_QPOS, "qvel": SRC_QVEL, "ctrl": SRC_CTRL, "sensordata": SRC_SENSOR}


@functools.lru_cache(maxsize=None)
def make_program(fp, rne_post):
    """The interpreter for one precision; ``rne_post`` computes an env's contact wrenches
    (physics/constraint/reaction.py), which RNE_POST runs before a program reads cfrc_ext."""
    m = make_math(fp)
    ibits = ti.u64 if fp == ti.f64 else ti.u32
    exp_mask = 0x7FF0000000000000 if fp == ti.f64 else 0x7F800000

    @ti.func
    def finite(x):
        # by the exponent bits: fast-math comparisons may assume that NaN never occurs
        return (ti.bit_cast(x, ibits) & ibits(exp_mask)) != ibits(exp_mask)

    @ti.func
    def read(w, src, e, qpos: ti.template(), qvel: ti.template(), ctrl: ti.template(), body_d: ti.template(),
             dof_d: ti.template(), sensordata: ti.template(), sizes: ti.template()):
        v = fp(0.0)
        if src == SRC_SENSOR:
            v = sensordata[env_index(w, e)]
        elif src == SRC_QPOS:
            v = qpos[env_index(w, e)]
        elif src == SRC_QVEL:
            v = qvel[env_index(w, e)]
        elif src == SRC_CTRL:
            v = ctrl[env_index(w, e)]
        elif src == SRC_BODY:
            v = body_d[m.entry(m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D), e)]
        else:
            v = dof_d[m.entry(m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D), e)]
        return v

    @ti.func
    def elementwise(op, w, n, dst, a, b, c, prog_f: ti.template(), reg: ti.template()):
        for k in range(n):
            x = reg[w, a + k]
            y = fp(0.0)
            if op == COPY:
                y = x
            elif op == AFFINE:
                y = prog_f[c + k] * x + prog_f[c + n + k]
            elif op == CLIP:
                y = ti.min(ti.max(x, prog_f[c + k]), prog_f[c + n + k])
            elif op == SIN:
                y = ti.sin(x)
            elif op == COS:
                y = ti.cos(x)
            elif op == SQUARE:
                y = x * x
            elif op == EXP:
                y = ti.exp(x)
            elif op == SQRT:
                y = ti.sqrt(x)
            elif op == ADD:
                y = x + reg[w, b + k]
            elif op == SUB:
                y = x - reg[w, b + k]
            elif op == MUL:
                y = x * reg[w, b + k]
            elif op == OUTSIDE:
                lo, hi = prog_f[c + k], prog_f[c + n + k]
                inside = (x >= lo and x <= hi) if b != 0 else (x > lo and x < hi)
                y = fp(0.0) if inside and finite(x) else fp(1.0)
            elif op == CONST:
                y = prog_f[c + k]
            elif op == GREATER:
                y = fp(1.0) if x > prog_f[c] and finite(x) else fp(0.0)
            reg[w, dst + k] = y

    @ti.func
    def reduce(op, w, n, dst, a, reg: ti.template()):
        acc = fp(0.0)
        for k in range(n):
            x = reg[w, a + k]
            if op == SUM:
                acc += x
            elif op == ANY:
                if x != 0 or not finite(x):
                    acc = fp(1.0)
            elif not finite(x):  # NONFINITE
                acc = fp(1.0)
        reg[w, dst] = acc

    @ti.func
    def run(w, segment, t: ti.template()):
        """Run segment ``segment`` of the program for env w; ``t`` holds the step kernel's
        arrays by name (physics/step/pipeline.py)."""
        for i in range(t.prog_i[2 * segment], t.prog_i[2 * segment + 1]):
            at = HEADER + ROW * i
            op, n, dst = t.prog_i[at], t.prog_i[at + 1], t.prog_i[at + 2]
            a, b, c = t.prog_i[at + 3], t.prog_i[at + 4], t.prog_i[at + 5]
            if op == LOAD:
                for k in range(n):
                    t.reg[w, dst + k] = read(w, b, t.prog_i[a + k], t.qpos, t.qvel, t.ctrl, t.body_d, t.dof_d,
                                             t.sensordata, t.sizes)
            elif op == STORE:
                for k in range(n):
                    if b == SRC_CTRL:
                        t.ctrl[env_index(w, t.prog_i[c + k])] = t.reg[w, a + k]
                    else:  # SRC_DOF
                        t.dof_d[m.entry(m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D),
                                        t.prog_i[c + k])] = t.reg[w, a + k]
            elif op == ROT_T:  # dst = R^T v, R row-major in a, v in b
                for r in range(3):
                    t.reg[w, dst + r] = (t.reg[w, a + r] * t.reg[w, b] + t.reg[w, a + 3 + r] * t.reg[w, b + 1]
                                         + t.reg[w, a + 6 + r] * t.reg[w, b + 2])
            elif op == CROSS:
                u = m.vec3(t.reg[w, a], t.reg[w, a + 1], t.reg[w, a + 2])
                v = m.vec3(t.reg[w, b], t.reg[w, b + 1], t.reg[w, b + 2])
                x = u.cross(v)
                for r in ti.static(range(3)):
                    t.reg[w, dst + r] = x[r]
            elif op == RNE_POST:
                rne_post(w, t.sizes, t.body_i, t.opt_f, t.qvel, t.qacc, t.body_d, t.dof_d, t.geom_i, t.con_f, t.con_i,
                         t.efc_f, t.efc_n)
            elif op == SUM or op == ANY or op == NONFINITE:
                reduce(op, w, n, dst, a, t.reg)
            else:
                elementwise(op, w, n, dst, a, b, c, t.prog_f, t.reg)

    @ti.func
    def launch_of(w, segments, nstep, advance, prog_i: ti.template(), reg: ti.template()):
        """(segments, steps, advance) env w runs: the launch's, or its override register's forward pass."""
        code, steps, adv = segments, nstep, advance
        at = prog_i[OVERRIDE] - 1
        if at >= 0:
            own = ti.cast(reg[w, at], ti.i32)
            if own != 0:
                code, steps, adv = own, 1, 0
        return code, steps, adv

    return types.SimpleNamespace(run=run, launch_of=launch_of)


@dataclass(frozen=True)
class Regs:
    """A run of ``n`` registers from ``start``."""

    start: int
    n: int

    def __getitem__(self, k) -> "Regs":
        if isinstance(k, slice):
            lo, hi, step = k.indices(self.n)
            if step != 1:
                raise ValueError("register slices are contiguous")
            return Regs(self.start + lo, max(0, hi - lo))
        k = range(self.n)[k]
        return Regs(self.start + k, 1)

    @property
    def stop(self) -> int:
        return self.start + self.n


@dataclass(frozen=True)
class Program:
    """A built program: the tables a World uploads, its register count, which segments
    compute contact wrenches (so the World knows cfrc_ext is current after them)."""

    ints: np.ndarray
    floats: np.ndarray
    nregisters: int
    rne_segments: frozenset = frozenset()
    override: "Regs | None" = None


class ProgramBuilder:
    """Writes a Program; every method returns the registers holding its result.

    ``segment(s)`` chooses where the following instructions go (1..NSEGMENTS-1).
    """

    def __init__(self):
        self._rows = {s: [] for s in range(1, NSEGMENTS)}
        self._indices: list[list[int]] = []  # index lists, placed after the rows at build()
        self._consts: list[float] = []
        self._segment = 1
        self.nregisters = 0
        self._rne = set()
        self._override = None

    def segment(self, s: int) -> None:
        if not 1 <= s < NSEGMENTS:
            raise ValueError(f"segment must be in 1..{NSEGMENTS - 1}, got {s}")
        self._segment = s

    def alloc(self, n: int) -> Regs:
        regs = Regs(self.nregisters, int(n))
        self.nregisters += int(n)
        return regs

    # --- World data ------------------------------------------------------------------------
    def load(self, name: str, rows, cols=None, out: "Regs | None" = None) -> Regs:
        """Quantity ``name`` (a World.get name: qpos, qvel, ctrl or a body or dof quantity) at
        ``rows`` (coordinates, bodies or dofs), columns ``cols`` of each (all by default, a
        matrix row-major), in row-major order."""
        src, elements = _elements(name, rows, cols)
        out = out or self.alloc(len(elements))
        self._check(out, len(elements))
        self._emit(LOAD, len(elements), out.start, ("index", elements), src, 0)
        return out

    def store(self, name: str, rows, values: Regs, cols=None) -> None:
        """Write ``values`` into ctrl or a dof quantity (a drive target) at ``rows`` (actuators
        or dofs), in load()'s order."""
        src, elements = _elements(name, rows, cols)
        if src not in (SRC_CTRL, SRC_DOF):
            raise ValueError(f"a program writes ctrl or a dof quantity, not {name!r}")
        self._check(values, len(elements))
        self._emit(STORE, values.n, 0, values.start, src, ("index", elements))

    def override(self) -> Regs:
        """The register that overrides an env's launch: 0 runs the launch's steps and segments,
        ``pre | post << 8`` a forward pass with segments pre and post instead."""
        if self._override is None:
            self._override = self.alloc(1)
        return self._override

    def rne_post(self) -> None:
        """Compute cacc, cfrc_ext and cfrc_int of the env's last forward pass."""
        self._rne.add(self._segment)
        self._emit(RNE_POST, 0, 0, 0, 0, 0)

    # --- arithmetic --------------------------------------------------------------------------
    def const(self, values, out: "Regs | None" = None) -> Regs:
        """Registers holding ``values``."""
        values = np.atleast_1d(np.asarray(values, dtype=np.float64))
        out = out or self.alloc(values.size)
        self._check(out, values.size)
        self._emit(CONST, values.size, out.start, out.start, 0, self._consts_at(values.tolist()))
        return out

    def copy(self, x: Regs, out: "Regs | None" = None) -> Regs:
        return self._unary(COPY, x, out)

    def affine(self, x: Regs, scale, bias, out: "Regs | None" = None) -> Regs:
        """scale * x + bias, per element (scalars broadcast)."""
        return self._unary(AFFINE, x, out, c=self._const_pair(scale, bias, x.n))

    def clip(self, x: Regs, low, high, out: "Regs | None" = None) -> Regs:
        return self._unary(CLIP, x, out, c=self._const_pair(low, high, x.n))

    def sin(self, x, out=None):
        return self._unary(SIN, x, out)

    def cos(self, x, out=None):
        return self._unary(COS, x, out)

    def square(self, x, out=None):
        return self._unary(SQUARE, x, out)

    def exp(self, x, out=None):
        return self._unary(EXP, x, out)

    def sqrt(self, x, out=None):
        return self._unary(SQRT, x, out)

    def add(self, x, y, out=None):
        return self._binary(ADD, x, y, out)

    def sub(self, x, y, out=None):
        return self._binary(SUB, x, y, out)

    def mul(self, x, y, out=None):
        return self._binary(MUL, x, y, out)

    def outside(self, x: Regs, low, high, inclusive: bool = True, out=None) -> Regs:
        """1 where x is not within [low, high] (open with ``inclusive`` False) or not finite."""
        return self._unary(OUTSIDE, x, out, b=int(bool(inclusive)), c=self._const_pair(low, high, x.n))

    def greater(self, x: Regs, threshold: float, out=None) -> Regs:
        """1 where x > threshold (NaN is not)."""
        return self._unary(GREATER, x, out, c=self._consts_at([float(threshold)]))

    def sum(self, x: Regs, out=None) -> Regs:
        return self._reduce(SUM, x, out)

    def any(self, x: Regs, out=None) -> Regs:
        """1 if any element is non-zero (NaN counts)."""
        return self._reduce(ANY, x, out)

    def nonfinite(self, x: Regs, out=None) -> Regs:
        """1 if any element is NaN or infinite."""
        return self._reduce(NONFINITE, x, out)

    def norm(self, x: Regs, out=None) -> Regs:
        return self.sqrt(self.sum(self.square(x)), out)

    def rot_t(self, matrix: Regs, v: Regs, out=None) -> Regs:
        """R^T v for a row-major 3x3 R."""
        self._check(matrix, 9)
        self._check(v, 3)
        out = out or self.alloc(3)
        self._emit(ROT_T, 3, out.start, matrix.start, v.start, 0)
        return out

    def cross(self, u: Regs, v: Regs, out=None) -> Regs:
        self._check(u, 3)
        self._check(v, 3)
        out = out or self.alloc(3)
        self._emit(CROSS, 3, out.start, u.start, v.start, 0)
        return out

    # --- building ----------------------------------------------------------------------------
    def build(self) -> Program:
        rows, header = [], []
        for s in range(NSEGMENTS):
            first = len(rows)
            rows += self._rows.get(s, [])
            header += [first, len(rows)]
        at = HEADER + ROW * len(rows)
        starts = []
        for idx in self._indices:
            starts.append(at)
            at += len(idx)
        ints = list(header) + [0 if self._override is None else self._override.start + 1]
        for row in rows:
            ints += [starts[f[1]] if isinstance(f, tuple) else f for f in row]
        for idx in self._indices:
            ints += idx
        floats = np.array(self._consts or [0.0], dtype=np.float64)
        return Program(np.array(ints, dtype=np.int32), floats, max(self.nregisters, 1), frozenset(self._rne),
                       self._override)

    def _emit(self, op, n, dst, a, b, c):
        fields = []
        for f in (op, n, dst, a, b, c, 0, 0):
            if isinstance(f, tuple):  # an index list, placed at build()
                self._indices.append(list(f[1]))
                f = ("at", len(self._indices) - 1)
            fields.append(f)
        self._rows[self._segment].append(fields)

    def _unary(self, op, x, out, b=0, c=0):
        out = out or self.alloc(x.n)
        self._check(out, x.n)
        self._emit(op, x.n, out.start, x.start, b, c)
        return out

    def _binary(self, op, x, y, out):
        if x.n != y.n:
            raise ValueError(f"operands differ in size: {x.n} and {y.n}")
        return self._unary(op, x, out, b=y.start)

    def _reduce(self, op, x, out):
        out = out or self.alloc(1)
        self._check(out, 1)
        self._emit(op, x.n, out.start, x.start, 0, 0)
        return out

    def _const_pair(self, first, second, n):
        return self._consts_at([*_broadcast(first, n), *_broadcast(second, n)])

    def _consts_at(self, values) -> int:
        at = len(self._consts)
        self._consts += [float(v) for v in values]
        return at

    @staticmethod
    def _check(regs, n):
        if regs.n != n:
            raise ValueError(f"expected {n} registers, got {regs.n}")


def _broadcast(value, n):
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))
    return arr.tolist()


def _elements(name, rows, cols):
    """(source, element index of each value within an env's rows of the source's table)."""
    rows = [int(r) for r in np.atleast_1d(rows)]
    if name in _DIRECT:
        if cols is not None:
            raise ValueError(f"{name} has no columns")
        return _DIRECT[name], rows
    if name in L.BODY_D:
        src, width, (start, count) = SRC_BODY, L.NBODY_D, L.BODY_D[name]
    elif name in L.DOF_D:
        src, width, (start, count) = SRC_DOF, L.NDOF_D, L.DOF_D[name]
    else:
        raise ValueError(f"a program cannot read {name!r}: qpos, qvel, ctrl, sensordata, or a body or dof quantity")
    cols = list(range(count)) if cols is None else [int(c) for c in np.atleast_1d(cols)]
    if any(not 0 <= c < count for c in cols):
        raise ValueError(f"{name} has {count} columns, asked for {cols}")
    return src, [r * width + start + c for r in rows for c in cols]
