"""The step kernel variants most test modules share, compiled once before the workers start.

Taichi writes the kernels a process compiled into its offline cache only when the process
ends, so two test workers that need the same variant each compile it: a minute or more on
one core, for each of the variants below, in every worker. Compiled here first, each in a
process of its own and as many at once as there will be workers, the workers load them from
the cache instead (seconds each).

VARIANTS are those the quick set's modules share (TAIGYM_KERNELS=shared: a kernel per
precision, solver and cone, with features.COMMON, or features.ALL beyond it). A variant left
out costs time, never a failure; one already kept on this machine is skipped in a second.
"""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# (precision, solver, cone, parts, schedule), in the order to start them: the longest first
VARIANTS = [
    ("float64", "Newton", "pyramidal", "all", "fused"),  # meshes seen by rangefinders, no-slip, implicitfast
    ("float64", "Newton", "pyramidal", "common", "fused"),  # nearly every module
    ("float64", "Newton", "elliptic", "common", "fused"),  # dm_control's finger, manipulator
    ("float64", "PGS", "pyramidal", "common", "fused"),  # Humanoid
    ("float32", "Newton", "pyramidal", "common", "fused"),  # the envs' default precision
    # tests/test_schedule.py's (a staged kernel has a loop per level of the model's tree:
    # its Ant; the every-part model's staged kernel is the slow tier's)
    ("float64", "Newton", "pyramidal", "common", "staged"),
]

SCENE = """<mujoco><option solver="{solver}" cone="{cone}"/>
  <worldbody><geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>"""


def _scene(solver: str, cone: str, parts: str, schedule: str) -> str:
    if schedule == "fused":
        return SCENE.format(solver=solver, cone=cone)
    if parts == "all":
        from every_part import every_part_mjcf

        return every_part_mjcf("Euler", solver, cone)
    from conftest import gym_asset

    return Path(gym_asset("ant")).read_text()


def compile_variant(precision: str, solver: str, cone: str, parts: str, schedule: str) -> None:
    """Step a two-env World of this variant once (in this process: run as a script)."""
    from taigym import physics
    from taigym.physics import features
    from taigym.physics.compiler.mjcf import load_mjcf_string
    from taigym.physics.runtime import kernel_cache

    model = load_mjcf_string(_scene(solver, cone, parts, schedule))
    world = physics.World(model, 2, precision=precision, schedule=schedule,
                          features=features.ALL if parts == "all" else None)
    if not kernel_cache.compiled_before(world._kernel_key):
        world.step()


def prebuild(workers: int, env: dict) -> None:
    """Compile VARIANTS, ``workers`` at a time, each in a process with ``env``; say what it took."""
    start = time.perf_counter()

    def run(variant):
        return variant, subprocess.run([sys.executable, __file__, *variant], env=env, capture_output=True, text=True,
                                       check=False)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(run, VARIANTS))
    for variant, done in results:
        if done.returncode != 0:  # the workers compile it themselves; the tests say what is wrong
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            print(f"kernel prebuild of {', '.join(variant)} failed: {tail}", file=sys.stderr)
    print(f"kernel prebuild: {len(VARIANTS)} shared step kernels ready in {time.perf_counter() - start:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    compile_variant(*sys.argv[1:])
