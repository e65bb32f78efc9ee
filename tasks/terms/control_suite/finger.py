"""Finger: a planar two-link finger that spins, or turns to a target, a free body on a hinge.

Everything dm_control's finger reads is a sensor (its tip, target and the spinner's hinge as
framepos sensors), so a target placed anew each episode (a per-env site_pos) moves with them.
"""

from __future__ import annotations

import numpy as np

from ...registry import Term, TermError, register
from .._select import lookup

SPIN_VELOCITY = 15.0
XZ = [0, 2]  # the finger's plane


def _sensor(model, name):
    s = lookup(model.sensor_name, name, "sensor", None)
    return np.arange(model.sensor_adr[s], model.sensor_adr[s] + model.sensor_dim[s]).tolist()


def _checked(target_radius):
    if not target_radius > 0:
        raise TermError(f"target_radius must be > 0, got {target_radius}", "target_radius")
    return float(target_radius)


def _dist_to_target(model, target_radius):
    # signed distance from the tip to the target sphere's surface in the plane, negative inside
    tip, target = (np.array(_sensor(model, name))[XZ].tolist() for name in ("tip", "target"))

    def ops(c):
        return c.b.norm(c.load("sensordata", target) - c.load("sensordata", tip)) - target_radius

    return ops


@register("observation")
def finger_dist_to_target(model, *, target_radius: float):
    """dm_control's finger dist_to_target: the tip's distance to the target site's surface, of
    radius ``target_radius`` (the task's site size), negative inside."""
    return Term(size=1, ops=_dist_to_target(model, _checked(target_radius)))


@register("reward")
def finger_spin_reward(model):
    """dm_control's finger-spin reward: 1 while the spinner turns at 15 rad/s or more in the
    negative sense of its hinge, else 0."""
    hinge_velocity = _sensor(model, "hinge_velocity")
    return Term(ops=lambda c: c.load("sensordata", hinge_velocity) <= -SPIN_VELOCITY)


@register("reward")
def finger_turn_reward(model, *, target_radius: float):
    """dm_control's finger-turn reward: 1 while the spinner's tip is within the target site
    (of radius ``target_radius``), else 0."""
    dist_to_target = _dist_to_target(model, _checked(target_radius))
    return Term(ops=lambda c: dist_to_target(c) <= 0)
