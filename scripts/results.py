"""The results folder every trainer writes, and the measurements that go in it.

``scripts/train.py`` (stable-baselines3), ``scripts/train_ppo.py`` (PPO on the native
batch) and ``scripts/leaderboard.py`` share one layout, so a run is read the same way
whichever trainer made it:

    results/<Task>-<algo>-<seed>/
        config.yaml          the training config used (task, algo, seed, hyperparameters)
        progress.csv         env_steps, wall_time_s, episodes, return_mean, return_std, length_mean
        learning_curve.png   mean episode return against env steps and against wall time
        metrics.json         final numbers: eval returns, env steps, wall time, steps/s, settings
        eval_returns.csv     one row per deterministic evaluation episode
        model.zip | model.pt the final policy
        checkpoints/         periodic checkpoints (for --resume)
        tensorboard/         TensorBoard event files
        video.mp4 | .gif     the trained policy, from the Taichi renderer

Evaluation and video recording take a plain ``policy(obs) -> actions`` function of a
batch of observations, so they do not care which library trained the policy.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import platform
import re
import shutil
import time
from collections import deque
from pathlib import Path

import numpy as np
import yaml

PROGRESS_COLUMNS = ("env_steps", "wall_time_s", "episodes", "return_mean", "return_std", "length_mean")
EVAL_SEED_OFFSET = 1_000_000  # evaluation episodes start from states training never drew


# --- names ---------------------------------------------------------------------------------
def task_name(task_id: str) -> str:
    """'TaiGym/InvertedPendulum-v0' -> 'InvertedPendulum-v0', 'path/to/my_task.yaml' -> 'my_task'
    (a folder-safe name). Another namespace stays in the name ('dm_control/cartpole-swingup-v0'
    -> 'dm_control-cartpole-swingup-v0'): it names the simulator, the rest being the port's name."""
    if str(task_id).endswith((".yaml", ".yml")):
        return Path(task_id).stem
    namespace, _, name = str(task_id).rpartition("/")
    if namespace and namespace != "TaiGym":
        name = f"{namespace}-{name}"
    return name.replace(os.sep, "_")


def run_name(task_id: str, algo: str, seed: int) -> str:
    """The results folder's name: ``<Task>-<algo>-<seed>``."""
    return f"{task_name(task_id)}-{algo}-{seed}"


def task_config_path(task_id: str) -> Path:
    """The YAML behind a registered id (or ``task_id`` itself when it is a path)."""
    import gymnasium as gym

    from taigym import envs  # noqa: F401  registers the ids

    if task_id in gym.registry:
        return Path(gym.registry[task_id].kwargs["config"])
    path = Path(task_id)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    from taigym.tasks.errors import did_you_mean

    known = sorted(k for k in gym.registry if k.startswith("TaiGym/"))
    hint = did_you_mean(task_id, known)
    raise SystemExit(f"unknown task {task_id!r}; registered: {known}" + (f"; did you mean {hint!r}?" if hint else ""))


_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def parse_value(text: str):
    """A command-line value as YAML, except that ``3e-4`` is a number (YAML 1.1 reads a string)."""
    from taigym.scripts.config_files import ConfigFileError

    try:
        return with_numbers(yaml.safe_load(text) if text else "")
    except yaml.YAMLError as e:
        # a ValueError: argparse words it as an option's bad value, taigym train as a refusal
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ConfigFileError(f"command-line value {text!r} is not YAML ({problem})") from None


def with_numbers(value):
    """``value`` with number-like strings (``"3e-4"``) as floats, through lists and dicts."""
    if isinstance(value, str) and _NUMBER.match(value):
        return float(value)
    if isinstance(value, list):
        return [with_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: with_numbers(v) for k, v in value.items()}
    return value


# --- files ---------------------------------------------------------------------------------
@contextlib.contextmanager
def no_folder_left_on_refusal(run_dir: Path, refusals: tuple):
    """Removes ``run_dir`` when one of ``refusals`` is raised while setting up a run that made
    it, so that the retry needs no ``--overwrite``; a run that has logged progress stays."""
    run_dir = Path(run_dir)
    created = not run_dir.exists()
    try:
        yield
    except refusals:
        if created and run_dir.exists() and not (run_dir / "progress.csv").exists():
            shutil.rmtree(run_dir)
        raise


def write_yaml(path: Path, data: dict) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None))


def write_json(path: Path, data: dict) -> None:
    # written to a side file and renamed, so a reader never sees half a file
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_jsonable) + "\n")
    tmp.replace(path)


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def write_eval_returns(path: Path, returns, lengths) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["episode", "return", "length"])
        for i, (r, n) in enumerate(zip(returns, lengths)):
            w.writerow([i, f"{r:.6g}", int(n)])


# --- progress ------------------------------------------------------------------------------
class ProgressLog:
    """Episode returns seen during training, written as rows of ``progress.csv``.

    Each row holds the mean return of the last ``window`` finished episodes, so a curve
    has a value even when no episode ended since the previous row (long episodes).

    Args:
        path: the CSV file; appended to, so a resumed run continues its curve.
        window: episodes averaged per row.
        every: env steps between rows.
    """

    def __init__(self, path: Path, *, window: int = 20, every: int = 1000):
        self.path = Path(path)
        self.every = max(1, int(every))
        self.returns: deque[float] = deque(maxlen=max(1, window))
        self.lengths: deque[int] = deque(maxlen=max(1, window))
        self.episodes = 0
        self.last_row_steps = -self.every
        if not self.path.exists():
            with self.path.open("w", newline="") as f:
                csv.writer(f).writerow(PROGRESS_COLUMNS)

    def add_episodes(self, returns, lengths) -> None:
        for r, n in zip(returns, lengths):
            self.returns.append(float(r))
            self.lengths.append(int(n))
            self.episodes += 1

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else math.nan

    def maybe_write(self, env_steps: int, wall_time_s: float, *, force: bool = False) -> bool:
        """Append a row if ``every`` steps passed since the last one (and an episode ended)."""
        if not self.returns or (not force and env_steps - self.last_row_steps < self.every):
            return False
        row = (int(env_steps), f"{wall_time_s:.3f}", self.episodes, f"{self.mean_return:.6g}",
               f"{np.std(self.returns):.6g}", f"{np.mean(self.lengths):.6g}")
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow(row)
        self.last_row_steps = env_steps
        return True

    def truncate_after(self, env_steps: int) -> None:
        """Drop rows past ``env_steps`` (a resumed run redoes the steps after its checkpoint)."""
        with self.path.open(newline="") as f:
            rows = list(csv.reader(f))[1:]
        kept = [r for r in rows if int(r[0]) <= env_steps]  # rows stay as written, text for text
        with self.path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(PROGRESS_COLUMNS)
            w.writerows(kept)
        if kept:
            self.episodes = int(kept[-1][2])
            self.last_row_steps = int(kept[-1][0])


def read_progress(path: Path) -> list[dict]:
    """Rows of a ``progress.csv`` as dicts of floats."""
    path = Path(path)
    if not path.exists():
        return []
    with path.open() as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


class ProgressBar:
    """One line of progress: steps, rate, time left and the live mean episode return.

    On a terminal the line is redrawn in place; in a log file a line is printed every
    ``log_fraction`` of the run, so logs stay short.
    """

    def __init__(self, total: int, *, start: int = 0, label: str = "", stream=None, log_fraction: float = 0.1):
        import sys

        self.total, self.start, self.label = int(total), int(start), label
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()
        self.last_draw = 0.0
        self.next_log = start + log_fraction * total
        self.log_step = log_fraction * total

    def update(self, steps: int, mean_return: float, *, final: bool = False) -> None:
        now = time.perf_counter()
        if self.tty:
            if not final and now - self.last_draw < 0.25:
                return
            self.stream.write("\r" + self._line(steps, mean_return, now) + ("\n" if final else ""))
        elif final or self.next_log <= steps < self.total:  # the run's end is the final line's alone
            self.stream.write(self._line(steps, mean_return, now) + "\n")
            while self.next_log <= steps:
                self.next_log += self.log_step
        else:
            return
        self.stream.flush()
        self.last_draw = now

    def _line(self, steps: int, mean_return: float, now: float) -> str:
        frac = min(1.0, steps / max(1, self.total))
        width = 24
        filled = int(frac * width)
        bar = "#" * filled + "-" * (width - filled)
        elapsed = now - self.t0
        rate = (steps - self.start) / elapsed if elapsed > 0 else 0.0
        left = max(0, self.total - steps) / rate if rate > 0 else math.inf
        ret = "   n/a" if math.isnan(mean_return) else f"{mean_return:8.2f}"
        left_s = "?" if math.isinf(left) else f"{left:4.0f}s"
        return (f"{self.label} [{bar}] {frac:4.0%} {steps}/{self.total} steps  {rate:6.0f} steps/s  "
                f"{elapsed:5.0f}s elapsed, {left_s} left  mean return {ret}")


# --- evaluation ----------------------------------------------------------------------------
def evaluate_policy(task_id: str, policy, episodes: int, *, seed: int, task_overrides=None, serial=None) -> dict:
    """Run ``episodes`` episodes of ``policy`` (one per env of a batch), deterministic as given.

    Each env plays exactly one episode, so short episodes are not over-represented as they
    would be if the first ``episodes`` endings of a few envs were counted. Contacts and
    constraint rows per env are sampled along the way, to say how much contact the task has.

    Returns:
        dict with ``returns`` and ``lengths`` (episodes,), their mean and std, the mean
        ``nefc`` (constraint rows) and ``ncon`` (contacts) per env, and eval wall time [s].
    """
    from taigym.envs.vector import TaiGymVectorEnv

    start = time.perf_counter()
    # serial: the training World's, so that its compiled kernels serve this env too
    env = TaiGymVectorEnv(task_id, episodes, overrides=task_overrides, serial=serial)
    obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET)
    returns, lengths = np.zeros(episodes), np.zeros(episodes, dtype=np.int64)
    running = np.ones(episodes, dtype=bool)
    nefc, ncon = [], []
    while running.any():
        obs, reward, terminated, truncated, _ = env.step(np.asarray(policy(obs)).reshape(episodes, -1))
        returns += np.where(running, reward, 0.0)
        lengths += running
        if lengths.max() % 10 == 1:  # a sample every 10 steps is enough for a mean
            nefc.append(env.world.get("nefc")[running].mean())
            ncon.append(env.world.contacts()["ncon"][running].mean())
        running &= ~(terminated | truncated)
    env.close()
    return {
        "returns": returns.tolist(),
        "lengths": lengths.tolist(),
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "length_mean": float(lengths.mean()),
        "nefc_per_env": float(np.mean(nefc)) if nefc else 0.0,
        "ncon_per_env": float(np.mean(ncon)) if ncon else 0.0,
        "eval_wall_time_s": time.perf_counter() - start,
    }


# --- video ---------------------------------------------------------------------------------
def record_video(task_id: str, policy, path: Path, *, steps: int, seed: int, task_overrides=None,
                 serial=None) -> dict:
    """Write a video of ``policy`` through the Taichi renderer and ``scripts/play.py``'s writer.

    Returns ``{"video": path}`` or, when the renderer or video writer is not available here,
    ``{"video": None, "video_note": why}`` so the run still finishes with everything else.
    """
    try:
        from taigym.envs.vector import TaiGymVectorEnv
        from taigym.scripts.play import VideoWriter, video_path
    except ImportError as e:
        return {"video": None, "video_note": f"no video: the renderer is not available ({e})"}
    try:
        env = TaiGymVectorEnv(task_id, 1, overrides=task_overrides, render_mode="rgb_array", serial=serial)
    except (ValueError, ImportError) as e:
        return {"video": None, "video_note": f"no video: {e}"}
    out = video_path(Path(path))
    writer = VideoWriter(out, env.metadata["render_fps"])
    try:
        obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET)
        writer.append(env.render_frames()[0])
        for _ in range(steps):
            obs, *_ = env.step(np.asarray(policy(obs)).reshape(1, -1))
            writer.append(env.render_frames()[0])
    finally:
        writer.close()
        env.close()
    return {"video": out.name}


# --- plots ---------------------------------------------------------------------------------
def plot_learning_curve(progress_csv: Path, png: Path, *, title: str, eval_return: float | None = None) -> bool:
    """Mean episode return against env steps (left) and wall time (right); False if no rows."""
    rows = read_progress(progress_csv)
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server
    import matplotlib.pyplot as plt

    steps = np.array([r["env_steps"] for r in rows])
    wall = np.array([r["wall_time_s"] for r in rows])
    mean = np.array([r["return_mean"] for r in rows])
    std = np.array([r["return_std"] for r in rows])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, x, label in ((axes[0], steps, "env steps"), (axes[1], wall, "wall time [s]")):
        ax.plot(x, mean, color="C0", label="training episodes")
        ax.fill_between(x, mean - std, mean + std, color="C0", alpha=0.2, linewidth=0)
        if eval_return is not None:
            ax.scatter([x[-1]], [eval_return], color="C3", zorder=3, label="final deterministic eval")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("episode return")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return True


# --- what makes numbers comparable ---------------------------------------------------------
def simulation_settings(task_id: str, task_overrides=None) -> dict:
    """The task's simulation settings that change what a step costs and means."""
    from taigym.physics.model import INT_EULER, INT_IMPLICIT_SPRING_DAMPER, INT_RK4
    from taigym.tasks.task import Task

    task = Task.from_source(task_id, task_overrides)
    cfg, opt = task.config, task.model.opt
    integrators = {INT_EULER: "Euler", INT_RK4: "RK4", INT_IMPLICIT_SPRING_DAMPER: "implicitspringdamper"}
    return {
        "action_source": f"{cfg.actions.kind} on {task.action_size} actuator(s)",
        "observation_size": task.obs_size,
        "solver": f"{opt.solver} ({opt.cone} cones)",
        "solver_iterations": int(opt.iterations),
        "timestep_s": float(opt.timestep),
        "frame_skip": int(cfg.simulation.frame_skip),
        "control_dt_s": float(task.dt),
        "integrator": integrators.get(opt.integrator, str(opt.integrator)),
        "precision": cfg.simulation.precision,
        "sim_device": cfg.simulation.device,
        "episode_length": int(task.episode_length),
    }


def engine_version() -> dict:
    """Where taigym's engine was imported from and, in a git checkout, which commit it is
    (``-dirty`` with uncommitted changes): records made by different code say so."""
    import subprocess

    from taigym import physics

    source = Path(physics.__file__).resolve().parent
    try:
        proc = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=source, capture_output=True,
                              text=True, check=False)
    except OSError:  # no git on this machine
        return {"path": str(source), "git": None}
    return {"path": str(source), "git": proc.stdout.strip() if proc.returncode == 0 else None}


def machine_info() -> dict:
    """Where the numbers were measured: CPU, thread counts, library versions and the engine's
    commit."""
    import torch
    from taigym.physics.runtime.backend import ti

    from taigym import __version__

    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "taichi": f"{ti.__name__} {'.'.join(map(str, ti.__version__))}",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "taigym": __version__,
        "taigym_git": engine_version()["git"],
    }
    try:
        import stable_baselines3

        info["stable_baselines3"] = stable_baselines3.__version__
    except ImportError:
        pass
    return info
