"""Launching a Taichi kernel again on the same arrays without redoing its argument setup,
and reading a CPU World's tables in place.

Taichi's Python side checks every argument and looks the compiled kernel up from all of
them on every call (about 5-10 µs per argument on taichi 1.7.4 on this CPU), and binding
an ndarray to a launch costs ~2 µs more: the fused step kernel takes some 45 arrays, so
at small batches the launch cost more than the physics. A World passes the same arrays to
a kernel every time, so :class:`ReusedLaunch` checks them once, keeps the compiled kernel
and a launch context with every array bound by its host address (the CPU launcher
rewrites the entries of arrays bound as Taichi ndarrays when it launches, but leaves those
bound by address as they are), and on a call with the same array objects only writes the
scalar arguments and launches. Any other call (new arrays, torch tensors) goes through
Taichi's own path, which compiles and type-checks, and the kept state is rebuilt.

:func:`host_view` gives a numpy array over a CPU ndarray's memory, so a World reads its
state and writes its controls without a copy kernel (each launch of which costs more
than the copy: a parallel loop wakes Taichi's thread pool).

These are calls the engine makes on its own kernels and arrays, not patches: nothing of
Taichi is replaced. The public fallback is Taichi's own call and copies through kernels,
every time. It is taken where the internals are not the ones this module knows (checked
once per process by :func:`fast_path_available`) and on CUDA (Taichi's CUDA launcher points
the context's argument buffer at a device copy that it frees after the launch, so a CUDA
context cannot be launched twice).
"""

import ctypes

import numpy as np

from ..taichi_import import ti
from .patch import log

_NUMPY_DTYPES = {ti.f32: np.float32, ti.f64: np.float64, ti.i32: np.int32}
_fast_path = None  # None until probed, then False or the internals the fast path uses


def fast_path_available() -> bool:
    """Whether launches can skip Taichi's argument setup in this process."""
    global _fast_path
    if _fast_path is None:
        from .implementations import implementation

        wanted = implementation(ti).LAUNCH_REUSE
        _fast_path = wanted and _internals()
        if wanted and _fast_path is False:
            _log_public_path("its ndarray and primitive types are not where launch reuse looks")
    return bool(_fast_path)


def _give_up_fast_path():
    global _fast_path
    if _fast_path:
        _log_public_path("its launcher or launch context took other arguments")
    _fast_path = False


def _log_public_path(reason: str):
    log.warning("%s %s: %s; kernels launch through Taichi's own path", ti.__name__,
                ".".join(map(str, ti.__version__)), reason)


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
        self._kept_tuple = None  # with_arrays's tuple of the kept arrays
        self._kept_scalars = None  # the scalars the kept context holds

    def __call__(self, *args):
        self._kept_scalars = None  # written below by position: with_arrays writes its own again
        kept = self._arrays
        if kept is not None and len(args) == len(kept) and all(map(_same, args, kept)):
            for i, setter in self._setters:
                setter((i,), args[i])
            try:
                self._launch(self._compiled, self._ctx)
                return
            except TypeError:  # this Taichi's launcher takes other arguments: its public path from now on
                _give_up_fast_path()
        self._kernel(*args)
        self._arrays = self._kept_tuple = None
        if fast_path_available():
            try:
                self._keep(args)
            except (AttributeError, TypeError):  # internals other than expected: the public path from now on
                _give_up_fast_path()
                self._arrays = None

    def with_arrays(self, arrays: tuple, *scalars):
        """Launch on ``arrays`` followed by ``scalars``. Given the same tuple object as the
        last kept launch, only the scalars are written: the caller vouches that the tuple
        holds the same arrays (a World makes it once)."""
        if arrays is self._kept_tuple and self._arrays is not None:
            # the context keeps the scalars it was given: only those that changed are written
            if scalars != self._kept_scalars:
                base = len(arrays)
                for i, setter in self._setters:
                    setter((i,), scalars[i - base])
                self._kept_scalars = scalars
            try:
                self._launch(self._compiled, self._ctx)
                return
            except TypeError:  # this Taichi's launcher takes other arguments: its public path from now on
                _give_up_fast_path()
        self(*arrays, *scalars)
        self._kept_tuple = arrays if self._arrays is not None and all(i >= len(arrays) for i, _ in self._setters) \
            else None
        self._kept_scalars = None  # a context made by that call holds none of them yet

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
            if isinstance(arg, ti.Ndarray) and arg.grad is None and not arg.element_shape:
                # bound once by its host address: the launcher leaves such an entry as it is
                view = host_view(arg)
                if view is None:
                    return
                _bind_external(ctx, i, view)
                arrays.append(arg)
            elif (isinstance(arg, np.ndarray) and arg.flags.c_contiguous
                  and _scalar_elements(ann, ndarray_type, primitive_types)):
                _bind_external(ctx, i, arg)
                arrays.append(arg)
            elif isinstance(arg, (int, float, np.integer, np.floating)) and id(ann) in primitive_types.type_ids:
                setters.append((i, _scalar_setter(ctx, id(ann) in primitive_types.real_type_ids)))
                arrays.append(_ANY)
            else:
                return  # anything else: Taichi's path every time
        prog = impl.get_runtime().prog
        self._compiled = prog.compile_kernel(prog.config(), prog.get_device_caps(), t_kernel)
        self._launch = prog.launch_kernel
        self._ctx, self._setters, self._arrays = ctx, setters, arrays


def _bind_external(ctx, i, array):
    ctx.set_arg_external_array_with_shape((i,), int(array.ctypes.data), array.nbytes, array.shape, 0)


_ANY = object()  # a scalar argument's place: any value is written anew


def _same(arg, kept) -> bool:
    return kept is _ANY or arg is kept


def host_view(table):
    """A numpy array over a CPU Taichi ndarray's own memory (reads and writes reach the
    ndarray at once), or None where this Taichi or this device says to copy through
    kernels instead."""
    if table.element_shape:
        return None
    try:
        from importlib import import_module

        impl = import_module(ti.__name__ + ".lang.impl")
        if impl.current_cfg().arch != ti.cpu:
            return None
        address = impl.get_runtime().prog.get_ndarray_data_ptr_as_int(table.arr)
    except (ImportError, AttributeError, TypeError):
        return None
    dtype = np.dtype(_NUMPY_DTYPES[table.dtype])
    size = int(np.prod(table.shape)) * dtype.itemsize
    buffer = (ctypes.c_char * size).from_address(address)
    buffer.owner = table  # the view keeps the memory it points at: a view kept past its World stays valid
    return np.frombuffer(buffer, dtype=dtype).reshape(table.shape)


def upload(arr: np.ndarray, dtype):
    """A new Taichi ndarray holding ``arr``. On the CPU it is written through its numpy view
    (host_view): Taichi's from_numpy launches a copy kernel, ~2 ms a table at start-up."""
    nd = ti.ndarray(dtype, arr.shape)
    view = host_view(nd)
    if view is None:
        nd.from_numpy(arr)
    else:
        view[...] = arr
    return nd


def _scalar_setter(ctx, real):
    if real:
        return lambda idx, v: ctx.set_arg_float(idx, float(v))
    return lambda idx, v: ctx.set_arg_int(idx, int(v))


def _scalar_elements(ann, ndarray_type, primitive_types) -> bool:
    # an external array whose elements are scalars: its shape is the array's own
    return isinstance(ann, ndarray_type.NdarrayType) and (ann.dtype is None or id(ann.dtype) in primitive_types.type_ids)


def kernel_profiler_records() -> list:
    """(task name, milliseconds) of each launch Taichi's kernel profiler has recorded since
    it was last cleared (``ti.init(kernel_profiler=True)``): one record per offloaded task
    on CUDA. The public profiler prints these; the list is kept by its program object."""
    from importlib import import_module

    prog = import_module(ti.__name__ + ".lang.impl").get_runtime().prog
    # on CUDA a record's time is 0 until the stream is synced and the profiler has read its
    # events' elapsed times (what Taichi's own profiler does before it reads the records)
    prog.sync_kernel_profiler()
    prog.update_kernel_profiler()
    records = prog.get_kernel_profiler_records()
    return [(r.name, r.kernel_time) for r in records]
