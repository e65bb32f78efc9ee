"""Meshes on height fields: a mesh's hull against the prisms under the grid's triangles by
the convex solver, its hull vertices over a triangle for the contacts through the
triangle's top face (physics/collision/hfield/prisms.py), against mujoco 4 in float64.

As for the primitives (tests/test_hfield.py), MuJoCo keeps a contact through every prism's
wall and ours keeps the surface's, so resting places are compared, and single contacts
only where a hull vertex dips into the middle of a triangle, where the two agree.
"""

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics.collision import broadphase as B
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

N = 17  # samples per side
BOX = "-.1 -.15 -.05  .1 -.15 -.05  -.1 .15 -.05  .1 .15 -.05  -.1 -.15 .05  .1 -.15 .05  -.1 .15 .05  .1 .15 .05"
# an irregular hull of 17 vertices
ROCK = ("0.129 -0.06 0.084 0.149 -0.101 0.076 0.18 0.105 0.018 -0.044 -0.094 0.087 0.07 -0.095 -0.033 -0.233 "
        "-0.018 -0.062 0.016 -0.047 -0.067 -0.031 0.117 0.098 0.005 0.16 0.009 -0.225 0.031 -0.029 -0.029 0.126 "
        "-0.022 0.158 0.106 0.032 0.1 -0.049 0.091 0.137 -0.053 0.018 0.13 0.076 -0.035 -0.22 0.004 0.034 -0.132 "
        "-0.053 0.047")
ZSIZE = 0.3  # as tests/test_hfield.py's box on the slope


def _terrain(kind):
    x = np.linspace(-1, 1, N)
    X, Y = np.meshgrid(x, x)  # row r at y[r], as mjModel's
    return 0.3 * X + 0.1 * Y if kind == "slope" else np.zeros_like(X)


def _scene(kind, body, *, pos="0.1 0.05 0.25", quat="1 0 0 0", damping=0):
    rows = " ".join(f"{v:.6f}" for v in _terrain(kind)[::-1].ravel())  # the text lists +y first
    return f"""<mujoco><option timestep="0.002" impratio="10"/>
      <asset><mesh name="box" vertex="{BOX}"/><mesh name="rock" vertex="{ROCK}"/>
        <hfield name="t" nrow="{N}" ncol="{N}" size="1 1 {ZSIZE} 0.1" elevation="{rows}"/></asset>
      <worldbody><geom name="ground" type="hfield" hfield="t"/>
        <body name="b" pos="{pos}" quat="{quat}"><joint type="free" damping="{damping}"/>{body}</body>
      </worldbody></mujoco>"""


def _mujoco_rest(text, nstep):
    mj = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(mj)
    mujoco.mj_step(mj, data, nstep)
    return data


def test_meshes_on_height_fields_take_the_prisms_routine():
    table = B.candidate_pairs(load_mjcf_string(_scene("flat", '<geom type="mesh" mesh="rock"/>')))
    assert table.collider.tolist() == [B.COLLIDE_HFIELD_MESH] and table.convex


# (terrain, body, seconds, tolerance on the resting position [m] horizontally, vertically):
# the box primitive's tests/test_hfield.py cases, and their tolerances, with a mesh box
RESTING = {
    "box on flat": ("flat", '<geom type="mesh" mesh="box" euler="5 10 20"/>', 2.0, 1e-3, 1e-3),
    "box on slope": ("slope", '<geom type="mesh" mesh="box" euler="5 10 20"/>', 2.0, 2.5e-3, 1e-3),
}


@pytest.mark.parametrize("case", sorted(RESTING))
def test_a_mesh_box_comes_to_rest_where_mujoco_puts_it(case, device):
    """Dropped from just above (measured: 3.8e-4 m apart on the flat, 1.9e-3 on the slope,
    where the box primitive comes 1.0e-3 and 2.0e-3 from mujoco's)."""
    kind, body, seconds, tol_xy, tol_z = RESTING[case]
    text = _scene(kind, body)
    nstep = round(seconds / 0.002)
    data = _mujoco_rest(text, nstep)
    world = physics.World(load_mjcf_string(text), 1, device=device, precision="float64")
    world.step(nstep)
    assert world.contacts()["ncon"][0] >= 3 and data.ncon >= 3
    assert np.abs(world.get("qvel")[0]).max() < 1e-3
    np.testing.assert_allclose(world.get("qpos")[0, :2], data.qpos[:2], rtol=0, atol=tol_xy)
    np.testing.assert_allclose(world.get("qpos")[0, 2], data.qpos[2], rtol=0, atol=tol_z)


@pytest.mark.parametrize("kind", ["flat", "slope"])
def test_a_mesh_hull_comes_to_rest_where_mujoco_puts_it(kind, device):
    """The rock, dropped on the flat; on the slope it starts from where mujoco's comes to
    rest after a drop, lifted 5 mm (the drop itself tumbles it over an edge, a path the
    two engines' contacts on the prisms' walls part on). Measured: 3.7e-4 m on the flat,
    4e-6 m on the slope."""
    body = '<geom type="mesh" mesh="rock" euler="10 20 0"/>'
    start = {"pos": "0.1 0.05 0.07"}
    if kind == "slope":
        settled = _mujoco_rest(_scene(kind, body, pos="0.1 0.05 0.26", damping=2), 1500).qpos
        start = {"pos": " ".join(map(str, settled[:3] + [0, 0, 0.005])), "quat": " ".join(map(str, settled[3:7]))}
    text = _scene(kind, body, damping=2, **start)
    data = _mujoco_rest(text, 1500)
    world = physics.World(load_mjcf_string(text), 1, device=device, precision="float64")
    world.step(1500)
    assert np.abs(world.get("qvel")[0]).max() < 1e-3 and np.abs(data.qvel).max() < 1e-3
    np.testing.assert_allclose(world.get("qpos")[0, :3], data.qpos[:3], rtol=0, atol=1e-3)


def _vertex_dips(mj, kind, rng, depth):
    """A pose of body 1 whose lowest hull vertex is ``depth`` into the middle of a
    triangle (its centroid), the part of the hull under the surface within 2 cm of it
    (inside the triangle, whose walls are 2.9 cm away and more: MuJoCo would push the
    hull out through a wall it crosses); None where this orientation's would reach farther."""
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    g = mj.body_geomadr[1]
    rot = mat.reshape(3, 3) @ _geom_mat(mj, g)
    vert = mj.mesh_vert[mj.mesh_vertadr[mj.geom_dataid[g]]:][:mj.mesh_vertnum[mj.geom_dataid[g]]]
    world = vert @ rot.T + mat.reshape(3, 3) @ mj.geom_pos[g]
    z = _terrain(kind)
    normal = np.array([-0.3, -0.1, (z.max() - z.min()) / ZSIZE]) if kind == "slope" else np.array([0, 0, 1.0])
    normal /= np.linalg.norm(normal)
    heights = world @ normal
    low = int(np.argmin(heights))
    rise = np.delete(heights - heights[low], low)
    run = np.linalg.norm(np.cross(np.delete(world - world[low], low, axis=0), normal), axis=1)
    if np.any(depth * run > 0.02 * rise):
        return None
    r, c = rng.integers(2, N - 3, 2)
    h = 2 / (N - 1)
    corners = np.array([[c, r], [c + 1, r + 1], [c, r + 1]]) * h - 1  # a cell's upper-left triangle
    xy = corners.mean(axis=0)
    surface = np.array([*xy, _height(kind, *xy)])
    return np.concatenate([surface - world[low] - normal * depth, quat])


def _geom_mat(mj, g):
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, mj.geom_quat[g])
    return mat.reshape(3, 3)


def _height(kind, x, y):
    z = _terrain(kind)
    if kind == "flat":
        return 0.0
    return (0.3 * x + 0.1 * y - z.min()) / (z.max() - z.min()) * ZSIZE  # MuJoCo scales the samples to [0, 1]


@pytest.mark.parametrize("kind", ["flat", "slope"])
@pytest.mark.parametrize("mesh", ["box", "rock"])
def test_a_vertex_in_a_triangle_makes_mujocos_contact(kind, mesh, device):
    from taigym.physics.collision.driver import Collider

    text = _scene(kind, f'<geom type="mesh" mesh="{mesh}"/>')
    mj = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(5)
    poses = []
    while len(poses) < 16:
        pose = _vertex_dips(mj, kind, rng, rng.uniform(1e-4, 3e-3))
        if pose is not None:
            poses.append(pose)
    ref, xpos, xquat = [], [], []
    for q in poses:
        data.qpos[:] = q
        mujoco.mj_forward(mj, data)
        ref.append([(c.dist, c.pos.copy(), c.frame[:3].copy()) for c in data.contact[:data.ncon]])
        xpos.append(data.xpos.copy())
        xquat.append(data.xquat.copy())
    col = Collider(load_mjcf_string(text), len(poses), device=device, precision="float64")
    col.collide(np.array(xpos), np.array(xquat))
    got = col.get()
    # ours is the vertex's, exact; MuJoCo's EPA stops within its tolerance (measured: 5e-14 for
    # the box, 1.2e-8 for the rock)
    for e, cons in enumerate(ref):
        assert len(cons) == 1 and got["ncon"][e] == 1, (e, len(cons), got["ncon"][e])
        dist, pos, normal = cons[0]
        assert abs(got["dist"][e, 0] - dist) < 1e-7
        np.testing.assert_allclose(got["pos"][e, 0], pos, rtol=0, atol=1e-7)
        np.testing.assert_allclose(got["frame"][e, 0, 0], normal, rtol=0, atol=1e-7)


def test_a_mesh_box_rests_still_on_a_flat_height_field(device):
    """Through the prisms' convex path, still for 9 s as on a plane, and as high to 0.1 mm
    (more contacts share its weight on the grid; the cylinder's is 2e-4 m)."""
    text = _scene("flat", '<geom type="mesh" mesh="box" euler="0 0 20"/>', pos="0.1 0.05 0.06")
    plane = text.replace('type="hfield" hfield="t"', 'type="plane" size="1 1 1"')
    rest = []
    for model_text in (text, plane):
        world = physics.World(load_mjcf_string(model_text), 1, device=device, precision="float64")
        world.step(500)
        start = world.get("qpos")[0]
        speed = 0.0
        for _ in range(90):  # 9 s more, sampled every 0.1 s
            world.step(50)
            speed = max(speed, np.abs(world.get("qvel")[0]).max())
        assert speed < 1e-3  # measured: 1.5e-4 on the grid (EPA's points on the prisms wholly under the box)
        assert np.abs(world.get("qpos")[0] - start).max() < 1e-6  # no drift
        rest.append(world.get("qpos")[0])
    np.testing.assert_allclose(rest[0][:2], rest[1][:2], rtol=0, atol=1e-5)
    np.testing.assert_allclose(rest[0][2], rest[1][2], rtol=0, atol=1e-4)
