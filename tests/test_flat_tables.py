"""The flat data tables (physics.layout.FLAT_TABLES): their host views, and the one
coding rule their kernels depend on."""

import ast
from pathlib import Path

import mujoco
import numpy as np
import pytest
from conftest import gym_asset
from taigym.physics import layout as L

from taigym import physics

PHYSICS = Path(physics.__file__).parent


def _augmented_table_writes(source: str) -> list[int]:
    """Lines with ``table[i] op= v`` on a data table: Taichi compiles those to atomic
    compare-and-swap loops unless the index starts with the parallel loop's variable,
    which a flat index never does, nor env_index(w, ...) in the constraint stage, a
    function of its own (physics/step/outline.py) where w is an argument. A locked
    compare-and-swap costs several times the plain ``table[i] = table[i] op v``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript)
                and isinstance(node.target.value, ast.Name)
                and node.target.value.id in L.FLAT_TABLES + L.ENV_TABLES):
            lines.append(node.lineno)
    return lines


def test_data_tables_are_never_updated_in_place():
    found = {str(path.relative_to(PHYSICS)): _augmented_table_writes(path.read_text()) for path in sorted(PHYSICS.rglob("*.py"))}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_rule_finds_an_in_place_update():
    assert _augmented_table_writes("dof_d[o + 3] += 1.0\nqpos[w, 0] += 1.0\nbody_d[i] = body_d[i] + 1\n"
                                   "local[0] += 1.0\n") == [1, 2]


def test_flat_tables_read_back_as_env_rows_columns(device):
    b = physics.ModelBuilder()
    link = b.add_body(parent=0, pos=(0, 0, 1), name="link")
    b.add_joint_revolute(link, axis=(0, 1, 0), name="hinge")
    b.add_shape_capsule(link, radius=0.05, half_height=0.25, density=1000)
    tip = b.add_body(link, pos=(0, 0, -0.5), name="tip")
    b.add_joint_revolute(tip, axis=(1, 0, 0), name="wrist")
    b.add_shape_sphere(tip, radius=0.05)
    model = b.finalize()
    world = physics.World(model, num_envs=3, device=device, precision="float64")
    q = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]])
    world.set_state(qpos=q, qvel=np.zeros((3, 2)))
    world.forward()
    # each env's rows are its own: the flat offsets put env w at w * stride
    for w in range(3):
        single = physics.World(model, num_envs=1, device=device, precision="float64")
        single.set_state(qpos=q[w:w + 1], qvel=np.zeros((1, 2)))
        single.forward()
        for name in ("xpos", "xquat", "cdof", "xanchor", "qfrc_bias", "qM", "qacc"):
            np.testing.assert_allclose(world.get(name)[w], single.get(name)[0], rtol=0, atol=1e-14, err_msg=name)
    assert world.get("xpos").shape == (3, model.nbody, 3)
    assert world.get("cdof").shape == (3, model.nv, 6)


@pytest.mark.parametrize("name", L.FLAT_TABLES)
def test_flat_table_sizes_match_their_strides(name):
    model = physics.load_model(str(Path(__file__).parent.parent / "configs" / "assets" / "quadruped.xml"))
    shapes = L.data_shapes(model, 5)
    sizes = L.pack_model(model, np.float64)["sizes"]
    stride = {"body_d": L.SIZE_BODY_STRIDE, "jnt_d": L.SIZE_JNT_STRIDE, "dof_d": L.SIZE_DOF_STRIDE,
              "dof_s": L.SIZE_DOFS_STRIDE, "qM": L.SIZE_M_STRIDE, "qLD": L.SIZE_M_STRIDE}[name]
    assert sizes[stride] == np.prod(shapes[name][1:])


_ROWS = {"body_d": (L.BODY_D, L.NBODY_D), "jnt_d": (L.JNT_D, L.NJNT_D), "dof_d": (L.DOF_D, L.NDOF_D),
         "dof_s": (L.DOF_S, L.NDOF_S), "body_f": (L.BODY_F, L.NBODY_F), "jnt_f": (L.JNT_F, L.NJNT_F), "dof_f": (L.DOF_F, L.NDOF_F)}


@pytest.mark.parametrize("name", sorted(_ROWS))
def test_flat_rows_are_a_power_of_two_wide_and_hold_every_column(name):
    """The kernels' row offsets (env_start, row_set) fold column offsets into addresses only
    when a row starts at a multiple of a power of two larger than every column offset."""
    columns, width = _ROWS[name]
    assert width & (width - 1) == 0
    assert max(a + w for a, w in columns.values()) <= width
    assert L.NBODY_I & (L.NBODY_I - 1) == 0 and L.NJNT_I & (L.NJNT_I - 1) == 0 and L.NDOF_I & (L.NDOF_I - 1) == 0


def test_mass_matrix_column_table_lists_each_row_dof_and_ancestors():
    """The sparse rows' column table (after dof_i's rows) against MuJoCo's own sparse
    layout: row i at dof_Madr[i] holds i, then its parent chain."""
    model = physics.load_model(gym_asset("humanoid"))
    packed = L.pack_model(model, np.float64)
    mcol = int(packed["sizes"][L.SIZE_MCOL])
    assert mcol == model.nv * L.NDOF_I
    cols = packed["dof_i"][mcol:]
    mjm = mujoco.MjModel.from_xml_path(gym_asset("humanoid"))
    assert model.nM == mjm.nM
    for i in range(mjm.nv):
        adr, j = mjm.dof_Madr[i], i
        while j >= 0:
            assert cols[adr] == j, (i, adr)
            adr, j = adr + 1, mjm.dof_parentid[j]
        assert adr == (mjm.dof_Madr[i + 1] if i + 1 < mjm.nv else mjm.nM)

