"""Table accessors and small matrix operations expanded where the engine's kernels call
them, while taichi 1.7 traces them."""

from __future__ import annotations

from importlib import import_module

from ..taichi_import import ti
from .patch import Patch, Unsupported

# --- table accessors expanded where they are called ---------------------------------------


def traced_helper(function):
    """Mark ``function``, plain Python, as called from traced code to build expressions
    (an index, a load): Taichi's tracer warns about calling any function that does not say
    it is a Taichi function, and counts a true one's prints; this says it is one, and
    false, in the words of both Taichis."""
    function._is_taichi_function = False
    function._is_quadrants_function = False
    return function


def traced_load(table, *index):
    """``table[index]`` from Python code that runs while either Taichi traces a kernel: an
    entry of a table or of a local vector (physics/step/env_tables.py's stand-ins for the
    step kernel's tables)."""
    return import_module(ti.__name__ + ".lang.impl").subscript(None, table, *index)


def traced_access():
    """The primitives the table accessors are written in when they are expanded in place
    while Taichi traces a kernel (a :class:`TracedAccess`), or None where they stay
    ``@ti.func``s: they are expanded only on taichi 1.7, whose tracer this knows.

    An accessor is one index expression and a load or store. Traced as a ``@ti.func``,
    each of a step kernel's ~900 accessor calls costs Taichi a fresh trace of the function
    (its syntax tree, a context, a local copy of every argument): ~0.8 ms a call, a third
    of a warm start's tracing, and the copies are allocas that make the kernel's IR larger
    to compile. Expanded, a call is the load or store itself, built from the caller's
    arguments as Taichi's tracer builds ``a[i]``. Values are the same: only arguments used
    once go uncopied (a vector's row, indexed once per entry, is copied, and a vector
    written entry by entry is copied first, as the function did, so that it cannot read
    entries it has already overwritten).
    """
    try:
        return TracedAccess(_find_access(ti))
    except (ImportError, AttributeError, Unsupported):
        return None


def _find_access(ti):
    if ti.__name__ != "taichi" or tuple(ti.__version__[:2]) != (1, 7):
        raise Unsupported("the expansions build what taichi 1.7's tracer builds")
    impl = import_module(ti.__name__ + ".lang.impl")
    impl.subscript, impl.expr_init_func, impl.expr_init, impl.Expr, impl.get_runtime  # noqa: B018
    return impl


class TracedAccess:
    """Loads and stores of table entries from Python code that runs while Taichi traces a
    kernel, as its tracer makes them for ``a[i]`` and ``a[i] = v``."""

    def __init__(self, impl):
        self._impl = impl

    def load(self, table, *index):
        """``table[index]``: an expression (a table entry, or a vector's entry)."""
        return self._impl.subscript(self._builder(), table, *index)

    def store(self, table, index: tuple, value):
        """``table[index] = value``."""
        self._impl.subscript(self._builder(), table, *index)._assign(value)

    def local(self, value):
        """A local copy of ``value``, as a ``@ti.func`` makes of each argument."""
        return self._impl.expr_init_func(value)

    def once(self, values: tuple) -> tuple:
        """``values`` for use several times: each Taichi expression among them copied to a
        local, so that it is computed once (an expression is computed again at every use,
        and one that loads from memory is loaded again after every store in between, where
        LLVM cannot tell the store does not reach it); Python numbers stay constants."""
        return tuple(self._impl.expr_init(v) if isinstance(v, self._impl.Expr) else v for v in values)

    @staticmethod
    def expands(function):
        return traced_helper(function)

    def _builder(self):
        return self._impl.get_runtime().compiling_callable.ast_builder()


# --- Taichi's vector and matrix operations expanded where they are called -----------------

_MATH_MARK = "__taigym_expanded_math__"


def expanded_math_in(kernel_function):
    """Decorator under ``@ti.kernel``: while the kernel is traced, Taichi's cross and dot
    products, matrix products, sums and norms of small vectors and matrices are expanded
    where they are called (the MATRIX_OPS patch)."""
    setattr(kernel_function, _MATH_MARK, True)
    return kernel_function


def _find_matrix_ops(ti):
    impl = _find_access(ti)
    ops = import_module(ti.__name__ + ".lang.matrix_ops")
    sqrt = import_module(ti.__name__ + ".lang.ops").sqrt
    originals = {name: getattr(ops, name) for name in ("cross", "dot", "matmul", "sum", "norm_sqr", "norm")}
    ops.Vector, ops.Matrix, impl.inside_kernel  # noqa: B018
    return impl, ops, sqrt, originals


def _apply_matrix_ops(ti, found):
    """Expand Taichi's ``cross``, ``dot``, ``@``, ``sum``, ``norm_sqr`` and ``norm`` of
    vectors and matrices in kernels marked by :func:`expanded_math_in`. Installed with
    :func:`traced_access`'s switches and tracer.

    Taichi implements them as Taichi functions, traced at every call (a local copy of each
    operand, a local result stored entry by entry): ~3 ms a cross product and ~12 ms a
    3x3 product while tracing, a fifth of the step kernel's tracing time for ~170 calls.
    Expanded, each is the same arithmetic in the same order, built directly from the
    operands' entries (each operand copied to a local once, as the function did); any
    other use (other shapes, Python scope, other kernels) goes to Taichi's own."""
    impl, ops, sqrt, originals = found
    if getattr(originals["cross"], "taigym", False):
        return
    P = TracedAccess(impl)
    X = _MatrixExpansion(P, ops.Vector, ops.Matrix, sqrt)

    def tensor_shapes(args, count):
        # the shapes of the first `count` arguments, all vector or matrix expressions; else None
        if len(args) < count or not all(isinstance(a, impl.Expr) and a.is_tensor() for a in args[:count]):
            return None
        shapes = [tuple(a.get_shape()) for a in args[:count]]
        return shapes if all(len(shape) in (1, 2) for shape in shapes) else None

    def expanding(name, count, wanted):
        # `wanted`: whether the operands' shapes are the ones expanded (any other: Taichi's checks)
        original, expanded = originals[name], getattr(X, name)

        def operation(*args, **kwargs):
            kernel = impl.get_runtime().current_kernel if impl.inside_kernel() else None
            if getattr(getattr(kernel, "func", None), _MATH_MARK, False) and set(kwargs) <= {"eps"}:
                shapes = tensor_shapes(args, count)
                if shapes is not None and wanted(*shapes):
                    return expanded(*args, **kwargs)
            return original(*args, **kwargs)

        operation.taigym = True
        operation.__name__ = name
        return P.expands(operation)

    def any_shape(_):
        return True

    wanted = {"cross": (2, lambda a, b: a == b == (3,)), "dot": (2, lambda a, b: len(a) == 1 and a == b),
              "matmul": (2, lambda a, b: len(a) == 2 and a[1] == b[0]),
              "sum": (1, any_shape), "norm_sqr": (1, any_shape), "norm": (1, any_shape)}
    for name, (count, shapes_ok) in wanted.items():
        setattr(ops, name, expanding(name, count, shapes_ok))


class _MatrixExpansion:
    """Taichi 1.7's matrix_ops arithmetic, operation by operation, built from Python."""

    def __init__(self, P, vector, matrix, sqrt):
        self._P, self._vector, self._matrix, self._sqrt = P, vector, matrix, sqrt

    def _at(self, x, *index):
        return self._P.load(x, *index)

    def cross(self, x, y):
        x, y = self._P.once((x, y))
        x0, x1, x2 = (self._at(x, i) for i in range(3))
        y0, y1, y2 = (self._at(y, i) for i in range(3))
        return self._vector([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0])

    def sum(self, m):
        (m,) = self._P.once((m,))
        shape = m.get_shape()
        entries = [(i,) for i in range(shape[0])] if len(shape) == 1 else \
            [(i, j) for i in range(shape[0]) for j in range(shape[1])]
        total = self._at(m, *entries[0])
        for index in entries[1:]:
            total = total + self._at(m, *index)
        return total

    def dot(self, x, y):
        x, y = self._P.once((x, y))
        return self.sum(x * y)

    def norm_sqr(self, m):
        (m,) = self._P.once((m,))
        return self.sum(m * m)

    def norm(self, m, eps=0.0):
        return self._sqrt(self.norm_sqr(m) + eps)

    def matmul(self, x, y):
        x, y = self._P.once((x, y))
        (n, inner), by_vector = x.get_shape(), len(y.get_shape()) == 1

        def y_at(k, j):  # a vector is one column
            return self._at(y, k) if by_vector else self._at(y, k, j)

        (zero,) = self._P.once((self._at(x, 0, 0) * y_at(0, 0) * 0,))  # Taichi's typed zero
        rows = []
        for i in range(n):
            row = []
            for j in range(1 if by_vector else y.get_shape()[1]):
                entry = zero
                for k in range(inner):
                    entry = entry + self._at(x, i, k) * y_at(k, j)
                row.append(entry)
            rows.append(row)
        return self._vector([row[0] for row in rows]) if by_vector else self._matrix(rows)


MATRIX_OPS = Patch("expanded matrix operations", "lang.matrix_ops' cross, dot, matmul, sum, norm_sqr and norm, "
                   "looked up by Taichi's Matrix methods at each call, and lang.impl's subscript, expr_init, "
                   "expr_init_func and get_runtime().current_kernel", _find_matrix_ops, _apply_matrix_ops)
