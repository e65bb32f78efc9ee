"""The physics tests again on CUDA, where an NVIDIA GPU exists.

Taichi runs one backend per process, so the CUDA run is a pytest subprocess with
TAIGYM_TEST_DEVICE=cuda over the same oracle tests.
"""

import os
import subprocess
import sys

import pytest
from taigym.physics.runtime.backend import _probe_cuda

PHYSICS_TESTS = ["test_dynamics_mujoco.py", "test_random_trees.py", "test_analytic.py", "test_articulation.py",
                 "test_world_api.py", "test_limits.py", "test_contacts.py", "test_equality.py", "test_breakable.py",
                 "test_contact_filters.py", "test_params.py"]


@pytest.mark.cuda
@pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda", reason="already running on CUDA")
@pytest.mark.skipif(not _probe_cuda(), reason="no NVIDIA GPU or CUDA driver on this machine")
def test_physics_suite_on_cuda():
    here = os.path.dirname(__file__)
    env = dict(os.environ, TAIGYM_TEST_DEVICE="cuda")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", *[os.path.join(here, t) for t in PHYSICS_TESTS]],
                            env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
