"""Scalar loops (physics/runtime/taichi_adapter/loops.py, ``scalar_loops``): on CPU the
loops of the step kernel's functions get a second exit, which no index reaches, so that LLVM neither
vectorizes nor unrolls them. Loops with exits of their own must run as written, and the exit
must actually keep LLVM's vectorizer away, or the kernel is as large as before. (The
vectorized build, CUDA's and quadrants', is checked against MuJoCo by the oracle tests on
those.)
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.runtime.taichi_adapter import implementation, loops, scalar_loops, scalar_loops_in


pytestmark = pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda",
                                reason="loops are made scalar on the CPU backend only")
# the patch is in the running Taichi's list: taichi 1.7.4's; quadrants' is empty (its tracer is
# laid out otherwise, taichi_adapter/quadrants.py), so there every loop is LLVM's
PATCHED = loops.PATCH in implementation(ti).PATCHES
needs_patch = pytest.mark.skipif(not PATCHED, reason=f"{ti.__name__} keeps LLVM's loops: the scalar-loop patch "
                                 "knows taichi 1.7.4's tracer only")


def test_scalar_loops_are_on_on_cpu_where_the_patch_is():
    ensure_runtime("cpu")
    assert scalar_loops() is PATCHED


def test_loops_with_exits_of_their_own_run_as_written():
    ensure_runtime("cpu")
    assert scalar_loops() is PATCHED  # without the patch the marked kernel runs as written too
    f1 = ti.types.ndarray(dtype=ti.f64, ndim=1)

    @ti.func
    def fill(a: ti.template(), start, stop):
        for i in range(start, stop):  # negative indices too: none is the unreachable one
            if a[i - start] < 0:
                continue
            a[i - start] = i
            if i == stop - 2:
                break

    @ti.kernel
    @scalar_loops_in(True)
    def run(a: f1, start: ti.i32):
        for _ in range(1):  # the kernel's own loop: parallel, where a break would not compile
            fill(a, start, start + a.shape[0])

    a = np.zeros(6)
    a[1] = -1.0
    run(a, -3)
    np.testing.assert_array_equal(a, [-3.0, -1.0, -1.0, 0.0, 1.0, 0.0])


@needs_patch
def test_llvm_vectorizes_only_the_unmarked_kernel_and_vector_loops_functions(tmp_path):
    """The same loop in three kernels: Taichi writes each kernel's optimized LLVM module to
    a file, and the marked kernel's holds no vector loop, the unmarked kernel's does, and
    so does a marked kernel's function that ``vector_loops`` exempts."""
    script = textwrap.dedent("""
        import numpy as np
        from taigym.physics.runtime.backend import ensure_runtime, ti
        from taigym.physics.runtime.taichi_adapter import scalar_loops, scalar_loops_in, vector_loops
        ensure_runtime("cpu")
        assert scalar_loops()
        f1 = ti.types.ndarray(dtype=ti.f64, ndim=1)

        @ti.func
        def dot(a: ti.template(), b: ti.template(), n):
            s = 0.0
            for i in range(n):  # a sum (Taichi compiles with fast math): LLVM vectorizes it
                s += a[i] * b[i]
            return s

        @ti.func
        @vector_loops
        def vector_dot(a: ti.template(), b: ti.template(), n):
            s = 0.0
            for i in range(n):
                s += a[i] * b[i]
            return s

        def make(scalar, exempt):
            @ti.kernel
            @scalar_loops_in(scalar)
            def run(a: f1, b: f1, n: ti.i32):
                for _ in range(1):
                    a[0] = vector_dot(a, b, n) if ti.static(exempt) else dot(a, b, n)
            return run

        for scalar, exempt in ((True, False), (False, False), (True, True)):
            a, b = np.ones(100), np.arange(100.0)
            make(scalar, exempt)(a, b, 100)
            assert a[0] == 4950.0
            print("compiled", scalar, exempt, flush=True)
    """)
    env = dict(os.environ, TI_OFFLINE_CACHE_FILE_PATH=str(tmp_path / "cache"), TI_PRINT_KERNEL_LLVM_IR_OPTIMIZED="1")
    (tmp_path / "kernels.py").write_text(script)  # Taichi reads a kernel's source from its file
    run = subprocess.run([sys.executable, "kernels.py"], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    # one module per kernel, in the order compiled: the marked kernel first
    modules = [path.read_text() for path in sorted(tmp_path.glob("*.ll"))]
    vectorized = ["vector.body" in text for text in modules if "define" in text and "@run_c" in text]
    assert vectorized == [False, True, True]


def test_an_error_inside_a_scalar_loop_names_its_own_line():
    """The exit added to a loop is placed at the loop's line; the loop's own statements keep
    theirs, so that Taichi's message names the line at fault."""
    ensure_runtime("cpu")
    assert scalar_loops() is PATCHED
    f1 = ti.types.ndarray(dtype=ti.f64, ndim=1)

    @ti.func
    def broken(a: ti.template(), n):
        for i in range(n):
            a[i] = 1.0
            a[i] = not_defined_anywhere  # noqa: F821

    @ti.kernel
    @scalar_loops_in(True)
    def run(a: f1, n: ti.i32):
        for _ in range(1):
            broken(a, n)

    with pytest.raises(Exception) as caught:
        run(np.zeros(3), 3)
    message = str(caught.value)
    assert "a[i] = not_defined_anywhere" in message and "for i in range(n):" not in message
