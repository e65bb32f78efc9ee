"""Height fields: the model routes against mujoco, bad input, and contacts at rest.

Resting positions are compared with mujoco 4 on the same MJCF in float64. MuJoCo collides
a height field as prisms with its convex solver, which adds duplicated and side contacts;
ours meets the triangles' surfaces exactly, so landing transients differ a little and the
comparison is of where the shapes come to rest.
"""

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics.compiler.mjcf import load_mjcf, load_mjcf_string
from taigym.physics.errors import ModelError
from taigym.physics.render.png import write_png_grey

from taigym import physics

N = 17  # samples per side


def _terrain(kind):
    x = np.linspace(-1, 1, N)
    X, Y = np.meshgrid(x, x)  # row r at y[r]: rows go from -y to +y, as mjModel's
    if kind == "slope":
        return 0.3 * X + 0.1 * Y
    if kind == "bowl":
        return 4 * (X - 0.13) ** 2 + (Y + 0.07) ** 2
    return np.zeros_like(X)


def _scene(kind, body, *, zsize=0.3, impratio=1, damping=0):
    rows = " ".join(f"{v:.6f}" for v in _terrain(kind)[::-1].ravel())  # the text lists +y first
    return f"""<mujoco><option timestep="0.002" impratio="{impratio}"/>
      <asset><hfield name="t" nrow="{N}" ncol="{N}" size="1 1 {zsize} 0.1" elevation="{rows}"/></asset>
      <worldbody><geom name="ground" type="hfield" hfield="t"/>
        <body name="b" pos="0.1 0.05 0.5"><joint type="free" damping="{damping}"/>{body}</body>
      </worldbody></mujoco>"""


def _compare_model(ours, theirs):
    for name in ("hfield_nrow", "hfield_ncol", "hfield_adr", "geom_dataid"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), err_msg=name)
    np.testing.assert_allclose(ours.hfield_size, theirs.hfield_size, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ours.geom_size, theirs.geom_size, rtol=0, atol=1e-15)
    # both normalize in single precision: the same numbers
    np.testing.assert_allclose(ours.hfield_data, theirs.hfield_data, rtol=0, atol=1e-7)


def test_elevation_text_and_png_give_mujocos_model(tmp_path):
    rng = np.random.default_rng(3)
    write_png_grey(tmp_path / "bumps.png", (rng.random((6, 9)) * 255).astype(np.uint8))
    elevation = " ".join(f"{v:.4f}" for v in rng.normal(size=4 * 5))
    (tmp_path / "m.xml").write_text(f"""<mujoco><asset>
        <hfield name="text" nrow="4" ncol="5" size="1 2 0.3 0.1" elevation="{elevation}"/>
        <hfield file="bumps.png" size="2 1 0.5 0.2"/></asset>
      <worldbody><geom type="hfield" hfield="text"/><geom type="hfield" hfield="bumps" pos="3 0 0"/>
        <body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>""")
    ours = load_mjcf(tmp_path / "m.xml")
    _compare_model(ours, mujoco.MjModel.from_xml_path(str(tmp_path / "m.xml")))
    assert ours.hfield_name == ["text", "bumps"]  # a file's stem names an unnamed hfield
    from taigym.physics.collision.broadphase import geom_rbound
    np.testing.assert_allclose(geom_rbound(ours)[:2],
                               mujoco.MjModel.from_xml_path(str(tmp_path / "m.xml")).geom_rbound[:2], rtol=1e-12)


def test_mujocos_binary_hfield_file(tmp_path):
    rng = np.random.default_rng(4)
    data = rng.random((5, 7)).astype(np.float32)
    (tmp_path / "ground.bin").write_bytes(np.array([5, 7], np.int32).tobytes() + data.tobytes())
    text = """<mujoco><asset><hfield file="ground.bin" size="1 1 0.2 0.1"/></asset>
      <worldbody><geom type="hfield" hfield="ground"/></worldbody></mujoco>"""
    (tmp_path / "m.xml").write_text(text)
    _compare_model(load_mjcf(tmp_path / "m.xml"), mujoco.MjModel.from_xml_path(str(tmp_path / "m.xml")))
    (tmp_path / "ground.bin").write_bytes(np.array([5, 8], np.int32).tobytes() + data.tobytes())
    with pytest.raises(ModelError) as e:
        load_mjcf(tmp_path / "m.xml")
    assert e.value.attribute == "file" and "5 x 8" in str(e.value)


def test_builder_route_gives_the_same_model():
    text = _scene("bowl", '<geom type="sphere" size="0.1"/>')
    b = physics.ModelBuilder()
    b.add_hfield("t", _terrain("bowl"), (1, 1, 0.3, 0.1))
    b.add_shape_hfield(0, hfield="t", name="ground")
    body = b.add_body(0, pos=(0.1, 0.05, 0.5), name="b")
    b.add_joint_free(body)
    b.add_shape_sphere(body, radius=0.1)
    _compare_model(b.finalize(), load_mjcf_string(text))


@pytest.mark.parametrize("asset, attribute", [
    ('<hfield name="h" nrow="3" ncol="3" size="1 1 1 1" elevation="1 2 3"/>', "elevation"),
    ('<hfield name="h" nrow="2" ncol="3" size="1 1 1 1" elevation="1 2 3 4 5 6 7 8 9"/>', "elevation"),
    ('<hfield name="h" file="missing.png" size="1 1 1 1"/>', "file"),
    ('<hfield name="h" nrow="3" ncol="3" size="1 1 1"/>', "size"),
    ('<hfield name="h" nrow="3" ncol="3" size="1 1 0 1"/>', "size"),
    ('<hfield name="h" nrow="1" ncol="3" size="1 1 1 1"/>', "nrow"),
    ('<hfield name="h" file="x.png" nrow="3" ncol="3" size="1 1 1 1"/>', "nrow"),
])
def test_malformed_hfields_name_the_attribute(asset, attribute):
    with pytest.raises(ModelError) as e:
        load_mjcf_string(f"<mujoco><asset>{asset}</asset><worldbody/></mujoco>")
    assert e.value.attribute == attribute and "hfield 'h'" in str(e.value)


def test_hfield_geoms_name_an_existing_hfield():
    asset = '<asset><hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/></asset>'
    for geom in ('<geom type="hfield"/>', '<geom type="hfield" hfield="nope"/>'):
        with pytest.raises(ModelError) as e:
            load_mjcf_string(f"<mujoco>{asset}<worldbody>{geom}</worldbody></mujoco>")
        assert e.value.attribute == "hfield"


def test_a_corrupt_png_is_refused_naming_the_file(tmp_path):
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(ModelError) as e:
        load_mjcf_string('<mujoco><asset><hfield file="bad.png" size="1 1 1 1"/></asset><worldbody/></mujoco>',
                         base_dir=tmp_path)
    assert e.value.attribute == "file"


# (terrain, body, options, seconds, tolerance on the resting position [m] horizontally, vertically)
RESTING = {
    # rolling friction stops the sphere near the bowl's bottom
    "sphere": ("bowl", '<geom type="sphere" size="0.1" condim="6" friction="1 0.005 0.05"/>',
               dict(zsize=0.5, impratio=10), 2.0, 1e-3, 1e-3),
    # the free joint's damping settles the capsule lying across the bowl
    "capsule": ("bowl", '<geom type="capsule" size="0.05 0.15" euler="0 80 20"/>', dict(zsize=0.5, damping=2),
                3.0, 1e-3, 1e-3),
    # a box on a slope, held by friction (impratio keeps both engines from creeping down)
    "box": ("slope", '<geom type="box" size="0.1 0.15 0.05" euler="5 10 20"/>', dict(impratio=10), 2.0,
            2.5e-3, 1e-3),
    # through the prisms' convex path: an ellipsoid rocking to rest in the bowl, a cylinder
    # standing on the slope
    "ellipsoid": ("bowl", '<geom type="ellipsoid" size="0.1 0.07 0.05" euler="10 20 0"/>',
                  dict(zsize=0.5, damping=2), 3.0, 1e-3, 1e-3),
    "cylinder": ("slope", '<geom type="cylinder" size="0.1 0.05"/>', dict(zsize=0.5, damping=2), 3.0, 1e-3, 1e-3),
}


@pytest.mark.parametrize("case", sorted(RESTING))
def test_shapes_come_to_rest_where_mujoco_puts_them(case, device):
    kind, body, options, seconds, tol_xy, tol_z = RESTING[case]
    text = _scene(kind, body, **options)
    if case == "box":
        text = text.replace('pos="0.1 0.05 0.5"', 'pos="0.1 0.05 0.25"')  # dropped from just above
    nstep = int(round(seconds / 0.002))
    mj = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(mj)
    for _ in range(nstep):
        mujoco.mj_step(mj, data)
    world = physics.World(load_mjcf_string(text), 1, device=device, precision="float64")
    world.step(nstep)
    ours = world.get("qpos")[0, :3]
    assert world.contacts()["ncon"][0] >= 1 and data.ncon >= 1
    assert np.abs(world.get("qvel")[0]).max() < 0.1  # resting, or rolling to a stop
    np.testing.assert_allclose(ours[:2], data.qpos[:2], rtol=0, atol=tol_xy)
    np.testing.assert_allclose(ours[2], data.qpos[2], rtol=0, atol=tol_z)


@pytest.mark.parametrize("body", ['<geom type="sphere" size="0.1"/>',
                                  '<geom type="capsule" size="0.05 0.15" euler="0 85 20"/>',
                                  '<geom type="box" size="0.1 0.15 0.05" euler="5 10 20"/>'])
def test_a_flat_hfield_is_a_plane(body, device):
    text = _scene("flat", body)
    plane = text.replace('type="hfield" hfield="t"', 'type="plane" size="1 1 1"')
    qpos = []
    for model_text in (text, plane):
        world = physics.World(load_mjcf_string(model_text), 1, device=device, precision="float64")
        world.step(750)
        qpos.append(world.get("qpos")[0])
    # equal up to the contact frames' tangents: MuJoCo's plane-capsule aligns them with the
    # capsule, its hfield contacts (and ours) take the default, so friction rows differ a hair
    np.testing.assert_allclose(qpos[0], qpos[1], rtol=0, atol=1e-5)


def test_a_sphere_on_a_ridge_touches_the_ridge(device):
    """A sphere over a roof-shaped ridge is over neither face: one contact at the ridge,
    with the normal from the ridge toward the sphere's centre."""
    x = np.linspace(-1, 1, 5)
    roof = np.tile(1 - np.abs(x), (5, 1))  # ridge along y at x = 0, slopes of 45 degrees (size z 1)
    b = physics.ModelBuilder()
    b.add_hfield("roof", roof, (1, 1, 1, 0.1))
    b.add_shape_hfield(0, hfield="roof")
    body = b.add_body(0, pos=(0.0, 0.1, 1.09), name="ball")
    b.add_joint_free(body)
    b.add_shape_sphere(body, radius=0.1)
    from taigym.physics.collision.driver import Collider
    c = Collider(b.finalize(), 1, device=device, precision="float64")
    c.collide(np.array([[[0, 0, 0], [0.02, 0.1, 1.09]]]), np.array([[[1, 0, 0, 0], [1, 0, 0, 0]]]))
    out = c.get()
    assert out["ncon"][0] == 1
    d = np.hypot(0.02, 0.09)
    np.testing.assert_allclose(out["dist"][0, 0], d - 0.1, atol=1e-12)
    np.testing.assert_allclose(out["frame"][0, 0, 0], np.array([0.02, 0, 0.09]) / d, atol=1e-12)


def test_height_fields_are_rendered(device):
    """Seen from above, a green height field fills the middle of the frame, and its bumps
    shade it unevenly (a flat one would be one colour under the headlight)."""
    from taigym.physics.render import FreeCamera, Renderer
    x = np.linspace(-1, 1, 9)
    X, Y = np.meshgrid(x, x)
    b = physics.ModelBuilder()
    b.add_hfield("bumps", np.sin(3 * X) * np.cos(3 * Y), (1, 1, 0.3, 0.1))
    b.add_shape_hfield(0, hfield="bumps", rgba=(0.2, 0.7, 0.2, 1))
    model = b.finalize()
    world = physics.World(model, 1, device=device)
    frame = Renderer(model, width=64, height=48, device=device, shadows=False).render(
        world, camera=FreeCamera(lookat=(0, 0, 0), distance=2.0, azimuth=90, elevation=-60))[0]
    middle = frame[16:32, 20:44].reshape(-1, 3).astype(int)
    assert np.all(middle[:, 1] > middle[:, 0] + 30) and np.all(middle[:, 1] > middle[:, 2] + 30)
    assert middle[:, 1].max() - middle[:, 1].min() > 20


@pytest.mark.parametrize("body", ['<geom type="ellipsoid" size="0.1 0.07 0.05"/>',
                                  '<geom type="cylinder" size="0.1 0.05"/>'])
def test_ellipsoids_and_cylinders_rest_on_a_flat_hfield_as_on_a_plane(body, device):
    """Through the prisms' convex path, yet still for 10 s: their contacts through a flat
    face are the plane's (EPA's own points there would rattle them, as they rattle
    mujoco's: up to 0.11 m/s for this ellipsoid, 2e-3 for this cylinder)."""
    text = _scene("flat", body).replace('pos="0.1 0.05 0.5"', 'pos="0.1 0.05 0.06"')
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
        assert speed < 1e-3  # measured: 1e-11 (ellipsoid), 1e-4 (cylinder)
        assert np.abs(world.get("qpos")[0] - start).max() < 1e-6  # no drift
        rest.append(world.get("qpos")[0])
    # the same place, the cylinder 0.1 mm higher: the triangles wholly under its disk
    # add contacts (mujoco's prisms do too), so each soft contact carries less and gives less
    np.testing.assert_allclose(rest[0][:2], rest[1][:2], rtol=0, atol=1e-5)
    np.testing.assert_allclose(rest[0][2], rest[1][2], rtol=0, atol=2e-4)
