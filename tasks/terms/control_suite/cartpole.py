"""Cartpole: swing up and balance an unactuated pole by moving its cart."""

from __future__ import annotations

import numpy as np
from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup


def _poles(model) -> np.ndarray:
    # the poles are the bodies below the cart, which dm_control reads as xmat[2:]
    return np.arange(2, model.nbody)


@register("reward")
def cartpole_reward(model, *, sparse: bool = False):
    """dm_control's cartpole reward: with ``sparse``, 1 while the cart is within 0.25 m of
    the centre and every pole within cos 0.995 of upright; otherwise the product of
    uprightness, centring, small control and small pole velocity, each in [0, 1]."""
    slider = int(model.jnt_qposadr[lookup(model.jnt_name, "slider", "joint", None)])
    poles = _poles(model)
    hinges = np.arange(1, model.nv)

    def ops(c):
        cart = c.load("qpos", slider)
        cosine = c.load("xmat", poles, 8)  # zz: the pole's axis against the world's z
        if sparse:
            return tolerance(cart, (-0.25, 0.25)) * tolerance(cosine, (0.995, 1)).prod()
        upright = (cosine + 1) / 2
        centered = (1 + tolerance(cart, margin=2)) / 2
        small_control = (4 + tolerance(c.load("ctrl", 0), margin=1, value_at_margin=0, sigmoid="quadratic")) / 5
        small_velocity = (1 + tolerance(c.load("qvel", hinges), margin=5).min()) / 2
        return upright.mean() * small_control * small_velocity * centered

    return Term(ops=ops)
