"""A serial CPU step kernel's machine code, kept beside Taichi's cache and launched from
there by later Worlds and processes (physics/runtime/taichi_adapter/machine_code.py)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import gym_asset
from taigym.physics import settings
from taigym.physics.runtime.backend import NAME, ensure_runtime
from taigym.physics.runtime.taichi_adapter import machine_code as mc
from taigym.physics.runtime.taichi_adapter.patch import Unsupported

from taigym import physics

pytestmark = pytest.mark.skipif(NAME != "taichi" or sys.platform != "linux",
                                reason="machine code is kept for taichi 1.7.4's kernels on Linux x86-64 only")


@pytest.fixture
def kept(tmp_path, monkeypatch, device):
    """Machine code kept in a folder of the test's own, with no World of this process having
    built or loaded any; serial Worlds by default, as outside the suite."""
    if device != "cpu":
        pytest.skip("the machine code is the CPU's serial kernel")
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)
    settings.reload()
    ensure_runtime("cpu")
    monkeypatch.setattr(mc, "folder", lambda: tmp_path)
    monkeypatch.setattr(mc, "_loaded", {})
    monkeypatch.setattr(mc, "_building", set())
    return tmp_path


def _stepped(world, model, steps=150, seed=3):
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(steps):
        world.set_ctrl(rng.uniform(-0.4, 0.4, (1, model.nu)))
        world.step(2)
        seen.append(np.concatenate([world.get(k).ravel() for k in ("qpos", "qvel", "qacc", "cfrc_ext")]))
    return np.array(seen), world.contacts()["ncon"]


def test_a_world_steps_from_kept_machine_code_as_from_taichis_launcher(kept):
    # the first serial World launches through Taichi and leaves the machine code for the
    # next; that one steps from it, and both compute the same bits (contacts, constraints,
    # cfrc_ext), from a fresh state each
    model = physics.load_model(gym_asset("ant"))
    first = physics.World(model, precision="float64")
    assert first.serial and not first.machine_code
    taichis, contacts = _stepped(first, model)
    mc.wait()
    assert sorted(p.suffix for p in kept.iterdir()) == [".json", ".o"]
    second = physics.World(model, precision="float64")
    assert second.machine_code
    ours, _ = _stepped(second, model)
    np.testing.assert_array_equal(ours, taichis)
    assert contacts.sum() > 0


def test_kept_machine_code_that_cannot_be_read_is_built_again(kept):
    model = physics.load_model(gym_asset("inverted_pendulum"))  # the kernel variant of the test above
    physics.World(model, precision="float64").forward()
    mc.wait()
    obj = next(kept.glob("*.o"))
    obj.write_bytes(obj.read_bytes()[:100])  # a truncated object: its checksum no longer matches
    mc._loaded.clear()
    mc._building.clear()
    world = physics.World(model, precision="float64")
    assert not world.machine_code  # Taichi's launcher, and the code is made again
    world.forward()
    mc.wait()
    assert physics.World(model, precision="float64").machine_code


def test_machine_code_is_kept_for_serial_kernels_only(kept):
    assert mc.available(serial=True)
    assert not mc.available(serial=False)  # the batched kernel runs in Taichi's thread pool


_TASK = textwrap.dedent("""\
    target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
    %struct.RuntimeContext = type {{ i8*, %struct.LLVMRuntime*, i32, i64* }}
    %struct.LLVMRuntime = type {{ i8*, i8*, i8*, i8*, i8*, i8*, i8*, [512 x i8*], i32, [4 x i8*] }}
    declare double @exp(double)
    declare void @{call}(i8*)
    define void @task(%struct.RuntimeContext* %context) {{
    entry:
      %0 = bitcast %struct.RuntimeContext* %context to {{ {{ {{ i32, i32 }}, double* }}, i32 }}**
      %1 = load {{ {{ {{ i32, i32 }}, double* }}, i32 }}*, {{ {{ {{ i32, i32 }}, double* }}, i32 }}** %0, align 8
      %2 = getelementptr inbounds %struct.RuntimeContext, %struct.RuntimeContext* %context, i64 0, i32 1
      %3 = load %struct.LLVMRuntime*, %struct.LLVMRuntime** %2, align 8
      %4 = getelementptr inbounds %struct.LLVMRuntime, %struct.LLVMRuntime* %3, i64 0, i32 {field}, i64 0
      {use}
      ret void
    }}
    """)
_PARAMS = [{"kind": "array", "ndim": 2, "dtype": "f64"}, {"kind": "scalar", "dtype": "i32"}]


def _check(call="exp2", field=7, use="", params=_PARAMS):
    llvm = mc._llvm()
    ir = _TASK.format(call=call, field=field, use=use)
    if call == "exp2":  # a declaration the library provides, not a second declaration of exp
        ir = ir.replace("declare void @exp2(i8*)", "declare double @exp2(double)")
    return mc._checked(llvm, llvm.parse_assembly(ir, llvm.create_context()), ir, params)


def test_the_module_is_checked_for_what_the_launch_provides():
    task, layout = _check()
    assert task == "task"
    assert [p["offset"] for p in layout["laid"]] == [0, 16] and layout["laid"][0]["pointer_offset"] == 8
    assert layout["args_size"] == 24 and layout["roots_offset"] == 56
    with pytest.raises(Unsupported, match="calls taichi_printf"):
        _check(call="taichi_printf")  # a runtime function: only Taichi's runtime has it
    with pytest.raises(Unsupported, match="field 9"):
        _check(field=8 + 1)
    with pytest.raises(Unsupported, match="otherwise"):
        _check(use="%5 = bitcast %struct.LLVMRuntime* %3 to i8*")
    with pytest.raises(Unsupported, match="argument 1 is i32, not a f64"):
        _check(params=[_PARAMS[0], {"kind": "scalar", "dtype": "f64"}])
    with pytest.raises(Unsupported, match="2 members for 1 parameters"):
        _check(params=_PARAMS[:1])


_PROCESS = textwrap.dedent("""\
    import json, sys
    import numpy as np
    import gymnasium as gym
    import taigym
    env = gym.make("TaiGym/InvertedPendulum-v0")
    world = env.unwrapped._batch.world
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    rows = [obs.tolist()]
    for _ in range(200):
        obs, reward, terminated, truncated, _ = env.step(rng.uniform(-3, 3, (1,)))
        rows.append(obs.tolist() + [reward])
        if terminated or truncated:
            obs, _ = env.reset()
    traced = len(world._kernels.step._primal.compiled_kernels)
    print("RESULT " + json.dumps(dict(machine_code=world.machine_code, traced=traced, rows=rows)))
    """)


def _process(cache, **environ):
    env = {**os.environ, "TI_OFFLINE_CACHE_FILE_PATH": str(cache), **environ}
    env.pop("TAIGYM_KERNELS", None)  # the suite's: one env steps serially, as for a user
    proc = subprocess.run([sys.executable, "-c", _PROCESS], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])


@pytest.mark.slow  # compiles InvertedPendulum's own kernel in an empty cache
def test_a_later_process_steps_from_the_machine_code_without_tracing(tmp_path):
    first = _process(tmp_path)  # compiles the kernel, and keeps its machine code as it exits
    assert not first["machine_code"] and first["traced"] == 1
    later = _process(tmp_path)
    assert later["machine_code"] and later["traced"] == 0  # the step kernel's Python was never traced
    assert later["rows"] == first["rows"]  # the first process stepped through Taichi's launcher
