"""The engine's TAIGYM_* switches: one object, read from the environment in one place
(physics/settings.py)."""

import re
from pathlib import Path

import pytest
from taigym.physics import settings
from taigym.physics.settings import Settings, SettingsError

from taigym import physics

REPO = Path(__file__).resolve().parent.parent

DEFAULTS = dict(taichi=None, debug=False, ti_init={}, optimize=None, launch="reuse", scalar_loops=True,
                expand_access=True, layout="env_major", all_features=False, outline=True, lanes=None, serial=True,
                machine_code=True, schedule="fused")

# each variable, a value it takes and the field that value gives
PARSED = [
    ("TAIGYM_TAICHI", "quadrants", "taichi", "quadrants"),
    ("TAIGYM_DEBUG", "1", "debug", True),
    ("TAIGYM_DEBUG", "0", "debug", False),
    ("TAIGYM_TI_INIT", '{"default_gpu_block_dim": 32}', "ti_init", {"default_gpu_block_dim": 32}),
    ("TAIGYM_OPTIMIZE", " 1 ", "optimize", True),
    ("TAIGYM_OPTIMIZE", "0", "optimize", False),
    ("TAIGYM_LAUNCH", "plain", "launch", "plain"),
    ("TAIGYM_SCALAR_LOOPS", "0", "scalar_loops", False),
    ("TAIGYM_EXPAND_ACCESS", "0", "expand_access", False),
    ("TAIGYM_LAYOUT", "interleaved", "layout", "interleaved"),
    ("TAIGYM_FEATURES", "all", "all_features", True),
    ("TAIGYM_FEATURES", "model", "all_features", False),
    ("TAIGYM_OUTLINE", "0", "outline", False),
    ("TAIGYM_LANES", "strided", "lanes", "strided"),
    ("TAIGYM_SERIAL", "0", "serial", False),
    ("TAIGYM_MACHINE_CODE", "0", "machine_code", False),
    ("TAIGYM_SCHEDULE", "staged", "schedule", "staged"),
]

REFUSED = [("TAIGYM_TAICHI", "taichi2"), ("TAIGYM_DEBUG", "yes"), ("TAIGYM_TI_INIT", "[1]"),
           ("TAIGYM_TI_INIT", "{"), ("TAIGYM_OPTIMIZE", "2"), ("TAIGYM_LAUNCH", "fast"),
           ("TAIGYM_SCALAR_LOOPS", "off"), ("TAIGYM_EXPAND_ACCESS", "true"), ("TAIGYM_LAYOUT", "striped"),
           ("TAIGYM_FEATURES", "some"), ("TAIGYM_OUTLINE", "no"), ("TAIGYM_LANES", "random"),
           ("TAIGYM_MACHINE_CODE", "yes"), ("TAIGYM_SERIAL", "-1"), ("TAIGYM_SCHEDULE", "tiled")]


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


def test_optimize_by_device_where_unset():
    assert Settings().optimize_on("cuda") and not Settings().optimize_on("cpu")
    assert Settings(optimize=False).optimize_on("cuda") is False
    assert Settings(optimize=True).optimize_on("cpu") is True


def test_settings_are_read_once_and_reread_on_reload(monkeypatch):
    before = settings.current()
    assert settings.current() is before
    monkeypatch.setenv("TAIGYM_OUTLINE", "0" if before.outline else "1")
    assert settings.current() is before  # the environment is not read again by itself
    assert settings.reload().outline is not before.outline
    assert settings.current().outline is not before.outline


def test_settings_are_frozen_and_hashable():
    with pytest.raises(AttributeError):
        Settings().launch = "plain"
    hash(Settings.from_env({"TAIGYM_TI_INIT": '{"gpu_max_reg": 64}'}))


def test_only_the_settings_module_reads_the_environment():
    readers = sorted(str(p.relative_to(REPO)) for p in (REPO / "physics").rglob("*.py")
                     if re.search(r"os\.environ|os\.getenv|getenv\(", p.read_text()))
    assert readers == ["physics/settings.py"]
