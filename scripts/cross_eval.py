"""Trained policies evaluated on both simulators: each run's policy on its task's taigym port
and on the simulator that port ports, Gymnasium's MuJoCo env or dm_control's Control Suite task.

If a TaiGym task is the task it claims to be, a policy scores alike on both, whichever one
it was trained on; a gap between the simulators' leaderboard means that vanishes here is a
gap between trainings (seeds), not between tasks. Each run directory is one that
``taigym train`` (or a leaderboard cell) wrote: ``config.yaml``, ``model.zip`` and, where
observations were normalized, ``vecnormalize.pkl``. Evaluation is the leaderboard's:
``--episodes`` deterministic episodes, seeded from the run's seed.

    taigym cross-eval results/leaderboard/taigym-v4/cells/Ant-v*-PPO-*/run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from taigym.scripts.arguments import ArgumentParser


class CrossEvalError(ValueError):
    """A run directory that cannot be evaluated, named with what is missing."""


def task_pair(task: str) -> tuple[str, str]:
    """(taigym id, ported id) for a run's task, whichever of the two it names: the ported
    one is Gymnasium's MuJoCo env or, for a Control Suite task, dm_control's
    (``dm_control/<domain>-<task>-v0``)."""
    from taigym.scripts.benchmark_envs import GYMNASIUM
    from taigym.scripts.gymnasium_envs import DM_CONTROL_PREFIX
    from taigym.scripts.train import is_gymnasium_id, taigym_counterpart

    if is_gymnasium_id(task):
        ours = taigym_counterpart(task)
        if ours is None:
            raise CrossEvalError(f"{task!r} has no taigym port; ports exist for {sorted(GYMNASIUM.values())} "
                                 "and dm_control's Control Suite tasks")
        return ours, task
    name = task.removeprefix("TaiGym/").rsplit("-v", 1)[0]
    if name in GYMNASIUM:
        return task, GYMNASIUM[name]
    control_suite = f"{DM_CONTROL_PREFIX}{task.removeprefix('TaiGym/')}"
    if _ports(control_suite) == task:
        return task, control_suite
    raise CrossEvalError(f"{task!r} has no Gymnasium or dm_control counterpart; counterparts exist for "
                         f"{sorted(f'TaiGym/{n}-v0' for n in GYMNASIUM)} and the Control Suite's tasks")


def _ports(control_suite_id: str):
    """The taigym task that ports dm_control's ``control_suite_id``, if dm_control has it."""
    from taigym.scripts.gymnasium_envs import register
    from taigym.scripts.train import taigym_counterpart

    try:
        register(control_suite_id)
    except ImportError:  # dm_control not installed: no Control Suite counterparts
        return None
    import gymnasium as gym

    return taigym_counterpart(control_suite_id) if control_suite_id in gym.registry else None


def load_run(run_dir: Path) -> dict:
    """The run's task, seed and deterministic policy (obs -> actions, normalized as trained)."""
    from taigym.scripts.config_files import read_mapping
    from taigym.scripts.play import load_sb3_model, observation_normalizer
    from taigym.scripts.train import resolve_algorithm

    for name in ("config.yaml", "model.zip"):
        if not (run_dir / name).is_file():
            raise CrossEvalError(f"{run_dir}: no {name} (a run directory of taigym train holds config.yaml and "
                                 "model.zip)")
    cfg = read_mapping(run_dir / "config.yaml", error=CrossEvalError)
    if not {"task", "algo"} <= set(cfg):
        raise CrossEvalError(f"{run_dir / 'config.yaml'}: expected a train config with 'task' and 'algo'")
    model = load_sb3_model(resolve_algorithm(cfg["algo"]), run_dir / "model.zip", error=CrossEvalError)
    normalize = observation_normalizer(run_dir / "model.zip")

    def policy(obs):
        return model.predict(normalize(obs), deterministic=True)[0]

    return {"task": cfg["task"], "seed": int(cfg.get("seed", 0)), "algo": cfg["algo"], "policy": policy}


def cross_evaluate(run_dir: Path, episodes: int) -> dict:
    from taigym.scripts import results as R
    from taigym.scripts.gymnasium_envs import evaluate_gymnasium, is_dm_control_id
    from taigym.scripts.train import is_gymnasium_id

    run = load_run(run_dir)
    ours, theirs = task_pair(run["task"])
    on_ours = R.evaluate_policy(ours, run["policy"], episodes, seed=run["seed"])
    on_theirs = evaluate_gymnasium(theirs, run["policy"], episodes, seed=run["seed"])
    ported = "dm_control" if is_dm_control_id(theirs) else "Gymnasium"
    # the ported simulator's keys keep the name "gymnasium" (the published v4 records use it);
    # "ported" says which simulator they are
    return {"run": str(run_dir), "algo": run["algo"], "seed": run["seed"], "ported": ported,
            "trained_on": ported if is_gymnasium_id(run["task"]) else "taigym", "taigym_id": ours,
            "gymnasium_id": theirs, "on_taigym": on_ours["return_mean"], "on_taigym_std": on_ours["return_std"],
            "on_gymnasium": on_theirs["return_mean"], "on_gymnasium_std": on_theirs["return_std"],
            # the same policy's episodes and contacts on each: where a task's physics differs, these do
            "length_on_taigym": on_ours["length_mean"], "length_on_gymnasium": on_theirs["length_mean"],
            "contacts_on_taigym": on_ours["ncon_per_env"], "contacts_on_gymnasium": on_theirs["ncon_per_env"],
            "returns_on_taigym": on_ours["returns"], "returns_on_gymnasium": on_theirs["returns"]}


def markdown(rows: list[dict], episodes: int) -> str:
    names = {r.get("ported", "Gymnasium") for r in rows}
    other = names.pop() if len(names) == 1 else "the ported simulator"
    lines = [f"Mean return over {episodes} deterministic episodes (± std over episodes), mean episode length "
             "and contacts per env on each simulator.", "",
             f"| run | trained on | seed | on taigym | on {other} | length, taigym / {other} "
             f"| contacts, taigym / {other} |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['trained_on']} | {r['seed']} | {r['on_taigym']:.1f} ± {r['on_taigym_std']:.1f} "
                     f"| {r['on_gymnasium']:.1f} ± {r['on_gymnasium_std']:.1f} "
                     f"| {r['length_on_taigym']:.0f} / {r['length_on_gymnasium']:.0f} "
                     f"| {r['contacts_on_taigym']:.2f} / {r['contacts_on_gymnasium']:.2f} |")
    return "\n".join(lines)


def parse_args(argv):
    p = ArgumentParser(prog="taigym cross-eval", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run directories written by taigym train or a leaderboard cell")
    p.add_argument("--episodes", type=int, default=10, help="deterministic episodes per simulator (default: 10)")
    p.add_argument("--out", type=Path, default=None, help="JSON output; a .md table goes next to it")
    args = p.parse_args(argv)
    if args.episodes < 1:
        p.error("--episodes must be >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        rows = [cross_evaluate(run, args.episodes) for run in args.runs]
    except CrossEvalError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    table = markdown(rows, args.episodes)
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"episodes": args.episodes, "rows": rows}, indent=2))
        args.out.with_suffix(".md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
