"""The simulators taigym's tasks port, measured as a taigym run is: evaluation, video, settings.

Those are Gymnasium's own MuJoCo envs (``<Task>-v5``) and dm_control's Control Suite tasks
through their Gymnasium adapter (``dm_control/<domain>-<task>-v0``, scripts/dm_control_env.py).
A leaderboard cell on either trains through ``scripts/train.py`` like one on a ``TaiGym/`` id;
these give its records the same keys as ``scripts/results.py`` gives a taigym run's, so that
the two sit side by side.
"""

from __future__ import annotations

import time
from pathlib import Path

DM_CONTROL_PREFIX = "dm_control/"  # scripts/dm_control_env.PREFIX, without importing dm_control


def is_dm_control_id(env_id: str) -> bool:
    return str(env_id).startswith(DM_CONTROL_PREFIX)


def register(env_id: str) -> None:
    """Registers dm_control's ids where ``env_id`` is one: Gymnasium knows them only once
    scripts/dm_control_env.py has registered them in this process (a fresh worker has not)."""
    if is_dm_control_id(env_id):
        from taigym.scripts.dm_control_env import register_all

        register_all()


def make(env_id: str, **kwargs):
    """``gym.make(env_id)``, dm_control's ids registered first."""
    import gymnasium as gym

    register(env_id)
    return gym.make(env_id, **kwargs)


def mujoco_data(env):
    """The env's MuJoCo data (contacts, constraint rows): Gymnasium's ``data`` or dm_control's
    ``physics.data``."""
    base = env.unwrapped
    return base.physics.data if is_dm_control_id(env.spec.id) else base.data


def renderer_name(env_id: str) -> str:
    return "dm_control's renderer" if is_dm_control_id(env_id) else "MuJoCo's renderer"


def evaluate_gymnasium(env_id: str, policy, episodes: int, *, seed: int) -> dict:
    """``results.evaluate_policy`` on ``gym.make(env_id)``: ``episodes`` deterministic episodes,
    each from its own seed, with MuJoCo's contacts and constraint rows sampled alike."""
    import numpy as np
    from taigym.scripts.results import EVAL_SEED_OFFSET

    start = time.perf_counter()
    env = make(env_id)
    data = mujoco_data(env)
    returns, lengths, nefc, ncon = [], [], [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
        total, steps, done = 0.0, 0, False
        while not done:
            action = np.asarray(policy(obs[None])).reshape(env.action_space.shape)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, steps, done = total + float(reward), steps + 1, terminated or truncated
            if steps % 10 == 1:  # a sample every 10 steps is enough for a mean
                nefc.append(int(data.nefc))
                ncon.append(int(data.ncon))
        returns.append(total)
        lengths.append(steps)
    env.close()
    return {
        "returns": returns, "lengths": lengths,
        "return_mean": float(np.mean(returns)), "return_std": float(np.std(returns)),
        "length_mean": float(np.mean(lengths)),
        "nefc_per_env": float(np.mean(nefc)) if nefc else 0.0,
        "ncon_per_env": float(np.mean(ncon)) if ncon else 0.0,
        "eval_wall_time_s": time.perf_counter() - start,
    }


def record_gymnasium_video(env_id: str, policy, path: Path, *, steps: int, seed: int) -> dict:
    """``results.record_video`` through MuJoCo's (or dm_control's) renderer; ``{"video": None,
    "video_note": why}`` where it cannot draw, so that a run without OpenGL still finishes."""
    import numpy as np
    from taigym.scripts.play import VideoWriter, video_path
    from taigym.scripts.results import EVAL_SEED_OFFSET

    env = None
    try:
        env = make(env_id, render_mode="rgb_array")
        obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET)
        first = env.render()
    except Exception as e:  # noqa: BLE001  no OpenGL here (EGL, OSMesa or a display): each fails its own way
        if env is not None:
            env.close()
        return {"video": None, "video_note": f"no video: {renderer_name(env_id)} failed ({type(e).__name__}: {e}); "
                                             "MUJOCO_GL=egl or osmesa selects a renderer without a display"}
    out = video_path(Path(path))
    writer = VideoWriter(out, env.metadata["render_fps"])
    try:
        writer.append(first)
        for _ in range(steps):
            obs, _, terminated, truncated, _ = env.step(np.asarray(policy(obs[None])).reshape(env.action_space.shape))
            writer.append(env.render())
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        writer.close()
        env.close()
    return {"video": out.name}


def gymnasium_simulation_settings(env_id: str) -> dict:
    """``results.simulation_settings``' keys, read from the env's MuJoCo model: Gymnasium's
    MuJoCo env or dm_control's task."""
    import gymnasium as gym
    import mujoco

    env = make(env_id)
    base = env.unwrapped
    if is_dm_control_id(env_id):
        import importlib.metadata

        dm = base.dm_env
        model, control_dt = base.physics.model, float(dm.control_timestep())
        frame_skip = round(control_dt / float(model.opt.timestep))
        episode_length = int(dm._step_limit)  # the task's time limit in control steps
        engine = f"MuJoCo {mujoco.__version__} (dm_control {importlib.metadata.version('dm_control')})"
    else:
        model, control_dt, frame_skip = base.model, float(base.dt), int(base.frame_skip)
        episode_length = int(env.spec.max_episode_steps or 0)
        engine = f"MuJoCo {mujoco.__version__} (Gymnasium {gym.__version__})"
    opt = model.opt
    solvers = {int(mujoco.mjtSolver.mjSOL_PGS): "PGS", int(mujoco.mjtSolver.mjSOL_CG): "CG",
               int(mujoco.mjtSolver.mjSOL_NEWTON): "Newton"}
    cones = {int(mujoco.mjtCone.mjCONE_PYRAMIDAL): "pyramidal", int(mujoco.mjtCone.mjCONE_ELLIPTIC): "elliptic"}
    integrators = {int(mujoco.mjtIntegrator.mjINT_EULER): "Euler", int(mujoco.mjtIntegrator.mjINT_RK4): "RK4",
                   int(mujoco.mjtIntegrator.mjINT_IMPLICIT): "implicit",
                   int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): "implicitfast"}
    settings = {
        "action_source": f"MuJoCo ctrl on {model.nu} actuator(s)",
        "observation_size": int(env.observation_space.shape[0]),
        "solver": f"{solvers.get(int(opt.solver), opt.solver)} ({cones.get(int(opt.cone), opt.cone)} cones)",
        "solver_iterations": int(opt.iterations),
        "timestep_s": float(opt.timestep),
        "frame_skip": frame_skip,
        "control_dt_s": control_dt,
        "integrator": integrators.get(int(opt.integrator), str(opt.integrator)),
        "precision": "float64",  # MuJoCo computes in double precision
        "sim_device": "cpu",
        "episode_length": episode_length,
        "engine": engine,
    }
    env.close()
    return settings
