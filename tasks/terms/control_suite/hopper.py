"""Hopper: a planar one-legged robot that stands still or hops forward."""

from __future__ import annotations

import numpy as np
from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup

STAND_HEIGHT = 0.6
HOP_SPEED = 2.0


@register("reward")
def hopper_reward(model, *, hopping: bool = False):
    """dm_control's hopper reward: 1 while the torso's centre of mass is 0.6 to 2 m above
    the foot's, times, when ``hopping``, a reward for the centre of mass moving forward at
    2 m/s or more, otherwise a mild reward for small controls."""
    torso = lookup(model.body_name, "torso", "body", None)
    foot = lookup(model.body_name, "foot", "body", None)
    speed = int(model.sensor_adr[lookup(model.sensor_name, "torso_subtreelinvel", "sensor", None)])

    def ops(c):
        height = c.load("xipos", torso, 2) - c.load("xipos", foot, 2)
        standing = tolerance(height, (STAND_HEIGHT, 2))
        if hopping:
            return standing * tolerance(c.load("sensordata", speed), (HOP_SPEED, float("inf")),
                                        margin=HOP_SPEED / 2, value_at_margin=0.5, sigmoid="linear")
        control = c.load("ctrl", np.arange(model.nu))
        small_control = tolerance(control, margin=1, value_at_margin=0, sigmoid="quadratic").mean()
        return standing * (small_control + 4) / 5

    return Term(ops=ops)
