"""scripts/benchmark.py end to end on a small model, and the taigym command's help.

Only the report's shape is checked: timings depend on the machine, so beyond being
positive and finite they are not asserted on.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)
import numpy as np
import pytest
from taigym.scripts import benchmark

REPO_ROOT = Path(__file__).resolve().parents[1]


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_quick_benchmark_reports_both_sides(tmp_path, device):
    out = tmp_path / "bench.json"
    # the start-up measurement compiles the step kernel from scratch in a subprocess (~10 s)
    status = benchmark.main(["--models", "inverted_pendulum", "--quick", "--no-startup", "--threads", "2",
                             "--device", device, "--out", str(out)])
    assert status == 0
    report = json.loads(out.read_text())
    assert report["constraints"].startswith("disabled on both sides")
    assert {"cpu_count", "platform", "taichi", "mujoco", "gpu"} <= set(report["machine"])
    assert report["settings"]["device"] == device

    (model,) = report["models"]
    assert model["name"] == "inverted_pendulum" and model["integrator"] == "RK4"
    assert [(r["precision"], r["num_envs"]) for r in model["ours"]] == [
        (p, n) for p in ("float32", "float64") for n in benchmark.QUICK_NUM_ENVS]
    for r in model["ours"]:
        assert r["finite"] and _positive(r["steps_per_s"])
        assert _positive(r["vs_mujoco_1thread"]) and _positive(r["vs_mujoco_rollout"])
    assert _positive(model["mujoco_1thread"]["steps_per_s"])
    rollout = model["mujoco_rollout"]
    assert _positive(rollout["steps_per_s"])
    assert rollout["threads"] == 2 and rollout["num_envs"] == max(benchmark.QUICK_NUM_ENVS)
    assert model["startup"] == {}
    # same states, same integrator: one step agrees with mj_step to rounding
    assert model["one_step_max_qpos_diff"]["float32"] < 1e-4
    assert model["one_step_max_qpos_diff"]["float64"] < 1e-8

    table = out.with_suffix(".md").read_text()
    engine = "taigym" if device == "cpu" else f"taigym on {device}"
    assert f"| {engine} | float32 | 16 |" in table and "MuJoCo rollout, 2 threads" in table
    assert "disabled on both sides" in table


def test_cli_help_lists_subcommands():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-m", "taigym.scripts.cli", "--help"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "benchmark" in result.stdout


def test_env_benchmark_reports_both_sides(tmp_path):
    from taigym.scripts.benchmark_envs import main

    out = tmp_path / "envs.json"
    assert main(["--tasks", "InvertedPendulum", "--num-envs", "2", "--seconds", "0.2", "--repeats", "3",
                 "--no-startup", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["taigym"] > 0 and row["gymnasium"] > 0 and row["ratio"] > 0 and row["peak_rss_mb"] > 10
    # the sides took turns: each side's median, and the median of the ratios within a turn
    assert row["repeats"] == len(row["turns"]) == 3 and row["load_average"] >= 0
    ours = [t["taigym"]["steps_per_s"] for t in row["turns"]]
    theirs = [t["gymnasium"]["steps_per_s"] for t in row["turns"]]
    assert row["taigym"] == sorted(ours)[1] and row["gymnasium"] == sorted(theirs)[1]
    assert row["ratio"] == sorted(a / b for a, b in zip(ours, theirs))[1]
    assert "| InvertedPendulum | 2 |" in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").stat().st_size > 1000


def test_env_benchmark_steps_torch_outputs_with_torch_actions():
    # a torch policy's env: actions handed over as tensors on the env's device
    pytest.importorskip("torch")
    import gymnasium as gym
    from taigym.scripts.benchmark_envs import steps_per_second

    env = gym.make_vec("TaiGym/InvertedPendulum-v0", num_envs=2, vectorization_mode="vector_entry_point",
                       tensor_backend="torch")
    rate, cores = steps_per_second(env, 2, 0.2, seed=0)
    env.close()
    assert rate > 0 and cores > 0


class _RecordingEnv:
    """A vector env that keeps the actions it is given."""

    def __init__(self):
        import gymnasium as gym

        self.single_action_space = gym.spaces.Box(-0.4, 0.4, (3,), np.float32)
        self.seen = []

    def reset(self, seed=None):
        return None, {}

    def step(self, actions):
        self.seen.append(np.array(actions))


@pytest.mark.parametrize("fresh", [True, False])
def test_env_benchmark_draws_actions_anew_each_step_or_holds_one(fresh):
    from taigym.scripts.benchmark_envs import steps_per_second

    a, b = _RecordingEnv(), _RecordingEnv()
    for env in (a, b):
        steps_per_second(env, 2, 0.05, seed=0, fresh=fresh)
    distinct = {x.tobytes() for x in a.seen}
    assert len(a.seen) > 3 and (len(distinct) > 1 if fresh else len(distinct) == 1)
    assert all(x.shape == (2, 3) and np.all(np.abs(x) <= 0.4) for x in a.seen)  # within the action space
    n = min(len(a.seen), len(b.seen))
    assert all(np.array_equal(x, y) for x, y in zip(a.seen[:n], b.seen[:n]))  # every side gets the same actions


@pytest.mark.parametrize("installed", [True, False])
def test_env_benchmark_has_an_envpool_column(tmp_path, monkeypatch, installed):
    # EnvPool is optional: measured beside us where it is installed, "not installed" where not
    from taigym.scripts.benchmark_envs import main, make_envpool, steps_per_second

    if installed:
        pytest.importorskip("envpool")
        pool = make_envpool("InvertedPendulum", 2, seed=0)
        try:
            rate, cores = steps_per_second(pool, 2, 0.2, seed=0, reset_seed=False)
        finally:
            pool.close()
        assert rate > 0 and cores > 0
    else:
        monkeypatch.setitem(sys.modules, "envpool", None)  # import envpool raises ImportError
        assert make_envpool("InvertedPendulum", 2, seed=0) == "not installed"
    assert make_envpool("QuadrupedFlat", 2, seed=0) is None  # no counterpart
    out = tmp_path / "envs.json"
    assert main(["--tasks", "InvertedPendulum", "--num-envs", "1", "--seconds", "0.1", "--no-startup",
                 "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    table = out.with_suffix(".md").read_text()
    assert "EnvPool v5" in table.splitlines()[0]
    if installed:
        assert row["envpool"] > 0 and row["envpool_ratio"] > 0
    else:
        assert row["envpool"] is None and row["envpool_note"] == "not installed" and "not installed" in table


@pytest.mark.slow
def test_env_benchmark_times_start_up_cold_and_warm():
    from taigym.scripts.benchmark_envs import measure_startup, startup_markdown

    row = measure_startup("InvertedPendulum")  # cold: an empty kernel cache, so the step kernel compiles
    assert row["cold_s"] > row["warm_s"] > 0 and row["gymnasium_s"] > 0
    assert startup_markdown([row]).splitlines()[2].startswith("| InvertedPendulum | ")


def test_start_up_runs_python_with_its_bytecode_caches(monkeypatch, tmp_path):
    # a shell's PYTHONDONTWRITEBYTECODE would make every measured start compile its modules
    import subprocess

    from taigym.scripts import benchmark_envs

    seen = []
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(subprocess, "run", lambda command, env, **kw: seen.append(env) or
                        subprocess.CompletedProcess(command, 0, f"first step done at {time.time() + 1.5!r}\n", ""))
    first, whole = benchmark_envs.startup_seconds("TaiGym/InvertedPendulum-v0", str(tmp_path))
    assert "PYTHONDONTWRITEBYTECODE" not in seen[0] and seen[0]["TI_OFFLINE_CACHE_FILE_PATH"] == str(tmp_path)
    assert 1.4 < first < 1.6 and whole < 1.0  # to the first step, as the child reports it; the process (here none)


def test_start_up_takes_turns_and_reports_the_median(monkeypatch):
    # one cold start, then warm starts alternating with Gymnasium's; medians, every start kept
    from taigym.scripts import benchmark_envs

    calls, times = [], iter([5.0, 2.2, 0.3, 1.9, 0.2, 2.0, 0.4])
    monkeypatch.setattr(benchmark_envs, "startup_seconds",
                        lambda env_id, cache, device="cpu": calls.append(env_id) or (lambda t: (t, t + 0.1))(next(times)))
    row = benchmark_envs.measure_startup("Hopper", repeats=3)
    assert calls == ["TaiGym/Hopper-v0"] + ["TaiGym/Hopper-v0", "Hopper-v5"] * 3
    assert row["cold_s"] == 5.0 and row["warm_s"] == 2.0 and row["warm_runs_s"] == [2.2, 1.9, 2.0]
    assert row["gymnasium_s"] == 0.3 and row["gymnasium_runs_s"] == [0.3, 0.2, 0.4]
    assert row["cold_process_s"] == 5.1 and row["warm_process_runs_s"] == pytest.approx([2.3, 2.0, 2.1])
    assert "| Hopper | 5.0 s | 2.00 s (1.90–2.20 s) | 0.30 s |" in benchmark_envs.startup_markdown([row])
    with pytest.raises(SystemExit, match="startup-repeats"):
        benchmark_envs.main(["--tasks", "Hopper", "--startup-repeats", "0"])


def test_env_benchmark_refuses_unknown_tasks(tmp_path):
    from taigym.scripts.benchmark_envs import main

    with pytest.raises(SystemExit, match="unknown task"):
        main(["--tasks", "Antt", "--out", str(tmp_path / "x.json")])


def test_training_benchmark_trains_both_sides_alike(tmp_path):
    # the main job's settings on TaiGym and on Gymnasium's v5 env, timed from the first env step
    pytest.importorskip("stable_baselines3")
    from taigym.scripts.benchmark_training import main

    out = tmp_path / "training.json"
    assert main(["TaiGym/InvertedPendulum-v0", "--repeats", "1", "total_timesteps=2048", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [r["side"] for r in report["runs"]] == ["taigym", "gymnasium"]
    assert report["gymnasium"] == "InvertedPendulum-v5" and report["num_envs"] == 8
    for run in report["runs"]:
        assert run["env_steps"] == 2048 and run["env_steps_per_s"] > 0 and run["last_returns_mean"] > 0
    assert "| 1 |" in out.with_suffix(".md").read_text()


def test_training_benchmark_refuses_a_task_without_counterpart():
    from taigym.scripts.benchmark_training import gymnasium_counterpart

    assert gymnasium_counterpart("TaiGym/Hopper-v0") == "Hopper-v5"
    with pytest.raises(SystemExit, match="no Gymnasium counterpart"):
        gymnasium_counterpart("TaiGym/QuadrupedFlat-v0")


def _copy_of_this_checkout(tree: Path) -> Path:
    """This checkout's sources copied elsewhere (2 MB), a tree a worker must import from."""
    for name in ("taigym", "physics", "envs", "tasks", "configs", "scripts"):
        shutil.copytree(REPO_ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def _slowed_copy_of_this_checkout(tree: Path) -> Path:
    """A copy whose vector env does ~3 ms of extra work in every step: more time and more
    instructions than a small task's whole step."""
    _copy_of_this_checkout(tree)
    vector = tree / "envs" / "vector.py"
    step = "    def step(self, actions):\n"
    assert step in vector.read_text()
    vector.write_text(vector.read_text().replace(step, step + "        sum(range(200_000))\n", 1))
    return tree


@pytest.mark.slow
def test_variants_take_turns_and_report_each_build(tmp_path, device):
    if device != "cpu":
        pytest.skip("the workers step on the CPU")
    from taigym.scripts import benchmark_variants

    out = tmp_path / "variants.json"
    # the same build twice, once imported as a source tree elsewhere: the tree's worker must
    # import from there, not the installed one
    tree = _copy_of_this_checkout(tmp_path / "tree")
    status = benchmark_variants.main(["--model", "inverted_pendulum", "--smooth", "--num-envs", "2", "--rounds", "3",
                                      "--seconds", "0.05", "--variant", "installed=",
                                      "--variant", f"tree=tree:{tree},TAIGYM_TEST_MARK=1", "--out", str(out)])
    assert status == 0
    report = json.loads(out.read_text())
    assert [r["variant"] for r in report["rows"]] == ["installed", "tree"]
    assert report["rows"][0]["median_ratio"] == 1.0
    assert all(_positive(r["median_steps_per_s"]) and _positive(r["median_ratio"]) for r in report["rows"])
    assert Path(report["sources"]["tree"]["module"]) == tree / "physics" / "__init__.py"
    assert report["variants"][1]["env"] == {"TAIGYM_TEST_MARK": "1"}
    assert "| tree | tree " in out.with_suffix(".md").read_text()


def _env_variants(tmp_path, *extra: str) -> dict:
    from taigym.scripts import benchmark_variants

    out = tmp_path / "env_variants.json"
    slowed = _slowed_copy_of_this_checkout(tmp_path / "slowed")
    # the pendulum's own serial kernel (seconds to compile), not the suite's shared one, which
    # valgrind takes minutes to load
    status = benchmark_variants.main(["--task", "InvertedPendulum", "--num-envs", "2", "--rounds", "3", "--seconds",
                                      "0.1", "--variant", "installed=TAIGYM_KERNELS=own",
                                      "--variant", f"slowed=tree:{slowed},TAIGYM_KERNELS=own", *extra,
                                      "--out", str(out)])
    assert status == 0
    return json.loads(out.read_text()) | {"table": out.with_suffix(".md").read_text()}


def test_env_variants_show_a_slowed_tree_slower_and_record_each_source(tmp_path, device):
    if device != "cpu":
        pytest.skip("the workers step on the CPU")
    report = _env_variants(tmp_path)
    installed, slowed = report["rows"]
    # ~3 ms more per step against ~0.1 ms: slower in every round, whatever the machine's load
    assert installed["median_ratio"] == 1.0 and slowed["max_ratio"] < 0.5
    # the pendulum falls within a few dozen random steps: its episodes ended and were reset
    assert installed["episodes_ended"] > 0 and slowed["episodes_ended"] > 0
    here, there = report["sources"]["installed"], report["sources"]["slowed"]
    assert Path(here["module"]).parent.parent == REPO_ROOT and len(here["commit"]) == 40
    assert isinstance(here["dirty"], bool)
    assert Path(there["module"]) == tmp_path / "slowed" / "physics" / "__init__.py"
    assert there["commit"] is None  # a copy, no git checkout
    assert f"slowed: {tmp_path / 'slowed'} (not a git checkout)" in report["table"]
    assert "TaiGym/InvertedPendulum-v0" in report["table"]


@pytest.mark.slow  # valgrind: ~20 s a build to start and count
def test_env_variants_count_a_slowed_trees_extra_instructions(tmp_path, device):
    from taigym.scripts import benchmark_variants

    if device != "cpu":
        pytest.skip("the workers step on the CPU")
    if benchmark_variants.callgrind_missing():
        pytest.skip(benchmark_variants.callgrind_missing())
    installed, slowed = _env_variants(tmp_path, "--instructions", "5")["rows"]
    assert installed["instructions_ratio"] == 1.0 and slowed["instructions_ratio"] > 3
    assert _positive(installed["instructions_per_step"])
    # the slowed copy's extra work is Python's: around the engine (a one-env World's kept machine
    # code, once built, is loaded from a file, so its share is not compared between the two)
    assert _positive(installed["instructions_in_engine_per_step"] + slowed["instructions_in_engine_per_step"])
    assert slowed["instructions_around_engine_per_step"] > 3 * installed["instructions_around_engine_per_step"]


@pytest.mark.parametrize("spec, message", [
    ("noname", "expected NAME=SPEC"),
    ("a=tree:/nonexistent", "holds no taigym package"),
    ("a=JUNK", "neither KEY=VALUE nor tree:PATH"),
])
def test_variant_specs_are_checked(spec, message):
    from taigym.scripts import benchmark_variants

    with pytest.raises(ValueError, match=message):
        benchmark_variants.parse_variant(spec)


def test_random_controls_are_redrawn_on_schedule_and_the_last_is_held():
    """settle(redraw=...) steps each env as an mj_step loop whose control changes every
    ``redraw`` seconds, and hands back the last control for the timed steps to hold."""
    import mujoco
    from taigym.scripts import benchmark

    mjm = mujoco.MjModel.from_xml_path(str(benchmark.resolve_model_path("hopper")))
    states = benchmark.initial_states(mjm, 2, seed=3)
    qpos, qvel, ctrl = benchmark.settle(mjm, states, 0.1, 1, redraw=0.02, seed=3)
    every = round(0.02 / mjm.opt.timestep)
    nstep = round(0.1 / mjm.opt.timestep)
    draws = np.random.default_rng(4).uniform(*benchmark.control_bounds(mjm), size=(2, -(-nstep // every), mjm.nu))
    data = mujoco.MjData(mjm)
    for i in range(2):
        mujoco.mj_resetData(mjm, data)
        data.qpos[:], data.qvel[:] = states[0][i], states[1][i]
        for k in range(nstep):
            data.ctrl[:] = draws[i, k // every]
            mujoco.mj_step(mjm, data)
        np.testing.assert_allclose(qpos[i], data.qpos, rtol=0, atol=1e-12)
        np.testing.assert_allclose(qvel[i], data.qvel, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(ctrl[i], draws[i, (nstep - 1) // every])
    assert not np.array_equal(ctrl, states[2])
    held = benchmark.settle(mjm, states, 0.1, 1)
    assert np.array_equal(held[2], states[2]) and not np.allclose(held[0], qpos)


def test_callgrind_profiles_split_by_object(tmp_path):
    from taigym.scripts import benchmark_variants

    # callgrind's format: names in full once, then by id; a call's inclusive cost follows its
    # calls= line and belongs to the caller's totals, not its self cost
    profile = tmp_path / "profile.callgrind"
    profile.write_text("\n".join([
        "version: 1", "events: Ir",
        "ob=(1) /usr/bin/python3.11", "fl=(1) ceval.c", "fn=(1) _PyEval_EvalFrameDefault",
        "10 500", "+2 25",
        "cob=(2) ???", "cfn=(2) 0x000000000abc0000", "calls=3 0", "12 7000",
        "ob=(2)", "fl=(2) ???", "fn=(2)",
        "0 7000",
        "ob=(3) /site-packages/mujoco/libmujoco.so.3.3.0", "fl=(3) engine.c", "fn=(3) mj_step",
        "* 300",
        "ob=(1)", "fn=(1)", "-1 5",
        "totals: 7830", ""]))
    by_object = benchmark_variants.callgrind_by_object(profile)
    assert by_object == {"/usr/bin/python3.11": 530, "???": 7000, "/site-packages/mujoco/libmujoco.so.3.3.0": 300}
    assert sum(by_object.values()) == benchmark_variants._callgrind_total(profile)
    engine = [obj for obj in by_object if benchmark_variants.in_the_engine(obj)]
    assert sorted(engine) == ["/site-packages/mujoco/libmujoco.so.3.3.0", "???"]
