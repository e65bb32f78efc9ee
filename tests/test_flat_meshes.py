"""Flat meshes (vertices in a plane: a decal, a screen, a sign), which robot packages use
as visual shapes: MuJoCo builds a mesh's hull only where the mesh collides, so such a
mesh loads as long as nothing collides with it, and a geom that would is refused."""

import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError, World
from taigym.physics.compiler.mjcf import load_mjcf_string

# a square plate of 3 x 3 vertices in the plane z = 0, two triangles per cell
_GRID = [(x, y, 0.0) for y in (0, 0.1, 0.2) for x in (0, 0.15, 0.3)]
_TRIS = [t for r in range(2) for c in range(2) for t in ((3 * r + c, 3 * r + c + 1, 3 * r + c + 4),
                                                         (3 * r + c, 3 * r + c + 4, 3 * r + c + 3))]
MODEL = """<mujoco><asset>
  <mesh name="plate" inertia="shell" vertex="{vert}" face="{face}"/></asset>
<worldbody><geom type="plane" size="1 1 0.1"/>
  <body pos="0 0 0.3"><freejoint/><geom type="box" size="0.05 0.05 0.05"/>
    <geom type="mesh" mesh="plate" pos="0 0 0.06" density="50" {collide}/></body>
</worldbody></mujoco>"""


def _xml(collide):
    return MODEL.format(vert=" ".join(f"{v:g}" for p in _GRID for v in p),
                        face=" ".join(str(i) for t in _TRIS for i in t), collide=collide)


def test_a_flat_visual_mesh_loads_as_mujoco_compiles_it():
    xml = _xml('contype="0" conaffinity="0"')
    ours, mj = load_mjcf_string(xml), mujoco.MjModel.from_xml_string(xml)
    assert ours.mesh_graphadr.tolist() == mj.mesh_graphadr.tolist() == [-1]
    np.testing.assert_allclose(ours.body_mass, mj.body_mass, rtol=1e-12)
    np.testing.assert_allclose(ours.body_inertia, mj.body_inertia, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(ours.mesh_vert, mj.mesh_vert, atol=1e-7)


def test_a_flat_visual_mesh_steps_with_mujoco(device):
    xml = _xml('contype="0" conaffinity="0"')
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    world = World(load_mjcf_string(xml), 1, device=device, precision="float64")
    for _ in range(150):  # falls onto the floor on its box
        mujoco.mj_step(mjm, d)
        world.step()
    np.testing.assert_allclose(world.get("qpos")[0], d.qpos, atol=1e-9)


def test_a_flat_mesh_that_would_collide_is_refused():
    with pytest.raises(ModelError, match="mesh 'plate' cannot collide: the vertices lie on a line or in a plane"):
        load_mjcf_string(_xml(""))
    with pytest.raises(ValueError, match="coplanar"):  # as MuJoCo refuses it
        mujoco.MjModel.from_xml_string(_xml(""))
