"""Reward terms: each gives one value per env, as World-program instructions (``Term.ops``,
tasks/term_program.py), later multiplied by its weight.

Penalties are positive quantities given a negative weight in the config, as Isaac Lab
does, so that one term serves as a cost or a bonus.
"""

from __future__ import annotations

import numpy as np

from ..ranges import Axis, Coordinate, Index
from ..registry import Term, TermError, register
from ._select import body_indices, coordinate_indices, lookup, site_xpos_ops, vector


def _rate(c, name, row, col=None):
    """(now - before the step) / dt of one element of a quantity, as program instructions."""
    now, before = c.load(name, row, col), c.prev(name, row, col)
    return c.b.affine(c.b.sub(now, before), 1.0 / c.dt, 0.0)


@register("reward")
def alive(model):
    """1 while the episode has not terminated this step (Gymnasium's healthy reward)."""
    return Term(ops=lambda c: c.b.affine(c.terminated, -1.0, 1.0))


@register("reward")
def action_l2(model):
    """Sum of squared actions as given by the policy (Gymnasium's control cost)."""
    return Term(ops=lambda c: c.b.sum(c.b.square(c.action)))


@register("reward")
def forward_velocity(model, *, coordinate: Coordinate = 0):
    """(qpos[c] after - qpos[c] before) / dt: the finite-difference velocity of a coordinate
    over the control period, as Gymnasium's locomotion tasks compute forward reward."""
    if not 0 <= coordinate < model.nq:
        raise TermError(f"coordinate={coordinate} is outside 0..{model.nq - 1} (the robot has {model.nq} qpos entries)",
                        "coordinate")
    return Term(ops=lambda c: _rate(c, "qpos", coordinate))


@register("reward")
def body_distance(model, *, body: str, target: str):
    """Euclidean distance between two body frame origins."""
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, target, "body", "target")
    return Term(ops=lambda c: c.b.norm(c.b.sub(c.load("xpos", a), c.load("xpos", b))))


@register("reward")
def site_weighted_sq_error(model, *, site: str, target: list[float], weights: list[float]):
    """sum_k weights[k] * (site_xpos[k] - target[k])^2 over world axes."""
    s = lookup(model.site_name, site, "site", "site")
    t, w = vector(target, 3, "target"), vector(weights, 3, "weights")

    def ops(c):
        error = c.b.affine(site_xpos_ops(c, s), 1.0, -t)
        return c.b.sum(c.b.affine(c.b.square(error), w, 0.0))

    return Term(ops=ops)


@register("reward")
def qvel_weighted_l2(model, *, weights: list[float], joints: list[str] | None = None, start: Index = 0,
                     stop: Index | None = None):
    """sum_i weights[i] * qvel[i]^2 over the chosen dofs."""
    idx = coordinate_indices(model, "qvel", joints, start, stop)
    w = vector(weights, len(idx), "weights")
    return Term(ops=lambda c: c.b.sum(c.b.affine(c.b.square(c.load("qvel", idx)), w, 0.0)))


@register("reward")
def body_forward_velocity(model, *, body: str, axis: Axis = 0):
    """(xpos after - xpos before) / dt of a body frame's origin along a world axis (Gymnasium's
    Ant, from its torso). Both positions are those of the last forward pass, as MuJoCo's
    data.xpos after mj_step, so this is not the same as differencing the final qpos."""
    b, k = lookup(model.body_name, body, "body", "body"), axis
    return Term(ops=lambda c: _rate(c, "xpos", b, k))


@register("reward")
def com_forward_velocity(model, *, body: str = "world", axis: Axis = 0):
    """(com after - com before) / dt of the centre of mass of a body's subtree along a world
    axis; the world's subtree is the whole robot, Gymnasium's Humanoid ``mass_center``.
    Read from subtree_com, which follows per-env masses when they are randomized."""
    b, k = lookup(model.body_name, body, "body", "body"), axis
    return Term(ops=lambda c: _rate(c, "subtree_com", b, k))


@register("reward")
def contact_force_l2(model, *, clip: tuple[float, float] | None = None, max_value: float | None = None,
                     bodies: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Sum of squared contact wrench components (MuJoCo's cfrc_ext) over the chosen bodies.

    ``clip`` bounds each component before squaring (Gymnasium's Ant: [-1, 1]); ``max_value``
    caps the sum (Gymnasium's Humanoid caps its weighted cost 5e-7 * sum at 10, i.e. the sum
    at 2e7).
    """
    if clip is not None and clip[0] > clip[1]:
        raise TermError(f"clip lower ({clip[0]}) must be <= upper ({clip[1]})", "clip")
    if max_value is not None and max_value < 0:
        raise TermError(f"max_value must be >= 0, got {max_value}", "max_value")
    idx = body_indices(model, bodies, start, stop)

    def ops(c):
        wrench = c.load("cfrc_ext", idx)
        if clip is not None:
            wrench = c.b.clip(wrench, *clip)
        total = c.b.sum(c.b.square(wrench))
        return total if max_value is None else c.b.clip(total, -np.inf, max_value)

    return Term(ops=ops)
