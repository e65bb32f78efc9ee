"""Launching a Taichi kernel again on the same arrays without redoing its argument setup.

This is the one module that reaches into Taichi's internals. Taichi's Python side checks
every argument and looks the compiled kernel up from all of them on every call (about
5-10 µs per argument on taichi 1.7.4 on this CPU): the fused step kernel takes some 45
arrays, so at small batches the launch cost more than the physics. A World passes the same
arrays to a kernel every time, so :class:`ReusedLaunch` checks them once, keeps the compiled
kernel and a launch context, and on a call with the same array objects only writes the
arguments into that context (the launcher rewrites array entries when it launches, so they
are set anew each time) and launches. Any other call (new arrays, torch tensors) goes
through Taichi's own path, which compiles and type-checks, and the kept state is rebuilt.

The public fallback is Taichi's own call, every time. It is taken where the internals are
not the ones this module knows (another Taichi than 1.7.4's layout, checked once per
process by :func:`fast_path_available`), on CUDA (Taichi's CUDA launcher points the
context's argument buffer at a device copy that it frees after the launch, so a CUDA
context cannot be launched twice), and with ``TAIGYM_LAUNCH=plain`` in the environment.
"""

import os

import numpy as np

from ._taichi import ti

_fast_path = None  # None until probed, then False or the internals the fast path uses


def fast_path_available() -> bool:
    """Whether launches can skip Taichi's argument setup in this process."""
    global _fast_path
    if _fast_path is None:
        _fast_path = os.environ.get("TAIGYM_LAUNCH", "reuse") != "plain" and _internals()
    return bool(_fast_path)


def _give_up_fast_path():
    global _fast_path
    _fast_path = False


def _internals():
    # the private modules the fast path needs, or False where this Taichi lays them out otherwise
    try:
        from importlib import import_module

        impl = import_module(ti.__name__ + ".lang.impl")
        ndarray_type = import_module(ti.__name__ + ".types.ndarray_type")
        primitive_types = import_module(ti.__name__ + ".types.primitive_types")
        for owner, name in ((impl, "get_runtime"), (ndarray_type, "NdarrayType"),
                            (primitive_types, "type_ids"), (primitive_types, "real_type_ids")):
            getattr(owner, name)
    except (ImportError, AttributeError):
        return False
    return impl, ndarray_type, primitive_types


class ReusedLaunch:
    """A ``@ti.kernel`` function whose launches on the same arrays skip argument setup.

    Arguments may be Taichi ndarrays, C-contiguous numpy arrays (the same objects each call:
    their address is kept) and Python scalars; a kernel with template arguments, or a call
    with anything else, always takes Taichi's path.
    """

    def __init__(self, kernel):
        self._kernel = kernel
        self._arrays = None  # the array arguments the kept context points at, by position
        self._ctx = self._compiled = self._setters = None

    def __call__(self, *args):
        if self._arrays is not None and len(args) == len(self._arrays) and all(
                kept is None or arg is kept for arg, kept in zip(args, self._arrays)):
            for i, setter in self._setters:
                setter((i,), args[i])
            try:
                self._launch(self._compiled, self._ctx)
                return
            except TypeError:  # this Taichi's launcher takes other arguments: its public path from now on
                _give_up_fast_path()
        self._kernel(*args)
        self._arrays = None
        if fast_path_available():
            try:
                self._keep(args)
            except (AttributeError, TypeError):  # internals other than expected: the public path from now on
                _give_up_fast_path()
                self._arrays = None

    def _keep(self, args):
        impl, ndarray_type, primitive_types = _fast_path
        if impl.current_cfg().arch != ti.cpu:
            return
        primal = self._kernel._primal
        annotations = [a.annotation for a in primal.arguments]
        if any(isinstance(a, ti.template) for a in annotations) or primal.return_type:
            return
        key = primal.ensure_compiled(*args)
        t_kernel = primal.compiled_kernels[key]
        ctx = t_kernel.make_launch_context()
        arrays, setters = [], []
        for i, (arg, ann) in enumerate(zip(args, annotations)):
            if isinstance(arg, ti.Ndarray) and arg.grad is None:
                setters.append((i, _ndarray_setter(ctx)))
                arrays.append(arg)
            elif (isinstance(arg, np.ndarray) and arg.flags.c_contiguous
                  and _scalar_elements(ann, ndarray_type, primitive_types)):
                setters.append((i, _external_setter(ctx)))
                arrays.append(arg)
            elif isinstance(arg, (int, float, np.integer, np.floating)) and id(ann) in primitive_types.type_ids:
                setters.append((i, _scalar_setter(ctx, id(ann) in primitive_types.real_type_ids)))
                arrays.append(None)
            else:
                return  # anything else: Taichi's path every time
        prog = impl.get_runtime().prog
        self._compiled = prog.compile_kernel(prog.config(), prog.get_device_caps(), t_kernel)
        self._launch = prog.launch_kernel
        self._ctx, self._setters, self._arrays = ctx, setters, arrays


def _ndarray_setter(ctx):
    return lambda idx, v: ctx.set_arg_ndarray(idx, v.arr)


def _external_setter(ctx):
    return lambda idx, v: ctx.set_arg_external_array_with_shape(idx, int(v.ctypes.data), v.nbytes, v.shape, 0)


def _scalar_setter(ctx, real):
    if real:
        return lambda idx, v: ctx.set_arg_float(idx, float(v))
    return lambda idx, v: ctx.set_arg_int(idx, int(v))


def _scalar_elements(ann, ndarray_type, primitive_types) -> bool:
    # an external array whose elements are scalars: its shape is the array's own
    return isinstance(ann, ndarray_type.NdarrayType) and (ann.dtype is None or id(ann.dtype) in primitive_types.type_ids)
