"""Gymnasium's own MuJoCo envs measured as a taigym run is: evaluation, video, settings.

A leaderboard cell on ``<Task>-v5`` trains through ``scripts/train.py`` like one on
``TaiGym/<Task>-v0``; these give its records the same keys as ``scripts/results.py`` gives a
taigym run's, so that the two sit side by side.
"""

from __future__ import annotations

import time
from pathlib import Path


def evaluate_gymnasium(env_id: str, policy, episodes: int, *, seed: int) -> dict:
    """``results.evaluate_policy`` on ``gym.make(env_id)``: ``episodes`` deterministic episodes,
    each from its own seed, with MuJoCo's contacts and constraint rows sampled alike."""
    import gymnasium as gym
    import numpy as np
    from taigym.scripts.results import EVAL_SEED_OFFSET

    start = time.perf_counter()
    env = gym.make(env_id)
    returns, lengths, nefc, ncon = [], [], [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
        total, steps, done = 0.0, 0, False
        while not done:
            action = np.asarray(policy(obs[None])).reshape(env.action_space.shape)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, steps, done = total + float(reward), steps + 1, terminated or truncated
            if steps % 10 == 1:  # a sample every 10 steps is enough for a mean
                nefc.append(env.unwrapped.data.nefc)
                ncon.append(env.unwrapped.data.ncon)
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
    """``results.record_video`` through MuJoCo's renderer; ``{"video": None, ...}`` where it cannot draw."""
    import gymnasium as gym
    import numpy as np
    from taigym.scripts.play import VideoWriter, video_path
    from taigym.scripts.results import EVAL_SEED_OFFSET

    try:
        env = gym.make(env_id, render_mode="rgb_array")
        obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET)
        first = env.render()
    except Exception as e:  # noqa: BLE001  no OpenGL here (EGL, OSMesa or a display): each fails its own way
        return {"video": None, "video_note": f"no video: MuJoCo's renderer failed ({type(e).__name__}: {e})"}
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
    """``results.simulation_settings``' keys, read from the Gymnasium env's MuJoCo model."""
    import gymnasium as gym
    import mujoco

    env = gym.make(env_id)
    base, opt = env.unwrapped, env.unwrapped.model.opt
    solvers = {int(mujoco.mjtSolver.mjSOL_PGS): "PGS", int(mujoco.mjtSolver.mjSOL_CG): "CG",
               int(mujoco.mjtSolver.mjSOL_NEWTON): "Newton"}
    cones = {int(mujoco.mjtCone.mjCONE_PYRAMIDAL): "pyramidal", int(mujoco.mjtCone.mjCONE_ELLIPTIC): "elliptic"}
    integrators = {int(mujoco.mjtIntegrator.mjINT_EULER): "Euler", int(mujoco.mjtIntegrator.mjINT_RK4): "RK4",
                   int(mujoco.mjtIntegrator.mjINT_IMPLICIT): "implicit",
                   int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): "implicitfast"}
    settings = {
        "action_source": f"MuJoCo ctrl on {base.model.nu} actuator(s)",
        "observation_size": int(env.observation_space.shape[0]),
        "solver": f"{solvers.get(int(opt.solver), opt.solver)} ({cones.get(int(opt.cone), opt.cone)} cones)",
        "solver_iterations": int(opt.iterations),
        "timestep_s": float(opt.timestep),
        "frame_skip": int(base.frame_skip),
        "control_dt_s": float(base.dt),
        "integrator": integrators.get(int(opt.integrator), str(opt.integrator)),
        "precision": "float64",  # MuJoCo computes in double precision
        "sim_device": "cpu",
        "episode_length": int(env.spec.max_episode_steps or 0),
        "engine": f"MuJoCo {mujoco.__version__} (Gymnasium {gym.__version__})",
    }
    env.close()
    return settings
