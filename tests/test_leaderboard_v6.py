"""Protocol v6: version 5 and three Control Suite tasks, each trained on taigym and on
dm_control's own task (simulator ``dm_control``, through scripts/dm_control_env.py's Gymnasium
adapter); the page sets each task beside the simulator it ports, its headings naming it.

Tiny budgets teach nothing, so returns are not asserted; the flags are checked on synthetic
records.
"""

import json

import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("matplotlib")
pytest.importorskip("dm_control")

from taigym.scripts import leaderboard, train
from taigym.scripts import leaderboard_page as page
from taigym.scripts.benchmark_training import gymnasium_counterpart
from taigym.scripts.results import run_name, task_name
from test_leaderboard_v4 import write

V5 = leaderboard.REPO_ROOT / "configs" / "leaderboard" / "v5.yaml"
V6 = leaderboard.REPO_ROOT / "configs" / "leaderboard" / "v6.yaml"
CONTROL_SUITE = ("TaiGym/cartpole-swingup-v0", "TaiGym/walker-walk-v0", "TaiGym/cheetah-run-v0")
# a v6-like protocol at a budget that teaches nothing: one Control Suite task, one seed
TINY_V6 = """
version: 1
name: tiny-six
eval_episodes: 1
seeds: [0]
simulators: [taigym, gymnasium, dm_control]
tasks:
  - {id: TaiGym/cartpole-swingup-v0, budget: 512}
algorithms:
  - name: PPO
    trainer: sb3
    algo: PPO
    settings: {num_envs: 2, n_steps: 256, batch_size: 256, n_epochs: 1, log_every: 256, normalize_obs: true}
"""


@pytest.fixture(autouse=True)
def _cpu_only(device):
    if device != "cpu":
        pytest.skip("training runs on the CPU; Taichi allows one backend per process")


def test_a_control_suite_task_ports_dm_control_and_its_cells_are_named_apart():
    assert gymnasium_counterpart("TaiGym/cartpole-swingup-v0") == "dm_control/cartpole-swingup-v0"
    assert gymnasium_counterpart("TaiGym/Hopper-v0") == "Hopper-v5"
    assert leaderboard.counterpart_simulator("TaiGym/walker-walk-v0") == "dm_control"
    assert leaderboard.counterpart_simulator("TaiGym/Walker2d-v0") == "gymnasium"
    # the namespace stays in a run's name: taigym's port and dm_control's task share the rest
    assert task_name("dm_control/cartpole-swingup-v0") == "dm_control-cartpole-swingup-v0"
    assert task_name("TaiGym/cartpole-swingup-v0") == "cartpole-swingup-v0"
    assert run_name("dm_control/cheetah-run-v0", "PPO", 3) == "dm_control-cheetah-run-v0-PPO-3"
    assert train.taigym_counterpart("dm_control/cartpole-swingup-v0") == "TaiGym/cartpole-swingup-v0"
    assert train.default_config_path("dm_control/cartpole-swingup-v0", "PPO").name == "cartpole_swingup_ppo.yaml"


def test_a_control_suite_task_needs_dm_control_among_the_simulators(tmp_path):
    text = TINY_V6.replace("[taigym, gymnasium, dm_control]", "[taigym, gymnasium]")
    with pytest.raises(SystemExit, match=r"TaiGym/cartpole-swingup-v0 ports dm_control/cartpole-swingup-v0, "
                                         r"simulator dm_control, which `simulators` .* does not name"):
        leaderboard.load_protocol(write(tmp_path, text))
    ours = leaderboard.load_protocol(write(tmp_path, TINY_V6.replace("[taigym, gymnasium, dm_control]",
                                                                     "[taigym, dm_control]")))
    assert [(c["key"], c["simulator"]) for c in leaderboard.make_cells(ours)] == [
        ("cartpole-swingup-v0-PPO-0", "taigym"), ("dm_control-cartpole-swingup-v0-PPO-0", "dm_control")]
    native = TINY_V6.replace("trainer: sb3\n    algo: PPO\n", "trainer: native\n")
    with pytest.raises(SystemExit, match=r"simulator gymnasium needs trainer sb3"):
        leaderboard.load_protocol(write(tmp_path, native))


def test_v6_is_v5_and_three_control_suite_tasks_and_adopts_every_v5_cell(tmp_path):
    v6, v5 = leaderboard.load_protocol(V6), leaderboard.load_protocol(V5)
    assert v6.seeds == v5.seeds and v6.eval_episodes == v5.eval_episodes
    assert v6.tasks[:len(v5.tasks)] == v5.tasks
    assert tuple(t.id for t in v6.tasks[len(v5.tasks):]) == CONTROL_SUITE
    assert {t.id: t.budget for t in v6.tasks[len(v5.tasks):]} == dict.fromkeys(CONTROL_SUITE, 1_000_000)
    (ppo,), (ppo5,) = v6.algorithms, v5.algorithms
    assert {k: v for k, v in ppo.task_settings.items() if k not in CONTROL_SUITE} == ppo5.task_settings
    cells = leaderboard.make_cells(v6)
    assert len(cells) == len(v6.tasks) * len(v6.seeds) * 2
    ported = {(c["task"], c["simulator"]) for c in cells if c["simulator"] != "taigym"}
    assert {sim for task, sim in ported if task in CONTROL_SUITE} == {"dm_control"}
    assert {sim for task, sim in ported if task not in CONTROL_SUITE} == {"gymnasium"}
    cartpole = next(c for c in cells if c["key"] == "dm_control-cartpole-swingup-v0-PPO-0")
    assert cartpole["config"]["task"] == "dm_control/cartpole-swingup-v0" and cartpole["config"]["num_envs"] == 8
    adopted = leaderboard.adopt_cells(v6, cells, tmp_path, log=lambda msg: None)
    assert len(adopted) == len(leaderboard.make_cells(v5)) == 80
    assert all(leaderboard.is_done(c, tmp_path) == (c["task"] not in CONTROL_SUITE) for c in cells)


def record(task, simulator, seed, ret):
    env = {"taigym": task, "gymnasium": task.replace("TaiGym/", "").replace("-v0", "-v5"),
           "dm_control": task.replace("TaiGym/", "dm_control/")}[simulator]
    return {"task": task, "algorithm": "PPO", "simulator": simulator, "seed": seed, "eval_return_mean": ret,
            "wall_time_s": 10.0 + seed, "env_steps_per_s": 1000.0, "solved": False, "progress": [],
            "comparability": {"solver": "Newton (pyramidal cones)"}, "config": {"task": env}}


def test_the_page_sets_each_task_beside_the_simulator_it_ports(tmp_path):
    text = TINY_V6.replace("seeds: [0]", "seeds: [0, 1]").replace(
        "  - {id: TaiGym/cartpole-swingup-v0, budget: 512}",
        "  - {id: TaiGym/InvertedPendulum-v0, budget: 256}\n  - {id: TaiGym/cartpole-swingup-v0, budget: 512}\n"
        "  - {id: TaiGym/walker-walk-v0, budget: 512}")
    protocol = leaderboard.load_protocol(write(tmp_path, text))
    returns = {("TaiGym/InvertedPendulum-v0", "taigym"): [1000, 990], ("TaiGym/InvertedPendulum-v0", "gymnasium"):
               [990, 1000], ("TaiGym/cartpole-swingup-v0", "taigym"): [800, 820],
               ("TaiGym/cartpole-swingup-v0", "dm_control"): [810, 830], ("TaiGym/walker-walk-v0", "taigym"): [300],
               ("TaiGym/walker-walk-v0", "dm_control"): [900, 950]}
    records = [record(task, sim, seed, ret) for (task, sim), rets in returns.items() for seed, ret in enumerate(rets)]
    summary = page.summarize(protocol, records)
    tables = page.results_tables(protocol, summary)
    assert [caption for caption, _, _ in tables] == [
        "Tasks that port Gymnasium's MuJoCo env (`<Task>-v5`):",
        ("Tasks that port dm_control's Control Suite task (`dm_control/<domain>-<task>-v0`, through its "
         "Gymnasium adapter):")]
    (_, gym_head, gym_body), (_, dm_head, dm_body) = tables
    assert gym_head[2:4] == ["eval return, taigym", "eval return, Gymnasium"] and len(gym_body) == 1
    assert dm_head[2:4] == ["eval return, taigym", "eval return, dm_control"]
    assert all("Gymnasium" not in h for h in dm_head)
    assert "env steps/s, dm_control" in dm_head and "train wall time [s], dm_control" in dm_head
    # cartpole: 810 ± 10 against 820 ± 10, within; walker: 300 against 925 ± 25, disagrees
    assert {r[0]: (r[4], r[5]) for r in dm_body} == {"TaiGym/cartpole-swingup-v0": ("no", "yes"),
                                                     "TaiGym/walker-walk-v0": ("yes", "no")}
    md = page.markdown(protocol, summary, 1, [])
    assert "| eval return, taigym | eval return, dm_control | disagree |" in md
    assert "| eval return, taigym | eval return, Gymnasium | disagree |" in md
    assert ("In all, the taigym mean lies within the Gymnasium spread on 1 of 1 rows; within the dm_control "
            "spread on 1 of 2 rows (outside: walker-walk-v0).") in md
    assert "Here *ported* is the simulator the task ports: Gymnasium or dm_control." in md
    assert "and on the simulator it ports, Gymnasium's MuJoCo env (`<Task>-v5`) or dm_control's" in md
    assert "<th>eval return, dm_control</th>" in page.html_page(protocol, summary, 1, [])
    _, s_body = page.settings_table(protocol, summary)
    assert {r[2] for r in s_body} == {"taigym", "Gymnasium", "dm_control"}


def test_train_trains_on_dm_controls_task_directly(tmp_path):
    """scripts/train.py on ``dm_control/cartpole-swingup-v0``: training, evaluation over whole
    1,000-step episodes, dm_control's settings, and a video, or where OpenGL is missing a note
    saying why there is none."""
    run_dir = tmp_path / "run"
    args = ["dm_control/cartpole-swingup-v0", "--run-dir", str(run_dir), "--quiet", "total_timesteps=512",
            "num_envs=2", "n_steps=256", "batch_size=256", "n_epochs=1", "log_every=256", "eval_episodes=1",
            "video_steps=3", "normalize_obs=true"]
    assert train.main(args) == 0
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["task"] == "dm_control/cartpole-swingup-v0" and metrics["env_steps"] == 512
    assert metrics["eval"]["lengths"] == [1000] and 0 <= metrics["eval_return_mean"] <= 1000
    sim = metrics["simulation"]
    assert sim["engine"].startswith("MuJoCo ") and "dm_control" in sim["engine"]
    assert (sim["frame_skip"], sim["episode_length"], sim["timestep_s"]) == (1, 1000, 0.01)
    assert sim["action_source"] == "MuJoCo ctrl on 1 actuator(s)"
    if metrics["video"] is None:
        assert metrics["video_note"].startswith("no video: dm_control's renderer failed")
    else:
        assert (run_dir / metrics["video"]).stat().st_size > 0
    assert (run_dir / "vecnormalize.pkl").exists()


@pytest.mark.slow  # compiles taigym's cartpole kernels
def test_a_control_suite_task_on_both_simulators_end_to_end(tmp_path):
    out = tmp_path / "board"
    assert leaderboard.main(["--protocol", str(write(tmp_path, TINY_V6)), "--out", str(out)]) == 0
    ours = json.loads((out / "cells" / "cartpole-swingup-v0-PPO-0" / "cell.json").read_text())
    theirs = json.loads((out / "cells" / "dm_control-cartpole-swingup-v0-PPO-0" / "cell.json").read_text())
    for r, simulator in ((ours, "taigym"), (theirs, "dm_control")):
        assert r["simulator"] == simulator and r["env_steps"] == 512 and len(r["eval_returns"]) == 1
        # 512 steps over 2 envs end no 1,000-step episode: no learning curve, nothing to plot
        assert r["env_steps_per_s"] > 0 and r["comparability"]["frame_skip"] == 1
    assert theirs["config"]["task"] == "dm_control/cartpole-swingup-v0"
    assert theirs["comparability"]["sim_threads"] == 1 and "dm_control" in theirs["comparability"]["engine"]
    md = (out / "leaderboard.md").read_text()
    assert "| eval return, taigym | eval return, dm_control | disagree |" in md
    assert "dm_control's Control Suite task (`dm_control/<domain>-<task>-v0`" in md
    report = json.loads((out / "leaderboard.json").read_text())
    assert {r["simulator"] for r in report["rows"]} == {"taigym", "dm_control"}
    assert report["comparisons"][0]["disagree"] in (True, False)


def test_the_published_v6_records_hold_every_cell_and_rebuild_the_page(tmp_path):
    """results/leaderboard/v6 holds a finished record of every cell under v6's settings (v5's
    80 adopted, the Control Suite's 30), and the page rebuilt from those records alone says
    what the published one (docs/leaderboard/v6.md) says: taigym's mean within dm_control's
    spread over seeds on all three Control Suite tasks, within Gymnasium's on all eight."""
    v6 = leaderboard.load_protocol(leaderboard.REPO_ROOT / "configs" / "leaderboard" / "v6.yaml")
    cells = leaderboard.make_cells(v6)
    published = leaderboard.REPO_ROOT / "results" / "leaderboard" / "v6"
    missing = [c["key"] for c in cells if not leaderboard.is_done(c, published / "cells")]
    assert missing == [] and len(cells) == 110
    (tmp_path / "v6").mkdir()
    for name in ("cells", "notes.md"):
        (tmp_path / "v6" / name).symlink_to(published / name)
    report = leaderboard.publish(v6, cells, tmp_path / "no-run", tmp_path / "v6")
    assert report["finished"] == 110
    assert [c["within_spread"] for c in report["comparisons"]] == [True] * 11
    rebuilt = (tmp_path / "v6.md").read_text()
    assert rebuilt == (leaderboard.REPO_ROOT / "docs" / "leaderboard" / "v6.md").read_text()
