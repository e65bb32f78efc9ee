"""The main job's training speed next to the same training on Gymnasium's MuJoCo env.

stable-baselines3 trains with one train config (``configs/train/``: algorithm, its
settings, ``num_envs``, seed, torch threads) twice per repeat, alternating: on the taigym
task through ``taigym.envs.sb3.TaiGymVecEnv`` (one World), and on Gymnasium's ``<Task>-v5``
(for a Control Suite task, dm_control's own: ``gymnasium_counterpart``) in SB3's
``DummyVecEnv`` of as many envs. Both are timed from the first to the last env
step of ``model.learn`` (set-up and kernel compilation excluded; they are start-up, timed by
``benchmark_envs.py``), and the mean return of the last 20 finished training episodes is
kept beside each, so that a faster side that learns less shows it.

    python scripts/benchmark_training.py TaiGym/InvertedPendulum-v0 --repeats 2
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from taigym.scripts.arguments import ArgumentParser
from taigym.scripts.benchmark_envs import GYMNASIUM, peer_id


def gymnasium_counterpart(task_id: str) -> str:
    """The Gymnasium id of the env whose definition the taigym task ports: Gymnasium's MuJoCo
    ``<Task>-v5``, or for a Control Suite task dm_control's own through its Gymnasium adapter
    (``TaiGym/cartpole-swingup-v0``: ``dm_control/cartpole-swingup-v0``, registered here)."""
    name = task_id.removeprefix("TaiGym/").rsplit("-v", 1)[0]
    peer = peer_id(name)
    if peer is None:
        raise SystemExit(f"{task_id} has no Gymnasium counterpart; those that do: {sorted(GYMNASIUM)} "
                         "(Gymnasium's MuJoCo envs) and the Control Suite's <domain>-<task> (dm_control's, "
                         "where dm_control is installed)")
    return peer


def make_side_env(side: str, cfg):
    """The SB3 VecEnv of one side, with episode statistics."""
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor
    from taigym.scripts import train

    if side == "taigym":
        return train.make_env(cfg)
    env_id = gymnasium_counterpart(cfg.task)  # registers dm_control's ids where it is one
    return VecMonitor(DummyVecEnv([lambda: gym.make(env_id) for _ in range(cfg.num_envs)]))


def train_once(side: str, cfg) -> dict:
    """One training run of ``cfg`` on ``side``: env steps/s over ``learn`` and the last returns."""
    import numpy as np
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from taigym.scripts import train

    class FirstStep(BaseCallback):
        # the clock starts at the first env step: set-up and compilation are start-up
        def _on_step(self) -> bool:
            if self.start is None:
                self.start = (time.perf_counter(), self.num_timesteps)
            return True

    torch.set_num_threads(cfg.torch_threads)
    env = make_side_env(side, cfg)
    env.seed(cfg.seed)
    algo_cls = train.resolve_algorithm(cfg.algo)
    model = algo_cls(cfg.policy, env, seed=cfg.seed, device=cfg.device, verbose=0,
                     **train.algorithm_kwargs(cfg, env.action_space.shape[0]))
    clock = FirstStep()
    clock.start = None
    model.learn(total_timesteps=cfg.total_timesteps, callback=clock)
    wall = time.perf_counter() - clock.start[0]
    steps = model.num_timesteps - clock.start[1]
    returns = [ep["r"] for ep in list(model.ep_info_buffer)[-20:]]
    env.close()
    return {"side": side, "env_steps": int(model.num_timesteps), "wall_s": wall, "env_steps_per_s": steps / wall,
            "last_returns_mean": float(np.mean(returns)) if returns else None}


def markdown(task: str, gym_id: str, runs: list[dict]) -> str:
    lines = [f"| repeat | {task}, env steps/s | {gym_id} (DummyVecEnv), env steps/s | ratio | "
             "last 20 episodes' return (taigym / Gymnasium) |", "|---:|---:|---:|---:|---|"]
    for k in range(len(runs) // 2):
        ours, theirs = runs[2 * k], runs[2 * k + 1]
        lines.append(f"| {k + 1} | {ours['env_steps_per_s']:,.0f} | {theirs['env_steps_per_s']:,.0f} | "
                     f"{ours['env_steps_per_s'] / theirs['env_steps_per_s']:.2f}x | "
                     f"{ours['last_returns_mean']:.1f} / {theirs['last_returns_mean']:.1f} |")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", nargs="?", default="TaiGym/InvertedPendulum-v0")
    p.add_argument("--algo", default="PPO")
    p.add_argument("--config", type=Path, default=None, help="train config (default: the task's in configs/train/)")
    p.add_argument("--repeats", type=int, default=2, help="runs per side, alternating (default: 2)")
    p.add_argument("overrides", nargs="*", help="train config overrides KEY=VALUE, e.g. total_timesteps=20000")
    p.add_argument("--out", type=Path, default=Path("results/benchmark_training.json"),
                   help="JSON output; a .md table goes next to it")
    return p.parse_intermixed_args(argv)


def main(argv=None) -> int:
    from taigym.scripts import train

    args = parse_args(argv)
    cfg, _ = train.load_config(args.task, args.algo, config_path=args.config, overrides=args.overrides)
    gym_id = gymnasium_counterpart(cfg.task)
    load_start = os.getloadavg()
    runs = []
    for _ in range(args.repeats):
        for side in ("taigym", "gymnasium"):
            runs.append(train_once(side, cfg))
            r = runs[-1]
            print(f"{side:9s} {r['env_steps']} env steps in {r['wall_s']:.1f} s: {r['env_steps_per_s']:,.0f} env steps/s, "
                  f"last episodes' return {r['last_returns_mean']}", flush=True)
    from taigym.scripts.results import machine_info

    report = dict(task=cfg.task, gymnasium=gym_id, algo=cfg.algo, num_envs=cfg.num_envs,
                  total_timesteps=cfg.total_timesteps, runs=runs,
                  machine={**machine_info(), "load_average_at_start": load_start, "load_average_at_end": os.getloadavg()})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    table = markdown(cfg.task, gym_id, runs)
    args.out.with_suffix(".md").write_text(table)
    print("\n" + table + f"\nWrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
