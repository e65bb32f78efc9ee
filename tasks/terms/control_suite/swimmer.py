"""Swimmer: an n-link snake in a fluid swims its nose to a target placed anew each episode."""

from __future__ import annotations

import numpy as np
from taigym.physics.compiler.sameframe import geom_poses
from taigym.physics.step.program import tolerance

from ...registry import Term, TermError, register
from .._select import lookup


def _velocity_sensors(model) -> list[tuple[int, int]]:
    """Each body's (velocimeter, gyro) sensor addresses, the head's first, in model order."""
    names = ["head_vel", "head_gyro"] + [f"{kind}_{k}" for k in range(model.nbody - 2)
                                         for kind in ("velocimeter", "gyro")]
    adrs = [int(model.sensor_adr[lookup(model.sensor_name, n, "sensor", None)]) for n in names]
    return list(zip(adrs[0::2], adrs[1::2]))


@register("observation")
def swimmer_body_velocities(model):
    """dm_control's body velocities: each body's forward and sideways speed and turning rate
    in its own frame (its velocimeter's x and y, its gyro's z), body by body from the head."""
    idx = [i for vel, gyro in _velocity_sensors(model) for i in (vel, vel + 1, gyro + 2)]
    return Term(size=len(idx), ops=lambda c: c.load("sensordata", idx))


def _nose_to_target(model):
    """Ops of the target as the head sees it (x, y in its frame), from the nose."""
    head = lookup(model.body_name, "head", "body", None)
    nose = lookup(model.geom_name, "nose", "geom", None)
    target = lookup(model.geom_name, "target", "geom", None)  # placed anew each episode: its env's own

    def ops(c):
        from_nose = c.load("geom_xpos", target) - c.load("geom_xpos", nose)
        return c.b.rot_t(c.load("xmat", head), from_nose)[:2]

    return ops


@register("observation")
def swimmer_to_target(model):
    """dm_control's to_target: the target from the nose, in the head's x and y."""
    return Term(size=2, ops=_nose_to_target(model))


@register("reward")
def swimmer_reward(model):
    """dm_control's swimmer reward: 1 with the nose within the target's radius, falling off
    as a long tail to 0.1 at five radii further."""
    size = float(model.geom_size[lookup(model.geom_name, "target", "geom", None), 0])
    to_target = _nose_to_target(model)
    return Term(ops=lambda c: tolerance(c.b.norm(to_target(c)), bounds=(0, size), margin=5 * size,
                                        sigmoid="long_tail"))


@register("randomization")
def swimmer_target(model, *, near_probability: float = 0.2, near: float = 0.3, far: float = 2.0):
    """dm_control's swimmer target, placed anew each episode: with ``near_probability`` in the
    square of half side ``near`` about the origin, otherwise in that of half side ``far``."""
    if not 0 <= near_probability <= 1:
        raise TermError(f"near_probability must be in [0, 1], got {near_probability}", "near_probability")
    if not 0 <= near <= far:
        raise TermError(f"need 0 <= near <= far, got near={near}, far={far}", "near")
    target = lookup(model.geom_name, "target", "geom", None)
    nominal = geom_poses(model)[0][target]  # as the kernels place it

    def draw(rng):
        half = near if rng.random() < near_probability else far
        pos = nominal.copy()
        pos[:2] = rng.uniform(-half, half, size=2)
        return {"geom_pos": (np.array([target]), pos[None])}

    return Term(draw, info={"parameters": ("geom_pos",)})
