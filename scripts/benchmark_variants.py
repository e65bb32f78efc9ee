"""Physics or env steps/s of builds of the engine side by side, in paired turns.

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

``--task Ant`` measures the vector env users run instead: each worker makes
``gym.make_vec("TaiGym/Ant-v0", num_envs=N)`` as benchmark_envs.py does, resets it once with
``--seed`` and steps it under uniform random actions drawn anew each step; its episodes run
on from slice to slice, so autoresets happen as in training (the JSON counts the episodes
that ended).

``--instructions CALLS`` also counts each build's instructions per step, which do not swing
with the machine's load as times do: after the timed turns, each build runs once more in a
worker under valgrind's callgrind with instrumentation off, switched on
(``callgrind_control -i on``) only around CALLS env steps (or World.step calls) after its
warm-up; the timed worker compiled the kernel already, so the valgrind run loads it from
the cache. The count is split into the engine's instructions (code generated at run time:
the step kernels; or MuJoCo's library) and those around it (Python, numpy, Taichi's launch).

    taigym benchmark-variants --task Ant --num-envs 64 --rounds 4 --seconds 2 --instructions 20 \\
        --variant now= --variant before=tree:../before

``NAME=mujoco`` is MuJoCo's ``mj_step`` on the same model, in a loop over the envs (with
``--task``, the task's Gymnasium counterpart's model, frame skip and resets): the reference
for instructions per step that tests/test_instruction_ratio.py holds the engine to.

    taigym benchmark-variants --task Ant --num-envs 16 --rounds 1 --instructions 10 \\
        --variant taigym= --variant mujoco=mujoco

The report records each build's source: the module it imported, and its tree's commit and
whether that tree had uncommitted changes.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
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
    mujoco: bool = False  # MuJoCo's mj_step as the reference, not a build of the engine


def parse_variant(text: str) -> Variant:
    name, sep, spec = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--variant {text!r}: expected NAME=SPEC (SPEC may be empty)")
    if spec == "mujoco":
        return Variant(name, None, {}, mujoco=True)
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


def _this_checkouts_script(name: str):
    spec = importlib.util.spec_from_file_location(f"taigym_variants_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    while True:
        try:
            spec.loader.exec_module(module)
            return module
        except ModuleNotFoundError as missing:
            # an older tree lacks a helper script this checkout's imports (its argument parser):
            # this checkout's serves, as the script itself does
            helper = (missing.name or "").removeprefix("taigym.scripts.")
            if helper == missing.name or not (SCRIPTS / f"{helper}.py").is_file():
                raise
            helper_spec = importlib.util.spec_from_file_location(missing.name, SCRIPTS / f"{helper}.py")
            sys.modules[missing.name] = importlib.util.module_from_spec(helper_spec)
            helper_spec.loader.exec_module(sys.modules[missing.name])


def benchmark_states(B, mjm, args):
    """benchmark.py's (qpos, qvel, ctrl) for ``--model``: settled under ``--controls`` unless
    ``--smooth``, where ``mjm`` has its constraints off."""
    states = B.initial_states(mjm, args.num_envs, args.seed)
    if args.smooth:
        return states
    return B.settle(mjm, states, 1.0, 2, B.redraw_seconds(args.controls), args.seed)


class PhysicsSteps:
    """World.step(n=5) from benchmark.py's states, restarted from them every slice."""

    def __init__(self, args):
        import mujoco
        from taigym.physics.runtime.backend import ti

        from taigym import physics

        B = _this_checkouts_script("benchmark")  # every build starts from the same states
        path = B.resolve_model_path(args.model)
        mjm = mujoco.MjModel.from_xml_path(str(path))
        model, _ = B.load_our_model(path)
        if args.smooth:
            model = B.without_constraints(model, mjm)
        self.qpos, self.qvel, self.ctrl = benchmark_states(B, mjm, args)
        self.world = physics.World(model, num_envs=args.num_envs, device="cpu", precision=args.precision)
        self.sync = ti.sync
        self.source = physics.__file__
        self.steps_per_call, self.ended = STEPS_PER_CALL, 0

    def restart(self) -> None:
        self.world.set_state(qpos=self.qpos, qvel=self.qvel)
        self.world.set_ctrl(self.ctrl)

    def step(self) -> None:
        self.world.step(n=STEPS_PER_CALL)
        self.sync()

    def finite(self) -> bool:
        import numpy as np

        return bool(np.all(np.isfinite(self.world.get("qpos"))))


class EnvSteps:
    """The task's native vector env as users make it, under fresh uniform random actions."""

    def __init__(self, args):
        import numpy as np

        from taigym import physics

        E = _this_checkouts_script("benchmark_envs")  # every build is made and driven alike
        self.env = E.make_native(args.task, args.num_envs)
        self.env.reset(seed=args.seed)
        self.actions = E.action_batches(self.env, args.num_envs, args.seed)
        self.source = physics.__file__
        self.steps_per_call, self.ended, self.calls = 1, 0, 0
        self.count = np.count_nonzero
        self.obs = None

    def restart(self) -> None:
        pass  # episodes run on across slices, so that autoresets come as often as in training

    def step(self) -> None:
        self.obs, _, terminated, truncated, _ = self.env.step(self.actions[self.calls % len(self.actions)])
        self.calls += 1
        self.ended += int(self.count(terminated)) + int(self.count(truncated))

    def finite(self) -> bool:
        import numpy as np

        return bool(np.all(np.isfinite(np.asarray(self.obs))))


class MujocoSteps:
    """MuJoCo's ``mj_step`` on the same model, one MjData per env, stepped in a Python loop:
    the reference that a build's instructions per step are held against.

    With ``--task``, the task's Gymnasium counterpart (``Ant-v5``) gives the model, the frame
    skip and each env's initial state (its reset, seeded ``--seed`` + env index); each call
    is one env step, ``frame_skip`` mj_steps under fresh uniform random actions in its action
    space. MuJoCo's envs run on without resets. Without ``--task``, each call is five
    mj_steps from benchmark.py's states, as PhysicsSteps steps them."""

    def __init__(self, args):
        import mujoco
        import numpy as np

        self.mujoco, self.np = mujoco, np
        if args.task:
            self._from_gymnasium(args)
        else:
            B = _this_checkouts_script("benchmark")
            self.model = mujoco.MjModel.from_xml_path(str(B.resolve_model_path(args.model)))
            if args.smooth:  # as benchmark.without_constraints turns MuJoCo's off
                self.model.opt.disableflags |= (int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
                                                | int(mujoco.mjtDisableBit.mjDSBL_CONTACT))
            states = benchmark_states(B, self.model, args)
            self.nstep, self.actions = STEPS_PER_CALL, states[2][None]
            self.start = [(q, v) for q, v in zip(states[0], states[1])]
        self.datas = [mujoco.MjData(self.model) for _ in self.start]
        self.source = mujoco.__file__
        self.steps_per_call = 1 if args.task else STEPS_PER_CALL
        self.ended, self.calls = 0, 0  # MuJoCo's envs are never reset: none end
        self.restart()

    def _from_gymnasium(self, args) -> None:
        import gymnasium as gym

        E = _this_checkouts_script("benchmark_envs")
        if args.task not in E.GYMNASIUM:
            raise SystemExit(f"--task {args.task}: a mujoco variant needs a task with a Gymnasium counterpart "
                             f"({', '.join(E.GYMNASIUM)})")
        env = gym.make(E.GYMNASIUM[args.task]).unwrapped
        self.model, self.nstep, self.start = env.model, env.frame_skip, []
        for i in range(args.num_envs):
            env.reset(seed=args.seed + i)
            self.start.append((env.data.qpos.copy(), env.data.qvel.copy()))
        space = env.action_space
        rng = self.np.random.default_rng(args.seed)
        self.actions = rng.uniform(space.low, space.high, size=(64, args.num_envs, *space.shape))

    def restart(self) -> None:
        if self.calls == 0 or self.steps_per_call != 1:  # env steps run on, as the env variant's do
            for d, (q, v) in zip(self.datas, self.start):
                self.mujoco.mj_resetData(self.model, d)
                d.qpos[:], d.qvel[:] = q, v

    def step(self) -> None:
        actions = self.actions[self.calls % len(self.actions)]
        for d, a in zip(self.datas, actions):
            d.ctrl[:] = a
            self.mujoco.mj_step(self.model, d, self.nstep)
        self.calls += 1

    def finite(self) -> bool:
        return all(bool(self.np.all(self.np.isfinite(d.qpos))) for d in self.datas)


def timed_slice(stepper, seconds: float, num_envs: int) -> float:
    stepper.restart()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        stepper.step()
        steps += stepper.steps_per_call
    return steps * num_envs / (time.perf_counter() - start)


def worker(args) -> None:
    if args.tree:
        _import_tree(args.tree)
    stepper = MujocoSteps(args) if args.mujoco else EnvSteps(args) if args.task else PhysicsSteps(args)
    stepper.restart()
    stepper.step()  # compiles or loads the kernel
    gc.collect()  # start-up's garbage, not left for a collection within a counted run to pay
    print(PROTOCOL, "ready", stepper.source, flush=True)
    # "seconds S": a timed slice, answered with steps/s; "steps N": exactly N calls (callgrind
    # counts the instructions of those only), answered with the steps they made
    for line in sys.stdin:
        command, value = line.split()
        if command == "seconds":
            rate = timed_slice(stepper, float(value), args.num_envs)
            print(PROTOCOL, rate, stepper.finite(), stepper.ended, flush=True)
        else:
            for _ in range(int(value)):
                stepper.step()
            print(PROTOCOL, int(value) * stepper.steps_per_call, stepper.finite(), flush=True)


# --- the conductor -----------------------------------------------------------------------


class Worker:
    """A build's worker process; ``prefix`` runs it under another program (valgrind), with
    ``env`` added to its environment."""

    def __init__(self, variant: Variant, args, prefix: list[str] = (), env: dict | None = None):
        command = [*prefix, sys.executable, __file__, "--worker", "--num-envs", str(args.num_envs),
                   "--seed", str(args.seed)]
        if args.task:
            command += ["--task", args.task]
        else:
            command += ["--model", args.model, "--precision", args.precision]
            command += ["--smooth"] if args.smooth else ["--controls", args.controls]
        command += ["--tree", variant.tree] if variant.tree else []
        command += ["--mujoco"] if variant.mujoco else []
        self.variant = variant
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {}), **variant.env})
        self.source = self._reply()[1]
        self.ended = 0

    def _reply(self) -> list[str]:
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL):
                return line[len(PROTOCOL):].split()
        raise RuntimeError(f"variant {self.variant.name!r}: its worker exited with code {self.proc.wait()}")

    def _ask(self, command: str) -> list[str]:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        reply = self._reply()
        if reply[1] != "True":
            raise RuntimeError(f"variant {self.variant.name!r}: its states went non-finite")
        return reply

    def measure(self, seconds: float) -> float:
        rate, _, ended = self._ask(f"seconds {seconds}")
        self.ended = int(ended)  # episodes ended so far (env workers)
        return float(rate)

    def step(self, calls: int) -> int:
        return int(self._ask(f"steps {calls}")[0])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def take_turns(workers: list[Worker], rounds: int, seconds: float) -> dict[str, list[float]]:
    rates = {w.variant.name: [] for w in workers}
    for r in range(rounds):
        for w in workers if r % 2 == 0 else workers[::-1]:
            rates[w.variant.name].append(w.measure(seconds))
    return rates


# --- instructions under callgrind ---------------------------------------------------------


def callgrind_missing() -> str | None:
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    return None if not missing else (f"--instructions needs {' and '.join(missing)} (apt install valgrind); "
                                     "it counts instructions under valgrind's callgrind")


def instructions_per_step(variant: Variant, args, folder: Path) -> tuple[float, float]:
    """Instructions (callgrind's Ir) per env or physics step of one build over ``--instructions``
    calls after its warm-up, counted in all its threads, and of those the ones in the engine
    (in_the_engine); start-up and warm-up run uninstrumented."""
    out = folder / f"{variant.name}.callgrind"
    prefix = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
              f"--log-file={folder / variant.name}.valgrind.log"]
    # one hash seed for every build: Python's allocations, and so its collections, do not vary
    w = Worker(variant, args, prefix, env={"PYTHONHASHSEED": "0"})
    try:
        _instrument(w.proc.pid, "on")
        steps = w.step(args.instructions)
        _instrument(w.proc.pid, "off")
    finally:
        w.close()
    by_object = callgrind_by_object(out)
    if sum(by_object.values()) != _callgrind_total(out):
        raise RuntimeError(f"{out}: the objects' instructions do not add up to callgrind's total")
    per_step = steps * args.num_envs
    engine = sum(count for obj, count in by_object.items() if in_the_engine(obj))
    return sum(by_object.values()) / per_step, engine / per_step


def _instrument(pid: int, state: str) -> None:
    # the worker is waiting on its stdin: valgrind's gdbserver takes the request all the same
    subprocess.run(["callgrind_control", "-i", state, str(pid)], check=True, capture_output=True, timeout=300)


# callgrind's name for code in no file: what a JIT wrote into memory (Taichi's kernels, the
# kept machine code); MuJoCo's and Python's code is in shared objects
GENERATED = "???"


def in_the_engine(obj: str) -> bool:
    """Whether an object's instructions are physics: our generated step kernels, or MuJoCo's
    library (the reference's); the rest is Python, numpy, Taichi's launch and the like."""
    return obj == GENERATED or Path(obj).name.startswith("libmujoco")


def callgrind_by_object(path: Path) -> dict[str, int]:
    """Instructions spent in each object's own code (an executable, a shared library, or
    GENERATED), from a callgrind profile: a function's self cost lines, not the inclusive
    cost lines that follow its ``calls=`` lines."""
    names: dict[str, str] = {}  # "(id)" -> name: callgrind writes a name in full once
    totals: dict[str, int] = {}
    current, inclusive = GENERATED, False
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        if key in ("ob", "cob"):
            name = _object_name(value, names)
            current = name if key == "ob" else current
        elif key == "calls":
            inclusive = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            if not inclusive and len(fields := line.split()) > 1:
                totals[current] = totals.get(current, 0) + int(fields[1])
            inclusive = False
    return totals


def _object_name(value: str, names: dict[str, str]) -> str:
    ident, _, name = value.partition(" ")
    if not ident.startswith("("):
        return value
    if name:
        names[ident] = name
    return names[ident]


def _callgrind_total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(("totals:", "summary:")) and int(line.split()[1]) > 0:
            return int(line.split()[1])
    raise RuntimeError(f"{path}: callgrind counted no instructions")


# --- where each build came from -----------------------------------------------------------


def source_of(w: Worker) -> dict:
    """The module a worker imported, and its tree's commit and whether it had changes."""
    if w.variant.mujoco:
        from importlib.metadata import version

        return {"module": w.source, "tree": None, "commit": None, "dirty": None, "mujoco": version("mujoco")}
    root = Path(w.variant.tree) if w.variant.tree else Path(w.source).resolve().parents[1]
    source = {"module": w.source, "tree": str(root), "commit": None, "dirty": None}
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is not None and Path(top).resolve() == root.resolve():  # not a folder inside another checkout
        source["commit"] = _git(root, "rev-parse", "HEAD")
        source["dirty"] = bool(_git(root, "status", "--porcelain"))
    return source


def _git(folder: Path, *command: str) -> str | None:
    result = subprocess.run(["git", "-C", str(folder), *command], capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def describe(source: dict) -> str:
    if source.get("mujoco"):
        return f"MuJoCo {source['mujoco']}'s mj_step"
    if source["commit"] is None:
        return f"{source['tree']} (not a git checkout)"
    return f"{source['tree']} at {source['commit'][:10]}" + (", with uncommitted changes" if source["dirty"] else "")


def summary(rates: dict[str, list[float]]) -> list[dict]:
    base = next(iter(rates.values()))
    rows = []
    for name, values in rates.items():
        ratios = [a / b for a, b in zip(values, base)]
        rows.append({"variant": name, "median_steps_per_s": statistics.median(values),
                     "median_ratio": statistics.median(ratios), "min_ratio": min(ratios), "max_ratio": max(ratios)})
    return rows


def add_instructions(rows: list[dict], counts: list[tuple[float, float]]) -> None:
    for row, (count, engine) in zip(rows, counts):
        row["instructions_per_step"] = count
        row["instructions_ratio"] = count / counts[0][0]
        row["instructions_in_engine_per_step"] = engine
        row["instructions_around_engine_per_step"] = count - engine


def heading(args, load: tuple) -> str:
    if args.task:
        what = (f"Env steps/s, TaiGym/{args.task}-v0 as gym.make_vec makes it, {args.num_envs} envs, fresh uniform "
                f"random actions, autoresets on")
    else:
        states = "smooth dynamics" if args.smooth else f"contacts on, states settled under {args.controls} controls"
        what = f"Physics steps/s, {args.model}, {args.num_envs} envs, {args.precision}, {states}"
    counted = (f"; instructions per step (callgrind's Ir) over {args.instructions} "
               f"{'env steps' if args.task else 'calls of 5 steps'} after warm-up, in the engine (the generated step "
               "kernels, or MuJoCo's library) and around it (Python, numpy, the launch)" if args.instructions else "")
    return (f"{what}; {args.rounds} rounds of {args.seconds} s per build{counted}; "
            f"load average {load[0]:.2f} at start, {load[1]:.2f} at end.")


def markdown(rows: list[dict], workers: list[Worker], sources: dict, args, load: tuple) -> str:
    base = rows[0]["variant"]
    counted = "instructions_per_step" in rows[0]
    lines = [heading(args, load), "", "Sources: " + "; ".join(f"{n}: {describe(s)}" for n, s in sources.items()) + ".",
             "", f"| build | settings | steps/s (median) | ratio to {base} (median) | range |"
             + (f" instructions per step | ratio to {base} | in the engine | around it |" if counted else ""),
             "|---|---|---:|---:|---|" + ("---:|---:|---:|---:|" if counted else "")]
    for row, w in zip(rows, workers):
        settings = ", ".join([f"tree {w.variant.tree}"] if w.variant.tree else []
                             + [f"{k}={v}" for k, v in w.variant.env.items()]) or "this checkout"
        settings = "MuJoCo's mj_step" if w.variant.mujoco else settings
        line = (f"| {row['variant']} | {settings} | {row['median_steps_per_s']:,.0f} | "
                f"{row['median_ratio']:.3f} | {row['min_ratio']:.3f}–{row['max_ratio']:.3f} |")
        if counted:
            line += (f" {row['instructions_per_step']:,.0f} | {row['instructions_ratio']:.3f} |"
                     f" {row['instructions_in_engine_per_step']:,.0f} | {row['instructions_around_engine_per_step']:,.0f} |")
        lines.append(line)
    return "\n".join(lines)


def parse_args(argv):
    p = ArgumentParser(prog="taigym benchmark-variants", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                   help="a build: NAME= (this checkout), NAME=KEY=VALUE[,...] or NAME=tree:PATH[,KEY=VALUE...]; "
                        "NAME=mujoco is MuJoCo's mj_step on the same model; the first is the one the others are "
                        "compared with")
    p.add_argument("--task", default=None,
                   help="measure this task's native vector env (TaiGym/<TASK>-v0, or a task YAML) instead of "
                        "World.step on --model")
    p.add_argument("--model", default="ant", help="gymnasium MuJoCo asset name or path to an .xml file")
    p.add_argument("--num-envs", type=int, default=1024)
    p.add_argument("--precision", choices=("float32", "float64"), default="float64")
    p.add_argument("--smooth", action="store_true", help="constraints and contacts off on the model")
    p.add_argument("--controls", choices=("held", "random"), default="held",
                   help="the controls the states are settled under (benchmark.py --controls)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seconds", type=float, default=1.0, help="length of one build's slice in a round")
    p.add_argument("--instructions", type=int, default=0, metavar="CALLS",
                   help="also count instructions per step under callgrind over this many env steps (or calls of "
                        "5 physics steps) per build, after the timed turns; ~1 min per build for Ant at 64 envs "
                        "and 20 steps (default: 0, not counted)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="JSON output; a .md table goes next to it")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tree", default=None, help=argparse.SUPPRESS)
    p.add_argument("--mujoco", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.num_envs < 1 or args.rounds < 1 or args.seconds <= 0 or args.instructions < 0:
        p.error("--num-envs and --rounds must be >= 1, --seconds > 0 and --instructions >= 0")
    if not args.worker:
        if len(args.variant) < 2:
            p.error("give at least two --variant builds to compare")
        try:
            args.variant = [parse_variant(v) for v in args.variant]
        except ValueError as err:
            p.error(str(err))
        if len({v.name for v in args.variant}) < len(args.variant):
            p.error("--variant names must differ")
        if args.instructions and callgrind_missing():
            p.error(callgrind_missing())
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
    if args.task:
        for row, w in zip(rows, workers):
            row["episodes_ended"] = w.ended
    if args.instructions:
        add_instructions(rows, count_instructions(args))
    load = (start_load, os.getloadavg()[0])
    sources = {w.variant.name: source_of(w) for w in workers}
    table = markdown(rows, workers, sources, args, load)
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {"rows": rows, "load_average": load, "sources": sources,
                  "settings": {k: (v if not isinstance(v, Path) else str(v)) for k, v in vars(args).items()
                               if k not in ("variant", "worker", "tree")},
                  "variants": [vars(v) for v in args.variant]}
        args.out.write_text(json.dumps(report, indent=2))
        args.out.with_suffix(".md").write_text(table + "\n")
    return 0


def count_instructions(args) -> list[tuple[float, float]]:
    # one build at a time, after the timed turns: valgrind's slow run would load the others' turns
    counts = []
    with tempfile.TemporaryDirectory(prefix="taigym-callgrind-") as folder:
        for variant in args.variant:
            print(f"counting {variant.name}'s instructions under callgrind", file=sys.stderr, flush=True)
            start = time.perf_counter()
            counts.append(instructions_per_step(variant, args, Path(folder)))
            print(f"  {counts[-1][0]:,.0f} per step, {counts[-1][1]:,.0f} of them in the engine "
                  f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    return counts


if __name__ == "__main__":
    sys.exit(main())
