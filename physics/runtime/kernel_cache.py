"""Whether this machine has compiled a kernel variant before, and how long that took.

Taichi keeps compiled kernels in its offline cache, but it cannot say whether it holds a
kernel without tracing the kernel's Python source first, which is most of a warm start.
So a World that is about to launch its step kernel for the first time in a process looks
for a small marker of its own, kept in a ``taigym`` folder inside Taichi's cache folder (an
emptied or moved Taichi cache takes the markers with it): where there is none, the kernel
is about to compile, and the World says so on stderr with the time the last compile on
this machine took. The marker's key covers the Taichi distribution and version, the
kernel variant and the engine's source, so an upgrade compiles, and says so, again.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import sys
import time
from pathlib import Path

from ..runtime.taichi_import import NAME, VERSION, current_cfg

# what one step kernel variant took to compile before any was timed on this machine: on a
# 2-core x86 CPU, and on an H200, whose staged kernels took 80-234 s (PTX generated and
# assembled for 70-90 loops; the fused kernel 37-41 s)
_FIRST_GUESS_S = {"cpu": 15.0, "cuda": 120.0}


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    digest = hashlib.sha256(f"{NAME} {VERSION}".encode())
    engine = Path(__file__).parent.parent  # every stage's source, in every folder of physics/
    for path in sorted(engine.rglob("*.py")):
        digest.update(path.relative_to(engine).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# Taichi holds its cache's lock file for the seconds it takes to read or write the cache's
# index; a process killed meanwhile leaves the file behind, and every later process then
# fails to take it, warns, and neither loads nor keeps compiled kernels: each compiles anew
STALE_LOCK_S = 600.0


def clear_stale_locks() -> None:
    """Remove cache lock files older than STALE_LOCK_S, left by a killed process."""
    cache = Path(current_cfg().offline_cache_file_path)
    for lock in cache.glob("*.lock"):
        try:
            if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
                lock.unlink()
                print(f"taigym: removed {lock}, a kernel cache lock left by a process that did not finish",
                      file=sys.stderr)
        except OSError:  # taken meanwhile by another process, or already removed
            pass


def end_program_in_turn(reset) -> None:
    """End Taichi's program with ``reset`` (``ti.reset``) holding a lock of this folder's.

    Taichi writes the kernels a process compiled into its offline cache when its program
    ends, under a lock file it tries to take once: a process ending while another writes
    (two test workers, two training runs) warns and keeps none of its kernels, which the
    next process then compiles again. Registered at exit, so processes end in turn."""
    try:
        import fcntl
    except ImportError:  # not POSIX: Taichi's own ending, as before
        return
    try:
        folder().mkdir(parents=True, exist_ok=True)
        lock = open(folder() / "ending.lock", "a")
    except OSError:  # a cache folder that cannot be written keeps nothing anyway
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reset()


def folder() -> Path:
    return Path(current_cfg().offline_cache_file_path) / "taigym"


def variant_key(*variant) -> str:
    """The marker name of one kernel variant (precision, solver, ...; anything printable)."""
    text = "|".join(map(str, (_source_digest(), str(current_cfg().arch), bool(current_cfg().advanced_optimization),
                              *variant)))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def compiled_before(key: str) -> bool:
    return (folder() / f"{key}.json").exists()


def expected_seconds() -> float:
    """The last compile time recorded on this machine for the runtime's device (CPU and CUDA
    kernels share the cache folder), or a first guess."""
    device = _device()
    times = []
    for marker in folder().glob("*.json"):
        try:
            data = json.loads(marker.read_text())
            if data.get("device", "cpu") == device:
                times.append((marker.stat().st_mtime, float(data["seconds"])))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return max(times)[1] if times else _FIRST_GUESS_S.get(device, 35.0)


def _device() -> str:
    return "cuda" if "cuda" in str(current_cfg().arch) else "cpu"


def record(key: str, seconds: float, label: str) -> None:
    """Leave the marker of a compiled variant; a cache folder that cannot be written is skipped."""
    try:
        folder().mkdir(parents=True, exist_ok=True)
        (folder() / f"{key}.json").write_text(json.dumps({"seconds": round(seconds, 1), "variant": label,
                                                          "device": _device()}))
    except OSError:
        pass


class FirstLaunch:
    """Times the first launch of a World's step kernel in a process, announcing a compile
    where the marker says there will be one. Python's cyclic garbage collector is paused
    meanwhile: tracing the kernel makes millions of short-lived objects, and the collections
    they set off took several percent of a warm start (they find little: the objects die
    by reference counting)."""

    def __init__(self, key: str, label: str, name: str | None):
        self.key, self.label, self.name = key, label, name

    def __enter__(self):
        self.fresh = not compiled_before(self.key)
        if self.fresh:
            what = f" for {self.name}" if self.name else ""
            print(f"taigym: compiling kernels{what} ({self.label}) — first run on this machine only, "
                  f"~{expected_seconds():.0f} s", file=sys.stderr, flush=True)
        self.collecting = gc.isenabled()
        gc.disable()
        self.start = time.perf_counter()
        return self

    def __exit__(self, kind, value, trace):
        if self.collecting:
            gc.enable()
        if kind is None and self.fresh:
            record(self.key, time.perf_counter() - self.start, self.label)
        return False
