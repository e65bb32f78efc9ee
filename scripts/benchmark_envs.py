"""Env steps per second of taigym's native vector envs next to Gymnasium's MuJoCo envs.

For each task, the native vector env (`gym.make_vec(id, num_envs=N)`, one World for the
batch) steps random actions at several batch sizes; in the same run Gymnasium's own
`<Task>-v5` steps the same number of copies in a `SyncVectorEnv`. Both sides include what
an RL loop pays per step: physics with its frame skip, observations, rewards,
terminations and autoresets. The table gives env steps/s and the ratio, and the JSON
keeps every number with the machine's load, since timings on a shared machine drift.

    python scripts/benchmark_envs.py --tasks Ant Hopper --num-envs 1 64 1024
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

# taigym task -> the Gymnasium env with the same definition
GYMNASIUM = {
    "InvertedPendulum": "InvertedPendulum-v5", "InvertedDoublePendulum": "InvertedDoublePendulum-v5",
    "Reacher": "Reacher-v5", "Swimmer": "Swimmer-v5", "HalfCheetah": "HalfCheetah-v5", "Hopper": "Hopper-v5",
    "Walker2d": "Walker2d-v5", "Ant": "Ant-v5", "Humanoid": "Humanoid-v5",
}


def steps_per_second(env, num_envs: int, seconds: float, seed: int) -> float:
    """Env steps/s of a vector env under fixed random actions, after a short warm-up."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    space = env.single_action_space
    actions = rng.uniform(space.low, space.high, size=(num_envs, *space.shape)).astype(space.dtype)
    for _ in range(3):
        env.step(actions)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(actions)
        steps += 1
    return num_envs * steps / (time.perf_counter() - start)


def measure_task(task: str, num_envs: list[int], seconds: float, seed: int) -> list[dict]:
    import gymnasium as gym

    import envs  # noqa: F401  (registers TaiGym ids)

    rows = []
    for n in num_envs:
        ours_env = gym.make_vec(f"TaiGym/{task}-v0", num_envs=n, vectorization_mode="vector_entry_point")
        ours = steps_per_second(ours_env, n, seconds, seed)
        ours_env.close()
        theirs_env = gym.vector.SyncVectorEnv([lambda: gym.make(GYMNASIUM[task]) for _ in range(n)])
        theirs = steps_per_second(theirs_env, n, seconds, seed)
        theirs_env.close()
        rows.append(dict(task=task, num_envs=n, taigym=ours, gymnasium=theirs, ratio=ours / theirs))
        print(f"{task:24s} {n:6d} envs: taigym {ours:10,.0f}  gymnasium {theirs:10,.0f}  ({ours / theirs:.2f}x)",
              flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| task | num_envs | taigym native vector env | Gymnasium v5, SyncVectorEnv | ratio |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['task']} | {r['num_envs']} | {r['taigym']:,.0f} | {r['gymnasium']:,.0f} | {r['ratio']:.2f}x |"
              for r in rows]
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["Ant", "Hopper"], choices=sorted(GYMNASIUM))
    p.add_argument("--num-envs", nargs="+", type=int, default=[1, 64, 1024])
    p.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default: 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("results/benchmark_envs.json"),
                   help="JSON output; a .md table goes next to it")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    load_start = os.getloadavg()
    rows = [row for task in args.tasks for row in measure_task(task, args.num_envs, args.seconds, args.seed)]
    report = dict(rows=rows, machine=dict(platform=platform.platform(), cpus=os.cpu_count(),
                                          load_average_at_start=load_start, load_average_at_end=os.getloadavg()),
                  settings=dict(seconds=args.seconds, seed=args.seed, actions="uniform random, fixed per run"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    args.out.with_suffix(".md").write_text(markdown(rows))
    print("\n" + markdown(rows) + f"\nWrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
