"""Reset terms: initial-state noise, applied in config order to one env's state rows.

Each bound function is ``fn(rng, qpos, qvel)`` and edits the rows in place. The draws
are made in the same order and with the same calls as Gymnasium's MuJoCo v5 envs, so an
env seeded like Gymnasium's starts from the same state.
"""

from __future__ import annotations

import numpy as np

from taigym.physics.model import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE

from ..ranges import Index
from ..registry import Term, TermError, register
from ._select import coordinate_indices, lookup


def _checked(low, high):
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")


@register("reset")
def qpos_add_uniform(model, *, low: float, high: float, joints: list[str] | None = None, start: Index = 0,
                     stop: Index | None = None):
    """qpos[idx] += U(low, high), one draw per chosen coordinate."""
    _checked(low, high)
    idx = coordinate_indices(model, "qpos", joints, start, stop)

    def apply(rng, qpos, qvel):
        qpos[idx] += rng.uniform(low=low, high=high, size=len(idx))

    return Term(apply)


@register("reset")
def qpos_set_uniform(model, *, low: float, high: float, joints: list[str] | None = None, start: Index = 0,
                     stop: Index | None = None):
    """qpos[idx] = U(low, high), one draw per chosen coordinate, whatever was there: a state
    drawn again in place (reset_until_no_contact) keeps nothing of the rejected draw, as
    dm_control's ball-in-cup places its ball."""
    _checked(low, high)
    idx = coordinate_indices(model, "qpos", joints, start, stop)

    def apply(rng, qpos, qvel):
        qpos[idx] = rng.uniform(low=low, high=high, size=len(idx))

    return Term(apply)


@register("reset")
def qvel_add_uniform(model, *, low: float, high: float, joints: list[str] | None = None, start: Index = 0,
                     stop: Index | None = None):
    """qvel[idx] += U(low, high), one draw per chosen dof."""
    _checked(low, high)
    idx = coordinate_indices(model, "qvel", joints, start, stop)

    def apply(rng, qpos, qvel):
        qvel[idx] += rng.uniform(low=low, high=high, size=len(idx))

    return Term(apply)


@register("reset")
def qpos_add_normal(model, *, std: float, mean: float = 0.0, joints: list[str] | None = None, start: Index = 0,
                    stop: Index | None = None):
    """qpos[idx] += mean + std * N(0, 1), one draw per chosen coordinate."""
    if std < 0:
        raise TermError(f"std must be >= 0, got {std}", "std")
    idx = coordinate_indices(model, "qpos", joints, start, stop)

    def apply(rng, qpos, qvel):
        qpos[idx] += mean + rng.standard_normal(len(idx)) * std

    return Term(apply)


@register("reset")
def qvel_add_normal(model, *, std: float, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """qvel[idx] += std * N(0, 1)."""
    if std < 0:
        raise TermError(f"std must be >= 0, got {std}", "std")
    idx = coordinate_indices(model, "qvel", joints, start, stop)

    def apply(rng, qpos, qvel):
        qvel[idx] += rng.standard_normal(len(idx)) * std

    return Term(apply)


@register("reset")
def qvel_set(model, *, value: float, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """qvel[idx] = value (no draw)."""
    idx = coordinate_indices(model, "qvel", joints, start, stop)

    def apply(rng, qpos, qvel):
        qvel[idx] = value

    return Term(apply)


@register("reset")
def qpos_uniform_in_disc(model, *, joints: list[str], radius: float, min_radius: float = 0.0):
    """Two coordinates set to a point drawn uniformly in the open disc of ``radius`` (a
    reaching target's position), and at least ``min_radius`` from its centre (a goal not
    already reached), by rejection from the enclosing square."""
    if radius <= 0:
        raise TermError(f"radius must be > 0, got {radius}", "radius")
    if not 0 <= min_radius < radius:
        raise TermError(f"min_radius must be in [0, radius), got {min_radius}", "min_radius")
    idx = coordinate_indices(model, "qpos", joints, 0, None)
    if len(idx) != 2:
        raise TermError(f"needs exactly two coordinates, got {len(idx)}", "joints")

    def apply(rng, qpos, qvel):
        while True:
            goal = rng.uniform(low=-radius, high=radius, size=2)
            if min_radius <= np.linalg.norm(goal) < radius:
                break
        qpos[idx] = goal

    return Term(apply)


@register("reset")
def qpos_randomize_joints(model, *, joints: list[str] | None = None):
    """dm_control's ``randomize_limited_and_rotational_joints``: each joint (all, or those
    named) drawn afresh, in model order: a limited hinge or slide uniformly in its range, an
    unlimited hinge in [-pi, pi]; a ball joint a uniform rotation, or one of a uniform axis
    turned by up to its range; a free joint's orientation from a normalized U(0, 1)^4, as
    dm_control draws it, its position kept. Unlimited slides keep their value."""
    ids = range(model.njnt) if joints is None else sorted(lookup(model.jnt_name, j, "joint", "joints")
                                                           for j in joints)
    plan = [(int(model.jnt_type[j]), bool(model.jnt_limited[j]), model.jnt_range[j].copy(),
             int(model.jnt_qposadr[j])) for j in ids]

    def apply(rng, qpos, qvel):
        for kind, limited, (low, high), adr in plan:
            if kind in (JNT_HINGE, JNT_SLIDE) and limited:
                qpos[adr] = rng.uniform(low, high)
            elif kind == JNT_HINGE:
                qpos[adr] = rng.uniform(-np.pi, np.pi)
            elif kind == JNT_BALL and limited:
                axis = rng.standard_normal(3)
                axis /= np.linalg.norm(axis)
                angle = rng.random() * high
                qpos[adr:adr + 4] = (np.cos(angle / 2), *(np.sin(angle / 2) * axis))
            elif kind == JNT_BALL:
                quat = rng.standard_normal(4)
                qpos[adr:adr + 4] = quat / np.linalg.norm(quat)
            elif kind == JNT_FREE:
                quat = rng.random(4)
                qpos[adr + 3:adr + 7] = quat / np.linalg.norm(quat)

    return Term(apply)


@register("reset")
def qpos_random_orientation(model, *, joints: list[str]):
    """Each listed ball or free joint turned to a uniformly random orientation, a normalized
    4-d standard normal as dm_control's fish draws its body's (a free joint keeps its position)."""
    adrs = []
    for name in joints:
        j = lookup(model.jnt_name, name, "joint", "joints")
        if model.jnt_type[j] not in (JNT_BALL, JNT_FREE):
            raise TermError(f"joint {name!r} is not a ball or free joint", "joints")
        adrs.append(int(model.jnt_qposadr[j]) + (3 if model.jnt_type[j] == JNT_FREE else 0))

    def apply(rng, qpos, qvel):
        for adr in adrs:
            quat = rng.standard_normal(4)
            qpos[adr:adr + 4] = quat / np.linalg.norm(quat)

    return Term(apply)
