"""A user's file that is not clean UTF-8 YAML (a Latin-1 byte, a control character, a folder
for a file) is refused in one line naming the file, the line and the byte, whichever kind
of file it is: task config, its parent, training config, train-ppo config, protocol, notes."""

import shutil

import pytest
from taigym.scripts.config_files import ConfigFileError, read_mapping
from taigym.tasks.compose import apply_overrides
from taigym.tasks.errors import ConfigError
from taigym.tasks.loader import config_dir, load_task_config

# a Latin-1 "café" in a comment: one byte 0xe9 where UTF-8 needs two
LATIN1_COMMENT = b"# caf\xe9\n"


def _shipped(kind: str, name: str) -> bytes:
    return (config_dir() / kind / name).read_bytes()


def _with_line(text: bytes, line: int, insert: bytes) -> bytes:
    """``text`` with ``insert`` as its line number ``line`` (1-based)."""
    lines = text.splitlines(keepends=True)
    return b"".join([*lines[: line - 1], insert, *lines[line - 1 :]])


def _one_line(error) -> str:
    message = str(error)
    assert "\n" not in message, message
    return message


@pytest.fixture
def task_dir(tmp_path):
    shutil.copy(config_dir() / "tasks" / "_gymnasium_v5.yaml", tmp_path)
    return tmp_path


def test_a_task_file_byte_that_is_not_utf8_is_named_with_file_line_and_byte(task_dir):
    path = task_dir / "my_pendulum.yaml"
    path.write_bytes(_with_line(_shipped("tasks", "inverted_pendulum.yaml"), 4, b"  " + LATIN1_COMMENT))
    with pytest.raises(ConfigError) as caught:
        load_task_config(path)
    message = _one_line(caught.value)
    assert "my_pendulum.yaml, line 4: byte 0xe9 at column 8 is not UTF-8" in message
    assert caught.value.line == 4


def test_windows_line_endings_count_lines_alike(task_dir):
    path = task_dir / "my_pendulum.yaml"
    text = _shipped("tasks", "inverted_pendulum.yaml").replace(b"\n", b"\r\n")
    path.write_bytes(_with_line(text, 6, b"# \x93quoted\x94\r\n"))  # Windows-1252 quotes
    with pytest.raises(ConfigError, match=r"my_pendulum\.yaml, line 6: byte 0x93 at column 3 is not UTF-8"):
        load_task_config(path)


def test_a_parent_file_byte_that_is_not_utf8_names_the_parent(tmp_path):
    parent = tmp_path / "_my_base.yaml"
    parent.write_bytes(_with_line(_shipped("tasks", "_gymnasium_v5.yaml"), 2, LATIN1_COMMENT))
    child = tmp_path / "my_pendulum.yaml"
    child.write_bytes(_shipped("tasks", "inverted_pendulum.yaml").replace(b"_gymnasium_v5.yaml", b"_my_base.yaml"))
    with pytest.raises(ConfigError) as caught:
        load_task_config(child)
    assert "_my_base.yaml, line 2: byte 0xe9 at column 6 is not UTF-8" in _one_line(caught.value)


# a control character pasted into a value: (the bytes, its line, the character as named)
CONTROL = {
    "NUL": (b"frame_skip: 2", b"frame_skip:\x00 2", "'\\x00' (U+0000) at column"),
    "escape": (b"frame_skip: 2", b"frame_skip: 2\x1b[0m", "'\\x1b' (U+001B) at column"),
    "delete": (b"id: TaiGym/InvertedPendulum-v0", b"id: TaiGym/Inverted\x7fPendulum-v0", "(U+007F) at column 20"),
    "form feed": (b"frame_skip: 2", b"frame_skip: 2\x0c", "(U+000C) at column"),
    "C1 control": (b"frame_skip: 2", "frame_skip: 2\x9b".encode(), "(U+009B) at column"),
}


@pytest.mark.parametrize("case", sorted(CONTROL))
def test_a_control_character_is_named_with_file_line_and_character(task_dir, case):
    old, new, words = CONTROL[case]
    text = _shipped("tasks", "inverted_pendulum.yaml")
    line = text[: text.index(old)].count(b"\n") + 1
    path = task_dir / "my_pendulum.yaml"
    path.write_bytes(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        load_task_config(path)
    message = _one_line(caught.value)
    assert f"my_pendulum.yaml, line {line}: control character " in message
    assert words in message


def test_a_control_character_in_an_override_names_the_command_line():
    with pytest.raises(ConfigError, match=r"<command line>, line 1: control character '\\x1b'"):
        apply_overrides({}, ["simulation.solver=Newton\x1b"])


def test_a_byte_order_mark_and_tabs_in_text_are_read(task_dir):
    path = task_dir / "my_pendulum.yaml"
    text = _shipped("tasks", "inverted_pendulum.yaml")
    path.write_bytes(b"\xef\xbb\xbf" + _with_line(text, 2, "# café\tcrème\n".encode()))
    assert load_task_config(path).id == "TaiGym/InvertedPendulum-v0"


def test_a_training_config_byte_that_is_not_utf8_is_named_with_file_and_line(tmp_path):
    from taigym.scripts.train import TrainConfigError, load_config

    path = tmp_path / "my_ppo.yaml"
    path.write_bytes(_with_line(_shipped("train", "inverted_pendulum_ppo.yaml"), 3, LATIN1_COMMENT))
    with pytest.raises(TrainConfigError) as caught:
        load_config("TaiGym/InvertedPendulum-v0", "PPO", config_path=path)
    assert "my_ppo.yaml, line 3: byte 0xe9 at column 6 is not UTF-8" in _one_line(caught.value)


def test_a_train_ppo_config_is_read_like_the_others(tmp_path):
    from taigym.scripts import train_ppo

    path = tmp_path / "my_ppo.yaml"
    path.write_bytes(b"num_envs: 4\nseed: 1\x1b\n")
    with pytest.raises(ConfigFileError, match=r"my_ppo\.yaml, line 2: control character '\\x1b'"):
        train_ppo.parse_args(["--config", str(path)])
    path.write_text("num_envs: [4\n")
    with pytest.raises(ConfigFileError, match=r"my_ppo\.yaml, line 1: invalid YAML: the '\[' opened"):
        train_ppo.parse_args(["--config", str(path)])


def test_a_protocol_byte_that_is_not_utf8_is_named_with_file_and_line(tmp_path):
    from taigym.scripts.leaderboard import load_protocol

    path = tmp_path / "my_protocol.yaml"
    path.write_bytes(_with_line(_shipped("leaderboard", "v1.yaml"), 2, LATIN1_COMMENT))
    with pytest.raises(ConfigFileError) as caught:
        load_protocol(path)
    assert "my_protocol.yaml, line 2: byte 0xe9 at column 6 is not UTF-8" in _one_line(caught.value)


def test_leaderboard_notes_byte_that_is_not_utf8_is_named_with_file_and_line(tmp_path):
    from taigym.scripts.leaderboard import load_protocol, render

    protocol = load_protocol(config_dir() / "leaderboard" / "v1.yaml")
    (tmp_path / "notes.md").write_bytes(b"# Notes\n\nRun on a caf\xe9 laptop.\n")
    with pytest.raises(ConfigFileError, match=r"notes\.md, line 3: byte 0xe9 at column 13 is not UTF-8"):
        render(protocol, [], tmp_path / "cells", tmp_path)
    assert not (tmp_path / "leaderboard.md").exists()


@pytest.mark.parametrize("make", ["missing", "folder"])
def test_a_file_that_cannot_be_read_is_one_line(tmp_path, make):
    path = tmp_path / "my_protocol.yaml"
    if make == "folder":
        path.mkdir()
    words = {"missing": "file not found", "folder": "is a folder, not a file"}[make]
    with pytest.raises(ConfigFileError, match=f"my_protocol.yaml: {words}$"):
        read_mapping(path)


def test_fidelity_reads_a_model_in_the_encoding_its_xml_declaration_names(tmp_path):
    from taigym.scripts.fidelity import load_both

    path = tmp_path / "latin1_robot.xml"
    path.write_bytes(b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<mujoco>\n<!-- caf\xe9 -->\n<worldbody>'
                     b'<body name="b\xe9"><freejoint/><geom size="0.1"/></body></worldbody></mujoco>\n')
    model, mjm, _ = load_both(path)
    assert mjm.body(1).name == "bé" and model.nbody == 2
