"""Reward terms: each returns (num_envs,) float64, later multiplied by its weight.

Penalties are positive quantities given a negative weight in the config, as Isaac Lab
does, so that one term serves as a cost or a bonus.
"""

from __future__ import annotations

import numpy as np

from ..registry import Term, TermError, register
from ._select import coordinate_indices, lookup, vector


@register("reward")
def alive(model):
    """1 while the episode has not terminated this step (Gymnasium's healthy reward)."""
    return Term(lambda ctx: (~ctx.terminated).astype(np.float64))


@register("reward")
def action_l2(model):
    """Sum of squared actions as given by the policy (Gymnasium's control cost)."""
    return Term(lambda ctx: np.square(ctx.action).sum(axis=1))


@register("reward")
def forward_velocity(model, *, coordinate: int = 0):
    """(qpos[c] after - qpos[c] before) / dt: the finite-difference velocity of a coordinate
    over the control period, as Gymnasium's locomotion tasks compute forward reward."""
    if not 0 <= coordinate < model.nq:
        raise TermError(f"coordinate {coordinate} is not in 0..{model.nq - 1}", "coordinate")
    return Term(lambda ctx: (ctx.get("qpos")[:, coordinate] - ctx.prev_qpos[:, coordinate]) / ctx.dt, needs=("qpos",))


@register("reward")
def body_distance(model, *, body: str, target: str):
    """Euclidean distance between two body frame origins."""
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, target, "body", "target")
    return Term(lambda ctx: np.linalg.norm(ctx.get("xpos")[:, a] - ctx.get("xpos")[:, b], axis=1), needs=("xpos",))


@register("reward")
def site_weighted_sq_error(model, *, site: str, target: list[float], weights: list[float]):
    """sum_k weights[k] * (site_xpos[k] - target[k])^2 over world axes."""
    s = lookup(model.site_name, site, "site", "site")
    t, w = vector(target, 3, "target"), vector(weights, 3, "weights")
    return Term(lambda ctx: (w * np.square(ctx.site_xpos(s) - t)).sum(axis=1), needs=("xpos", "xmat"))


@register("reward")
def qvel_weighted_l2(model, *, weights: list[float], joints: list[str] | None = None, start: int = 0,
                     stop: int | None = None):
    """sum_i weights[i] * qvel[i]^2 over the chosen dofs."""
    idx = coordinate_indices(model, "qvel", joints, start, stop)
    w = vector(weights, len(idx), "weights")
    return Term(lambda ctx: (w * np.square(ctx.get("qvel")[:, idx])).sum(axis=1), needs=("qvel",))
