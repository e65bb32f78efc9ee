"""Taichi's CPU thread pool pinned one worker to a CPU (physics/runtime/taichi_adapter/thread_pool.py)."""

import os
import sys
import threading

import pytest
from taigym.physics.runtime.backend import current_cfg, ensure_runtime, ti
from taigym.physics.runtime.taichi_adapter import thread_pool


def test_plan_deals_the_last_started_threads_over_the_cpus():
    started = [11, 12, 13, 14, 15, 16]  # four compile workers, then a pool of two
    assert thread_pool.plan(started, 2, [0, 1]) == {15: 0, 16: 1}
    assert thread_pool.plan(started, 4, [2, 5]) == {13: 2, 14: 5, 15: 2, 16: 5}  # more workers than CPUs
    assert thread_pool.plan(started, 2, [0, 1, 2, 3]) == {}  # a pool the user made smaller than the machine
    assert thread_pool.plan(started, 1, [0]) == {}
    assert thread_pool.plan([11], 2, [0, 1]) == {}  # threads not found


def _run_ns(tids):
    out = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0])
        except OSError:
            out[tid] = None
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads are pinned on Linux")
def test_the_pinned_threads_are_the_ones_a_parallel_launch_runs_on(device):
    if device != "cpu":
        pytest.skip("the CPU's thread pool")
    ensure_runtime("cpu")
    cpus = sorted(os.sched_getaffinity(0))
    workers = current_cfg().cpu_max_num_threads
    if len(cpus) < 2 or workers < len(cpus):
        pytest.skip("one CPU, or a pool smaller than the CPUs: nothing is pinned")
    pinned = thread_pool.pinned()
    assert len(pinned) == workers
    for tid, cpu in pinned.items():
        assert os.sched_getaffinity(tid) == {cpu}
    assert sorted(set(pinned.values())) == cpus[:workers]
    assert threading.get_native_id() not in pinned
    assert sorted(os.sched_getaffinity(threading.get_native_id())) == cpus  # the launching thread stays free

    values = ti.field(ti.f64, shape=1 << 20)

    @ti.kernel
    def busy(rounds: ti.i32):
        for i in values:
            x = values[i]
            for _ in range(rounds):
                x = ti.sin(x + 0.5)
            values[i] = x

    busy(1)  # compiled here, outside the count
    others = [t for t in thread_pool.threads() if t != threading.get_native_id()]
    before = _run_ns(others)
    for _ in range(5):
        busy(8)
    after = _run_ns(others)
    ran = {t: after[t] - before[t] for t in others if before[t] is not None and after[t] is not None}
    least_pinned = min(ran.get(t, 0) for t in pinned)
    assert least_pinned > 10_000_000, "a pinned thread did not run the launches"
    # other threads of the process (an xdist channel, a Ray client) may run a little meanwhile
    busiest_other = max((n for t, n in ran.items() if t not in pinned), default=0)
    assert busiest_other < least_pinned, "a thread that is not pinned ran the launches"
