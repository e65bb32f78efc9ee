"""Observation terms: each gives ``size`` values per env, as World-program instructions
(``Term.ops``, tasks/term_program.py)."""

from __future__ import annotations

import numpy as np

from ..ranges import Axes, Index
from ..registry import Term, TermError, register
from ._select import body_indices, coordinate_indices, lookup


def _same(b, x):
    return x


def _coordinates(model, which, joints, start, stop, transform=_same, key=None):
    # ``which`` picks the index space (qpos or dofs); ``key`` the quantity read in it
    idx = coordinate_indices(model, which, joints, start, stop)
    key = key or which
    return Term(size=len(idx), ops=lambda c: transform(c.b, c.load(key, idx)))


@register("observation")
def qpos(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Generalized positions, chosen by joint names or an index slice."""
    return _coordinates(model, "qpos", joints, start, stop)


@register("observation")
def qpos_sin(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """sin of (angular) generalized positions."""
    return _coordinates(model, "qpos", joints, start, stop, lambda b, x: b.sin(x))


@register("observation")
def qpos_cos(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """cos of (angular) generalized positions."""
    return _coordinates(model, "qpos", joints, start, stop, lambda b, x: b.cos(x))


@register("observation")
def qvel(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Generalized velocities, chosen by joint names or an index slice."""
    return _coordinates(model, "qvel", joints, start, stop)


@register("observation")
def qfrc_constraint(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Constraint forces in generalized coordinates (joint limits, contacts), per dof."""
    return _coordinates(model, "qvel", joints, start, stop, key="qfrc_constraint")


def _axes(axes) -> np.ndarray:
    return np.array(list(axes), dtype=np.int64)


def _local_frame(frame) -> bool:
    if frame not in ("world", "relative_to"):
        raise TermError(f"frame must be 'world' or 'relative_to', got {frame!r}", "frame")
    return frame == "relative_to"


def _pick(b, regs, axes):
    """Registers of ``regs``'s elements ``axes``, in that order."""
    out = b.alloc(len(axes))
    for k, axis in enumerate(axes):
        b.copy(regs[int(axis)], out=out[k])
    return out


def point_velocity_ops(c, b):
    """The world velocity (3 registers) of body b's frame origin. MuJoCo's cvel is the body's
    spatial velocity (angular; linear) taken at the centre of mass of its kinematic tree's
    root subtree, so the origin's velocity is linear + angular x (xpos - that centre)."""
    root = c.model.body_rootid[b]
    cvel = c.load("cvel", b)
    arm = c.b.sub(c.load("xpos", b), c.load("subtree_com", root))
    return c.b.add(cvel[3:], c.b.cross(cvel[:3], arm))


@register("observation")
def body_offset(model, *, body: str, relative_to: str, axes: Axes = [0, 1, 2],  # noqa: B006
                frame: str = "world"):
    """Position of ``body`` minus that of ``relative_to`` (body frame origins), along world
    axes, or along the axes of ``relative_to``'s own frame with ``frame: relative_to`` (where
    another robot is, as this one sees it)."""
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, relative_to, "body", "relative_to")
    ax, local = _axes(axes), _local_frame(frame)

    def ops(c):
        d = c.b.sub(c.load("xpos", a), c.load("xpos", b))
        return _pick(c.b, c.b.rot_t(c.load("xmat", b), d) if local else d, ax)

    return Term(size=len(ax), ops=ops)


@register("observation")
def geom_offset(model, *, geom: str, relative_to: str, axes: Axes = [0, 1, 2]):  # noqa: B006
    """Centre of ``geom`` minus that of ``relative_to`` along world axes, from MuJoCo's
    geom_xpos: a target (placed anew each episode by a geom_pos randomization) as an
    effector sees it."""
    a = lookup(model.geom_name, geom, "geom", "geom")
    b = lookup(model.geom_name, relative_to, "geom", "relative_to")
    ax = _axes(axes)
    return Term(size=len(ax), ops=lambda c: c.load("geom_xpos", a, ax) - c.load("geom_xpos", b, ax))


@register("observation")
def body_relative_velocity(model, *, body: str, relative_to: str, axes: Axes = [0, 1, 2],  # noqa: B006
                           frame: str = "world"):
    """Velocity of ``body``'s frame origin minus that of ``relative_to``'s, along world axes or
    (``frame: relative_to``) along the axes of ``relative_to``'s frame (how fast another robot
    approaches). Read from cvel, so it holds for any body, not only free-floating ones."""
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, relative_to, "body", "relative_to")
    ax, local = _axes(axes), _local_frame(frame)

    def ops(c):
        v = c.b.sub(point_velocity_ops(c, a), point_velocity_ops(c, b))
        return _pick(c.b, c.b.rot_t(c.load("xmat", b), v) if local else v, ax)

    return Term(size=len(ax), ops=ops)


@register("observation")
def body_position(model, *, body: str, axes: Axes = [0, 1, 2]):  # noqa: B006
    """World position of a body frame's origin."""
    a = lookup(model.body_name, body, "body", "body")
    ax = _axes(axes)
    return Term(size=len(ax), ops=lambda c: c.load("xpos", a, ax))


# a frame's rotation matrix entries by dm_control's names (``named.data.xmat[body, 'zz']``):
# row (world axis) then column (body axis)
XMAT_ENTRIES = [r + c for r in "xyz" for c in "xyz"]


@register("observation")
def body_xmat(model, *, bodies: list[str], entries: list[str] = XMAT_ENTRIES):  # noqa: B006
    """Entries of bodies' rotation matrices, body by body: 'xz' is the world x component
    of the body's z axis (dm_control's orientation observations)."""
    rows = [lookup(model.body_name, b, "body", "bodies") for b in bodies]
    cols = []
    for e in entries:
        if e not in XMAT_ENTRIES:
            raise TermError(f"entries: {e!r} is not one of {XMAT_ENTRIES}", "entries")
        cols.append(XMAT_ENTRIES.index(e))
    return Term(size=len(rows) * len(cols), ops=lambda c: c.load("xmat", rows, cols))


@register("observation")
def qpos_sincos(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """sin and cos of each (angular) generalized position, coordinate by coordinate: sin q0,
    cos q0, sin q1, ... (dm_control's manipulator arm)."""
    idx = coordinate_indices(model, "qpos", joints, start, stop)

    def ops(c):
        q = c.load("qpos", idx)
        sin, cos = c.b.sin(q), c.b.cos(q)
        out = c.b.alloc(2 * len(idx))
        for k in range(len(idx)):
            c.b.copy(sin[k], out=out[2 * k])
            c.b.copy(cos[k], out=out[2 * k + 1])
        return out

    return Term(size=2 * len(idx), ops=ops)


@register("observation")
def body_xquat(model, *, bodies: list[str], entries: list[str] = ["w", "x", "y", "z"]):  # noqa: B006
    """Entries of bodies' world orientation quaternions (w, x, y, z), body by body: a planar
    body's w and y give its angle in the x-z plane (dm_control's manipulator poses)."""
    rows = [lookup(model.body_name, b, "body", "bodies") for b in bodies]
    cols = []
    for e in entries:
        if e not in "wxyz" or len(e) != 1:
            raise TermError(f"entries: {e!r} is not one of ['w', 'x', 'y', 'z']", "entries")
        cols.append("wxyz".index(e))
    return Term(size=len(rows) * len(cols), ops=lambda c: c.load("xquat", rows, cols))


@register("observation")
def sensor(model, *, names: list[str]):
    """The model's sensors (MJCF ``<sensor>``) named, in that order, each as wide as its
    values (3 for an accelerometer, 4 for a framequat): those of the physics step's first
    forward pass, as Gymnasium's envs read ``data.sensordata`` after mj_step."""
    if not names:
        raise TermError("names must list at least one sensor", "names")
    idx = []
    for name in names:
        s = lookup(model.sensor_name, name, "sensor", "names")
        idx.extend(range(model.sensor_adr[s], model.sensor_adr[s] + model.sensor_dim[s]))
    return Term(size=len(idx), ops=lambda c: c.load("sensordata", idx))


@register("observation")
def sensor_offset(model, *, sensor: str, relative_to: str, axes: Axes = [0, 1, 2]):  # noqa: B006
    """A 3-d sensor's value minus ``relative_to``'s along ``axes``: a framepos sensor's point
    as seen from another's (dm_control's finger reads its tip and target so, from the
    spinner's hinge)."""
    a, b = (_sensor_entries(model, name, param) for name, param in ((sensor, "sensor"), (relative_to, "relative_to")))
    ax = _axes(axes)
    return Term(size=len(ax), ops=lambda c: c.load("sensordata", a[ax].tolist()) - c.load("sensordata", b[ax].tolist()))


def _sensor_entries(model, name, param):
    s = lookup(model.sensor_name, name, "sensor", param)
    if model.sensor_dim[s] != 3:
        raise TermError(f"sensor {name!r} has {model.sensor_dim[s]} values, not 3", param)
    return np.arange(model.sensor_adr[s], model.sensor_adr[s] + 3)


@register("observation")
def sensor_log1p(model, *, names: list[str]):
    """log(1 + value) of the sensors named, as :func:`sensor` gives them: a touch sensor's
    contact force squashed as dm_control's hopper observes its foot's."""
    inner = sensor(model, names=names)
    return Term(size=inner.size, ops=lambda c: c.b.log1p(inner.ops(c)))


@register("observation")
def qfrc_actuator(model, *, joints: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Actuator forces in generalized coordinates, per dof (Gymnasium's Humanoid)."""
    return _coordinates(model, "qvel", joints, start, stop, key="qfrc_actuator")


def _per_body(model, key, width, bodies, start, stop):
    # (num_envs, nbody, width) rows of the chosen bodies, flattened body by body as
    # Gymnasium's ``data.<key>[1:].flatten()``
    idx = body_indices(model, bodies, start, stop)
    return Term(size=len(idx) * width, ops=lambda c: c.load(key, idx))


@register("observation")
def cinert(model, *, bodies: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Com-based body inertias, 10 per body in MuJoCo's layout (inertia 6, mass * offset 3, mass)."""
    return _per_body(model, "cinert", 10, bodies, start, stop)


@register("observation")
def cvel(model, *, bodies: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """Com-based body velocities, 6 per body (angular 3, linear 3), as MuJoCo's cvel."""
    return _per_body(model, "cvel", 6, bodies, start, stop)


@register("observation")
def cfrc_ext(model, *, bodies: list[str] | None = None, start: Index = 0, stop: Index | None = None):
    """External (contact) wrenches on bodies, 6 per body (torque 3, force 3) in the com-based
    frame, as MuJoCo's cfrc_ext after mj_rnePostConstraint. Gymnasium's Ant clips these to
    [-1, 1]: give the observation ``clip``."""
    return _per_body(model, "cfrc_ext", 6, bodies, start, stop)
