"""Cheetah: a planar running robot."""

from __future__ import annotations

from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup

RUN_SPEED = 10.0


@register("reward")
def cheetah_reward(model):
    """dm_control's cheetah reward: rising linearly from 0 at rest to 1 at a forward speed of
    the whole body's centre of mass of 10 m/s or more."""
    speed = int(model.sensor_adr[lookup(model.sensor_name, "torso_subtreelinvel", "sensor", None)])

    def ops(c):
        return tolerance(c.load("sensordata", speed), (RUN_SPEED, float("inf")), margin=RUN_SPEED,
                         value_at_margin=0, sigmoid="linear")

    return Term(ops=ops)
