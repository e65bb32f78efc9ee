"""Which Taichi code is the engine's: the only code the adapter's patches act on.

A kernel or function is the engine's when its module is one of taigym's. What is traced
while a kernel compiles is the kernel's: Taichi's own functions (its vector methods, its
math) called from an engine kernel are traced as the engine's, and everything a user's
kernel reaches as Taichi traces it. A decoration is the engine's when the frame applying
the decorator runs in one of taigym's modules. Anything else is a user's, and Taichi
traces it exactly as it would without taigym.
"""

from __future__ import annotations

# module names the engine's own code lives under (the tests add theirs to trace their
# small kernels the way the engine's are traced)
PACKAGES: tuple[str, ...] = (__name__.split(".")[0],)


def owned_module(name) -> bool:
    """Whether a module of this name is the engine's."""
    if not isinstance(name, str):
        return False
    return any(name == p or name.startswith(p + ".") for p in PACKAGES)


def owned_function(function) -> bool:
    """Whether ``function`` (a Python function, or anything with a ``__module__``) is the
    engine's."""
    return owned_module(getattr(function, "__module__", None))


def owned_callable(callable_) -> bool:
    """Whether Taichi's ``Kernel`` or ``Func`` object wraps one of the engine's functions."""
    return owned_function(getattr(callable_, "func", None))


def owned_trace(callable_, runtime) -> bool:
    """Whether ``callable_`` (a ``Kernel`` or ``Func``, or a Python function), traced now, is
    traced for the engine: by the kernel ``runtime`` is compiling, or where none is, by
    itself."""
    kernel = runtime.current_kernel
    if kernel is not None:
        return owned_callable(kernel)
    return owned_callable(callable_) or owned_function(callable_)


def owned_frame(frame) -> bool:
    """Whether ``frame`` runs code of one of the engine's modules."""
    return owned_module(frame.f_globals.get("__name__"))
