"""StepContext: what terms see after a step, as arrays with a leading env axis.

Terms read World quantities (``qpos``, ``xpos``, ...) through :meth:`StepContext.get`.
The env fills a context with every quantity its terms declared, right after the physics
step, so that a later ``forward()`` (to compute reset envs' observations) cannot change
what the other envs' terms see: body positions after a step are those of the last
substep's forward pass, as in MuJoCo and Gymnasium.

Terms that difference a quantity over the control period (a forward velocity) also read
its value before the step through :meth:`StepContext.get_prev`: the snapshot the env kept
from the previous step or reset, so it too is the one MuJoCo's data held at that moment.

Per-env task state that is not World data persists in the env and is lent to the context:
``commands`` (the goals drawn by command terms, :meth:`StepContext.command`) and ``memory``
(buffers terms declared in ``Term.memory``, updated in place by the terms that own them).

The arrays are numpy arrays, or torch tensors on the World's device when the env runs with
``tensor_backend="torch"``; ``ctx.xp`` (:mod:`tasks.arrays`) computes on either.
"""

from __future__ import annotations

import numpy as np

from .arrays import NUMPY


def snapshot(world, keys, env_ids=None, tensors=False) -> dict:
    """Copies of World quantities ``keys`` (all envs, or rows ``env_ids``), as numpy arrays or
    (``tensors``) torch tensors on the World's device."""
    get = world.get_tensor if tensors else world.get
    out = {}
    for key in keys:
        value = get(key)
        out[key] = value if env_ids is None else value[env_ids]
    return out


class StepContext:
    """Batched inputs of the terms for one step (or one reset)."""

    def __init__(self, model, data: dict, *, dt: float, action=None, prev=None, terminated=None, commands=None,
                 memory=None, xp=NUMPY):
        self.model = model
        self.xp = xp  # the array namespace of ``data`` (tasks.arrays)
        self.data = data
        self.dt = dt  # control period: timestep * frame_skip
        self.action = action  # (num_envs, nu_action) as given by the policy; None at reset
        self.prev = prev  # {quantity: value before the step} (Task.prev_needs); None at reset
        self.terminated = terminated  # filled before rewards are computed
        self.commands = commands  # {command name: (num_envs, size)}, the env's current commands
        self.memory = memory  # {buffer name: (num_envs, width)}, Term.memory, kept by the env

    @property
    def num_envs(self) -> int:
        return self.data["qpos"].shape[0]

    def get(self, key: str) -> np.ndarray:
        return self.data[key]

    def get_prev(self, key: str) -> np.ndarray:
        """A quantity as it was before the step (declared in a term's ``needs_prev``)."""
        return self.prev[key]

    def command(self, name: str) -> np.ndarray:
        """(num_envs, size) current command ``name`` (a term of the config's ``commands``)."""
        return self.commands[name]

    @property
    def prev_qpos(self) -> np.ndarray:
        return self.prev["qpos"]

    def site_xpos(self, site: int) -> np.ndarray:
        """(num_envs, 3) world position of a site, from its body's pose."""
        m = self.model
        body = m.site_bodyid[site]
        xmat = self.data["xmat"][:, body]
        return self.data["xpos"][:, body] + self.xp.einsum("nij,j->ni", xmat, self.xp.const(m.site_pos)[site])
