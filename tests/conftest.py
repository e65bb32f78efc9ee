"""Shared fixtures: where gymnasium's MuJoCo models live and which device tests run on.

Taichi runs one backend per process, so the suite runs on one device, chosen by
TAIGYM_TEST_DEVICE (default cpu); tests/test_cuda.py reruns the physics tests on CUDA in a
subprocess where an NVIDIA GPU exists.
"""

import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests/oracle.py

GYM_MODELS = [
    "ant", "half_cheetah", "hopper", "walker2d_v5", "humanoid", "humanoidstandup",
    "inverted_pendulum", "inverted_double_pendulum", "reacher", "swimmer", "pusher",
]


def gym_asset(name: str) -> str:
    # gymnasium.envs.mujoco imports rendering deps; only its asset folder is needed
    root = importlib.util.find_spec("gymnasium").submodule_search_locations[0]
    return os.path.join(root, "envs", "mujoco", "assets", f"{name}.xml")


@pytest.fixture(scope="session")
def device() -> str:
    return os.environ.get("TAIGYM_TEST_DEVICE", "cpu")
