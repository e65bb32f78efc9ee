"""Termination terms: each returns (num_envs,) bool; an episode ends when any is true.

The time limit is not a term: the env truncates at ``episode_length`` itself.
"""

from __future__ import annotations

import numpy as np

from ..registry import Term, TermError, register
from ._select import coordinate_indices, lookup


@register("termination")
def nonfinite_state(model):
    """Any qpos or qvel is NaN or infinite."""
    return Term(lambda ctx: ~(np.isfinite(ctx.get("qpos")).all(1) & np.isfinite(ctx.get("qvel")).all(1)),
                needs=("qpos", "qvel"))


@register("termination")
def qpos_out_of_range(model, *, low: float, high: float, joints: list[str] | None = None, start: int = 0,
                      stop: int | None = None):
    """Any chosen coordinate outside [low, high] (strictly), e.g. a pole's angle."""
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")
    idx = coordinate_indices(model, "qpos", joints, start, stop)

    def out(ctx):
        q = ctx.get("qpos")[:, idx]
        return ((q < low) | (q > high)).any(axis=1)

    return Term(out, needs=("qpos",))


@register("termination")
def site_height_below(model, *, site: str, min_height: float):
    """A site's world z at or below ``min_height`` (a fallen pendulum tip)."""
    s = lookup(model.site_name, site, "site", "site")
    return Term(lambda ctx: ctx.site_xpos(s)[:, 2] <= min_height, needs=("xpos", "xmat"))


@register("termination")
def body_height_out_of_range(model, *, body: str, low: float, high: float):
    """A body's world z outside [low, high] (Gymnasium's healthy-height check)."""
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")
    b = lookup(model.body_name, body, "body", "body")

    def out(ctx):
        z = ctx.get("xpos")[:, b, 2]
        return (z < low) | (z > high)

    return Term(out, needs=("xpos",))
