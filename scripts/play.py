"""Watch a task: run a saved policy (or random actions) and write a video of it.

    python scripts/play.py TaiGym/Reacher-v0 --steps 300 --out results/reacher.mp4
    python scripts/play.py TaiGym/Swimmer-v0 --policy results/swimmer/model.zip --num-envs 4

Every env of the batch runs in one World (the native vector env, which resets ended
episodes itself); with ``--num-envs`` above 1 each video frame is a grid of all envs.
Frames come from the Taichi ray caster with the task config's ``render`` settings, which
``--width``, ``--height``, ``--camera`` and ``--set render.key=value`` override.

The video is an MP4 when imageio's ffmpeg plugin (``pip install "imageio[ffmpeg]"``) is
installed, otherwise a GIF next to the requested path.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Args:
    task: str = "TaiGym/Reacher-v0"
    policy: Path | None = None  # a stable-baselines3 .zip; None: random actions
    algo: str = "PPO"  # the stable-baselines3 class that saved the policy
    deterministic: bool = True
    steps: int = 300  # env steps (one video frame each)
    num_envs: int = 1
    ncols: int | None = None  # grid columns; None: about square
    seed: int = 0
    width: int | None = None
    height: int | None = None
    camera: str | None = None  # a camera of the robot model; None: the config's
    fps: float | None = None  # None: real time (1 / the env's step duration)
    out: Path = Path("results/play.mp4")
    overrides: list[str] = field(default_factory=list)


def parse_args(argv=None) -> Args:
    p = ArgumentParser(prog="taigym play", description=__doc__.split("\n\n")[0])
    p.add_argument("task", nargs="?", default=Args.task, help="registered id or task YAML path (default: %(default)s)")
    p.add_argument("--policy", type=Path, help="a saved stable-baselines3 policy (.zip); default: random actions")
    p.add_argument("--algo", default=Args.algo, help="stable-baselines3 class that saved --policy (default: PPO)")
    p.add_argument("--stochastic", action="store_true", help="sample the policy's actions instead of its mode")
    p.add_argument("--steps", type=int, default=Args.steps, help="env steps to record (default: %(default)s)")
    p.add_argument("--num-envs", type=int, default=Args.num_envs, help="envs shown as a grid (default: 1)")
    p.add_argument("--ncols", type=int, help="grid columns (default: about square)")
    p.add_argument("--seed", type=int, default=Args.seed)
    p.add_argument("--width", type=int, help="frame width of one env [pixels] (default: the config's)")
    p.add_argument("--height", type=int, help="frame height of one env [pixels] (default: the config's)")
    p.add_argument("--camera", help="a camera of the robot model (default: the config's tracking camera)")
    p.add_argument("--fps", type=float, help="video frame rate (default: real time)")
    p.add_argument("--out", type=Path, default=Args.out, help="video path, .mp4 or .gif (default: %(default)s)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="task config override, e.g. render.elevation=-30 (repeatable)")
    ns = p.parse_args(argv)
    if ns.steps < 1 or ns.num_envs < 1:
        p.error("--steps and --num-envs must be >= 1")
    return Args(task=ns.task, policy=ns.policy, algo=ns.algo, deterministic=not ns.stochastic, steps=ns.steps,
                num_envs=ns.num_envs, ncols=ns.ncols, seed=ns.seed, width=ns.width, height=ns.height,
                camera=ns.camera, fps=ns.fps, out=ns.out, overrides=ns.overrides)


# --- policy ------------------------------------------------------------------------------
def load_policy(args: Args, env):
    """A function obs (num_envs, obs_size) -> actions (num_envs, action_size)."""
    if args.policy is None:
        env.action_space.seed(args.seed)
        return lambda obs: env.action_space.sample()
    try:
        import stable_baselines3
    except ImportError:
        raise SystemExit("--policy needs stable-baselines3: pip install 'taigym[train]'") from None
    algo = getattr(stable_baselines3, args.algo, None)
    if algo is None:
        raise SystemExit(f"stable-baselines3 has no algorithm {args.algo!r}")
    model = load_sb3_model(algo, args.policy)
    check_spaces(model, env, args)
    normalize = observation_normalizer(args.policy)

    def act(obs):
        actions, _ = model.predict(normalize(obs), deterministic=args.deterministic)
        return actions

    return act


def load_sb3_model(algo, path: Path, error=SystemExit):
    """``algo.load(path)`` on the CPU; a file it cannot load is refused in one line as ``error``."""
    if not Path(path).is_file():
        raise error(f"{path}: no such policy file")
    try:
        return algo.load(str(path), device="cpu")
    # stable-baselines3 fails on a file it cannot read with whatever its reading hit first
    # (ValueError, AssertionError, a TypeError for a policy saved by another algorithm...)
    except Exception as e:  # noqa: BLE001
        words = " ".join(str(e).split())
        raise error(f"{path}: stable-baselines3's {algo.__name__} cannot load it ({type(e).__name__}: {words}); "
                    "is it a policy saved by that algorithm?") from None


def check_spaces(model, env, args: Args) -> None:
    """A policy trained on other observation or action shapes is refused before any frame."""
    want = (model.observation_space.shape, model.action_space.shape)
    have = (env.single_observation_space.shape, env.single_action_space.shape)
    if want != have:
        raise SystemExit(f"{args.policy}: the policy maps observations of shape {want[0]} to actions of shape "
                         f"{want[1]}; {args.task} has observations {have[0]} and actions {have[1]}")


def observation_normalizer(policy_path: Path):
    """The observation scaling a policy was trained with: train.py saves VecNormalize's
    statistics as vecnormalize.pkl next to the model; without them observations pass as they are."""
    stats = Path(policy_path).with_name("vecnormalize.pkl")
    if not stats.exists():
        return lambda obs: obs
    import pickle

    with open(stats, "rb") as f:
        vecnormalize = pickle.load(f)
    if not getattr(vecnormalize, "norm_obs", False):
        return lambda obs: obs
    rms, clip, eps = vecnormalize.obs_rms, vecnormalize.clip_obs, vecnormalize.epsilon
    return lambda obs: np.clip((obs - rms.mean) / np.sqrt(rms.var + eps), -clip, clip).astype(np.float32)


# --- video -------------------------------------------------------------------------------
def has_ffmpeg() -> bool:
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
        return True
    except (ImportError, RuntimeError):  # not installed, or no binary for this platform
        return False


def video_path(out: Path) -> Path:
    """``out``, or the same name as a GIF when MP4 cannot be written here."""
    if out.suffix.lower() == ".gif":
        return out
    if has_ffmpeg():
        return out if out.suffix else out.with_suffix(".mp4")
    return out.with_suffix(".gif")


class VideoWriter:
    """Appends uint8 RGB frames to an MP4 (ffmpeg, H.264) or a GIF (Pillow)."""

    def __init__(self, path: Path, fps: float):
        import imageio.v2 as imageio

        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        if path.suffix.lower() == ".gif":
            self._writer = imageio.get_writer(path, mode="I", duration=1000.0 / fps, loop=0)
        else:
            # macro_block_size=1: frames are padded to even sizes here, as H.264 needs, not rescaled
            self._writer = imageio.get_writer(path, fps=fps, codec="libx264", quality=7, macro_block_size=1,
                                              pixelformat="yuv420p")

    def append(self, frame: np.ndarray) -> None:
        h, w = frame.shape[:2]
        if h % 2 or w % 2:
            frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)))
        self._writer.append_data(frame)

    def close(self) -> None:
        self._writer.close()


# --- main --------------------------------------------------------------------------------
def make_env(args: Args):
    from taigym.envs.vector import TaiGymVectorEnv

    overrides = list(args.overrides)
    for key, value in (("width", args.width), ("height", args.height), ("camera", args.camera)):
        if value is not None:
            overrides.append(f"render.{key}={value}")
    return TaiGymVectorEnv(args.task, args.num_envs, overrides=overrides, render_mode="rgb_array")


def frame_of(env, ncols) -> np.ndarray:
    from taigym.physics.render import tile

    frames = env.render_frames()
    return frames[0] if len(frames) == 1 else tile(frames, ncols, gap=2)


def main(argv=None) -> int:
    args = parse_args(argv)
    from taigym import envs  # noqa: F401  registers the task ids

    env = make_env(args)
    policy = load_policy(args, env)
    path = video_path(args.out)
    if path != args.out:
        print(f"imageio's ffmpeg plugin is not installed: writing a GIF to {path}")
    writer = VideoWriter(path, args.fps or env.metadata["render_fps"])
    start = time.perf_counter()
    obs, _ = env.reset(seed=args.seed)
    returns, episode_returns = np.zeros(args.num_envs), []
    try:
        writer.append(frame_of(env, args.ncols))
        for _ in range(args.steps):
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            returns += reward
            ended = terminated | truncated
            episode_returns += returns[ended].tolist()
            returns[ended] = 0
            writer.append(frame_of(env, args.ncols))
    finally:
        writer.close()
        env.close()
    seconds = time.perf_counter() - start
    print(f"{args.steps} steps of {args.num_envs} env(s) in {seconds:.1f} s; video: {path}")
    if episode_returns:
        print(f"{len(episode_returns)} episode(s) ended, mean return {np.mean(episode_returns):.2f}")
    else:
        print(f"no episode ended; mean return so far {returns.mean():.2f}")
    return 0


if __name__ == "__main__":
    # run as a file, the repository root is not on sys.path
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
