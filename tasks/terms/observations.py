"""Observation terms: each returns (num_envs, k) float64."""

from __future__ import annotations

import numpy as np

from ..registry import Term, register
from ._select import coordinate_indices, lookup


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
