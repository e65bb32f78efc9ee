"""Bad values in a task config are refused with the file, the line, the key path and the value."""

import shutil

import pytest
from taigym.tasks.errors import ConfigError
from taigym.tasks.loader import config_dir, load_task_config
from taigym.tasks.task import Task

HOPPER = """\
extends: _gymnasium_v5.yaml
id: TaiGym/MyHopper-v0
robot:
  asset: gymnasium:hopper.xml
simulation:
  frame_skip: 4
  solver: Newton
observations:
  - term: qpos
    params: {start: 1}
  - term: qvel
rewards:
  - term: body_forward_velocity
    params: {body: torso, axis: 0}
    weight: 1.0
  - term: action_l2
    weight: -1.0e-3
terminations:
  - term: qpos_out_of_range
    params: {joints: [rootz], low: 0.7, high: .inf, inclusive: false}
episode_length: 1000
"""

# (what to replace in HOPPER, by what; the line, key path and value the message must name)
CASES = {
    "nan weight": ("weight: 1.0", "weight: .nan", 15, "rewards[0].weight", "NaN"),
    "inf weight": ("weight: -1.0e-3", "weight: -.inf", 17, "rewards[1].weight", "-inf"),
    "nan term parameter": ("low: 0.7", "low: .nan", 20, "terminations[0].params.low", "NaN"),
    "solver typo": ("solver: Newton", "solver: Newtn", 7, "simulation.solver", "'Newtn'"),
    "precision": ("solver: Newton", "precision: float16", 7, "simulation.precision", "'float16'"),
    "frame skip type": ("frame_skip: 4", "frame_skip: four", 6, "simulation.frame_skip", "'four'"),
    "term parameter type": ("axis: 0", "axis: x", 14, "rewards[0].params.axis", "'x'"),
    "unknown simulation key": ("  frame_skip: 4", "  frame_skip: 4\n  frameskip: 3", 7, "simulation.frameskip",
                               "'frameskip'"),
    "unknown robot key": ("  asset: gymnasium", "  assett: gymnasium", 4, "robot.assett", "'assett'"),
    "unknown key in a term": ("  - term: qvel", "  - term: qvel\n    weight: 2", 12, "observations[1].weight",
                              "'weight'"),
    "unknown term": ("term: qvel", "term: qvell", 11, "observations[1].term", "'qvell'"),
    "unknown term parameter": ("params: {start: 1}", "params: {strat: 1}", 10, "observations[0].params.strat",
                               "'strat'"),
    "zero frame skip": ("frame_skip: 4", "frame_skip: 0", 6, "simulation.frame_skip", "got 0"),
    "negative frame skip": ("frame_skip: 4", "frame_skip: -1", 6, "simulation.frame_skip", "got -1"),
    "fractional frame skip": ("frame_skip: 4", "frame_skip: 2.5", 6, "simulation.frame_skip", "2.5"),
    "nan timestep": ("  frame_skip: 4", "  frame_skip: 4\n  timestep: .nan", 7, "simulation.timestep", "NaN"),
    "infinite timestep": ("  frame_skip: 4", "  frame_skip: 4\n  timestep: .inf", 7, "simulation.timestep",
                          "value is inf"),
    "infinite observation clip": ("  - term: qvel", "  - term: qvel\n    clip: [-.inf, 10.0]", 12,
                                  "observations[1].clip[0]", "value is -inf"),
    "negative timestep": ("  frame_skip: 4", "  frame_skip: 4\n  timestep: -0.01", 7, "simulation.timestep",
                          "-0.01"),
    "zero solver iterations": ("  frame_skip: 4", "  frame_skip: 4\n  solver_iterations: 0", 7,
                               "simulation.solver_iterations", "got 0"),
    "integrator typo": ("solver: Newton", "integrator: RK5", 7, "simulation.integrator", "'RK5'"),
    "cone": ("solver: Newton", "cone: round", 7, "simulation.cone", "'round'"),
    "episode length text": ("episode_length: 1000", "episode_length: long", 21, "episode_length", "'long'"),
    "negative episode length": ("episode_length: 1000", "episode_length: -5", 21, "episode_length", "-5"),
    "infinite episode length": ("episode_length: 1000", "episode_length: .inf", 21, "episode_length", "inf"),
    "id pattern": ("id: TaiGym/MyHopper-v0", "id: MyHopper", 2, "id", "'MyHopper'"),
    "weight text": ("weight: 1.0", "weight: big", 15, "rewards[0].weight", "'big'"),
    "nan observation parameter": ("params: {start: 1}", "params: {start: .nan}", 10,
                                  "observations[0].params.start", "NaN"),
    "nan observation noise": ("  - term: qvel", "  - term: qvel\n    noise: .nan", 12, "observations[1].noise",
                              "NaN"),
    "boolean parameter": ("inclusive: false", "inclusive: maybe", 20, "terminations[0].params.inclusive",
                          "'maybe'"),
    "list parameter": ("joints: [rootz]", "joints: rootz", 20, "terminations[0].params.joints", "'rootz'"),
    "missing parent": ("extends: _gymnasium_v5.yaml", "extends: _gym.yaml", 1, "extends", "'_gym.yaml'"),
    # checked against the robot model, once it is built
    "unknown body": ("body: torso, axis: 0", "body: torsoo, axis: 0", 14, "rewards[0].params.body", "'torsoo'"),
    "unknown joint": ("joints: [rootz]", "joints: [rootzz]", 20, "terminations[0].params.joints", "'rootzz'"),
    "missing asset": ("gymnasium:hopper.xml", "gymnasium:hoper.xml", 4, "robot.asset", "hoper.xml"),
    "axis out of range": ("axis: 0", "axis: 5", 14, "rewards[0].params.axis", "got 5"),
    "bounds reversed": ("high: .inf", "high: 0.1", 20, "terminations[0].params.low", "(0.1)"),
    "empty slice": ("params: {start: 1}", "params: {start: 99}", 10, "observations[0].params.start", "start=99"),
}

# YAML that does not parse: (what to replace, by what; the line, and the plain words that must say why)
SYNTAX = {
    "tab": ("  frame_skip: 4", "\tframe_skip: 4", 6, "a tab character; YAML indents with spaces only"),
    "unclosed brace": ("params: {start: 1}", "params: {start: 1", 10, "the '{' opened on this line is not closed"),
    "unclosed list": ("joints: [rootz]", "joints: [rootz", 20, "the '[' opened on this line is not closed"),
    "deeper indent": ("  solver: Newton", "   solver: Newton", 7, "indented deeper than the key above"),
    "missing colon": ("episode_length: 1000", "episode_length 1000", 21, "a missing ':' after the key?"),
    "unclosed quote": ("id: TaiGym/MyHopper-v0", "id: 'TaiGym/MyHopper-v0", 2, "a quote opened on this line is never"),
    "list item among keys": ("  frame_skip: 4", "  - frame_skip: 4", 7, "does not line up with the keys above"),
    "duplicate key": ("  solver: Newton", "  solver: Newton\n  solver: CG", 8,
                      "duplicate key 'solver' (first defined on line 7)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_value_is_named_with_file_line_key_and_value(tmp_path, case):
    old, new, line, key, value = CASES[case]
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    path = tmp_path / "my_hopper.yaml"
    assert old in HOPPER
    path.write_text(HOPPER.replace(old, new))
    with pytest.raises(ConfigError) as caught:
        Task(load_task_config(path))
    message = str(caught.value)
    assert f"my_hopper.yaml, line {line}" in message
    assert f"key '{key}'" in message
    assert value in message


def test_at_least_thirty_bad_values_are_covered():
    assert len(CASES) + len(SYNTAX) >= 30


@pytest.mark.parametrize("case", sorted(SYNTAX))
def test_yaml_syntax_error_says_in_plain_words_what_is_wrong_at_its_line(tmp_path, case):
    old, new, line, words = SYNTAX[case]
    path = tmp_path / "my_hopper.yaml"
    assert old in HOPPER
    path.write_text(HOPPER.replace(old, new))
    with pytest.raises(ConfigError) as caught:
        load_task_config(path)
    message = str(caught.value)
    assert f"my_hopper.yaml, line {line}: " in message
    assert words in message


def test_enum_typo_suggests_the_nearest_value(tmp_path):
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    path = tmp_path / "my_hopper.yaml"
    path.write_text(HOPPER.replace("solver: Newton", "solver: Newtn"))
    with pytest.raises(ConfigError, match=r"'Newtn' is not one of 'PGS', 'CG', 'Newton'; did you mean 'Newton'\?"):
        load_task_config(path)


def test_the_unmodified_file_loads(tmp_path):
    # an infinite bound of a termination term stays valid: a one-sided range
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    path = tmp_path / "my_hopper.yaml"
    path.write_text(HOPPER)
    assert load_task_config(path).id == "TaiGym/MyHopper-v0"


# a training config: (what to replace in the shipped InvertedPendulum PPO config, by what; line, key, value)
TRAIN_CASES = {
    "nan learning rate": ("learning_rate: 1.0e-3", "learning_rate: .nan", 9, "hyperparameters.learning_rate", "NaN"),
    "infinite gamma": ("gamma: 0.99", "gamma: .inf", 10, "hyperparameters.gamma", "inf"),
    "nan in a list": ("net_arch: [64, 64]", "net_arch: [64, .nan]", 15, "policy_kwargs.net_arch[1]", "NaN"),
    "negative budget": ("total_timesteps: 100000", "total_timesteps: -5", 3, "total_timesteps", "got -5"),
    "hyperparameter typo": ("n_epochs: 10", "n_epoch: 10", 8, "hyperparameters.n_epoch", "'n_epoch'"),
    "policy keyword typo": ("net_arch: [64, 64]", "net_arc: [64, 64]", 15, "policy_kwargs.net_arc", "'net_arc'"),
    "unknown key": ("eval_episodes: 10", "eval_episode: 10", 17, "eval_episode", "'eval_episode'"),
    "number as text": ("solved_return: 950", "solved_return: high", 18, "solved_return", "'high'"),
}


@pytest.mark.parametrize("case", sorted(TRAIN_CASES))
def test_bad_training_config_value_is_named_with_file_line_key_and_value(tmp_path, case):
    from taigym.scripts.train import TrainConfigError, load_config

    old, new, line, key, value = TRAIN_CASES[case]
    shipped = (config_dir() / "train" / "inverted_pendulum_ppo.yaml").read_text()
    assert old in shipped
    path = tmp_path / "my_ppo.yaml"
    path.write_text(shipped.replace(old, new))
    with pytest.raises(TrainConfigError) as caught:
        load_config("TaiGym/InvertedPendulum-v0", "PPO", config_path=path)
    message = str(caught.value)
    assert f"my_ppo.yaml, line {line}: key '{key}'" in message
    assert value in message
