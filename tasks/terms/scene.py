"""Terms for scenes of several robots: where bodies are relative to an arena or a goal,
whether a robot is still upright, and each robot's own control effort.

The indicator terms (a body outside a ring, tipped over, near its goal) are registered as
both rewards (1.0 or 0.0, weighted in the config: +10 for knocking the opponent out, -10
for being knocked out) and terminations, so a config states one condition once in each
role it plays. A non-finite pose counts as outside, tipped and not near: the check is that
the body is provably fine.
"""

from __future__ import annotations

import numpy as np

from ..registry import Term, TermError, register
from ._select import lookup, within_ops


def _centre(center):
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (2,):
        raise TermError(f"center needs two numbers (x, y), got {list(center)}", "center")
    return c


def _horizontal_distance_ops(cc, b, c):
    return cc.b.norm(cc.b.affine(cc.load("xpos", b, [0, 1]), 1.0, -c))


@register("termination")
@register("reward")
def body_outside_disc(model, *, body: str, radius: float, center: list[float] = [0.0, 0.0]):  # noqa: B006
    """The body's origin, seen from above, farther than ``radius`` from ``center`` (x, y): a
    robot pushed out of a ring."""
    if not radius > 0:
        raise TermError(f"radius must be > 0, got {radius}", "radius")
    b, c = lookup(model.body_name, body, "body", "body"), _centre(center)
    return Term(ops=lambda cc: cc.b.outside(_horizontal_distance_ops(cc, b, c), -np.inf, radius))


@register("reward")
def body_distance_from(model, *, body: str, center: list[float] = [0.0, 0.0]):  # noqa: B006
    """Horizontal distance of the body's origin from ``center`` (x, y): with a positive weight
    on the opponent's torso, a dense reward for pushing it toward the ring's edge."""
    b, c = lookup(model.body_name, body, "body", "body"), _centre(center)
    return Term(ops=lambda cc: _horizontal_distance_ops(cc, b, c))


@register("termination")
@register("reward")
def body_tilt_above(model, *, body: str, max_angle: float):
    """The body's z axis more than ``max_angle`` [rad] from the world's vertical: a robot
    on its side (pi/2) or its back (pi)."""
    if not 0 < max_angle <= np.pi:
        raise TermError(f"must be in (0, pi], got {max_angle}", "max_angle")
    b, cos_max = lookup(model.body_name, body, "body", "body"), np.cos(max_angle)
    # the body's z axis seen in world z, xmat[2, 2], is the cosine of its tilt
    return Term(ops=lambda c: c.b.outside(c.load("xmat", b, 8), cos_max, np.inf))


@register("reward")
def body_upright(model, *, body: str):
    """Cosine of the body's tilt from vertical: 1 upright, 0 on its side, -1 upside down."""
    b = lookup(model.body_name, body, "body", "body")
    return Term(ops=lambda c: c.load("xmat", b, 8))


@register("termination", "body_within")
def body_within_reached(model, *, body: str, target: str, radius: float):
    """The origins of ``body`` and ``target`` closer than ``radius`` (a box at its goal); the
    reward of the same name pays 1 for it."""
    if radius <= 0:
        raise TermError(f"radius must be > 0, got {radius}", "radius")
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, target, "body", "target")
    return Term(ops=lambda c: within_ops(c, a, b, radius))


@register("reward")
def ctrl_l2(model, *, actuators: list[str] | None = None):
    """Sum of squared controls of ``actuators`` (all by default), by actuator or joint name:
    one robot's control cost in a scene where the action vector holds several robots'."""
    if actuators is None:
        idx = np.arange(model.nu)
    else:
        idx = np.array([_actuator(model, name) for name in actuators], dtype=np.int64)
    return Term(ops=lambda c: c.b.sum(c.b.square(c.load("ctrl", idx))))


def _actuator(model, name):
    from taigym.physics.model import TRN_JOINT

    if name in model.actuator_name:
        return model.actuator_name.index(name)
    for u in range(model.nu):
        if model.actuator_trntype[u] == TRN_JOINT and model.jnt_name[model.actuator_trnid[u]] == name:
            return u
    known = [n for n in model.actuator_name if n]
    raise TermError(f"no actuator named {name!r}; known: {known}", "actuators")
