"""A user's own Taichi code beside the engine (physics/runtime/taichi_adapter/): the
adapter's patches act on the engine's kernels only, so a user's kernels compile, run and
report their errors in a process that has built and stepped a World exactly as in one
that never imported taigym; and a patch whose check fails leaves Taichi as it is, with
one logged line."""

import json
import logging
import os
import subprocess
import sys
import types

import numpy as np
import pytest
from conftest import gym_asset, user_environment
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.runtime.taichi_adapter import real_functions, taichi_174, tracing

pytestmark = pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda",
                                reason="the user programs run on the CPU backend")

# run as a file (Taichi reads a kernel's source from it): "before" never imports taigym;
# "after" builds and steps a World first, then runs the same programs in its runtime
USER_PROGRAMS = '''
import json, sys
import numpy as np

if sys.argv[1] == "after":
    from taigym import physics
    world = physics.World(physics.load_model(sys.argv[2]), num_envs=2, device="cpu")
    world.step(3)
    from taigym.physics.runtime.backend import ti
else:
    import importlib
    ti = importlib.import_module(sys.argv[3])
    ti.init(arch=ti.cpu, offline_cache=False)

out = {}

x = ti.field(ti.f32, shape=8)

@ti.kernel
def fill():
    for i in x:
        x[i] = i * 0.5 + ti.sin(ti.cast(i, ti.f32))

fill()
out["field"] = x.to_numpy().tolist()

@ti.kernel
def axpy(y: ti.types.ndarray(dtype=ti.f64, ndim=1), x: ti.types.ndarray(dtype=ti.f64, ndim=1), a: ti.f64):
    for i in range(y.shape[0]):
        y[i] += a * x[i]

y = np.ones(5)
axpy(y, np.arange(5.0), 2.5)
axpy(y, np.arange(5.0), -1.0)
out["ndarray"] = y.tolist()

@ti.data_oriented
class Scaler:
    def __init__(self, k):
        self.k = k
        self.v = ti.field(ti.i32, shape=5)

    @ti.func
    def scaled(self, i):
        return i * self.k + 1

    @ti.kernel
    def run(self):
        for i in self.v:
            self.v[i] = self.scaled(i)

s = Scaler(3)
s.run()
out["data_oriented"] = s.v.to_numpy().tolist()

g = ti.field(ti.i32, shape=(4, 3))

@ti.func
def count(i, j):
    total = 0
    for k in range(i + 1):
        for m in range(j + 1):
            total += k * m + 1
    return total

@ti.kernel
def grid():
    for i, j in g:
        g[i, j] = count(i, j)

grid()
out["struct_for"] = g.to_numpy().tolist()

@ti.kernel
def mismatched(a: ti.types.ndarray(dtype=ti.f32, ndim=1)):
    for i in range(a.shape[0]):
        v = ti.Vector([1.0, 2.0])
        a[i] = (v @ ti.Vector([1.0, 2.0, 3.0]))[0]  # the type error

try:
    mismatched(np.zeros(3, np.float32))
except Exception as e:
    out["error"] = [type(e).__name__, str(e)]

print("USER " + json.dumps(out))
'''


def _run(tmp_path, mode):
    script = tmp_path / "user_programs.py"
    script.write_text(USER_PROGRAMS)
    # as a user's process: the pendulum's own kernel, seconds to compile (the suite's shared
    # kernel would take a minute: this worker keeps the ones it compiled only at its exit)
    proc = subprocess.run([sys.executable, str(script), mode, gym_asset("inverted_pendulum"), ti.__name__],
                          cwd=tmp_path, env=user_environment(), capture_output=True, text=True, timeout=900,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("USER ")]
    return json.loads(lines[-1][len("USER "):])


def test_user_kernels_run_and_fail_as_without_taigym(tmp_path):
    before, after = _run(tmp_path, "before"), _run(tmp_path, "after")
    assert before == after
    kind, message = after["error"]
    assert kind in ("TaichiTypeError", "QuadrantsTypeError")
    wrong = next(n for n, line in enumerate(USER_PROGRAMS.splitlines(), 1) if "# the type error" in line)
    assert f'user_programs.py", line {wrong}, in mismatched:' in message
    assert "^^^" in message  # Taichi's own excerpt, caret line and all
    assert before["data_oriented"] == [3 * i + 1 for i in range(5)]
    assert before["ndarray"] == [1.0 + 1.5 * i for i in range(5)]


@pytest.mark.parametrize("patch", taichi_174.PATCHES, ids=lambda p: p.name)
def test_a_failed_check_leaves_taichi_as_it_is_with_one_line(patch, caplog):
    # a Taichi laid out otherwise: none of the internals a patch relies on are where it looks
    ensure_runtime("cpu")  # the loop patch asks the running backend first
    other = types.SimpleNamespace(__name__="taigym_no_such_taichi", __version__=(9, 9, 9), cpu=ti.cpu)
    with caplog.at_level(logging.INFO, logger="taigym"):
        assert patch.install(other) is False
    lines = [r.getMessage() for r in caplog.records if r.name == "taigym"]
    assert len(lines) == 1, lines
    assert patch.name in lines[0] and "Taichi's own path is used" in lines[0]


def test_a_failed_check_of_real_functions_keeps_outlining_off(caplog):
    other = types.SimpleNamespace(__name__="quadrants", __version__=(1, 3, 3))
    applied = real_functions._applied
    with caplog.at_level(logging.INFO, logger="taigym"):
        assert real_functions.PATCH.install(other) is False
    assert real_functions._applied is applied  # what the running Taichi has is unchanged
    assert len([r for r in caplog.records if r.name == "taigym"]) == 1


def test_each_patch_states_what_it_relies_on():
    for patch in taichi_174.PATCHES:
        assert patch.relies_on and patch.name
    assert tracing.POSITIONS.relies_on.startswith("lang.ast.ast_transformer_utils")


def test_launch_reuse_given_up_logs_one_line(monkeypatch, caplog):
    from taigym.physics.runtime.taichi_adapter import launch

    monkeypatch.setattr(launch, "_fast_path", (None, None, None))  # in use, as after a successful probe
    with caplog.at_level(logging.INFO, logger="taigym"):
        launch._give_up_fast_path()
        launch._give_up_fast_path()
    lines = [r.getMessage() for r in caplog.records if r.name == "taigym"]
    assert len(lines) == 1 and "Taichi's own path" in lines[0], lines
    assert not launch.fast_path_available()


OTHER_VERSION = '''
import sys
import numpy as np
import taichi
taichi.__version__ = (1, 8, 0)  # a Taichi whose tracer the expansions do not know
from taigym import physics
world = physics.World(physics.load_model(sys.argv[1]), num_envs=2, device="cpu", precision="float64")
world.set_ctrl(np.full((2, world.model.nu), 0.3))
world.step(20)
np.save(sys.argv[2], world.get("qpos"))
'''


def test_a_failed_check_in_a_real_process_steps_on_taichis_own_path(tmp_path):
    if ti.__name__ != "taichi":
        pytest.skip("the version check is taichi 1.7.4's")
    from taigym import physics

    env = user_environment()  # the model's own, smaller kernel
    env["TI_OFFLINE_CACHE_FILE_PATH"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-c", OTHER_VERSION, gym_asset("inverted_pendulum"), str(tmp_path / "q.npy")],
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if "Taichi's own path" in line]
    assert len(lines) == 1 and "'expanded matrix operations'" in lines[0], proc.stderr[-3000:]
    world = physics.World(physics.load_model(gym_asset("inverted_pendulum")), num_envs=2, device="cpu",
                          precision="float64")
    world.set_ctrl(np.full((2, world.model.nu), 0.3))
    world.step(20)
    np.testing.assert_allclose(np.load(tmp_path / "q.npy"), world.get("qpos"), rtol=1e-9, atol=1e-12)
