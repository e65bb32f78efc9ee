"""Bounded fuzzing of what users write: mutated task files and generated MJCF models.

Each input either works or is refused with one of the project's documented errors
(ConfigError naming the file, ModelError, WorldError); never a KeyError, IndexError,
OverflowError, RecursionError, LinAlgError, UnicodeDecodeError or an error from inside
Taichi or numpy. Hypothesis runs derandomized (a fixed sequence of examples) and bounded,
so the test is deterministic and takes well under a minute.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from taigym.physics.errors import ModelError, WorldError
from taigym.tasks.errors import ConfigError
from taigym.tasks.loader import config_dir, load_task_config, task_files
from taigym.tasks.task import Task

from taigym import physics

FUZZ = settings(derandomize=True, max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EDGE_NUMBERS = ["0", "-1", "1", "3", "2147483647", "2147483648", "4294967300", "9223372036854775808", "1e308",
                "-1e308", "1e-320", "-0.0", ".nan", ".inf", "-.inf", "0.5", "65536", "100000000"]
SINGLE_AGENT = [p for p in task_files() if p.name in ("hopper.yaml", "reacher.yaml", "ant.yaml",
                                                       "inverted_pendulum.yaml", "quadruped_flat.yaml")]


def _mutate(text: str, data) -> bytes:
    """One edit a user could make by mistake: a number changed to an edge value, a stray
    byte, a line dropped or repeated, a key misspelt."""
    lines = text.splitlines(keepends=True)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    kind = data.draw(st.sampled_from(["number", "byte", "drop", "repeat", "key"]), label="kind")
    line = lines[i]
    if kind == "number":
        tokens = [t for t in line.replace(",", " ").replace("[", " ").replace("]", " ").split()
                  if t.lstrip("-").replace(".", "", 1).replace("e", "", 1).isdigit()]
        if tokens:
            line = line.replace(data.draw(st.sampled_from(tokens)), data.draw(st.sampled_from(EDGE_NUMBERS)), 1)
    elif kind == "byte":
        at = data.draw(st.integers(0, len(line)))
        byte = data.draw(st.sampled_from([0x00, 0x07, 0x1B, 0x7F, 0x85, 0xE9, 0xFF]))
        raw = line.encode()
        return b"".join(s.encode() for s in lines[:i]) + raw[:at] + bytes([byte]) + raw[at:] + \
            b"".join(s.encode() for s in lines[i + 1:])
    elif kind == "drop":
        line = ""
    elif kind == "repeat":
        line = line + line
    elif ":" in line:
        key, rest = line.split(":", 1)
        if key.strip():
            line = key[:-1] + ":" + rest
    return "".join(lines[:i] + [line] + lines[i + 1:]).encode()


@FUZZ
@given(data=st.data())
def test_mutated_task_files_work_or_are_refused_naming_the_file(tmp_path_factory, data):
    source = data.draw(st.sampled_from(SINGLE_AGENT), label="task")
    folder = tmp_path_factory.mktemp("fuzz")
    for base in config_dir().joinpath("tasks").glob("_*.yaml"):
        shutil.copy(base, folder)
    path = folder / f"my_{source.name}"
    path.write_bytes(_mutate(source.read_text(), data))
    try:
        Task(load_task_config(path))
    except ConfigError as e:
        message = str(e)
        assert path.name in message or "_gymnasium_v5.yaml" in message, message
        assert "\n" not in message.strip() or message.count("\n") < 4, message
    except (ModelError, WorldError):
        pass


# --- generated MJCF models ---------------------------------------------------------------------
SIZES = st.sampled_from(["0.05", "0.1 0.02", "0.1 0.1 0.1", "0", "-0.1", "1e9", "1e-9"])
INTS = st.sampled_from(["0", "1", "3", "2147483647", "2147483648", "1099511627776", "-1"])
AXES = st.sampled_from(["1 0 0", "0 1 0", "0 0 1", "1 1 0", "0 0 0"])


@st.composite
def bodies(draw, depth: int):
    joint = draw(st.sampled_from(["hinge", "slide", "ball", None]))
    parts = [f'<geom type="{draw(st.sampled_from(["sphere", "capsule", "box", "cylinder"]))}" '
             f'size="{draw(SIZES)}" contype="{draw(INTS)}" conaffinity="{draw(INTS)}" '
             f'mass="{draw(st.sampled_from(["1", "0.001", "1e9", "0"]))}"/>']
    for _ in range(draw(st.integers(0, 2))):
        if joint is not None:
            parts.append(f'<joint type="{joint}" axis="{draw(AXES)}"'
                         + (' limited="true" range="-1 1"' if draw(st.booleans()) and joint != "ball" else "")
                         + "/>")
    if depth > 0:
        parts += [draw(bodies(depth - 1)) for _ in range(draw(st.integers(0, 2)))]
    pos = draw(st.sampled_from(["0 0 0.1", "0 0 0", "0.1 0 0"]))
    return f'<body pos="{pos}">' + "".join(parts) + "</body>"


@st.composite
def models(draw):
    options = f'<option iterations="{draw(INTS)}" timestep="{draw(st.sampled_from(["0.01", "0.002", "1e-9"]))}"/>'
    floor = '<geom type="plane" size="1 1 0.1"/>' if draw(st.booleans()) else ""
    free = '<freejoint/>' if draw(st.booleans()) else ""
    root = draw(bodies(2)).replace("<body pos", f"<body pos", 1)
    if free:
        root = root.replace(">", ">" + free, 1)
    return f"<mujoco>{options}<worldbody>{floor}{root}</worldbody></mujoco>"


@FUZZ
@given(xml=models())
def test_generated_models_load_or_are_refused_with_a_model_error(tmp_path_factory, xml):
    path = tmp_path_factory.mktemp("mjcf") / "model.xml"
    path.write_text(xml)
    try:
        model = physics.load_model(str(path))
    except ModelError as e:
        assert str(e).strip(), xml
        return
    assert model.nbody >= 2
    assert np.all(np.isfinite(np.asarray(model.body_mass)))


def test_deep_nesting_is_refused_or_loaded_without_recursion(tmp_path):
    path = tmp_path / "deep.xml"
    depth = 2000
    path.write_text("<mujoco><worldbody>" + '<body><geom size="0.1"/><joint type="hinge"/>' * depth
                    + "</body>" * depth + "</worldbody></mujoco>")
    with pytest.raises(ModelError, match="deep"):
        physics.load_model(str(path))


def test_the_fuzzed_tasks_are_real_tasks():
    assert len(SINGLE_AGENT) == 5 and all(Path(p).is_file() for p in SINGLE_AGENT)
