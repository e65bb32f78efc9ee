"""Per-env randomization terms: model parameters drawn for each env at each reset.

A bound function ``fn(rng) -> {parameter: (indices, values)}`` draws one env's values
from that env's generator; the env hands them to the World, which keeps per-env copies of
its model parameters. Scales multiply the asset's nominal value.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.compiler.sameframe import geom_poses

from ..ranges import Axes
from ..registry import Term, TermError, register
from ._select import coordinate_indices, lookup, vector


def _scale_term(param, nominal, idx, low, high):
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")
    if low <= 0:
        raise TermError(f"scales must be > 0, got low={low}", "low")
    base = np.asarray(nominal, dtype=np.float64)[idx]

    def draw(rng):
        return {param: (idx, base * rng.uniform(low=low, high=high, size=len(idx)))}

    return Term(draw, info={"parameters": (param,)})


@register("randomization")
def body_mass_scale(model, *, bodies: list[str], low: float, high: float):
    """body_mass[b] = nominal * U(low, high) per listed body."""
    idx = np.array([lookup(model.body_name, b, "body", "bodies") for b in bodies])
    return _scale_term("body_mass", model.body_mass, idx, low, high)


@register("randomization")
def actuator_gear_scale(model, *, actuators: list[str], low: float, high: float):
    """actuator_gear[u] = nominal * U(low, high) per listed actuator (motor strength)."""
    idx = np.array([lookup(model.actuator_name, a, "actuator", "actuators") for a in actuators])
    return _scale_term("actuator_gear", model.actuator_gear[:, 0], idx, low, high)


@register("randomization")
def dof_damping_scale(model, *, low: float, high: float, joints: list[str] | None = None):
    """dof_damping[d] = nominal * U(low, high) for the chosen joints' dofs."""
    idx = coordinate_indices(model, "qvel", joints, 0, None)
    return _scale_term("dof_damping", model.dof_damping, idx, low, high)


@register("randomization")
def gravity_uniform(model, *, low: list[float], high: list[float]):
    """Gravity vector drawn per axis from U(low, high)."""
    lo, hi = vector(low, 3, "low"), vector(high, 3, "high")
    if np.any(lo > hi):
        raise TermError(f"low {lo.tolist()} must be <= high {hi.tolist()} on every axis", "low")
    axes = np.arange(3)

    def draw(rng):
        return {"gravity": (axes, rng.uniform(low=lo, high=hi))}

    return Term(draw, info={"parameters": ("gravity",)})


@register("randomization")
def geom_friction_scale(model, *, low: float, high: float, geoms: list[str] | None = None):
    """Sliding friction of the listed geoms (default: all) = nominal * U(low, high); a
    contact mixes its two geoms' values by max, as MuJoCo does."""
    if geoms is None:
        idx = np.arange(model.ngeom)
    else:
        idx = np.array([lookup(model.geom_name, g, "geom", "geoms") for g in geoms])
    return _scale_term("geom_friction", model.geom_friction[:, 0], idx, low, high)


@register("randomization")
def jnt_range_scale(model, *, joints: list[str], low: float, high: float):
    """Each listed joint's range widened or narrowed about its middle by U(low, high)."""
    if low > high:
        raise TermError(f"low ({low}) must be <= high ({high})", "low")
    if low <= 0:
        raise TermError(f"scales must be > 0, got low={low}", "low")
    idx = np.array([lookup(model.jnt_name, j, "joint", "joints") for j in joints])
    middle = model.jnt_range[idx].mean(axis=1)
    half = 0.5 * (model.jnt_range[idx, 1] - model.jnt_range[idx, 0])

    def draw(rng):
        scale = rng.uniform(low=low, high=high, size=len(idx))
        return {"jnt_range": (idx, np.stack([middle - half * scale, middle + half * scale], axis=1))}

    return Term(draw, info={"parameters": ("jnt_range",)})


def _geom_term(model, geom, draw_xy):
    # the geom's whole position per draw: the coordinates not drawn keep the model's
    g = lookup(model.geom_name, geom, "geom", "geom")
    nominal = geom_poses(model)[0][g]

    def draw(rng):
        pos = nominal.copy()
        draw_xy(rng, pos)
        return {"geom_pos": (np.array([g]), pos[None])}

    return Term(draw, info={"parameters": ("geom_pos",)})


@register("randomization")
def geom_pos_uniform(model, *, geom: str, low: list[float], high: list[float], axes: Axes = [0, 1, 2]):  # noqa: B006
    """A geom's position in its body drawn uniformly in the box [low, high] along ``axes``
    (a target placed anew each episode), its other coordinates kept."""
    ax = np.array(list(axes), dtype=np.int64)
    if len(set(ax.tolist())) != ax.size:
        raise TermError(f"axes must be distinct, got {list(axes)}", "axes")
    lo, hi = vector(low, ax.size, "low"), vector(high, ax.size, "high")
    if np.any(lo > hi):
        raise TermError(f"low {lo.tolist()} must be <= high {hi.tolist()} on every axis", "low")

    def draw_xy(rng, pos):
        pos[ax] = rng.uniform(low=lo, high=hi)

    return _geom_term(model, geom, draw_xy)


@register("randomization")
def geom_pos_polar(model, *, geom: str, radius: list[float], angle: list[float] = [0.0, 2 * np.pi]):  # noqa: B006
    """A geom's x and y in its body set to radius U(radius[0], radius[1]) along the heading
    U(angle[0], angle[1]) (radians from the x axis toward y), z kept: dm_control's reacher
    target, uniform in radius rather than in area."""
    r, a = vector(radius, 2, "radius"), vector(angle, 2, "angle")
    if not 0 <= r[0] <= r[1]:
        raise TermError(f"radius must be [low, high] with 0 <= low <= high, got {r.tolist()}", "radius")
    if a[0] > a[1]:
        raise TermError(f"angle must be [low, high] with low <= high, got {a.tolist()}", "angle")

    def draw_xy(rng, pos):
        heading, distance = rng.uniform(a[0], a[1]), rng.uniform(r[0], r[1])
        pos[:2] = distance * np.cos(heading), distance * np.sin(heading)

    return _geom_term(model, geom, draw_xy)


@register("randomization")
def site_pos_polar(model, *, site: str, radius: list[float], angle: list[float] = [0.0, 2 * np.pi],  # noqa: B006
                   center: list[float] = [0.0, 0.0], axes: Axes = [0, 1]):  # noqa: B006
    """A site's position in its body on the circle of radius U(radius[0], radius[1]) about
    ``center`` in the plane of ``axes``, at angle U(angle[0], angle[1]) (radians from the first
    axis toward the second), its third coordinate kept: dm_control's finger target, at a random
    angle about the spinner's hinge."""
    s = lookup(model.site_name, site, "site", "site")
    ax = np.array(list(axes), dtype=np.int64)
    if ax.size != 2 or ax[0] == ax[1]:
        raise TermError(f"axes must be two distinct axes, got {list(axes)}", "axes")
    r, a, c = vector(radius, 2, "radius"), vector(angle, 2, "angle"), vector(center, 2, "center")
    if not 0 <= r[0] <= r[1]:
        raise TermError(f"radius must be [low, high] with 0 <= low <= high, got {r.tolist()}", "radius")
    if a[0] > a[1]:
        raise TermError(f"angle must be [low, high] with low <= high, got {a.tolist()}", "angle")
    nominal = np.asarray(model.site_pos[s], dtype=np.float64)

    def draw(rng):
        heading, distance = rng.uniform(a[0], a[1]), rng.uniform(r[0], r[1])
        pos = nominal.copy()
        pos[ax] = c + distance * np.array([np.cos(heading), np.sin(heading)])
        return {"site_pos": (np.array([s]), pos[None])}

    return Term(draw, info={"parameters": ("site_pos",)})
