"""Episodes under uniform random actions, on TaiGym and on Gymnasium's v5 counterpart.

    taigym random-actions                       # every task with a Gymnasium counterpart
    taigym random-actions Hopper Ant --episodes 2000 --out docs/random_actions.md

For each task, episodes are played to their end with actions drawn uniformly from the
action box, on ``TaiGym/<Task>-v0`` (the native vector env) and on Gymnasium's
``<Task>-v5``. The table gives the episode-length distribution and the causes of the
endings. A cause is one of the TaiGym task's termination terms, judged for both simulators
on the state the episode ended in (the same function on both sides), or the time limit.

The two columns must agree within their sampling error: a task whose physics, initial state
distribution or termination terms differ from Gymnasium's shows here first, before any
policy is trained on it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np
from taigym.scripts.arguments import ArgumentParser
from taigym.scripts.benchmark_envs import GYMNASIUM as COUNTERPARTS  # short name -> v5 id

TIME_LIMIT = "time limit"
# standard errors two estimates may differ by before a difference counts as real: with a
# dozen tasks and a few causes each, 4 keeps false alarms near 1 in 10,000 comparisons
Z_AGREE = 4.0


@dataclass
class Episodes:
    """Ended episodes of one simulator: lengths, whether each was truncated, its final state."""

    lengths: list = field(default_factory=list)
    truncated: list = field(default_factory=list)
    qpos: list = field(default_factory=list)
    qvel: list = field(default_factory=list)

    def add(self, length, truncated, qpos, qvel):
        self.lengths.append(int(length))
        self.truncated.append(bool(truncated))
        self.qpos.append(np.array(qpos, dtype=np.float64))
        self.qvel.append(np.array(qvel, dtype=np.float64))


def taigym_episodes(task: str, episodes: int, seed: int, num_envs: int = 64) -> Episodes:
    """``episodes`` episodes of ``TaiGym/<task>-v0``: the first ``episodes / num_envs`` of every
    env, so that short episodes are not favoured by stopping at a count."""
    from gymnasium.vector import AutoresetMode
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.scripts.results import task_config_path

    num_envs = min(num_envs, episodes)
    per_env = math.ceil(episodes / num_envs)
    env = TaiGymVectorEnv(str(task_config_path(f"TaiGym/{task}-v0")), num_envs,
                          autoreset_mode=AutoresetMode.NEXT_STEP)
    rng = np.random.default_rng(seed)
    low, high = env.single_action_space.low, env.single_action_space.high
    env.reset(seed=seed)
    out, done, steps = Episodes(), np.zeros(num_envs, int), np.zeros(num_envs, int)
    while done.min() < per_env:
        _, _, terminated, truncated, _ = env.step(rng.uniform(low, high, size=(num_envs, low.size)))
        steps += 1
        ended = np.flatnonzero(terminated | truncated)
        # in NEXT_STEP mode the World holds an ended env's last state until the next step
        qpos, qvel = env.world.get("qpos"), env.world.get("qvel")
        for i in ended:
            if done[i] < per_env:
                out.add(steps[i], truncated[i], qpos[i], qvel[i])
            done[i] += 1
        steps[ended] = -1  # the next step only resets these envs: it is no step of an episode
    env.close()
    return out


def gymnasium_episodes(gym_id: str, episodes: int, seed: int) -> Episodes:
    """``episodes`` episodes of Gymnasium's ``gym_id``, one after another in one env."""
    import gymnasium as gym

    env = gym.make(gym_id)
    rng = np.random.default_rng(seed)
    low, high = env.action_space.low, env.action_space.high
    out = Episodes()
    env.reset(seed=seed)
    data = env.unwrapped.data
    for _ in range(episodes):
        length, ended = 0, False
        while not ended:
            _, _, terminated, truncated, _ = env.step(rng.uniform(low, high))
            length += 1
            ended = terminated or truncated
        out.add(length, truncated and not terminated, data.qpos, data.qvel)
        env.reset()
    env.close()
    return out


def ending_causes(task: str, runs: Episodes) -> tuple[list[str], np.ndarray]:
    """The names of the task's termination terms and (episodes, terms) bool: which of them hold
    on each episode's final state. Both simulators' states are judged by these same terms."""
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.scripts.results import task_config_path
    from taigym.tasks import reference

    judge = TaiGymVectorEnv(str(task_config_path(f"TaiGym/{task}-v0")), len(runs.lengths))
    judge.reset(seed=0)
    world, t = judge.world, judge.task
    world.set_state(qpos=np.stack(runs.qpos), qvel=np.stack(runs.qvel))
    world.forward()
    # a state judged alone: nothing before it, so it stands for both ends of a step
    now = reference.quantities(world, t)
    with np.errstate(all="ignore"):
        flags = np.stack([reference.term(t, term, now, now)[:, 0] != 0 for term in t.terminations], axis=1) \
            if t.terminations else np.zeros((len(runs.lengths), 0), bool)
    names = [_term_label(cfg) for cfg in t.config.terminations]
    judge.close()
    return names, flags


def _term_label(cfg) -> str:
    params = ", ".join(f"{k}={v}" for k, v in (cfg.params or {}).items())
    return f"{cfg.term}({params})" if params else cfg.term


@dataclass
class Comparison:
    task: str
    gym_id: str
    episodes: int
    lengths: dict  # simulator -> (mean, std, median)
    causes: list  # (cause, taigym fraction, gymnasium fraction, agree)
    length_agree: bool

    @property
    def agree(self) -> bool:
        return self.length_agree and all(c[3] for c in self.causes)


def compare(task: str, episodes: int, seed: int = 0) -> Comparison:
    """Both simulators' episodes of ``task`` side by side, with whether they agree."""
    gym_id = COUNTERPARTS[task]
    runs = {"taigym": taigym_episodes(task, episodes, seed), "gymnasium": gymnasium_episodes(gym_id, episodes, seed)}
    lengths = {sim: _length_summary(r.lengths) for sim, r in runs.items()}
    causes = _cause_table(task, runs)
    return Comparison(task, gym_id, episodes, lengths, causes,
                      _means_agree(*(np.array(r.lengths, float) for r in runs.values())))


def _length_summary(lengths) -> tuple[float, float, float]:
    a = np.array(lengths, float)
    return float(a.mean()), float(a.std()), float(np.median(a))


def _cause_table(task: str, runs: dict) -> list:
    names, per_sim = None, {}
    for sim, r in runs.items():
        names, flags = ending_causes(task, r)
        truncated = np.array(r.truncated)[:, None]
        # a truncated episode ended on the clock, whatever its final state
        per_sim[sim] = np.concatenate([flags & ~truncated, truncated], axis=1)
    rows = []
    for k, name in enumerate([*names, TIME_LIMIT]):
        a, b = per_sim["taigym"][:, k], per_sim["gymnasium"][:, k]
        rows.append((name, float(a.mean()), float(b.mean()), _fractions_agree(a, b)))
    return rows


def _means_agree(a: np.ndarray, b: np.ndarray) -> bool:
    se = math.sqrt(a.var() / a.size + b.var() / b.size)
    return abs(a.mean() - b.mean()) <= Z_AGREE * se + 1e-9


def _fractions_agree(a: np.ndarray, b: np.ndarray) -> bool:
    # two-proportion z-test with the pooled fraction; equal fractions (both 0 or 1) agree
    p = (a.sum() + b.sum()) / (a.size + b.size)
    se = math.sqrt(p * (1 - p) * (1 / a.size + 1 / b.size))
    return abs(a.mean() - b.mean()) <= Z_AGREE * se + 1e-9


def markdown(results: list[Comparison], note: str = "") -> str:
    """The comparison as a Markdown page."""
    lines = ["# Episodes under uniform random actions: TaiGym and Gymnasium v5", "",
             "Made by `taigym random-actions`. Episode lengths as mean ± std (median); an ending cause is",
             "a termination term of the TaiGym task, judged on the final state of every episode of both",
             "simulators, or the time limit. Fractions are of all episodes. \"agree\": the difference is",
             f"within {Z_AGREE:g} standard errors (mean lengths: Welch; fractions: pooled two-proportion).", ""]
    if note:
        lines += [note, ""]
    lines += ["| task | episodes per simulator | length, TaiGym | length, Gymnasium | agree |",
              "| --- | --- | --- | --- | --- |"]
    for r in results:
        t, g = r.lengths["taigym"], r.lengths["gymnasium"]
        lines.append(f"| {r.task} | {r.episodes} | {t[0]:.1f} ± {t[1]:.1f} ({t[2]:g}) | "
                     f"{g[0]:.1f} ± {g[1]:.1f} ({g[2]:g}) | {'yes' if r.length_agree else '**no**'} |")
    lines += ["", "| task | ending cause | TaiGym | Gymnasium | agree |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        for name, a, b, ok in r.causes:
            lines.append(f"| {r.task} | `{name}` | {a:.3f} | {b:.3f} | {'yes' if ok else '**no**'} |")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = ArgumentParser(prog="taigym random-actions", description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", nargs="*", default=list(COUNTERPARTS), metavar="TASK",
                   help=f"short task names (default: all of {list(COUNTERPARTS)})")
    p.add_argument("--episodes", type=int, default=1024, help="episodes per task and simulator")
    p.add_argument("--long-episodes", type=int, default=32,
                   help="episodes for the tasks that only end on the clock (Swimmer, HalfCheetah: 1000 steps each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the Markdown table to this file")
    ns = p.parse_args(argv)
    unknown = [t for t in ns.tasks if t not in COUNTERPARTS]
    if unknown:
        p.error(f"no Gymnasium counterpart for {unknown}; known: {list(COUNTERPARTS)}")
    return ns


CLOCK_ONLY = {"Swimmer", "HalfCheetah"}  # no termination terms: every episode is 1000 steps


def main(argv=None) -> int:
    ns = parse_args(argv)
    results = []
    for task in ns.tasks:
        n = ns.long_episodes if task in CLOCK_ONLY else ns.episodes
        results.append(compare(task, n, ns.seed))
        r = results[-1]
        print(f"{task}: length {r.lengths['taigym'][0]:.1f} (TaiGym) vs {r.lengths['gymnasium'][0]:.1f} (Gymnasium) "
              f"over {n} episodes; {'agree' if r.agree else 'DIFFER'}", flush=True)
    page = markdown(results)
    if ns.out:
        from pathlib import Path

        Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
        Path(ns.out).write_text(page)
    else:
        print(page)
    return 0 if all(r.agree for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
