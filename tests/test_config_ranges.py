"""Every integer of a task config has the range the engine can honour, checked when the
config is read, and a value outside it is refused with the file, line, key, value and range."""

import pytest
from taigym.tasks import ConfigError, Task, load_task_config, registry
from taigym.tasks.loader import TASK_DIR
from taigym.tasks.ranges import INT32_MAX
from taigym.tasks.schema import TaskConfig

INT32_RANGE = "1..2,147,483,647"


def edited(tmp_path, task, old, new):
    """A copy of shipped ``task`` with ``old`` replaced by ``new``; (path, line of the change)."""
    text = (TASK_DIR / task).read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {task}"
    path = tmp_path / task
    path.write_text(text.replace(old, new))
    return path, text[: text.index(old)].count("\n") + 1


def refusal(path, build=False) -> str:
    with pytest.raises(ConfigError) as caught:
        Task(load_task_config(path)) if build else load_task_config(path)
    return str(caught.value)


def assert_names(message, path, line, key, value, span):
    assert "\n" not in message
    assert f"{path}, line {line}: key '{key}': " in message, message
    assert f"got {value}" in message, message
    assert span in message, message


# --- the schema: every integer bounded ----------------------------------------------------
def integers(schema, path=()):
    """(path, subschema) of every integer in a JSON schema, $defs included."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
            yield path, schema
        for key, value in schema.items():
            yield from integers(value, (*path, key))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from integers(value, (*path, i))


def field_of(path) -> str:
    """The field an integer belongs to: 'frame_skip', or 'axes[]' for a list's items."""
    at = len(path) - 1 - path[::-1].index("properties")
    return path[at + 1] + ("[]" if "items" in path[at:] else "")


def every_schema():
    yield "task config", TaskConfig.model_json_schema()
    for kind in registry.KINDS:
        for name in registry.names(kind):
            yield f"{kind} term {name!r}", registry.get(kind, name).params_model.model_json_schema()


def test_every_integer_of_the_config_schema_and_of_every_term_has_a_32_bit_range():
    found, unbounded = [], []
    for owner, schema in every_schema():
        for path, sub in integers(schema):
            found.append(field_of(path))
            high = sub.get("maximum", sub.get("exclusiveMaximum"))
            low = sub.get("minimum", sub.get("exclusiveMinimum"))
            if high is None or low is None or high > INT32_MAX or low < -INT32_MAX:
                unbounded.append(f"{owner}: {'.'.join(map(str, path))} ({low}..{high})")
    assert not unbounded, "integers without a range a kernel can take:\n" + "\n".join(unbounded)
    # the walk reaches the integers it must: in the task's models, in term parameters, in lists
    assert {"frame_skip", "solver_iterations", "episode_length", "width", "height", "start", "stop", "axis",
            "coordinate", "axes[]"} <= set(found)


def test_counts_and_axes_that_make_no_sense_negative_start_at_zero_or_one():
    lows = {}
    for _, schema in every_schema():
        for path, sub in integers(schema):
            lows.setdefault(field_of(path), set()).add(sub.get("minimum"))
    assert lows["frame_skip"] == lows["solver_iterations"] == lows["episode_length"] == {1}
    assert lows["width"] == lows["height"] == {1}
    assert lows["axes[]"] == lows["axis"] == lows["coordinate"] == {0}
    assert lows["start"] == lows["stop"] == {-INT32_MAX}  # negative counts from the end, as in Python


# --- observation axes ---------------------------------------------------------------------
@pytest.mark.parametrize("axes, value", [
    ("[0, 3]", "3"),  # a one-based slip: an IndexError at the first reset before
    (f"[0, {2**63}]", str(2**63)),  # an OverflowError before
    ("[0, -1]", "-1"),  # numpy would have read z without a word
])
def test_an_observation_axis_past_z_is_refused_when_the_config_is_read(tmp_path, axes, value):
    path, line = edited(tmp_path, "reacher.yaml", "axes: [0, 1]", f"axes: {axes}")
    message = refusal(path)
    assert_names(message, path, line, "observations[4].params.axes[1]", value, "an integer in 0..2")


@pytest.mark.parametrize("term", ["body_position", "body_relative_velocity"])
def test_every_term_taking_axes_checks_them(tmp_path, term):
    new = "term: body_position\n    params: {body: fingertip, axes: [2, 3]}" if term == "body_position" else \
        "term: body_relative_velocity\n    params: {body: fingertip, relative_to: target, axes: [2, 3]}"
    path, line = edited(tmp_path, "reacher.yaml",
                        "term: body_offset\n    params: {body: fingertip, relative_to: target, axes: [0, 1]}", new)
    assert_names(refusal(path), path, line + 1, "observations[4].params.axes[1]", "3", "0..2")


def test_empty_axes_are_refused(tmp_path):
    path, line = edited(tmp_path, "reacher.yaml", "axes: [0, 1]", "axes: []")
    assert f"{path}, line {line}: key 'observations[4].params.axes': " in refusal(path)


def test_a_velocity_axis_past_z_is_refused(tmp_path):
    path, line = edited(tmp_path, "ant.yaml", "params: {body: torso, axis: 0}", "params: {body: torso, axis: 3}")
    assert_names(refusal(path), path, line, "rewards[0].params.axis", "3", "0..2")


# --- indices into the robot, checked against its sizes -----------------------------------------
@pytest.mark.parametrize("old, new, key, value, span", [
    ("params: {start: 2}  # all but", "params: {start: 2, stop: 16}  # all but", "observations[0].params.stop",
     "stop=16", "-15..15 (the robot has 15 qpos entries)"),
    ("params: {start: 1}  # every", "params: {start: -15}  # every", "observations[2].params.start", "start=-15",
     "-14..13 (the robot has 14 bodies)"),
    ("params: {start: 2, stop: 3, low", "params: {start: 2, stop: 2147483647, low",
     "terminations[1].params.stop", "stop=2147483647", "-15..15"),
])
def test_a_slice_past_the_robot_is_refused_rather_than_clipped(tmp_path, old, new, key, value, span):
    path, line = edited(tmp_path, "ant.yaml", old, new)
    message = refusal(path, build=True)
    assert f"{path}, line {line}: key '{key}': " in message, message
    assert value in message and span in message, message


def test_a_slice_bound_past_32_bits_is_refused_when_the_config_is_read(tmp_path):
    path, line = edited(tmp_path, "ant.yaml", "params: {start: 2}  # all but", f"params: {{start: {2**63}}}  # x")
    assert_names(refusal(path), path, line, "observations[0].params.start", str(2**63),
                 "-2,147,483,647..2,147,483,647")


def test_a_forward_coordinate_past_qpos_is_refused(tmp_path):
    path, line = edited(tmp_path, "hopper.yaml", "params: {coordinate: 0}", "params: {coordinate: 6}")
    message = refusal(path, build=True)
    assert f"{path}, line {line}: key 'rewards[0].params.coordinate': " in message, message
    assert "coordinate=6 is outside 0..5" in message


# --- counts that reach a kernel ---------------------------------------------------------------
@pytest.mark.parametrize("value", [
    2**32 + 4,  # stepped exactly as 4 while task.dt said 8.6e6 s
    2**31,  # ran no physics
    2**63,  # a four-line TypeError of Taichi's
])
def test_a_frame_skip_past_32_bits_is_refused(tmp_path, value):
    path, line = edited(tmp_path, "reacher.yaml", "frame_skip: 2", f"frame_skip: {value}")
    message = refusal(path)
    assert_names(message, path, line, "simulation.frame_skip", str(value), INT32_RANGE)
    assert "32-bit" in message  # why


@pytest.mark.parametrize("old, new, key", [
    ("frame_skip: 2", f"frame_skip: 2\n  solver_iterations: {2**31}", "simulation.solver_iterations"),
    ("episode_length: 50", f"episode_length: {2**31}", "episode_length"),
])
def test_other_counts_past_32_bits_are_refused(tmp_path, old, new, key):
    path, line = edited(tmp_path, "reacher.yaml", old, new)
    line += old.count("\n") + new.count("\n")
    assert_names(refusal(path), path, line, key, str(2**31), INT32_RANGE)


def test_an_image_side_the_renderer_cannot_index_is_refused(tmp_path):
    path, line = edited(tmp_path, "reacher.yaml", "episode_length: 50", "episode_length: 50\nrender: {width: 65536}")
    assert_names(refusal(path), path, line + 1, "render.width", "65536", "1..16,384")


def test_the_largest_counts_still_load(tmp_path):
    path, _ = edited(tmp_path, "reacher.yaml", "frame_skip: 2", f"frame_skip: {INT32_MAX}")
    assert load_task_config(path).simulation.frame_skip == INT32_MAX


def test_a_world_refuses_step_counts_and_env_counts_past_32_bits():
    from taigym.physics.errors import WorldError

    from taigym import physics

    model = Task.from_source("TaiGym/InvertedPendulum-v0").model
    with pytest.raises(WorldError, match=r"num_envs must be in 1\.\.2,147,483,647 .*got 9223372036854775808"):
        physics.World(model, num_envs=2**63)
    world = physics.World(model, num_envs=1)
    with pytest.raises(WorldError, match=r"n must be at most 2,147,483,647 .*got 4294967300"):
        world.step(2**32 + 4)
    assert world.time[0] == 0.0
