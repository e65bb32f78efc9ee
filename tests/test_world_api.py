"""The World contract: shapes, names, bad input, one device per process."""

import json
import os
import time

import numpy as np
import pytest
from conftest import gym_asset
from taigym.physics import settings
from taigym.physics.errors import WorldError

from taigym import physics


def _model():
    b = physics.ModelBuilder()
    link = b.add_body(0, mass=1.0, com=(0, 0, -0.5), inertia=(0.1, 0.1, 0.01))
    b.add_joint_revolute(link, axis=(0, 1, 0), name="hinge")
    b.add_actuator("hinge", kind="motor", ctrlrange=(-1, 1))
    return b.finalize()


def test_shapes_and_names(device):
    world = physics.World(_model(), num_envs=5, device=device, precision="float64")
    world.forward()
    assert world.get("qpos").shape == (5, 1)
    assert world.get("qM").shape == (5, 1, 1)
    assert world.get("xpos").shape == (5, 2, 3)
    assert world.get("xmat").shape == (5, 2, 3, 3)
    assert world.get("body_q").shape == (5, 2, 7)
    assert world.get("joint_q").shape == (5, 1)
    with pytest.raises(WorldError, match="unknown quantity 'qposs'"):
        world.get("qposs")


def test_bad_input_is_refused(device):
    world = physics.World(_model(), num_envs=3, device=device, precision="float32")
    with pytest.raises(WorldError, match=r"ctrl must have shape \(3, 1\)"):
        world.set_ctrl(np.zeros((2, 1)))
    with pytest.raises(WorldError, match="ctrl has non-finite values in rows \\[1\\]"):
        world.set_ctrl(np.array([[0.0], [np.nan], [0.0]]))
    with pytest.raises(WorldError, match="qpos must have shape"):
        world.set_state(qpos=np.zeros((3, 4)))
    with pytest.raises(WorldError, match="precision"):
        physics.World(_model(), precision="float16")
    with pytest.raises(WorldError, match="num_envs"):
        physics.World(_model(), num_envs=0)


def test_second_device_is_an_error(device):
    physics.World(_model(), device=device)
    other = "cuda" if device == "cpu" else "cpu"
    with pytest.raises(WorldError, match="one backend per process|no NVIDIA GPU"):
        physics.World(_model(), device=other)


def test_ctrl_clamped_and_state_per_env(device):
    world = physics.World(_model(), num_envs=2, device=device, precision="float64")
    world.set_ctrl(np.array([[5.0], [-0.5]]))
    world.set_state(qpos=np.array([0.3]), env_ids=[1])
    world.forward()
    assert np.allclose(world.get("actuator_force")[:, 0], [1.0, -0.5])  # ctrlrange clamps the first
    assert np.allclose(world.get("qpos")[:, 0], [0.0, 0.3])
    world.step(3)
    assert np.allclose(world.get("time"), 3 * world.model.opt.timestep)


@pytest.mark.parametrize("device_kernels", [False, True])
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_tensors_in_and_out_on_the_worlds_device(device, precision, device_kernels):
    # get_tensor is get() as a torch tensor on the World's device; a tensor on that device
    # is written where it is, and gives the same steps as the same numpy input
    torch = pytest.importorskip("torch")
    from taigym.physics.runtime.device_io import torch_device

    model = physics.load_model(gym_asset("ant"))  # contacts: constraint tables too
    nu, dev = model.nu, torch_device(device)
    rng = np.random.default_rng(3)
    ctrl = rng.uniform(-1, 1, (4, nu))
    a = physics.World(model, num_envs=4, device=device, precision=precision)
    b = physics.World(model, num_envs=4, device=device, precision=precision)
    # a CUDA World moves tensors by device kernels; force that path on CPU too
    a._device_tensors = device_kernels or a._device_tensors
    a.set_ctrl(torch.as_tensor(ctrl, device=dev))
    b.set_ctrl(ctrl)
    qpos = np.tile(model.qpos0, (2, 1)) + 0.01
    a.set_state(qpos=torch.as_tensor(qpos, device=dev), env_ids=[1, 3])
    b.set_state(qpos=qpos, env_ids=[1, 3])
    a.step(3)
    b.step(3)
    for key in ("qpos", "qvel", "ctrl", "xpos", "xmat", "cvel", "cfrc_ext", "qfrc_actuator", "qM", "nefc"):
        out = a.get_tensor(key)
        assert out.device == dev
        np.testing.assert_array_equal(out.cpu().numpy(), b.get(key), err_msg=key)
    a.set_ctrl(torch.ones(nu, device=dev))  # one row for every env
    np.testing.assert_array_equal(a.get("ctrl"), np.ones((4, nu)))
    with pytest.raises(WorldError, match=r"ctrl has non-finite values in rows \[2\]"):
        bad = torch.zeros((4, nu), device=dev)
        bad[2, 0] = float("nan")
        a.set_ctrl(bad)
    with pytest.raises(WorldError, match=r"ctrl must have shape \(4, "):
        a.set_ctrl(torch.zeros((3, nu), device=dev))


@pytest.mark.parametrize("path", ["reuse", "plain"])
def test_reused_launch_matches_taichis_own_path(device, path, monkeypatch):
    # a launch on the same arrays reuses its setup; new arrays or scalars still take effect.
    # "plain" is the public fallback (another Taichi, CUDA)
    from taigym.physics.runtime.backend import ti
    from taigym.physics.runtime.taichi_adapter import ReusedLaunch
    from taigym.physics.runtime.taichi_adapter import launch as _launch

    physics.World(_model(), device=device)  # starts the runtime on the test's device
    if path == "plain":
        monkeypatch.setattr(_launch, "_fast_path", False)

    @ti.kernel
    def axpy(y: ti.types.ndarray(dtype=ti.f64, ndim=1), x: ti.types.ndarray(dtype=ti.f64, ndim=1), a: ti.f64,
             k: ti.i32):
        for i in range(y.shape[0]):
            y[i] += a * x[i] + k

    launch = ReusedLaunch(axpy)
    y, x = ti.ndarray(ti.f64, 4), np.arange(4.0)
    expected = np.zeros(4)
    for a, k in ((1.0, 0), (2.5, 1), (-1.0, 3)):
        launch(y, x, a, k)
        expected += a * x + k
        np.testing.assert_array_equal(y.to_numpy(), expected)
    x[:] = 10.0  # the same numpy array, new contents: read at each launch
    launch(y, x, 1.0, 0)
    expected += 10.0
    np.testing.assert_array_equal(y.to_numpy(), expected)
    z = ti.ndarray(ti.f64, 4)  # a new array: the setup is made again for it
    launch(z, x, 1.0, 0)
    np.testing.assert_array_equal(z.to_numpy(), np.full(4, 10.0))
    np.testing.assert_array_equal(y.to_numpy(), expected)
    reused = path == "reuse" and device == "cpu" and _launch.fast_path_available()
    assert (launch._arrays is not None) == reused
    if path == "reuse" and ti.__name__ == "taichi":  # 1.7.4's internals are the ones _launch knows
        assert _launch.fast_path_available()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_env_loop_deals_every_env_once_and_spreads_them_over_tasks(device):
    # the step kernel's env loop, replayed: iteration t of block t // TASK takes env
    # (t % TASK) * ntask + t // TASK, then every ntask * TASK-th after it
    from taigym.physics.step.pipeline import TASK, env_tasks

    for num_envs in (1, 2, 5, 16, 64, 513, 1024, 3000):
        ntask = env_tasks(num_envs, device, threads=2)
        dealt = {}
        for t in range(ntask * TASK):
            w = (t % TASK) * ntask + t // TASK
            while w < num_envs:
                dealt.setdefault(w, []).append(t // TASK)
                w += ntask * TASK
        assert sorted(dealt) == list(range(num_envs))
        assert all(len(blocks) == 1 for blocks in dealt.values())
        if device == "cpu" and num_envs >= 2:  # a block per thread at least, each holding envs
            assert len({blocks[0] for blocks in dealt.values()}) >= 2


def test_serial_one_env_world_steps_as_the_batched_kernels(device, monkeypatch):
    # a one-env CPU World loops over its env in the calling thread by default; the same
    # code with the thread pool gives the same bits (contacts, constraints, cfrc_ext)
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)
    settings.reload()
    model = physics.load_model(gym_asset("ant"))
    serial = physics.World(model, device=device, precision="float64")
    batched = physics.World(model, device=device, precision="float64", serial=False)
    assert serial.serial == (device == "cpu") and not batched.serial
    rng = np.random.default_rng(3)
    contacts = 0
    for _ in range(30):
        ctrl = rng.uniform(-0.3, 0.3, (1, model.nu))
        for world in (serial, batched):
            world.set_ctrl(ctrl)
            world.step(5)
        contacts += serial.contacts()["ncon"][0]
        np.testing.assert_array_equal(serial.get("qpos"), batched.get("qpos"))
    assert contacts > 0
    for key in ("qpos", "qvel", "qacc", "xpos", "cfrc_ext", "efc_force"):
        np.testing.assert_array_equal(serial.get(key), batched.get(key), err_msg=key)


@pytest.mark.parametrize("path", ["reuse", "plain"])
def test_cpu_tables_are_read_and_written_in_place(device, path, monkeypatch):
    # on CPU the World reads its tables through numpy views of their memory and writes
    # controls and states into them; the plain path (CUDA, another Taichi) copies through
    # kernels, with the same result
    from taigym.physics import data as _data
    from taigym.physics.runtime.taichi_adapter import launch as _launch

    if path == "plain":
        monkeypatch.setattr(_data, "host_view", lambda table: None)
    world = physics.World(_model(), num_envs=3, device=device, precision="float64")
    in_place = path == "reuse" and device == "cpu"
    assert (world._view_of(world._d["qpos"]) is not None) == in_place
    world.set_state(qpos=np.array([[0.1], [0.2], [0.3]]), qvel=np.array([[1.0], [2.0], [3.0]]))
    world.set_ctrl(np.array([[0.5], [-0.5], [0.0]]), env_ids=None)
    world.set_state(qvel=np.array([[-4.0]]), env_ids=[1])
    np.testing.assert_array_equal(world.get("qvel")[:, 0], [1.0, -4.0, 3.0])
    np.testing.assert_array_equal(world.get("ctrl")[:, 0], [0.5, -0.5, 0.0])
    world.set_drive_target(q=np.array([[0.7], [0.8]]), env_ids=[2, 0])  # a column of the dof table
    np.testing.assert_array_equal(world.get("drive_qpos_target")[:, 0], [0.8, 0.0, 0.7])
    before = world.get("qpos")
    world.step(2)
    after = world.get("qpos")
    assert not np.array_equal(before, after)  # a read after a launch sees the launch's writes
    got = world.get("qpos")
    got[:] = 7.0  # get() hands out copies: the World is not changed through them
    np.testing.assert_array_equal(world.get("qpos"), after)
    if in_place:
        assert _launch.host_view(world._d["qpos"]).ctypes.data == world._view_of(world._d["qpos"]).ctypes.data


def test_registers_kept_past_their_world_stay_readable(device):
    """On a CPU World registers() is the registers' own memory: the array keeps that memory
    alive after the World, or its program, is replaced (it pointed at freed memory before)."""
    from taigym.physics.step.program import ProgramBuilder

    world = physics.World(_model(), num_envs=3, device=device)
    builder = ProgramBuilder()
    builder.load("qpos", [0])
    world.set_program(builder.build())
    world.set_registers(np.array([[1.0], [2.0], [3.0]]))
    regs = world.registers()
    world.set_program(ProgramBuilder().build())  # new registers: the old ones are no longer the World's
    del world
    import gc

    gc.collect()
    np.testing.assert_array_equal(regs[:, 0], [1.0, 2.0, 3.0])


def test_first_compile_is_announced_once_per_machine(device, tmp_path, monkeypatch, capsys):
    # a marker per kernel variant in Taichi's cache folder says whether it compiled before
    from taigym.physics.runtime import kernel_cache

    physics.World(_model(), device=device)  # starts the runtime, whose settings the key includes
    monkeypatch.setattr(kernel_cache, "folder", lambda: tmp_path)
    key = kernel_cache.variant_key("float64", "Newton", "pyramidal", False, True)
    assert key != kernel_cache.variant_key("float32", "Newton", "pyramidal", False, True)
    assert not kernel_cache.compiled_before(key)
    guess = kernel_cache.expected_seconds()
    with kernel_cache.FirstLaunch(key, "float64, Newton", "TaiGym/Ant-v0"):
        pass
    line = capsys.readouterr().err
    assert line.startswith("taigym: compiling kernels for TaiGym/Ant-v0 (float64, Newton)")
    assert f"~{guess:.0f} s" in line
    assert kernel_cache.compiled_before(key)
    with kernel_cache.FirstLaunch(key, "float64, Newton", "TaiGym/Ant-v0"):
        pass
    assert capsys.readouterr().err == ""  # compiled before: nothing to say
    kernel_cache.record("other", 12.34, "float32")
    assert kernel_cache.expected_seconds() in (12.3, 0.0)  # the newest record; this one took ~0 s
    # a compile on the other device says nothing of this one's
    other = "cpu" if kernel_cache._device() == "cuda" else "cuda"
    (tmp_path / "elsewhere.json").write_text(json.dumps({"seconds": 99.0, "variant": "x", "device": other}))
    os.utime(tmp_path / "elsewhere.json", (time.time() + 60, time.time() + 60))
    assert kernel_cache.expected_seconds() in (12.3, 0.0)
    with pytest.raises(ZeroDivisionError):  # a failed launch leaves no marker
        with kernel_cache.FirstLaunch("failed", "x", None):
            1 / 0
    assert not kernel_cache.compiled_before("failed")


def test_forward_of_some_envs_leaves_the_others(device):
    # a reset computes its envs' derived quantities only: the others keep their own
    world = physics.World(_model(), num_envs=4, device=device, precision="float64")
    world.set_state(qpos=np.array([[0.1], [0.2], [0.3], [0.4]]))
    world.forward()
    before = world.get("xipos")
    world.set_state(qpos=np.array([[1.0], [2.0]]), env_ids=[2, 0])
    world.forward([2, 0])
    after = world.get("xipos")
    np.testing.assert_array_equal(after[[1, 3]], before[[1, 3]])
    assert not np.allclose(after[[0, 2]], before[[0, 2]])
    world.forward()  # every env from its state: the subset's values were already these
    np.testing.assert_array_equal(world.get("xipos"), after)
    with pytest.raises(WorldError, match=r"env_ids must be in \[0, 4\)"):
        world.forward([4])


def test_step_of_some_envs_leaves_the_others(device):
    # a reset's settling steps: the envs named step (through their contacts) as they would
    # in a step of every env; the others keep their state, derived quantities and time
    world = physics.World(physics.load_model(gym_asset("hopper")), num_envs=4, device=device, precision="float64")
    rng = np.random.default_rng(0)
    qpos = world.get("qpos") + rng.uniform(-0.1, 0.1, (4, world.model.nq))
    qvel = rng.normal(0, 0.5, (4, world.model.nv))
    ctrl = rng.uniform(-1, 1, (4, world.model.nu))
    names = ("qpos", "qvel", "qacc", "xpos", "sensordata", "time")

    def start():
        world.reset()  # the solver's warm start too
        world.set_state(qpos=qpos, qvel=qvel)
        world.set_ctrl(ctrl)
        world.time[:] = 0.25
        world.forward()
        return {k: world.get(k) for k in names}

    before = start()
    world.step(30, env_ids=[2, 0], refresh=True)
    some = {k: world.get(k) for k in names}
    start()
    world.step(30, refresh=True)
    every = {k: world.get(k) for k in names}
    assert world.contacts()["ncon"].any()
    for k in names:
        np.testing.assert_array_equal(some[k][[1, 3]], before[k][[1, 3]], err_msg=k)
        np.testing.assert_array_equal(some[k][[0, 2]], every[k][[0, 2]], err_msg=k)
    world.step(3, env_ids=[])  # nothing to step
    np.testing.assert_array_equal(world.get("qpos"), every["qpos"])
    with pytest.raises(WorldError, match=r"env_ids must be in \[0, 4\)"):
        world.step(env_ids=[4])
    with pytest.raises(WorldError, match="env_ids must name each env once"):
        world.step(env_ids=[1, 1])


@pytest.fixture
def traced_as_the_engines(monkeypatch):
    """This module's kernels traced as the engine's own: the Taichi adapter's patches act on
    the engine's functions only (physics/runtime/taichi_adapter/ownership.py)."""
    from taigym.physics.runtime.taichi_adapter import ownership

    monkeypatch.setattr(ownership, "PACKAGES", (*ownership.PACKAGES, __name__))


def test_kernel_errors_still_name_the_file_line_and_source(device, traced_as_the_engines):
    # the lighter trace keeps what a compile error needs to point at the code
    from taigym.physics.runtime import taichi_adapter
    from taigym.physics.runtime.backend import ti

    physics.World(_model(), device=device)
    if ti.__name__ == "taichi":  # 1.7.4's tracer is the one the adapter knows
        assert taichi_adapter.installed()["error positions"]

    @ti.kernel
    def broken(x: ti.types.ndarray(dtype=ti.f64, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = no_such_name + 1.0  # noqa: F821

    with pytest.raises(Exception, match=r'(?s)File ".*test_world_api.py", line \d+, in broken:.*no_such_name \+ 1\.0'):
        broken(np.zeros(3))


def test_kernels_in_classes_still_found_with_decorators_looked_at_once(device, traced_as_the_engines):
    # the adapter answers Taichi's "is this decorator inside a class?" once per place
    # that applies it; a kernel method of a data-oriented class must still be one
    from taigym.physics.runtime.backend import ti

    physics.World(_model(), device=device)

    @ti.data_oriented
    class Ramp:
        @ti.kernel
        def fill(self, x: ti.types.ndarray(dtype=ti.f64, ndim=1)):
            for i in range(x.shape[0]):
                x[i] = 2.0 * i

    funcs = []
    for k in range(3):  # three functions decorated at one place: each is its own

        @ti.func
        def times(v, k=k):
            return v * (k + 1)

        funcs.append(times)

    @ti.kernel
    def apply(x: ti.types.ndarray(dtype=ti.f64, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = funcs[0](x[i]) + funcs[2](x[i])

    x = np.zeros(4)
    Ramp().fill(x)
    apply(x)
    np.testing.assert_array_equal(x, 4 * 2.0 * np.arange(4))


def test_a_lent_tree_forgets_what_its_last_trace_noted(device, traced_as_the_engines):
    # Taichi marks a method call on a traced vector with the vector (``caller``) and looks for
    # the mark with hasattr. In a kernel that expands small vector operations a cross
    # product is a Python-side vector of entries, whose own method is called: the same
    # function's tree, lent again, must not keep the mark of its call on a traced vector
    from taigym.physics.runtime.backend import ti
    from taigym.physics.runtime.taichi_adapter import expanded_math_in

    physics.World(_model(), device=device)

    @ti.func
    def self_dot(v: ti.template()):
        return v.dot(v)

    @ti.kernel
    @expanded_math_in
    def apply(x: ti.types.ndarray(dtype=ti.f64, ndim=1)):
        for _ in range(1):
            a, b = ti.Vector([x[0], x[1], x[2]]), ti.Vector([x[3], x[4], x[5]])
            x[6] = self_dot(a)
            x[7] = self_dot(a.cross(b))
            x[8] = self_dot(b)

    x = np.array([1.0, -1.0, 2.0, 0.5, 3.0, -2.0, 0.0, 0.0, 0.0])
    a, b = x[:3].copy(), x[3:6].copy()
    apply(x)
    np.testing.assert_allclose(x[6:], [a @ a, np.cross(a, b) @ np.cross(a, b), b @ b], rtol=1e-14)


def test_the_quick_class_check_answers_as_taichis_did(device):
    # the adapter reads the decorating frame's line from linecache; Taichi read it through
    # inspect.getframeinfo. Both, on frames of a class body, a data_oriented line, a function
    # and code with no file
    import importlib
    import inspect
    import re

    from taigym.physics.runtime.backend import ti
    from taigym.physics.runtime.taichi_adapter.tracing import quick_inside_class

    physics.World(_model(), device=device)  # starts the runtime, which installs the adapter

    taichi_kernels = importlib.import_module(ti.__name__ + ".lang.kernel_impl")

    patterns = [re.compile(r"@(\w+\.)?data_oriented"), re.compile(r"class ")]
    quick = quick_inside_class(patterns)
    answers = []

    def both():
        # as Taichi asks: the frame two above the decorator's caller (a class body's: the
        # frame running the class statement)
        frame = inspect.currentframe().f_back.f_back
        try:
            lines = inspect.getframeinfo(frame)[3]
            slow = any(p.match(lines[0].strip()) for p in patterns)
        except (OSError, TypeError):
            slow = False
        answers.append((quick(3), slow))

    class Body:
        both()

    @taichi_kernels.data_oriented if hasattr(taichi_kernels, "data_oriented") else (lambda c: c)
    class Marked:
        both()

    def plain():
        both()

    plain()
    exec(compile("class Elsewhere:\n    both()\n", "<no file>", "exec"), {"both": both})
    assert answers[0] == (True, True) and answers[2:] == [(False, False), (False, False)]
    assert answers[1][0] == answers[1][1]
    if ti.__name__ == "taichi":  # patched on taichi 1.7.4; the fork is left as it is
        assert getattr(taichi_kernels._inside_class, "taigym", False)


def test_an_inlined_function_is_parsed_once_and_traced_at_every_call(device, monkeypatch, traced_as_the_engines):
    # the adapter lends a function's parsed tree to each of its calls in turn, a call
    # nested in another's arguments included; each call still traces its own arguments
    import ast

    from taigym.physics.runtime.backend import ti

    physics.World(_model(), device=device)
    parsed = []
    parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: parsed.append(source) or parse(source, *a, **k))

    @ti.func
    def affine(v, k):
        return k * v + 1.0

    @ti.kernel
    def apply(x: ti.types.ndarray(dtype=ti.f64, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = affine(affine(x[i], 2.0), 3.0) + affine(x[i], -1.0)

    x = np.arange(4.0)
    apply(x)
    np.testing.assert_array_equal(x, 3.0 * (2.0 * np.arange(4.0) + 1.0) + 1.0 + (1.0 - np.arange(4.0)))
    calls = sum("def affine" in (source.decode() if isinstance(source, bytes) else source) for source in parsed)
    if ti.__name__ == "taichi":  # the fork parses as it does (the adapter leaves its tracer alone)
        assert calls == 1


@pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda",
                    reason="which CPU Worlds run serially: the serial kernels are CPU-only")
def test_serial_by_default_where_a_step_is_little_work(monkeypatch):
    # waking the thread pool costs more than it saves on small batches of small models
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)
    settings.reload()
    pendulum, ant = physics.load_model(gym_asset("inverted_pendulum")), physics.load_model(gym_asset("ant"))
    serial = {(name, n): physics.World(m, n, precision="float64").serial
              for name, m in (("pendulum", pendulum), ("ant", ant)) for n in (1, 4, 8, 64)}
    assert serial == {("pendulum", 1): True, ("pendulum", 4): True, ("pendulum", 8): True, ("pendulum", 64): False,
                      ("ant", 1): True, ("ant", 4): True, ("ant", 8): False, ("ant", 64): False}
    monkeypatch.setenv("TAIGYM_KERNELS", "shared")
    settings.reload()
    assert not physics.World(pendulum, 1).serial
    assert physics.World(ant, 64, serial=True).serial  # asked for: as asked


def test_kept_launch_with_an_array_tuple(device):
    # with_arrays skips the arrays' check for the tuple it kept; any other call rebinds
    from taigym.physics.runtime.backend import ti
    from taigym.physics.runtime.taichi_adapter import ReusedLaunch

    physics.World(_model(), device=device)

    @ti.kernel
    def add(y: ti.types.ndarray(dtype=ti.f64, ndim=1), a: ti.f64):
        for i in range(y.shape[0]):
            y[i] += a

    launch = ReusedLaunch(add)
    y, z = ti.ndarray(ti.f64, 3), ti.ndarray(ti.f64, 3)
    kept = (y,)
    launch.with_arrays(kept, 1.0)
    launch.with_arrays(kept, 2.0)
    launch(z, 5.0)  # another array through the plain call: the kept tuple no longer holds
    launch.with_arrays(kept, 4.0)
    np.testing.assert_array_equal(y.to_numpy(), np.full(3, 7.0))
    np.testing.assert_array_equal(z.to_numpy(), np.full(3, 5.0))
    # unchanged scalars are not written again; a plain call in between does not leave its own
    launch.with_arrays(kept, 4.0)
    launch(y, 0.5)
    launch.with_arrays(kept, 4.0)
    np.testing.assert_array_equal(y.to_numpy(), np.full(3, 15.5))


def test_a_batch_past_32_bit_indices_is_refused_before_anything_is_allocated(device):
    # Humanoid uses PGS, whose dual matrix takes nefc x nefc = 290 x 290 entries per env: 65,536
    # envs would index past 2**31 (on CUDA an illegal address that ended the process)
    model = physics.load_model(gym_asset("humanoid"))
    with pytest.raises(WorldError, match=r"num_envs=65,536 .* table efc_Y would hold 5,511,577,600 entries "
                                         r"\(65,536 x 290 x 290\).* at most 25,534 envs per World"):
        physics.World(model, num_envs=65536, device=device)
    with pytest.raises(WorldError, match="at most 25,534 envs"):
        physics.World(model, num_envs=25535, device=device)
