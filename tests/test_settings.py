"""The engine's TAIGYM_* switches: one object, read from the environment in one place
(physics/settings.py)."""

import re
from pathlib import Path

import pytest
from taigym.physics import settings
from taigym.physics.settings import Settings, SettingsError

from taigym import physics

REPO = Path(__file__).resolve().parent.parent

DEFAULTS = dict(taichi=None, debug=False, schedule=None, solve="thread", layout=None, kernels="own")

# each variable, a value it takes and the field that value gives
PARSED = [
    ("TAIGYM_TAICHI", "quadrants", "taichi", "quadrants"),
    ("TAIGYM_DEBUG", "1", "debug", True),
    ("TAIGYM_DEBUG", "0", "debug", False),
    ("TAIGYM_SCHEDULE", "staged", "schedule", "staged"),
    ("TAIGYM_SOLVE", "group", "solve", "group"),
    ("TAIGYM_LAYOUT", "interleaved", "layout", "interleaved"),
    ("TAIGYM_KERNELS", " shared ", "kernels", "shared"),
    ("TAIGYM_KERNELS", "own", "kernels", "own"),
]

REFUSED = [("TAIGYM_TAICHI", "taichi2"), ("TAIGYM_DEBUG", "yes"), ("TAIGYM_SCHEDULE", "tiled"), ("TAIGYM_SOLVE", "warp"),
           ("TAIGYM_LAYOUT", "striped"), ("TAIGYM_KERNELS", "all")]


def test_an_empty_environment_gives_the_defaults():
    assert {name: getattr(Settings.from_env({}), name) for name in DEFAULTS} == DEFAULTS
    assert Settings.from_env({}) == Settings()
    assert Settings.from_env({name: "" for name in settings.variables().values()}) == Settings()


def test_every_field_has_a_variable_and_a_test():
    assert set(settings.variables()) == set(DEFAULTS)
    assert {env for env, *_ in PARSED} == set(settings.variables().values())
    assert {env for env, _ in REFUSED} == set(settings.variables().values())


@pytest.mark.parametrize("env, text, field, value", PARSED)
def test_each_variable_is_parsed(env, text, field, value):
    assert getattr(Settings.from_env({env: text}), field) == value


@pytest.mark.parametrize("env, text", REFUSED)
def test_a_bad_value_is_refused_with_its_variable(env, text):
    with pytest.raises(SettingsError, match=env) as error:
        Settings.from_env({env: text})
    assert isinstance(error.value, physics.WorldError) and isinstance(error.value, ValueError)


def test_at_most_six_switches_each_documented_for_users():
    assert len(settings.variables()) <= 6
    engine = (REPO / "docs" / "engine.md").read_text()
    section = engine[engine.index("## Switches"):]
    for variable in settings.variables().values():
        assert f"`{variable}" in section, f"docs/engine.md's Switches section does not name {variable}"


def test_settings_are_read_once_and_reread_on_reload(monkeypatch):
    before = settings.current()
    assert settings.current() is before
    monkeypatch.setenv("TAIGYM_SCHEDULE", "fused" if before.schedule == "staged" else "staged")
    assert settings.current() is before  # the environment is not read again by itself
    assert settings.reload().schedule != before.schedule
    assert settings.current().schedule != before.schedule


def test_settings_are_frozen_and_hashable():
    with pytest.raises(AttributeError):
        Settings().schedule = "staged"
    hash(Settings.from_env({"TAIGYM_KERNELS": "shared"}))


def test_only_the_settings_module_reads_the_environment():
    readers = sorted(str(p.relative_to(REPO)) for p in (REPO / "physics").rglob("*.py")
                     if re.search(r"os\.environ|os\.getenv|getenv\(", p.read_text()))
    assert readers == ["physics/settings.py"]
