"""The GPU probe: what a short time on a GPU machine should measure, in one command.

    taigym gpu-probe OUTDIR                      # on a GPU machine: about 8 minutes
    taigym gpu-probe OUTDIR --quick --device cpu # the rehearsal: tiny sizes, the same code

Every measurement runs in a process of its own, under a time limit, and appends one JSON
record to ``OUTDIR/probe.jsonl`` the moment it has its result: a measurement that fails,
hangs or runs out of memory costs only itself, and a probe cut short keeps everything it
measured before. The items, in order of value:

- ``device``: the GPU, its driver and memory, the CPU, Python, Taichi and MuJoCo versions;
- ``compile``: import to the first step of Ant's and Humanoid's step kernels, with an empty
  kernel cache (cold) and again with the cache it filled (warm); the cold process also
  records the GPU memory in use before Taichi starts, after it starts and after the first
  launch (CUDA reserves a kernel's local memory for every thread the GPU can hold), and
  dumps the kernels' PTX, whose registers, stack frame and spills ``ptxas -v`` reports;
- ``physics``: physics steps/s with contacts, from states settled under random controls
  (as scripts/benchmark.py does), per model, precision and batch size, under the fused
  schedule and, at every size beside it, the staged one (physics/step/schedule.py); and
  MuJoCo's ``rollout`` on all the machine's CPU threads from the same states;
- ``phases``: the staged schedule's time per phase, from Taichi's kernel profiler;
- ``group_solve``: Ant's physics under the staged schedule with its constraint solve by a
  thread block per env (``TAIGYM_SOLVE=group``), and its trajectory against the CPU's;
- ``trajectory``: 64 Ant envs, float64, 60 steps of random controls, on the GPU (fused and
  staged) and on the CPU in processes of their own, and the largest differences between
  the CPU's and each GPU run;
- ``env_steps``: the vector env with torch outputs (random actions drawn anew each step,
  autoresets included);
- ``variant``: Ant's physics steps/s in float32 under other compile options (thread block
  size, register limit, Taichi's whole-kernel CSE),
  layouts (the staged schedule env-major against interleaved) and, where it is installed,
  quadrants (its staged launch one graph kernel, and its fused kernel), each compiled in
  a process and cache of its own;
- ``cuda_tests``: the engine's test list on CUDA, with whatever time is left.

``--budget`` seconds bound the whole probe: no item starts that could not end within it.
``summary.md`` in OUTDIR gives the table from the records (``--summarize`` rebuilds it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS = ("ant", "humanoid")
FULL = {"num_envs": (1024, 4096, 16384, 65536), "env_num_envs": (4096, 16384), "seconds": 1.0, "settle": 0.2,
        "settled_states": 8192, "trajectory_envs": 64, "trajectory_steps": 60}
QUICK = {"num_envs": (2, 4), "env_num_envs": (2,), "seconds": 0.05, "settle": 0.02,
         "settled_states": 4, "trajectory_envs": 3, "trajectory_steps": 4}
# builds tried against the default one (Ant, float32): the engine's switches in the child's
# environment, and under TI_INIT the probe's own ti.init settings for the child
# (physics.runtime.backend.set_init_overrides)
TI_INIT = "ti_init"
# the fused rows: one thread walks an env's step, in the layout it steps fastest on CUDA
FUSED = {"TAIGYM_SCHEDULE": "fused", "TAIGYM_LAYOUT": "env_major"}
VARIANTS = {
    "default": FUSED,
    "layout_interleaved": {**FUSED, "TAIGYM_LAYOUT": "interleaved"},
    "block_dim_32": {**FUSED, TI_INIT: {"default_gpu_block_dim": 32}},
    "block_dim_128": {**FUSED, TI_INIT: {"default_gpu_block_dim": 128}},
    # Taichi's whole-kernel CSE off, its control-flow pass on: the CPU's compile options
    "optimize_off": {**FUSED, TI_INIT: {"advanced_optimization": False, "cfg_optimization": True}},
    "max_reg_64": {**FUSED, TI_INIT: {"gpu_max_reg": 64}},
    # each phase of the step a parallel loop over env x element (physics/step/schedule.py),
    # in the device's layout (interleaved on CUDA)
    "staged": {"TAIGYM_SCHEDULE": "staged"},
    "staged_env_major": {"TAIGYM_SCHEDULE": "staged", "TAIGYM_LAYOUT": "env_major"},
    # the staged schedule with its constraint solve by a thread block per env (TAIGYM_SOLVE,
    # physics/constraint/primal/lane_group.py): Newton and CG with pyramidal cones only
    "staged_group": {"TAIGYM_SCHEDULE": "staged", "TAIGYM_SOLVE": "group"},
    # quadrants where it is installed: the staged launch as one graph kernel (its steps and
    # RK4 passes device-side loops), and its fused kernel
    "quadrants_staged": {"TAIGYM_TAICHI": "quadrants", "TAIGYM_SCHEDULE": "staged"},
    "quadrants": {**FUSED, "TAIGYM_TAICHI": "quadrants"},
}
QUADRANTS_VARIANTS = ("quadrants_staged", "quadrants")
VARIANT_NUM_ENVS = (1024, 4096, 16384)
NCU_NUM_ENVS = 4096
NCU_LAUNCHES = 100  # a staged step's first launches: its plan, then a forward() pass's ~70-90 loops
# Nsight Compute's sections and metrics for a launch: occupancy, warp stall reasons, L1 and L2
# hit rates, local-memory traffic, instructions executed
NCU_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis",
                "SchedulerStats", "InstructionStats")
NCU_METRICS = ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
               "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct", "smsp__inst_executed.sum")
# the counters a record keeps for each kernel (the CSV beside it keeps them all)
NCU_KEEP = re.compile(r"Kernel Name|^ID$|gpu__time_duration\.sum|warps_active\.avg\.pct|maximum_warps_per_active"
                      r"|registers_per_thread|launch__block_size|launch__grid_size|hit_rate\.pct|local_op"
                      r"|inst_executed\.sum$|issue_stalled_\w+_per_issue_active\.ratio|dram__bytes|throughput\.avg\.pct_of_peak")


ITEMS = ("schedules", "group_solve", "rollout", "two_cores", "ncu", "quadrants_staged", "trajectory", "layouts", "env_steps", "float64",
         "options", "cuda_tests")  # Probe.items' names, in its order


# --- records -----------------------------------------------------------------------------
def append(outdir: Path, record: dict) -> None:
    """One record, written and flushed at once: a probe killed later keeps it."""
    record = {"time": round(time.time(), 3), **record}
    with open(outdir / "probe.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
    print(json.dumps(record), flush=True)


def read_records(outdir: Path) -> list[dict]:
    path = outdir / "probe.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- the device ----------------------------------------------------------------------------
def nvidia_smi(fields: str) -> list[str] | None:
    """nvidia-smi's values for the first GPU, or None where there is none."""
    try:
        proc = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return [v.strip() for v in proc.stdout.strip().splitlines()[0].split(",")]


def gpu_memory_used_mib() -> float | None:
    values = nvidia_smi("memory.used")
    return float(values[0]) if values else None


def device_record() -> dict:
    from taigym.physics.runtime.backend import NAME, VERSION

    record = {"item": "device", "python": platform.python_version(), "platform": platform.platform(),
              "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()), "taichi": f"{NAME} {VERSION}"}
    fields = "name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,clocks.mem,compute_cap"
    values = nvidia_smi(fields)
    record["gpu"] = dict(zip(fields.split(","), values)) if values else None
    for module in ("mujoco", "torch", "numpy"):
        try:
            record[module] = __import__(module).__version__
        except ImportError:
            record[module] = None
    try:
        from taigym.scripts.results import engine_version

        record["engine"] = engine_version()
    except Exception as e:  # noqa: BLE001 - the probe goes on without the commit
        record["engine"] = repr(e)
    return record


# --- children: one measurement each ----------------------------------------------------------
def model_path(name: str) -> Path:
    from taigym.scripts.benchmark import resolve_model_path

    return resolve_model_path(name)


def first_step(device: str, model: str, precision: str) -> dict:
    """Import to the end of a first one-env step (compiling or loading the step kernel), and
    the GPU memory in use before Taichi starts, after it starts and after that launch."""
    start = time.perf_counter()
    memory = {"before_taichi_mib": gpu_memory_used_mib()}
    from taigym.physics.runtime.backend import ensure_runtime, ti

    from taigym import physics

    ensure_runtime(device)
    memory["after_init_mib"] = gpu_memory_used_mib()
    world = physics.World(physics.load_model(str(model_path(model))), num_envs=1, device=device, precision=precision)
    world.step(n=1)
    ti.sync()
    seconds = time.perf_counter() - start
    memory["after_first_step_mib"] = gpu_memory_used_mib()
    return {"first_step_s": seconds, "gpu_memory": memory, "finite": bool(np.isfinite(world.get("qpos")).all())}


def settled_states(work: Path, model: str, count: int, settle: float, seed: int = 0):
    """States settled by MuJoCo under random controls, kept in OUTDIR for the other children."""
    import mujoco
    from taigym.scripts import benchmark as B

    path = Path(work) / f"states-{model}-{count}.npz"
    if path.exists():
        z = np.load(path)
        return z["qpos"], z["qvel"], z["ctrl"]
    mjm = mujoco.MjModel.from_xml_path(str(model_path(model)))
    states = B.initial_states(mjm, count, seed)
    states = B.settle(mjm, states, settle, os.cpu_count() or 1, B.redraw_seconds("random"), seed)
    np.savez(path, qpos=states[0], qvel=states[1], ctrl=states[2])
    return states


def tiled(states, n: int):
    """The first n states, the settled ones repeated where n is more."""
    reps = -(-n // len(states[0]))
    return tuple(np.tile(a, (reps, 1))[:n] for a in states)


def child_physics(outdir: Path, device: str, model: str, precision: str, num_envs: list, sizes: dict, work: str,
                  cache: str = "warm", variant: str | None = None) -> None:
    """The first step (``cache`` says whether the kernel cache held it), then physics steps/s
    of one World per batch size (B.ours_case, timed as B.measure_interleaved does), each
    appended as it is measured: a batch that fails costs only itself."""
    from taigym.scripts import benchmark as B

    from taigym import physics

    label = {"model": model, "precision": precision, "device": device, **({"variant": variant} if variant else {})}
    append(outdir, {"item": "compile", **label, "kind": cache, **first_step(device, model, precision)})
    states = settled_states(work, model, sizes["settled_states"], sizes["settle"])
    loaded = physics.load_model(str(model_path(model)))
    for n in num_envs:
        try:
            case = B.ours_case(loaded, tiled(states, n), n, precision, device)
            (result,) = B.measure_interleaved([case], sizes["seconds"])
            del case
            append(outdir, {"item": "physics", **label, **result, "settled_states": sizes["settled_states"]})
        except Exception as e:  # noqa: BLE001 - recorded; the larger batches are still tried
            append(outdir, {"item": "physics", **label, "num_envs": n, "error": f"{type(e).__name__}: {e}"[-2000:]})


def child_rollout(outdir: Path, device: str, model: str, num_envs: int, sizes: dict, work: str) -> dict:
    """MuJoCo's rollout on all the CPU threads from the same settled states."""
    import contextlib

    import mujoco
    from taigym.scripts import benchmark as B

    states = tiled(settled_states(work, model, sizes["settled_states"], sizes["settle"]), num_envs)
    mjm = mujoco.MjModel.from_xml_path(str(model_path(model)))
    threads = os.cpu_count() or 1
    with contextlib.ExitStack() as stack:
        case = B.mujoco_rollout_case(mjm, states, threads, stack)
        (result,) = B.measure_interleaved([case], sizes["seconds"])
    one = B.mujoco_single_thread_case(mjm, states)
    (single,) = B.measure_interleaved([one], sizes["seconds"])
    return {**result, "mj_step_1thread_steps_per_s": single["steps_per_s"], "mujoco": mujoco.__version__}


def child_trajectory(outdir: Path, device: str, label: str, sizes: dict, work: str) -> dict:
    """Ant's qpos and qvel after every step of seeded random controls, saved for the comparison."""
    import mujoco
    from taigym.scripts import benchmark as B

    from taigym import physics

    n, steps = sizes["trajectory_envs"], sizes["trajectory_steps"]
    mjm = mujoco.MjModel.from_xml_path(str(model_path("ant")))
    qpos, qvel, _ = B.initial_states(mjm, n, seed=1)
    controls = np.random.default_rng(2).uniform(*B.control_bounds(mjm), size=(steps, n, mjm.nu))
    world = physics.World(physics.load_model(str(model_path("ant"))), num_envs=n, device=device, precision="float64")
    world.set_state(qpos=qpos, qvel=qvel)
    out_q, out_v = [], []
    for ctrl in controls:
        world.set_ctrl(ctrl)
        world.step(n=1)
        out_q.append(world.get("qpos"))
        out_v.append(world.get("qvel"))
    np.savez(Path(work) / f"trajectory-{label}.npz", qpos=np.array(out_q), qvel=np.array(out_v))
    return {"steps": steps, "num_envs": n}


def child_env_steps(outdir: Path, device: str, task: str, num_envs: int, sizes: dict, work: str) -> dict:
    """Env steps/s of the vector env with torch outputs on the device (B.steps_per_second), in
    float32 as the physics rows (the Gymnasium ports default to float64 for Gymnasium's
    numbers on the CPU)."""
    import gymnasium as gym
    from taigym.scripts.benchmark_envs import steps_per_second

    from taigym import envs  # noqa: F401  (registers TaiGym ids)

    env = gym.make_vec(f"TaiGym/{task}-v0", num_envs=num_envs, vectorization_mode="vector_entry_point",
                       overrides={"simulation.device": device, "simulation.precision": "float32"},
                       tensor_backend="torch")
    try:
        rate, cpu = steps_per_second(env, num_envs, max(sizes["seconds"], 0.01) * 2, seed=0)
    finally:
        env.close()
    return {"env_steps_per_s": rate, "cpu_over_wall": cpu, "precision": "float32"}


def child_phases(outdir: Path, device: str, model: str, num_envs: int, sizes: dict, work: str) -> dict:
    """The staged schedule's time per phase (float32, from settled states), from Taichi's
    kernel profiler: each top-level loop of the staged kernel is a task of its own."""
    from taigym.physics.runtime.backend import ti
    from taigym.physics.runtime.taichi_adapter import kernel_profiler_records

    from taigym import physics

    loaded = physics.load_model(str(model_path(model)))
    qpos, qvel, ctrl = tiled(settled_states(work, model, sizes["settled_states"], sizes["settle"]), num_envs)
    world = physics.World(loaded, num_envs=num_envs, device=device, precision="float32", schedule="staged",
                          serial=False)
    world.set_state(qpos=qpos, qvel=qvel)
    world.set_ctrl(ctrl)
    world.step(2)  # compiled and warm
    ti.sync()
    ti.profiler.clear_kernel_profiler_info()
    steps = 10
    world.step(steps)
    ti.sync()
    tasks: dict = {}
    for name, ms in kernel_profiler_records():
        total, count = tasks.get(name, (0.0, 0))
        tasks[name] = (total + ms, count + 1)
    # the STAGE kernel's loops (the other parts' kernels have one loop each), or the whole
    # launch's kernel's (graph kernels: a begin, the stage's, a finish and an end), in order;
    # the serial tasks between them compute extents and count down
    kernels: dict = {}
    for name in tasks:
        found = re.fullmatch(r"(.*)_kernel_(\d+)_range_for", name)
        if found:
            kernels.setdefault(found[1], []).append((int(found[2]), name))
    names = world._staged.loops
    if world._staged.whole_launch:
        names = ("begin", *names, "finish", "end")
    loops = next((sorted(ts) for ts in kernels.values() if len(ts) == len(names)), [])
    by_phase = {phase: name for phase, (_, name) in zip(names, loops)}
    return {"num_envs": num_envs, "steps": steps,
            "ms_per_step": {name: tasks[n][0] / steps for name, n in by_phase.items()},
            "tasks_ms_per_step": {n: t / steps for n, (t, _) in tasks.items()},
            "phase_of_task": {n: name for name, n in by_phase.items()}}


def child_ncu_target(outdir: Path, device: str, model: str, schedule: str, num_envs: int, sizes: dict,
                     work: str) -> dict:
    """One step launch between cuProfilerStart and cuProfilerStop, after warm steps, for
    Nsight Compute run with --profile-from-start off."""
    import ctypes

    from taigym.physics.runtime.backend import ti

    from taigym import physics

    loaded = physics.load_model(str(model_path(model)))
    qpos, qvel, ctrl = tiled(settled_states(work, model, sizes["settled_states"], sizes["settle"]), num_envs)
    world = physics.World(loaded, num_envs=num_envs, device=device, precision="float32", schedule=schedule)
    world.set_state(qpos=qpos, qvel=qvel)
    world.set_ctrl(ctrl)
    world.step(3)
    ti.sync()
    cuda = ctypes.CDLL("libcuda.so.1")
    started = cuda.cuProfilerStart()
    world.step(1)
    ti.sync()
    stopped = cuda.cuProfilerStop()
    return {"cuProfilerStart": started, "cuProfilerStop": stopped}


CHILDREN = {"physics": child_physics, "ncu_target": child_ncu_target, "rollout": child_rollout,
            "trajectory": child_trajectory, "env_steps": child_env_steps, "phases": child_phases}


def run_child(argv: list[str]) -> int:
    """``--child ITEM OUTDIR DEVICE JSON``: one measurement, its record appended."""
    item, outdir, device, params = argv[0], Path(argv[1]), argv[2], json.loads(argv[3])
    label = {k: v for k, v in params.items() if k not in ("sizes", "work")}
    start = time.perf_counter()
    try:
        from taigym.physics.runtime.backend import set_init_overrides

        set_init_overrides(**params.pop(TI_INIT, {}))
        result = CHILDREN[item](outdir, device, **params)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded: the probe's other items go on
        append(outdir, {"item": item, **label, "device": device, "error": f"{type(e).__name__}: {e}"[-2000:]})
        return 1
    if result is not None:  # None: the child appended its records itself
        append(outdir, {"item": item, **label, "device": device, **result, "seconds": time.perf_counter() - start})
    return 0


# --- the parent: items in order, each in a process under a limit ------------------------------
class Probe:
    """The parent: records go to ``outdir``; kernel caches, settled states, trajectories,
    PTX and the children's logs to ``work`` (bulky, and not needed once measured)."""

    def __init__(self, outdir: Path, work: Path, device: str, budget: float, quick: bool):
        self.outdir, self.work, self.device, self.quick = outdir, work, device, quick
        self.children = 0
        self.sizes = QUICK if quick else FULL
        self.deadline = time.monotonic() + budget
        self.cache = work / "ticache"
        self.compiled = set()  # kernel variants a process of this probe has compiled

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def child(self, item: str, params: dict, limit: float, env: dict | None = None, device: str | None = None,
              cwd: Path | None = None) -> bool:
        """Run one measurement; a time-out or crash is recorded in its place. Whether it
        succeeded (a child that failed recorded its own error). ``env`` may hold the
        child's ti.init settings under TI_INIT."""
        env = dict(env or {})
        if TI_INIT in env:
            params = {**params, TI_INIT: env.pop(TI_INIT)}
        limit = min(limit, self.left())
        if limit < 5 and not self.quick:
            append(self.outdir, {"item": item, **params, "skipped": "the probe's budget is spent"})
            return False
        device = device or self.device
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", TI_OFFLINE_CACHE_FILE_PATH=str(self.cache),
                        QD_OFFLINE_CACHE_FILE_PATH=str(self.cache))
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), full_env.get("PYTHONPATH")]))
        full_env.update(env or {})
        argv = [sys.executable, "-m", "taigym.scripts.gpu_probe", "--child", item, str(self.outdir.resolve()), device,
                json.dumps({**params, "sizes": self.sizes, "work": str(self.work)})]
        self.children += 1
        log = self.work / "logs" / f"{self.children:02d}-{item}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as f:
            f.write(f"=== {item} {params} {env or ''}\n")
            f.flush()
            try:
                proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=full_env, timeout=limit,
                                      cwd=cwd, check=False)
                error = None if proc.returncode in (0, 1) else f"exit status {proc.returncode}"
                ok = proc.returncode == 0
            except subprocess.TimeoutExpired:
                error, ok = f"timed out after {limit:.0f} s", False
        if error:  # status 1: the child recorded its own error
            append(self.outdir, {"item": item, **params, "device": device, "error": error,
                                 "log_tail": log.read_text(errors="replace")[-1500:]})
        return ok

    def physics_item(self, model: str, precision: str, num_envs, variant: str | None = None) -> None:
        """One process: the first step, then each batch size. The first process of a kernel
        cache finds it empty (cold), and on CUDA it dumps the kernels' PTX for ptxas."""
        cache = self.cache if variant is None else self.work / f"ticache-{variant}"
        env = dict(VARIANTS.get(variant or "default"), TI_OFFLINE_CACHE_FILE_PATH=str(cache),
                   QD_OFFLINE_CACHE_FILE_PATH=str(cache))
        tag = f"{model}-{precision}" + (f"-{variant}" if variant else "")
        kind = "warm" if tag in self.compiled or (variant is None and (model, precision) in self.compiled) else "cold"
        ptx_dir = self.work / "ptx" / tag
        ptx_dir.mkdir(parents=True, exist_ok=True)
        if kind == "cold" and self.device == "cuda":
            env[TI_INIT] = {**env.get(TI_INIT, {}), "print_kernel_asm": True}
        params = {"model": model, "precision": precision, "num_envs": list(num_envs), "cache": kind}
        if variant:
            params["variant"] = variant
        self.child("physics", params, limit=60 + 45 * len(num_envs), env=env, cwd=ptx_dir)
        self.compiled.add(tag)
        self.compiled.add((model, precision))
        self.ptxas_report(ptx_dir, model, precision, variant or "")

    def ptxas_report(self, ptx_dir: Path, model: str, precision: str, variant: str) -> None:
        """Registers, stack frame and spills of each dumped kernel, as ptxas reports them."""
        files = sorted(p for p in ptx_dir.glob("*.ptx") if not p.name.endswith(".clean.ptx"))
        ptxas = shutil.which("ptxas") or next((str(p) for p in Path("/usr/local").glob("cuda*/bin/ptxas")), None)
        if not files or ptxas is None:
            return
        largest = max(files, key=lambda p: p.stat().st_size)
        clean = largest.with_suffix(".clean.ptx")  # Taichi writes the PTX with its C string's NUL
        clean.write_bytes(largest.read_bytes().replace(b"\0", b""))
        # -c: Taichi's PTX declares runtime functions (vprintf) that a whole-program build would resolve
        proc = subprocess.run([ptxas, "-v", "-c", "--gpu-name", "sm_90", str(clean), "-o", os.devnull],
                              capture_output=True, text=True, timeout=max(5.0, min(60.0, self.left())), check=False)
        append(self.outdir, {"item": "ptxas", "model": model, "precision": precision, "variant": variant,
                             "file": largest.name, "bytes": largest.stat().st_size,
                             "kernels": parse_ptxas(proc.stderr + proc.stdout), "returncode": proc.returncode,
                             **({"output_tail": (proc.stderr + proc.stdout)[-1500:]} if proc.returncode else {})})

    def run(self, only=None) -> None:
        """Items in order of value: a probe cut short has measured the most important first."""
        append(self.outdir, device_record())
        for name, item in self.items():
            if only is None or name in only:
                item()

    def items(self):
        """(name, callable) in the order the probe takes them: first what decides the next
        change (the fused and staged schedules side by side, the staged one's time per phase,
        MuJoCo's rollout beside them, the hardware counters of their launches), then the
        rest. The schedules' cold compiles take most of the first 5 minutes on an H200 (40 s
        a fused kernel, 89-140 s a staged one)."""
        s = self.sizes
        return [
            ("schedules", self.schedules),
            # the constraint solve by a thread block per env against a thread per env (the
            # staged rows of "schedules"), and its trajectory against the CPU's
            ("group_solve", self.group_solve),
            ("rollout", lambda: [self.child("rollout", {"model": m, "num_envs": max(s["num_envs"])}, limit=120,
                                            device="cpu") for m in MODELS]),
            ("two_cores", self.two_cores),
            ("ncu", self.ncu),
            ("quadrants_staged", lambda: self.variants(["quadrants_staged"])),
            ("trajectory", self.trajectory),
            # the staged schedule in both layouts side by side, Ant at every size (the fused
            # kernel lost interleaved on 2026-11-27: 14% slower at 16,384 envs)
            ("layouts", lambda: self.variants(["staged", "staged_env_major"], s["num_envs"])),
            ("env_steps", lambda: [self.child("env_steps", {"task": "Ant", "num_envs": n}, limit=150)
                                   for n in s["env_num_envs"]]),
            ("float64", lambda: [self.physics_item(m, "float64", s["num_envs"]) for m in MODELS]),
            ("options", lambda: self.variants([v for v in VARIANTS if v not in (
                "default", "layout_interleaved", "staged", "staged_env_major", "staged_group", "quadrants_staged")])),
            ("cuda_tests", self.cuda_tests),
        ]

    def schedules(self) -> None:
        """Each model in float32 under the fused schedule and, at every size beside it, the
        staged one, then the staged one's time per phase."""
        for model in MODELS:
            self.physics_item(model, "float32", self.sizes["num_envs"])
            self.physics_item(model, "float32", self.sizes["num_envs"], variant="staged")
            self.phases(model)

    def group_solve(self) -> None:
        """Ant in float32 under the staged schedule with its constraint solve by a lane group
        per env, at every size, then its float64 trajectory against the CPU's fused one."""
        self.physics_item("ant", "float32", self.sizes["num_envs"], variant="staged_group")
        self.compare_trajectories({"cpu": ("cpu", FUSED),
                                   f"{self.device}-staged-group": (self.device, VARIANTS["staged_group"])})

    def two_cores(self) -> None:
        """Each model's physics on two of the machine's CPU threads at the smallest batch
        (float32, the CPU's fused schedule): the laptop-class rate a GPU is weighed against."""
        env = {"TI_CPU_MAX_NUM_THREADS": "2", **FUSED}
        for model in MODELS:
            cache = self.work / "ticache-cpu"
            self.child("physics", {"model": model, "precision": "float32", "num_envs": list(self.sizes["num_envs"][:1]),
                                   "cache": "cold", "variant": "cpu_2_threads"}, limit=90, device="cpu",
                       env={**env, "TI_OFFLINE_CACHE_FILE_PATH": str(cache), "QD_OFFLINE_CACHE_FILE_PATH": str(cache)})

    def ncu(self) -> None:
        """Nsight Compute's counters for one step launch of each schedule (float32): Ant's
        fused kernel, and each loop of Ant's and Humanoid's staged step (its first forward()
        pass: an RK4 step's other three launch the same loops)."""
        ncu = shutil.which("ncu") or next((str(p) for p in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))), None)
        if self.device != "cuda" or ncu is None:
            append(self.outdir, {"item": "ncu", "skipped": "no GPU" if self.device != "cuda" else "ncu not found"})
            return
        n = NCU_NUM_ENVS if not self.quick else self.sizes["num_envs"][0]
        for model, schedule in (("ant", "fused"), ("ant", "staged"), ("humanoid", "staged")):
            if self.left() < 30:
                append(self.outdir, {"item": "ncu", "model": model, "schedule": schedule,
                                     "skipped": "the probe's budget is spent"})
                continue
            self.ncu_run(ncu, model, schedule, n)

    def ncu_run(self, ncu: str, model: str, schedule: str, num_envs: int) -> None:
        cache = self.cache if schedule == "fused" else self.work / "ticache-staged"
        report = self.work / f"ncu-{model}-{schedule}"
        params = {"model": model, "schedule": schedule, "num_envs": num_envs,
                  "sizes": self.sizes, "work": str(self.work)}
        child = [sys.executable, "-m", "taigym.scripts.gpu_probe", "--child", "ncu_target",
                 str(self.outdir.resolve()), self.device, json.dumps(params)]
        env = dict(os.environ, PYTHONUNBUFFERED="1", TI_OFFLINE_CACHE_FILE_PATH=str(cache),
                   QD_OFFLINE_CACHE_FILE_PATH=str(cache), TAIGYM_SCHEDULE=schedule)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        base = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--target-processes", "all",
                "--launch-count", str(NCU_LAUNCHES), "-f", "-o", str(report)]
        attempts = [[*(a for sec in NCU_SECTIONS for a in ("--section", sec)), "--metrics", ",".join(NCU_METRICS)],
                    []]  # ncu's default sections, should a name above be unknown to this ncu
        tail = ""
        for extra in attempts:
            limit = min(150.0, self.left() - 5)
            try:
                proc = subprocess.run([*base, *extra, *child], env=env, capture_output=True, text=True,
                                      timeout=limit, check=False)
                tail = (proc.stdout + proc.stderr)[-2500:]
            except subprocess.TimeoutExpired as e:
                tail = f"timed out after {limit:.0f} s; " + str(e.stdout or "")[-1500:]
            rep = report.with_suffix(".ncu-rep")
            if rep.exists():
                break
        else:
            append(self.outdir, {"item": "ncu", "model": model, "schedule": schedule, "num_envs": num_envs,
                                 "error": tail})
            return
        raw = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "raw"], capture_output=True, text=True,
                             timeout=120, check=False).stdout
        (self.outdir / f"ncu-{model}-{schedule}.csv").write_text(raw)
        append(self.outdir, {"item": "ncu", "model": model, "schedule": schedule, "num_envs": num_envs, "sections": extra != [],
                             "kernels": parse_ncu_raw(raw), "output_tail": tail[-800:]})

    def trajectory(self) -> None:
        """The GPU's Ant trajectory against the CPU's (on the CPU alone, the rehearsal compares
        the env-major tables with the interleaved ones, and the fused schedule with the staged)."""
        runs = {"cpu": ("cpu", FUSED), self.device: (self.device, FUSED),
                f"{self.device}-staged": (self.device, VARIANTS["staged"])}
        if self.device == "cpu":
            runs = {"cpu": ("cpu", FUSED), "cpu-interleaved": ("cpu", VARIANTS["layout_interleaved"]),
                    "cpu-staged": ("cpu", VARIANTS["staged"])}
        self.compare_trajectories(runs)

    def compare_trajectories(self, runs: dict) -> None:
        """Each run's trajectory (label: (device, environment)) against the first's; a
        trajectory run before is reused."""
        for label, (device, env) in runs.items():
            if not (self.work / f"trajectory-{label}.npz").exists():
                self.child("trajectory", {"label": label}, limit=150, device=device, env=env)
        self.compiled.add(("ant", "float64"))
        first, *others = runs
        for other in others:  # each run against the CPU's
            files = [self.work / f"trajectory-{label}.npz" for label in (first, other)]
            if all(f.exists() for f in files):
                a, b = (np.load(f) for f in files)
                append(self.outdir, {"item": "trajectory_difference", "runs": [first, other],
                                     **{f"max_abs_{k}_step{i + 1}": float(np.max(np.abs(a[k][i] - b[k][i])))
                                        for k in ("qpos", "qvel") for i in (0, len(a[k]) - 1)}})

    def phases(self, model: str) -> None:
        """The staged schedule's time per phase at the largest batch, in the staged cache."""
        env = dict(VARIANTS["staged"], TI_OFFLINE_CACHE_FILE_PATH=str(self.work / "ticache-staged"),
                   QD_OFFLINE_CACHE_FILE_PATH=str(self.work / "ticache-staged"),
                   **{TI_INIT: {"kernel_profiler": True}})
        self.child("phases", {"model": model, "num_envs": max(self.sizes["num_envs"][:3])}, limit=150, env=env)

    def variants(self, names, num_envs=VARIANT_NUM_ENVS) -> None:
        """Ant float32 at ``num_envs`` under each compile option, in a cache of its own."""
        if self.device != "cuda":
            names = [n for n in names if TI_INIT not in VARIANTS[n]]  # GPU options only
        sizes = num_envs if not self.quick else self.sizes["num_envs"][:1]
        for name in names:
            if name in QUADRANTS_VARIANTS and importlib.util.find_spec("quadrants") is None:
                append(self.outdir, {"item": "physics", "variant": name, "skipped": "quadrants is not installed"})
                continue
            if self.left() < 60 and not self.quick:
                append(self.outdir, {"item": "physics", "variant": name, "skipped": "the probe's budget is spent"})
                continue
            self.physics_item("ant", "float32", sizes, variant=name)

    def cuda_tests(self) -> None:
        if self.device != "cuda" or self.left() < 60:
            return
        env = dict(os.environ, TAIGYM_TEST_DEVICE="cuda", TI_OFFLINE_CACHE_FILE_PATH=str(self.cache))
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider",
               "tests/test_dynamics_mujoco.py", "tests/test_contacts.py", "tests/test_world_api.py"]
        try:
            proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                                  timeout=self.left() - 10, check=False)
            tail = (proc.stdout + proc.stderr)[-3000:]
            append(self.outdir, {"item": "cuda_tests", "returncode": proc.returncode, "tail": tail})
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            append(self.outdir, {"item": "cuda_tests", "error": "timed out", "tail": out[-3000:]})


def parse_ptxas(text: str) -> list[dict]:
    """ptxas -v's lines per entry: registers, stack frame, spill stores and loads."""
    kernels, current = [], None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = {"name": m.group(1)}
            kernels.append(current)
            continue
        if current is None:
            continue
        if (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            current.update(stack_frame=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        if (m := re.search(r"Used (\d+) registers", line)):
            current["registers"] = int(m[1])
    return kernels


def parse_ncu_raw(text: str) -> list[dict]:
    """ncu's raw CSV page (a header, a units row, a row per kernel launch): the counters
    NCU_KEEP names, per launch, numbers as numbers."""
    import csv

    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if len(rows) < 3:
        return []
    header, units = rows[0], rows[1]
    kernels = []
    for row in rows[2:]:
        kept = {}
        for name, unit, value in zip(header, units, row):
            if not NCU_KEEP.search(name):
                continue
            try:
                kept[name] = float(value.replace(",", ""))
            except ValueError:
                kept[name] = value[:120]
            if unit and name != "Kernel Name":
                kept.setdefault("units", {})[name] = unit
        kernels.append(kept)
    return kernels


# --- the summary ---------------------------------------------------------------------------
def summary_markdown(records: list[dict]) -> str:
    """The probe's table from its records: physics steps/s beside MuJoCo's rollout."""
    device = next((r for r in records if r["item"] == "device"), {})
    gpu = (device.get("gpu") or {}).get("name", "no GPU")
    lines = [f"# GPU probe: {gpu}", "",
             (f"taichi {device.get('taichi')}, mujoco {device.get('mujoco')}, torch {device.get('torch')}, "
              f"Python {device.get('python')}, {device.get('cpu_count')} CPU threads; engine {device.get('engine')}."),
             ""]
    rollouts = {r["model"]: r for r in records if r["item"] == "rollout" and "steps_per_s" in r}
    lines += ["| model | precision | num_envs | steps/s | vs rollout (all CPU threads) |", "|---|---|---:|---:|---:|"]
    for r in records:
        if r["item"] == "physics" and "variant" not in r and not isinstance(r.get("num_envs"), list):
            roll = rollouts.get(r["model"], {}).get("steps_per_s")
            rate = f"{r['steps_per_s']:,.0f}" if "steps_per_s" in r else r.get("error", r.get("skipped", ""))[:60]
            ratio = f"{r['steps_per_s'] / roll:.2f}x" if roll and "steps_per_s" in r else ""
            lines.append(f"| {r['model']} | {r['precision']} | {r.get('num_envs', '')} | {rate} | {ratio} |")
    for model, r in rollouts.items():
        lines.append(f"| {model}: MuJoCo rollout, {r['threads']} threads | float64 | {r['num_envs']:,} | "
                     f"{r['steps_per_s']:,.0f} | 1.00x |")
    lines += ["", "| variant | model | num_envs | steps/s (float32) |", "|---|---|---:|---:|"]
    for r in records:
        if r["item"] == "physics" and "variant" in r and not isinstance(r.get("num_envs"), list):
            rate = f"{r['steps_per_s']:,.0f}" if "steps_per_s" in r else r.get("error", r.get("skipped", ""))[:60]
            lines.append(f"| {r['variant']} | {r.get('model', '')} | {r.get('num_envs', '')} | {rate} |")
    for r in records:
        if r["item"] == "phases" and "ms_per_step" in r:
            largest = sorted(r["ms_per_step"].items(), key=lambda kv: -kv[1])[:8]
            total = sum(r["ms_per_step"].values())
            lines.append(f"- phases {r['model']} at {r['num_envs']:,} envs, {total:.3f} ms a step: "
                         + ", ".join(f"{k} {v:.3f}" for k, v in largest))
        elif r["item"] == "ncu" and "kernels" in r:
            for k in sorted(r["kernels"], key=lambda k: -float(k.get("gpu__time_duration.sum", 0) or 0))[:6]:
                lines.append(f"- ncu {r.get('model', 'ant')} {r['schedule']}: " + json.dumps({n: v for n, v in k.items() if n != "units"})[:400])
    lines += ["", "| compile | kind | first step (s) | GPU memory MiB: before / init / first step |", "|---|---|---:|---|"]
    for r in records:
        if r["item"] == "compile" and "first_step_s" in r:
            m = r["gpu_memory"]
            lines.append(f"| {r['model']} {r['precision']} {r.get('variant', '')} | {r['kind']} | "
                         f"{r['first_step_s']:.1f} | {m['before_taichi_mib']} / {m['after_init_mib']} / "
                         f"{m['after_first_step_mib']} |")
    for r in records:
        if r["item"] == "ptxas":
            for k in r["kernels"]:
                lines.append(f"- ptxas {r['model']} {r['precision']} {r['variant']}: {k['name'][:60]}: "
                             f"{k.get('registers')} registers, {k.get('stack_frame')} B stack frame, "
                             f"{k.get('spill_stores')} B spill stores")
        elif r["item"] in ("env_steps", "trajectory_difference", "cuda_tests"):
            lines.append(f"- {r['item']}: " + json.dumps({k: v for k, v in r.items() if k not in ("item", "tail")}))
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir", type=Path, help="where probe.jsonl, summary.md and the children's log go")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="where our engine runs (default: cuda)")
    p.add_argument("--work", type=Path, default=None,
                   help="kernel caches, settled states, PTX and the children's logs (default: OUTDIR/work)")
    p.add_argument("--budget", type=float, default=480.0, help="seconds for the whole probe (default: 480)")
    p.add_argument("--quick", action="store_true", help="tiny sizes: the CPU rehearsal of the whole probe")
    p.add_argument("--only", nargs="+", metavar="ITEM", choices=ITEMS, default=None,
                   help=f"run these items alone, in the probe's order ({', '.join(ITEMS)})")
    p.add_argument("--summarize", action="store_true", help="only rebuild summary.md from OUTDIR/probe.jsonl")
    return p.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return run_child(argv[1:])
    args = parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    if not args.summarize:
        work = args.work or args.outdir / "work"
        work.mkdir(parents=True, exist_ok=True)
        Probe(args.outdir, work.resolve(), args.device, args.budget, args.quick).run(args.only)
    text = summary_markdown(read_records(args.outdir))
    (args.outdir / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
