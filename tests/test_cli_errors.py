"""A bad config through the command line: one line, no traceback, no results folder left."""

import subprocess
import sys

import pytest
from conftest import user_environment

pytest.importorskip("stable_baselines3")

TINY = ["total_timesteps=256", "n_steps=32", "batch_size=32", "num_envs=2", "video_steps=0", "eval_episodes=1"]


def _train(results, *extra):
    cmd = [sys.executable, "-m", "taigym.scripts.cli", "train", "TaiGym/InvertedPendulum-v0", "--algo", "PPO",
           "--results", str(results), "--quiet", *TINY, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=user_environment())


def test_a_bad_task_override_is_one_line_and_leaves_no_run_folder(tmp_path):
    results = tmp_path / "results"
    bad = _train(results, 'task_overrides=["simulation.solver=Newtn"]')
    assert bad.returncode != 0
    lines = [line for line in bad.stderr.splitlines() if not line.startswith("[Taichi]")]
    assert len(lines) == 1 and "Traceback" not in bad.stderr
    assert "simulation.solver" in lines[0] and "'Newtn'" in lines[0] and "did you mean 'Newton'" in lines[0]
    assert not any(results.glob("*/config.yaml"))
    fixed = _train(results, 'task_overrides=["simulation.solver=Newton"]')  # no --overwrite needed
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert (results / "InvertedPendulum-v0-PPO-0" / "metrics.json").exists()


def test_progress_log_ends_on_one_full_line():
    # PPO's last rollout overshoots the budget: only the final update prints 100%
    import io

    from taigym.scripts.results import ProgressBar

    out = io.StringIO()
    bar = ProgressBar(1000, label="PPO X", stream=out)
    for steps in range(0, 1100, 64):
        bar.update(steps, 1.0)
    bar.update(1088, 1.0, final=True)
    lines = out.getvalue().splitlines()
    assert [line for line in lines if "100%" in line] == [lines[-1]]
    assert "1088/1000" in lines[-1] and len(lines) == 10


def _taigym(*args):
    cmd = [sys.executable, "-m", "taigym.scripts.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=user_environment())


def _one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("[Taichi]")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def bad_task_file(tmp_path):
    from taigym.tasks.loader import config_dir

    text = (config_dir() / "tasks" / "inverted_pendulum.yaml").read_text()
    assert "frame_skip: 2\n" in text
    path = tmp_path / "my_pendulum.yaml"
    path.write_text(text.replace("frame_skip: 2\n", "frame_skip: 2\n  solver: Newtn\n"))
    return path


def test_every_command_refuses_a_bad_task_file_in_one_line(tmp_path, bad_task_file):
    results = tmp_path / "results"
    ppo = _one_error_line(_taigym("train-ppo", bad_task_file, "--total-timesteps", 256, "--results", results))
    assert "my_pendulum.yaml, line" in ppo and "'Newtn'" in ppo and "did you mean 'Newton'" in ppo
    assert not any(results.glob("*"))  # the refused run left no folder
    play = _one_error_line(_taigym("play", bad_task_file, "--out", tmp_path / "video.mp4"))
    assert "simulation.solver" in play
    assert not (tmp_path / "video.mp4").exists()


def test_leaderboard_refuses_a_bad_protocol_in_one_line(tmp_path):
    from taigym.tasks.loader import config_dir

    text = (config_dir() / "leaderboard" / "v1.yaml").read_text()
    assert "eval_episodes:" in text
    path = tmp_path / "my_protocol.yaml"
    path.write_text(text.replace("eval_episodes:", "eval_episodez:"))
    line = _one_error_line(_taigym("leaderboard", "--protocol", path, "--out", tmp_path / "lb"))
    assert "my_protocol.yaml, line" in line and "'eval_episodez'" in line and "did you mean 'eval_episodes'" in line
