"""Protocol v5: version 4 with five seeds, whose first three are v4's published records,
adopted where a cell's settings digest matches (``adopts``); a changed setting or an
unfinished record is not adopted, and the page says which cells were."""

import json

import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("matplotlib")

from taigym.scripts import leaderboard
from test_leaderboard_v4 import TWO_SIMULATORS

V5 = leaderboard.REPO_ROOT / "configs" / "leaderboard" / "v5.yaml"
EARLIER = TWO_SIMULATORS.replace("tiny-two", "tiny-early")
LATER = EARLIER.replace("version: 1", "version: 2").replace("tiny-early", "tiny-later").replace(
    "seeds: [0]", "seeds: [0, 1]") + "adopts:\n  - {protocol: early.yaml, cells: early/cells}\n"


@pytest.fixture(autouse=True)
def _cpu_only(device):
    if device != "cpu":
        pytest.skip("the leaderboard runs on the CPU; Taichi allows one backend per process")


def finish(cell, cells_dir, ret=990.0, status="done"):
    """A record of ``cell`` as a finished run writes it."""
    record = {**{k: cell[k] for k in ("key", "digest", "protocol", "version", "task", "algorithm", "seed",
                                      "simulator")},
              "status": status, "eval_return_mean": ret, "eval_return_std": 1.0, "wall_time_s": 10.0,
              "env_steps_per_s": 1000.0, "solved": True, "progress": [], "env_steps": 256,
              "comparability": {"solver": "Newton (pyramidal cones)"}, "config": cell["config"]}
    (cells_dir / cell["key"]).mkdir(parents=True, exist_ok=True)
    (cells_dir / cell["key"] / "cell.json").write_text(json.dumps(record))
    return record


def earlier_and_later(tmp_path, later_text=LATER):
    (tmp_path / "early.yaml").write_text(EARLIER)
    (tmp_path / "later.yaml").write_text(later_text)
    (tmp_path / "early" / "cells").mkdir(parents=True, exist_ok=True)
    early = leaderboard.load_protocol(tmp_path / "early.yaml")
    return early, leaderboard.load_protocol(tmp_path / "later.yaml")


def test_a_finished_cell_of_the_same_settings_is_adopted_with_its_results(tmp_path):
    early, later = earlier_and_later(tmp_path)
    for cell in leaderboard.make_cells(early):
        finish(cell, tmp_path / "early" / "cells", ret=900.0 + len(cell["key"]))
    cells, run = leaderboard.make_cells(later), tmp_path / "run"
    adopted = leaderboard.adopt_cells(later, cells, run, log=lambda msg: None)
    assert sorted(r["key"] for r in adopted) == ["InvertedPendulum-v0-PPO-0", "InvertedPendulum-v5-PPO-0"]
    done = {c["key"] for c in cells if leaderboard.is_done(c, run)}
    assert done == {r["key"] for r in adopted}  # seed 1 is left to run
    early_digests = {c["key"]: c["digest"] for c in leaderboard.make_cells(early)}
    for r in adopted:
        assert r["protocol"] == "tiny-later" and r["version"] == 2
        assert r["adopted_from"] == {"protocol": "tiny-early", "version": 1, "digest": early_digests[r["key"]]}
        assert r["eval_return_mean"] == 900.0 + len(r["key"])  # the earlier run's result, unchanged
    assert leaderboard.adopt_cells(later, cells, run, log=lambda msg: None) == []  # once only


def test_other_settings_or_an_unfinished_record_are_not_adopted(tmp_path):
    changed = LATER.replace("n_epochs: 1", "n_epochs: 2")
    early, later = earlier_and_later(tmp_path, changed)
    for cell in leaderboard.make_cells(early):
        finish(cell, tmp_path / "early" / "cells")
    assert leaderboard.adopt_cells(later, leaderboard.make_cells(later), tmp_path / "run", print) == []
    early, later = earlier_and_later(tmp_path)
    for cell in leaderboard.make_cells(early):
        finish(cell, tmp_path / "early" / "cells", status="running")
    assert leaderboard.adopt_cells(later, leaderboard.make_cells(later), tmp_path / "run", print) == []


def test_the_page_says_which_cells_were_adopted(tmp_path):
    early, _ = earlier_and_later(tmp_path)
    for cell in leaderboard.make_cells(early):
        finish(cell, tmp_path / "early" / "cells")
    run = tmp_path / "run"
    args = ["--protocol", str(tmp_path / "later.yaml"), "--out", str(run), "--render-only"]
    assert leaderboard.main(args) == 0
    page = (run / "leaderboard.md").read_text()
    assert "2 cells (seeds [0]) are tiny-early's finished records, adopted" in page
    assert "2 cell(s) not finished yet" in page


def test_a_missing_adopted_protocol_or_folder_is_named(tmp_path):
    (tmp_path / "later.yaml").write_text(LATER)
    with pytest.raises(SystemExit, match=r"later.yaml: adopts\[0\].protocol: no protocol file .*early.yaml"):
        leaderboard.load_protocol(tmp_path / "later.yaml")
    (tmp_path / "early.yaml").write_text(EARLIER)
    with pytest.raises(SystemExit, match=r"later.yaml: adopts\[0\].cells: no folder of records .*early/cells"):
        leaderboard.load_protocol(tmp_path / "later.yaml")


def test_v5_is_v4_with_five_seeds_and_adopts_every_published_v4_cell(tmp_path):
    v5 = leaderboard.load_protocol(V5)
    v4 = leaderboard.load_protocol(leaderboard.REPO_ROOT / "configs" / "leaderboard" / "v4.yaml")
    assert v5.seeds == [0, 1, 2, 3, 4] and v5.tasks == v4.tasks and v5.algorithms == v4.algorithms
    cells = leaderboard.make_cells(v5)
    adopted = leaderboard.adopt_cells(v5, cells, tmp_path, log=lambda msg: None)
    assert len(adopted) == len(leaderboard.make_cells(v4)) == 48
    assert {r["seed"] for r in adopted} == {0, 1, 2}
    assert all(leaderboard.is_done(c, tmp_path) == (c["seed"] < 3) for c in cells)


def test_seeds_picks_the_cells_to_run_and_names_a_seed_the_protocol_lacks(tmp_path, monkeypatch):
    earlier_and_later(tmp_path)
    ran = []
    monkeypatch.setattr(leaderboard, "run_cells", lambda pending, *a, **k: ran.extend(c["key"] for c in pending))
    args = ["--protocol", str(tmp_path / "later.yaml"), "--out", str(tmp_path / "run")]
    leaderboard.main([*args, "--seeds", "1"])
    assert sorted(ran) == ["InvertedPendulum-v0-PPO-1", "InvertedPendulum-v5-PPO-1"]
    with pytest.raises(SystemExit, match=r"--seeds 1 7: .*later.yaml has seeds \[0, 1\]"):
        leaderboard.main([*args, "--seeds", "1", "7"])


def test_the_page_counts_the_rows_within_spread(tmp_path):
    _, later = earlier_and_later(tmp_path)
    run = tmp_path / "run" / "cells"
    returns = {("taigym", 0): 990.0, ("taigym", 1): 1000.0, ("gymnasium", 0): 980.0, ("gymnasium", 1): 1000.0}
    for cell in leaderboard.make_cells(later):
        finish(cell, run, ret=returns[cell["simulator"], cell["seed"]])
    args = ["--protocol", str(tmp_path / "later.yaml"), "--out", str(tmp_path / "run"), "--render-only"]
    assert leaderboard.main(args) == 0
    page = (tmp_path / "run" / "leaderboard.md").read_text()
    # taigym 995 against Gymnasium 990 +- 10: within
    assert "In all, the taigym mean lies within the Gymnasium spread on 1 of 1 rows." in page
    for cell in leaderboard.make_cells(later):
        if cell["simulator"] == "taigym":
            finish(cell, run, ret=1100.0)
    assert leaderboard.main(args) == 0
    page = (tmp_path / "run" / "leaderboard.md").read_text()
    assert "within the Gymnasium spread on 0 of 1 rows (outside: InvertedPendulum-v0)." in page


def test_the_published_v5_records_hold_every_cell_and_rebuild_the_page(tmp_path):
    """results/leaderboard/v5 holds a finished record of every cell under v5's settings, and the
    page rebuilt from those records alone says what the published one (docs/leaderboard/v5.md) says."""
    v5 = leaderboard.load_protocol(V5)
    cells = leaderboard.make_cells(v5)
    published = leaderboard.REPO_ROOT / "results" / "leaderboard" / "v5"
    missing = [c["key"] for c in cells if not leaderboard.is_done(c, published / "cells")]
    assert missing == [] and len(cells) == 80
    for name in ("cells", "notes.md"):
        (tmp_path / "v5").mkdir(exist_ok=True)
        target = tmp_path / "v5" / name
        target.symlink_to(published / name)
    report = leaderboard.publish(v5, cells, tmp_path / "no-run", tmp_path / "v5")
    assert report["finished"] == 80
    assert [c["within_spread"] for c in report["comparisons"]] == [True] * 8
    rebuilt = (tmp_path / "v5.md").read_text()
    assert rebuilt == (leaderboard.REPO_ROOT / "docs" / "leaderboard" / "v5.md").read_text()
