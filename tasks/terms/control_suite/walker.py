"""Walker: a planar biped that stands, walks or runs."""

from __future__ import annotations

from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup

STAND_HEIGHT = 1.2


@register("reward")
def walker_reward(model, *, move_speed: float = 0.0):
    """dm_control's walker reward: standing (torso above 1.2 m) and upright, then, with a
    ``move_speed``, times a reward for the centre of mass moving forward at least that fast."""
    torso = lookup(model.body_name, "torso", "body", None)
    # the whole walker's centre-of-mass velocity, whose x is its forward speed
    speed = int(model.sensor_adr[lookup(model.sensor_name, "torso_subtreelinvel", "sensor", None)])

    def ops(c):
        standing = tolerance(c.load("xpos", torso, 2), (STAND_HEIGHT, float("inf")), margin=STAND_HEIGHT / 2)
        upright = (1 + c.load("xmat", torso, 8)) / 2  # zz: the torso's axis against the world's z
        stand_reward = (3 * standing + upright) / 4
        if move_speed == 0:
            return stand_reward
        move_reward = tolerance(c.load("sensordata", speed), (move_speed, float("inf")), margin=move_speed / 2,
                                value_at_margin=0.5, sigmoid="linear")
        return stand_reward * (5 * move_reward + 1) / 6

    return Term(ops=ops)
