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

# (precision, solver, cone, parts), in the order to start them: the longest compiles first
VARIANTS = [
    ("float64", "Newton", "pyramidal", "all"),  # meshes seen by rangefinders, no-slip, implicitfast
    ("float64", "Newton", "pyramidal", "common"),  # nearly every module
    ("float64", "Newton", "elliptic", "common"),  # dm_control's finger, manipulator
    ("float64", "PGS", "pyramidal", "common"),  # Humanoid
    ("float32", "Newton", "pyramidal", "common"),  # the envs' default precision
]

SCENE = """<mujoco><option solver="{solver}" cone="{cone}"/>
  <worldbody><geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>"""


def compile_variant(precision: str, solver: str, cone: str, parts: str, folder: str) -> None:
    """Step a two-env World of this variant once (in this process: run as a script)."""
    from pathlib import Path

    from taigym.physics import features
    from taigym.physics.runtime import kernel_cache

    from taigym import physics

    scene = Path(folder) / f"{solver}-{cone}.xml"
    scene.write_text(SCENE.format(solver=solver, cone=cone))
    world = physics.World(physics.load_model(scene), 2, precision=precision,
                          features=features.ALL if parts == "all" else None)
    if not kernel_cache.compiled_before(world._kernel_key):
        world.step()


def prebuild(workers: int, env: dict) -> None:
    """Compile VARIANTS, ``workers`` at a time, each in a process with ``env``; say what it took."""
    import tempfile

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="taigym-prebuild-") as folder:
        def run(variant):
            command = [sys.executable, __file__, *variant, folder]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            return variant, done

        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(run, VARIANTS))
    for variant, done in results:
        if done.returncode != 0:  # the workers compile it themselves; the tests say what is wrong
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            print(f"kernel prebuild of {', '.join(variant)} failed: {tail}", file=sys.stderr)
    print(f"kernel prebuild: {len(VARIANTS)} shared step kernels ready in {time.perf_counter() - start:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    compile_variant(*sys.argv[1:6])
