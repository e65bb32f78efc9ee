"""scripts/leaderboard.py on Ray: a real local cluster, and the resubmission of lost cells.

The cluster test starts a Ray head on this machine (``ray start --head --block``, two CPUs),
runs two tiny InvertedPendulum cells through ``--ray-address`` with every cell's first
attempt killing its worker, and checks that both cells were run again and that their
records equal those of a run in this process (same seed, same settings: same numbers).
"""

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import user_environment

pytest.importorskip("stable_baselines3")

from taigym.scripts import leaderboard

HAS_RAY = importlib.util.find_spec("ray") is not None
PROTOCOL = """
version: 1
name: ray-tiny
eval_episodes: 2
seeds: [0, 1]
tasks:
  - {id: TaiGym/InvertedPendulum-v0, budget: 256}
algorithms:
  - name: PPO
    trainer: sb3
    algo: PPO
    settings: {num_envs: 4, n_steps: 64, batch_size: 64, n_epochs: 1, log_every: 64}
"""
# what must be equal between two runs of one cell; wall times and machine load differ
SAME_FIELDS = ("key", "digest", "simulator", "seed", "budget", "env_steps", "eval_returns", "eval_return_mean",
               "eval_return_std", "solved", "config")


@pytest.fixture(autouse=True)
def _cpu_only(device):
    if device != "cpu":
        pytest.skip("training runs on the CPU; Taichi allows one backend per process")


# --- resubmission, against a stand-in for Ray ---------------------------------------------
class WorkerCrashedError(Exception):
    pass


class FakeRef:
    def __init__(self, cell):
        self.cell = cell


class FakeRay:
    """Ray's API as the leaderboard uses it; the first ``crashes[key]`` attempts of a cell are
    lost with their worker."""

    def __init__(self, crashes: dict[str, int]):
        self.crashes = dict(crashes)
        self.attempts: dict[str, int] = {}
        self.exceptions = type("exceptions", (), {
            name: WorkerCrashedError if name == "WorkerCrashedError" else type(name, (Exception,), {})
            for name in ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError", "ObjectLostError",
                         "OwnerDiedError", "OutOfMemoryError")})

    def init(self, **kwargs):
        pass

    def remote(self, num_cpus):
        def wrap(fn):
            class Remote:
                @staticmethod
                def remote(cell, cell_dir, workers):
                    return FakeRef(cell)

            return Remote

        return wrap

    def wait(self, refs, num_returns):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        key = ref.cell["key"]
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if self.attempts[key] <= self.crashes.get(key, 0):
            raise WorkerCrashedError(f"worker running {key} died")
        return {"key": key, "eval_return_mean": 1.0, "env_steps": 8, "wall_time_s": 0.5, "env_steps_per_s": 16.0}


def test_a_cell_lost_with_its_worker_is_submitted_again(tmp_path, monkeypatch):
    fake = FakeRay({"A-PPO-0": 2})
    monkeypatch.setitem(sys.modules, "ray", fake)
    lines = []
    records = leaderboard.run_cells([{"key": "A-PPO-0"}, {"key": "A-PPO-1"}], tmp_path, workers=1,
                                    ray_address="auto", log=lines.append)
    assert sorted(r["key"] for r in records) == ["A-PPO-0", "A-PPO-1"]
    assert fake.attempts == {"A-PPO-0": 3, "A-PPO-1": 1}
    assert sum("lost A-PPO-0" in line for line in lines) == 2
    assert (tmp_path / "A-PPO-0" / "cell.json").exists()


def test_resubmission_is_bounded(tmp_path, monkeypatch):
    fake = FakeRay({"A-PPO-0": leaderboard.RAY_RESUBMITS + 1})
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(WorkerCrashedError):
        leaderboard.run_cells([{"key": "A-PPO-0"}], tmp_path, workers=1, ray_address="auto", log=print)
    assert fake.attempts == {"A-PPO-0": leaderboard.RAY_RESUBMITS + 1}


def test_a_cells_own_error_is_not_retried(tmp_path, monkeypatch):
    fake = FakeRay({})

    def failing_get(ref):
        fake.attempts[ref.cell["key"]] = fake.attempts.get(ref.cell["key"], 0) + 1
        raise ValueError("a bad setting fails on every attempt")

    fake.get = failing_get
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(ValueError):
        leaderboard.run_cells([{"key": "A-PPO-0"}], tmp_path, workers=1, ray_address="auto", log=print)
    assert fake.attempts == {"A-PPO-0": 1}


# --- a real local cluster ------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head on this machine, its workers told to kill each cell's first attempt; yields
    (address, the crash markers' folder)."""
    port = free_port()
    # short: Ray's socket paths under its temp folder must fit in 107 characters
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    crashes = temp / "crashes"
    ray_cli = Path(sys.executable).with_name("ray")
    # the workers as a user's: each cell's own small kernel, not the suite's shared one (a minute
    # to compile in each worker process)
    env = {**user_environment(), leaderboard.CRASH_ONCE_ENV: str(crashes), "RAY_USAGE_STATS_ENABLED": "0"}
    log = (temp / "head.log").open("w")
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_head(head, temp / "head.log")
        yield f"127.0.0.1:{port}", crashes
    finally:
        stop_head(head)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def wait_for_head(head: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while "Ray runtime started" not in log.read_text():
        if head.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the Ray head did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


def stop_head(head: subprocess.Popen) -> None:
    """SIGTERM: `ray start --block` stops the processes it started; then its process group."""
    head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(head.pid, signal.SIGKILL)  # the group this test started, should anything linger
    except ProcessLookupError:
        pass


def cell_records(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((out / "cells").glob("*/cell.json"))}


def same_part(record: dict) -> dict:
    curve = [(row["env_steps"], row["episodes"], row["return_mean"]) for row in record["progress"]]
    return {**{k: record[k] for k in SAME_FIELDS}, "curve": curve}


@pytest.mark.slow  # a Ray cluster's start and four training cells: half a minute of a worker
@pytest.mark.skipif(not HAS_RAY, reason="Ray is not installed (pip install 'taigym[ray]')")
def test_cells_on_a_ray_cluster_equal_a_local_run_and_survive_a_dead_worker(tmp_path, ray_head, monkeypatch):
    from taigym.physics import settings

    address, crashes = ray_head
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)  # the cells' own kernel here too, as on the cluster
    settings.reload()
    protocol = tmp_path / "ray.yaml"
    protocol.write_text(PROTOCOL)
    local, remote = tmp_path / "local", tmp_path / "remote"
    assert leaderboard.main(["--protocol", str(protocol), "--out", str(local)]) == 0

    run = subprocess.run([sys.executable, str(leaderboard.REPO_ROOT / "scripts" / "leaderboard.py"), "--protocol",
                          str(protocol), "--out", str(remote), "--ray-address", address],
                         capture_output=True, text=True, timeout=400, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    keys = ["InvertedPendulum-v0-PPO-0", "InvertedPendulum-v0-PPO-1"]
    assert sorted(p.name for p in crashes.iterdir()) == keys  # each cell's first worker was killed...
    ran_here, ran_there = cell_records(local), cell_records(remote)
    assert sorted(ran_there) == keys  # ...and the cell was run again, not lost
    for key in keys:
        assert same_part(ran_there[key]) == same_part(ran_here[key])
    report = json.loads((remote / "leaderboard.json").read_text())
    assert report["finished"] == 2
