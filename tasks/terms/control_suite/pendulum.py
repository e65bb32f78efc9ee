"""Pendulum: swing a torque-limited pendulum up and keep it upright."""

from __future__ import annotations

import numpy as np
from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup

# upright: the pole within 8 degrees of vertical
COSINE_BOUND = float(np.cos(np.deg2rad(8)))


@register("reward")
def pendulum_reward(model):
    """dm_control's pendulum reward: 1 while the pole's axis is within 8 degrees of the
    world's z axis, else 0."""
    pole = lookup(model.body_name, "pole", "body", None)

    def ops(c):
        vertical = c.load("xmat", pole, 8)  # zz
        return tolerance(vertical, (COSINE_BOUND, 1))

    return Term(ops=ops)
