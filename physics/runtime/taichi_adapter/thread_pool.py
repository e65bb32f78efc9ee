"""Taichi's CPU thread pool, one worker to a CPU.

A parallel CPU launch hands its tasks to Taichi's pool of worker threads and the
launching thread sleeps until they are done. Linux places each woken thread on a CPU that
looks idle, and a CPU still looks idle until the first thread woken onto it runs: waking
the workers together, two can land on the same CPU, and the load balancer moves one away
only after a millisecond or more. On a 2-core Intel VM, 64 Hoppers (a 4 ms launch) stepped
at times with the second core busy a third of the time (CPU/wall 1.3); in paired turns the
pinned pool stepped 1.04-1.08x (docs/performance.md).

So when the runtime starts, :func:`pin` gives each worker a CPU of its own among those
the process may run on (``os.sched_getaffinity``: ``taskset`` and cgroups are obeyed),
dealt round-robin where the pool has more workers than the process has CPUs. A pool
smaller than the process's CPUs is left as it is: the user limited it
(``TI_CPU_MAX_NUM_THREADS``), maybe to share the machine, and pinning every process's
workers to the first CPUs would stack them. The launching thread is never pinned.

taichi 1.7.4 and quadrants build the pool last in ``ti.init``, after the compile workers,
so the pool is the last ``cpu_max_num_threads`` threads it started
(tests/test_thread_pool.py checks that they are the threads a parallel launch runs on).
"""

from __future__ import annotations

import os
import sys

from .patch import log

_pinned: dict[int, int] = {}  # the pool's threads and their CPUs, once pin() has run


def threads() -> list[int]:
    """This process's thread ids, in the order they were started (Linux; [] elsewhere)."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return []


def plan(started: list[int], workers: int, cpus: list[int]) -> dict[int, int]:
    """Each pool worker's CPU: the last ``workers`` of the threads ``ti.init`` started,
    dealt over ``cpus``; nothing where the pool is smaller than ``cpus`` (or absent)."""
    if workers < 2 or len(started) < workers or workers < len(cpus):
        return {}
    return {tid: cpus[i % len(cpus)] for i, tid in enumerate(started[-workers:])}


def pin(before: list[int], workers: int) -> dict[int, int]:
    """Pin the pool ``ti.init`` started (the threads not in ``before``) and return each
    worker's CPU; {} where nothing was pinned."""
    if not sys.platform.startswith("linux"):
        return {}
    known = set(before)
    started = [t for t in threads() if t not in known]
    cpus = sorted(os.sched_getaffinity(0))
    pinned = plan(started, workers, cpus)
    try:
        for tid, cpu in pinned.items():
            os.sched_setaffinity(tid, {cpu})
    except OSError as error:  # a sandbox that forbids it: the scheduler places them as before
        log.info("taigym left Taichi's thread pool unpinned (%s)", error)
        return {}
    _pinned.update(pinned)
    return pinned


def pinned() -> dict[int, int]:
    """The pool's threads :func:`pin` pinned in this process, and their CPUs."""
    return dict(_pinned)
