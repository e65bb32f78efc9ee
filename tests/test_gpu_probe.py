"""The GPU probe (scripts/gpu_probe.py) rehearsed on the CPU with tiny sizes: every item runs
in a process of its own and appends its record, so that a short time on a GPU machine goes
to measurement, not to the probe's own bugs."""

import importlib.util
import json
import os

import pytest
from taigym.physics.runtime.backend import ti
from taigym.scripts import gpu_probe


@pytest.mark.slow
def test_the_probe_rehearses_every_item_on_the_cpu(tmp_path, device, monkeypatch):
    if device != "cpu":
        pytest.skip("the rehearsal is the CPU's")
    if ti.__name__ != "taichi":
        # the probe runs its quadrants variants in processes of their own, rehearsed under the
        # default Taichi where quadrants is installed beside it (.ci/run's first pass); under
        # quadrants every item would compile cold again, 55-82 s a kernel
        pytest.skip("rehearsed under the default Taichi, whose run covers the probe's quadrants variants")
    # the probe's processes compile each model's own kernel, as on a GPU machine, not the
    # suite's shared one with every part (twice the compile time a variant)
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)
    out = tmp_path / "out"
    # a budget for every item to run, not for speed: on quadrants, which compiles every stage
    # inlined, the quick items' cold compiles took 55-82 s each and the default 480 s ran out
    assert gpu_probe.main([str(out), "--quick", "--device", "cpu", "--work", str(tmp_path / "work"),
                           "--budget", "1500"]) == 0
    records = [json.loads(line) for line in (out / "probe.jsonl").read_text().splitlines()]
    errors = [r for r in records if "error" in r]
    assert not errors, errors
    items = {r["item"] for r in records}
    assert {"device", "compile", "physics", "rollout", "trajectory", "trajectory_difference", "env_steps",
            "phases"} <= items
    physics = [r for r in records if r["item"] == "physics" and "variant" not in r]
    # both models, both precisions, every quick batch size, each finite and timed
    assert len(physics) == 2 * 2 * len(gpu_probe.QUICK["num_envs"])
    assert all(r["finite"] and r["steps_per_s"] > 0 for r in physics)
    assert {r["variant"] for r in records if r["item"] == "physics" and "variant" in r} == {
        "staged", "staged_group", "staged_env_major", "quadrants_staged",
        "quadrants", "cpu_2_threads"}  # the options that exist on the CPU too, and two CPU threads
    measured = {r["variant"] for r in records if r["item"] == "physics" and "steps_per_s" in r and "variant" in r}
    assert {"staged_env_major", "quadrants_staged"} <= measured or importlib.util.find_spec("quadrants") is None
    group = [r for r in records if r["item"] == "physics" and r.get("variant") == "staged_group"]
    assert len(group) == len(gpu_probe.QUICK["num_envs"]) and all(r["finite"] for r in group)
    staged = [r for r in records if r["item"] == "physics" and r.get("variant") == "staged"]
    # beside the fused at every size, and beside the env-major layout (layouts, one quick size)
    assert len(staged) == 2 * len(gpu_probe.QUICK["num_envs"]) + 1
    differences = [r for r in records if r["item"] == "trajectory_difference"]
    assert [r["runs"] for r in differences] == [["cpu", "cpu-staged-group"], ["cpu", "cpu-interleaved"],
                                                ["cpu", "cpu-staged"]]
    for difference in differences:
        assert max(v for k, v in difference.items() if k.startswith("max_abs")) < 1e-9
    phases = {r["model"]: r for r in records if r["item"] == "phases"}
    assert set(phases) == set(gpu_probe.MODELS)
    assert all(ms > 0 for r in phases.values() for ms in r["ms_per_step"].values())
    timed = {name.split(".")[0] for loop in phases["ant"]["ms_per_step"] for name in loop.split("+")}
    assert {"body_frames", "cinert", "pair_contacts", "contact_table", "inertia_and_forces", "mass_rows",
            "constraint_rows", "contact_rows", "soft_rows", "constraint_solve", "constraint_forces"} <= timed
    assert [r.get("skipped") for r in records if r["item"] == "ncu"] == ["no GPU"]  # Nsight Compute: CUDA's
    summary = (out / "summary.md").read_text()
    assert "| ant | float32 |" in summary and "MuJoCo rollout" in summary


def test_a_measurement_that_fails_is_recorded_and_the_probe_goes_on(tmp_path):
    probe = gpu_probe.Probe(tmp_path, tmp_path, "cpu", budget=60, quick=True)
    assert not probe.child("physics", {"model": "no-such-model", "precision": "float32", "num_envs": [2]}, limit=60)
    (record,) = [json.loads(line) for line in (tmp_path / "probe.jsonl").read_text().splitlines()]
    assert record["item"] == "physics" and "no-such-model" in record["error"]


def test_ptxas_report_is_parsed():
    text = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'step_kernel_c80_0' for 'sm_90'
ptxas info    : Function properties for step_kernel_c80_0
    1024 bytes stack frame, 96 bytes spill stores, 104 bytes spill loads
ptxas info    : Used 128 registers, used 0 barriers, 912 bytes cmem[0]
"""
    assert gpu_probe.parse_ptxas(text) == [{"name": "step_kernel_c80_0", "stack_frame": 1024, "spill_stores": 96,
                                            "spill_loads": 104, "registers": 128}]


def test_a_summary_is_made_from_records_alone(tmp_path):
    records = [{"item": "device", "gpu": {"name": "NVIDIA H200"}, "taichi": "taichi 1.7.4"},
               {"item": "physics", "model": "ant", "precision": "float32", "num_envs": 1024, "steps_per_s": 2e4},
               {"item": "physics", "model": "ant", "precision": "float32", "num_envs": 65536, "error": "WorldError: x"},
               {"item": "rollout", "model": "ant", "num_envs": 65536, "steps_per_s": 2e5, "threads": 16}]
    (tmp_path / "probe.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert gpu_probe.main([str(tmp_path), "--summarize"]) == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "# GPU probe: NVIDIA H200" in summary
    assert "| ant | float32 | 1024 | 20,000 | 0.10x |" in summary
    assert "WorldError: x" in summary
    assert os.path.exists(tmp_path / "summary.md")


def test_only_runs_the_named_items_in_the_probes_order(tmp_path, monkeypatch):
    ran = []
    probe = gpu_probe.Probe(tmp_path, tmp_path, "cpu", budget=60, quick=True)
    monkeypatch.setattr(probe, "items", lambda: [(name, lambda name=name: ran.append(name)) for name in gpu_probe.ITEMS])
    probe.run(["trajectory", "schedules"])
    assert ran == ["schedules", "trajectory"]
    assert [name for name, _ in gpu_probe.Probe(tmp_path, tmp_path, "cpu", 60, True).items()] == list(gpu_probe.ITEMS)
    with pytest.raises(SystemExit):
        gpu_probe.parse_args([str(tmp_path), "--only", "no-such-item"])


def test_nsight_computes_raw_page_is_parsed():
    text = """==PROF== Disconnected from process 1161
"ID","Kernel Name","gpu__time_duration.sum","sm__warps_active.avg.pct_of_peak_sustained_active","dram__bytes.sum","sm__cycles_elapsed.avg"
"","","ms","%","Gbyte","cycle"
"0","staged_kernel_c94_0_kernel_68_range_for","1,528.32","3.03","n/a","12"
"""
    (kernel,) = gpu_probe.parse_ncu_raw(text)
    assert kernel["Kernel Name"] == "staged_kernel_c94_0_kernel_68_range_for"
    assert kernel["gpu__time_duration.sum"] == 1528.32 and kernel["units"]["gpu__time_duration.sum"] == "ms"
    assert kernel["sm__warps_active.avg.pct_of_peak_sustained_active"] == 3.03
    assert kernel["dram__bytes.sum"] == "n/a"  # kept as ncu wrote it
    assert "sm__cycles_elapsed.avg" not in kernel  # not among NCU_KEEP's counters
    assert gpu_probe.parse_ncu_raw("==ERROR== no kernels were profiled") == []
