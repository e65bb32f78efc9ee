"""The engine's instructions per env step may not grow by more than 3% as a ratio to MuJoCo's.

callgrind counts the instructions of a fixed number of env steps of the task's native
vector env (fresh random actions, the task's own kernel), and of MuJoCo's ``mj_step`` on the
task's Gymnasium counterpart for the same number of env steps and envs, each in a worker of
``taigym benchmark-variants``. A count is the same from run to run on a shared machine, where
times swing by 15%; it differs from one CPU to the next with the code the JIT generates, so the
guard holds the ratio of the two counts, not a count.

The recorded ratios (instruction_ratios.json) are updated by hand, with the reason in the
commit message: after a change worth its instructions, or on a machine whose counts differ.
Measure with the command the file names.
"""

import json
from pathlib import Path

import pytest
from taigym.scripts import benchmark_variants

RECORD = Path(__file__).with_name("instruction_ratios.json")
GROWTH = 1.03  # the growth over the recorded ratio that fails the guard


def _recorded() -> dict:
    return json.loads(RECORD.read_text())


def measure_ratio(task: str, num_envs: int, calls: int, out: Path) -> tuple[float, list[dict]]:
    """Our instructions per env step over MuJoCo's, and the report's rows."""
    benchmark_variants.main(["--task", task, "--num-envs", str(num_envs), "--rounds", "1", "--seconds", "0.2",
                             "--instructions", str(calls), "--variant", "taigym=", "--variant", "mujoco=mujoco",
                             "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    return rows[0]["instructions_per_step"] / rows[1]["instructions_per_step"], rows


@pytest.mark.slow  # three processes under valgrind, ~40 s a task
@pytest.mark.parametrize("task", sorted(_recorded()["tasks"]))
def test_instructions_per_env_step_hold_against_mujocos(task, tmp_path, monkeypatch):
    if benchmark_variants.callgrind_missing():
        pytest.skip(benchmark_variants.callgrind_missing())
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)  # the task's own kernel, as a user's env has it
    record = _recorded()
    ratio, rows = measure_ratio(task, record["num_envs"], record["calls"], tmp_path / "report.json")
    recorded = record["tasks"][task]["ratio"]
    assert ratio <= recorded * GROWTH, (
        f"{task}: {rows[0]['instructions_per_step']:,.0f} instructions per env step, {ratio:.4f}x MuJoCo's "
        f"{rows[1]['instructions_per_step']:,.0f}: over {RECORD.name}'s {recorded:.4f} by more than "
        f"{GROWTH - 1:.0%}")


def test_the_record_names_how_it_was_measured():
    record = _recorded()
    assert {"num_envs", "calls", "cpu", "date", "command", "tasks"} <= set(record)
    for task, entry in record["tasks"].items():
        assert task in benchmark_variants._this_checkouts_script("benchmark_envs").GYMNASIUM
        assert entry["ratio"] == pytest.approx(entry["taigym"] / entry["mujoco"], rel=1e-3)


def test_the_mujoco_reference_steps_as_gymnasiums_env():
    import gymnasium as gym
    import numpy as np

    args = benchmark_variants.parse_args(["--worker", "--mujoco", "--task", "Hopper", "--num-envs", "2"])
    reference = benchmark_variants.MujocoSteps(args)
    for _ in range(3):
        reference.step()
    env = gym.make("Hopper-v5")
    env.reset(seed=args.seed + 1)
    for k in range(3):
        env.step(reference.actions[k][1])
    np.testing.assert_array_equal(env.unwrapped.data.qpos, reference.datas[1].qpos)
    np.testing.assert_array_equal(env.unwrapped.data.qvel, reference.datas[1].qvel)
