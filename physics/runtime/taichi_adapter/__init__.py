"""Everything the engine does inside Taichi, installed from one place.

The engine reaches past Taichi's public API for speed: its own kernels traced more
cheaply (tracing.py), inlined functions called from real functions (real_functions.py),
loops LLVM leaves scalar (loops.py), accessors and small matrix operations expanded in
place (expansion.py) and launches that skip argument setup (launch.py). The patches to
Taichi's modules are installed by :func:`install`, which the runtime calls once when it
starts (physics/runtime/backend.py), from the list for the running implementation
(taichi_174.py, quadrants.py).

Every patch acts on the engine's own kernels and functions only (ownership.py) and hands
anything else to Taichi's original: a user's Taichi code in the same process compiles,
runs and reports its errors as without taigym. Each names what it relies on and is
checked against it at install; where the check fails Taichi is left as it is and one line
is logged on the ``taigym`` logger.
"""

from __future__ import annotations

from .expansion import TracedAccess, expanded_math_in, traced_access, traced_helper, traced_load
from .graphs import graph_kernel, graph_kernels
from .implementations import implementation
from .launch import ReusedLaunch, fast_path_available, host_view, kernel_profiler_records, upload
from .loops import scalar_loops, scalar_loops_in, vector_loops
from .real_functions import calls_inside_real_functions
from .tracing import fill_source_line

__all__ = ["ReusedLaunch", "TracedAccess", "calls_inside_real_functions", "expanded_math_in", "fast_path_available",
           "graph_kernel", "graph_kernels",
           "kernel_profiler_records",
           "fill_source_line", "host_view", "install", "installed", "scalar_loops", "scalar_loops_in",
           "traced_access", "traced_helper", "traced_load", "upload", "vector_loops"]

_installed: dict[str, bool] = {}
_done = False


def install(ti) -> dict[str, bool]:
    """Install the patches for ``ti`` (the imported Taichi, its runtime started) once per
    process. Returns each patch's name and whether it is in place."""
    global _done
    if _done:
        return dict(_installed)
    _done = True
    for patch in implementation(ti).PATCHES:
        _installed[patch.name] = patch.install(ti)
    return dict(_installed)


def installed() -> dict[str, bool]:
    """The patches :func:`install` tried, and whether each is in place."""
    return dict(_installed)
