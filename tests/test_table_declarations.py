"""The step kernels' tables are declared once (physics/layout.py, KERNEL_TABLES): a table
declared there is a parameter of every step kernel, a World's tables allocate it and hand
it to a launch, and a stage reaches it as ``t.<name>``, with no other edit."""

import inspect
import linecache
import os

import numpy as np
import pytest
from taigym.physics import layout as L
from taigym.physics.collision import broadphase as B
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.data import Tables
from taigym.physics.runtime.lanes import device_rows, env_index, env_rows
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.step.outline import make_outline, outlining
from taigym.physics.step.pipeline import make_kernels
from taigym.physics.step.program import ProgramBuilder
from taigym.physics.step.staged import make_staged_kernel
from taigym.physics.step.tables import TABLES, step_tables, with_tables

pytestmark = pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda", reason="a CPU check of the tables")

HINGE = """
<mujoco>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge"/></actuator>
</mujoco>
"""
# one module-level declaration: each test's kernels are the same, built once
PROBE = L.KernelTable("probe_f", L.FLOAT, 2, L.DATA, lambda e: (e.num_envs, 1))


@pytest.fixture
def probe(monkeypatch):
    """A per-env float table of one column, declared before the launch's env ids, for this
    test only."""
    ensure_runtime("cpu")
    monkeypatch.setattr(L, "KERNEL_TABLES", (*L.KERNEL_TABLES[:-1], PROBE, L.KERNEL_TABLES[-1]))
    return PROBE


def _tables(num_envs=2):
    model = load_mjcf_string(HINGE)
    tables = Tables(model, num_envs, ti.f64, np.float64, B.candidate_pairs(model))
    tables.set_program(ProgramBuilder().build())
    return model, tables


def test_a_declared_table_is_a_parameter_of_every_step_kernel(probe):
    fused = make_kernels(ti.f64)
    assert fused.step_arrays[-2:] == ("probe_f", "env_ids")
    annotation = inspect.signature(fused.step).parameters["probe_f"].annotation
    assert (annotation.dtype, annotation.ndim) == (ti.f64, 2)
    staged = make_staged_kernel(ti.f64)
    assert staged.arrays[-5:] == ("probe_f", "env_ids", "plan", "steps_left", "stages_left")
    assert step_tables(ti.f64)._fields == fused.step_arrays


def test_a_world_allocates_a_declared_table_and_hands_it_to_the_launch(probe):
    _, tables = _tables()
    probe_f = tables.data["probe_f"]
    assert env_rows(probe_f.to_numpy(), 2, tables.lanes).shape == (2, 1)
    fused = make_kernels(ti.f64)
    arguments = tables.arguments(fused.step_arrays)
    assert arguments[fused.step_arrays.index("probe_f")] is probe_f
    assert arguments[-1] is tables.all_ids


def test_a_stage_reaches_a_declared_table_through_the_tables(probe, monkeypatch):
    from taigym.physics.runtime.taichi_adapter import ownership

    # traced as the engine's kernels are (the adapter's patches act on those alone)
    monkeypatch.setattr(ownership, "PACKAGES", (*ownership.PACKAGES, __name__))
    StepTables = step_tables(ti.f64)
    call = make_outline(ti.f64, outlining()).call  # a function of its own where stages are outlined

    @ti.func
    def part(w, t: ti.template()):
        t.probe_f[env_index(w, 0)] = 2.0 * t.qpos[env_index(w, 0)] + t.sizes[L.SIZE_NBODY]

    @ti.kernel
    @with_tables(StepTables)
    def probe_kernel(tables: TABLES, nids: ti.i32):
        for k in range(nids):
            call((part,), tables.env_ids[k], tables)

    model, tables = _tables()
    tables.data["qpos"].from_numpy(device_rows(np.array([[0.25], [-1.5]]), tables.lanes))
    probe_kernel(*tables.arguments(StepTables._fields), 2)
    probe_f = env_rows(tables.data["probe_f"].to_numpy(), 2, tables.lanes)
    np.testing.assert_array_equal(probe_f, [[0.5 + model.nbody], [-3.0 + model.nbody]])
    if outlining():  # the part ran in a real function, written with the table as a parameter too
        written = ["".join(lines) for name, (_, _, lines, _) in list(linecache.cache.items())
                   if name.startswith("<taigym ") and ".outlined " in name]
        assert any("probe_f: f2" in text for text in written)


def test_the_declaration_is_back_after_a_test_that_added_a_table():
    assert "probe_f" not in (t.name for t in L.KERNEL_TABLES)
    assert "probe_f" not in step_tables(ti.f64)._fields
