"""The ``camera`` observation (from pixels): frames of every env rendered in the step.

On dm_control's cartpole (cameras ``fixed`` and ``lookatcart``), float64.
"""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from taigym.envs.single import TaiGymEnv
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks.errors import ConfigError

TASK = "TaiGym/cartpole-swingup-v0"
STATE = [{"term": "qpos"}, {"term": "qvel"}]
SIZE = (84, 84)


def camera(name="fixed", **params):
    return {"term": "camera", "params": {"camera": name, "width": SIZE[1], "height": SIZE[0], **params}}


def make(num_envs=2, observations=(), resets=None, **kwargs):
    overrides = {"observations": list(observations)}
    if resets is not None:
        overrides["resets"] = resets
    overrides.update(kwargs.pop("overrides", {}))
    return TaiGymVectorEnv(TASK, num_envs, overrides=overrides, **kwargs)


# the pole anywhere, the cart along its rail
SPREAD = [{"term": "qpos_add_uniform", "params": {"joints": ["slider"], "low": -1.0, "high": 1.0}},
          {"term": "qpos_add_uniform", "params": {"joints": ["hinge_1"], "low": -3.0, "high": 3.0}}]
# one fixed state: every reset the same
FIXED = [{"term": "qpos_add_normal", "params": {"joints": ["slider"], "mean": 0.4, "std": 0.0}},
         {"term": "qpos_add_normal", "params": {"joints": ["hinge_1"], "mean": 0.7, "std": 0.0}}]


def test_frames_are_world_render_and_what_play_shows():
    # taigym play renders the env's render_frames (the config's render section) through the
    # same Renderer.render as World.render
    play = {"render.camera": "fixed", "render.width": SIZE[1], "render.height": SIZE[0]}
    env = make(3, [*STATE, camera()], resets=SPREAD, render_mode="rgb_array", overrides=play)
    obs, _ = env.reset(seed=3)
    for _ in range(4):
        pixels = obs["pixels"]
        assert pixels.shape == (3, *SIZE, 3) and pixels.dtype == np.uint8
        assert np.array_equal(pixels, env.world.render(width=SIZE[1], height=SIZE[0], camera="fixed"))
        assert np.array_equal(pixels, env.render_frames())
        assert len({f.tobytes() for f in pixels}) == 3  # three states, three frames
        obs, *_ = env.step(env.action_space.sample())


# --- the silhouette: pixels that change between two envs' frames are where the cart and
# pole of one of them project through the fixed camera (pos 0 -4 1, looking along +y, fovy 45)
CAM_POS, FOVY, POLE_RADIUS = np.array([0.0, -4.0, 1.0]), 45.0, 0.045


def project(points):
    """(x, y) pixel coordinates (pixel centres at integers) of world points."""
    rel = np.asarray(points) - CAM_POS
    depth, tan_half = rel[..., 1], np.tan(np.radians(FOVY) / 2)
    h, w = SIZE
    x = (rel[..., 0] / (depth * tan_half * w / h) + 1) * w / 2 - 0.5
    y = (1 - rel[..., 2] / (depth * tan_half)) * h / 2 - 0.5
    return np.stack([x, y], -1), depth


def pole_distance(xpos, xmat):
    """Each pixel's distance [px] from the pole's projected axis, and its projected radius."""
    ends, depth = project(np.stack([xpos, xpos + xmat[:, 2]]))
    yy, xx = np.mgrid[0:SIZE[0], 0:SIZE[1]]
    p = np.stack([xx, yy], -1).astype(float)
    a, b = ends
    t = np.clip(((p - a) @ (b - a)) / ((b - a) @ (b - a)), 0, 1)
    dist = np.linalg.norm(p - (a + t[..., None] * (b - a)), axis=-1)
    return dist, POLE_RADIUS / depth.min() * (SIZE[0] / 2) / np.tan(np.radians(FOVY) / 2)


def cart_box(xpos, margin):
    """Pixels in the box's image: within ``margin`` of its corners' bounding rectangle, or for
    a negative margin, that far inside its front face (y = -0.15), which it surely covers."""
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    corners, _ = project(xpos + signs * [0.2, 0.15, 0.1])
    if margin < 0:
        corners = corners[signs[:, 1] < 0]
    (x0, y0), (x1, y1) = corners.min(0), corners.max(0)
    yy, xx = np.mgrid[0:SIZE[0], 0:SIZE[1]]
    return (xx >= x0 - margin) & (xx <= x1 + margin) & (yy >= y0 - margin) & (yy <= y1 + margin)


def silhouette(world, i, margin):
    """Pixels within ``margin`` of env i's cart or pole in the image."""
    xpos, xmat = world.get("xpos")[i], world.get("xmat")[i].reshape(-1, 3, 3)
    cart, pole = (world.model.body(name) for name in ("cart", "pole_1"))
    dist, radius = pole_distance(xpos[pole], xmat[pole])
    return (dist <= radius + margin) | cart_box(xpos[cart], margin)


def test_pixels_that_change_are_where_the_cart_and_pole_project():
    env = make(6, [camera(shadows=False)], resets=SPREAD)
    frames, _ = env.reset(seed=11)
    env.action_space.seed(11)
    checked = 0
    for _ in range(2):
        for i, j in [(0, 1), (2, 3), (4, 5), (1, 4)]:
            changed = (frames[i] != frames[j]).any(-1)
            may_change = silhouette(env.world, i, 1.0) | silhouette(env.world, j, 1.0)
            assert not (changed & ~may_change).any(), f"envs {i}, {j}: pixels changed away from cart and pole"
            # well inside env i's pole or cart, away from env j's and from the rail in front
            # (a static capsule at the cart's height)
            must_change = silhouette(env.world, i, -0.7) & ~silhouette(env.world, j, 1.5)
            must_change[SIZE[0] // 2 - 3 : SIZE[0] // 2 + 3] = False
            assert changed[must_change].all(), f"envs {i}, {j}: pixels of env {i}'s cart or pole unchanged"
            checked += must_change.sum()
        for _ in range(25):  # until the poles have fallen a good way: frames of the new state
            frames, *_ = env.step(env.action_space.sample())
    assert checked >= 50  # carts and poles apart often enough to see them


def test_state_and_pixels_pass_check_env_and_the_vector_spaces_hold_the_arrays():
    env = TaiGymEnv(TASK, overrides={"observations": [*STATE, camera()]})
    assert isinstance(env.observation_space, gym.spaces.Dict)
    assert set(env.observation_space.spaces) == {"state", "pixels"}
    check_env(env.unwrapped, skip_render_check=True)
    venv = make(3, [*STATE, camera(), camera("lookatcart", width=32, height=24)])
    space = venv.observation_space
    assert set(space.spaces) == {"state", "fixed", "lookatcart"}
    obs, _ = venv.reset(seed=0)
    for _ in range(2):
        assert space.contains(obs)
        assert {k: (v.shape, v.dtype) for k, v in obs.items()} == {k: (s.shape, s.dtype) for k, s in space.spaces.items()}
        assert obs["lookatcart"].shape == (3, 24, 32, 3)
        obs, *_ = venv.step(venv.action_space.sample())
    only = make(2, [camera()])
    assert only.single_observation_space == gym.spaces.Box(0, 255, (*SIZE, 3), np.uint8)
    frames, _ = only.reset(seed=0)
    assert only.observation_space.contains(frames)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_autoreset_frames_are_of_the_reset_state(mode):
    env = make(2, [*STATE, camera()], resets=FIXED, autoreset_mode=mode, max_episode_steps=3)
    first, _ = env.reset(seed=0)
    assert np.array_equal(first["pixels"][0], first["pixels"][1])  # the same fixed state
    actions = np.ones((2, 1), dtype=np.float32)
    for _ in range(3):
        obs, _, _, truncated, info = env.step(actions)
    assert truncated.all()
    last = obs
    if mode == "NextStep":
        obs, *_ = env.step(actions)
    else:
        final = info["final_obs"]
        assert not np.array_equal(final[0]["pixels"], first["pixels"][0])  # the episode's last state
        assert not np.allclose(final[0]["state"], first["state"][0])
    assert np.array_equal(obs["pixels"], first["pixels"])
    assert np.array_equal(obs["state"], first["state"])
    if mode == "NextStep":
        assert not np.array_equal(last["pixels"], first["pixels"])


def test_torch_outputs_are_a_dict_of_tensors():
    torch = pytest.importorskip("torch")
    env = make(2, [*STATE, camera()], resets=FIXED, autoreset_mode="SameStep", max_episode_steps=1,
               tensor_backend="torch")
    first, _ = env.reset(seed=0)
    obs, _, _, truncated, info = env.step(torch.zeros(2, 1))
    assert truncated.all() and obs["pixels"].dtype == torch.uint8 and obs["state"].dtype == torch.float64
    assert torch.equal(obs["pixels"], first["pixels"])  # both reset to the fixed state
    assert set(info["final_obs"]) == {"state", "pixels"} and info["final_obs"]["pixels"].shape == (2, *SIZE, 3)


def test_sb3_vec_env_takes_dict_observations():
    pytest.importorskip("stable_baselines3")
    from taigym.envs.sb3 import TaiGymVecEnv

    env = TaiGymVecEnv(TASK, 2, overrides={"observations": [*STATE, camera()], "episode_length": 2})
    obs = env.reset()
    assert obs["pixels"].shape == (2, *SIZE, 3) and obs["state"].shape == (2, 4)
    for _ in range(2):
        env.step_async(np.zeros((2, 1)))
        obs, _, dones, infos = env.step_wait()
    assert dones.all() and set(infos[0]["terminal_observation"]) == {"state", "pixels"}


@pytest.mark.parametrize("params, key, message", [
    ({"camera": "fixd"}, "params.camera", "no camera 'fixd'.*did you mean 'fixed'"),
    ({"camera": 5}, "params.camera", r"camera index 5 is not in \[0, 2\)"),
    ({"camera": "fixed", "width": 0}, "params.width", "out of range, got 0 .*pixels a side"),
    ({"camera": "fixed", "height": -3}, "params.height", "out of range, got -3 .*pixels a side"),
])
def test_bad_camera_params_are_refused_at_their_key(params, key, message):
    with pytest.raises(ConfigError, match=rf"observations\[1\]\.{key}.*{message}") as e:
        make(1, [STATE[0], {"term": "camera", "params": params}])
    assert "\n" not in str(e.value)


def test_camera_takes_no_noise():
    with pytest.raises(ConfigError, match=r"observations\[0\]\.noise.*no noise"):
        make(1, [{**camera(), "noise": {"kind": "uniform", "scale": 0.1}}])
