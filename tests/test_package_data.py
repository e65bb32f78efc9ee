"""The wheel holds one top-level package, taigym, with configs/ as its package data: an
installed (non-editable) taigym finds its task configs and assets. Building a wheel is slow, so setuptools' build_py lays out what the wheel
would hold (the packages and their data files) in a temporary folder, and a fresh
interpreter that sees only that folder resolves configs through it."""

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_SUFFIXES = {".py", ".pyc"}  # anything else under configs/ is data the wheel must carry


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if importlib.util.find_spec("setuptools") is None:  # imported only by the child: quadrants imports
        pytest.skip("setuptools is not installed")       # distutils, which setuptools refuses to follow
    lib = tmp_path_factory.mktemp("site-packages")
    build = tmp_path_factory.mktemp("build")
    script = ("from setuptools import setup; "
              f"setup(script_args=['-q', 'build', '--build-base', {str(build)!r}, 'build_py', '--build-lib', {str(lib)!r}])")
    subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, capture_output=True)
    return lib


def test_every_config_and_asset_is_package_data(installed):
    shipped = {p.relative_to(REPO / "configs") for p in (REPO / "configs").rglob("*")
               if p.is_file() and p.suffix not in DATA_SUFFIXES and "__pycache__" not in p.parts}
    packaged = {p.relative_to(installed / "taigym" / "configs")
                for p in (installed / "taigym" / "configs").rglob("*") if p.is_file()}
    assert shipped, "no configs found in the checkout"
    assert shipped <= packaged, f"left out of the wheel: {sorted(map(str, shipped - packaged))}"


def test_installed_lookup_resolves_through_the_package(installed, tmp_path):
    probe = textwrap.dedent("""\
        import importlib.resources, json
        from taigym.tasks.loader import config_dir, load_task_config, task_files
        from taigym.tasks.robot import resolve_asset
        cfg = load_task_config("TaiGym/SumoAnts-v0")
        print(json.dumps({"config_dir": str(config_dir()),
                          "resources": str(importlib.resources.files("taigym.configs")),
                          "tasks": [p.name for p in task_files()],
                          "asset": str(resolve_asset(cfg))}))
    """)
    # run where the checkout is not on sys.path: only the laid-out packages are importable
    env = {"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True,
                         text=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(found["config_dir"]) == Path(found["resources"]) == installed / "taigym" / "configs"
    assert {"sumo_ants.yaml", "box_push.yaml", "ant.yaml"} <= set(found["tasks"])
    assert Path(found["asset"]) == installed / "taigym" / "configs" / "assets" / "sumo_ants.xml"


def test_one_top_level_package(installed):
    assert sorted(p.name for p in installed.iterdir()) == ["taigym"]


def test_import_taigym_registers_the_tasks_from_anywhere(installed, tmp_path):
    probe = textwrap.dedent("""\
        import importlib.util
        import gymnasium as gym
        import taigym
        env = gym.make("TaiGym/Ant-v0")
        print(sorted(name for name in ("physics", "envs", "tasks", "scripts", "configs")
                     if importlib.util.find_spec(name) is not None), env.observation_space.shape)
    """)
    env = {"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True,
                         text=True)
    assert out.stdout.strip().splitlines()[-1] == "[] (105,)"
