"""Inlined functions called from a ``@ti.real_func``'s body, on taichi 1.7.4.

Taichi 1.7.4 traces an inlined ``@ti.func`` into the kernel's syntax tree even where it is
called from a ``@ti.real_func``'s body, whose statements belong to the function: LLVM then
fails on the misplaced array accesses. Traced into the callable being compiled instead, a
real function may call inlined functions like a kernel does, which the step kernel's
outlined stages need (physics/step/outline.py). The engine's functions are traced so;
a user's as Taichi traces them.
"""

from __future__ import annotations

from importlib import import_module

from .ownership import owned_trace
from .patch import Patch, Unsupported

_applied = False


def calls_inside_real_functions() -> bool:
    """Whether the engine's real functions may call inlined functions in this process (the
    patch is installed), and so whether the step kernel may outline its stages."""
    return _applied


def _find(ti):
    if ti.__name__ != "taichi":
        raise Unsupported("the fix is for taichi's own tracer")
    tracer = import_module(ti.__name__ + ".lang.kernel_impl")
    impl = import_module(ti.__name__ + ".lang.impl")
    tracer._process_args, tracer._get_tree_and_ctx, tracer.transform_tree, tracer.ReturnStatus  # noqa: B018
    tracer.TaichiSyntaxError, impl.inside_kernel, impl.get_runtime().compiling_callable
    return tracer, impl, tracer.Func.__call__


def _apply(ti, found):
    global _applied
    tracer, impl, call = found
    _applied = True
    if getattr(call, "taigym", False):
        return

    def __call__(self, *args, **kwargs):
        runtime = impl.get_runtime()
        if (self.is_real_function or not impl.inside_kernel() or runtime.compiling_callable is None
                or not owned_trace(self, runtime)):
            return call(self, *args, **kwargs)
        args = tracer._process_args(self, args, kwargs)
        tree, ctx = tracer._get_tree_and_ctx(self, is_kernel=False, args=args, is_real_function=False,
                                             ast_builder=runtime.compiling_callable.ast_builder())
        result = tracer.transform_tree(tree, ctx)
        if self.return_type and ctx.returned != tracer.ReturnStatus.ReturnedValue:
            raise tracer.TaichiSyntaxError("Function has a return type but does not have a return statement")
        return result

    __call__.taigym = True
    tracer.Func.__call__ = __call__


PATCH = Patch("inlined calls in real functions", "lang.kernel_impl.Func.__call__, _process_args, _get_tree_and_ctx("
              "ast_builder=...), transform_tree, ReturnStatus and impl.get_runtime().compiling_callable", _find, _apply)
