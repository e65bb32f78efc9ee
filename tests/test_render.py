"""The ray caster: frame format, pinhole projection, every primitive, the robot in view,
determinism, model cameras, and rendering through the envs and scripts/play.py."""

import dataclasses
import math
import os

import gymnasium as gym
import numpy as np
import pytest
from conftest import gym_asset
from taigym.physics.render import FreeCamera, Renderer, TrackingCamera, orbit_frame, tile

from taigym import physics

W, H = 96, 72
COLOURS = {"sphere": (1, 0, 0), "box": (0, 1, 0), "capsule": (0, 0, 1), "cylinder": (1, 0, 1), "ellipsoid": (0, 1, 1)}
SHAPES = {  # name: (builder call, keyword sizes, world position)
    "sphere": ("add_shape_sphere", {"radius": 0.2}, (0.0, 0.0, 0.5)),
    "box": ("add_shape_box", {"hx": 0.15, "hy": 0.15, "hz": 0.15}, (-0.8, 0.0, 0.5)),
    "capsule": ("add_shape_capsule", {"radius": 0.1, "half_height": 0.15}, (0.8, 0.0, 0.5)),
    "cylinder": ("add_shape_cylinder", {"radius": 0.15, "half_height": 0.1}, (-0.4, 0.6, 0.5)),
    "ellipsoid": ("add_shape_ellipsoid", {"rx": 0.2, "ry": 0.12, "rz": 0.1}, (0.4, 0.6, 0.5)),
}
CAMERA = FreeCamera(lookat=(0.0, 0.3, 0.4), distance=3.0, azimuth=90.0, elevation=-25.0, fovy=45.0)
# the env and script tests build their Worlds from task configs, which simulate on the CPU
# (simulation.device: cpu): a process runs one Taichi backend, so they run in the CPU run only
ENVS_ON_CPU = pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda",
                                 reason="task configs simulate on the CPU; covered by the CPU run")


def shapes_model(names=tuple(SHAPES)):
    """A floor and one free body per shape, each shape a pure colour."""
    b = physics.ModelBuilder()
    b.add_shape_plane(0, half_width=5, half_length=5, rgba=(0.9, 0.9, 0.9, 1))
    for name in names:
        call, size, pos = SHAPES[name]
        body = b.add_body(0, pos=pos, name=name)
        b.add_joint_free(body)
        getattr(b, call)(body, rgba=(*COLOURS[name], 1.0), **size)
    return b.finalize()


def reference(model, n=1):
    """Body positions and quaternions (n, nbody, 3|4) at qpos0: identity rotations here."""
    xpos = np.stack([model.body_pos] * n)
    xquat = np.zeros((n, model.nbody, 4))
    xquat[..., 0] = 1
    return xpos, xquat


def project(point, camera: FreeCamera, width, height):
    """Pixel (column, row) of a world point: the pinhole model with MuJoCo's orbit camera.

    x_pix = (1 + (v.right / v.fwd) / (tan(fovy/2) * W/H)) * W/2 - 1/2,
    y_pix = (1 - (v.up / v.fwd) / tan(fovy/2)) * H/2 - 1/2, with v = point - camera position.
    """
    az, el = math.radians(camera.azimuth), math.radians(camera.elevation)
    fwd = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    right = np.cross(fwd, [0, 0, 1])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    v = np.asarray(point) - (np.asarray(camera.lookat) - camera.distance * fwd)
    tan_half = math.tan(math.radians(camera.fovy) / 2)
    x = (1 + v @ right / (v @ fwd) / (tan_half * width / height)) * width / 2 - 0.5
    y = (1 - v @ up / (v @ fwd) / tan_half) * height / 2 - 0.5
    return x, y


def test_frames_are_uint8_rgb_of_the_requested_size(device):
    model = shapes_model()
    frames = Renderer(model, width=W, height=H, device=device).render_poses(*reference(model, 3), camera=CAMERA)
    assert frames.shape == (3, H, W, 3) and frames.dtype == np.uint8
    assert frames.std() > 10  # not one flat colour


def test_sphere_projects_to_the_pinhole_pixel(device):
    model = shapes_model(["sphere"])
    # off the image centre, so that a wrong axis or sign moves it
    camera = dataclasses.replace(CAMERA, lookat=(0.3, -0.2, 0.9))
    renderer = Renderer(model, width=W, height=H, device=device)
    frame = renderer.render_poses(*reference(model), camera=camera)[0].astype(int)
    centre = np.asarray(SHAPES["sphere"][2])
    x, y = project(centre, camera, W, H)
    assert 5 < x < W - 5 and 5 < y < H - 5
    red = (frame[..., 0] > 2 * frame[..., 1] + 20) & (frame[..., 0] > 2 * frame[..., 2] + 20)
    rows, cols = np.nonzero(red)
    # the disc's centroid is the projected centre (perspective shifts it by far less than a pixel here)
    assert abs(cols.mean() - x) < 1.0 and abs(rows.mean() - y) < 1.0
    # its radius: tan(asin(r / distance)) / tan(fovy / 2) * H / 2
    dist = np.linalg.norm(centre - orbit_frame(np.array(camera.lookat), camera.distance, camera.azimuth,
                                               camera.elevation)[0][0])
    radius = math.tan(math.asin(0.2 / dist)) / math.tan(math.radians(camera.fovy) / 2) * H / 2
    assert abs(math.sqrt(red.sum() / math.pi) - radius) < 1.0


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_primitive_is_drawn_where_it_projects(name, device):
    model = shapes_model()
    frame = Renderer(model, width=W, height=H, device=device).render_poses(*reference(model), camera=CAMERA)[0]
    x, y = project(SHAPES[name][2], CAMERA, W, H)
    pixel = frame[round(float(y)), round(float(x))].astype(int)
    colour = np.array(COLOURS[name])
    # lit and shaded, the pixel keeps its colour's hue: its bright channels beat its dark ones
    assert pixel[colour == 1].min() > pixel[colour == 0].max() + 30, pixel


def test_rotated_box_faces_follow_its_quaternion(device):
    model = shapes_model(["box"])
    xpos, xquat = reference(model, 2)
    # turned 45 degrees about z, the box shows an edge to the camera: its silhouette widens by
    # sqrt(2), less the perspective of the front face being 0.15 m nearer (x 2.85 / 3)
    xquat[1, 1] = (math.cos(math.pi / 8), 0, 0, math.sin(math.pi / 8))
    head_on = FreeCamera(lookat=SHAPES["box"][2], distance=3.0, azimuth=90.0, elevation=0.0)
    renderer = Renderer(model, width=2 * W, height=2 * H, device=device, shadows=False)
    frames = renderer.render_poses(xpos, xquat, camera=head_on)
    green = (frames[..., 1].astype(int) > frames[..., 0] + 40)
    widths = [np.ptp(np.nonzero(g.any(0))[0]) + 1 for g in green]
    assert 1.22 < widths[1] / widths[0] < 1.46, widths  # 1.34 +- a pixel


def test_rendering_is_deterministic(device):
    model = shapes_model()
    renderer = Renderer(model, width=W, height=H, device=device)
    pose = reference(model, 2)
    first = renderer.render_poses(*pose, camera=CAMERA)
    assert np.array_equal(first, renderer.render_poses(*pose, camera=CAMERA))
    assert np.array_equal(first[0], first[1])  # same pose, same frame, whichever env


@pytest.fixture(scope="module")
def ant_world(device):
    model = physics.load_model(gym_asset("ant"))
    # float64, as the gymnasium task configs below: one step kernel compiles for the whole module
    world = physics.World(model, num_envs=2, device=device, precision="float64")
    world.set_state(qpos=model.visual["custom"]["init_qpos"])
    world.forward()
    return world


def test_the_ant_is_in_view_and_on_its_checkered_floor(ant_world, device):
    model = ant_world.model
    frame = Renderer(model, width=W, height=H, device=device).render(ant_world, env_ids=[1])[0]
    hidden = np.array(model.geom_rgba)
    hidden[model.geom_bodyid > 0, 3] = 0  # the robot's geoms invisible
    no_robot = Renderer(dataclasses.replace(model, geom_rgba=hidden), width=W, height=H,
                        device=device).render(ant_world, [1])[0]
    differs = np.abs(frame.astype(int) - no_robot).sum(-1) > 30
    assert differs.mean() > 0.03  # the robot covers a good part of the frame
    # the default tracking camera looks at the torso: the image centre is robot colour (0.8, 0.6, 0.4)
    r, g, b = frame[H // 2, W // 2].astype(int)
    assert r > g > b and r > 60
    # the floor's checker (black and light squares) fills the lower part of the view
    floor = no_robot[int(0.75 * H):].reshape(-1, 3).astype(int).sum(-1)
    assert (floor < 60).mean() > 0.2 and (floor > 300).mean() > 0.2


def test_model_camera_looks_along_minus_z_with_y_up(ant_world, device):
    # ant.xml's "track" camera sits 3 m behind the torso (-y) and 0.3 m above it, looking along +y:
    # the torso is in the middle column, a little below the middle row; upside down it would be above
    renderer = Renderer(ant_world.model, width=W, height=H, device=device)
    frame = renderer.render(ant_world, [0], camera="track")[0].astype(int)
    torso = ant_world.get("xpos")[0, 1]
    below = 0.3 / 3.0 / math.tan(math.radians(22.5)) * H / 2
    r, g, b = frame[round(H / 2 - 0.5 + below), W // 2]
    assert r > g > b and r > 60
    assert torso[2] > 0.3


def test_tracking_camera_follows_each_env(ant_world, device):
    renderer = Renderer(ant_world.model, width=W, height=H, device=device)
    xpos, xquat = ant_world.get("xpos")[:1], ant_world.get("xquat")[:1]
    moved = xpos.copy()
    moved[..., 0] += 5.0  # the whole robot 5 m along x
    still, follows = renderer.render_poses(np.concatenate([xpos, moved]), np.concatenate([xquat, xquat]),
                                           camera=TrackingCamera(body="torso"))
    # the robot looks the same; only the floor's checker, now seen from elsewhere, may differ
    centre = (slice(H // 3, 2 * H // 3), slice(W // 3, 2 * W // 3))
    assert np.abs(still[centre].astype(int) - follows[centre]).max() <= 2
    with pytest.raises(KeyError, match="no body"):
        renderer.resolve_camera(TrackingCamera(body="nope"))
    with pytest.raises(KeyError, match="no camera named"):
        renderer.resolve_camera("nope")


def test_tile_puts_frames_in_a_grid():
    frames = np.arange(5)[:, None, None, None] * np.ones((5, 4, 6, 3), dtype=np.uint8)
    grid = tile(frames, 3, gap=1)
    assert grid.shape == (2 * 4 + 1, 3 * 6 + 2, 3)
    assert (grid[5:, 7:13] == 4).all() and (grid[5:, 14:] == 0).all()  # frame 4, then an empty cell


@ENVS_ON_CPU
def test_gym_make_renders_rgb_array_frames():
    from taigym import envs  # noqa: F401

    env = gym.make("TaiGym/Swimmer-v0", render_mode="rgb_array", overrides=["render.width=64", "render.height=48"])
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frame = env.render()
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8 and frame.std() > 5
    env.close()
    vec = gym.make_vec("TaiGym/Swimmer-v0", num_envs=3, render_mode="rgb_array",
                       overrides=["render.width=32", "render.height=24"])
    vec.reset(seed=0)
    frames = vec.render()
    assert isinstance(frames, tuple) and len(frames) == 3 and frames[0].shape == (24, 32, 3)
    vec.close()


def test_bad_render_settings_are_refused_before_simulation():
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.tasks import ConfigError

    with pytest.raises(ConfigError, match="render.camera") as e:
        TaiGymVectorEnv("TaiGym/Swimmer-v0", 1, overrides=["render.camera=trakc"])
    assert e.value.suggestion == "track"
    with pytest.raises(ConfigError, match="render"):
        TaiGymVectorEnv("TaiGym/Swimmer-v0", 1, overrides=["render.widht=64"])
    with pytest.raises(ValueError, match="render_mode"):
        TaiGymVectorEnv("TaiGym/Swimmer-v0", 1, render_mode="human")


@ENVS_ON_CPU
def test_play_writes_a_video(tmp_path):
    from taigym.scripts.play import main

    out = tmp_path / "play.mp4"
    assert main(["TaiGym/Reacher-v0", "--steps", "10", "--num-envs", "2", "--width", "48", "--height", "48",
                 "--out", str(out)]) == 0
    written = [p for p in tmp_path.iterdir() if p.suffix in (".mp4", ".gif")]
    assert len(written) == 1 and written[0].stat().st_size > 1000


@ENVS_ON_CPU
def test_play_normalizes_observations_like_training(tmp_path):
    """A policy trained with VecNormalize sees the same scaled observations in play.py."""
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    from taigym.scripts.play import observation_normalizer

    from taigym import envs  # noqa: F401  (registers the TaiGym ids)

    venv = vec_env.VecNormalize(vec_env.DummyVecEnv([lambda: gym.make("TaiGym/Reacher-v0")]))
    venv.obs_rms.mean[:] = 1.0
    venv.obs_rms.var[:] = 4.0
    venv.save(str(tmp_path / "vecnormalize.pkl"))
    scale = observation_normalizer(tmp_path / "model.zip")
    obs = np.full((2, venv.observation_space.shape[0]), 3.0)
    np.testing.assert_allclose(scale(obs), (3.0 - 1.0) / np.sqrt(4.0 + venv.epsilon), rtol=1e-6)
    assert observation_normalizer(tmp_path / "elsewhere" / "model.zip")(obs) is obs
