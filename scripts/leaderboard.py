"""Run a fixed, versioned training protocol and render its leaderboard.

    python scripts/leaderboard.py                                  # configs/leaderboard/v6.yaml
    python scripts/leaderboard.py --workers 2                      # two cells at a time
    python scripts/leaderboard.py --render-only                    # tables and plots from finished cells
    python scripts/leaderboard.py --protocol configs/leaderboard/v5.yaml --seeds 3 4  # only those seeds' cells
    python scripts/leaderboard.py --ray-address auto               # cells as Ray tasks on a cluster
    python scripts/leaderboard.py --publish results/leaderboard/v4 # records into the repository, its page
    taigym leaderboard ...                                         # the same, as a subcommand

A protocol (YAML) names the tasks with their training budget in env steps, the algorithms
with their settings, the seeds, the number of evaluation episodes and the simulators:
``taigym``, the default, and the simulators taigym's tasks port, trained by the same trainer
with the same settings and seeds: ``gymnasium`` (Gymnasium's MuJoCo ``<Task>-v5``) and
``dm_control`` (a Control Suite task, ``TaiGym/<domain>-<task>-v0``, on dm_control's own,
``dm_control/<domain>-<task>-v0`` through its Gymnasium adapter). A task runs on taigym and on
the one of those it ports. Every (task, algorithm, seed, simulator) is a cell; cells run in worker processes, each keeping its compiled kernels across the cells it
runs. A finished cell writes ``cell.json`` (returns, wall time, env steps/s, curve, and what
makes such numbers comparable: action source, solver and its iterations, contacts and
constraint rows per env, frame skip, precision, devices, threads).
A rerun skips every cell whose ``cell.json`` holds the digest of the same resolved
settings, so an interrupted leaderboard resumes where it stopped and a changed setting
reruns only the cells it changes.

Outputs, in ``--out`` (default ``results/leaderboard/<name>``): ``leaderboard.md``,
``leaderboard.html``, ``leaderboard.json`` (mean +- std over seeds) and
``curves_<Task>.png`` (return against env steps and wall time, per algorithm and simulator).
With two simulators the table puts them side by side per task and flags the tasks where
they disagree beyond their spread over seeds (scripts/leaderboard_page.py builds the page).

``--publish DEST`` stores the finished records in ``DEST/cells`` (learning curves thinned to
200 rows) and writes the page ``DEST.md`` from them, plots in ``DEST``; with no run folder it
rebuilds the page from the stored records alone.

On Ray (``--ray-address``) each cell is a one-CPU task; a cell whose worker dies is run
again (Ray's task retries, then up to ``RAY_RESUBMITS`` submissions of the leaderboard's own).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, PrivateAttr, ValidationError, model_validator
from taigym.scripts.arguments import ArgumentParser

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PROTOCOL = REPO_ROOT / "configs" / "leaderboard" / "v6.yaml"
DEFAULT_SIMULATORS = ("taigym",)
# the simulators a taigym task may port, each reached through Gymnasium's API: Gymnasium's own
# MuJoCo envs, and dm_control's Control Suite tasks (scripts/dm_control_env.py)
COUNTERPART_SIMULATORS = ("gymnasium", "dm_control")
RAY_RESUBMITS = 2  # submissions of a lost cell after Ray's own retries gave up
# fault injection for tests: a folder; each cell's first attempt leaves a marker there and
# kills its own process, as a worker lost mid-cell
CRASH_ONCE_ENV = "TAIGYM_LEADERBOARD_CRASH_ONCE"


# --- protocol ------------------------------------------------------------------------------
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskEntry(Strict):
    id: str
    budget: PositiveInt  # training env steps per cell
    solved_return: float | None = None


class AlgorithmEntry(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.]+$")  # a column of the leaderboard and part of folder names
    trainer: Literal["sb3", "native"]  # scripts/train.py or scripts/train_ppo.py
    algo: str | None = None  # the stable-baselines3 class (sb3 trainer)
    settings: dict[str, Any] = {}  # config keys for every task
    task_settings: dict[str, dict[str, Any]] = {}  # config keys for one task, over `settings`

    @model_validator(mode="after")
    def _algo_for_sb3(self):
        if self.trainer == "sb3" and not self.algo:
            raise ValueError(f"algorithm {self.name!r}: trainer sb3 needs `algo` (a stable-baselines3 class)")
        return self


class Adoption(Strict):
    """Finished cells of an earlier protocol that count as this one's where the settings match."""
    protocol: str  # the earlier protocol's YAML, relative to this protocol's file
    cells: str  # the folder of its records (``<key>/cell.json``), relative to this protocol's file


class Protocol(Strict):
    version: PositiveInt
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    eval_episodes: PositiveInt = 10
    seeds: list[int] = Field(min_length=1)
    tasks: list[TaskEntry] = Field(min_length=1)
    algorithms: list[AlgorithmEntry] = Field(min_length=1)
    # each task runs on the simulators named that have it: taigym's port, and the simulator it
    # ports (Gymnasium's MuJoCo env or dm_control's Control Suite task)
    simulators: list[Literal["taigym", "gymnasium", "dm_control"]] = Field(default=list(DEFAULT_SIMULATORS),
                                                                          min_length=1)
    adopts: list[Adoption] = []
    _folder: Path = PrivateAttr(default=Path("."))  # where the protocol file is: adopts' paths are relative to it
    _task_simulators: dict = PrivateAttr(default_factory=dict)  # task id -> its simulators (task_simulators)

    @model_validator(mode="after")
    def _simulators_once(self):
        if len(set(self.simulators)) != len(self.simulators):
            raise ValueError(f"simulators {self.simulators} name one twice")
        return self


def load_protocol(path: Path) -> Protocol:
    """The validated protocol; errors name the file and the key."""
    from taigym.scripts.config_files import read_mapping, refuse_non_finite, schema_error

    path = Path(path)
    raw = read_mapping(path)
    refuse_non_finite(raw, raw, str(path))
    try:
        protocol = Protocol(**raw)
    except ValidationError as e:
        raise schema_error(e, raw, str(path), Protocol.model_fields) from None
    task_ids = {t.id for t in protocol.tasks}
    for alg in protocol.algorithms:
        for task_id in alg.task_settings:
            if task_id not in task_ids:
                raise SystemExit(f"{path}: algorithm {alg.name!r}: task_settings names {task_id!r}, "
                                 f"which is not one of the protocol's tasks {sorted(task_ids)}")
    if set(COUNTERPART_SIMULATORS) & set(protocol.simulators):
        check_counterpart_cells(protocol, path)
    protocol._folder = path.parent
    check_adoptions(protocol, path)
    return protocol


def adoption_paths(protocol: Protocol, index: int) -> tuple[Path, Path]:
    """``adopts[index]``'s protocol file and records folder, resolved against the protocol's folder."""
    a = protocol.adopts[index]
    return (protocol._folder / a.protocol).resolve(), (protocol._folder / a.cells).resolve()


def check_adoptions(protocol: Protocol, path: Path) -> None:
    for i in range(len(protocol.adopts)):
        earlier, cells = adoption_paths(protocol, i)
        if not earlier.is_file():
            raise SystemExit(f"{path}: adopts[{i}].protocol: no protocol file {earlier}")
        if not cells.is_dir():
            raise SystemExit(f"{path}: adopts[{i}].cells: no folder of records {cells}")


def check_counterpart_cells(protocol: Protocol, path: Path) -> None:
    """Cells on a ported simulator need the sb3 trainer, and each task a counterpart on one of
    the simulators named."""
    named = [s for s in protocol.simulators if s in COUNTERPART_SIMULATORS]
    for alg in protocol.algorithms:
        if alg.trainer != "sb3":
            raise SystemExit(f"{path}: algorithm {alg.name!r}: simulator {named[0]} needs trainer sb3 "
                             f"(scripts/train.py), not {alg.trainer!r}")
    for task in protocol.tasks:
        try:
            simulator = counterpart_simulator(task.id)
        except SystemExit as e:
            raise SystemExit(f"{path}: simulator {named[0]}: {e}") from None
        if simulator not in named:
            raise SystemExit(f"{path}: {task.id} ports {env_id(task.id, simulator)}, simulator {simulator}, "
                             f"which `simulators` {protocol.simulators} does not name")


def counterpart_simulator(task_id: str) -> str:
    """The simulator a taigym task ports: ``dm_control`` for a Control Suite task, else ``gymnasium``."""
    from taigym.scripts.benchmark_training import gymnasium_counterpart
    from taigym.scripts.gymnasium_envs import is_dm_control_id

    return "dm_control" if is_dm_control_id(gymnasium_counterpart(task_id)) else "gymnasium"


def task_simulators(protocol: Protocol, task_id: str) -> list[str]:
    """The simulators of a task's cells, in the protocol's order: taigym where named, and the
    simulator it ports where named."""
    if task_id not in protocol._task_simulators:
        ports = None
        if set(COUNTERPART_SIMULATORS) & set(protocol.simulators):
            ports = counterpart_simulator(task_id)
        protocol._task_simulators[task_id] = [s for s in protocol.simulators if s in ("taigym", ports)]
    return protocol._task_simulators[task_id]


def env_id(task_id: str, simulator: str) -> str:
    """The id a cell trains on: the protocol's task, or its counterpart (Gymnasium's ``Hopper-v5``,
    dm_control's ``dm_control/cartpole-swingup-v0``)."""
    if simulator == "taigym":
        return task_id
    from taigym.scripts.benchmark_training import gymnasium_counterpart

    return gymnasium_counterpart(task_id)


# --- cells ---------------------------------------------------------------------------------
def resolve_config(protocol: Protocol, task: TaskEntry, alg: AlgorithmEntry, seed: int,
                   simulator: str = "taigym") -> dict:
    """The full training config of one cell: trainer defaults, then the protocol's settings.

    The budget, seed and evaluation come from the protocol and cannot be overridden by
    settings; cells record no video (it costs time and says nothing comparable). A cell on
    the ported simulator gets the settings of its task, keyed by the taigym id.
    """
    fixed = {"task": env_id(task.id, simulator), "seed": seed, "total_timesteps": task.budget,
             "eval_episodes": protocol.eval_episodes, "video_steps": 0, "solved_return": task.solved_return}
    settings = {**alg.settings, **alg.task_settings.get(task.id, {})}
    clash = sorted(set(settings) & set(fixed))
    if clash:
        raise SystemExit(f"algorithm {alg.name!r}: {clash} are fixed by the protocol, not algorithm settings")
    if alg.trainer == "sb3":
        from taigym.scripts.train import TrainConfigError, load_config

        overrides = [f"{k}={json.dumps(v)}" for k, v in {**settings, **fixed}.items()]
        try:
            cfg, _ = load_config(fixed["task"], alg.algo, overrides=overrides, seed=seed)
        except TrainConfigError as e:
            raise SystemExit(f"algorithm {alg.name!r} on {fixed['task']}: {e}") from None
        return cfg.model_dump()
    from taigym.scripts.train_ppo import args_from_dict, args_to_dict

    try:
        return args_to_dict(args_from_dict({**settings, **fixed}, source=f"algorithm {alg.name!r} settings"))
    except (ValueError, TypeError) as e:
        raise SystemExit(str(e)) from None


def make_cells(protocol: Protocol) -> list[dict]:
    """Every (task, algorithm, seed, simulator) of the protocol, with its resolved config and digest."""
    from taigym.scripts.results import task_name

    cells = []
    for task in protocol.tasks:
        for alg in protocol.algorithms:
            for seed in protocol.seeds:
                for simulator in task_simulators(protocol, task.id):
                    spec = {"protocol": protocol.name, "version": protocol.version, "task": task.id,
                            "simulator": simulator, "algorithm": alg.name, "trainer": alg.trainer, "seed": seed,
                            "budget": task.budget, "eval_episodes": protocol.eval_episodes,
                            "config": resolve_config(protocol, task, alg, seed, simulator)}
                    spec["digest"] = digest(spec)
                    # the env id names the simulator: Hopper-v0-PPO-0 (taigym), Hopper-v5-PPO-0 (Gymnasium),
                    # dm_control-cartpole-swingup-v0-PPO-0 (dm_control; results.task_name keeps its namespace)
                    spec["key"] = f"{task_name(spec['config']['task'])}-{alg.name}-{seed}"
                    cells.append(spec)
    return cells


def digest(spec: dict) -> str:
    """A short hash of a cell's settings: equal digests, same experiment.

    The default simulator is left out, so that cells of protocols older than the key keep
    their digests (and their finished results).
    """
    skip = {"digest", "key"} | ({"simulator"} if spec.get("simulator", "taigym") in DEFAULT_SIMULATORS else set())
    text = json.dumps({k: v for k, v in spec.items() if k not in skip}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_done(cell: dict, cells_dir: Path) -> bool:
    """Finished under the same settings: its ``cell.json`` exists and has the cell's digest."""
    record = cells_dir / cell["key"] / "cell.json"
    if not record.exists():
        return False
    try:
        return json.loads(record.read_text()).get("digest") == cell["digest"]
    except json.JSONDecodeError:
        return False  # a record cut short by a crash: run the cell again


def adopt_cells(protocol: Protocol, cells: list[dict], cells_dir: Path, log) -> list[dict]:
    """Record as finished every unfinished cell that an adopted protocol has finished under
    the same settings; returns the records written."""
    from taigym.scripts.results import write_json

    adopted = []
    for i in range(len(protocol.adopts)):
        earlier_file, earlier_cells = adoption_paths(protocol, i)
        earlier = load_protocol(earlier_file)
        records = [adopted_record(protocol, earlier, cell, earlier_cells / cell["key"] / "cell.json")
                   for cell in cells if not is_done(cell, cells_dir)]
        for record in filter(None, records):
            (cells_dir / record["key"]).mkdir(parents=True, exist_ok=True)
            write_json(cells_dir / record["key"] / "cell.json", record)
            adopted.append(record)
        if any(records):
            log(f"adopted {sum(map(bool, records))} finished cells of {earlier.name} (same settings)")
    return adopted


def adopted_record(protocol: Protocol, earlier: Protocol, cell: dict, record_file: Path) -> dict | None:
    """``earlier``'s finished record of ``cell`` as this protocol's, or None where it has none
    or ran other settings.

    Same settings means the same digest once the cell's protocol name and version are the
    earlier protocol's: task, simulator, trainer, seed, budget, evaluation and the whole
    resolved training config. The record keeps the earlier run's results and says where it
    came from (``adopted_from``).
    """
    if not record_file.is_file():
        return None
    spec = {k: v for k, v in cell.items() if k not in ("digest", "key")}
    spec.update(protocol=earlier.name, version=earlier.version)
    record = json.loads(record_file.read_text())
    if record.get("digest") != digest(spec) or record.get("status") != "done":
        return None
    return {**record, "protocol": protocol.name, "version": protocol.version, "digest": cell["digest"],
            "adopted_from": {"protocol": earlier.name, "version": earlier.version, "digest": record["digest"]}}


# --- running one cell (in a worker) ------------------------------------------------------
def init_worker(sim_threads: int) -> None:
    """Each worker's share of the cores: Taichi reads TI_CPU_MAX_NUM_THREADS (QD_ for
    quadrants) when it starts."""
    for prefix in ("TI_", "QD_"):
        os.environ[prefix + "CPU_MAX_NUM_THREADS"] = str(sim_threads)
    sys.path.insert(0, str(REPO_ROOT))


def run_cell(cell: dict, cell_dir: str, workers: int = 1) -> dict:
    """Train and evaluate one cell; returns its record (also written as ``cell.json`` by the caller).

    The record carries the learning curve itself, so a cell run on another machine (Ray)
    needs no shared file system.
    """
    from taigym.scripts import results as R

    cell_dir = Path(cell_dir)
    run_dir = cell_dir / "run"
    spec_file = cell_dir / "spec.json"
    if spec_file.exists() and json.loads(spec_file.read_text()).get("digest") != cell["digest"]:
        shutil.rmtree(run_dir, ignore_errors=True)  # a checkpoint of other settings: start over
    cell_dir.mkdir(parents=True, exist_ok=True)
    R.write_json(spec_file, cell)
    crash_once_if_asked(cell["key"])
    start = time.perf_counter()
    if cell["trainer"] == "sb3":
        from taigym.scripts.train import TrainConfig, run

        metrics = run(TrainConfig(**cell["config"]), run_dir, resume=True, quiet=True)
    else:
        from taigym.scripts.train_ppo import args_from_dict, train

        metrics = train(args_from_dict(cell["config"]), run_dir, resume=True, quiet=True)
    return {
        **{k: cell[k] for k in ("key", "digest", "protocol", "version", "task", "algorithm", "trainer", "seed",
                                "budget", "eval_episodes")},
        "simulator": cell.get("simulator", "taigym"),
        "status": "done",
        "eval_return_mean": metrics["eval_return_mean"],
        "eval_return_std": metrics["eval_return_std"],
        "eval_returns": metrics["eval"]["returns"],
        "solved": metrics.get("solved"),
        "env_steps": metrics["env_steps"],
        "wall_time_s": metrics["wall_time_s"],
        "env_steps_per_s": metrics["env_steps_per_s"],
        "setup_s": metrics.get("setup_s"),
        "cell_wall_time_s": time.perf_counter() - start,
        "comparability": comparability(cell, metrics, workers),
        "progress": R.read_progress(run_dir / "progress.csv"),
        "config": cell["config"],
    }


def crash_once_if_asked(key: str) -> None:
    """Kills this process on a cell's first attempt when ``CRASH_ONCE_ENV`` names a folder
    (to test that a cell whose worker died is run again)."""
    folder = os.environ.get(CRASH_ONCE_ENV)
    if not folder:
        return
    marker = Path(folder) / key
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    os.kill(os.getpid(), signal.SIGKILL)


def comparability(cell: dict, metrics: dict, workers: int) -> dict:
    """What a reader needs to compare this cell's returns and speed with another's."""
    sim = metrics["simulation"]
    machine = metrics["machine"]
    return {
        **sim,
        "constraint_rows_per_env": metrics["eval"]["nefc_per_env"],
        "contacts_per_env": metrics["eval"]["ncon_per_env"],
        "num_envs": cell["config"]["num_envs"],
        "policy_device": cell["config"].get("device", "cpu"),
        # Gymnasium's and dm_control's envs step one after another in a DummyVecEnv, MuJoCo on one thread each
        "sim_threads": taichi_threads() if cell.get("simulator", "taigym") == "taigym" else 1,
        "torch_threads": machine["torch_threads"],
        "concurrent_cells": workers,  # cells sharing the machine's cores at once
        "cpu": machine["processor"],
        "cpu_count": machine["cpu_count"],
        "load_average_1min": machine["load_average_1min"],
        "versions": {k: machine.get(k) for k in ("python", "taichi", "torch", "stable_baselines3", "taigym",
                                                 "taigym_git")},
    }


def taichi_threads() -> int:
    """The CPU threads the Taichi runtime steps with: the running one's, or, where this process
    has not started it (a cell resumed after it had finished), the count it would start with."""
    from taigym.physics.runtime.backend import NAME, current_cfg

    try:
        return int(current_cfg().cpu_max_num_threads)
    except AttributeError:  # no runtime in this process
        prefix = "QD_" if NAME == "quadrants" else "TI_"
        return int(os.environ.get(prefix + "CPU_MAX_NUM_THREADS") or os.cpu_count() or 1)


# --- scheduling ----------------------------------------------------------------------------
def run_cells(pending: list[dict], cells_dir: Path, *, workers: int, ray_address: str | None, log) -> list[dict]:
    """Run ``pending`` cells, writing each ``cell.json`` as soon as it finishes."""
    if not pending:
        return []
    if ray_address:
        return run_cells_on_ray(pending, cells_dir, ray_address, log)
    records = []
    if workers <= 1:
        # in this process: the kernels compiled for one cell serve the next
        for cell in pending:
            with cell_failure_logged(cell, log):
                records.append(finish_cell(run_cell(cell, str(cells_dir / cell["key"]), 1), cells_dir, log))
        return records
    sim_threads = max(1, (os.cpu_count() or 1) // workers)
    import multiprocessing

    # spawn: a fresh interpreter per worker (Taichi and torch do not survive fork well)
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=init_worker, initargs=(sim_threads,)) as pool:
        futures = {pool.submit(run_cell, cell, str(cells_dir / cell["key"]), workers): cell for cell in pending}
        for future in as_completed(futures):
            with cell_failure_logged(futures[future], log):
                records.append(finish_cell(future.result(), cells_dir, log))
    return records


@contextlib.contextmanager
def cell_failure_logged(cell: dict, log):
    """A cell that fails is logged and left unfinished (the next run retries it); the others
    go on, rather than waiting for all of them to report the first failure at the end."""
    try:
        yield
    except Exception as e:  # noqa: BLE001  any cell error: the protocol's other cells still count
        log(f"FAILED {cell['key']}: {type(e).__name__}: {e}")


def run_cells_on_ray(pending: list[dict], cells_dir: Path, address: str, log) -> list[dict]:
    """Each cell as a one-CPU Ray task on the cluster at ``address``; records come back here.

    Ray retries a task whose worker died (``max_retries``, 3 by default); a cell still lost
    after that is submitted again, up to ``RAY_RESUBMITS`` times, before the run gives up.
    """
    try:
        import ray
    except ImportError:
        raise SystemExit("--ray-address needs Ray, which is not installed: pip install 'taigym[ray]'") from None
    ray.init(address=address, runtime_env={"working_dir": str(REPO_ROOT), "excludes": ["results", ".git"]})
    remote = ray.remote(num_cpus=1)(run_cell)

    def submit(cell):
        # a remote worker writes its run folder on its own disk; the record it returns is the result
        return remote.remote(cell, f"results/leaderboard-cells/{cell['key']}", 1)

    refs = {submit(cell): cell for cell in pending}
    resubmits: dict[str, int] = {}
    records = []
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        cell = refs.pop(done[0])
        try:
            record = ray.get(done[0])
        except Exception as e:
            if not may_resubmit(ray, e, resubmits.get(cell["key"], 0)):
                raise
            resubmits[cell["key"]] = resubmits.get(cell["key"], 0) + 1
            log(f"lost {cell['key']} ({type(e).__name__}): submitting it again "
                f"({resubmits[cell['key']]} of {RAY_RESUBMITS})")
            refs[submit(cell)] = cell
            continue
        records.append(finish_cell(record, cells_dir, log))
    return records


def may_resubmit(ray, error: Exception, resubmitted: int) -> bool:
    """Whether a cell whose task failed with ``error`` goes to the cluster again: only when it
    was lost with its worker or node (a cell's own error would fail again) and retries remain."""
    lost = (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.LocalRayletDiedError,
            ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError, ray.exceptions.OutOfMemoryError)
    return isinstance(error, lost) and resubmitted < RAY_RESUBMITS


def finish_cell(record: dict, cells_dir: Path, log) -> dict:
    from taigym.scripts.results import write_json

    out = cells_dir / record["key"]
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "cell.json", record)
    log(f"done {record['key']}: eval return {record['eval_return_mean']:.1f}, {record['env_steps']} steps in "
        f"{record['wall_time_s']:.1f} s ({record['env_steps_per_s'] or 0:.0f} steps/s)")
    return record


# --- leaderboard ---------------------------------------------------------------------------
def load_records(cells: list[dict], cells_dir: Path) -> list[dict]:
    """Records of the protocol's finished cells (with the current digests only)."""
    return [json.loads((cells_dir / c["key"] / "cell.json").read_text()) for c in cells if is_done(c, cells_dir)]


NOTES_FILE = "notes.md"  # beside the records: written by hand, shown on the page under the results


def render(protocol: Protocol, cells: list[dict], cells_dir: Path, out: Path, page: Path | None = None) -> dict:
    """Write leaderboard.md (or ``page``), .html and .json and one curve PNG per task into
    ``out``, with ``out``'s notes.md under the results where there is one; returns the summary."""
    from taigym.scripts.config_files import read_text
    from taigym.scripts.leaderboard_page import comparisons, html_page, markdown, plot_task_curves, summarize
    from taigym.scripts.results import task_name, write_json

    # read first: a refused notes file leaves no half-written page behind
    notes_file = out / NOTES_FILE
    notes = read_text(notes_file) if notes_file.is_file() else ""
    records = load_records(cells, cells_dir)
    summary = summarize(protocol, records)
    plots = []
    for task in protocol.tasks:
        name = f"curves_{task_name(task.id)}.png"
        if plot_task_curves(task, records, out / name, many_simulators=len(protocol.simulators) > 1):
            plots.append(name)
    pending = len(cells) - len(records)
    page = page or out / "leaderboard.md"
    # the page links the plots from wherever it sits
    links = [os.path.relpath(out / name, page.parent) for name in plots]
    page.write_text(markdown(protocol, summary, pending, links, notes))
    (out / "leaderboard.html").write_text(html_page(protocol, summary, pending, plots))
    report = {"protocol": protocol.model_dump(), "cells": len(cells), "finished": len(records), "rows": summary}
    if len(protocol.simulators) > 1:
        report["comparisons"] = [{k: c[k] for k in ("task", "algorithm", "disagree", "within_spread")} for c in
                                 comparisons(protocol, summary)]
    write_json(out / "leaderboard.json", report)
    return report


# --- publishing -----------------------------------------------------------------------------
CURVE_ROWS = 200  # rows of a learning curve kept in a published record


def publish(protocol: Protocol, cells: list[dict], run_cells_dir: Path, dest: Path) -> dict:
    """Copy the finished records of a run (``run_cells_dir``, when it exists) into
    ``dest/cells``, their learning curves thinned to CURVE_ROWS rows, then render the page
    ``dest.md`` with its plots in ``dest`` from the records stored there: run again with no
    run folder, it rebuilds the page from the stored records alone."""
    from taigym.scripts.results import write_json

    stored = dest / "cells"
    stored.mkdir(parents=True, exist_ok=True)
    if run_cells_dir.is_dir() and run_cells_dir.resolve() != stored.resolve():
        for cell in cells:
            if is_done(cell, run_cells_dir):
                record = json.loads((run_cells_dir / cell["key"] / "cell.json").read_text())
                record["progress"] = thinned(record.get("progress") or [], CURVE_ROWS)
                (stored / cell["key"]).mkdir(exist_ok=True)
                write_json(stored / cell["key"] / "cell.json", record)
    return render(protocol, cells, stored, dest, page=dest.with_suffix(".md"))


def thinned(rows: list, n: int) -> list:
    """At most ``n`` of ``rows``, evenly spaced, the first and the last kept."""
    if len(rows) <= n:
        return list(rows)
    keep = np.unique(np.linspace(0, len(rows) - 1, n).round().astype(int))
    return [rows[i] for i in keep]


# --- command line --------------------------------------------------------------------------
def parse_args(argv=None):
    p = ArgumentParser(prog="taigym leaderboard", description=__doc__.split("\n\n")[0])
    p.add_argument("--protocol", type=Path, default=DEFAULT_PROTOCOL, help="protocol YAML (default: %(default)s)")
    p.add_argument("--out", type=Path, help="output folder (default: results/leaderboard/<protocol name>)")
    p.add_argument("--workers", type=int, default=1,
                   help="cells run at once, each in its own process (1: in this process; default: 1)")
    p.add_argument("--ray-address", help="submit cells to the Ray cluster at this address (needs ray installed)")
    p.add_argument("--render-only", action="store_true", help="only render tables and plots of finished cells")
    p.add_argument("--publish", type=Path, metavar="DEST",
                   help="store the finished records in DEST/cells (curves thinned) and write the page DEST.md "
                        "from them, e.g. results/leaderboard/v4; runs no cell")
    p.add_argument("--only", nargs="*", default=None, metavar="KEY",
                   help="run only these cells (their keys, e.g. InvertedPendulum-v0-PPO-0 or, on Gymnasium, "
                        "InvertedPendulum-v5-PPO-0; on dm_control, dm_control-cartpole-swingup-v0-PPO-0)")
    p.add_argument("--seeds", nargs="+", type=int, default=None, metavar="SEED",
                   help="run only the cells of these seeds (with --only: the cells both name), e.g. the seeds "
                        "a protocol adds to one it adopts")
    ns = p.parse_args(argv)
    if ns.workers < 1:
        p.error("--workers must be >= 1")
    return ns


def main(argv=None) -> int:
    ns = parse_args(argv)
    protocol = load_protocol(ns.protocol)
    out = ns.out or Path("results") / "leaderboard" / protocol.name
    cells_dir = out / "cells"
    cells = make_cells(protocol)
    if ns.publish is not None:
        report = publish(protocol, cells, cells_dir, ns.publish)
        print(f"leaderboard: {ns.publish.with_suffix('.md')} ({report['finished']}/{report['cells']} cells)")
        return 0
    cells_dir.mkdir(parents=True, exist_ok=True)
    if ns.seeds is not None and not set(ns.seeds) <= set(protocol.seeds):
        raise SystemExit(f"--seeds {' '.join(map(str, ns.seeds))}: {ns.protocol} has seeds {protocol.seeds}")
    adopt_cells(protocol, cells, cells_dir, log=lambda msg: print(msg, flush=True))
    pending = [c for c in cells if not is_done(c, cells_dir) and (ns.only is None or c["key"] in ns.only)
               and (ns.seeds is None or c["seed"] in ns.seeds)]
    print(f"{protocol.name} v{protocol.version}: {len(cells)} cells, {len(cells) - len(pending)} finished or "
          f"skipped, {0 if ns.render_only else len(pending)} to run; output in {out}", flush=True)
    if not ns.render_only:
        run_cells(pending, cells_dir, workers=ns.workers, ray_address=ns.ray_address,
                  log=lambda msg: print(msg, flush=True))
    report = render(protocol, cells, cells_dir, out)
    print(f"leaderboard: {out / 'leaderboard.md'} ({report['finished']}/{report['cells']} cells)")
    unfinished = sum(1 for c in pending if not is_done(c, cells_dir))
    return 1 if unfinished and not ns.render_only else 0


if __name__ == "__main__":
    # run as a file, the repository root is not on sys.path
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
