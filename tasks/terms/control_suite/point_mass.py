"""Point mass: push a planar point mass, through two tendons, to a target at the centre."""

from __future__ import annotations

from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup


@register("reward")
def point_mass_reward(model):
    """dm_control's point-mass reward: nearness to the target (1 inside it, falling off over
    one target radius) times a small-control factor in [0.8, 1]."""
    target, mass = (lookup(model.geom_name, name, "geom", None) for name in ("target", "pointmass"))
    target_size = float(model.geom_size[target, 0])

    def ops(c):
        distance = c.b.norm(c.load("geom_xpos", target) - c.load("geom_xpos", mass))
        near_target = tolerance(distance, bounds=(0, target_size), margin=target_size)
        control = tolerance(c.load("ctrl", range(c.model.nu)), margin=1, value_at_margin=0,
                            sigmoid="quadratic").mean()
        small_control = (control + 4) / 5
        return near_target * small_control

    return Term(ops=ops)
