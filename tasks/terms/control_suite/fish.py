"""Fish: turn a free-swimming fish upright, or swim its mouth to a target, in a fluid."""

from __future__ import annotations

import numpy as np
from taigym.physics.compiler.transforms import quat_to_mat
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


def _mouth_to_target(model):
    """Ops of the target as the mouth sees it: from the mouth, in the mouth's own frame (the
    torso's turned by the mouth geom's orientation in it)."""
    torso = lookup(model.body_name, "torso", "body", None)
    mouth = lookup(model.geom_name, "mouth", "geom", None)
    in_torso = quat_to_mat(np.asarray(model.geom_quat[mouth], dtype=np.float64)).ravel()
    target = lookup(model.geom_name, "target", "geom", None)  # placed anew each episode: its env's own

    def ops(c):
        from_mouth = c.load("geom_xpos", target) - c.load("geom_xpos", mouth)
        return c.b.rot_t(c.b.const(in_torso), c.b.rot_t(c.load("xmat", torso), from_mouth))

    return ops


@register("observation")
def fish_mouth_to_target(model):
    """dm_control's fish target observation: the target from the mouth, in the mouth's frame."""
    return Term(size=3, ops=_mouth_to_target(model))


@register("reward")
def fish_swim_reward(model):
    """dm_control's fish-swim reward: mostly (7 of 8) the mouth within the target, touching it
    at 1 and falling as a Gaussian to 0.1 two touching distances further, and an eighth for
    being upright."""
    torso = lookup(model.body_name, "torso", "body", None)
    radii = float(model.geom_size[lookup(model.geom_name, "mouth", "geom", None), 0]
                  + model.geom_size[lookup(model.geom_name, "target", "geom", None), 0])
    to_target = _mouth_to_target(model)

    def ops(c):
        in_target = tolerance(c.b.norm(to_target(c)), bounds=(0, radii), margin=2 * radii)
        is_upright = (_upright_ops(c, torso) + 1) / 2
        return (7 * in_target + is_upright) / 8

    return Term(ops=ops)
