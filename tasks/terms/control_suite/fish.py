"""Fish: turn a free-swimming fish upright, or swim its mouth to a target, in a fluid."""

from __future__ import annotations

import numpy as np
from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup


def _upright_ops(c, torso: int):
    return c.load("xmat", torso, 8)  # zz: the torso's z axis against the world's


@register("reward")
def fish_upright_reward(model):
    """dm_control's fish-upright reward: 1 with the torso's z axis up, falling as a Gaussian
    to 0.1 with it horizontal."""
    torso = lookup(model.body_name, "torso", "body", None)
    return Term(ops=lambda c: tolerance(_upright_ops(c, torso), bounds=(1, 1), margin=1))
