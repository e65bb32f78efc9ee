"""Physics steps/s of builds of the engine side by side, in paired turns.

On a shared machine whose speed swings by tens of percent within seconds, two builds timed
one after the other differ by the machine as much as by the code. Here each build runs in
a worker process of its own that stays up; the workers take turns in short slices, round
after round (the order reversed every other round), and each round's ratio to the first
build is taken while the machine is in the same mood. The table gives each build's median
steps/s and the median and range of its per-round ratio.

A build is ``NAME=SPEC``, where SPEC is empty (this checkout as installed), ``KEY=VALUE``
settings for the worker's environment separated by commas (``TAIGYM_LAYOUT=interleaved``), or
``tree:PATH``: the source tree at PATH imported instead of the installed one, for example
a ``git worktree add --detach ../before HEAD~3`` (settings may follow after a comma:
``tree:../before,TAIGYM_SCHEDULE=staged``).

    taigym benchmark-variants --model ant --num-envs 1024 \\
        --variant now= --variant interleaved=TAIGYM_LAYOUT=interleaved --variant before=tree:../before

Every build starts from the same states (benchmark.py's, settled with contacts unless
``--smooth``, under held or, with ``--controls random``, redrawn random controls) and steps ``World.step(n=5)`` in float64 (``--precision``). Each worker
compiles its build's kernel first (the offline cache keeps it), then reports ready.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from taigym.scripts.arguments import ArgumentParser

SCRIPTS = Path(__file__).resolve().parent
PROTOCOL = "taigym-variant:"  # the worker's own lines, apart from whatever else it prints
STEPS_PER_CALL = 5


@dataclass
class Variant:
    name: str
    tree: str | None
    env: dict


def parse_variant(text: str) -> Variant:
    name, sep, spec = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--variant {text!r}: expected NAME=SPEC (SPEC may be empty)")
    tree, env = None, {}
    for part in filter(None, spec.split(",")):
        if part.startswith("tree:"):
            tree = str(Path(part[len("tree:"):]).expanduser().resolve())
            if not (Path(tree) / "taigym").is_dir():
                raise ValueError(f"--variant {text!r}: {tree} holds no taigym package")
        else:
            key, eq, value = part.partition("=")
            if not eq or not key:
                raise ValueError(f"--variant {text!r}: {part!r} is neither KEY=VALUE nor tree:PATH")
            env[key] = value
    return Variant(name, tree, env)


# --- the worker --------------------------------------------------------------------------


def _import_tree(tree: str) -> None:
    # an editable install answers `import taigym` from its own finder, ahead of sys.path,
    # and this script's own imports (its argument parser) loaded the installed taigym
    # already: both go, so that the tree's taigym is the one imported from here on
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                        and "editable" not in type(f).__module__.lower()]
    for name in [n for n in sys.modules if n == "taigym" or n.startswith("taigym.")]:
        del sys.modules[name]
    sys.path.insert(0, tree)


def _this_checkouts_benchmark():
    spec = importlib.util.spec_from_file_location("taigym_variants_benchmark", SCRIPTS / "benchmark.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def worker(args) -> None:
    if args.tree:
        _import_tree(args.tree)
    import mujoco
    import numpy as np
    from taigym.physics.runtime.backend import ti

    from taigym import physics

    B = _this_checkouts_benchmark()  # every build starts from the same states

    path = B.resolve_model_path(args.model)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    states = B.initial_states(mjm, args.num_envs, args.seed)
    model, _ = B.load_our_model(path)
    if args.smooth:
        model = B.without_constraints(model, mjm)
    else:
        states = B.settle(mjm, states, 1.0, 2, B.redraw_seconds(args.controls), args.seed)
    qpos, qvel, ctrl = states
    world = physics.World(model, num_envs=args.num_envs, device="cpu", precision=args.precision)

    def restart():
        world.set_state(qpos=qpos, qvel=qvel)
        world.set_ctrl(ctrl)

    restart()
    world.step(n=STEPS_PER_CALL)
    ti.sync()
    print(PROTOCOL, "ready", physics.__file__, flush=True)
    for line in sys.stdin:
        seconds = float(line)
        restart()
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            world.step(n=STEPS_PER_CALL)
            ti.sync()
            steps += STEPS_PER_CALL
        rate = steps * args.num_envs / (time.perf_counter() - start)
        print(PROTOCOL, rate, bool(np.all(np.isfinite(world.get("qpos")))), flush=True)


# --- the conductor -----------------------------------------------------------------------


class Worker:
    def __init__(self, variant: Variant, args):
        command = [sys.executable, __file__, "--worker", "--model", args.model, "--num-envs", str(args.num_envs),
                   "--precision", args.precision, "--seed", str(args.seed)]
        command += ["--smooth"] if args.smooth else ["--controls", args.controls]
        command += ["--tree", variant.tree] if variant.tree else []
        self.variant = variant
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **variant.env))
        self.source = self._reply()[1]

    def _reply(self) -> list[str]:
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL):
                return line[len(PROTOCOL):].split()
        raise RuntimeError(f"variant {self.variant.name!r}: its worker exited with code {self.proc.wait()}")

    def measure(self, seconds: float) -> float:
        self.proc.stdin.write(f"{seconds}\n")
        self.proc.stdin.flush()
        rate, finite = self._reply()
        if finite != "True":
            raise RuntimeError(f"variant {self.variant.name!r}: its states went non-finite")
        return float(rate)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def take_turns(workers: list[Worker], rounds: int, seconds: float) -> dict[str, list[float]]:
    rates = {w.variant.name: [] for w in workers}
    for r in range(rounds):
        for w in workers if r % 2 == 0 else workers[::-1]:
            rates[w.variant.name].append(w.measure(seconds))
    return rates


def summary(rates: dict[str, list[float]]) -> list[dict]:
    base = next(iter(rates.values()))
    rows = []
    for name, values in rates.items():
        ratios = [a / b for a, b in zip(values, base)]
        rows.append({"variant": name, "median_steps_per_s": statistics.median(values),
                     "median_ratio": statistics.median(ratios), "min_ratio": min(ratios), "max_ratio": max(ratios)})
    return rows


def markdown(rows: list[dict], workers: list[Worker], args, load: tuple) -> str:
    base = rows[0]["variant"]
    states = "smooth dynamics" if args.smooth else f"contacts on, states settled under {args.controls} controls"
    lines = [(f"Physics steps/s, {args.model}, {args.num_envs} envs, {args.precision}, {states}; "
              f"{args.rounds} rounds of {args.seconds} s per build; "
              f"load average {load[0]:.2f} at start, {load[1]:.2f} at end."), "",
             f"| build | settings | steps/s (median) | ratio to {base} (median) | range |", "|---|---|---:|---:|---|"]
    for row, w in zip(rows, workers):
        settings = ", ".join([f"tree {w.variant.tree}"] if w.variant.tree else []
                             + [f"{k}={v}" for k, v in w.variant.env.items()]) or "this checkout"
        lines.append(f"| {row['variant']} | {settings} | {row['median_steps_per_s']:,.0f} | "
                     f"{row['median_ratio']:.3f} | {row['min_ratio']:.3f}–{row['max_ratio']:.3f} |")
    return "\n".join(lines)


def parse_args(argv):
    p = ArgumentParser(prog="taigym benchmark-variants", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                   help="a build: NAME= (this checkout), NAME=KEY=VALUE[,...] or NAME=tree:PATH[,KEY=VALUE...]; "
                        "the first is the one the others are compared with")
    p.add_argument("--model", default="ant", help="gymnasium MuJoCo asset name or path to an .xml file")
    p.add_argument("--num-envs", type=int, default=1024)
    p.add_argument("--precision", choices=("float32", "float64"), default="float64")
    p.add_argument("--smooth", action="store_true", help="constraints and contacts off on the model")
    p.add_argument("--controls", choices=("held", "random"), default="held",
                   help="the controls the states are settled under (benchmark.py --controls)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seconds", type=float, default=1.0, help="length of one build's slice in a round")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="JSON output; a .md table goes next to it")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tree", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.num_envs < 1 or args.rounds < 1 or args.seconds <= 0:
        p.error("--num-envs and --rounds must be >= 1 and --seconds > 0")
    if not args.worker:
        if len(args.variant) < 2:
            p.error("give at least two --variant builds to compare")
        try:
            args.variant = [parse_variant(v) for v in args.variant]
        except ValueError as err:
            p.error(str(err))
        if len({v.name for v in args.variant}) < len(args.variant):
            p.error("--variant names must differ")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    start_load = os.getloadavg()[0]
    workers = []
    try:
        for variant in args.variant:
            print(f"starting {variant.name} (compiles its kernel the first time)", file=sys.stderr, flush=True)
            workers.append(Worker(variant, args))
        rows = summary(take_turns(workers, args.rounds, args.seconds))
    finally:
        for w in workers:
            w.close()
    load = (start_load, os.getloadavg()[0])
    table = markdown(rows, workers, args, load)
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {"rows": rows, "load_average": load, "sources": {w.variant.name: w.source for w in workers},
                  "settings": {k: (v if not isinstance(v, Path) else str(v)) for k, v in vars(args).items()
                               if k not in ("variant", "worker", "tree")},
                  "variants": [vars(v) for v in args.variant]}
        args.out.write_text(json.dumps(report, indent=2))
        args.out.with_suffix(".md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
