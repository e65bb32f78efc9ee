"""The physics tests again on CUDA, where an NVIDIA GPU exists.

Taichi runs one backend per process, so the CUDA run is a pytest subprocess with
TAIGYM_TEST_DEVICE=cuda over the same oracle tests. Every test module that builds a World,
a Collider or a Renderer is either in that run or left out below with its reason, which
a CPU test checks.
"""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from taigym.physics.runtime.backend import _probe_cuda

HERE = Path(__file__).parent

# the engine's stages: smooth dynamics, collision, constraints and solvers, the step, rendering,
# and the table accessors they all read through
PHYSICS_TESTS = ["test_dynamics_mujoco.py", "test_random_trees.py", "test_analytic.py", "test_articulation.py",
                 "test_world_api.py", "test_limits.py", "test_contacts.py", "test_equality.py", "test_breakable.py",
                 "test_contact_filters.py", "test_params.py", "test_solvers.py", "test_collision.py",
                 "test_convex.py", "test_hfield.py", "test_drives.py", "test_limit_models.py", "test_render.py",
                 "test_kernel_math.py", "test_flat_tables.py", "test_access.py", "test_mjcf.py",
                 "test_features.py", "test_newton_hessian.py", "test_mjcf_edges.py", "test_float32_robustness.py",
                 "test_schedule.py", "test_sensors.py", "test_actuator_dynamics.py", "test_control_suite_models.py",
                 "test_meshes.py", "test_contact_params.py", "test_spatial_tendons.py", "test_noslip.py",
                 "test_implicitfast.py", "test_joint_actuator_limits.py", "test_flat_meshes.py",
                 "test_hfield_meshes.py", "test_mesh_multiccd.py", "test_mesh_rays.py", "test_mocap.py",
                 "test_refresh_step.py", "test_program_ops.py", "test_geom_pos.py", "test_site_pos.py",
                 "test_body_pose_param.py", "test_contact_sensor.py", "test_gravcomp.py"]

# modules that build a World (or a Collider or Renderer) and stay out of the CUDA run
LEFT_OUT = {
    # env-level: their Worlds come from task configs, which simulate on the CPU
    # (simulation.device: cpu); the engine under them is covered by the modules above
    "test_arm_reach.py": "env-level: the ArmReach task and its drive actions",
    "test_quadruped.py": "env-level: the quadruped tasks and their locomotion terms",
    "test_term_program.py": "env-level: the env step as a World program against its host reference",
    "test_terms_closed_form.py": "env-level: each step term against its closed form on task Worlds",
    "test_reset_settle.py": "env-level: reset-time steps and redraws of task envs",
    # CPU-only machinery
    "test_optimized_kernels.py": "the CPU built with CUDA's compile options against its default build, in a subprocess",
    "test_outline.py": "the step kernel's parts are compiled as functions of their own on the CPU backend only",
    "test_scalar_loops.py": "the second loop exits that keep LLVM's CPU vectorizer away",
    "test_machine_code.py": "the serial CPU step kernel's kept machine code; a CUDA World runs no serial kernel",
    "test_baked_sizes.py": "the fused kernel's sizes as constants, in subprocesses on the CPU; CUDA steps the staged schedule",
    "test_taichi_choice.py": "which Taichi is imported; its subprocesses step a CPU World with each one",
    "test_interleaved_layout.py": "both table layouts compared in CPU subprocesses; the GPU probe runs each on CUDA",
    "test_taichi_adapter.py": "user kernels beside a CPU World, in subprocesses; the patches are device-independent",
    "test_config_ranges.py": "config validation; its one World checks argument ranges and is never stepped",
}

_BUILDS = re.compile(r"\b(World|Collider|Renderer)\(")


def _cuda_skipped(function: ast.FunctionDef) -> bool:
    """Whether a test is marked to skip where TAIGYM_TEST_DEVICE is cuda."""
    return any("TAIGYM_TEST_DEVICE" in ast.unparse(d) for d in function.decorator_list)


def _builds_without_device(path: Path) -> list[int]:
    """Lines of a module that build a World, Collider or Renderer without passing a device,
    outside ``pytest.raises`` blocks (refused before a runtime starts) and tests skipped on
    CUDA."""
    tree = ast.parse(path.read_text())
    exempt = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and _cuda_skipped(node):
            exempt |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.With) and any("raises" in ast.unparse(item.context_expr) for item in node.items):
            exempt |= {id(n) for n in ast.walk(node)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in exempt:
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            keywords = {k.arg for k in node.keywords}
            if name in ("World", "Collider", "Renderer") and "device" not in keywords and None not in keywords:
                lines.append(node.lineno)
    return sorted(lines)


def test_every_module_that_builds_a_world_is_in_the_cuda_run_or_left_out():
    building = {p.name for p in HERE.glob("test_*.py") if p.name != Path(__file__).name
                and _BUILDS.search(p.read_text())}
    listed = set(PHYSICS_TESTS) | set(LEFT_OUT)
    assert not set(PHYSICS_TESTS) & set(LEFT_OUT)
    assert sorted(building - listed) == [], "add these to PHYSICS_TESTS, or to LEFT_OUT with a reason"
    assert sorted(n for n in listed if not (HERE / n).exists()) == []


def test_the_cuda_run_builds_every_world_on_the_device_under_test():
    """In a module of the CUDA run, a World on the default device (the CPU) would fail
    there: Taichi already runs on CUDA."""
    missing = {name: lines for name in PHYSICS_TESTS if (lines := _builds_without_device(HERE / name))}
    assert missing == {}, "pass device=device (the conftest fixture), or skip the test on CUDA"


@pytest.mark.cuda
@pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda", reason="already running on CUDA")
@pytest.mark.skipif(not _probe_cuda(), reason="no NVIDIA GPU or CUDA driver on this machine")
def test_physics_suite_on_cuda():
    env = dict(os.environ, TAIGYM_TEST_DEVICE="cuda")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", *[str(HERE / t) for t in PHYSICS_TESTS]],
                            env=env, capture_output=True, text=True, timeout=3600, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
