"""Kernels launched as one graph, where the Taichi in use makes them (quadrants).

A staged launch is a few dozen top-level loops per forward() pass, repeated for each pass
and each step. Launched one kernel per pass from Python, a GPU waits on the host between
them. quadrants captures a ``graph=True`` kernel's loops as one CUDA graph, replayed at
each launch, and runs its ``ti.graph.do_while`` loops on the device (SM 9.0 and later;
its host runs them elsewhere, the CPU backend included): a launch of n steps is then one
call. taichi 1.7.4 has neither, so there the staged schedule launches its parts.
"""

from __future__ import annotations

from ..taichi_import import ti
from .implementations import implementation


def graph_kernels() -> bool:
    """Whether this Taichi compiles ``graph=True`` kernels with device-side do-while loops."""
    return implementation(ti).GRAPHS and hasattr(getattr(ti, "graph", None), "do_while")


def graph_kernel(function):
    """``function`` as a kernel whose loops launch as one graph (:func:`graph_kernels` holds)."""
    return ti.kernel(graph=True)(function)
