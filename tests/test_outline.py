"""Outlined stages (physics/step/outline.py): on CPU the step kernel compiles its large
stages as functions of their own. The kernel's offline-cache key must not change between
processes, or every start would compile again. (The inlined build, CUDA's and quadrants',
is checked against MuJoCo by the oracle tests on those.)
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from every_part import every_part_mjcf
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.runtime.taichi_adapter import calls_inside_real_functions, implementation, real_functions
from taigym.physics.step.outline import outlining

from taigym import physics

pytestmark = pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda",
                                reason="stages are outlined on the CPU backend only")
# the patch is in the running Taichi's list: taichi 1.7.4's; quadrants' is empty (its tracer is
# laid out otherwise, taichi_adapter/quadrants.py), so there every stage is inlined
PATCHED = real_functions.PATCH in implementation(ti).PATCHES


def rollout(model, seed=0, steps=40, num_envs=3):
    """A float64 World of ``model`` under random velocities and controls, with its state
    after each step (the stages' switches as the environment sets them)."""
    world = physics.World(model, num_envs=num_envs, device="cpu", precision="float64")
    rng = np.random.default_rng(seed)
    world.set_state(qvel=rng.normal(0, 0.5, (num_envs, model.nv)))
    out = []
    for _ in range(steps):
        world.set_ctrl(rng.uniform(-1, 1, (num_envs, model.nu)))
        world.step()
        out += [world.get(name) for name in ("qpos", "qvel", "qacc", "qfrc_constraint")]
    return world, out


def test_outlining_is_on_on_cpu_where_the_patch_is():
    ensure_runtime("cpu")
    assert calls_inside_real_functions() is PATCHED
    assert outlining() is PATCHED


def test_a_real_function_may_call_inlined_functions():
    """Without physics/runtime/taichi_adapter/real_functions.py's fix, taichi 1.7.4 traces the inlined call into the
    kernel and LLVM aborts the process on the misplaced array access."""
    ensure_runtime("cpu")
    f1 = ti.types.ndarray(dtype=ti.f64, ndim=1)

    @ti.func
    def twice(a: ti.template(), i):
        return 2.0 * a[i]

    @ti.real_func
    def double_all(a: f1):
        for i in range(a.shape[0]):
            a[i] = twice(a, i)

    @ti.kernel
    def run(a: f1):
        for _ in range(1):
            double_all(a)

    a = np.arange(4.0)
    run(a)
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0, 6.0])


@pytest.mark.slow
def test_a_second_process_finds_the_outlined_kernel_in_the_cache(tmp_path):
    """Taichi 1.7.4 keys a kernel on its syntax tree and those of the real functions it
    calls, taken in the order of a pointer-keyed hash map: a callable that calls two or
    more distinct real functions can key differently in each process. The outlined stages
    are therefore chained, each calling at most the next; this checks that a second
    process compiles nothing."""
    script = textwrap.dedent("""
        import numpy as np
        from taigym import physics
        from taigym.physics.compiler.mjcf import load_mjcf_string
        model = load_mjcf_string('''%s''')
        world = physics.World(model, num_envs=2, device="cpu", precision="float64")
        world.step()
        print(world.get("qpos")[0, 0])
    """) % every_part_mjcf("Euler")
    env = {k: v for k, v in os.environ.items() if k != "TAIGYM_KERNELS"}
    env["TI_OFFLINE_CACHE_FILE_PATH"] = str(tmp_path)
    kernels = []
    outputs = []
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        outputs.append(run.stdout.strip().splitlines()[-1])
        kernels.append(sorted(p.name for p in tmp_path.glob("*.tic")))
    assert kernels[0] == kernels[1] == kernels[2], "a later process compiled a kernel again"
    assert outputs[0] == outputs[1] == outputs[2]
