"""Termination terms: each gives a flag per env (1 or 0), as World-program instructions
(``Term.ops``, tasks/term_program.py); an episode ends when any is set.

The time limit is not a term: the env truncates at ``episode_length`` itself.
"""

from __future__ import annotations

import numpy as np

from ..ranges import Index
from ..registry import Term, TermError, register
from ._select import coordinate_indices, lookup, site_xpos_ops


@register("termination")
def nonfinite_state(model):
    """Any qpos or qvel is NaN or infinite."""
    def ops(c):
        state = c.b.alloc(model.nq + model.nv)
        c.b.copy(c.load("qpos", range(model.nq)), out=state[: model.nq])
        c.b.copy(c.load("qvel", range(model.nv)), out=state[model.nq:])
        return c.b.nonfinite(state)

    return Term(ops=ops)


def _coordinates_out_of_range(model, which, low, high, inclusive, joints, start, stop):
    # NaN is outside any range (the builder's ``outside``): a state is healthy only when it is
    # provably inside, as Gymnasium's ``low < x < high`` checks are False for NaN
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")
    idx = coordinate_indices(model, which, joints, start, stop)
    return Term(ops=lambda c: c.b.any(c.b.outside(c.load(which, idx), low, high, inclusive)))


@register("termination")
def qpos_out_of_range(model, *, low: float, high: float, inclusive: bool = True, joints: list[str] | None = None,
                      start: Index = 0, stop: Index | None = None):
    """Any chosen coordinate outside [low, high] (a pole's angle, a torso's height or pitch).

    ``inclusive: false`` makes the healthy range open, (low, high), as Hopper's and
    Walker2d's checks are; ``.inf`` is a valid bound.
    """
    return _coordinates_out_of_range(model, "qpos", low, high, inclusive, joints, start, stop)


@register("termination")
def qvel_out_of_range(model, *, low: float, high: float, inclusive: bool = True, joints: list[str] | None = None,
                      start: Index = 0, stop: Index | None = None):
    """Any chosen generalized velocity outside [low, high] (open with ``inclusive: false``)."""
    return _coordinates_out_of_range(model, "qvel", low, high, inclusive, joints, start, stop)


@register("termination")
def site_height_below(model, *, site: str, min_height: float):
    """A site's world z at or below ``min_height`` (a fallen pendulum tip)."""
    s = lookup(model.site_name, site, "site", "site")
    # z <= min_height is z outside (min_height, inf]; NaN is outside both ways
    return Term(ops=lambda c: c.b.outside(site_xpos_ops(c, s)[2], min_height, np.inf, inclusive=False))


@register("termination")
def body_height_out_of_range(model, *, body: str, low: float, high: float):
    """A body's world z outside [low, high] (Gymnasium's healthy-height check)."""
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")
    b = lookup(model.body_name, body, "body", "body")
    return Term(ops=lambda c: c.b.outside(c.load("xpos", b, 2), low, high))
