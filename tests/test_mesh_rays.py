"""Rays against meshes' own triangles through their trees (physics/compiler/mesh_bvh.py,
physics/mesh_rays.py): rangefinders against mujoco's (float64) on non-convex prisms written
as STL and OBJ, with scale, refpos and refquat, on moving bodies; and the renderer's
silhouette of those prisms against the one computed from their polygons.
"""

import mujoco
import numpy as np
import pytest
from taigym.physics import World
from taigym.physics.collision import broadphase as B
from taigym.physics.compiler.mesh_bvh import LEAF_SIZE, build_tree
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.features import model_features

trimesh = pytest.importorskip("trimesh")

# An L (kernel: the corner square, where its fan starts) and a ten-pointed star, in x y.
L_SHAPE = (np.array([[-0.15, -0.05], [0.15, -0.05], [0.15, 0.25], [0.05, 0.25], [0.05, 0.05], [-0.15, 0.05]]),
           (0.1, 0.0))
_ANGLES = np.linspace(0, 2 * np.pi, 11)[:-1]
STAR = (np.c_[np.cos(_ANGLES), np.sin(_ANGLES)] * np.where(np.arange(10) % 2, 0.12, 0.3)[:, None], (0.0, 0.0))


def prism(polygon, centre, height):
    """A closed prism over a polygon (star-shaped about ``centre``), wound outward."""
    n = len(polygon)
    vert = np.concatenate([np.c_[polygon, np.zeros(n)], np.c_[polygon, np.full(n, height)],
                           [[*centre, 0.0], [*centre, height]]])
    faces = []
    for i in range(n):
        j = (i + 1) % n
        faces += [[2 * n, j, i], [2 * n + 1, n + i, n + j], [i, j, n + j], [i, n + j, n + i]]
    return trimesh.Trimesh(vert, np.array(faces), process=False)


@pytest.fixture(scope="module")
def solids(tmp_path_factory):
    d = tmp_path_factory.mktemp("prisms")
    prism(*L_SHAPE, 0.1).export(d / "L.stl")
    prism(*STAR, 0.15).export(d / "star.obj")
    return d


def test_a_tree_holds_every_triangle_once_in_boxes_around_it():
    rng = np.random.default_rng(1)
    for n in (1, LEAF_SIZE, LEAF_SIZE + 1, 37, 2000):
        vert = rng.standard_normal((3 * n, 3))
        face = rng.permutation(3 * n).reshape(n, 3)
        tree = build_tree(vert, face)
        count = np.zeros(n, int)
        for i, (first, num) in enumerate(tree.node):
            if num:
                assert num <= LEAF_SIZE
                corners = vert[face[tree.order[first:first + num]]].reshape(-1, 3)
                assert (corners >= tree.box[i, :3]).all() and (corners <= tree.box[i, 3:]).all()
                count[tree.order[first:first + num]] += 1
            else:
                for child in (first, first + 1):
                    assert (tree.box[child, :3] >= tree.box[i, :3]).all()
                    assert (tree.box[child, 3:] <= tree.box[i, 3:]).all()
        assert (count == 1).all()
        assert tree.depth <= np.ceil(np.log2(max(n / LEAF_SIZE, 1))) + 2


# Meshes on the world and on a free body; the rangefinders ride another free body, which
# carries a mesh of its own that they must not see; an invisible mesh is never seen.
RAYS = """<mujoco><compiler meshdir="{meshdir}"/><option><flag contact="disable"/></option>
<asset>
  <mesh name="L" file="L.stl"/>
  <mesh name="L_moved" file="L.stl" scale="1.3 1.3 0.8" refpos=".02 -.01 .03" refquat=".96 0 0 .28"/>
  <mesh name="star" file="star.obj" scale="1.2 .8 1.5" refpos=".02 -.01 .05" refquat=".9 .1 .3 -.2"/>
  <material name="clear" rgba="1 1 1 0"/>
</asset>
<worldbody>
  <geom type="mesh" mesh="{first}" pos=".3 .2 0" euler="10 20 30"/>
  <geom type="mesh" mesh="{second}" pos="-.4 -.3 .1" euler="-20 5 60" rgba="1 1 1 0"/>
  <geom type="mesh" mesh="{second}" pos=".1 -.4 -.1" euler="0 0 0" material="clear"/>
  <body name="object"><freejoint/><geom type="mesh" mesh="{second}"/></body>
  <body name="head" pos="0 0 1"><freejoint/>
    <geom type="mesh" mesh="{first}"/>
    <site name="a"/><site name="b" euler="180 0 0"/><site name="c" euler="0 100 0"/>
    <site name="d" euler="0 -100 30"/><site name="e" euler="120 40 0"/>
  </body>
</worldbody>
<sensor><rangefinder site="a"/><rangefinder site="b"/><rangefinder site="c"/><rangefinder site="d"/>
  <rangefinder site="e"/></sensor>
</mujoco>"""


def rangefinder_errors(text, n, seed, device):
    """Rangefinders over ``n`` random poses of both free bodies: (largest |ours - mujoco's|,
    hits, rays, the geoms mujoco's rays hit)."""
    model = load_mjcf_string(text)
    mjm = mujoco.MjModel.from_xml_string(text)
    md = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    qpos = np.zeros((n, 14))
    for body in range(2):
        qpos[:, 7 * body:7 * body + 3] = rng.uniform((-0.5, -0.5, -0.2), (0.5, 0.5, 0.3), (n, 3))
        quat = rng.standard_normal((n, 4))
        qpos[:, 7 * body + 3:7 * body + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    world = World(model, n, device=device, precision="float64")
    world.set_state(qpos=qpos)
    world.forward()
    ours = world.get("sensordata")
    worst, hits, geoms, geomid = 0.0, 0, set(), np.zeros(1, np.int32)
    for e in range(n):
        md.qpos[:] = qpos[e]
        mujoco.mj_forward(mjm, md)
        assert ((ours[e] >= 0) == (md.sensordata >= 0)).all(), (e, ours[e], md.sensordata)
        worst = max(worst, float(np.abs(ours[e] - md.sensordata).max()))
        hits += int((md.sensordata >= 0).sum())
        for site in range(mjm.nsite):
            mujoco.mj_ray(mjm, md, md.site_xpos[site], md.site_xmat[site].reshape(3, 3)[:, 2], None, 1,
                          mjm.site_bodyid[site], geomid)
            geoms.add(int(geomid[0]))
    return worst, hits, n * mjm.nsensordata, geoms - {-1}


def test_rangefinders_meet_non_convex_meshes_as_mujoco(solids, device):
    """The L, as written and scaled, moved and turned about z (whose compiled vertices are
    mujoco's to the bit, so the distances agree to round-off)."""
    text = RAYS.format(meshdir=solids, first="L", second="L_moved")
    worst, hits, rays, geoms = rangefinder_errors(text, 512, 3, device)
    assert worst < 1e-9, worst
    assert hits > 0.05 * rays and hits < rays, hits  # many rays meet the meshes, some miss
    assert geoms == {0, 3}  # the visible meshes: the world's and the other body's


def test_rangefinders_meet_a_scaled_turned_star_as_mujoco(solids, device):
    """A star scaled, moved and turned every way. Its compiled frame is not mujoco's to the
    bit: mujoco's principal axes stop their Jacobi iterations at an absolute 1e-12, and here
    differ from ours by ~1e-8, so some float32 vertices differ by an ulp (3e-8 m;
    test_meshes.py holds vertices to 1e-7). A ray meeting a face at a grazing angle
    stretches that: measured 7e-8 for one at 3 degrees, which both engines' own triangles,
    intersected in numpy, give alike."""
    text = RAYS.format(meshdir=solids, first="star", second="L")
    worst, hits, rays, geoms = rangefinder_errors(text, 512, 4, device)
    assert worst < 3e-7, worst
    assert hits > 0.05 * rays and hits < rays, hits
    assert geoms == {0, 3}


def test_only_models_whose_rangefinders_see_meshes_walk_triangles(solids):
    """The mesh code is compiled in (Features.ray_meshes) for a model with a rangefinder and
    a mesh it can see, not for one whose meshes are invisible or that has no rangefinder;
    trees are built for the meshes that rays (the renderer's too) can see."""
    def features(text):
        model = load_mjcf_string(text)
        return model, model_features(model, B.candidate_pairs(model))

    asset = f'<mujoco><compiler meshdir="{solids}"/><asset><mesh name="L" file="L.stl"/></asset><worldbody>'
    sensor = '<site name="s"/></worldbody><sensor><rangefinder site="s"/></sensor></mujoco>'
    model, seen = features(asset + '<geom type="mesh" mesh="L"/>' + sensor)
    assert seen.ray_meshes and model.nbvh == model.mesh_bvhnum[0] > 1
    model, invisible = features(asset + '<geom type="mesh" mesh="L" rgba="1 1 1 0"/>' + sensor)
    assert invisible.sensors and not invisible.ray_meshes
    assert model.nbvh == 0 and model.mesh_bvhadr[0] == -1  # nothing can see it: no tree
    model, blind = features(asset + '<geom type="mesh" mesh="L"/></worldbody></mujoco>')
    assert not blind.ray_meshes and model.nbvh > 1  # the renderer draws it through its tree


# --- drawing -----------------------------------------------------------------------------
def inside(points, polygon):
    """Whether each point (n, 2) is inside the polygon (even-odd rule)."""
    x, y = points[:, 0:1], points[:, 1:2]
    a, b = polygon, np.roll(polygon, -1, axis=0)
    crosses = (a[:, 1] > y) != (b[:, 1] > y)
    at = a[:, 0] + (y - a[:, 1]) * (b[:, 0] - a[:, 0]) / np.where(a[:, 1] == b[:, 1], 1, b[:, 1] - a[:, 1])
    return (np.sum(crosses & (x < at), axis=1) % 2) == 1


@pytest.mark.parametrize("shape, name, height", [(L_SHAPE, "L.stl", 0.1), (STAR, "star.obj", 0.15)])
def test_a_non_convex_mesh_is_drawn_as_its_silhouette(solids, shape, name, height, device):
    """A prism seen from straight above a point its polygon is star-shaped about, so that
    its outline in the image is its top face's: its pixels are those whose rays cross the
    polygon at the top or bottom face, but for a one-pixel border; its hull's others are sky."""
    from taigym.physics.render import FreeCamera, Renderer

    polygon, centre = shape
    model = load_mjcf_string(f'<mujoco><asset><mesh name="m" file="{solids / name}"/></asset><worldbody>'
                             f'<geom type="mesh" mesh="m" rgba="0 1 0 1"/></worldbody></mujoco>')
    width = height_px = 80
    lookat, distance, fovy = np.array([*centre, 0.0]), 2.0, np.degrees(2 * np.arctan(0.2))
    camera = FreeCamera(lookat=tuple(lookat), distance=distance, azimuth=90.0, elevation=-90.0, fovy=fovy)
    frame = Renderer(model, width=width, height=height_px, device=device, shadows=False).render_poses(
        np.zeros((1, 1, 3)), np.array([[[1.0, 0, 0, 0]]]), camera=camera)[0]
    drawn = frame[..., 1].astype(int) > frame[..., 0].astype(int) + 40
    # each pixel's ray, where it crosses the bottom and the top face (camera: +x right, +y up)
    tan = np.tan(np.radians(fovy) / 2)
    cols, rows = np.meshgrid(np.arange(width), np.arange(height_px))
    sx = (2 * (cols + 0.5) / width - 1) * tan * width / height_px
    sy = (1 - 2 * (rows + 0.5) / height_px) * tan
    expected = np.zeros((height_px, width), bool)
    for z in (0.0, height):
        depth = distance - z
        points = np.stack([lookat[0] + sx * depth, lookat[1] + sy * depth], axis=-1).reshape(-1, 2)
        expected |= inside(points, polygon).reshape(height_px, width)
    grown = np.zeros_like(expected)
    shrunk = np.ones_like(expected)
    padded = np.pad(expected, 1)
    for dr in range(3):
        for dc in range(3):
            grown |= padded[dr:dr + height_px, dc:dc + width]
            shrunk &= padded[dr:dr + height_px, dc:dc + width]
    border = grown & ~shrunk
    assert expected.sum() > 400
    assert not ((drawn != expected) & ~border).any(), np.argwhere((drawn != expected) & ~border)[:10]
    hull_only = np.zeros_like(expected)
    from scipy.spatial import ConvexHull
    hull = polygon[ConvexHull(polygon).vertices]
    for z in (0.0, height):
        depth = distance - z
        points = np.stack([lookat[0] + sx * depth, lookat[1] + sy * depth], axis=-1).reshape(-1, 2)
        hull_only |= inside(points, hull).reshape(height_px, width)
    notch = hull_only & ~grown
    assert notch.sum() > 50 and not drawn[notch].any()  # the hull is not drawn
