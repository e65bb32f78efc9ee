"""Run a fixed, versioned training protocol and render its leaderboard.

    python scripts/leaderboard.py                                  # configs/leaderboard/v4.yaml
    python scripts/leaderboard.py --workers 2                      # two cells at a time
    python scripts/leaderboard.py --render-only                    # tables and plots from finished cells
    python scripts/leaderboard.py --protocol configs/leaderboard/v5.yaml --seeds 3 4  # only those seeds' cells
    python scripts/leaderboard.py --ray-address auto               # cells as Ray tasks on a cluster
    python scripts/leaderboard.py --publish docs/leaderboard/v4    # records into the repository, its page
    taigym leaderboard ...                                         # the same, as a subcommand

A protocol (YAML) names the tasks with their training budget in env steps, the algorithms
with their settings, the seeds, the number of evaluation episodes and the simulators
(``taigym``, the default, and ``gymnasium``: Gymnasium's MuJoCo ``<Task>-v5``, trained by the
same trainer with the same settings and seeds). Every (task, algorithm, seed, simulator) is a
cell; cells run in worker processes, each keeping its compiled kernels across the cells it
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
they disagree beyond their spread over seeds (see :func:`disagree`).

``--publish DEST`` stores the finished records in ``DEST/cells`` (learning curves thinned to
200 rows) and writes the page ``DEST.md`` from them, plots in ``DEST``; with no run folder it
rebuilds the page from the stored records alone.

On Ray (``--ray-address``) each cell is a one-CPU task; a cell whose worker dies is run
again (Ray's task retries, then up to ``RAY_RESUBMITS`` submissions of the leaderboard's own).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import html
import json
import math
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

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PROTOCOL = REPO_ROOT / "configs" / "leaderboard" / "v4.yaml"
DEFAULT_SIMULATORS = ("taigym",)
SIMULATOR_LABELS = {"taigym": "taigym", "gymnasium": "Gymnasium"}
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
    # each cell runs on every simulator named: taigym's port and/or Gymnasium's MuJoCo env
    simulators: list[Literal["taigym", "gymnasium"]] = Field(default=list(DEFAULT_SIMULATORS), min_length=1)
    adopts: list[Adoption] = []
    _folder: Path = PrivateAttr(default=Path("."))  # where the protocol file is: adopts' paths are relative to it

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
    if "gymnasium" in protocol.simulators:
        check_gymnasium_cells(protocol, path)
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


def check_gymnasium_cells(protocol: Protocol, path: Path) -> None:
    """Gymnasium cells need a task with a Gymnasium counterpart and the sb3 trainer."""
    for alg in protocol.algorithms:
        if alg.trainer != "sb3":
            raise SystemExit(f"{path}: algorithm {alg.name!r}: simulator gymnasium needs trainer sb3 "
                             f"(scripts/train.py), not {alg.trainer!r}")
    for task in protocol.tasks:
        try:
            env_id(task.id, "gymnasium")
        except SystemExit as e:
            raise SystemExit(f"{path}: simulator gymnasium: {e}") from None


def env_id(task_id: str, simulator: str) -> str:
    """The id a cell trains on: the protocol's task, or its Gymnasium counterpart (``Hopper-v5``)."""
    if simulator == "taigym":
        return task_id
    from taigym.scripts.benchmark_training import gymnasium_counterpart

    return gymnasium_counterpart(task_id)


# --- cells ---------------------------------------------------------------------------------
def resolve_config(protocol: Protocol, task: TaskEntry, alg: AlgorithmEntry, seed: int,
                   simulator: str = "taigym") -> dict:
    """The full training config of one cell: trainer defaults, then the protocol's settings.

    The budget, seed and evaluation come from the protocol and cannot be overridden by
    settings; cells record no video (it costs time and says nothing comparable). A
    Gymnasium cell gets the settings of its task, keyed by the taigym id.
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
                for simulator in protocol.simulators:
                    spec = {"protocol": protocol.name, "version": protocol.version, "task": task.id,
                            "simulator": simulator, "algorithm": alg.name, "trainer": alg.trainer, "seed": seed,
                            "budget": task.budget, "eval_episodes": protocol.eval_episodes,
                            "config": resolve_config(protocol, task, alg, seed, simulator)}
                    spec["digest"] = digest(spec)
                    # the env id names the simulator: Hopper-v0-PPO-0 (taigym), Hopper-v5-PPO-0 (Gymnasium)
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
        # Gymnasium's envs step one after another in a DummyVecEnv, MuJoCo on one thread each
        "sim_threads": 1 if cell.get("simulator") == "gymnasium" else taichi_threads(),
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


def mean_std(values) -> tuple[float, float]:
    values = [v for v in values if v is not None]
    return (float(np.mean(values)), float(np.std(values))) if values else (math.nan, math.nan)


def simulator_of(record: dict) -> str:
    return record.get("simulator", "taigym")  # records older than the key ran on taigym


def summarize(protocol: Protocol, records: list[dict]) -> list[dict]:
    """One row per (task, algorithm, simulator): mean +- std over seeds of returns and speed."""
    rows = []
    for task in protocol.tasks:
        for alg in protocol.algorithms:
            for simulator in protocol.simulators:
                group = [r for r in records if r["task"] == task.id and r["algorithm"] == alg.name
                         and simulator_of(r) == simulator]
                if group:
                    rows.append(summary_row(protocol, task, alg, simulator, group))
    return rows


def summary_row(protocol: Protocol, task: TaskEntry, alg: AlgorithmEntry, simulator: str, group: list[dict]) -> dict:
    ret, wall, sps = (mean_std([r[k] for r in group]) for k in ("eval_return_mean", "wall_time_s", "env_steps_per_s"))
    comp = group[0]["comparability"]
    return {
        "task": task.id, "algorithm": alg.name, "simulator": simulator, "env_id": group[0]["config"]["task"],
        "seeds": sorted(r["seed"] for r in group), "seeds_planned": len(protocol.seeds), "budget": task.budget,
        "adopted": {r["seed"]: r["adopted_from"]["protocol"] for r in group if r.get("adopted_from")},
        "return_mean": ret[0], "return_std": ret[1],
        "solved_return": task.solved_return,
        "solved_seeds": sum(bool(r.get("solved")) for r in group),
        "wall_time_mean_s": wall[0], "wall_time_std_s": wall[1],
        "steps_per_s_mean": sps[0], "steps_per_s_std": sps[1],
        "settings": {k: comp.get(k) for k in COMPARABILITY_COLUMNS},
    }


def disagree(a: dict | None, b: dict | None) -> bool | None:
    """Whether two summary rows' eval returns differ beyond their spread over seeds:
    ``|mean_a - mean_b| > std_a + std_b``. None when either side has no finished seed."""
    if a is None or b is None or math.isnan(a["return_mean"]) or math.isnan(b["return_mean"]):
        return None
    return abs(a["return_mean"] - b["return_mean"]) > a["return_std"] + b["return_std"]


def within_spread(a: dict | None, b: dict | None) -> bool | None:
    """Whether row ``a``'s mean eval return lies within row ``b``'s spread over seeds:
    ``|mean_a - mean_b| <= std_b``, the protocol's acceptance measure for a port (``a``,
    taigym) against the simulator it ports (``b``). None when either side has no finished seed."""
    if a is None or b is None or math.isnan(a["return_mean"]) or math.isnan(b["return_mean"]):
        return None
    return abs(a["return_mean"] - b["return_mean"]) <= b["return_std"]


DISAGREE_NOTE = ("**disagree**: the simulators' mean eval returns differ by more than the sum of their standard "
                 "deviations over seeds, |mean_taigym − mean_Gymnasium| > std_taigym + std_Gymnasium "
                 "(population std; with one seed any difference counts). **within spread**: the first "
                 "simulator's mean lies within the second's mean ± its std over seeds, "
                 "|mean_taigym − mean_Gymnasium| <= std_Gymnasium.")


def spread_tally(protocol: Protocol, summary: list[dict]) -> str:
    """`` In all: the first simulator's mean lies within the second's spread on N of M
    tasks (...).``, over the rows with both sides finished; nothing without such rows."""
    decided = [c for c in comparisons(protocol, summary) if c["within_spread"] is not None]
    if not decided:
        return ""
    outside = [c["task"].removeprefix("TaiGym/") for c in decided if not c["within_spread"]]
    labels = [SIMULATOR_LABELS[s] for s in protocol.simulators[:2]]
    return (f" In all, the {labels[0]} mean lies within the {labels[1]} spread on "
            f"{len(decided) - len(outside)} of {len(decided)} rows"
            + (f" (outside: {', '.join(outside)})." if outside else "."))


def comparisons(protocol: Protocol, summary: list[dict]) -> list[dict]:
    """Per (task, algorithm): each simulator's summary row and whether the first two disagree."""
    out = []
    for task in protocol.tasks:
        for alg in protocol.algorithms:
            sides = {r["simulator"]: r for r in summary if r["task"] == task.id and r["algorithm"] == alg.name}
            if sides:
                pair = [sides.get(sim) for sim in protocol.simulators[:2]]
                out.append({"task": task.id, "algorithm": alg.name, "sides": sides, "disagree": disagree(*pair),
                            "within_spread": within_spread(*pair)})
    return out


COMPARABILITY_COLUMNS = ("action_source", "solver", "solver_iterations", "contacts_per_env",
                         "constraint_rows_per_env", "frame_skip", "timestep_s", "integrator", "precision",
                         "sim_device", "policy_device", "num_envs", "sim_threads", "torch_threads",
                         "concurrent_cells", "cpu")


def fmt(value, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 1e5 else f"{value:.3g}"
    return str(value)


def table_rows(protocol: Protocol, summary: list[dict]) -> tuple[list[str], list[list[str]], list[str],
                                                                  list[list[str]]]:
    """Headers and cells of the results table and of the settings table."""
    head, body = results_table(summary) if len(protocol.simulators) == 1 else side_by_side_table(protocol, summary)
    many = len(protocol.simulators) > 1
    s_head = ["task", "algorithm", *(["simulator"] if many else []), *COMPARABILITY_COLUMNS]
    s_body = [[r["task"], r["algorithm"], *([SIMULATOR_LABELS[r["simulator"]]] if many else []),
               *(fmt(r["settings"].get(k), 3) if isinstance(r["settings"].get(k), float)
                 else fmt(r["settings"].get(k)) for k in COMPARABILITY_COLUMNS)]
              for r in summary]
    return head, body, s_head, s_body


def return_cell(r: dict | None) -> str:
    return "–" if r is None else f"{fmt(r['return_mean'])} ± {fmt(r['return_std'])}"


def solved_cell(r: dict | None) -> str:
    if r is None or r["solved_return"] is None:
        return "–"
    return f"{r['solved_seeds']}/{len(r['seeds'])} (≥ {r['solved_return']:g})"


def wall_cell(r: dict | None) -> str:
    return "–" if r is None else f"{fmt(r['wall_time_mean_s'])} ± {fmt(r['wall_time_std_s'])}"


def speed_cell(r: dict | None) -> str:
    return "–" if r is None else f"{fmt(r['steps_per_s_mean'], 0)} ± {fmt(r['steps_per_s_std'], 0)}"


def seeds_cell(r: dict | None) -> str:
    return "–" if r is None else f"{len(r['seeds'])}/{r['seeds_planned']}"


def results_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """One simulator: a row per (task, algorithm)."""
    head = ["task", "algorithm", "eval return (mean ± std)", "solved", "seeds", "env steps", "train wall time [s]",
            "env steps/s"]
    body = [[r["task"], r["algorithm"], return_cell(r), solved_cell(r), seeds_cell(r), f"{r['budget']:,}",
             wall_cell(r), speed_cell(r)] for r in summary]
    return head, body


def side_by_side_table(protocol: Protocol, summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Several simulators: a row per (task, algorithm), each measure once per simulator."""
    sims = protocol.simulators
    labels = [SIMULATOR_LABELS[s] for s in sims]
    head = ["task", "algorithm", *(f"eval return, {lb}" for lb in labels), "disagree", "within spread",
            *(f"solved, {lb}" for lb in labels), *(f"seeds, {lb}" for lb in labels), "env steps",
            *(f"train wall time [s], {lb}" for lb in labels), *(f"env steps/s, {lb}" for lb in labels)]
    budgets = {t.id: t.budget for t in protocol.tasks}
    body = []
    for c in comparisons(protocol, summary):
        sides = [c["sides"].get(s) for s in sims]
        flag, inside = ({True: "yes", False: "no", None: "–"}[c[k]] for k in ("disagree", "within_spread"))
        body.append([c["task"], c["algorithm"], *map(return_cell, sides), flag, inside, *map(solved_cell, sides),
                     *map(seeds_cell, sides), f"{budgets[c['task']]:,}", *map(wall_cell, sides),
                     *map(speed_cell, sides)])
    return head, body


def simulators_sentence(protocol: Protocol) -> str:
    if len(protocol.simulators) == 1:
        return ""
    return (" Every cell runs on taigym's port (`TaiGym/<Task>-v0`) and on Gymnasium's MuJoCo env "
            "(`<Task>-v5`), with the same trainer, settings and seeds.")


def markdown(protocol: Protocol, summary: list[dict], pending: int, plots: list[str], notes: str = "") -> str:
    """The page; ``notes`` (Markdown, e.g. what explains a task where the simulators differ)
    follows the results table."""
    head, body, s_head, s_body = table_rows(protocol, summary)

    def md_table(h, rows):
        lines = ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])

    parts = [f"# Leaderboard: {protocol.name} (protocol version {protocol.version})", "",
             (f"Deterministic evaluation over {protocol.eval_episodes} episodes after training for the budget; "
              f"mean ± std over seeds {protocol.seeds}. Wall time is training only (no compilation, no evaluation)."
              + simulators_sentence(protocol) + adoption_sentence(summary)),
             ""]
    if pending:
        parts += [f"**{pending} cell(s) not finished yet**: rows show the seeds done so far.", ""]
    parts += [md_table(head, body), ""]
    if len(protocol.simulators) > 1:
        parts += [DISAGREE_NOTE + spread_tally(protocol, summary), ""]
    if notes.strip():
        parts += [notes.strip(), ""]
    parts += ["## What makes these numbers comparable", "", md_table(s_head, s_body), ""]
    parts += [f"![{p}]({p})" for p in plots]
    return "\n".join(parts) + "\n"


def adoption_sentence(summary: list[dict]) -> str:
    """Which cells are an earlier protocol's records (``adopts``), or nothing."""
    adopted = [(seed, source) for row in summary for seed, source in row.get("adopted", {}).items()]
    if not adopted:
        return ""
    sources = ", ".join(sorted({source for _, source in adopted}))
    seeds = sorted({int(seed) for seed, _ in adopted})
    return (f" {len(adopted)} cells (seeds {seeds}) are {sources}'s finished records, adopted because their "
            f"settings (task, simulator, trainer, seed, budget, evaluation, training config) are this "
            f"protocol's; the others ran under this protocol.")


def html_page(protocol: Protocol, summary: list[dict], pending: int, plots: list[str]) -> str:
    head, body, s_head, s_body = table_rows(protocol, summary)
    esc = html.escape

    def table(h, rows):
        th = "".join(f"<th>{esc(c)}</th>" for c in h)
        trs = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"

    note = f"<p><b>{pending} cell(s) not finished yet</b>: rows show the seeds done so far.</p>" if pending else ""
    flag_note = (f"<p>{esc((DISAGREE_NOTE + spread_tally(protocol, summary)).replace('**', ''))}</p>"
                 if len(protocol.simulators) > 1 else "")
    imgs = "".join(f'<img src="{esc(p)}" alt="{esc(p)}">' for p in plots)
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(protocol.name)}</title>"
            f"<style>{style}</style></head><body><h1>Leaderboard: {esc(protocol.name)} (protocol version "
            f"{protocol.version})</h1><p>Deterministic evaluation over {protocol.eval_episodes} episodes after "
            f"training for the budget; mean ± std over seeds {esc(str(protocol.seeds))}. Wall time is training "
            f"only.{esc((simulators_sentence(protocol) + adoption_sentence(summary)).replace('`', ''))}</p>{note}{table(head, body)}{flag_note}"
            f"<h2>What makes these numbers comparable</h2>"
            f"{table(s_head, s_body)}{imgs}</body></html>\n")


def curve_label(record: dict, many_simulators: bool) -> str:
    if not many_simulators:
        return record["algorithm"]
    return f"{record['algorithm']} on {SIMULATOR_LABELS[simulator_of(record)]}"


def plot_task_curves(task: TaskEntry, records: list[dict], png: Path, many_simulators: bool = False) -> bool:
    """Mean training return over seeds per algorithm (and simulator), against env steps and wall time."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        if r["task"] == task.id and r["progress"]:
            groups.setdefault(curve_label(r, many_simulators), []).append(r)
    if not groups:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for i, (name, group) in enumerate(sorted(groups.items())):
        for ax, key in ((axes[0], "env_steps"), (axes[1], "wall_time_s")):
            # each seed's curve on a common x grid, where every seed has rows
            start = max(r["progress"][0][key] for r in group)
            end = min(r["progress"][-1][key] for r in group)
            grid = np.linspace(start, max(start, end), 100)
            ys = np.array([np.interp(grid, [p[key] for p in r["progress"]], [p["return_mean"] for p in r["progress"]])
                           for r in group])
            mean, std = ys.mean(0), ys.std(0)
            ax.plot(grid, mean, color=f"C{i}", label=f"{name} ({len(group)} seeds)")
            ax.fill_between(grid, mean - std, mean + std, color=f"C{i}", alpha=0.2, linewidth=0)
    if task.solved_return is not None:
        for ax in axes:
            ax.axhline(task.solved_return, color="gray", linestyle="--", linewidth=1)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("training wall time [s]")
    axes[0].set_ylabel("mean training episode return")
    axes[0].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"{task.id}: mean ± std over seeds")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return True


NOTES_FILE = "notes.md"  # beside the records: written by hand, shown on the page under the results


def render(protocol: Protocol, cells: list[dict], cells_dir: Path, out: Path, page: Path | None = None) -> dict:
    """Write leaderboard.md (or ``page``), .html and .json and one curve PNG per task into
    ``out``, with ``out``'s notes.md under the results where there is one; returns the summary."""
    from taigym.scripts.results import task_name, write_json

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
    notes = out / NOTES_FILE
    page.write_text(markdown(protocol, summary, pending, links, notes.read_text() if notes.is_file() else ""))
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
    p = argparse.ArgumentParser(prog="taigym leaderboard", description=__doc__.split("\n\n")[0])
    p.add_argument("--protocol", type=Path, default=DEFAULT_PROTOCOL, help="protocol YAML (default: %(default)s)")
    p.add_argument("--out", type=Path, help="output folder (default: results/leaderboard/<protocol name>)")
    p.add_argument("--workers", type=int, default=1,
                   help="cells run at once, each in its own process (1: in this process; default: 1)")
    p.add_argument("--ray-address", help="submit cells to the Ray cluster at this address (needs ray installed)")
    p.add_argument("--render-only", action="store_true", help="only render tables and plots of finished cells")
    p.add_argument("--publish", type=Path, metavar="DEST",
                   help="store the finished records in DEST/cells (curves thinned) and write the page DEST.md "
                        "from them, e.g. docs/leaderboard/v4; runs no cell")
    p.add_argument("--only", nargs="*", default=None, metavar="KEY",
                   help="run only these cells (their keys, e.g. InvertedPendulum-v0-PPO-0 or, on Gymnasium, "
                        "InvertedPendulum-v5-PPO-0)")
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
    adopt_cells(protocol, cells, cells_dir, log=lambda msg: print(msg, flush=True))
    if ns.seeds is not None and not set(ns.seeds) <= set(protocol.seeds):
        raise SystemExit(f"--seeds {' '.join(map(str, ns.seeds))}: {ns.protocol} has seeds {protocol.seeds}")
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
