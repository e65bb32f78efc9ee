"""A task file's own terms (tasks/user_terms.py): the worked example of docs/environments.md
run as written, its reward against the shipped Hopper's, and each kind of mistake refused
before simulation with the task file's key and the term file's own line.

Tolerance: the example's reward is Hopper's forward reward written again with the same
instructions, so float64 rewards agree to 1e-12 (they are in fact bitwise equal).
"""

import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks.errors import ConfigError
from taigym.tasks.task import Task

DOC = Path(__file__).resolve().parents[1] / "docs" / "environments.md"


def _doc_blocks():
    """The code blocks of the doc's "Writing your own term" section, in order: (language, text)."""
    text = DOC.read_text()
    section = text[text.index("## Writing your own term"):]
    section = section[: section.find("\n## ", 10) if "\n## " in section[10:] else len(section)]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


@pytest.fixture()
def example(tmp_path, monkeypatch):
    """The doc's my_terms.py and my_hopper.yaml in a folder of their own, the cwd there."""
    blocks = _doc_blocks()
    terms, task, usage = blocks[0][1], blocks[1][1], blocks[2][1]
    assert "def forward_speed" in terms and "my_terms.py:forward_speed" in task and "register_task" in usage
    (tmp_path / "my_terms.py").write_text(terms)
    (tmp_path / "my_hopper.yaml").write_text(task)
    monkeypatch.chdir(tmp_path)
    return tmp_path, usage


def _count_launches(env):
    calls = []
    launch = env.world._launch

    def counted(*args, **kwargs):
        calls.append(args)
        return launch(*args, **kwargs)

    env.world._launch = counted
    return calls


def test_the_docs_example_runs_as_written(example, capsys):
    folder, usage = example
    exec(compile(usage, str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert printed.strip().startswith("[") and len(printed.split()) >= 4


def test_a_user_reward_equals_the_shipped_one_in_one_launch_per_step(example):
    folder, _ = example
    shipped = TaiGymVectorEnv("TaiGym/Hopper-v0", 8)
    mine = TaiGymVectorEnv(str(folder / "my_hopper.yaml"), 8)
    shipped.reset(seed=4)
    mine.reset(seed=4)
    launches = _count_launches(mine)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(300):
        action = rng.uniform(-1, 1, mine.action_space.shape)
        ref, out = shipped.step(action), mine.step(action)
        np.testing.assert_array_equal(out[0], ref[0])
        np.testing.assert_allclose(out[1], ref[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(out[4]["reward_forward_speed"], ref[4]["reward_forward_velocity"], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(out[2], ref[2])
        ended += int(out[2].sum())
    assert ended > 0, "autoresets are part of the comparison"
    assert len(launches) == 300  # autoresets included: reset envs are observed in the step's launch


def test_gym_make_and_make_vec_take_a_registered_user_task(example):
    import gymnasium as gym
    import taigym

    folder, _ = example
    env_id = taigym.register_task(folder / "my_hopper.yaml")
    assert env_id == "Mine/Hopper-v0"
    env = gym.make(env_id)
    env.reset(seed=0)
    assert np.isfinite(env.step(env.action_space.sample())[1])
    vec = gym.make_vec(env_id, num_envs=3)
    vec.reset(seed=0)
    assert vec.step(vec.action_space.sample())[4]["reward_forward_speed"].shape == (3,)


def test_a_module_term_is_imported(tmp_path, monkeypatch):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "terms.py").write_text((_doc_blocks()[0][1]))
    monkeypatch.syspath_prepend(str(tmp_path))
    task = _task(tmp_path, "mypkg.terms:forward_speed")
    assert [name for name, _, _ in task.rewards] == ["forward_speed"]
    sys.modules.pop("mypkg.terms", None)
    sys.modules.pop("mypkg", None)


def test_a_multi_agent_task_takes_a_user_term(example):
    import taigym

    folder, _ = example
    (folder / "my_swimmers.yaml").write_text(textwrap.dedent("""\
        extends: swimmer_2x1.yaml
        id: Mine/Swimmer2x1-v0
        rewards:
          - term: my_terms.py:forward_speed
            params: {joint: slider1}
            weight: 1.0
        """))
    env = taigym.make_parallel(str(folder / "my_swimmers.yaml"))
    env.reset(seed=0)
    _, rewards, _, _, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
    assert all("reward_forward_speed" in infos[a] for a in rewards)


# --- mistakes ------------------------------------------------------------------------------
def _task(folder, term, params="{}", terms_text=None, kind="rewards"):
    if terms_text is not None:
        (folder / "bad_terms.py").write_text(textwrap.dedent(terms_text))
    (folder / "task.yaml").write_text(textwrap.dedent(f"""\
        extends: hopper.yaml
        id: Mine/Hopper-v0
        {kind}:
          - term: {term}
            params: {params}
        """) + ("    weight: 1.0\n" if kind == "rewards" else ""))
    return Task.from_source(str(folder / "task.yaml"))


def _line_of(folder, text):
    lines = (folder / "bad_terms.py").read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


HEADER = """\
    from taigym.tasks.registry import Term, TermError
    from taigym.tasks.terms._select import lookup
    """


def _refused(tmp_path, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as e:
        _task(tmp_path, *args, **kwargs)
    return str(e.value)


def test_an_unknown_joint_names_the_key_and_the_users_line(tmp_path):
    message = _refused(tmp_path, "bad_terms.py:speed", "{joint: rootq}", HEADER + """
    def speed(model, *, joint: str):
        q = lookup(model.jnt_name, joint, "joint", "joint")
        return Term(ops=lambda c: c.load("qpos", q))
    """)
    assert "task.yaml, line 5" in message and "rewards[0].params.joint" in message
    assert "no joint named 'rootq'" in message and "did you mean 'root" in message
    assert f"bad_terms.py, line {_line_of(tmp_path, 'lookup(model')}" in message


def test_an_exception_in_the_factory_names_the_users_line(tmp_path):
    message = _refused(tmp_path, "bad_terms.py:broken", "{}", HEADER + """
    def broken(model):
        scale = 1.0 / (model.nu - model.nu)
        return Term(ops=lambda c: c.action)
    """)
    assert "rewards[0]" in message and "ZeroDivisionError" in message
    assert f"bad_terms.py, line {_line_of(tmp_path, 'scale =')}" in message


def test_an_exception_in_ops_names_the_users_line(tmp_path):
    message = _refused(tmp_path, "bad_terms.py:typo", "{}", HEADER + """
    def typo(model):
        def ops(c):
            return c.b.sqare(c.action)
        return Term(ops=ops)
    """)
    assert "rewards[0]" in message and "AttributeError" in message and "sqare" in message
    assert f"bad_terms.py, line {_line_of(tmp_path, 'c.b.sqare')}" in message


def test_a_wrong_output_width_names_the_users_ops(tmp_path):
    message = _refused(tmp_path, "bad_terms.py:whole_action", "{}", HEADER + """
    def whole_action(model):
        def ops(c):
            return c.b.square(c.action)
        return Term(ops=ops)
    """)
    assert "rewards[0]" in message and "gave 3 values, expected 1" in message
    assert f"bad_terms.py, line {_line_of(tmp_path, 'def ops')}" in message


def test_an_observation_without_its_width_is_refused(tmp_path):
    message = _refused(tmp_path, "bad_terms.py:height", "{}", HEADER + """
    def height(model):
        return Term(ops=lambda c: c.load("qpos", 1))
    """, kind="observations")
    assert "observations[0]" in message and "Term(size=...)" in message
    assert f"bad_terms.py, line {_line_of(tmp_path, 'def height')}" in message


@pytest.mark.parametrize("term, text, expected", [
    ("missing.py:speed", None, "no file"),
    ("bad_terms.py:sped", HEADER + "\n    def speed(model):\n        return Term()\n", "did you mean 'speed'"),
    ("bad_terms.py:speed", "def speed(model)\n    pass\n", "bad_terms.py, line 1"),
    ("no_such_module_xyz:speed", None, "cannot import module 'no_such_module_xyz'"),
    ("'bad_terms.py:'", None, "is not 'file.py:function'"),
])
def test_a_term_reference_that_cannot_be_loaded_is_named(tmp_path, term, text, expected):
    message = _refused(tmp_path, term, "{}", text)
    assert "task.yaml, line 4" in message and "rewards[0].term" in message and expected in message


def test_an_unknown_parameter_is_refused_as_for_shipped_terms(example):
    folder, _ = example
    message = _refused(folder, "my_terms.py:forward_speed", "{joints: rootx}")
    assert "'my_terms.py:forward_speed' has no parameter 'joints'" in message and "did you mean 'joint'" in message


TINY_PROTOCOL = """
version: 1
name: mine
eval_episodes: 1
seeds: [0]
tasks:
  - {{id: {task}, budget: 256}}
algorithms:
  - name: PPO
    trainer: sb3
    algo: PPO
    settings: {{num_envs: 2, n_steps: 128, batch_size: 128, n_epochs: 1, log_every: 128}}
"""


def test_train_leaderboard_and_play_take_the_user_task(example, device):
    pytest.importorskip("stable_baselines3")
    if device != "cpu":
        pytest.skip("training runs on the CPU; Taichi allows one backend per process")
    from taigym.scripts import leaderboard, play, train

    folder, _ = example
    task = folder / "my_hopper.yaml"
    assert train.main([str(task), "--quiet", "--no-video", "--results", str(folder / "runs"), "num_envs=2",
                       "n_steps=128", "batch_size=128", "n_epochs=1", "eval_episodes=1", "total_timesteps=256"]) == 0
    model = folder / "runs" / "my_hopper-PPO-0" / "model.zip"
    assert model.is_file()
    protocol = folder / "mine.yaml"
    protocol.write_text(TINY_PROTOCOL.format(task=task))
    assert leaderboard.main(["--protocol", str(protocol), "--out", str(folder / "board")]) == 0
    assert "my_hopper" in (folder / "board" / "leaderboard.md").read_text()
    video = folder / "play.gif"
    assert play.main([str(task), "--policy", str(model), "--steps", "3", "--width", "32", "--height", "32",
                      "--out", str(video)]) == 0
    assert video.stat().st_size > 0
