"""scripts/train.py, scripts/train_ppo.py and scripts/leaderboard.py end to end on tiny budgets.

A few thousand env steps teach a policy little, so returns are not asserted here; what is
checked is the results folder, resuming, config errors and the leaderboard's bookkeeping.
Whether the README's budget solves InvertedPendulum is a measurement (see the README's
Training section), not a unit test: it takes minutes.
"""

import csv
import importlib.util
import json
import sys

import numpy as np
import pytest
import yaml

pytest.importorskip("stable_baselines3")
pytest.importorskip("matplotlib")

from taigym.scripts import leaderboard, train, train_ppo

TASK = "TaiGym/InvertedPendulum-v0"
# 4 envs x 256 steps per PPO update, one epoch: a couple of seconds per 2k steps
TINY = ["num_envs=4", "n_steps=256", "batch_size=256", "n_epochs=1", "eval_episodes=2", "log_every=256"]


@pytest.fixture(autouse=True)
def _cpu_only(device):
    if device != "cpu":
        pytest.skip("training runs on the CPU; Taichi allows one backend per process")


def _rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("train")
    status = train.main([TASK, "--algo", "ppo", "--seed", "3", "--results", str(out), "--quiet", *TINY,
                         "total_timesteps=2048", "video_steps=4", "policy_kwargs.net_arch=[32,32]"])
    assert status == 0
    return out / "InvertedPendulum-v0-PPO-3"


def test_train_writes_the_results_folder(ppo_run):
    config = yaml.safe_load((ppo_run / "config.yaml").read_text())
    assert config["task"] == TASK and config["algo"] == "PPO" and config["seed"] == 3
    assert config["hyperparameters"]["n_steps"] == 256  # override of the task's YAML
    assert config["policy_kwargs"]["net_arch"] == [32, 32]
    assert config["num_envs"] == 4
    for name in ("model.zip", "learning_curve.png", "progress.csv", "eval_returns.csv", "checkpoints/state.json"):
        assert (ppo_run / name).stat().st_size > 0, name
    assert list((ppo_run / "tensorboard").glob("events.out.tfevents.*"))

    metrics = json.loads((ppo_run / "metrics.json").read_text())
    assert metrics["env_steps"] == 2048 and metrics["num_envs"] == 4
    assert metrics["wall_time_s"] > 0 and metrics["env_steps_per_s"] > 0
    assert len(metrics["eval"]["returns"]) == 2 == len(_rows(ppo_run / "eval_returns.csv"))
    assert metrics["solved_return"] == 950 and metrics["solved"] is False  # 2k steps do not balance a pole
    assert metrics["simulation"]["frame_skip"] == 2 and metrics["simulation"]["precision"] == "float64"
    # the video is optional (it needs the renderer); when made it is next to the rest
    assert metrics["video"] is None or (ppo_run / metrics["video"]).stat().st_size > 0

    rows = _rows(ppo_run / "progress.csv")
    steps = [int(r["env_steps"]) for r in rows]
    assert steps == sorted(steps) and steps[-1] == 2048
    assert all(float(r["return_mean"]) > 0 for r in rows)  # InvertedPendulum pays +1 per step


def test_resume_continues_from_the_checkpoint(tmp_path, capsys):
    args = [TASK, "--results", str(tmp_path), *TINY, "video_steps=0"]
    assert train.main([*args, "--quiet", "total_timesteps=1024"]) == 0
    run_dir = tmp_path / "InvertedPendulum-v0-PPO-0"
    # as if the process had died after its last checkpoint, before the final model and metrics
    (run_dir / "metrics.json").unlink()
    (run_dir / "model.zip").unlink()
    first_rows = _rows(run_dir / "progress.csv")
    first_wall = json.loads((run_dir / "checkpoints" / "state.json").read_text())["wall_time_s"]

    with pytest.raises(SystemExit, match="already holds a run"):
        train.main([*args, "--quiet", "total_timesteps=2048"])
    assert train.main([*args, "--resume", "total_timesteps=2048"]) == 0
    assert "resuming at 1024 env steps" in capsys.readouterr().out
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["env_steps"] == 2048
    assert metrics["wall_time_s"] > first_wall  # the first session's time is carried over
    rows = _rows(run_dir / "progress.csv")
    assert rows[: len(first_rows)] == first_rows and int(rows[-1]["env_steps"]) == 2048
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["total_timesteps"] == 2048

    with pytest.raises(SystemExit, match=r"n_steps"):  # hyperparameters are the run's own
        train.main([*args, "--resume", "n_steps=128"])
    assert train.main([*args, "--resume", "--quiet", "total_timesteps=2048"]) == 0  # finished: nothing to do


def test_bad_hyperparameter_keys_are_named(tmp_path):
    with pytest.raises(SystemExit, match=r"unknown key 'n_stepz'.*did you mean 'n_steps'"):
        train.main([TASK, "--results", str(tmp_path), "n_stepz=64"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: PPO\ntotal_timesteps: 1000\nhyperparameters:\n  learning_rat: 0.001\n")
    with pytest.raises(SystemExit, match=r"bad\.yaml, line 4: key 'hyperparameters\.learning_rat': unknown key 'learning_rat'"):
        train.main([TASK, "--config", str(bad), "--results", str(tmp_path)])
    bad.write_text("algo: PPO\ntotal_timestep: 1000\n")
    with pytest.raises(SystemExit, match=r"bad\.yaml, line 2: key 'total_timestep': unknown key 'total_timestep'"):
        train.main([TASK, "--config", str(bad), "--results", str(tmp_path)])
    bad.write_text("algo: PPO\npolicy_kwargs: {net_archh: [8]}\n")
    with pytest.raises(SystemExit, match=r"bad\.yaml, line 2: key 'policy_kwargs\.net_archh': unknown key 'net_archh'"):
        train.main([TASK, "--config", str(bad), "--results", str(tmp_path)])
    with pytest.raises(SystemExit, match=r"unknown algorithm 'PPOO'.*did you mean 'PPO'"):
        train.main([TASK, "--algo", "PPOO", "--results", str(tmp_path)])
    assert not list(tmp_path.glob("InvertedPendulum*"))  # refused before any run folder


def test_overrides_find_their_section():
    cfg, source = train.load_config(TASK, "PPO", overrides=["learning_rate=3e-4", "num_envs=2", "log_std_init=-1",
                                                            "policy_kwargs.net_arch=[16]"])
    assert source.endswith("inverted_pendulum_ppo.yaml")
    assert cfg.hyperparameters["learning_rate"] == 3e-4  # a number, though YAML 1.1 reads "3e-4" as text
    assert cfg.num_envs == 2 and cfg.policy_kwargs["log_std_init"] == -1 and cfg.policy_kwargs["net_arch"] == [16]


def test_every_shipped_train_config_is_valid():
    for path in sorted(train.TRAIN_CONFIGS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        cfg = train.validate({**data, "task": TASK}, str(path))
        assert cfg.algo == data["algo"]


def test_train_ppo_tiny_run(tmp_path):
    # Reacher's 50-step episodes end by truncation inside the run: the bootstrapped path runs
    status = train_ppo.main(["TaiGym/Reacher-v0", "--total-timesteps", "1024", "--num-envs", "8", "--num-steps",
                             "64", "--update-epochs", "1", "--eval-episodes", "2", "--clip-vloss", "true",
                             "--norm-reward", "true", "--no-video", "--results", str(tmp_path), "--quiet"])
    assert status == 0
    run_dir = tmp_path / "Reacher-v0-NativePPO-0"
    for name in ("config.yaml", "model.pt", "learning_curve.png", "progress.csv", "eval_returns.csv",
                 "checkpoints/checkpoint.pt"):
        assert (run_dir / name).stat().st_size > 0, name
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["algo"] == "NativePPO" and metrics["env_steps"] == 1024
    assert metrics["eval"]["lengths"] == [50, 50]
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["clip_vloss"] is True
    # 8 envs x 128 steps: two whole 50-step episodes per env
    assert int(_rows(run_dir / "progress.csv")[-1]["episodes"]) == 16
    with pytest.raises(SystemExit, match="learning_rate"):  # a resumed run keeps its hyperparameters
        train_ppo.main(["TaiGym/Reacher-v0", "--resume", "--total-timesteps", "2048", "--num-envs", "8",
                        "--num-steps", "64", "--learning-rate", "0.01", "--results", str(tmp_path), "--quiet"])


def test_train_ppo_refuses_unknown_config_keys(tmp_path):
    cfg = tmp_path / "ppo.yaml"
    cfg.write_text("num_env: 4\n")
    from taigym.scripts.config_files import ConfigFileError

    with pytest.raises(ConfigFileError, match=r"ppo\.yaml: unknown key 'num_env'.*did you mean 'num_envs'"):
        train_ppo.main(["--config", str(cfg), "--results", str(tmp_path)])
    with pytest.raises(ValueError, match=r"unknown key 'num_env'.*did you mean 'num_envs'"):
        train_ppo.args_from_dict({"num_env": 4})


TINY_PROTOCOL = """
version: 1
name: tiny
eval_episodes: 2
seeds: [0, 1]
tasks:
  - {id: TaiGym/InvertedPendulum-v0, budget: 512, solved_return: 950}
  - {id: TaiGym/Reacher-v0, budget: 512}
algorithms:
  - name: PPO
    trainer: sb3
    algo: PPO
    settings: {num_envs: 4, n_steps: 128, batch_size: 128, n_epochs: 1, log_every: 128}
"""


def test_leaderboard_resumes_and_renders(tmp_path):
    protocol = tmp_path / "tiny.yaml"
    protocol.write_text(TINY_PROTOCOL)
    out = tmp_path / "board"
    cells = leaderboard.make_cells(leaderboard.load_protocol(protocol))
    assert len(cells) == 4 and len({c["digest"] for c in cells}) == 4
    first = cells[0]["key"]
    assert first == "InvertedPendulum-v0-PPO-0"

    # one cell finished before an interruption
    assert leaderboard.main(["--protocol", str(protocol), "--out", str(out), "--only", first]) == 0
    record = (out / "cells" / first / "cell.json").read_text()
    model_time = (out / "cells" / first / "run" / "model.zip").stat().st_mtime_ns

    assert leaderboard.main(["--protocol", str(protocol), "--out", str(out), "--workers", "1"]) == 0
    assert (out / "cells" / first / "cell.json").read_text() == record  # not rerun
    assert (out / "cells" / first / "run" / "model.zip").stat().st_mtime_ns == model_time
    records = [json.loads((out / "cells" / c["key"] / "cell.json").read_text()) for c in cells]
    for r in records:
        assert r["status"] == "done" and r["env_steps"] == 512 and len(r["eval_returns"]) == 2
        assert r["env_steps_per_s"] > 0 and r["progress"]
        comp = r["comparability"]
        assert comp["solver"] == "Newton (pyramidal cones)" and comp["solver_iterations"] > 0 and comp["frame_skip"] == 2
        assert comp["contacts_per_env"] >= 0 and comp["precision"] == "float64" and comp["num_envs"] == 4
        assert r["config"]["total_timesteps"] == 512 and r["config"]["video_steps"] == 0

    report = json.loads((out / "leaderboard.json").read_text())
    assert report["finished"] == 4 and len(report["rows"]) == 2
    md = (out / "leaderboard.md").read_text()
    assert "| TaiGym/InvertedPendulum-v0 | PPO |" in md and "| TaiGym/Reacher-v0 | PPO |" in md
    assert "±" in md and "2/2" in md and "contacts_per_env" in md
    page = (out / "leaderboard.html").read_text()
    assert page.count("<table>") == 2 and "curves_Reacher-v0.png" in page
    for name in ("curves_InvertedPendulum-v0.png", "curves_Reacher-v0.png"):
        assert (out / name).stat().st_size > 0

    # a changed setting makes new digests: those cells are no longer counted as done
    protocol.write_text(TINY_PROTOCOL.replace("n_epochs: 1", "n_epochs: 2"))
    changed = leaderboard.make_cells(leaderboard.load_protocol(protocol))
    assert not any(leaderboard.is_done(c, out / "cells") for c in changed)


def test_leaderboard_protocol_errors_name_the_key(tmp_path):
    protocol = tmp_path / "bad.yaml"
    protocol.write_text(TINY_PROTOCOL.replace("eval_episodes: 2", "eval_episode: 2"))
    from taigym.scripts.config_files import ConfigFileError

    with pytest.raises(ConfigFileError, match=r"bad\.yaml, line \d+: key 'eval_episode': unknown key 'eval_episode'; "
                                              r"did you mean 'eval_episodes'\?"):
        leaderboard.load_protocol(protocol)
    protocol.write_text(TINY_PROTOCOL.replace("eval_episodes: 2", "eval_episodes: .nan"))
    with pytest.raises(ConfigFileError, match=r"bad\.yaml, line \d+: key 'eval_episodes': value is NaN"):
        leaderboard.load_protocol(protocol)
    protocol.write_text(TINY_PROTOCOL.replace("log_every: 128", "total_timesteps: 5"))
    with pytest.raises(SystemExit, match=r"fixed by the protocol"):
        leaderboard.make_cells(leaderboard.load_protocol(protocol))


def test_leaderboard_ray_needs_ray(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as where it is not installed
    with pytest.raises(SystemExit, match="needs Ray"):
        leaderboard.run_cells([{"key": "x"}], tmp_path, workers=1, ray_address="auto", log=print)


class FakeRef:
    def __init__(self, value):
        self.value = value


class FakeRay:
    """The part of Ray's API the leaderboard uses, running each task at once in this process."""

    def __init__(self):
        self.init_kwargs, self.calls = None, []

    def init(self, **kwargs):
        self.init_kwargs = kwargs

    def remote(self, num_cpus):
        def wrap(fn):
            outer = self

            class Remote:
                @staticmethod
                def remote(*args):
                    outer.calls.append((num_cpus, args))
                    return FakeRef(fn(*args))

            return Remote

        return wrap

    def wait(self, refs, num_returns):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return ref.value


def test_leaderboard_sends_each_cell_to_ray_and_keeps_the_records(tmp_path, monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)

    def run_cell(cell, cell_dir, workers):
        return {"key": cell["key"], "eval_return_mean": 1.0, "env_steps": 8, "wall_time_s": 0.5,
                "env_steps_per_s": 16.0, "ran_in": cell_dir}

    monkeypatch.setattr(leaderboard, "run_cell", run_cell)
    cells = [{"key": "A-PPO-0"}, {"key": "A-PPO-1"}]
    records = leaderboard.run_cells(cells, tmp_path, workers=3, ray_address="ray://head:10001", log=print)
    assert fake.init_kwargs["address"] == "ray://head:10001"
    assert fake.init_kwargs["runtime_env"]["working_dir"] == str(leaderboard.REPO_ROOT)
    assert [c[0] for c in fake.calls] == [1, 1]  # one CPU per cell
    assert sorted(r["key"] for r in records) == ["A-PPO-0", "A-PPO-1"]
    for cell in cells:  # the record that came back is the cell's result on this machine
        saved = json.loads((tmp_path / cell["key"] / "cell.json").read_text())
        assert saved["key"] == cell["key"] and saved["ran_in"].endswith(cell["key"])


@pytest.mark.parametrize("path", sorted((leaderboard.REPO_ROOT / "configs" / "leaderboard").glob("v*.yaml")),
                         ids=lambda p: p.name)
def test_every_shipped_protocol_makes_its_cells(path):
    protocol = leaderboard.load_protocol(path)
    assert f"v{protocol.version}.yaml" == path.name  # a protocol's file is named by its version
    cells = leaderboard.make_cells(protocol)
    # each task on the simulators it has among those named (taigym, and the one it ports)
    runs_per_task = [len(leaderboard.task_simulators(protocol, t.id)) for t in protocol.tasks]
    assert len(cells) == sum(runs_per_task) * len(protocol.algorithms) * len(protocol.seeds)
    assert all(n == min(len(protocol.simulators), 2) for n in runs_per_task)
    assert len({c["key"] for c in cells}) == len(cells) and len({c["digest"] for c in cells}) == len(cells)
    assert leaderboard.DEFAULT_PROTOCOL.name == max(
        (p.name for p in path.parent.glob("v*.yaml")), key=lambda n: int(n[1:-5]))  # the newest is the default


def test_cross_eval_runs_a_policy_on_both_simulators(ppo_run, tmp_path):
    from taigym.scripts import cross_eval

    out = tmp_path / "cross.json"
    assert cross_eval.main([str(ppo_run), "--episodes", "2", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["trained_on"] == "taigym" and row["seed"] == 3 and row["algo"] == "PPO"
    assert (row["taigym_id"], row["gymnasium_id"]) == (TASK, "InvertedPendulum-v5")
    # InvertedPendulum pays +1 per step alive on both simulators
    assert row["on_taigym"] >= 1 and row["on_gymnasium"] >= 1
    # a point per step but the one that ends the episode: the return is its length or one less
    for side in ("taigym", "gymnasium"):
        assert 0 <= row[f"length_on_{side}"] - np.mean(row[f"returns_on_{side}"]) <= 1
    assert row["contacts_on_taigym"] == row["contacts_on_gymnasium"] == 0  # the cart rides its rail in no contact
    assert "| taigym | 3 |" in out.with_suffix(".md").read_text()


def test_cross_eval_names_what_a_run_lacks(ppo_run, tmp_path, capsys):
    from taigym.scripts import cross_eval

    assert cross_eval.main([str(tmp_path)]) == 2
    assert f"{tmp_path}: no config.yaml" in capsys.readouterr().err
    with pytest.raises(cross_eval.CrossEvalError,
                       match="'TaiGym/Pusher-v0' has no Gymnasium or dm_control counterpart"):
        cross_eval.task_pair("TaiGym/Pusher-v0")
    with pytest.raises(cross_eval.CrossEvalError, match="'Pusher-v5' has no taigym port"):
        cross_eval.task_pair("Pusher-v5")
    assert cross_eval.task_pair("Hopper-v5") == ("TaiGym/Hopper-v0", "Hopper-v5")
    if importlib.util.find_spec("dm_control"):  # a Control Suite task's counterpart is dm_control's
        walker = ("TaiGym/walker-walk-v0", "dm_control/walker-walk-v0")
        assert cross_eval.task_pair(walker[0]) == cross_eval.task_pair(walker[1]) == walker
