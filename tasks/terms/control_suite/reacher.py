"""Reacher: bring a two-link planar arm's fingertip onto a target placed anew each episode."""

from __future__ import annotations

from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup


@register("reward")
def reacher_reward(model):
    """dm_control's reacher reward: 1 while the fingertip touches the target (their centres
    closer in the plane than their radii together), else 0."""
    target, finger = (lookup(model.geom_name, name, "geom", None) for name in ("target", "finger"))
    radii = float(model.geom_size[target, 0] + model.geom_size[finger, 0])

    def ops(c):
        to_target = c.load("geom_xpos", target, [0, 1]) - c.load("geom_xpos", finger, [0, 1])
        return tolerance(c.b.norm(to_target), (0, radii))

    return Term(ops=ops)
