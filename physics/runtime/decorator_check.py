"""A quicker answer to Taichi's "is this decorator inside a class?", from Taichi's own import on.

Taichi 1.7.4 decorates ~140 of its own functions while it is imported, and for each it
reads the source line of the decorating frame through ``inspect.getframeinfo``, which maps
the frame's file to its module by scanning every loaded module: ~0.04 s of every start
(taichi's import 0.16 s against 0.12 s). The line is the frame's own line of its file, so
it is read from ``linecache`` directly, as ``getframeinfo`` reads it in the end. This has to
be in place before Taichi decorates anything, so the module that holds the check is patched
as it is imported (``install``, called before ``import taichi``); launch.py then answers it
once per decorating place. Where that module is not laid out as Taichi 1.7's, it is left
alone, and with ``TAIGYM_LAUNCH=plain`` nothing is patched.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import sys

from .. import settings as _settings

_MODULE = "taichi.lang.kernel_impl"


def quick_inside_class(patterns):
    """``_inside_class`` for Taichi's statement ``patterns``: whether the line of the frame
    ``level_of_class_stackframe`` levels up (counted as Taichi counts them) opens a class or
    is ``@data_oriented``."""

    def _inside_class(level_of_class_stackframe):
        try:
            frame = sys._getframe(level_of_class_stackframe)
        except ValueError:
            return False
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        return any(pattern.match(line) for pattern in patterns)

    _inside_class.taigym_quick = True
    return _inside_class


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        remove()  # once: the module is being imported now
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patterns = getattr(module, "_KERNEL_CLASS_STACKFRAME_STMT_RES", None)
            if callable(getattr(module, "_inside_class", None)) and patterns is not None:
                module._inside_class = quick_inside_class(patterns)

        spec.loader.exec_module = exec_module
        return spec


_finder = _PatchOnImport()


def install() -> None:
    """Patch Taichi's check when ``taichi.lang.kernel_impl`` is next imported (nothing if it
    already was)."""
    if _settings.current().plain:  # Taichi as it is, as in launch.py
        return
    if _MODULE not in sys.modules and _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def remove() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
