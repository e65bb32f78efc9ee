"""Ball-in-cup: swing a ball on a string into the cup it hangs from."""

from __future__ import annotations

from ...registry import Term, register
from .._select import lookup, site_xpos_ops

X, Z = 0, 2  # the plane the cup and ball move in


@register("reward")
def ball_in_cup_reward(model):
    """dm_control's ball-in-cup reward: 1 while the whole ball is inside the cup's target box
    in x and z (the ball's centre nearer the box's than its half-sizes less the ball's
    radius), else 0."""
    target = lookup(model.site_name, "target", "site", None)
    ball_geom = lookup(model.geom_name, "ball", "geom", None)
    ball = lookup(model.body_name, "ball", "body", None)
    room = model.site_size[target] - model.geom_size[ball_geom, 0]

    def ops(c):
        ball_to_target = site_xpos_ops(c, target) - c.load("xpos", ball)
        inside = abs(ball_to_target) < c.b.const(room)
        return inside[X] * inside[Z]

    return Term(ops=ops)
