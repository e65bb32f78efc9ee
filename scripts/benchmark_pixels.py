"""Frames per second of taigym's ``camera`` observation next to dm_control's own renderer.

taigym: the vector env of a Control Suite task (default TaiGym/cartpole-swingup-v0) whose
observation is a ``camera`` term (the model camera ``fixed``, 84x84 RGB), stepped with
uniform random actions: every env's physics, then every env's frame, ray cast in one
batch on the World's device. Beside it, the same batch's ``World.render`` alone.

dm_control: the same task's ``env.step`` then ``physics.render(height, width, camera_id=0)``
(MuJoCo's OpenGL renderer, ``MUJOCO_GL=egl`` by default), one env after another, as a
vector of dm_control pixel envs steps; and ``physics.render`` alone. Its frames do not
depend on the batch, so a batch of N is N frames over a pool of at most 4 envs taken in
turn (N contexts of OpenGL would measure memory, not rendering).

Each point runs for about ``--seconds`` (at least two batches after a warm-up one); the
report gives the CPU model and the load (``uptime``), since the machine may be shared.

    taigym benchmark-pixels --num-envs 1 64 1024 --seconds 3
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser


def timed(fn, seconds: float) -> float:
    """Calls of ``fn`` per second: one warm-up call, then calls for about ``seconds`` (at least two)."""
    fn()
    calls, start = 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - start < seconds:
        fn()
        calls += 1
    return calls / (time.perf_counter() - start)


def taigym_env(task: str, num_envs: int, camera: str, size: int, device: str):
    from taigym.envs.vector import TaiGymVectorEnv

    view = {"term": "camera", "params": {"camera": camera, "width": size, "height": size}}
    return TaiGymVectorEnv(task, num_envs, overrides={"observations": [view], "simulation.device": device})


def measure_taigym(task: str, num_envs: int, camera: str, size: int, device: str, seconds: float, seed: int) -> dict:
    env = taigym_env(task, num_envs, camera, size, device)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    steps = timed(lambda: env.step(env.action_space.sample()), seconds)
    renders = timed(lambda: env.world.render(width=size, height=size, camera=camera), seconds)
    env.close()
    return {"step_frames_per_s": steps * num_envs, "render_frames_per_s": renders * num_envs}


def measure_dm_control(domain: str, task: str, num_envs: int, size: int, seconds: float, seed: int) -> dict:
    from taigym.scripts.dm_control_env import suite

    pool = [suite().load(domain, task, task_kwargs={"random": seed + i}) for i in range(min(num_envs, 4))]
    rng = np.random.default_rng(seed)
    spec = pool[0].action_spec()
    for env in pool:
        env.reset()

    def step_batch():
        for i in range(num_envs):
            env = pool[i % len(pool)]
            if env.step(rng.uniform(spec.minimum, spec.maximum)).last():
                env.reset()
            env.physics.render(size, size, camera_id=0)

    def render_batch():
        for i in range(num_envs):
            pool[i % len(pool)].physics.render(size, size, camera_id=0)

    steps, renders = timed(step_batch, seconds), timed(render_batch, seconds)
    return {"step_frames_per_s": steps * num_envs, "render_frames_per_s": renders * num_envs,
            "gl_renderer": gl_renderer(pool[0].physics)}


def gl_renderer(physics) -> str | None:
    """The OpenGL renderer dm_control drew with (Mesa's llvmpipe: software, on the CPU)."""
    try:
        from OpenGL import GL

        with physics.contexts.gl.make_current() as ctx:
            return " ".join(ctx.call(GL.glGetString, k).decode() for k in (GL.GL_RENDERER, GL.GL_VERSION))
    except Exception:  # noqa: BLE001 - a label only; the figures stand without it
        return None


def machine() -> dict:
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    lscpu = run(["lscpu"]) or ""
    model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")),
                 platform.processor())
    return {"cpu_model": model, "cpus": os.cpu_count(), "uptime": run(["uptime"]), "platform": platform.platform()}


def markdown(rows: list[dict], size: int) -> str:
    lines = [f"| num_envs | taigym step + {size}x{size} frame | taigym World.render | dm_control step + render "
             "| dm_control render | taigym / dm_control (step + frame) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        t, d = r["taigym"], r.get("dm_control")
        dm = (f"{d['step_frames_per_s']:,.0f} | {d['render_frames_per_s']:,.0f} | "
              f"{t['step_frames_per_s'] / d['step_frames_per_s']:.2f}x") if d else "- | - | -"
        lines.append(f"| {r['num_envs']:,} | {t['step_frames_per_s']:,.0f} | {t['render_frames_per_s']:,.0f} | {dm} |")
    return "\n".join(lines)


def parse_args(argv):
    p = ArgumentParser(prog="taigym benchmark-pixels", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="cartpole-swingup",
                   help="a Control Suite task as <domain>-<task> (TaiGym/<domain>-<task>-v0; default cartpole-swingup)")
    p.add_argument("--camera", default="fixed", help="the model camera (default: fixed); dm_control renders camera 0")
    p.add_argument("--num-envs", nargs="+", type=int, default=[1, 64, 1024])
    p.add_argument("--size", type=int, default=84, help="frame width and height [pixels] (default: 84)")
    p.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default: 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where taigym's World runs (default: cpu)")
    p.add_argument("--gl", default="egl", help="MUJOCO_GL for dm_control's renderer: egl, osmesa or glfw (default: egl)")
    p.add_argument("--no-dm-control", action="store_true", help="measure taigym only")
    p.add_argument("--out", type=Path, default=Path("results/benchmark_pixels.json"),
                   help="JSON output; a .md table goes next to it")
    args = p.parse_args(argv)
    if args.task.count("-") != 1:
        p.error(f"--task must be <domain>-<task>, got {args.task!r}")
    if min(args.num_envs) < 1 or args.size < 1 or args.seconds <= 0:
        p.error("--num-envs and --size must be positive, --seconds above 0")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", args.gl)
    domain, task = args.task.split("-")
    start = machine()
    rows = []
    for n in args.num_envs:
        row = {"num_envs": n, "taigym": measure_taigym(f"TaiGym/{args.task}-v0", n, args.camera, args.size,
                                                       args.device, args.seconds, args.seed)}
        if not args.no_dm_control:
            row["dm_control"] = measure_dm_control(domain, task, n, args.size, args.seconds, args.seed)
        rows.append(row)
        print(markdown([row], args.size).splitlines()[-1], flush=True)
    report = {"rows": rows, "machine": {**start, "uptime_at_end": machine()["uptime"]},
              "settings": {"task": args.task, "camera": args.camera, "size": args.size, "seconds": args.seconds,
                           "seed": args.seed, "device": args.device, "MUJOCO_GL": os.environ["MUJOCO_GL"]}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    table = markdown(rows, args.size)
    args.out.with_suffix(".md").write_text(table + "\n")
    gl = rows[-1].get("dm_control", {}).get("gl_renderer")
    print(f"\n{start['cpu_model']}, {start['cpus']} CPUs; at start: {start['uptime']}"
          + (f"; dm_control's OpenGL: {gl}" if gl else "") + f"\n\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
