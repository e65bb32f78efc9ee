"""The source lines of the functions Taichi traces, kept between processes.

Taichi reads each traced function's source with ``inspect.getsourcelines``, which tokenizes
the function from its first line to find where it ends: for the ~115 functions of a step
kernel, ~0.07 s of every start, warm cache or not. The lines only change with their file, so
they are kept in a JSON file in the ``taigym`` folder of Taichi's cache folder (beside the
kernel markers of kernel_cache.py), each file's lines under its modification time and size:
an edited file's functions are read again. A store that cannot be read or written is
ignored, and reading from the source is always the fallback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import kernel_cache

_VERSION = 1
_store: dict | None = None  # {"files": {path: [mtime_ns, size]}, "functions": {key: [start, lines]}}
_dirty = False


def _path() -> Path:
    return kernel_cache.folder() / "function-sources.cache"  # JSON; not *.json, which names kernel markers


def _signature(filename: str):
    try:
        stat = os.stat(filename)
    except OSError:
        return None
    return [stat.st_mtime_ns, stat.st_size]


def _load() -> dict:
    global _store
    if _store is None:
        _store = {"version": _VERSION, "files": {}, "functions": {}}
        try:
            data = json.loads(_path().read_text())
        except (OSError, ValueError):
            data = None
        try:
            if isinstance(data, dict) and data.get("version") == _VERSION:
                files = {name: sig for name, sig in data["files"].items() if _signature(name) == sig}
                functions = {key: (int(start), [str(line) for line in lines])
                             for key, (start, lines) in data["functions"].items() if key.rsplit(":", 2)[0] in files}
                _store["files"], _store["functions"] = files, functions
        except (KeyError, AttributeError, TypeError, ValueError):
            pass  # not a store this version wrote: start from nothing
    return _store


def source_lines(function, read):
    """``read(function)`` (``inspect.getsourcelines``'s answer: the lines and the first line's
    number), from the store where its file is unchanged since it was kept."""
    global _dirty
    code = getattr(function, "__code__", None)
    if code is None or hasattr(function, "__wrapped__") or not code.co_filename.endswith(".py"):
        return read(function)
    signature = _signature(code.co_filename)
    if signature is None:
        return read(function)
    store = _load()
    key = f"{code.co_filename}:{code.co_firstlineno}:{code.co_name}"
    if store["files"].get(code.co_filename) == signature and key in store["functions"]:
        start, lines = store["functions"][key]
        return list(lines), start
    lines, start = read(function)
    if store["files"].get(code.co_filename) != signature:
        # the file is new here or was edited: what was kept of it is out of date
        store["functions"] = {k: v for k, v in store["functions"].items() if k.rsplit(":", 2)[0] != code.co_filename}
        store["files"][code.co_filename] = signature
    store["functions"][key] = [start, list(lines)]
    _dirty = True
    return lines, start


def keep() -> None:
    """Write the store if this process read sources it did not hold (atomically: processes
    sharing a cache folder each replace the whole file)."""
    global _dirty
    if not _dirty or _store is None:
        return
    path = _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(_store))
        os.replace(partial, path)
        _dirty = False
    except OSError:
        pass
