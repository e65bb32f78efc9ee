"""Physics throughput of taigym's engine next to MuJoCo, on the same MJCF model, in one run.

What is measured, per model:

- ours: physics steps per second (``num_envs * K / seconds`` for ``World.step(n=K)``) at
  several batch sizes, in float32 and float64, on the CPU with Taichi's default thread
  count;
- MuJoCo, single thread: ``mujoco.mj_step`` called in a loop on one MjData;
- MuJoCo, multithreaded: ``mujoco.rollout`` with ``--threads`` threads over as many
  initial states as our largest batch;
- ours, start-up: import to the end of the first step in a fresh process, with an empty
  Taichi kernel cache (cold: includes compiling the step kernel) and again with the cache
  that the cold run filled (warm);
- a sanity check that both sides compute the same thing: the largest |qpos| difference
  after one step from the same states.

Both sides start from the same states (qpos0 plus small noise, random controls within
ctrlrange, held), use the model's own integrator and timestep, and by default run without
constraints: the constraint and contact stages are disabled in both models' options and
both sides step smooth dynamics only. With ``--constraints`` both run their full
pipelines, and the states are first settled by ``--settle`` seconds (default 1) of MuJoCo
simulation so that a legged robot is timed standing on its feet, with contacts, rather than
falling from its initial pose; the mean number of contacts at those states is reported.
``--controls random`` settles them under controls drawn again every 0.05 s instead, as an
agent's random actions are: the robots flail and meet their joint limits, and constraint
rows enter and leave the solver's active set as they do in an env under random actions.

Every timing is the median of several short repetitions that together last about
``--seconds``; each repetition starts again from the initial states so that the work per
step stays representative of the model rather than of a state that drifted far away.
The rows of a model are timed round-robin, one repetition of each per round, so that
load from other processes on the machine falls on every row alike and the ratios hold
even where the absolute numbers drift; the load average is reported (and warned about)
next to the numbers.

Results are printed as Markdown and written to ``--out`` (JSON) and the same path with a
``.md`` suffix.

    python scripts/benchmark.py --models humanoid ant --out results/benchmark.json
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

# mujoco, taichi and physics are imported where they are used: the start-up measurement
# imports this module in a fresh process and must not pay for imports it does not time.

REPO_ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS_NOTE = (
    "disabled on both sides: MuJoCo's and our model options both set the constraint and contact disable "
    "flags (mjDSBL_CONSTRAINT | mjDSBL_CONTACT), so joint limits and contacts are not simulated and both "
    "engines step smooth dynamics only (--constraints compares the full pipelines)"
)
CONSTRAINTS_ON_NOTE = (
    "enabled on both sides: contacts, limits and equality constraints with each model's own solver "
    "settings (both: the option solver, cone, iterations and tolerance of the MJCF)"
)
DEFAULT_NUM_ENVS = (1, 64, 256, 1024, 4096)
QUICK_NUM_ENVS = (1, 16)
QUICK_SECONDS = 0.05
STATE_NOISE = 0.01  # scale of the noise on qpos0 and on the zero velocity


# --- models ------------------------------------------------------------------------------
def resolve_model_path(name: str) -> Path:
    """A path to an MJCF file: ``name`` itself, or gymnasium's MuJoCo asset of that name."""
    path = Path(name)
    if path.suffix == ".xml" or path.exists():
        if not path.is_file():
            raise SystemExit(f"model file not found: {name}")
        return path.resolve()
    # gymnasium.envs.mujoco imports rendering dependencies; only its asset folder is needed
    root = importlib.util.find_spec("gymnasium").submodule_search_locations[0]
    asset = Path(root) / "envs" / "mujoco" / "assets" / f"{name}.xml"
    if not asset.is_file():
        raise SystemExit(f"no gymnasium MuJoCo asset named {name!r} (looked for {asset})")
    return asset


def load_our_model(path):
    """Our Model for an MJCF file, and which route built it.

    The route is ``physics.load_model``; where the MJCF importer is not available, the
    Model is rebuilt from MuJoCo's compiled model by ``tests/oracle.py`` instead.
    """
    from taigym import physics

    try:
        return physics.load_model(str(path)), "physics.load_model"
    except ImportError:
        import mujoco

        sys.path.insert(0, str(REPO_ROOT / "tests"))
        from oracle import model_from_mujoco

        return model_from_mujoco(mujoco.MjModel.from_xml_path(str(path))), "tests/oracle.py model_from_mujoco"


def without_constraints(model, mjm):
    """Our model and MuJoCo's (changed in place) with the constraint and contact stages off,
    so that both sides compare smooth dynamics."""
    import mujoco
    from taigym.physics.model import DSBL_CONSTRAINT, DSBL_CONTACT

    mjm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT) | int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    return model.with_options(disableflags=int(model.opt.disableflags) | DSBL_CONSTRAINT | DSBL_CONTACT)


def describe_model(name, path, mjm, model, route) -> dict:
    """The model's sizes and options for the report; warns where the two sides' options differ."""
    import mujoco

    ours = int(model.opt.integrator)
    theirs = int(mjm.opt.integrator)
    if ours != theirs or not math.isclose(model.opt.timestep, mjm.opt.timestep):
        print(f"WARNING: {name}: integrator/timestep differ: ours {ours}/{model.opt.timestep}, "
              f"MuJoCo {theirs}/{mjm.opt.timestep}")
    return {
        "name": name, "path": str(path), "loader": route,
        "nq": int(mjm.nq), "nv": int(mjm.nv), "nu": int(mjm.nu), "nbody": int(mjm.nbody),
        "integrator": mujoco.mjtIntegrator(theirs).name.removeprefix("mjINT_"),
        "timestep": float(mjm.opt.timestep),
    }


# --- initial states ------------------------------------------------------------------------
# how the states are settled before timing (--controls)
RANDOM_REDRAW_S = 0.05
CONTROLS = {"held": "one random control per env, held",
            "random": f"random controls drawn again every {RANDOM_REDRAW_S} s, as an agent's random actions"}


def redraw_seconds(controls: str) -> float:
    """settle()'s ``redraw`` for a --controls choice."""
    return RANDOM_REDRAW_S if controls == "random" else 0.0


def initial_states(mjm, num_envs: int, seed: int):
    """(qpos, qvel, ctrl) for ``num_envs`` envs: qpos0 and zero velocity plus small noise,
    controls uniform in ctrlrange ([-1, 1] where unlimited)."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(np.asarray(mjm.qpos0, dtype=np.float64), (num_envs, 1))
    qpos += rng.normal(scale=STATE_NOISE, size=qpos.shape)
    for j in range(mjm.njnt):
        # quaternions of free (type 0) and ball (type 1) joints must stay unit length
        start = {0: 3, 1: 0}.get(int(mjm.jnt_type[j]))
        if start is not None:
            a = int(mjm.jnt_qposadr[j]) + start
            qpos[:, a : a + 4] /= np.linalg.norm(qpos[:, a : a + 4], axis=1, keepdims=True)
    qvel = rng.normal(scale=STATE_NOISE, size=(num_envs, mjm.nv))
    ctrl = rng.uniform(*control_bounds(mjm), size=(num_envs, mjm.nu))
    return qpos, qvel, ctrl


def control_bounds(mjm):
    """Each actuator's ctrlrange, [-1, 1] where it is unlimited."""
    low, high = np.full(mjm.nu, -1.0), np.full(mjm.nu, 1.0)
    limited = np.asarray(mjm.actuator_ctrllimited, dtype=bool)
    low[limited], high[limited] = mjm.actuator_ctrlrange[limited].T
    return low, high


def settle(mjm, states, seconds: float, threads: int, redraw: float = 0.0, seed: int = 0):
    """The states after ``seconds`` of MuJoCo simulation under the controls.

    From qpos0 a legged robot starts in the air: a short timed call would measure free fall,
    not contacts. Settled states put its feet on the ground before either side is timed.
    With ``redraw`` > 0 the controls are drawn again, uniform in ctrlrange, every
    ``redraw`` seconds, as an agent's random actions are: the robots flail, meet their
    joint limits and fall, the states an env under random actions steps from, where
    constraint rows come and go. The last draw is held while timing."""
    import mujoco
    from mujoco import rollout

    qpos, qvel, ctrl = states
    nstep = round(seconds / mjm.opt.timestep)
    if nstep < 1:
        return states
    controls = ctrl[:, None, :]
    if redraw > 0:
        every = max(1, round(redraw / mjm.opt.timestep))
        draws = np.random.default_rng(seed + 1).uniform(*control_bounds(mjm), size=(len(qpos), -(-nstep // every), mjm.nu))
        controls = np.ascontiguousarray(np.repeat(draws, every, axis=1)[:, :nstep])
        ctrl = controls[:, -1].copy()
    initial = full_physics_states(mjm, qpos, qvel)
    out = np.zeros((len(qpos), nstep, initial.shape[1]))
    datas = [mujoco.MjData(mjm) for _ in range(threads)]
    rollout.rollout(mjm, datas, initial, controls, nstep=nstep, state=out)
    data = mujoco.MjData(mjm)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    settled_q, settled_v = np.empty_like(qpos), np.empty_like(qvel)
    for i in range(len(qpos)):
        mujoco.mj_setState(mjm, data, out[i, -1], spec)
        settled_q[i], settled_v[i] = data.qpos, data.qvel
    if not (np.all(np.isfinite(settled_q)) and np.all(np.isfinite(settled_v))):
        raise RuntimeError(f"MuJoCo diverged while settling the states for {seconds} s; try --settle 0")
    return settled_q, settled_v, ctrl


def mean_contacts(mjm, states) -> float:
    """MuJoCo's mean number of contacts at the given states (what the timed calls start from)."""
    import mujoco

    data = mujoco.MjData(mjm)
    total = 0
    for q, v in zip(*states[:2]):
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(mjm, data)
        total += data.ncon
    return total / len(states[0])


# --- timing -------------------------------------------------------------------------------
@dataclass
class Case:
    """One row of the table: ``advance(k)`` moves ``num_envs`` envs ``k`` steps each;
    ``prepare(k)`` runs untimed before every call (resetting the state, allocating
    outputs); ``finish()`` adds what is known once timing is over."""

    advance: Callable[[int], None]
    prepare: Callable[[int], None]
    num_envs: int
    finish: Callable[[], dict]
    k: int = 1


def calibrate(case: Case, seconds: float) -> None:
    """Compile and warm up, then pick K so that one call lasts about ``seconds / 8``."""
    case.prepare(1)
    case.advance(1)  # the first call compiles, allocates and fills caches
    k = 1
    while True:
        case.prepare(k)
        t = time.perf_counter()
        case.advance(k)
        elapsed = time.perf_counter() - t
        if elapsed >= seconds / 40 or k >= 1 << 24:
            break
        k *= 2
    case.k = max(1, round(k * (seconds / 8) / max(elapsed, 1e-9)))


def measure_interleaved(cases: list[Case], seconds: float) -> list[dict]:
    """Median steps/s of every case, timed round-robin: one call of each case per round.

    On a shared machine the load from other processes comes and goes; timing the rows one
    after another would give each its own share of it, and their ratio would measure the
    neighbours. Interleaved, every row sees the same conditions. Each case gets about
    ``seconds`` of calls and at least three.
    """
    for case in cases:
        calibrate(case, seconds)
    rates = [[] for _ in cases]
    spent = 0.0
    while min(len(r) for r in rates) < 3 or spent < seconds * len(cases):
        for case, r in zip(cases, rates):
            case.prepare(case.k)
            t = time.perf_counter()
            case.advance(case.k)
            elapsed = time.perf_counter() - t
            r.append(case.num_envs * case.k / elapsed)
            spent += elapsed
    return [{"steps_per_s": statistics.median(r), "steps_per_call": case.k, "repeats": len(r),
             "num_envs": case.num_envs, **case.finish()} for case, r in zip(cases, rates)]


def ours_case(model, states, num_envs: int, precision: str, device: str = "cpu") -> Case:
    """One World of ``num_envs`` envs stepped with ``World.step(n=K)``."""
    from taigym.physics.runtime.backend import ti

    from taigym import physics

    qpos, qvel, ctrl = (a[:num_envs] for a in states)
    world = physics.World(model, num_envs=num_envs, device=device, precision=precision)

    def prepare(_k):
        world.set_state(qpos=qpos, qvel=qvel)
        world.set_ctrl(ctrl)

    def advance(k):
        world.step(n=k)
        ti.sync()

    def finish():
        return {"finite": bool(np.all(np.isfinite(world.get("qpos")))), "precision": precision}

    return Case(advance, prepare, num_envs, finish)


def mujoco_single_thread_case(mjm, states) -> Case:
    """``mj_step`` in a loop on one MjData (MuJoCo computes in float64)."""
    import mujoco

    data = mujoco.MjData(mjm)
    qpos, qvel, ctrl = (a[0] for a in states)

    def prepare(_k):
        mujoco.mj_resetData(mjm, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos, qvel, ctrl

    def advance(k):
        for _ in range(k):
            mujoco.mj_step(mjm, data)

    return Case(advance, prepare, 1, lambda: {"finite": bool(np.all(np.isfinite(data.qpos)))})


def mujoco_rollout_case(mjm, states, threads: int, stack: contextlib.ExitStack) -> Case:
    """``mujoco.rollout`` over every initial state with ``threads`` threads (its thread
    pool lives as long as ``stack``)."""
    import mujoco
    from mujoco import rollout

    qpos, qvel, ctrl = states
    num_envs = len(qpos)
    initial = full_physics_states(mjm, qpos, qvel)
    controls = ctrl[:, None, :]  # one control per env, held for every step
    datas = [mujoco.MjData(mjm) for _ in range(threads)]
    outputs = {}
    pool = stack.enter_context(rollout.Rollout(nthread=threads))

    def prepare(k):
        # rollout writes every step's state; allocating that buffer is not stepping
        if k not in outputs:
            outputs.clear()
            outputs[k] = np.zeros((num_envs, k, initial.shape[1]))

    def advance(k):
        pool.rollout(mjm, datas, initial, controls, nstep=k, state=outputs[k])

    def finish():
        final = next(iter(outputs.values()))[:, -1]
        return {"finite": bool(np.all(np.isfinite(final))), "threads": threads}

    return Case(advance, prepare, num_envs, finish)


def full_physics_states(mjm, qpos, qvel) -> np.ndarray:
    """mujoco.rollout's initial-state rows (mjSTATE_FULLPHYSICS) for the given qpos/qvel."""
    import mujoco

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    data = mujoco.MjData(mjm)
    rows = np.empty((len(qpos), mujoco.mj_stateSize(mjm, spec)))
    for i in range(len(qpos)):
        data.qpos[:], data.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_getState(mjm, data, rows[i], spec)
    return rows


def one_step_difference(model, mjm, states, precision: str, device: str = "cpu", count: int = 8) -> float:
    """Largest |qpos| difference between our step and ``mj_step`` from the same states."""
    import mujoco

    from taigym import physics

    qpos, qvel, ctrl = (a[:count] for a in states)
    world = physics.World(model, num_envs=len(qpos), device=device, precision=precision)
    world.set_state(qpos=qpos, qvel=qvel)
    world.set_ctrl(ctrl)
    world.step(n=1)
    ours = world.get("qpos")
    data = mujoco.MjData(mjm)
    worst = 0.0
    for i in range(len(qpos)):
        mujoco.mj_resetData(mjm, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[i], qvel[i], ctrl[i]
        mujoco.mj_step(mjm, data)
        worst = max(worst, float(np.max(np.abs(ours[i] - data.qpos))))
    return worst


# --- start-up -----------------------------------------------------------------------------
_STARTUP_CHILD = """
import time
start = time.perf_counter()
import json, sys
from taigym import physics
from taigym.physics.runtime.backend import set_init_overrides
from taigym.scripts.benchmark import load_our_model
set_init_overrides(**json.loads(sys.argv[4]))
model, _ = load_our_model(sys.argv[1])
world = physics.World(model, num_envs=1, device=sys.argv[3], precision=sys.argv[2])
world.step(n=1)
world.get("qpos")
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def time_startup(path, precision: str, device: str = "cpu", init: dict | None = None) -> dict:
    """Import to first completed step in fresh processes: with an empty Taichi kernel cache
    (cold, compiles the step kernel) and with the cache the cold process filled (warm);
    ``init``: ti.init settings of the run's own (physics.runtime.backend.set_init_overrides)."""
    result = {}
    with tempfile.TemporaryDirectory(prefix="taigym-ticache-") as cache:
        env = dict(os.environ, TI_OFFLINE_CACHE_FILE_PATH=cache, QD_OFFLINE_CACHE_FILE_PATH=cache)  # taichi, quadrants
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        for kind in ("cold_s", "warm_s"):
            proc = subprocess.run([sys.executable, "-c", _STARTUP_CHILD, str(path), precision, device,
                                   json.dumps(init or {})],
                                  cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"start-up measurement failed:\n{proc.stderr[-2000:]}")
            result[kind] = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
    return result


# --- one model --------------------------------------------------------------------------
def benchmark_model(name: str, args) -> dict:
    """Every measurement of one model: ours per precision and batch size, then MuJoCo's."""
    import mujoco

    path = resolve_model_path(name)
    model, route = load_our_model(path)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    if not args.constraints:
        model = without_constraints(model, mjm)
    info = describe_model(name, path, mjm, model, route)
    print(f"\n{name}: nq={info['nq']} nv={info['nv']} nu={info['nu']} {info['integrator']} "
          f"dt={info['timestep']}; our model from {route}", flush=True)
    states = initial_states(mjm, max(args.num_envs), args.seed)
    states = settle(mjm, states, args.settle, args.threads, redraw_seconds(args.controls), args.seed)
    info["settle_s"], info["controls"] = args.settle, args.controls
    info["mean_contacts"] = mean_contacts(mjm, states)
    print(f"  timed from states settled for {args.settle} s ({CONTROLS[args.controls]}): "
          f"{info['mean_contacts']:.1f} contacts per env", flush=True)

    info["one_step_max_qpos_diff"], info["startup"] = {}, {}
    for precision in args.precision:
        info["one_step_max_qpos_diff"][precision] = one_step_difference(model, mjm, states, precision, args.device)
        if not args.no_startup:
            t = info["startup"][precision] = time_startup(path, precision, args.device, init_settings(args))
            print(f"  ours {precision} start-up: cold {t['cold_s']:.1f} s, warm {t['warm_s']:.1f} s", flush=True)
    with contextlib.ExitStack() as stack:
        cases = [ours_case(model, states, n, p, args.device) for p in args.precision for n in args.num_envs]
        cases += [mujoco_single_thread_case(mjm, states), mujoco_rollout_case(mjm, states, args.threads, stack)]
        *info["ours"], info["mujoco_1thread"], info["mujoco_rollout"] = measure_interleaved(cases, args.seconds)
    for r in info["ours"]:
        print(f"  ours {r['precision']} num_envs={r['num_envs']}: {r['steps_per_s']:,.0f} steps/s", flush=True)
    print(f"  MuJoCo mj_step 1 thread: {info['mujoco_1thread']['steps_per_s']:,.0f} steps/s", flush=True)
    print(f"  MuJoCo rollout {args.threads} threads, {max(args.num_envs)} envs: "
          f"{info['mujoco_rollout']['steps_per_s']:,.0f} steps/s", flush=True)
    for r in info["ours"]:
        r["vs_mujoco_1thread"] = r["steps_per_s"] / info["mujoco_1thread"]["steps_per_s"]
        r["vs_mujoco_rollout"] = r["steps_per_s"] / info["mujoco_rollout"]["steps_per_s"]
    return info


# --- report --------------------------------------------------------------------------------
def machine_info() -> dict:
    import mujoco
    from taigym.physics.runtime.backend import current_cfg, ti

    cfg = current_cfg()
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "taichi": f"{ti.__name__} {'.'.join(map(str, ti.__version__))}",
        "taichi_cpu_threads": int(cfg.cpu_max_num_threads),
        "taichi_whole_kernel_optimization": bool(cfg.advanced_optimization),
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "gpu": gpu_name(),
    }


def gpu_name():
    """The first NVIDIA GPU's name as nvidia-smi gives it, or None where there is none."""
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else None


def gpu_clause(mach: dict) -> str:
    return f", GPU {mach['gpu']}" if mach.get("gpu") else ""


def markdown_report(report: dict) -> str:
    s, mach = report["settings"], report["machine"]
    lines = [
        "# Physics steps/s: taigym vs MuJoCo",
        "",
        f"Constraints: {report['constraints']}.",
        "",
        (f"Machine: {mach['platform']}, {mach['cpu_count']} CPUs (Taichi uses {mach['taichi_cpu_threads']} "
         f"threads){gpu_clause(mach)}, taichi {mach['taichi']}, mujoco {mach['mujoco']}. "
         f"Load average (1, 5, 15 min) at start {mach['load_average_at_start']}, at end "
         f"{mach['load_average_at_end']}. Each row: median of repetitions lasting ~{s['seconds']} s in all."),
        "",
        (f"Engine: {report['engine']['path']} (git {report['engine']['git'] or 'unknown'}); kernels compiled "
         + ("with Taichi's whole-kernel optimizations (--optimize)."
            if mach.get("taichi_whole_kernel_optimization") else "with the device's default settings.")),
    ]
    for m in report["models"]:
        one, roll = m["mujoco_1thread"], m["mujoco_rollout"]
        lines += [
            "",
            f"## {m['name']} (nq={m['nq']}, nv={m['nv']}, nu={m['nu']}, {m['integrator']}, dt={m['timestep']})",
            "",
            f"| engine | precision | num_envs | steps/s | vs MuJoCo 1 thread | vs rollout {roll['threads']} threads |",
            "|---|---|---:|---:|---:|---:|",
        ]
        engine = "taigym" if s.get("device", "cpu") == "cpu" else f"taigym on {s['device']}"
        for r in m["ours"]:
            lines.append(f"| {engine} | {r['precision']} | {r['num_envs']} | {r['steps_per_s']:,.0f} | "
                         f"{r['vs_mujoco_1thread']:.2f}x | {r['vs_mujoco_rollout']:.2f}x |")
        lines.append(f"| MuJoCo mj_step, 1 thread | float64 | 1 | {one['steps_per_s']:,.0f} | 1.00x | "
                     f"{one['steps_per_s'] / roll['steps_per_s']:.2f}x |")
        lines.append(f"| MuJoCo rollout, {roll['threads']} threads | float64 | {roll['num_envs']} | "
                     f"{roll['steps_per_s']:,.0f} | {roll['steps_per_s'] / one['steps_per_s']:.2f}x | 1.00x |")
        if m["startup"]:
            lines += ["", "| our start-up (import to first step) | cold, empty kernel cache | warm, cached kernels |",
                      "|---|---:|---:|"]
            for precision, t in m["startup"].items():
                lines.append(f"| {precision} | {t['cold_s']:.1f} s | {t['warm_s']:.1f} s |")
        diffs = ", ".join(f"{p} {d:.1e}" for p, d in m["one_step_max_qpos_diff"].items())
        lines += ["", (f"Timed from states settled for {m['settle_s']} s of MuJoCo simulation "
                       f"({CONTROLS[m.get('controls', 'held')]}) "
                       f"({m['mean_contacts']:.1f} contacts per env there). Max |qpos| difference from mj_step after "
                       f"one step: {diffs}. Our model from {m['loader']}.")]
    lines += ["", f"Total run time: {report['total_seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown_report(report))


# --- command line -------------------------------------------------------------------------
def parse_args(argv):
    p = ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=["humanoid", "ant"],
                   help="gymnasium MuJoCo asset names or paths to .xml files (default: humanoid ant)")
    p.add_argument("--num-envs", nargs="+", type=int, default=None,
                   help=f"batch sizes for our engine (default: {' '.join(map(str, DEFAULT_NUM_ENVS))})")
    p.add_argument("--precision", nargs="+", choices=["float32", "float64"], default=["float32", "float64"])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where our engine runs (MuJoCo runs on the CPU either way; default: cpu)")
    p.add_argument("--threads", type=int, default=2, help="threads for mujoco.rollout (default: 2)")
    p.add_argument("--seconds", type=float, default=None, help="time budget per measurement (default: 1.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-startup", action="store_true", help="skip the cold/warm start-up measurement")
    p.add_argument("--optimize", action="store_true",
                   help="compile our kernels with Taichi's whole-kernel optimizations (CUDA's default): "
                        "faster steps, about a minute more to compile each step kernel the first time")
    p.add_argument("--constraints", action="store_true",
                   help="keep contacts, limits and equality constraints on both sides (default: smooth dynamics)")
    p.add_argument("--settle", type=float, default=None,
                   help="seconds of MuJoCo simulation under the held controls before timing, so that both "
                        "sides are timed from states with contacts (default: 1 with --constraints, else 0)")
    p.add_argument("--controls", choices=sorted(CONTROLS), default="held",
                   help="while settling: one random control per env, held (a robot standing: the default), or "
                        f"random controls drawn again every {RANDOM_REDRAW_S} s, as an agent's random actions "
                        "(the robots flail and meet their joint limits)")
    p.add_argument("--quick", action="store_true",
                   help=f"tiny settings for smoke tests: num_envs {' '.join(map(str, QUICK_NUM_ENVS))}, "
                        f"{QUICK_SECONDS} s per measurement")
    p.add_argument("--out", type=Path, default=Path("results/benchmark.json"),
                   help="JSON output; a .md copy of the table goes next to it (default: results/benchmark.json)")
    args = p.parse_args(argv)
    if args.num_envs is None:
        args.num_envs = list(QUICK_NUM_ENVS if args.quick else DEFAULT_NUM_ENVS)
    if args.settle is None:
        args.settle = 1.0 if args.constraints else 0.0
    if args.seconds is None:
        args.seconds = QUICK_SECONDS if args.quick else 1.5
    if min(args.num_envs) < 1 or args.threads < 1 or args.seconds <= 0 or args.settle < 0:
        p.error("--num-envs and --threads must be >= 1, --seconds > 0 and --settle >= 0")
    return args


def init_settings(args) -> dict:
    """The ti.init settings the run asks for: Taichi's whole-kernel CSE with ``--optimize``."""
    return {"advanced_optimization": True, "cfg_optimization": False} if args.optimize else {}


def load_average():
    """The 1, 5 and 15-minute load averages, where the platform has them."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def warn_if_busy(load) -> None:
    # other processes on the CPUs make every timing here slower, each by a different amount
    if load and load[0] > 0.25 * (os.cpu_count() or 1):
        print(f"WARNING: the machine is busy (1-minute load average {load[0]} on {os.cpu_count()} CPUs); "
              "timings will be noisy.", flush=True)


def main(argv=None) -> int:
    start = time.perf_counter()
    args = parse_args(argv)
    from taigym.physics.runtime.backend import set_init_overrides

    set_init_overrides(**init_settings(args))  # read when Taichi starts, here and in the start-up children
    from taigym.scripts.results import engine_version

    load_at_start = load_average()
    note = CONSTRAINTS_ON_NOTE if args.constraints else CONSTRAINTS_NOTE
    print(f"Constraints: {note}.", flush=True)
    warn_if_busy(load_at_start)
    models = [benchmark_model(name, args) for name in args.models]
    report = {
        "constraints": note,
        "machine": {**machine_info(), "load_average_at_start": load_at_start, "load_average_at_end": load_average()},
        "engine": engine_version(),
        "settings": {"num_envs": args.num_envs, "precision": args.precision, "threads": args.threads,
                     "seconds": args.seconds, "seed": args.seed, "settle_s": args.settle, "controls": args.controls,
                     "state_noise": STATE_NOISE,
                     "device": args.device},
        "models": models,
        "total_seconds": time.perf_counter() - start,
    }
    write_report(report, args.out)
    print()
    print(markdown_report(report))
    print(f"Wrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    # run as a file, the repository root is not on sys.path
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
