"""Shared fixtures: where gymnasium's MuJoCo models live and which device tests run on.

Taichi runs one backend per process, so the suite runs on one device, chosen by
TAIGYM_TEST_DEVICE (default cpu); tests/test_cuda.py reruns the physics tests on CUDA in a
subprocess where an NVIDIA GPU exists.

``mujoco`` is a dev dependency and the oracle: test modules import it outright, so a test
run without the dev extra fails at once rather than skipping the physics checks.
"""

import ast
import functools
import importlib.util
import os
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, os.path.dirname(__file__))  # tests/oracle.py
# the suite's many models share one kernel per precision and solver, with the common parts
# or, for the few models beyond them, every part (physics/features.py), and one-env Worlds share the batched kernels, so the suite compiles
# each variant once; tests/test_features.py checks the models' own kernels against it (every
# shipped task's among them) and tests/test_world_api.py the serial kernels
os.environ.setdefault("TAIGYM_KERNELS", "shared")

def user_environment() -> dict:
    """os.environ as a user's process has it: without the suite's TAIGYM_KERNELS=shared, so a
    test's subprocess compiles its model's own kernel (a small task's is a fraction of the
    shared one's compile time; Taichi keeps the suite's kernels only when its process ends)."""
    return {k: v for k, v in os.environ.items() if k != "TAIGYM_KERNELS"}


GYM_MODELS = [
    "ant", "half_cheetah", "hopper", "walker2d_v5", "humanoid", "humanoidstandup",
    "inverted_pendulum", "inverted_double_pendulum", "reacher", "swimmer", "pusher",
]


def gym_asset(name: str) -> str:
    # gymnasium.envs.mujoco imports rendering deps; only its asset folder is needed
    root = importlib.util.find_spec("gymnasium").submodule_search_locations[0]
    return os.path.join(root, "envs", "mujoco", "assets", f"{name}.xml")


def imported_modules(path) -> set[str]:
    """The top-level modules a Python file imports: import statements (absolute ones) and
    ``pytest.importorskip("name")`` calls."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args
              and isinstance(node.args[0], ast.Constant)):
            found.add(node.args[0].value.split(".")[0])
    return found


def pytest_sessionstart(session):
    """Before xdist starts its workers (its own hook runs last): compile the step kernels the
    test modules share once, rather than once in every worker (tests/kernel_prebuild.py).
    Only for a whole-suite run on the CPU: a run narrowed to some tests compiles what they need."""
    config = session.config
    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not isinstance(workers, int) or workers < 2:
        return
    narrowed = config.args_source == pytest.Config.ArgsSource.ARGS or config.option.keyword
    if narrowed or config.option.collectonly or os.environ.get("TAIGYM_TEST_DEVICE", "cpu") != "cpu":
        return
    import kernel_prebuild

    kernel_prebuild.prebuild(workers, dict(os.environ))


@pytest.fixture(autouse=True)
def settings_follow_the_environment():
    """The engine reads its TAIGYM_* switches once (physics/settings.py); a test that sets
    one calls settings.reload(), and after it (monkeypatch, set up later, has put the
    environment back by then) they are read again for the next test."""
    yield
    from taigym.physics import settings  # here: importing taigym reads them

    settings.reload()


@pytest.fixture(scope="session")
def device() -> str:
    return os.environ.get("TAIGYM_TEST_DEVICE", "cpu")


@functools.cache
def missing_task_packages() -> dict[str, str]:
    """Shipped task files whose robot a package not installed here ships (mjlab, which
    scripts/test.sh installs apart), by file name and id: the reason to skip them."""
    from taigym.tasks.loader import CONFIG_DIR
    from taigym.tasks.robot import INSTALL_HINTS

    missing = {}
    for path in sorted((CONFIG_DIR / "tasks").glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        package, sep, _ = str((data.get("robot") or {}).get("asset", "")).partition(":")
        if sep and importlib.util.find_spec(package) is None:
            hint = INSTALL_HINTS.get(package, f"pip install {package}")
            task_id = str(data.get("id"))
            short = task_id.split("/")[-1].rsplit("-v", 1)[0]  # G1Flat for TaiGym/G1Flat-v0
            for key in (path.name, task_id, short):
                missing[key] = f"{path.name}: {package} is not installed ({hint})"
    return missing


# the shipped tasks on mjlab's robots (and their robot files), each a minute or more to check
# on 2 cores: the tests that go through every shipped task check them in the slow tier, and
# tests/test_robot_tasks.py checks Go1's and YAM's in the quick set (G1's, 35 meshes and 29
# joints, in the slow tier)
SLOW_TASKS = {"g1_flat.yaml", "TaiGym/G1Flat-v0", "G1Flat", "g1.xml", "go1_flat.yaml", "TaiGym/Go1Flat-v0", "Go1Flat",
              "go1.xml", "yam_reach.yaml", "TaiGym/YamReach-v0", "YamReach", "yam.xml"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(items):
    """A test parametrized by such a task file (its name, path, id or the id's name) is
    skipped, not failed; one parametrized by a SLOW_TASKS task is marked slow."""
    missing = missing_task_packages()
    for item in items:
        own_marks = item.path.name == "test_robot_tasks.py"
        for value in getattr(getattr(item, "callspec", None), "params", {}).values():
            key = value.name if isinstance(value, Path) else value
            if isinstance(key, str) and key in missing:
                item.add_marker(pytest.mark.skip(reason=missing[key]))
            if isinstance(key, str) and key in SLOW_TASKS and not own_marks:
                item.add_marker(pytest.mark.slow)
