"""Taichi's one runtime per process, started with the engine's patches to Taichi installed.

Which Taichi (``taichi`` or ``quadrants``) is taichi_import.py's choice, made once per
process; every engine module above the runtime takes ``ti`` from here.
"""

from __future__ import annotations

import atexit
import os

from .. import settings as _settings
from ..errors import WorldError
from . import kernel_cache, taichi_adapter
from .taichi_adapter import thread_pool
from .taichi_import import NAME, TAICHIS, VERSION, current_cfg, default_cfg, ti  # noqa: F401 (re-exported)

_arch = None  # the device the runtime was started on: "cpu" or "cuda"
_init_overrides: dict = {}  # set_init_overrides(): a measurement tool's ti.init settings
# threads per block of the CUDA kernels: one thread steps one env through the fused kernel,
# and on an H200 64 stepped Ant 17% faster than Taichi's 128 at 16,384 envs and 8% at 1,024
# (32: 14% and 17%; 256: 8% slower) -- smaller blocks spread the envs over more SMs
CUDA_BLOCK_DIM = 64


def _probe_cuda() -> bool:
    # a CUDA driver library is the cheapest sign of a usable NVIDIA GPU
    import ctypes.util

    return ctypes.util.find_library("cuda") is not None or os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1")


def ensure_runtime(device: str, switches: _settings.Settings | None = None) -> str:
    """Start Taichi on ``device`` ("cpu", "cuda" or "auto") once, with the engine's
    ``switches`` (default: ``settings.current()``) and any :func:`set_init_overrides`;
    return the device used.

    Taichi runs one backend per process, so asking for another device later is an error
    rather than a silent restart that would invalidate every existing World.
    """
    global _arch
    if device not in ("cpu", "cuda", "auto"):
        raise WorldError(f"device must be 'cpu', 'cuda' or 'auto', got {device!r}")
    if _arch is not None:
        if device != "auto" and device != _arch:
            raise WorldError(
                f"this process already runs Taichi on {_arch!r}; a World on {device!r} needs a new process "
                "(Taichi supports one backend per process)"
            )
        return _arch
    want = device
    if device == "auto":
        want = "cuda" if _probe_cuda() else "cpu"
    if want == "cuda" and not _probe_cuda():
        raise WorldError("device='cuda' was requested but no NVIDIA GPU/driver is available; use 'cpu' or 'auto'")
    switches = switches if switches is not None else _settings.current()
    optimize = want == "cuda"
    init = dict(
        arch=ti.cuda if want == "cuda" else ti.cpu,
        offline_cache=True,
        # Taichi's default cache holds 100 MB and evicts a quarter of it, least recently used,
        # when full; one step kernel variant (precision, solver, cone, convex) takes 5-25 MB,
        # so a machine running a few tasks recompiled kernels it had compiled before
        offline_cache_max_size_of_files=1 << 30,
        # Taichi's own IR passes grow superlinearly on our fused step kernel. The one that
        # pays is the whole-kernel CSE: it loads each array's data pointer once, where LLVM
        # alone reloads it after every store (steps 4-8% faster on CPU, 7% on an H200); it
        # costs about a minute more to compile each step kernel on the CPU and 12 s on CUDA,
        # so CUDA has it and the CPU leaves Taichi's passes off. Its control-flow pass would
        # take minutes more and gains nothing, so it is off with it.
        advanced_optimization=optimize,
        cfg_optimization=not optimize,
        default_fp=ti.f32,
        log_level=ti.WARN,
        check_out_of_bound=switches.debug,
        debug=switches.debug,
    )
    if want == "cuda":
        init["default_gpu_block_dim"] = CUDA_BLOCK_DIM
    before = thread_pool.threads()
    ti.init(**{**init, **_init_overrides})
    kernel_cache.clear_stale_locks()
    atexit.register(kernel_cache.end_program_in_turn, ti.reset)
    # the one place the engine's patches to Taichi are installed; the scalar loops' field is
    # then the process's first (an offline-cache key covers it)
    taichi_adapter.install(ti)
    started = "cuda" if current_cfg().arch == ti.cuda else "cpu"
    if want == "cuda" and started != "cuda":
        raise WorldError("device='cuda' was requested but Taichi could not start its CUDA backend")
    if started == "cpu":
        thread_pool.pin(before, current_cfg().cpu_max_num_threads)
    _arch = started
    return _arch


def set_init_overrides(**overrides) -> None:
    """Extra ``ti.init`` settings for this process's runtime: compile options such as
    ``default_gpu_block_dim``, ``gpu_max_reg`` or ``advanced_optimization``, or
    ``print_kernel_asm``. For the measurement tools (scripts/gpu_probe.py,
    scripts/benchmark.py), each variant in a process of its own, since Taichi reads them
    once: call it before the first World (after it, only the settings it started with are
    accepted)."""
    if _arch is not None:
        if overrides == _init_overrides:
            return  # what the runtime started with
        raise WorldError("the Taichi runtime has started; set its init settings before the first World")
    known = set(dir(default_cfg())) | {"arch", "offline_cache_file_path"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise WorldError(f"ti.init settings {ti.__name__} does not have: {', '.join(unknown)}")
    _init_overrides.clear()
    _init_overrides.update(overrides)


def optimized() -> bool:
    """Whether this process's kernels are compiled with Taichi's whole-kernel
    optimizations (CUDA's default, or an init override)."""
    return bool(current_cfg().advanced_optimization) if _arch is not None else False


def current_device():
    return _arch
