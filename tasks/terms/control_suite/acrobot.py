"""Acrobot: swing a two-link pendulum, actuated at the elbow only, so that its tip reaches
a target above the shoulder."""

from __future__ import annotations

from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup, site_xpos_ops


@register("reward")
def acrobot_reward(model, *, sparse: bool = False):
    """dm_control's acrobot reward: 1 while the tip is within the target sphere's radius of
    its centre; with ``sparse`` 0 elsewhere, else falling off over one metre."""
    target, tip = (lookup(model.site_name, name, "site", None) for name in ("target", "tip"))
    radius = float(model.site_size[target, 0])

    def ops(c):
        to_target = c.b.norm(site_xpos_ops(c, target) - site_xpos_ops(c, tip))
        return tolerance(to_target, bounds=(0, radius), margin=0 if sparse else 1)

    return Term(ops=ops)
