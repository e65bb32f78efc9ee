"""Bad values in a task config are refused with the file, the line, the key path and the value."""

import shutil

import pytest

from taigym.tasks.errors import ConfigError
from taigym.tasks.loader import config_dir, load_task_config

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
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_value_is_named_with_file_line_key_and_value(tmp_path, case):
    old, new, line, key, value = CASES[case]
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    path = tmp_path / "my_hopper.yaml"
    assert old in HOPPER
    path.write_text(HOPPER.replace(old, new))
    with pytest.raises(ConfigError) as caught:
        load_task_config(path)
    message = str(caught.value)
    assert f"my_hopper.yaml, line {line}" in message
    assert f"key '{key}'" in message
    assert value in message


def test_enum_typo_suggests_the_nearest_value(tmp_path):
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    path = tmp_path / "my_hopper.yaml"
    path.write_text(HOPPER.replace("solver: Newton", "solver: Newtn"))
    with pytest.raises(ConfigError, match=r"'Newtn' is not one of 'PGS', 'CG', 'Newton'; did you mean 'Newton'\?"):
        load_task_config(path)


def test_the_unmodified_file_loads(tmp_path):
    # an infinite bound stays valid: only weights must be finite
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    path = tmp_path / "my_hopper.yaml"
    path.write_text(HOPPER)
    assert load_task_config(path).id == "TaiGym/MyHopper-v0"
