"""Protocol v4's machinery: cells on two simulators (taigym and Gymnasium's MuJoCo env), the
side-by-side table with its disagreement flag, and the shipped v4.yaml resolving every cell.

Tiny budgets teach nothing, so returns are not asserted; the disagreement flag is checked on
synthetic records.
"""

import json
import math

import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("matplotlib")

from taigym.scripts import leaderboard, train
from taigym.scripts import leaderboard_page as page

import taigym

V4 = leaderboard.REPO_ROOT / "configs" / "leaderboard" / "v4.yaml"
TWO_SIMULATORS = """
version: 1
name: tiny-two
eval_episodes: 2
seeds: [0]
simulators: [taigym, gymnasium]
tasks:
  - {id: TaiGym/InvertedPendulum-v0, budget: 256, solved_return: 950}
algorithms:
  - name: PPO
    trainer: sb3
    algo: PPO
    settings: {num_envs: 4, n_steps: 64, batch_size: 64, n_epochs: 1, log_every: 64}
"""


@pytest.fixture(autouse=True)
def _cpu_only(device):
    if device != "cpu":
        pytest.skip("training runs on the CPU; Taichi allows one backend per process")


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --- cells ---------------------------------------------------------------------------------
def test_two_simulators_make_twin_cells(tmp_path):
    taigym, gym = leaderboard.make_cells(leaderboard.load_protocol(write(tmp_path, TWO_SIMULATORS)))
    assert (taigym["key"], gym["key"]) == ("InvertedPendulum-v0-PPO-0", "InvertedPendulum-v5-PPO-0")
    assert (taigym["simulator"], gym["simulator"]) == ("taigym", "gymnasium")
    assert (taigym["config"]["task"], gym["config"]["task"]) == ("TaiGym/InvertedPendulum-v0", "InvertedPendulum-v5")
    assert taigym["task"] == gym["task"] == "TaiGym/InvertedPendulum-v0"  # one row of the table
    assert {**gym["config"], "task": None} == {**taigym["config"], "task": None}  # same trainer, settings, seed
    assert taigym["digest"] != gym["digest"]


def test_the_default_simulator_leaves_digests_as_they_were(tmp_path):
    plain = TWO_SIMULATORS.replace("simulators: [taigym, gymnasium]\n", "")
    named = TWO_SIMULATORS.replace("[taigym, gymnasium]", "[taigym]")
    before = leaderboard.make_cells(leaderboard.load_protocol(write(tmp_path, plain, "a.yaml")))
    after = leaderboard.make_cells(leaderboard.load_protocol(write(tmp_path, named, "b.yaml")))
    assert [c["digest"] for c in before] == [c["digest"] for c in after]
    spec = {k: v for k, v in before[0].items() if k not in ("digest", "key", "simulator")}
    assert leaderboard.digest(spec) == before[0]["digest"]  # as made before the key existed
    two = leaderboard.make_cells(leaderboard.load_protocol(write(tmp_path, TWO_SIMULATORS, "c.yaml")))
    assert two[0]["digest"] == before[0]["digest"]


def test_gymnasium_cells_need_a_counterpart_and_the_sb3_trainer(tmp_path):
    no_port = TWO_SIMULATORS.replace("TaiGym/InvertedPendulum-v0", "TaiGym/ArmReach-v0")
    with pytest.raises(SystemExit, match=r"simulator gymnasium: TaiGym/ArmReach-v0 has no Gymnasium counterpart"):
        leaderboard.load_protocol(write(tmp_path, no_port))
    native = TWO_SIMULATORS.replace("trainer: sb3\n    algo: PPO", "trainer: native")
    with pytest.raises(SystemExit, match=r"simulator gymnasium needs trainer sb3"):
        leaderboard.load_protocol(write(tmp_path, native))
    from taigym.scripts.config_files import ConfigFileError

    with pytest.raises(ConfigFileError, match=r"simulators"):
        leaderboard.load_protocol(write(tmp_path, TWO_SIMULATORS.replace("gymnasium]", "mujoco]")))


def test_v4_loads_and_resolves_every_cell():
    protocol = leaderboard.load_protocol(V4)
    assert protocol.version == 4 and protocol.simulators == ["taigym", "gymnasium"]
    assert len(protocol.algorithms) == 1 and protocol.algorithms[0].trainer == "sb3"
    names = [t.id.removeprefix("TaiGym/").removesuffix("-v0") for t in protocol.tasks]
    assert names == ["InvertedPendulum", "InvertedDoublePendulum", "Reacher", "Swimmer", "HalfCheetah", "Hopper",
                     "Walker2d", "Ant"]
    cells = leaderboard.make_cells(protocol)
    assert len(cells) == len(protocol.tasks) * len(protocol.seeds) * 2
    assert len({c["key"] for c in cells}) == len(cells) == len({c["digest"] for c in cells})
    by_key = {c["key"]: c for c in cells}
    for task in protocol.tasks:
        name = task.id.removeprefix("TaiGym/").removesuffix("-v0")
        for seed in protocol.seeds:
            ours, theirs = by_key[f"{name}-v0-PPO-{seed}"], by_key[f"{name}-v5-PPO-{seed}"]
            assert theirs["config"]["task"] == f"{name}-v5" and ours["config"]["task"] == task.id
            assert {**ours["config"], "task": None} == {**theirs["config"], "task": None}
            assert ours["config"]["total_timesteps"] == task.budget and ours["config"]["seed"] == seed


# --- the disagreement flag and the table ---------------------------------------------------
def row(mean, std):
    return {"return_mean": mean, "return_std": std}


def test_disagree_is_a_gap_wider_than_both_spreads():
    assert page.disagree(row(100, 5), row(111, 5)) is True
    assert page.disagree(row(100, 5), row(110, 5)) is False  # exactly the spread: within it
    assert page.disagree(row(100, 5), row(92, 5)) is False
    assert page.disagree(row(100, 0), row(100.5, 0)) is True  # one seed: any difference
    assert page.disagree(row(100, 5), None) is None
    assert page.disagree(row(math.nan, math.nan), row(1, 0)) is None


def test_within_spread_is_the_port_inside_the_other_simulators_seed_spread():
    assert page.within_spread(row(100, 50), row(110, 10)) is True  # exactly its std: within
    assert page.within_spread(row(100, 50), row(111, 10)) is False  # the port's own std does not count
    assert page.within_spread(row(100, 0), row(100, 0)) is True
    assert page.within_spread(row(100, 5), None) is None
    assert page.within_spread(row(math.nan, math.nan), row(1, 0)) is None


def record(task, simulator, seed, ret):
    env = task.replace("TaiGym/", "").replace("-v0", "-v5") if simulator == "gymnasium" else task
    return {"task": task, "algorithm": "PPO", "simulator": simulator, "seed": seed, "eval_return_mean": ret,
            "wall_time_s": 10.0 + seed, "env_steps_per_s": 1000.0, "solved": False, "progress": [],
            "comparability": {"solver": "Newton (pyramidal cones)"}, "config": {"task": env}}


def test_the_table_puts_the_simulators_side_by_side_and_flags_disagreement(tmp_path):
    text = TWO_SIMULATORS.replace("seeds: [0]", "seeds: [0, 1]").replace(
        "  - {id: TaiGym/InvertedPendulum-v0, budget: 256, solved_return: 950}",
        "  - {id: TaiGym/InvertedPendulum-v0, budget: 256, solved_return: 950}\n"
        "  - {id: TaiGym/Hopper-v0, budget: 256}\n  - {id: TaiGym/Reacher-v0, budget: 256}")
    protocol = leaderboard.load_protocol(write(tmp_path, text))
    returns = {  # (task, simulator): eval return of seeds 0, 1
        ("InvertedPendulum", "taigym"): [1000, 990], ("InvertedPendulum", "gymnasium"): [996, 1000],
        ("Hopper", "taigym"): [900, 1100], ("Hopper", "gymnasium"): [2500, 2700],
        ("Reacher", "taigym"): [-5],
    }
    records = [record(f"TaiGym/{name}-v0", simulator, seed, ret)
               for (name, simulator), rets in returns.items() for seed, ret in enumerate(rets)]
    summary = page.summarize(protocol, records)
    head, body, s_head, s_body = page.table_rows(protocol, summary)
    assert head[:5] == ["task", "algorithm", "eval return, taigym", "eval return, Gymnasium", "disagree"]
    for measure in ("train wall time [s]", "env steps/s"):
        assert f"{measure}, taigym" in head and f"{measure}, Gymnasium" in head
    flags = {r[0]: r[4] for r in body}
    # IP: 995 is 3 from 998 ± 2, outside; Hopper far outside; Reacher: one side only
    assert head[5] == "within spread" and {r[0]: r[5] for r in body} == {
        "TaiGym/InvertedPendulum-v0": "no", "TaiGym/Hopper-v0": "no", "TaiGym/Reacher-v0": "–"}
    # IP: 995 ± 5 against 998 ± 2; Hopper: 1000 ± 100 against 2600 ± 100; Reacher: one side only
    assert flags == {"TaiGym/InvertedPendulum-v0": "no", "TaiGym/Hopper-v0": "yes", "TaiGym/Reacher-v0": "–"}
    assert body[0][2:4] == ["995.0 ± 5.0", "998.0 ± 2.0"]
    assert "simulator" in s_head and {r[2] for r in s_body} == {"taigym", "Gymnasium"}
    md = page.markdown(protocol, summary, 3, [])
    assert page.DISAGREE_NOTE in md and "std_taigym + std_Gymnasium" in md


# --- end to end ----------------------------------------------------------------------------
def test_two_simulator_leaderboard_end_to_end(tmp_path):
    protocol = write(tmp_path, TWO_SIMULATORS)
    out = tmp_path / "board"
    assert leaderboard.main(["--protocol", str(protocol), "--out", str(out)]) == 0
    ours = json.loads((out / "cells" / "InvertedPendulum-v0-PPO-0" / "cell.json").read_text())
    theirs = json.loads((out / "cells" / "InvertedPendulum-v5-PPO-0" / "cell.json").read_text())
    for r, simulator in ((ours, "taigym"), (theirs, "gymnasium")):
        assert r["simulator"] == simulator and r["env_steps"] == 256 and len(r["eval_returns"]) == 2
        assert r["progress"] and r["env_steps_per_s"] > 0
        assert r["comparability"]["solver"] == "Newton (pyramidal cones)" and r["comparability"]["frame_skip"] == 2
    assert theirs["config"]["task"] == "InvertedPendulum-v5"
    assert theirs["comparability"]["engine"].startswith("MuJoCo ")
    # which code made a record: the package's version, and its commit in a git checkout
    versions = ours["comparability"]["versions"]
    assert versions["taigym"] == taigym.__version__ and "taigym_git" in versions
    md = (out / "leaderboard.md").read_text()
    assert "| eval return, taigym | eval return, Gymnasium | disagree |" in md
    results = md.split("## What makes")[0]
    assert results.count("| TaiGym/InvertedPendulum-v0 | PPO |") == 1  # one row, both simulators
    report = json.loads((out / "leaderboard.json").read_text())
    assert {r["simulator"] for r in report["rows"]} == {"taigym", "gymnasium"}
    assert report["comparisons"][0]["disagree"] in (True, False)
    assert (out / "curves_InvertedPendulum-v0.png").stat().st_size > 0


def test_publish_stores_thinned_records_and_rebuilds_the_page_from_them_alone(tmp_path):
    protocol_path = write(tmp_path, TWO_SIMULATORS.replace("seeds: [0]", "seeds: [0, 1]"))
    protocol = leaderboard.load_protocol(protocol_path)
    run = tmp_path / "run"
    for cell in leaderboard.make_cells(protocol)[:3]:  # one cell left unfinished
        r = record(cell["task"], cell["simulator"], cell["seed"], 990.0 + cell["seed"])
        r.update(key=cell["key"], digest=cell["digest"], progress=[
            {"env_steps": 10.0 * i, "wall_time_s": 0.1 * i, "return_mean": float(i), "return_std": 0.0}
            for i in range(1000)])
        (run / "cells" / cell["key"]).mkdir(parents=True)
        (run / "cells" / cell["key"] / "cell.json").write_text(json.dumps(r))
    dest = tmp_path / "docs" / "leaderboard" / "v9"
    args = ["--protocol", str(protocol_path), "--out", str(run), "--publish", str(dest)]
    assert leaderboard.main(args) == 0
    stored = sorted(p.parent.name for p in (dest / "cells").glob("*/cell.json"))
    assert len(stored) == 3
    kept = json.loads((dest / "cells" / stored[0] / "cell.json").read_text())["progress"]
    assert len(kept) == leaderboard.CURVE_ROWS and kept[0]["env_steps"] == 0 and kept[-1]["env_steps"] == 9990
    page = dest.with_suffix(".md")
    text = page.read_text()
    assert "1 cell(s) not finished yet" in text and "![v9/curves_InvertedPendulum-v0.png]" in text
    assert (dest / "curves_InvertedPendulum-v0.png").stat().st_size > 0
    # the run folder gone, the same command rebuilds the same page from the stored records
    import shutil

    shutil.rmtree(run)
    page.unlink()
    assert leaderboard.main(args) == 0
    assert page.read_text() == text
    # notes written beside the records go on the page, under the results
    (dest / leaderboard.NOTES_FILE).write_text("## Why Hopper differs\n\nEvidence.\n")
    assert leaderboard.main(args) == 0
    noted = page.read_text()
    assert noted.index("## Why Hopper differs") < noted.index("## What makes these numbers comparable")


def test_train_takes_a_gymnasium_id(tmp_path):
    assert train.is_gymnasium_id("Hopper-v5") and not train.is_gymnasium_id("TaiGym/Hopper-v0")
    assert not train.is_gymnasium_id("my_task.yaml")
    assert train.default_config_path("InvertedPendulum-v5", "PPO").name == "inverted_pendulum_ppo.yaml"
    assert train.default_config_path("Hopper-v5", "SAC").name == "hopper_sac.yaml"
    assert train.default_config_path("Pendulum-v1", "PPO").name == "Pendulum-v1_ppo.yaml"  # none: SB3 defaults
    with pytest.raises(SystemExit, match=r"unknown task 'InvertedPendulum-v9'.*did you mean 'InvertedPendulum-v\d'"):
        train.main(["InvertedPendulum-v9", "--results", str(tmp_path)])
    with pytest.raises(SystemExit, match=r"task_overrides .* Gymnasium env"):
        train.main(["InvertedPendulum-v5", "--results", str(tmp_path), "--quiet", 'task_overrides=["a=1"]'])
    assert not list(tmp_path.iterdir())  # refused before any run folder


def test_sim_threads_are_recorded_where_this_process_started_no_taichi(monkeypatch):
    # a Gymnasium cell, or a cell resumed after it had finished, runs no Taichi kernel here
    import taigym.physics.runtime.backend as taichi_module

    def no_runtime():
        raise AttributeError("'NoneType' object has no attribute 'config'")

    monkeypatch.setattr(taichi_module, "current_cfg", no_runtime)
    monkeypatch.setenv("TI_CPU_MAX_NUM_THREADS", "3")
    monkeypatch.setenv("QD_CPU_MAX_NUM_THREADS", "3")
    assert leaderboard.taichi_threads() == 3


def test_a_failing_cell_is_logged_and_the_others_finish(tmp_path, monkeypatch):
    cells = [{"key": "A-v0-PPO-0"}, {"key": "B-v0-PPO-0"}]

    def run_cell(cell, cell_dir, workers):
        if cell["key"].startswith("A"):
            raise RuntimeError("boom")
        return {"key": cell["key"], "eval_return_mean": 1.0, "env_steps": 10, "wall_time_s": 1.0,
                "env_steps_per_s": 10.0}

    monkeypatch.setattr(leaderboard, "run_cell", run_cell)
    log = []
    records = leaderboard.run_cells(cells, tmp_path, workers=1, ray_address=None, log=log.append)
    assert [r["key"] for r in records] == ["B-v0-PPO-0"]
    assert (tmp_path / "B-v0-PPO-0" / "cell.json").exists() and not (tmp_path / "A-v0-PPO-0" / "cell.json").exists()
    assert log[0] == "FAILED A-v0-PPO-0: RuntimeError: boom"
