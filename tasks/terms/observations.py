"""Observation terms: each returns (num_envs, k) float64."""

from __future__ import annotations

import numpy as np

from ..registry import Term, register
from ._select import body_indices, coordinate_indices, lookup


def _coordinates(model, which, joints, start, stop, transform, key=None):
    # ``which`` picks the index space (qpos or dofs); ``key`` the quantity read in it
    idx = coordinate_indices(model, which, joints, start, stop)
    key = key or which
    return Term(lambda ctx: transform(ctx.get(key)[:, idx]), needs=(key,), size=len(idx))


@register("observation")
def qpos(model, *, joints: list[str] | None = None, start: int = 0, stop: int | None = None):
    """Generalized positions, chosen by joint names or an index slice."""
    return _coordinates(model, "qpos", joints, start, stop, lambda x: x)


@register("observation")
def qpos_sin(model, *, joints: list[str] | None = None, start: int = 0, stop: int | None = None):
    """sin of (angular) generalized positions."""
    return _coordinates(model, "qpos", joints, start, stop, np.sin)


@register("observation")
def qpos_cos(model, *, joints: list[str] | None = None, start: int = 0, stop: int | None = None):
    """cos of (angular) generalized positions."""
    return _coordinates(model, "qpos", joints, start, stop, np.cos)


@register("observation")
def qvel(model, *, joints: list[str] | None = None, start: int = 0, stop: int | None = None):
    """Generalized velocities, chosen by joint names or an index slice."""
    return _coordinates(model, "qvel", joints, start, stop, lambda x: x)


@register("observation")
def qfrc_constraint(model, *, joints: list[str] | None = None, start: int = 0, stop: int | None = None):
    """Constraint forces in generalized coordinates (joint limits, contacts), per dof."""
    return _coordinates(model, "qvel", joints, start, stop, lambda x: x, key="qfrc_constraint")


@register("observation")
def body_offset(model, *, body: str, relative_to: str, axes: list[int] = [0, 1, 2]):  # noqa: B006
    """Position of ``body`` minus that of ``relative_to`` (body frame origins), world axes."""
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, relative_to, "body", "relative_to")
    ax = list(axes)
    return Term(lambda ctx: (ctx.get("xpos")[:, a] - ctx.get("xpos")[:, b])[:, ax], needs=("xpos",), size=len(ax))


@register("observation")
def body_position(model, *, body: str, axes: list[int] = [0, 1, 2]):  # noqa: B006
    """World position of a body frame's origin."""
    a = lookup(model.body_name, body, "body", "body")
    ax = list(axes)
    return Term(lambda ctx: ctx.get("xpos")[:, a][:, ax], needs=("xpos",), size=len(ax))


@register("observation")
def qfrc_actuator(model, *, joints: list[str] | None = None, start: int = 0, stop: int | None = None):
    """Actuator forces in generalized coordinates, per dof (Gymnasium's Humanoid)."""
    return _coordinates(model, "qvel", joints, start, stop, lambda x: x, key="qfrc_actuator")


def _per_body(model, key, width, bodies, start, stop):
    # (num_envs, nbody, width) rows of the chosen bodies, flattened body by body as
    # Gymnasium's ``data.<key>[1:].flatten()``
    idx = body_indices(model, bodies, start, stop)
    return Term(lambda ctx: ctx.get(key)[:, idx].reshape(ctx.num_envs, -1), needs=(key,), size=len(idx) * width)


@register("observation")
def cinert(model, *, bodies: list[str] | None = None, start: int = 0, stop: int | None = None):
    """Com-based body inertias, 10 per body in MuJoCo's layout (inertia 6, mass * offset 3, mass)."""
    return _per_body(model, "cinert", 10, bodies, start, stop)


@register("observation")
def cvel(model, *, bodies: list[str] | None = None, start: int = 0, stop: int | None = None):
    """Com-based body velocities, 6 per body (angular 3, linear 3), as MuJoCo's cvel."""
    return _per_body(model, "cvel", 6, bodies, start, stop)


@register("observation")
def cfrc_ext(model, *, bodies: list[str] | None = None, start: int = 0, stop: int | None = None):
    """External (contact) wrenches on bodies, 6 per body (torque 3, force 3) in the com-based
    frame, as MuJoCo's cfrc_ext after mj_rnePostConstraint. Gymnasium's Ant clips these to
    [-1, 1]: give the observation ``clip``."""
    return _per_body(model, "cfrc_ext", 6, bodies, start, stop)
