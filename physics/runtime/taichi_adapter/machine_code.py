"""Machine code for a serial CPU kernel, kept beside Taichi's cache, and its launch.

In every process taichi 1.7.4 traces a kernel's Python to find its offline-cache entry
(~0.6 s for the step kernel) and generates machine code from the cached LLVM IR
(~0.7-1 s): most of a warm start. A kernel that loops in the calling thread (a serial
World: one env or a few) needs nothing of Taichi's runtime to run. Its one task reads its
arguments from the launch context's argument buffer, and the first root of the field
trees only for the scalar loops' field, which holds zeros and is never written (loops.py).

So once a process has compiled or loaded such a kernel, :func:`build_later` takes its
LLVM module through Taichi's AOT module builder and, in a background
thread, generates machine code from it with llvmlite: the same LLVM release as Taichi's
(15.0.x) with the options of Taichi's CPU JIT (the host's CPU and features, code
generation at LLVM's default level, default target options), so the code computes the
same bits. It keeps the object and the argument layout under
``<Taichi cache>/taigym/machine/``, named by a key that covers what decides the code (the
engine's source, the Taichi and llvmlite releases, the kernel variant, the settings, the
host CPU). A later process with that key :func:`load` s the object (~1 ms) and launches
the task through ctypes (:class:`MachineCodeLaunch`): no tracing, no code generation, and
no launcher overhead (~20 us of a taichi launch).

What it relies on is checked when the module is taken, and the kernel is left to Taichi
where a check fails (one line on the ``taigym`` logger): one task function; calls only to
LLVM's intrinsics and the C math library; the runtime read only for its first root; an
argument struct with one member per kernel parameter, each laid out as its annotation
says. The path is taken on Linux x86-64 with taichi 1.7.4, not in Taichi's debug mode
(its bounds checks call the runtime).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import re
import sys
import tempfile
import threading
from pathlib import Path

from ... import settings as _settings
from ..taichi_import import VERSION, current_cfg, ti
from .patch import Unsupported, log

FORMAT = 1  # of the files kept; a change makes every key new
_LLVM_MAJOR = 15  # taichi 1.7.4's LLVM
# what a task may call besides LLVM's intrinsics: the C math library and memory functions
_LIBRARY_CALLS = frozenset(
    f + suffix for f in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "sin", "cos",
                         "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                         "floor", "ceil", "round", "trunc", "fmod", "hypot", "erf", "erfc")
    for suffix in ("", "f")) | {"memset", "memcpy", "memmove"}
_ROOTS_FIELD = 7  # LLVMRuntime::roots, the field trees' root buffers (taichi 1.7.4's runtime.cpp)
_ROOT_BYTES = 4096  # the zeros the first root stands for
_DTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double}

_building: set[str] = set()  # keys whose object this process has built or is building
_threads: list[threading.Thread] = []
_loaded: dict[str, MachineCode] = {}  # keys loaded in this process: their engines stay alive


class RuntimeContext(ctypes.Structure):
    """taichi 1.7.4's RuntimeContext, as the task reads it."""
    _fields_ = [("arg_buffer", ctypes.c_void_p), ("runtime", ctypes.c_void_p), ("cpu_thread_id", ctypes.c_int32),
                ("result_buffer", ctypes.c_void_p)]


def available(serial: bool) -> bool:
    """Whether a World's step kernel may run from kept machine code in this process."""
    from .implementations import implementation

    if not (serial and implementation(ti).MACHINE_CODE):
        return False
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    cfg = current_cfg()
    if cfg.arch != ti.cpu or cfg.debug or cfg.check_out_of_bound:
        return False
    return _code_generator_matches()


@functools.lru_cache(maxsize=1)
def _code_generator_matches() -> bool:
    # llvmlite generating the code with taichi 1.7.4's LLVM release (15): another reads
    # the IR otherwise, or not at all
    if importlib.util.find_spec("llvmlite") is None:
        return False
    return _llvm().llvm_version_info[0] == _LLVM_MAJOR


def key(variant_key: str) -> str:
    """The name of the files kept for a kernel variant (kernel_cache.variant_key): the
    variant, the settings that shape its trace, Taichi's compile options and the code
    generator's release and target."""
    llvm = _llvm()
    cfg = current_cfg()
    options = [f"{name}={getattr(cfg, name)}" for name in ("fast_math", "advanced_optimization", "cfg_optimization",
                                                           "default_fp", "default_ip", "opt_level")]
    text = "|".join(map(str, (FORMAT, variant_key, VERSION, options, _settings.current(),
                              _llvmlite_version(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def folder() -> Path:
    return Path(current_cfg().offline_cache_file_path) / "taigym" / "machine"


class MachineCode:
    """A task's machine code in this process, with its argument layout."""

    def __init__(self, address: int, layout: dict, engine):
        self.function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self.layout, self._engine = layout, engine  # the engine (and its context) own the code's memory

    def launcher(self, kernel) -> MachineCodeLaunch | None:
        """A launch of this code for ``kernel``, or None where the layout kept is not its."""
        if self.layout["params"] != _parameters(kernel):
            return None
        return MachineCodeLaunch(self)


def load(machine_key: str) -> MachineCode | None:
    """The machine code kept under ``machine_key``, or None where there is none (or it
    cannot be read: it is then built again)."""
    if machine_key in _loaded:
        return _loaded[machine_key]
    base = folder() / machine_key
    try:
        layout = json.loads(base.with_suffix(".json").read_text())
        obj = base.with_suffix(".o").read_bytes()
    except (OSError, ValueError):
        return None
    if layout.get("format") != FORMAT or hashlib.sha256(obj).hexdigest() != layout.get("sha256"):
        return None
    llvm = _llvm()
    try:
        context = llvm.create_context()  # LLVM's contexts are not shared between threads
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly("", context), _target_machine(llvm))
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        address = engine.get_function_address(layout["task"])
    except RuntimeError as error:
        log.warning("taigym could not load the machine code kept in %s (%s); the kernel is compiled again", base, error)
        return None
    if not address:
        return None
    _loaded[machine_key] = code = MachineCode(address, layout, (context, engine))
    return code


def build_later(machine_key: str, kernel) -> threading.Thread | None:
    """Take ``kernel``'s LLVM module now (compiled or loaded by Taichi in this process) and
    generate and keep its machine code in a background thread, which is returned."""
    if machine_key in _building:
        return None
    _building.add(machine_key)
    try:
        ir = _exported_ir(kernel)
    except Exception as error:  # noqa: BLE001 -- any failure leaves the kernel to Taichi, said once
        log.warning("taigym could not export the step kernel's LLVM module (%s: %s); it stays with Taichi's launcher",
                    type(error).__name__, error)
        return None
    params = _parameters(kernel)
    target = folder()
    thread = threading.Thread(target=_build, args=(machine_key, ir, params, target), name="taigym-machine-code")
    thread.start()
    _threads.append(thread)
    return thread


def wait() -> None:
    """Wait until the machine code this process is building is kept."""
    while _threads:
        _threads.pop().join()


class MachineCodeLaunch:
    """Launches of kept machine code with ReusedLaunch's calls: ``launch(*args)`` and
    ``with_arrays(arrays, *scalars)``. Arrays are CPU Taichi ndarrays or C-contiguous
    numpy arrays; each gets its shape and address written into the argument buffer when
    the tuple handed over changes, and the scalars when they do."""

    def __init__(self, code: MachineCode):
        self._code = code
        layout = code.layout
        self._buffer = (ctypes.c_char * layout["args_size"])()
        self._runtime = (ctypes.c_char * layout["runtime_size"])()
        self._root = (ctypes.c_char * _ROOT_BYTES)()
        ctypes.c_void_p.from_buffer(self._runtime, layout["roots_offset"]).value = ctypes.addressof(self._root)
        self._result = (ctypes.c_int64 * 8)()
        self._context = RuntimeContext(ctypes.addressof(self._buffer), ctypes.addressof(self._runtime), 0,
                                       ctypes.addressof(self._result))
        self._address = ctypes.addressof(self._context)
        self._arrays = [p for p in layout["laid"] if p["kind"] == "array"]
        self._scalars = [_DTYPES[p["dtype"]].from_buffer(self._buffer, p["offset"]) for p in layout["laid"]
                         if p["kind"] == "scalar"]
        self._kept_tuple = self._kept_scalars = None
        self._pointer = _pointer_of()

    def __call__(self, *args):
        n = len(self._arrays)
        self._kept_tuple = None
        self._write_arrays(args[:n])
        self._write_scalars(args[n:])
        self._code.function(self._address)

    def with_arrays(self, arrays: tuple, *scalars):
        if arrays is not self._kept_tuple:
            self._write_arrays(arrays)
            self._kept_tuple = arrays
        if scalars != self._kept_scalars:
            self._write_scalars(scalars)
        self._code.function(self._address)

    def _write_arrays(self, arrays):
        if len(arrays) != len(self._arrays):
            raise TypeError(f"the kernel takes {len(self._arrays)} arrays, got {len(arrays)}")
        for p, array in zip(self._arrays, arrays):
            shape = tuple(array.shape)
            if len(shape) != p["ndim"]:
                raise TypeError(f"an array of {p['ndim']} dimensions was expected, got shape {shape}")
            for d, extent in enumerate(shape):
                ctypes.c_int32.from_buffer(self._buffer, p["offset"] + 4 * d).value = extent
            ctypes.c_void_p.from_buffer(self._buffer, p["pointer_offset"]).value = self._pointer(array, p["dtype"])
        self._kept_scalars = None

    def _write_scalars(self, scalars):
        if len(scalars) != len(self._scalars):
            raise TypeError(f"the kernel takes {len(self._scalars)} scalars, got {len(scalars)}")
        for slot, value in zip(self._scalars, scalars):
            slot.value = value
        self._kept_scalars = scalars


# --- what the launch relies on -------------------------------------------------------------


def _pointer_of():
    import numpy as np

    prog = ti.lang.impl.get_runtime().prog
    dtypes = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}

    def pointer(array, dtype: str) -> int:
        if isinstance(array, ti.Ndarray):
            if array.element_shape or _dtype_name(array.dtype) != dtype:
                raise TypeError(f"an ndarray of scalar {dtype} elements was expected, got {array.dtype}")
            return prog.get_ndarray_data_ptr_as_int(array.arr)
        if isinstance(array, np.ndarray) and array.flags.c_contiguous and array.dtype == dtypes[dtype]:
            return array.ctypes.data
        raise TypeError(f"a CPU Taichi ndarray or C-contiguous numpy array of {dtype} was expected, "
                        f"got {type(array).__name__}")

    return pointer


def _dtype_name(dtype) -> str | None:
    for name in _DTYPES:
        if dtype == getattr(ti, name):
            return name
    return None


def _parameters(kernel) -> list[dict]:
    """The kernel's parameters as the layout names them: arrays (rank, element type) and
    scalars (type), in order."""
    params = []
    for p in inspect.signature(kernel).parameters.values():
        ann = p.annotation
        if isinstance(ann, ti.types.ndarray_type.NdarrayType):
            dtype = _dtype_name(ann.dtype)
            if dtype is None or ann.ndim is None or ann.needs_grad:
                raise Unsupported(f"parameter {p.name!r} is not a typed ndarray of scalars")
            params.append({"kind": "array", "ndim": int(ann.ndim), "dtype": dtype})
        else:
            dtype = _dtype_name(ann)
            if dtype is None:
                raise Unsupported(f"parameter {p.name!r} is neither a typed ndarray nor a 32/64-bit scalar")
            params.append({"kind": "scalar", "dtype": dtype})
    return params


def _exported_ir(kernel) -> str:
    # Taichi's AOT module builder writes a compiled kernel's LLVM module as Taichi compiled
    # it, the module its JIT turns into machine code. Its builder is used directly:
    # ti.aot.Module would finalize the root field builder, a user's fields' (and only once)
    primal = kernel._primal
    compiled = list(primal.compiled_kernels.values())
    if len(compiled) != 1:
        raise Unsupported(f"the kernel has {len(compiled)} compiled instances, not one")
    builder = ti.lang.impl.get_runtime().prog.make_aot_module_builder(ti.cpu, [])
    builder.add("task", compiled[0])
    with tempfile.TemporaryDirectory(prefix="taigym-aot-") as folder_:
        builder.dump(folder_, "")
        return Path(folder_, "task.ll").read_text()


def _build(machine_key: str, ir: str, params: list[dict], target: Path) -> None:
    try:
        llvm = _llvm()
        module = llvm.parse_assembly(ir, llvm.create_context())  # a context of the thread's own
        task, layout = _checked(llvm, module, ir, params)
        obj = _target_machine(llvm).emit_object(module)
    except Unsupported as reason:
        log.warning("taigym keeps no machine code for this kernel (%s); it stays with Taichi's launcher", reason)
        return
    except RuntimeError as error:  # llvmlite's errors: an IR or target it cannot handle
        log.warning("taigym could not generate machine code for this kernel (%s)", error)
        return
    layout.update(format=FORMAT, task=task, sha256=hashlib.sha256(obj).hexdigest(), llvm=".".join(
        map(str, llvm.llvm_version_info)), taichi=VERSION)
    try:
        target.mkdir(parents=True, exist_ok=True)
        _write(target / f"{machine_key}.o", obj)
        _write(target / f"{machine_key}.json", json.dumps(layout).encode())  # last: load reads it first
    except OSError:
        pass  # a cache folder that cannot be written: Taichi's launcher again next time


def _write(path: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(temporary, path)


_RUNTIME_TYPE = re.compile(r"%struct\.LLVMRuntime(?:\.\d+)?\b")
_RUNTIME_FIELD = re.compile(r"getelementptr inbounds (%struct\.LLVMRuntime(?:\.\d+)?), \1\* %[\w.]+, i64 0, i32 (\d+)"
                            r"(?:, i64 (\d+))?$")
# the other lines that may name the runtime: its pointer loaded from a context, stored into
# an outlined function's context, or merged (phi, select)
_RUNTIME_POINTER = re.compile(r"= load (%struct\.LLVMRuntime(?:\.\d+)?)\*, \1\*\* %[\w.]+, align 8$|"
                              r"^store (%struct\.LLVMRuntime(?:\.\d+)?)\* %[\w.]+, \2\*\* %[\w.]+, align 8$|"
                              r"= (phi|select) ")


def _checked(llvm, module, ir: str, params: list[dict]) -> tuple[str, dict]:
    """The task's name and argument layout, where the module does only what the launch
    provides for; Unsupported otherwise."""
    tasks = [f.name for f in module.functions if not f.is_declaration and f.linkage == llvm.Linkage.external]
    if len(tasks) != 1:
        raise Unsupported(f"the module defines {len(tasks)} task functions, not one")
    calls = sorted(f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")
                   and f.name not in _LIBRARY_CALLS)
    if calls:
        raise Unsupported(f"the kernel calls {', '.join(calls[:5])}, which only Taichi's runtime provides")
    for line in ir.splitlines():
        line = line.strip()
        if not _RUNTIME_TYPE.search(line) or line.startswith("%struct.") or line.startswith(("define", "declare")):
            continue
        field = _RUNTIME_FIELD.search(line)
        if field:
            if int(field.group(2)) != _ROOTS_FIELD or (field.group(3) or "0") != "0":
                raise Unsupported(f"the kernel reads its runtime's field {field.group(2)}, not only the first root")
        elif not _RUNTIME_POINTER.search(line):
            raise Unsupported(f"the kernel uses its runtime otherwise than the launch provides for: {line[:120]}")
    return tasks[0], _layout(llvm, module, ir, params)


_ARGUMENTS = re.compile(r"bitcast %struct\.RuntimeContext(?:\.\d+)?\* %context to (\{.*\})\*\*")


def _layout(llvm, module, ir: str, params: list[dict]) -> dict:
    """Each parameter's place in the argument buffer, from the argument struct the task
    reads (LLVM's layout of it), checked against the kernel's parameters."""
    found = _ARGUMENTS.search(ir)
    if not found:
        raise Unsupported("the task reads no argument struct from its context")
    runtime_name = next((t.name for t in module.struct_types if t.name.startswith("struct.LLVMRuntime")), None)
    if runtime_name is None:
        raise Unsupported("the module names no runtime struct")
    # a context of its own: a context's named types outlive their module (a second %args
    # would be renamed)
    types = llvm.parse_assembly(f'target datalayout = "{module.data_layout}"\n%args = type {found.group(1)}\n'
                                f"@args = external global %args\n", llvm.create_context())
    data = llvm.create_target_data(module.data_layout)
    struct = types.get_struct_type("args")
    members = list(struct.elements)
    if len(members) != len(params):
        raise Unsupported(f"the argument struct has {len(members)} members for {len(params)} parameters")
    scalars = {"i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
    laid = []
    for i, (member, p) in enumerate(zip(members, params)):
        offset = data.get_element_offset(struct, i)
        if p["kind"] == "scalar":
            if str(member) != scalars[p["dtype"]]:
                raise Unsupported(f"argument {i} is {member}, not a {p['dtype']}")
            laid.append(dict(p, offset=offset))
            continue
        expected = "{ { " + ", ".join(["i32"] * p["ndim"]) + " }, " + scalars[p["dtype"]] + "* }"
        if str(member) != expected:
            raise Unsupported(f"argument {i} is {member}, not {expected}")
        laid.append(dict(p, offset=offset, pointer_offset=offset + data.get_element_offset(member, 1)))
    runtime = module.get_struct_type(runtime_name)
    return {"laid": laid, "params": params, "args_size": data.get_abi_size(struct),
            "runtime_size": data.get_abi_size(runtime), "roots_offset": data.get_element_offset(runtime, _ROOTS_FIELD)}


def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def _llvmlite_version() -> str:
    import llvmlite

    return llvmlite.__version__


def _target_machine(llvm):
    # Taichi's CPU JIT (an ORC JITTargetMachineBuilder detecting the host): the host's CPU
    # and features, LLVM's default code generation level, default target options
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=2, reloc="default", codemodel="jitdefault", jit=True)
