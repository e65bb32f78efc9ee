"""Launching a Taichi kernel again on the same arrays without redoing its argument setup,
and reading a CPU World's tables in place.

This is the one module that reaches into Taichi's internals. Taichi's Python side checks
every argument and looks the compiled kernel up from all of them on every call (about
5-10 µs per argument on taichi 1.7.4 on this CPU), and binding an ndarray to a launch
costs ~2 µs more: the fused step kernel takes some 45 arrays, so at small batches the
launch cost more than the physics. A World passes the same arrays to a kernel every
time, so :class:`ReusedLaunch` checks them once, keeps the compiled kernel and a launch
context with every array bound by its host address (the CPU launcher rewrites the
entries of arrays bound as Taichi ndarrays when it launches, but leaves those bound by
address as they are), and on a call with the same array objects only writes the scalar
arguments and launches. Any other call (new arrays, torch tensors) goes through
Taichi's own path, which compiles and type-checks, and the kept state is rebuilt.

:func:`lighten_tracing` trims what Taichi records for error messages while it traces a
kernel, most of a warm start's tracing time.

:func:`host_view` gives a numpy array over a CPU ndarray's memory, so a World reads its
state and writes its controls without a copy kernel (each launch of which costs more
than the copy: a parallel loop wakes Taichi's thread pool).

`calls_inside_real_functions` lets a ``@ti.real_func`` call inlined ``@ti.func``s, which
the step kernel's outlined stages need (physics/step/outline.py).

:func:`scalar_loops` gives the loops of the step kernel's functions a second exit, so
that LLVM neither vectorizes nor unrolls them: a third less code to compile.

:func:`traced_access` lets the table accessors (physics/access.py) be expanded in place
while a kernel is traced, instead of being traced as functions at each of their ~900 call
sites in a step kernel; :func:`expand_matrix_math` does the same for Taichi's small vector
and matrix operations in the kernels :func:`expanded_math_in` marks.

The public fallback is Taichi's own call and copies through kernels, every time. It is
taken where the internals are not the ones this module knows (another Taichi than
1.7.4's layout, checked once per process by :func:`fast_path_available`), on CUDA
(Taichi's CUDA launcher points the context's argument buffer at a device copy that it
frees after the launch, so a CUDA context cannot be launched twice), and with
``TAIGYM_LAUNCH=plain`` in the environment.
"""

import ctypes

import numpy as np

from .. import settings as _settings
from ..runtime.backend import ti

_NUMPY_DTYPES = {ti.f32: np.float32, ti.f64: np.float64, ti.i32: np.int32}
_fast_path = None  # None until probed, then False or the internals the fast path uses


def fast_path_available() -> bool:
    """Whether launches can skip Taichi's argument setup in this process."""
    global _fast_path
    if _fast_path is None:
        _fast_path = not _settings.current().plain and _internals()
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


def lighten_tracing() -> bool:
    """Make Taichi's kernel tracing cheaper where it can be: for every syntax node it traces,
    Taichi 1.7.4 formats a source excerpt with a caret line, re-wrapped to 80 columns, to
    keep beside the node for error messages; on the step kernel's ~100,000 nodes that was a
    quarter of a warm start (~2.5 s). The excerpt becomes the file, line, function and
    source line, which names the same place. The offline cache's keys do not include it, so
    compiled kernels stay valid. Returns whether it applied (not with TAIGYM_LAUNCH=plain or
    where Taichi lays its tracer out otherwise)."""
    if _settings.current().plain:
        return False
    try:
        from importlib import import_module

        context = import_module(ti.__name__ + ".lang.ast.ast_transformer_utils").ASTTransformerContext
        context.get_pos_info  # noqa: B018  (present where the tracer is the one this knows)
    except (ImportError, AttributeError):
        return False
    if getattr(context.get_pos_info, "taigym", False):
        return True

    def get_pos_info(self, node):
        line = self.src[node.lineno - 1] if 0 < node.lineno <= len(self.src) else ""
        return f'File "{self.file}", line {node.lineno + self.lineno_offset}, in {self.func.func.__name__}:\n{line}\n'

    get_pos_info.taigym = True
    context.get_pos_info = get_pos_info
    _read_sources_once()
    _parse_each_function_once()
    _look_at_each_decorator_once()
    return True


def _parse_each_function_once() -> bool:
    """Taichi parses an inlined ``@ti.func``'s source anew at each of its call sites (~300 in
    a step kernel, ~0.04 s of a warm start). Tracing only reads a function's syntax tree
    (it notes each node's value on the node, and a later trace writes them again; the one
    note it looks for rather than writes, a method call's vector, is cleared), so a tree
    whose trace has ended is handed to the function's next call in the same kernel
    instead (the trees go when the kernel's trace ends: they hold every expression it
    noted, which would otherwise live, and be walked by every collection, until exit;
    that cost a start ~0.05 s at exit). A tree is lent to one trace at a time: a call made while the same source is being traced (a
    function that reaches itself through a real function) gets a tree of its own. Kernels
    and real functions, which Taichi edits while compiling, are parsed as before. Returns
    whether it applied (where Taichi's tracer parses and transforms through these names)."""
    import ast as python_ast
    import threading
    import types
    from importlib import import_module

    try:
        tracer = import_module(ti.__name__ + ".lang.kernel_impl")
        tree_and_ctx, transform_tree = tracer._get_tree_and_ctx, tracer.transform_tree
        tracer.ast.parse  # noqa: B018
    except (ImportError, AttributeError):
        return False
    if getattr(tree_and_ctx, "taigym", False):
        return True
    free = {}  # source -> its trees no trace holds, each with its method calls' callees
    lent = {}  # id(tree) -> (source, tree, callees), for the trees traces hold
    state = threading.local()

    def parse(source, *args, **kwargs):
        if args or kwargs or not getattr(state, "inlined", False):
            return python_ast.parse(source, *args, **kwargs)
        trees = free.get(source)
        if trees:
            tree, callees = trees.pop()
            for callee in callees:
                # Taichi marks a method call on a traced vector with the vector and looks
                # for the mark with hasattr; the call may be on a Python-side vector now
                callee.__dict__.pop("caller", None)
        else:
            tree = python_ast.parse(source)
            callees = [n.func for n in python_ast.walk(tree)
                       if isinstance(n, python_ast.Call) and isinstance(n.func, python_ast.Attribute)]
        lent[id(tree)] = (source, tree, callees)
        return tree

    def _get_tree_and_ctx(self, *args, **kwargs):
        inlined = not kwargs.get("is_kernel", True) and not kwargs.get("is_real_function", False) and not args
        state.inlined = inlined
        try:
            return tree_and_ctx(self, *args, **kwargs)
        finally:
            state.inlined = False

    def _transform_tree(tree, ctx):
        state.depth = getattr(state, "depth", 0) + 1
        try:
            result = transform_tree(tree, ctx)  # a trace that fails keeps its tree
        finally:
            state.depth -= 1
            if state.depth == 0:
                # the kernel's trace is over: its trees hold every expression it noted,
                # which would otherwise live (and be walked by each collection) until exit
                free.clear()
                lent.clear()
        source, _, callees = lent.pop(id(tree), (None, None, None))
        if source is not None:
            free.setdefault(source, []).append((tree, callees))
        return result

    _get_tree_and_ctx.taigym = True
    names = {name: getattr(python_ast, name) for name in dir(python_ast) if not name.startswith("__")}
    tracer.ast = types.SimpleNamespace(**{**names, "parse": parse})
    tracer._get_tree_and_ctx = _get_tree_and_ctx
    tracer.transform_tree = _transform_tree
    return True


def calls_inside_real_functions() -> bool:
    """Taichi 1.7.4 traces an inlined ``@ti.func`` into the kernel's syntax tree even where
    it is called from a ``@ti.real_func``'s body, whose statements belong to the function:
    LLVM then fails on the misplaced array accesses. Traced into the callable being
    compiled instead, a real function may call inlined functions like a kernel does.
    Returns whether it applied (taichi 1.7.4's tracer; not with TAIGYM_LAUNCH=plain), and
    so whether the step kernel may outline its stages."""
    if _settings.current().plain:
        return False
    from importlib import import_module

    try:
        tracer = import_module(ti.__name__ + ".lang.kernel_impl")
        impl = import_module(ti.__name__ + ".lang.impl")
        call = tracer.Func.__call__
        tracer._process_args, tracer._get_tree_and_ctx, tracer.transform_tree  # noqa: B018
        impl.get_runtime().compiling_callable  # noqa: B018
    except (ImportError, AttributeError):
        return False
    if ti.__name__ != "taichi" or getattr(call, "taigym", False):
        return getattr(call, "taigym", False)

    def __call__(self, *args, **kwargs):
        runtime = impl.get_runtime()
        if self.is_real_function or not impl.inside_kernel() or runtime.compiling_callable is None:
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
    return True


def _look_at_each_decorator_once() -> bool:
    """Each ``@ti.func`` Taichi decorates reads the source line of the frame that applies the
    decorator, to see whether it sits in a class (``inspect.getframeinfo``: ~0.3 ms a call).
    The answer is fixed by that frame's code and instruction, and the table accessors
    (physics/access.py) are all decorated at a dozen such places, so it is computed once a
    place. Returns whether it applied."""
    import sys
    from importlib import import_module

    try:
        decorators = import_module(ti.__name__ + ".lang.kernel_impl")
        inside_class = decorators._inside_class
    except (ImportError, AttributeError):
        return False
    if getattr(inside_class, "taigym", False):
        return True
    answers = {}

    def _inside_class(level_of_class_stackframe):
        try:
            frame = sys._getframe(level_of_class_stackframe)
        except ValueError:
            return inside_class(level_of_class_stackframe + 1)
        place = (frame.f_code, frame.f_lasti)
        if place not in answers:
            answers[place] = inside_class(level_of_class_stackframe + 1)  # + 1: this frame
        return answers[place]

    _inside_class.taigym = True
    decorators._inside_class = _inside_class
    return True


def _read_sources_once() -> bool:
    """Taichi inlines a ``@ti.func`` at every call site, and at every one it reads the
    function's source file again (``inspect.getsourcelines`` tokenizes the whole file) and
    re-wraps and dedents each of its lines: the step kernel's ~1,500 call sites spent about
    a third of a warm start's tracing there. The text of a function does not change while
    the process runs, so it is read and reformatted once per function (once per code
    object: the functions one factory makes share it), and the lines are kept between
    processes (source_cache.py). Returns whether it applied (where
    Taichi's tracer reads sources through these names)."""
    import functools
    import textwrap
    import types
    from importlib import import_module

    from .source_cache import source_lines

    try:
        tracer = import_module(ti.__name__ + ".lang.kernel_impl")
        read_lines, read_file = tracer.getsourcelines, tracer.getsourcefile
        tracer.textwrap.fill, tracer.textwrap.dedent  # noqa: B018  (the reformatting it does)
    except (ImportError, AttributeError):
        return False
    if getattr(read_lines, "taigym", False):
        return True
    # keyed by the function's code: functions made by one factory (the table accessors of
    # physics/access.py, one set per column) share their source
    lines_of, file_of = {}, {}

    def getsourcelines(obj):
        key = getattr(obj, "__code__", obj)
        if key not in lines_of:
            lines_of[key] = source_lines(obj, read_lines)  # kept between processes too
        lines, start = lines_of[key]
        return list(lines), start  # a copy: the tracer may edit the list it is given

    def getsourcefile(obj):
        key = getattr(obj, "__code__", obj)
        if key not in file_of:
            file_of[key] = read_file(obj)
        return file_of[key]

    getsourcelines.taigym = True
    tracer.getsourcelines = getsourcelines
    tracer.getsourcefile = getsourcefile
    tracer.textwrap = types.SimpleNamespace(fill=functools.lru_cache(maxsize=None)(fill_source_line),
                                            dedent=functools.lru_cache(maxsize=None)(textwrap.dedent))
    return True


def fill_source_line(line: str, tabsize: int = 4, width: int = 9999) -> str:
    """``textwrap.fill(line, tabsize=tabsize, width=width)``, which Taichi applies to each line
    of a traced function: for a line shorter than ``width`` whose only whitespace besides
    spaces is its closing newline, that is the line without its trailing spaces and newline
    (~12 µs a line less than textwrap's chunking)."""
    import textwrap

    if len(line) >= width or any(c in line for c in "\t\r\x0b\x0c") or "\n" in line[:-1]:
        return textwrap.fill(line, tabsize=tabsize, width=width)
    return line.rstrip(" \n")


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
    ndarray at once), or None where this Taichi, this device or ``TAIGYM_LAUNCH=plain``
    says to copy through kernels instead."""
    if _settings.current().plain or table.element_shape:
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


# --- loops LLVM leaves as they are -------------------------------------------------------

_NO_INDEX = "__taigym_no_index__"  # the name the added exits read the unreachable index by
_no_index_field = None
_SCALAR_MARK = "__taigym_scalar_loops__"
_VECTOR_MARK = "__taigym_vector_loops__"
_EXIT_NAMES = ("__taigym_loop_mask__", "__taigym_loop_unreachable__")  # a function's locals the exits test


def scalar_loops() -> bool:
    """Whether kernels marked by :func:`scalar_loops_in` compile their loops as scalar loops
    in this process: the CPU backend of taichi 1.7.4, not with ``TAIGYM_SCALAR_LOOPS=0`` or
    ``TAIGYM_LAUNCH=plain``.

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
    if not _settings.current().scalar_loops or _settings.current().plain:
        return False
    return _add_loop_exits()


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
    smooth dynamics ~10% (docs/performance.md)."""
    setattr(function, _VECTOR_MARK, True)
    return function


def _add_loop_exits() -> bool:
    global _no_index_field
    from importlib import import_module

    from ..runtime.backend import current_cfg

    if ti.__name__ != "taichi" or current_cfg().arch != ti.cpu:
        return False
    try:
        tracer = import_module(ti.__name__ + ".lang.ast.ast_transformer")
        transformer, build_stmt = tracer.ASTTransformer, tracer.build_stmt
        impl = import_module(ti.__name__ + ".lang.impl")
        build_range_for, build_while = transformer.build_range_for, transformer.build_While
        build_function_def = transformer.build_FunctionDef
        impl.get_runtime().current_kernel  # noqa: B018
    except (ImportError, AttributeError):
        return False
    if getattr(build_range_for, "taigym", False):
        return True
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
    return True


def _located(tree, node):
    """``tree``, a subtree made here, with every part placed at ``node`` in the source, for
    Taichi's messages (not for parsed parts: they would lose their own places)."""
    import ast

    for part in ast.walk(tree):
        ast.copy_location(part, node)
    return tree


# --- table accessors expanded where they are called ---------------------------------------


def traced_access():
    """The primitives the table accessors are written in when they are expanded in place
    while Taichi traces a kernel (a :class:`TracedAccess`), or None where they stay
    ``@ti.func``s: not with ``TAIGYM_LAUNCH=plain`` or ``TAIGYM_EXPAND_ACCESS=0``, and only
    on taichi 1.7, whose tracer this knows.

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
    if _settings.current().plain or not _settings.current().expand_access:
        return None
    if ti.__name__ != "taichi" or tuple(ti.__version__[:2]) != (1, 7):
        return None
    from importlib import import_module

    try:
        impl = import_module(ti.__name__ + ".lang.impl")
        impl.subscript, impl.expr_init_func, impl.expr_init, impl.Expr, impl.get_runtime  # noqa: B018
    except (ImportError, AttributeError):
        return None
    return TracedAccess(impl)


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
        """Mark ``function`` as called from traced code: Taichi's tracer warns about
        calling any function that does not say it is a Taichi function, and counts a
        true one's prints; this says it is one, and false."""
        function._is_taichi_function = False
        return function

    def _builder(self):
        return self._impl.get_runtime().compiling_callable.ast_builder()


# --- Taichi's vector and matrix operations expanded where they are called -----------------

_MATH_MARK = "__taigym_expanded_math__"


def expanded_math_in(kernel_function):
    """Decorator under ``@ti.kernel``: while the kernel is traced, Taichi's cross and dot
    products, matrix products, sums and norms of small vectors and matrices are expanded
    where they are called (:func:`expand_matrix_math`)."""
    setattr(kernel_function, _MATH_MARK, True)
    return kernel_function


def expand_matrix_math() -> bool:
    """Expand Taichi's ``cross``, ``dot``, ``@``, ``sum``, ``norm_sqr`` and ``norm`` of
    vectors and matrices in kernels marked by :func:`expanded_math_in`. Returns whether it
    applied: with :func:`traced_access`'s switches and tracer.

    Taichi implements them as Taichi functions, traced at every call (a local copy of each
    operand, a local result stored entry by entry): ~3 ms a cross product and ~12 ms a
    3x3 product while tracing, a fifth of the step kernel's tracing time for ~170 calls.
    Expanded, each is the same arithmetic in the same order, built directly from the
    operands' entries (each operand copied to a local once, as the function did); any
    other use (other shapes, Python scope, other kernels) goes to Taichi's own."""
    P = traced_access()
    if P is None:
        return False
    from importlib import import_module

    try:
        ops = import_module(ti.__name__ + ".lang.matrix_ops")
        impl = import_module(ti.__name__ + ".lang.impl")
        sqrt = import_module(ti.__name__ + ".lang.ops").sqrt
        originals = {name: getattr(ops, name) for name in ("cross", "dot", "matmul", "sum", "norm_sqr", "norm")}
        ops.Vector, ops.Matrix, impl.inside_kernel  # noqa: B018
    except (ImportError, AttributeError):
        return False
    if getattr(originals["cross"], "taigym", False):
        return True
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
    return True


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
