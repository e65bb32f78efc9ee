"""One answer to bad input in every ``taigym`` subcommand: status 2 and one line on stderr
that names the file (and line); a bug keeps its traceback."""

import subprocess
import sys

import pytest
from taigym.scripts import cli
from taigym.tasks.loader import config_dir

pytest.importorskip("stable_baselines3")

LATIN1_COMMENT = b"# caf\xe9\n"


def _with_comment(kind: str, name: str, path):
    """The shipped ``kind/name`` with a Latin-1 comment as its line 2, written to ``path``."""
    first, rest = (config_dir() / kind / name).read_bytes().split(b"\n", 1)
    path.write_bytes(first + b"\n" + LATIN1_COMMENT + rest)
    return path


@pytest.fixture
def bad_task(tmp_path):
    return _with_comment("tasks", "inverted_pendulum.yaml", tmp_path / "my_pendulum.yaml")


def _refusal(capsys, *argv) -> str:
    """The one stderr line of ``taigym ARGV``, which must exit 2."""
    status = cli.main([str(a) for a in argv])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[Taichi]")]
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("error: ") and "Traceback" not in err[0]
    return err[0]


def test_taigym_train_of_a_task_file_that_is_not_utf8_exits_2_with_one_line(tmp_path, bad_task):
    # as the user runs it: the process's own status and stderr
    cmd = [sys.executable, "-m", "taigym.scripts.cli", "train", str(bad_task), "--results", str(tmp_path / "r")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("[Taichi]")]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert "my_pendulum.yaml, line 2: byte 0xe9 at column 6 is not UTF-8" in lines[0]
    assert not any((tmp_path / "r").glob("*/config.yaml"))


@pytest.mark.parametrize("command", ["train-ppo", "play"])
def test_every_command_taking_a_task_file_refuses_it_in_one_line(tmp_path, capsys, bad_task, command):
    line = _refusal(capsys, command, bad_task, *(["--out", tmp_path / "v.mp4"] if command == "play" else
                                                 ["--results", tmp_path / "r"]))
    assert "my_pendulum.yaml, line 2: byte 0xe9" in line


@pytest.mark.parametrize("command", ["train", "train-ppo"])
def test_a_training_config_that_is_not_utf8_is_refused_in_one_line(tmp_path, capsys, command):
    path = _with_comment("train", "inverted_pendulum_ppo.yaml", tmp_path / "my_ppo.yaml")
    line = _refusal(capsys, command, "TaiGym/InvertedPendulum-v0", "--config", path, "--results", tmp_path / "r")
    assert "my_ppo.yaml, line 2: byte 0xe9 at column 6 is not UTF-8" in line


def test_train_ppo_refuses_an_unknown_config_key_in_one_line(tmp_path, capsys):
    path = tmp_path / "my_ppo.yaml"
    path.write_text("num_env: 4\n")
    line = _refusal(capsys, "train-ppo", "--config", path, "--results", tmp_path / "r")
    assert "my_ppo.yaml: unknown key 'num_env'; did you mean 'num_envs'?" in line


def test_leaderboard_refuses_a_protocol_that_is_not_utf8_in_one_line(tmp_path, capsys):
    path = _with_comment("leaderboard", "v1.yaml", tmp_path / "my_protocol.yaml")
    line = _refusal(capsys, "leaderboard", "--protocol", path, "--out", tmp_path / "lb")
    assert "my_protocol.yaml, line 2: byte 0xe9" in line
    assert "missing.yaml: file not found" in _refusal(capsys, "leaderboard", "--protocol", tmp_path / "missing.yaml")


def test_cross_eval_refuses_a_run_config_that_is_not_utf8_in_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _with_comment("train", "inverted_pendulum_ppo.yaml", run / "config.yaml")
    (run / "model.zip").write_bytes(b"not a zip")
    assert "config.yaml, line 2: byte 0xe9" in _refusal(capsys, "cross-eval", run)


# (argv, what the line must name); before, a script's SystemExit("...") exited with status 1
NAMES = [
    (["train", "TaiGym/InvertedPendulm-v0"], "'TaiGym/InvertedPendulm-v0'"),
    (["train", "TaiGym/InvertedPendulum-v0", "--algo", "PPOO"], "did you mean 'PPO'"),
    (["train", "TaiGym/InvertedPendulum-v0", "n_steps=[1"], "command-line value '[1' is not YAML"),
    (["benchmark", "--models", "no_such_robot.xml"], "no_such_robot.xml"),
    (["fidelity", "no_such_robot.xml"], "no_such_robot.xml"),
    (["play", "--algo", "NoSuchAlgo", "--policy", "no_such_policy.zip"], "'NoSuchAlgo'"),
]


@pytest.mark.parametrize(("argv", "words"), NAMES, ids=[" ".join(argv) for argv, _ in NAMES])
def test_a_refused_task_algorithm_model_or_value_exits_2_with_one_line(tmp_path, capsys, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    assert words in _refusal(capsys, *argv)


def test_play_refuses_a_policy_file_it_cannot_load_in_one_line(tmp_path, capsys):
    from stable_baselines3 import PPO
    from taigym.scripts.play import load_sb3_model

    garbage = tmp_path / "policy.zip"
    garbage.write_bytes(b"not a zip")
    for path, words in ((garbage, "policy.zip: stable-baselines3's PPO cannot load it (ValueError: "),
                        (tmp_path / "missing.zip", "missing.zip: no such policy file")):
        with pytest.raises(SystemExit) as caught:
            load_sb3_model(PPO, path)
        assert words in caught.value.code and "\n" not in caught.value.code


def test_play_refuses_a_policy_of_other_shapes_before_recording(tmp_path):
    from types import SimpleNamespace

    import gymnasium as gym
    from taigym.scripts.play import Args, check_spaces

    box = gym.spaces.Box(-1.0, 1.0, shape=(3,))
    policy = SimpleNamespace(observation_space=box, action_space=gym.spaces.Box(-1.0, 1.0, shape=(1,)))
    env = SimpleNamespace(single_observation_space=gym.spaces.Box(-1.0, 1.0, shape=(4,)),
                          single_action_space=gym.spaces.Box(-1.0, 1.0, shape=(1,)))
    args = Args(task="TaiGym/InvertedPendulum-v0", policy=tmp_path / "pendulum.zip")
    with pytest.raises(SystemExit, match=r"pendulum\.zip: the policy maps observations of shape \(3,\) .* "
                                         r"TaiGym/InvertedPendulum-v0 has observations \(4,\)"):
        check_spaces(policy, env, args)
    check_spaces(policy, SimpleNamespace(single_observation_space=box, single_action_space=policy.action_space), args)


def test_a_bug_keeps_its_traceback_and_a_status_passes_through(monkeypatch):
    def broken(argv):
        raise KeyError("internal")

    monkeypatch.setattr(cli, "load_command", lambda name: broken)
    with pytest.raises(KeyError):
        cli.main(["train"])
    monkeypatch.setattr(cli, "load_command", lambda name: lambda argv: sys.exit(3))
    with pytest.raises(SystemExit) as caught:
        cli.main(["train"])
    assert caught.value.code == 3


@pytest.mark.parametrize("argv", [["train", "--no-such-option"], ["benchmark", "--num-envs", "many"],
                                  ["fidelity"], ["play", "TaiGym/Hopper-v0", "--steps", "x"],
                                  ["gpu-probe", "out", "--device", "tpu"]])
def test_a_refused_option_is_one_line_with_status_2(capsys, argv):
    with pytest.raises(SystemExit) as caught:
        cli.main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: taigym ") or err.startswith("error: "), err
    assert "--help" in err
