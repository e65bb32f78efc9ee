"""Loops LLVM leaves as they are, in the engine's kernels on taichi 1.7.4's CPU backend."""

from __future__ import annotations

from importlib import import_module

from .patch import Patch, Unsupported

_NO_INDEX = "__taigym_no_index__"  # the name the added exits read the unreachable index by
_no_index_field = None
_SCALAR_MARK = "__taigym_scalar_loops__"
_VECTOR_MARK = "__taigym_vector_loops__"
_EXIT_NAMES = ("__taigym_loop_mask__", "__taigym_loop_unreachable__")  # a function's locals the exits test


def scalar_loops() -> bool:
    """Whether kernels marked by :func:`scalar_loops_in` compile their loops as scalar loops
    in this process: the CPU backend of taichi 1.7.4.

    Taichi optimizes CPU code with LLVM at -O3 and no per-loop control, and LLVM 15
    vectorizes and runtime-unrolls every loop whose trip count is known only at run time:
    a vector body, runtime overlap checks, an unrolled remainder and the original loop.
    The engine's loops run over a model's bodies, dofs and constraint rows (3 to 30 times
    for the shipped robots), too few for the vector body to pay, and those copies were
    ~40% of the step kernel's instructions: of its cold compile, and of the machine code a
    warm start generates again. LLVM 15 vectorizes and runtime-unrolls only loops with a
    single exit, so every loop nested in a marked kernel gets a second one, taken where the
    loop index (a while loop's count of its trips), xor a mask of no bits, equals an index no
    loop reaches (the int32 minimum; mask and index are read from memory before the loop, so
    LLVM cannot prove it never happens): an xor, a compare and a never-taken branch an
    iteration. A World takes them only with its constraint stage
    outlined (physics/step/outline.py says why). The fallback: every loop as LLVM makes it.
    """
    return _applied


def scalar_loops_in(enabled: bool):
    """Decorator under ``@ti.kernel``: with ``enabled``, the loops of every function the
    kernel calls get the second exit (:func:`scalar_loops`). The kernel's own loops are
    left alone: its outermost is the parallel one, where Taichi allows no ``break``."""

    def mark(kernel_function):
        setattr(kernel_function, _SCALAR_MARK, bool(enabled))
        return kernel_function

    return mark


def vector_loops(function):
    """Decorator under ``@ti.func``: the function's own loops stay as LLVM makes them
    (vectorized and unrolled where it sees fit) in a kernel marked by
    :func:`scalar_loops_in`. For the few loops whose copies pay for their compile time:
    the composite inertia and RNE sweeps over a model's bodies, where scalar loops cost
    smooth dynamics ~10%, and the constraint solvers' dense products (Newton's Hessian, its
    factor and solves, products with J and M; PGS's rows of A), where Ant's env step ran
    4.9% fewer instructions and 3-7% faster (docs/performance.md)."""
    setattr(function, _VECTOR_MARK, True)
    return function


_applied = False


def applies(ti) -> bool:
    """Only taichi's CPU backend is LLVM at -O3 with no per-loop control: nothing to do on CUDA."""
    from ..taichi_import import current_cfg

    return current_cfg().arch == ti.cpu


def _find(ti):
    if ti.__name__ != "taichi":
        raise Unsupported("the loop builders are taichi's own")
    tracer = import_module(ti.__name__ + ".lang.ast.ast_transformer")
    transformer = tracer.ASTTransformer
    impl = import_module(ti.__name__ + ".lang.impl")
    impl.get_runtime().current_kernel  # noqa: B018
    return (transformer, tracer.build_stmt, impl, transformer.build_range_for, transformer.build_While,
            transformer.build_FunctionDef)


def _apply(ti, found):
    global _no_index_field, _applied
    transformer, build_stmt, impl, build_range_for, build_while, build_function_def = found
    _applied = True
    if getattr(build_range_for, "taigym", False):
        return
    import ast
    import copy

    if _no_index_field is None:
        # made once the runtime starts (backend.ensure_runtime), as the first of the
        # process's fields: a kernel's offline-cache key covers the fields it reads. Taichi
        # fills a new field with zeros, which is all it needs to hold: [0] is a mask of no
        # bits, and [1] xor the int32 minimum (exit_values) an index no loop reaches.
        # Nothing is written to it, which saves a start-up the copy kernel's launch.
        _no_index_field = ti.field(ti.i32, shape=2)

    def exit_on(index: str, node):
        # in the loop: if index ^ mask == unreachable: break, with mask and unreachable read
        # once at the top of the function (build_function_def_scalar). Read outside the
        # loop: an exit that loads in every iteration cost the constraint stage ~15% of its
        # time. Neither is known to LLVM, and an xor is no recurrence its loop analysis can
        # count, so it can neither compute the exit's trip count and merge it with the
        # loop's own (which it does to an exit against a plain unknown bound in a loop that
        # stores nothing, and then vectorizes the loop) nor hoist the test out of the loop.
        mask, unreachable = (ast.Name(id=name, ctx=ast.Load()) for name in _EXIT_NAMES)
        masked = ast.BinOp(left=ast.Name(id=index, ctx=ast.Load()), op=ast.BitXor(), right=mask)
        test = ast.Compare(left=masked, ops=[ast.Eq()], comparators=[unreachable])
        return _located(ast.If(test=test, body=[ast.Break()], orelse=[]), node)

    def exit_values(node):
        # mask, unreachable = __taigym_no_index__[0], __taigym_no_index__[1] ^ -2**31: once
        # per function, not per loop, which keeps two loads and two locals a loop out of the
        # kernel that Taichi and LLVM compile
        def read(k):
            return ast.Subscript(value=ast.Name(id=_NO_INDEX, ctx=ast.Load()), slice=ast.Constant(value=k),
                                 ctx=ast.Load())

        values = (read(0), ast.BinOp(left=read(1), op=ast.BitXor(), right=ast.Constant(value=-(2**31))))
        return [_located(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value), node)
                for name, value in zip(_EXIT_NAMES, values)]

    def marked(ctx) -> bool:
        kernel = impl.get_runtime().current_kernel
        if ctx.is_kernel or not getattr(getattr(kernel, "func", None), _SCALAR_MARK, False):
            return False
        if getattr(getattr(ctx.func, "func", None), _VECTOR_MARK, False):
            return False
        ctx.global_vars[_NO_INDEX] = _no_index_field
        return True

    def build_range_for_scalar(ctx, node):
        if marked(ctx):
            # the loop's own parts keep their places: only the new nodes are placed at the loop
            node = ast.copy_location(ast.For(target=node.target, iter=node.iter, orelse=node.orelse,
                                             body=[exit_on(node.target.id, node), *node.body]), node)
        return build_range_for(ctx, node)

    def build_while_scalar(ctx, node):
        # a while loop has no index: it counts its trips in one of its own, from 0
        if marked(ctx):
            trips = f"__taigym_trips_{node.lineno}_{node.col_offset}"
            build_stmt(ctx, _located(ast.Assign(targets=[ast.Name(id=trips, ctx=ast.Store())],
                                                value=ast.Constant(value=0)), node))
            count = _located(ast.AugAssign(target=ast.Name(id=trips, ctx=ast.Store()), op=ast.Add(),
                                           value=ast.Constant(value=1)), node)
            node = ast.copy_location(ast.While(test=node.test, body=[exit_on(trips, node), count, *node.body],
                                               orelse=node.orelse), node)
        return build_while(ctx, node)

    has_loops = {}  # a function's code -> whether its source holds a loop (it cannot change)

    def loops_in(ctx, node) -> bool:
        code = getattr(getattr(ctx.func, "func", None), "__code__", None)
        found = has_loops.get(code) if code is not None else None
        if found is None:
            found = any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(node))
            if code is not None:
                has_loops[code] = found
        return found

    def build_function_def_scalar(ctx, node):
        if marked(ctx) and loops_in(ctx, node):
            node = copy.copy(node)  # Taichi keeps the parsed function for its next call
            node.body = [*exit_values(node.body[0]), *node.body]
        return build_function_def(ctx, node)

    build_function_def_scalar.taigym = True
    transformer.build_FunctionDef = staticmethod(build_function_def_scalar)
    build_while_scalar.taigym = True
    transformer.build_While = staticmethod(build_while_scalar)
    build_range_for_scalar.taigym = True
    transformer.build_range_for = staticmethod(build_range_for_scalar)


def _located(tree, node):
    """``tree``, a subtree made here, with every part placed at ``node`` in the source, for
    Taichi's messages (not for parsed parts: they would lose their own places)."""
    import ast

    for part in ast.walk(tree):
        ast.copy_location(part, node)
    return tree


PATCH = Patch("scalar loops", "lang.ast.ast_transformer.ASTTransformer's static build_range_for, build_While and "
              "build_FunctionDef(ctx, node), build_stmt, and impl.get_runtime().current_kernel.func",
              _find, _apply, applies)
