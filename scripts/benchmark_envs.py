"""Env steps per second of taigym's native vector envs next to Gymnasium's MuJoCo envs.

For each task, the native vector env (`gym.make_vec(id, num_envs=N)`, one World for the
batch) steps uniform random actions, drawn anew each step (``--actions fixed`` holds one
draw), at several batch sizes; in the same run Gymnasium's own
`<Task>-v5` (for a Control Suite task, dm_control's own through a Gymnasium wrapper,
scripts/dm_control_env.py) steps the same number of copies in a `SyncVectorEnv`, and EnvPool's
`<Task>-v5` (C++ MuJoCo envs on a thread per core; an optional dependency: without it the
column says "not installed") steps a batch of the same size. Every side includes what an
RL loop pays per step: physics with its frame skip, observations, rewards, terminations
and autoresets. Tasks without a Gymnasium counterpart (the quadrupeds, the arm) are
measured on our side only. Each side is measured ``--repeats`` times per batch size, the
sides taking turns, so that load from elsewhere on a shared machine falls on all of them
alike. The table gives each side's median env steps/s, our CPU time over wall time, the
median of the ratios within a turn and the process's peak resident memory; a PNG plots
steps/s against num_envs; the JSON keeps every turn's numbers with the machine's load,
since timings on a shared machine drift.

    python scripts/benchmark_envs.py --tasks Ant Humanoid Hopper --num-envs 1 16 64 256 1024
    python scripts/benchmark_envs.py --tasks all

Start-up is measured per task as well (``--no-startup`` skips it): a fresh process from
its start to its first completed env step (the JSON also gives each process's whole run,
its exit included), with an empty Taichi kernel cache (cold) and
then with the cache that process filled (warm; ``--startup-repeats`` times, median and
range), next to Gymnasium's ``<Task>-v5``, the two taking turns; Python reads and writes
its bytecode caches in those processes, as it does by default.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

# taigym task -> the Gymnasium env with the same definition
GYMNASIUM = {
    "InvertedPendulum": "InvertedPendulum-v5", "InvertedDoublePendulum": "InvertedDoublePendulum-v5",
    "Reacher": "Reacher-v5", "Swimmer": "Swimmer-v5", "HalfCheetah": "HalfCheetah-v5", "Hopper": "Hopper-v5",
    "Walker2d": "Walker2d-v5", "Ant": "Ant-v5", "Humanoid": "Humanoid-v5",
}


def peer_id(task: str) -> str | None:
    """The Gymnasium id of the env with the task's definition, stepped beside ours: Gymnasium's
    own ``<Task>-v5``, or dm_control's for a Control Suite task (``cartpole-swingup``:
    ``dm_control/cartpole-swingup-v0``, scripts/dm_control_env.py, registered here)."""
    if task in GYMNASIUM:
        return GYMNASIUM[task]
    if task.count("-") != 1 or importlib.util.find_spec("dm_control") is None:
        return None
    from taigym.scripts.dm_control_env import PREFIX, register_all

    env_id = f"{PREFIX}{task}-v0"
    return env_id if env_id in register_all() else None


def _one_env(peer: str | None) -> bool:
    return peer is not None and peer.startswith("dm_control/")


ACTION_BATCHES = 64  # fresh actions: a cycle of this many pre-drawn batches, drawn outside the timing


def steps_per_second(env, num_envs: int, seconds: float, seed: int, reset_seed: bool = True,
                     fresh: bool = True) -> tuple[float, float]:
    """Env steps/s of a vector env under uniform random actions, after a short warm-up, and
    the process's CPU time over wall time meanwhile (how many cores it kept busy).

    ``fresh``: a new draw each step, as a random or stochastic policy gives (a cycle of
    ACTION_BATCHES batches drawn beforehand, so the draws cost no side any time); else one
    draw held for the whole measurement, which drives every episode into the same kind of
    state. ``seed`` seeds the actions, the same for every side, and, with ``reset_seed``,
    the reset (EnvPool takes its seed when made)."""
    env.reset(seed=seed if reset_seed else None)
    batches = ACTION_BATCHES if fresh else 1
    actions = action_batches(env, num_envs, seed, batches)
    for i in range(3):
        env.step(actions[i % batches])
    steps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % batches])
        steps += 1
    wall = time.perf_counter() - start
    return num_envs * steps / wall, (time.process_time() - cpu) / wall


def action_batches(env, num_envs: int, seed: int, batches: int = ACTION_BATCHES):
    """``batches`` batches of uniform random actions for a vector env, drawn from ``seed``; an
    env with torch outputs gets them as tensors on its device, as a torch policy would give them."""
    space = env.single_action_space
    rng = np.random.default_rng(seed)
    actions = rng.uniform(space.low, space.high, size=(batches, num_envs, *space.shape)).astype(space.dtype)
    if getattr(env, "tensor_backend", "numpy") == "torch":
        import torch

        actions = torch.as_tensor(actions, device=env.device)
    return actions


def make_native(task: str, num_envs: int, device: str = "cpu", tensor_backend: str = "numpy"):
    """Our native vector env for a task, made as users make it: one World for the batch."""
    import gymnasium as gym

    from taigym import envs  # noqa: F401  (registers TaiGym ids)

    return gym.make_vec(env_id(task), num_envs=num_envs, vectorization_mode="vector_entry_point",
                        overrides={"simulation.device": device}, tensor_backend=tensor_backend)


def make_envpool(task: str, num_envs: int, seed: int):
    """EnvPool's env for the task's v5 counterpart, a batch of ``num_envs`` on one thread per
    core; "not installed" or None (no counterpart) instead."""
    if task not in GYMNASIUM:
        return None
    try:
        import envpool
    except ImportError:
        return "not installed"
    return envpool.make_gymnasium(GYMNASIUM[task], num_envs=num_envs, batch_size=num_envs,
                                  num_threads=min(num_envs, os.cpu_count() or 1), seed=seed)


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (Linux reports kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if platform.system() == "Darwin" else 2**10)


def single_agent_tasks() -> list[str]:
    import gymnasium as gym

    from taigym import envs  # noqa: F401  (registers TaiGym ids)

    return sorted(k[len("TaiGym/"):-len("-v0")] for k in gym.registry if k.startswith("TaiGym/"))


def env_id(task: str) -> str:
    """The Gymnasium id of a task name (``TaiGym/<name>-v0``) or of a task YAML of one's own,
    which is registered here (``taigym.register_task``)."""
    if task.endswith((".yaml", ".yml")):
        import taigym

        return taigym.register_task(task)
    return f"TaiGym/{task}-v0"


def measure_task(task: str, num_envs: list[int], seconds: float, seed: int, repeats: int = 3, device: str = "cpu",
                 tensor_backend: str = "numpy", fresh: bool = True, beside: str | None = None) -> list[dict]:
    """One row per batch size: each side measured ``repeats`` times, the sides taking turns,
    so that load from elsewhere on a shared machine falls on all of them alike; a row gives
    each side's median and the median of the ratios within a turn. ``device`` and
    ``tensor_backend`` are our env's (the peers run on the CPU); ``fresh`` draws new actions
    each step (``steps_per_second``). ``beside``: another taigym task (a name or a YAML file)
    stepped in the same turns, compared as ``beside_ratio`` (ours over it)."""
    import gymnasium as gym

    from taigym import envs  # noqa: F401  (registers TaiGym ids)

    rows = []
    for n in num_envs:
        sides = {"taigym": make_native(task, n, device, tensor_backend)}
        if beside is not None:
            sides["beside"] = make_native(beside, n, device, tensor_backend)
        peer = peer_id(task)
        # the row's "gymnasium" side: the same task in its own simulator, as many copies in a
        # SyncVectorEnv; dm_control's as one env (suite.load's), which steps a process's copies
        # at the same rate and spares loading a model per copy
        size = {"taigym": n, "beside": n, "envpool": n, "gymnasium": 1 if _one_env(peer) else n}
        if peer is not None:
            sides["gymnasium"] = gym.vector.SyncVectorEnv([lambda: gym.make(peer) for _ in range(size["gymnasium"])])
        pool = make_envpool(task, n, seed)
        if pool is not None and not isinstance(pool, str):
            sides["envpool"] = pool
        turns = []
        try:
            for _ in range(repeats):
                turns.append({side: steps_per_second(env, size[side], seconds, seed, reset_seed=side != "envpool",
                                                     fresh=fresh)
                              for side, env in sides.items()})
        finally:
            for env in sides.values():
                env.close()
        rows.append(_row(task, n, turns, pool if isinstance(pool, str) else None) | {"beside_task": beside})
        _print_row(rows[-1])
    return rows


def _row(task: str, n: int, turns: list[dict], envpool_note) -> dict:
    def median(side, i=0):
        return float(np.median([t[side][i] for t in turns])) if side in turns[0] else None

    def ratio(side):
        return float(np.median([t["taigym"][0] / t[side][0] for t in turns])) if side in turns[0] else None

    return dict(task=task, num_envs=n, taigym=median("taigym"), taigym_cpu_per_wall=median("taigym", 1),
                peer=peer_id(task),
                gymnasium=median("gymnasium"), ratio=ratio("gymnasium"), peak_rss_mb=peak_rss_mb(),
                envpool=median("envpool"), envpool_cpu_per_wall=median("envpool", 1), envpool_ratio=ratio("envpool"),
                envpool_note=envpool_note, beside=median("beside"), beside_ratio=ratio("beside"),
                repeats=len(turns), load_average=os.getloadavg()[0],
                turns=[{side: dict(steps_per_s=rate, cpu_per_wall=cpu) for side, (rate, cpu) in t.items()}
                       for t in turns])


def _print_row(r: dict):
    theirs, pool = r["gymnasium"], r["envpool"]
    peer = r.get("peer") or "gymnasium"
    other = "(no counterpart)" if theirs is None else f"{peer} {theirs:10,.0f}  ({r['ratio']:.2f}x)"
    if pool:
        other += f"  envpool {pool:10,.0f}  ({r['envpool_ratio']:.2f}x)"
    elif r["envpool_note"]:
        other += f"  envpool {r['envpool_note']}"
    if r.get("beside"):
        other += f"  beside {r['beside']:10,.0f}  ({r['beside_ratio']:.3f}x)"
    print(f"{r['task']:24s} {r['num_envs']:6d} envs: taigym {r['taigym']:10,.0f} (CPU/wall "
          f"{r['taigym_cpu_per_wall']:.2f})  {other}  peak RSS {r['peak_rss_mb']:,.0f} MB  load {r['load_average']:.2f}",
          flush=True)


_FIRST_STEP = """
import sys
import gymnasium as gym
kwargs = {}
env_id = sys.argv[1]
if env_id.startswith("dm_control/"):
    from taigym.scripts.dm_control_env import register_all
    register_all()
elif env_id.startswith("TaiGym/") or env_id.endswith((".yaml", ".yml")):
    import taigym
    kwargs = {"overrides": {"simulation.device": sys.argv[2]}}
    if env_id.endswith((".yaml", ".yml")):
        env_id = taigym.register_task(env_id)
env = gym.make(env_id, **kwargs)
env.reset(seed=0)
env.step(env.action_space.sample())
import time
print("first step done at", repr(time.time()), flush=True)
"""
_DONE = "first step done at "


def startup_seconds(env_id: str, cache: str, device: str = "cpu") -> tuple[float, float]:
    """Wall time of a fresh process from its start to its first completed env step (ours
    simulating on ``device``), and to the process's end (its exit included: Python's
    collections and the libraries' clean-up, which come after the first step)."""
    env = dict(os.environ, TI_OFFLINE_CACHE_FILE_PATH=cache, QD_OFFLINE_CACHE_FILE_PATH=cache)  # taichi, quadrants
    # Python as installed: modules imported from their bytecode caches (where a shell has
    # turned those off, every start would compile each module's source again, ~0.15 s)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start, clock = time.time(), time.perf_counter()  # the wall clock: the child reads the same one
    proc = subprocess.run([sys.executable, "-c", _FIRST_STEP, env_id, device], env=env, capture_output=True, text=True,
                          check=False)
    whole = time.perf_counter() - clock
    done = [line for line in proc.stdout.splitlines() if line.startswith(_DONE)]
    if proc.returncode != 0 or not done:
        raise RuntimeError(f"start-up of {env_id} failed:\n{proc.stderr[-2000:]}")
    return float(done[-1][len(_DONE):]) - start, whole


def measure_startup(task: str, device: str = "cpu", repeats: int = 3) -> dict:
    """Cold start-up of our task (once: the first start fills the cache), then ``repeats``
    warm starts taking turns with as many of Gymnasium's counterpart (no cache to fill):
    the medians, and every start in ``*_runs_s``."""
    ours = task if task.endswith((".yaml", ".yml")) else f"TaiGym/{task}-v0"
    runs = {"warm": [], "gymnasium": []}
    with tempfile.TemporaryDirectory(prefix="taigym-ticache-") as cache:
        cold = startup_seconds(ours, cache, device)
        for _ in range(repeats):
            runs["warm"].append(startup_seconds(ours, cache, device))
            if peer_id(task) is not None:
                runs["gymnasium"].append(startup_seconds(peer_id(task), cache))
    warm, theirs = ([first for first, _ in runs[side]] for side in ("warm", "gymnasium"))
    row = dict(task=task, cold_s=cold[0], warm_s=float(np.median(warm)), warm_runs_s=warm,
               gymnasium_s=float(np.median(theirs)) if theirs else None, gymnasium_runs_s=theirs,
               # to each process's end, its exit included
               cold_process_s=cold[1], warm_process_runs_s=[whole for _, whole in runs["warm"]],
               gymnasium_process_runs_s=[whole for _, whole in runs["gymnasium"]])
    other = "" if not theirs else f", gymnasium {row['gymnasium_s']:.2f} s"
    print(f"{task:24s} start-up to the first step: cold {row['cold_s']:.1f} s, warm {row['warm_s']:.2f} s "
          f"({_spread(warm)}){other}", flush=True)
    return row


def _spread(values) -> str:
    return f"{min(values):.2f}–{max(values):.2f} s" if len(values) > 1 else f"{values[0]:.2f} s"


def startup_markdown(startup: list[dict]) -> str:
    lines = ["| task | taigym, cold cache | taigym, warm cache (median, range) | Gymnasium v5 or dm_control |",
             "|---|---:|---:|---:|"]
    for r in startup:
        theirs = "—" if r["gymnasium_s"] is None else f"{r['gymnasium_s']:.2f} s"
        warm = r.get("warm_runs_s") or [r["warm_s"]]
        lines.append(f"| {r['task']} | {r['cold_s']:.1f} s | {r['warm_s']:.2f} s ({_spread(warm)}) | {theirs} |")
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict]) -> str:
    lines = ["| task | num_envs | taigym native vector env | its CPU/wall | Gymnasium v5 or dm_control, SyncVectorEnv | ratio "
             "| EnvPool v5 | ratio | peak RSS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        theirs = "—" if r["gymnasium"] is None else f"{r['gymnasium']:,.0f}"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        pool = (r.get("envpool_note") or "—") if r.get("envpool") is None else f"{r['envpool']:,.0f}"
        pool_ratio = "—" if r.get("envpool_ratio") is None else f"{r['envpool_ratio']:.2f}x"
        lines.append(f"| {r['task']} | {r['num_envs']} | {r['taigym']:,.0f} | {r['taigym_cpu_per_wall']:.2f} | {theirs} | {ratio} | "
                     f"{pool} | {pool_ratio} | {r['peak_rss_mb']:,.0f} MB |")
    beside = [r for r in rows if r.get("beside")]
    if beside:
        lines += ["", "| task | num_envs | steps/s | beside it, in the same turns | steps/s | ratio |",
                  "|---|---:|---:|---|---:|---:|"]
        lines += [f"| {r['task']} | {r['num_envs']} | {r['taigym']:,.0f} | {r['beside_task']} | {r['beside']:,.0f} | "
                  f"{r['beside_ratio']:.3f}x |" for r in beside]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], png: Path) -> bool:
    """Steps/s against num_envs per task, ours solid and Gymnasium's dashed (log-log)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for task in dict.fromkeys(r["task"] for r in rows):
        mine = [r for r in rows if r["task"] == task]
        line, = ax.plot([r["num_envs"] for r in mine], [r["taigym"] for r in mine], "o-", label=f"{task} (taigym)")
        theirs = [r for r in mine if r["gymnasium"] is not None]
        if theirs:
            ax.plot([r["num_envs"] for r in theirs], [r["gymnasium"] for r in theirs], "s--", color=line.get_color(),
                    label=f"{task} (Gymnasium, SyncVectorEnv)")
    ax.set(xscale="log", yscale="log", xlabel="num_envs", ylabel="env steps/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return True


def parse_args(argv):
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["Ant", "Humanoid", "Hopper"],
                   help="task names (TaiGym/<name>-v0) or task YAML files of one's own, or 'all' for every "
                   "registered single-agent task")
    p.add_argument("--num-envs", nargs="+", type=int, default=[1, 16, 64, 256, 1024])
    p.add_argument("--seconds", type=float, default=2.0, help="time per measurement (default: 2)")
    p.add_argument("--repeats", type=int, default=3,
                   help="measurements per side and batch size, the sides taking turns (default: 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where our envs simulate (the peers run on the CPU; default: cpu)")
    p.add_argument("--tensor-backend", choices=["numpy", "torch"], default="numpy",
                   help="our envs' outputs: numpy arrays, or torch tensors on the env's device (default: numpy)")
    p.add_argument("--actions", choices=["fresh", "fixed"], default="fresh",
                   help="uniform random actions drawn anew each step (default), or one draw held for the whole "
                        "measurement (as tables before this option were measured)")
    p.add_argument("--beside", default=None,
                   help="another taigym task (name or YAML) stepped in the same turns as each of --tasks, its "
                        "ratio reported: a task against a variant of it")
    p.add_argument("--no-startup", action="store_true", help="skip the start-up measurement")
    p.add_argument("--startup-repeats", type=int, default=3,
                   help="warm starts per task, taking turns with Gymnasium's; the table gives the median (default: 3)")
    p.add_argument("--out", type=Path, default=Path("results/benchmark_envs.json"),
                   help="JSON output; a .md table goes next to it")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    known = single_agent_tasks()
    tasks = known if args.tasks == ["all"] else args.tasks
    unknown = sorted(t for t in {*tasks, *([args.beside] if args.beside else [])} - set(known)
                     if not t.endswith((".yaml", ".yml")))
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}; registered: {known}")
    load_start = os.getloadavg()
    if args.startup_repeats < 1:
        raise SystemExit("--startup-repeats must be at least 1")
    startup = [] if args.no_startup else [measure_startup(task, args.device, args.startup_repeats) for task in tasks]
    rows = [row for task in tasks for row in measure_task(task, args.num_envs, args.seconds, args.seed, args.repeats,
                                                    args.device, args.tensor_backend, args.actions == "fresh",
                                                    args.beside)]
    from taigym.physics.runtime.backend import NAME, VERSION

    report = dict(rows=rows, startup=startup,
                  machine=dict(platform=platform.platform(), cpus=os.cpu_count(), taichi=f"{NAME} {VERSION}",
                               load_average_at_start=load_start, load_average_at_end=os.getloadavg()),
                  settings=dict(seconds=args.seconds, repeats=args.repeats, seed=args.seed, device=args.device,
                                startup_repeats=None if args.no_startup else args.startup_repeats,
                                tensor_backend=args.tensor_backend,
                                actions="uniform random, " + ("a new draw each step" if args.actions == "fresh"
                                                              else "one draw held per measurement")))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    tables = markdown(rows) + ("\n" + startup_markdown(startup) if startup else "")
    args.out.with_suffix(".md").write_text(tables)
    plotted = plot(rows, args.out.with_suffix(".png"))
    print("\n" + tables + f"\nWrote {args.out}, {args.out.with_suffix('.md')}"
          + (f" and {args.out.with_suffix('.png')}" if plotted else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
