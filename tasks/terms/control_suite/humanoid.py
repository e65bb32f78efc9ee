"""Humanoid: a 3-d biped with 21 actuated joints that stands, walks or runs."""

from __future__ import annotations

import numpy as np
from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup

STAND_HEIGHT = 1.4  # the head's height from which standing earns full reward


@register("reward")
def humanoid_reward(model, *, move_speed: float = 0.0):
    """dm_control's humanoid reward: the head at 1.4 m or higher, the torso upright and small
    controls; then, standing, the centre of mass still in the plane, or, with a
    ``move_speed``, moving in the plane at least that fast."""
    head = lookup(model.body_name, "head", "body", None)
    torso = lookup(model.body_name, "torso", "body", None)
    # the whole humanoid's centre-of-mass velocity, of which x and y are horizontal
    com_velocity = int(model.sensor_adr[lookup(model.sensor_name, "torso_subtreelinvel", "sensor", None)])
    actuators = np.arange(model.nu)

    def ops(c):
        standing = tolerance(c.load("xpos", head, 2), (STAND_HEIGHT, float("inf")), margin=STAND_HEIGHT / 4)
        upright = tolerance(c.load("xmat", torso, 8), (0.9, float("inf")), margin=1.9, value_at_margin=0,
                            sigmoid="linear")
        small_control = tolerance(c.load("ctrl", actuators), margin=1, value_at_margin=0,
                                  sigmoid="quadratic").mean()
        small_control = (4 + small_control) / 5
        horizontal = c.load("sensordata", [com_velocity, com_velocity + 1])
        if move_speed == 0:
            dont_move = tolerance(horizontal, margin=2).mean()
            return small_control * standing * upright * dont_move
        move = tolerance(c.b.norm(horizontal), (move_speed, float("inf")), margin=move_speed, value_at_margin=0,
                         sigmoid="linear")
        return small_control * standing * upright * (5 * move + 1) / 6

    return Term(ops=ops)
