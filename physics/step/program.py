"""Per-env programs: small vector computations on a World's data, run inside its step launch.

A World can carry a :class:`Program`: a list of instructions over a per-env register row
(``(num_envs, nregisters)``, the World's precision) that reads the World's quantities
(qpos, qvel, ctrl, sensordata, any body or dof quantity, geom_xpos), computes elementwise
and reduces, and writes controls. The step kernel runs one segment of it before an env's
physics substeps and one after, in the same parallel loop, so an env step that reads its
inputs and writes its outputs through registers costs one launch, with no copy per
quantity.

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

Instruction rows are 8 int32 entries ``op, n, dst, a, b, c, single, 0`` after a header of
``2 * NSEGMENTS`` entries (each segment's first and end row) and the override register's
entry; index lists follow the rows in the same int table, constants sit in a float table.
``single``'s bits 0, 1, 2 mark the register operands a, b, c that are one register, which
an elementwise instruction broadcasts over its ``n`` elements. The last entry is always 0:
a zero the kernel's compiler cannot see, which LOG1P uses to keep a rounding that fast math
would otherwise optimize away.
"""

import functools
import math
import types
from dataclasses import dataclass, field

import numpy as np

from .. import layout as L
from ..access import make_access
from ..runtime.lanes import env_index
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

NSEGMENTS = 8  # segment 0 runs nothing
OVERRIDE = 2 * NSEGMENTS  # header entry: 1 + the override register (ProgramBuilder.override), 0 if none
HEADER = OVERRIDE + 1
ROW = 8

# opcodes
(LOAD, STORE, COPY, AFFINE, CLIP, SIN, COS, SQUARE, EXP, SQRT, ADD, SUB, MUL, SUM, OUTSIDE, ANY, NONFINITE, ROT_T,
 CROSS, GREATER, RNE_POST, CONST, DIV, MINIMUM, MAXIMUM, LESS, LESS_EQUAL, WHERE, ABS, LOG, LOG1P, TANH, TOLERANCE,
 PROD, MIN, MAX) = range(36)
BINARY = (ADD, SUB, MUL, DIV, MINIMUM, MAXIMUM, LESS, LESS_EQUAL)  # a op b, either operand one register
_NAMES = dict(zip(BINARY, ("add", "sub", "mul", "div", "minimum", "maximum", "less", "less_equal")))
REDUCTIONS = (SUM, PROD, MIN, MAX, ANY, NONFINITE)
# TOLERANCE's sigmoids (dm_control.utils.rewards), by their code in the row's b
SIGMOIDS = ("gaussian", "hyperbolic", "long_tail", "reciprocal", "cosine", "linear", "quadratic", "tanh_squared")
GAUSSIAN, HYPERBOLIC, LONG_TAIL, RECIPROCAL, COSINE, LINEAR, QUADRATIC, TANH_SQUARED = range(8)
# sources LOAD reads and STORE writes
SRC_QPOS, SRC_QVEL, SRC_CTRL, SRC_BODY, SRC_DOF, SRC_SENSOR, SRC_GEOM = range(7)
_DIRECT = {"qpos": SRC_QPOS, "qvel": SRC_QVEL, "ctrl": SRC_CTRL, "sensordata": SRC_SENSOR}


@functools.lru_cache(maxsize=None)
def make_program(fp, rne_post):
    """The interpreter for one precision; ``rne_post`` computes an env's contact wrenches
    (physics/constraint/reaction.py), which RNE_POST runs before a program reads cfrc_ext."""
    m = make_math(fp)
    A = make_access(fp)
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
    def geom_xpos(w, e, t: ti.template()):
        """Entry e % 3 of geom e // 3's centre, xpos + xmat geom_pos, with the env's own
        geom_pos (a per-env parameter) where it has one; computed here, as the geom poses
        are posed only for contacts."""
        g, r = e // 3, e % 3
        body = A.geom_body(t.geom_i, g)
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        local = A.geom_pos(t.geom_f, m.param_set(w, t.geom_f), g)
        pos = A.body_xpos(t.body_d, o, body) + A.body_xmat(t.body_d, o, body) @ local
        v = pos[0]
        if r == 1:
            v = pos[1]
        elif r == 2:
            v = pos[2]
        return v

    @ti.func
    def sigmoid(code, d, scale):
        """dm_control's sigmoid ``code`` at distance ``d`` (in margins) from the bounds, in its order."""
        z = d * scale
        v = fp(0.0)
        if code == GAUSSIAN:
            v = ti.exp(fp(-0.5) * (z * z))
        elif code == HYPERBOLIC:
            v = fp(1.0) / ((ti.exp(z) + ti.exp(-z)) * fp(0.5))
        elif code == LONG_TAIL:
            v = fp(1.0) / (z * z + fp(1.0))
        elif code == RECIPROCAL:
            v = fp(1.0) / (ti.abs(d) * scale + fp(1.0))
        elif code == TANH_SQUARED:
            th = ti.tanh(z)
            v = fp(1.0) - th * th
        elif ti.abs(z) < fp(1.0):  # the sigmoids of finite support
            if code == COSINE:
                v = (fp(1.0) + ti.cos(fp(math.pi) * z)) / fp(2.0)
            elif code == LINEAR:
                v = fp(1.0) - z
            else:  # QUADRATIC
                v = fp(1.0) - z * z
        return v

    @ti.func
    def log1p(x, zero):
        u = fp(1.0) + x
        # u - 1 is exact, but reassociating fast math would fold (1 + x) - 1 to x: an OR with
        # a zero it cannot see keeps u's rounding, which the quotient then cancels
        u = ti.bit_cast(ti.bit_cast(u, ibits) | ti.cast(zero, ibits), fp)
        y = x
        if u != fp(1.0):
            y = ti.log(u) * (x / (u - fp(1.0)))
        return y

    @ti.func
    def elementwise(op, w, n, dst, a, b, c, single, zero, prog_f: ti.template(), reg: ti.template()):
        sa, sb, sc = 1 - (single & 1), 1 - ((single >> 1) & 1), 1 - ((single >> 2) & 1)
        for k in range(n):
            x = reg[w, a + sa * k]
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
            elif op == ABS:
                y = ti.abs(x)
            elif op == LOG:
                y = ti.log(x)
            elif op == LOG1P:
                y = log1p(x, zero)
            elif op == TANH:
                y = ti.tanh(x)
            elif op == WHERE:
                y = reg[w, b + sb * k] if x != 0 else reg[w, c + sc * k]
            elif op == OUTSIDE:
                lo, hi = prog_f[c + k], prog_f[c + n + k]
                inside = (x >= lo and x <= hi) if b != 0 else (x > lo and x < hi)
                y = fp(0.0) if inside and finite(x) else fp(1.0)
            elif op == CONST:
                y = prog_f[c + k]
            elif op == GREATER:
                y = fp(1.0) if x > prog_f[c] and finite(x) else fp(0.0)
            elif op == TOLERANCE:  # constants: n lower bounds, n upper, n margins, n scales
                lo, hi, margin = prog_f[c + k], prog_f[c + n + k], prog_f[c + 2 * n + k]
                y = fp(1.0)
                if not (lo <= x and x <= hi):
                    y = fp(0.0)
                    if margin != 0:
                        y = sigmoid(b, (lo - x if x < lo else x - hi) / margin, prog_f[c + 3 * n + k])
            else:  # BINARY
                z = reg[w, b + sb * k]
                if op == ADD:
                    y = x + z
                elif op == SUB:
                    y = x - z
                elif op == MUL:
                    y = x * z
                elif op == DIV:
                    y = x / z
                elif op == MINIMUM:
                    y = ti.min(x, z)
                elif op == MAXIMUM:
                    y = ti.max(x, z)
                elif op == LESS:
                    y = fp(1.0) if x < z else fp(0.0)
                else:  # LESS_EQUAL
                    y = fp(1.0) if x <= z else fp(0.0)
            reg[w, dst + k] = y

    @ti.func
    def reduce(op, w, n, dst, a, reg: ti.template()):
        acc = fp(1.0) if op == PROD else fp(0.0)
        if op == MIN or op == MAX:
            acc = reg[w, a]
        for k in range(n):
            x = reg[w, a + k]
            if op == SUM:
                acc += x
            elif op == PROD:
                acc *= x
            elif op == MIN:
                acc = ti.min(acc, x)
            elif op == MAX:
                acc = ti.max(acc, x)
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
                    if b == SRC_GEOM:
                        t.reg[w, dst + k] = geom_xpos(w, t.prog_i[a + k], t)
                    else:
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
            elif op == SUM or op == PROD or op == MIN or op == MAX or op == ANY or op == NONFINITE:
                reduce(op, w, n, dst, a, t.reg)
            else:
                elementwise(op, w, n, dst, a, b, c, t.prog_i[at + 6], t.prog_i[at + 7], t.prog_f, t.reg)

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
    """A run of ``n`` registers from ``start``, of the ProgramBuilder that allocated it.

    Arithmetic on Regs emits instructions into that builder (in its current segment) and
    gives the registers of the result: ``+ - * /``, unary ``-``, ``abs()``, and the
    comparisons ``< <= > >=`` (1.0 where true, 0.0 where not), with a Regs, a number or an
    array of ``n`` numbers on either side; a run of one register broadcasts against a longer
    one. ``==`` compares which registers two runs are, not their values.
    """

    start: int
    n: int
    builder: "ProgramBuilder | None" = field(default=None, compare=False, hash=False, repr=False)
    __array_ufunc__ = None  # numpy operands defer to these operators rather than loop over Regs

    def __getitem__(self, k) -> "Regs":
        if isinstance(k, slice):
            lo, hi, step = k.indices(self.n)
            if step != 1:
                raise ValueError("register slices are contiguous")
            return Regs(self.start + lo, max(0, hi - lo), self.builder)
        k = range(self.n)[k]
        return Regs(self.start + k, 1, self.builder)

    @property
    def stop(self) -> int:
        return self.start + self.n

    def _b(self, other=None) -> "ProgramBuilder":
        """The builder an operation of self (and ``other``) goes to."""
        for r in (self, other):
            if isinstance(r, Regs) and r.builder is None:
                raise ValueError(f"{r!r} has no builder: operators work on registers a ProgramBuilder allocated")
        if isinstance(other, Regs) and other.builder is not self.builder:
            raise ValueError(f"{self!r} and {other!r} belong to different ProgramBuilders")
        return self.builder

    def __add__(self, other):
        return self._b(other).add(self, other)

    def __radd__(self, other):
        return self._b(other).add(other, self)

    def __sub__(self, other):
        return self._b(other).sub(self, other)

    def __rsub__(self, other):
        return self._b(other).sub(other, self)

    def __mul__(self, other):
        return self._b(other).mul(self, other)

    def __rmul__(self, other):
        return self._b(other).mul(other, self)

    def __truediv__(self, other):
        return self._b(other).div(self, other)

    def __rtruediv__(self, other):
        return self._b(other).div(other, self)

    def __neg__(self):
        return self._b().affine(self, -1.0, 0.0)

    def __abs__(self):
        return self._b().abs(self)

    def __lt__(self, other):
        return self._b(other).less(self, other)

    def __le__(self, other):
        return self._b(other).less_equal(self, other)

    def __gt__(self, other):
        return self._b(other).less(other, self)

    def __ge__(self, other):
        return self._b(other).less_equal(other, self)

    def sum(self):
        return self._b().sum(self)

    def prod(self):
        return self._b().prod(self)

    def min(self):
        return self._b().min(self)

    def max(self):
        return self._b().max(self)

    def mean(self):
        return self._b().mean(self)

    def square(self):
        return self._b().square(self)


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
        regs = Regs(self.nregisters, int(n), self)
        self.nregisters += int(n)
        return regs

    # --- World data ------------------------------------------------------------------------
    def load(self, name: str, rows, cols=None, out: "Regs | None" = None) -> Regs:
        """Quantity ``name`` (a World.get name: qpos, qvel, ctrl, sensordata, a body or dof
        quantity, or geom_xpos) at ``rows`` (coordinates, bodies, dofs or geoms), columns
        ``cols`` of each (all by default, a matrix row-major), in row-major order."""
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

    def abs(self, x, out=None):
        return self._unary(ABS, x, out)

    def log(self, x, out=None):
        return self._unary(LOG, x, out)

    def log1p(self, x, out=None):
        """log(1 + x), accurate for small x."""
        return self._unary(LOG1P, x, out)

    def tanh(self, x, out=None):
        return self._unary(TANH, x, out)

    # Binary operations take Regs, numbers or arrays (as constants) on either side; a single
    # register or number broadcasts against a run. With a number, +, - and * are one affine
    # instruction, as is / by a power of two: all exact, as the operation itself. The kernel
    # compiles with fast math, so comparisons, minimum and maximum of NaN are unspecified
    # (``nonfinite`` tells NaN and inf by their bits).
    def add(self, x, y, out=None):
        if _is_number(y):
            return self.affine(x, 1.0, y, out) if self._fits(x, y) else self._binary(ADD, x, y, out)
        if _is_number(x):
            return self.add(y, x, out)
        return self._binary(ADD, x, y, out)

    def sub(self, x, y, out=None):
        if _is_number(y) and self._fits(x, y):
            return self.affine(x, 1.0, -np.asarray(y, dtype=np.float64), out)
        if _is_number(x) and self._fits(y, x):
            return self.affine(y, -1.0, x, out)
        return self._binary(SUB, x, y, out)

    def mul(self, x, y, out=None):
        if _is_number(y):
            return self.affine(x, y, 0.0, out) if self._fits(x, y) else self._binary(MUL, x, y, out)
        if _is_number(x):
            return self.mul(y, x, out)
        return self._binary(MUL, x, y, out)

    def div(self, x, y, out=None):
        if _is_number(y) and self._fits(x, y):
            inverse = _exact_inverse(y)
            if inverse is not None:
                return self.affine(x, inverse, 0.0, out)
        return self._binary(DIV, x, y, out)

    def minimum(self, x, y, out=None):
        return self._binary(MINIMUM, x, y, out)

    def maximum(self, x, y, out=None):
        return self._binary(MAXIMUM, x, y, out)

    def less(self, x, y, out=None):
        """1 where x < y, else 0."""
        return self._binary(LESS, x, y, out)

    def less_equal(self, x, y, out=None):
        """1 where x <= y, else 0."""
        return self._binary(LESS_EQUAL, x, y, out)

    def where(self, cond, x, y, out=None):
        """x where cond is non-zero, else y (each a run, a single register or a number)."""
        cond, x, y = (self._operand(v, "where") for v in (cond, x, y))
        n, single = self._broadcast("where", cond, x, y)
        out = out or self.alloc(n)
        self._check(out, n)
        self._emit(WHERE, n, out.start, cond.start, x.start, y.start, single)
        return out

    def tolerance(self, x, bounds=(0.0, 0.0), margin=0.0, sigmoid="gaussian", value_at_margin=0.1, out=None):
        """dm_control's ``rewards.tolerance``: 1 where bounds[0] <= x <= bounds[1], else a
        sigmoid of the distance to the nearer bound in margins that is ``value_at_margin``
        one margin out (0 with margin 0). Bounds may be infinite; bounds and margin may be
        numbers or arrays of x's size."""
        x = self._operand(x, "tolerance")
        try:
            lower, upper = bounds
        except (TypeError, ValueError):
            raise ValueError(f"tolerance: bounds must be a pair (lower, upper), got {bounds!r}") from None
        lower, upper, margins = (_sized(v, x.n, f"tolerance: {name}")
                                 for v, name in ((lower, "bounds[0]"), (upper, "bounds[1]"), (margin, "margin")))
        if not (lower <= upper).all():
            raise ValueError(f"tolerance: bounds must have lower <= upper, got {bounds!r}")
        if not (margins >= 0).all():
            raise ValueError(f"tolerance: margin must be non-negative, got {margin!r}")
        if sigmoid not in SIGMOIDS:
            raise ValueError(f"tolerance: sigmoid must be one of {', '.join(SIGMOIDS)}; got {sigmoid!r}")
        # value_at_margin only matters, and dm_control only checks it, where there is a margin
        scale = sigmoid_scale(sigmoid, value_at_margin) if (margins > 0).any() else 0.0
        consts = [*lower, *upper, *margins, *_broadcast(scale, x.n)]
        return self._unary(TOLERANCE, x, out, b=SIGMOIDS.index(sigmoid), c=self._consts_at(consts))

    def outside(self, x: Regs, low, high, inclusive: bool = True, out=None) -> Regs:
        """1 where x is not within [low, high] (open with ``inclusive`` False) or not finite."""
        return self._unary(OUTSIDE, x, out, b=int(bool(inclusive)), c=self._const_pair(low, high, x.n))

    def greater(self, x: Regs, threshold: float, out=None) -> Regs:
        """1 where x > threshold (NaN is not)."""
        return self._unary(GREATER, x, out, c=self._consts_at([float(threshold)]))

    def sum(self, x: Regs, out=None) -> Regs:
        """The sum of x's elements, added in order."""
        return self._reduce(SUM, x, out)

    def prod(self, x: Regs, out=None) -> Regs:
        return self._reduce(PROD, x, out)

    def min(self, x: Regs, out=None) -> Regs:
        return self._reduce(MIN, x, out)

    def max(self, x: Regs, out=None) -> Regs:
        return self._reduce(MAX, x, out)

    def mean(self, x: Regs, out=None) -> Regs:
        """sum / n, as numpy divides."""
        return self.div(self.sum(x), float(x.n), out)

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

    def _emit(self, op, n, dst, a, b, c, single=0):
        fields = []
        for f in (op, n, dst, a, b, c, single, 0):
            if isinstance(f, tuple):  # an index list, placed at build()
                self._indices.append(list(f[1]))
                f = ("at", len(self._indices) - 1)
            fields.append(f)
        self._rows[self._segment].append(fields)

    def _unary(self, op, x, out, b=0, c=0):
        x = self._operand(x, "operand")
        out = out or self.alloc(x.n)
        self._check(out, x.n)
        self._emit(op, x.n, out.start, x.start, b, c)
        return out

    def _binary(self, op, x, y, out):
        x, y = self._operand(x, _NAMES[op]), self._operand(y, _NAMES[op])
        n, single = self._broadcast(_NAMES[op], x, y)
        out = out or self.alloc(n)
        self._check(out, n)
        self._emit(op, n, out.start, x.start, y.start, 0, single)
        return out

    def _reduce(self, op, x, out):
        x = self._operand(x, "operand")
        if x.n == 0 and op in (MIN, MAX):
            raise ValueError("min and max of no registers")
        out = out or self.alloc(1)
        self._check(out, 1)
        self._emit(op, x.n, out.start, x.start, 0, 0)
        return out

    def _operand(self, v, what) -> Regs:
        """v as registers of this builder: a number or array becomes constant registers."""
        if isinstance(v, Regs):
            if v.builder is not None and v.builder is not self:
                raise ValueError(f"{what}: {v!r} belongs to another ProgramBuilder")
            return v
        if not _is_number(v):
            raise TypeError(f"{what}: expected registers or numbers, got {type(v).__name__}")
        return self.const(v)

    @staticmethod
    def _broadcast(what, *runs):
        """(size, single-register bits) of an elementwise instruction on ``runs``."""
        n = max(r.n for r in runs)
        if any(r.n not in (1, n) for r in runs):
            raise ValueError(f"{what}: operands differ in size ({', '.join(str(r.n) for r in runs)} registers)")
        return n, sum(1 << i for i, r in enumerate(runs) if r.n == 1 and n > 1)

    @staticmethod
    def _fits(x, value) -> bool:
        """Whether a number or array ``value`` can be affine constants of run x."""
        return isinstance(x, Regs) and np.size(value) in (1, x.n)

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


def tolerance(x: Regs, bounds=(0.0, 0.0), margin=0.0, sigmoid="gaussian", value_at_margin=0.1) -> Regs:
    """dm_control's ``rewards.tolerance`` of registers x, in x's builder (ProgramBuilder.tolerance)."""
    if not isinstance(x, Regs):
        raise TypeError(f"tolerance: x must be registers, got {type(x).__name__}")
    return x._b().tolerance(x, bounds, margin, sigmoid, value_at_margin)


def sigmoid_scale(sigmoid: str, value_at_margin) -> float:
    """What one margin is multiplied by so that ``sigmoid`` is ``value_at_margin`` there,
    computed as dm_control computes it."""
    v = float(value_at_margin)
    if sigmoid in ("cosine", "linear", "quadratic"):
        if not 0 <= v < 1:
            raise ValueError(f"tolerance: value_at_margin must be in [0, 1) for the {sigmoid} sigmoid, got {v}")
    elif not 0 < v < 1:
        raise ValueError(f"tolerance: value_at_margin must be strictly between 0 and 1 for the {sigmoid} sigmoid, "
                         f"got {v}")
    v = np.float64(v)
    scale = {"gaussian": lambda: np.sqrt(-2 * np.log(v)), "hyperbolic": lambda: np.arccosh(1 / v),
             "long_tail": lambda: np.sqrt(1 / v - 1), "reciprocal": lambda: 1 / v - 1,
             "cosine": lambda: np.arccos(2 * v - 1) / np.pi, "linear": lambda: 1 - v,
             "quadratic": lambda: np.sqrt(1 - v), "tanh_squared": lambda: np.arctanh(np.sqrt(1 - v))}[sigmoid]
    return float(scale())


def _is_number(v) -> bool:
    return not isinstance(v, Regs) and np.asarray(v).dtype.kind in "biuf"


def _sized(value, n, what) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim > 1 or arr.size not in (1, n):
        raise ValueError(f"{what}: expected a number or {n} numbers, got shape {arr.shape}")
    return np.broadcast_to(arr.reshape(-1), (n,))


def _exact_inverse(value):
    """1 / value where multiplying by it is dividing by value: every value a power of two."""
    values = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if not np.isfinite(values).all() or (values == 0).any():
        return None
    inverse = 1.0 / values
    if any(math.frexp(v)[0] not in (0.5, -0.5) for v in (*values, *inverse)):
        return None
    return inverse if np.ndim(value) else float(inverse[0])


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
    if name == "geom_xpos":
        src, width, (start, count) = SRC_GEOM, 3, (0, 3)
    elif name in L.BODY_D:
        src, width, (start, count) = SRC_BODY, L.NBODY_D, L.BODY_D[name]
    elif name in L.DOF_D:
        src, width, (start, count) = SRC_DOF, L.NDOF_D, L.DOF_D[name]
    else:
        raise ValueError(f"a program cannot read {name!r}: qpos, qvel, ctrl, sensordata, a body or dof quantity, "
                         "or geom_xpos")
    cols = list(range(count)) if cols is None else [int(c) for c in np.atleast_1d(cols)]
    if any(not 0 <= c < count for c in cols):
        raise ValueError(f"{name} has {count} columns, asked for {cols}")
    return src, [r * width + start + c for r in rows for c in cols]
