"""dm_control's Control Suite tasks as Gymnasium envs: the peer that taigym's Control Suite
tasks are measured and trained beside (``taigym benchmark-envs``, the leaderboard).

dm_control 1.0.50 names every mjModel and mjData array in a table written for MuJoCo 3;
MuJoCo 4 dropped a few of them (``flex_vertedge``), and dm_control's named indexing fails on
the first. :func:`suite` drops from that table the arrays the installed MuJoCo lacks, which
no Control Suite task reads, before it returns ``dm_control.suite``.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
from gymnasium import spaces

PREFIX = "dm_control/"  # ids as Shimmy names them: dm_control/cartpole-swingup-v0


@functools.lru_cache(maxsize=None)
def suite():
    """``dm_control.suite``, its named indexing fitted to the installed MuJoCo."""
    import mujoco
    from dm_control import suite as dm_suite
    from dm_control.mujoco.wrapper.mjbindings import sizes

    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    for struct, instance in (("mjmodel", model), ("mjdata", mujoco.MjData(model))):
        table = sizes.array_sizes[struct]
        for name in [name for name in table if not hasattr(instance, name)]:
            del table[name]
    return dm_suite


def flat(observation) -> np.ndarray:
    """dm_control's observation dict flattened in its key order."""
    return np.concatenate([np.atleast_1d(v).ravel() for v in observation.values()])


class DmControlEnv(gym.Env):
    """One dm_control suite task: flattened float64 observations, its reward, truncated at
    its time limit, never terminated; ``render_mode="rgb_array"`` draws camera 0 (dm_control's
    renderer needs OpenGL: EGL, OSMesa or a display, chosen by ``MUJOCO_GL``)."""

    metadata = {"render_modes": ["rgb_array"]}
    RENDER_SIZE = (480, 480)  # height, width: Gymnasium's MuJoCo envs' default

    def __init__(self, domain: str, task: str, render_mode: str | None = None):
        self._env = suite().load(domain, task, task_kwargs={"random": 0})
        self.render_mode = render_mode
        # a video plays at the task's control rate
        self.metadata = {**self.metadata, "render_fps": round(1.0 / self._env.control_timestep())}
        spec = self._env.action_spec()
        self.action_space = spaces.Box(spec.minimum.astype(np.float32), spec.maximum.astype(np.float32),
                                       dtype=np.float32)
        size = sum(int(np.prod(s.shape)) for s in self._env.observation_spec().values())
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float64)

    @property
    def physics(self):
        return self._env.physics

    @property
    def dm_env(self):
        """The wrapped ``dm_control.rl.control.Environment`` (its control timestep, step limit)."""
        return self._env

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            # the task draws its initial states from its own RandomState, which suite.load seeded
            self._env.task._random = np.random.RandomState(seed)  # noqa: SLF001
        return flat(self._env.reset().observation), {}

    def step(self, action):
        ts = self._env.step(action)
        return flat(ts.observation), float(ts.reward), False, ts.last(), {}

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        return self._env.physics.render(*self.RENDER_SIZE, camera_id=0)


def register_all() -> list[str]:
    """Registers ``dm_control/<domain>-<task>-v0`` for every benchmarking task; their ids."""
    ids = []
    for domain, task in suite().BENCHMARKING:
        env_id = f"{PREFIX}{domain}-{task}-v0"
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=DmControlEnv, kwargs={"domain": domain, "task": task})
        ids.append(env_id)
    return ids
