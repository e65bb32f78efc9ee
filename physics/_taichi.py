"""One Taichi runtime per process: which device it runs on, started on first use."""

from __future__ import annotations

import os

import taichi as ti

from .errors import WorldError

_arch = None  # the device the runtime was started on: "cpu" or "cuda"


def _probe_cuda() -> bool:
    # a CUDA driver library is the cheapest sign of a usable NVIDIA GPU
    import ctypes.util

    return ctypes.util.find_library("cuda") is not None or os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1")


def ensure_runtime(device: str) -> str:
    """Start Taichi on ``device`` ("cpu", "cuda" or "auto") once; return the device used.

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
    ti.init(
        arch=ti.cuda if want == "cuda" else ti.cpu,
        offline_cache=True,
        # Taichi's own IR passes grow superlinearly on our fused step kernel (22 s vs 4 s
        # to compile humanoid's forward) and LLVM's passes make the same code anyway.
        advanced_optimization=False,
        default_fp=ti.f32,
        log_level=ti.WARN,
        check_out_of_bound=bool(int(os.environ.get("TAIGYM_DEBUG", "0"))),
        debug=bool(int(os.environ.get("TAIGYM_DEBUG", "0"))),
    )
    started = "cuda" if ti.lang.impl.current_cfg().arch == ti.cuda else "cpu"
    if want == "cuda" and started != "cuda":
        raise WorldError("device='cuda' was requested but Taichi could not start its CUDA backend")
    _arch = started
    return _arch


def current_device():
    return _arch
