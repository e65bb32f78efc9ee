"""Legged-locomotion terms in the style of Isaac Lab and MuJoCo Playground.

A velocity command (planar linear velocity and yaw rate in the base frame) is drawn per env
and resampled on a schedule; observations give the base's velocities in its own frame, the
projected gravity, joint positions relative to the default pose; rewards track the command
with exponential kernels and penalize what makes a gait jerky or wasteful; terminations end
an episode when the base touches the ground or tips over.

The base is a body on a free joint (``body``, "base" by default): its qvel[0:3] is the
linear velocity of the body's origin in the world frame, qvel[3:6] its angular velocity in
the body frame (MuJoCo's convention), so the base-frame linear velocity is R^T qvel[0:3].
"""

from __future__ import annotations

import numpy as np
from taigym.physics.model import JNT_FREE, JNT_HINGE, JNT_SLIDE

from ..registry import Term, TermError, register
from ._select import body_indices, lookup

GRAVITY_DIRECTION = np.array([0.0, 0.0, -1.0])
_ONE_DOF = (JNT_HINGE, JNT_SLIDE)


# --- helpers ---------------------------------------------------------------------------------
def _free_base(model, body: str):
    """(body index, dof address) of a body moved by a free joint; a TermError otherwise."""
    b = lookup(model.body_name, body, "body", "body")
    for j in range(model.njnt):
        if model.jnt_bodyid[j] == b and model.jnt_type[j] == JNT_FREE:
            return b, int(model.jnt_dofadr[j])
    raise TermError(f"body {body!r} has no free joint; give the floating base", "body")


def _base_lin_vel_ops(c, b, dof):
    """The linear velocity of the base origin in the base frame: R^T qvel[dof:dof+3]."""
    return c.b.rot_t(c.load("xmat", b), c.load("qvel", range(dof, dof + 3)))


def _projected_gravity_ops(c, b):
    """The unit gravity direction in the base frame, R^T (0, 0, -1): minus R's last row;
    (0, 0, -1) when level."""
    return c.b.affine(c.load("xmat", b, [6, 7, 8]), GRAVITY_DIRECTION[2], 0.0)


def _exp_kernel_ops(c, error, std):
    """exp(-sum(error^2) / std^2)."""
    return c.b.exp(c.b.affine(c.b.sum(c.b.square(error)), -1.0 / std**2, 0.0))


def _in_contact_ops(c, body, force):
    """1 where the net contact force on ``body`` exceeds ``force``: cfrc_ext's last three
    components are the force, whatever point its torque is about."""
    return c.b.greater(c.b.norm(c.load("cfrc_ext", body, [3, 4, 5])), force)


def _joint_dofs(model, joints):
    """qpos and qvel indices of hinge/slide joints (all of them when ``joints`` is None)."""
    if joints is None:
        ids = [j for j in range(model.njnt) if model.jnt_type[j] in _ONE_DOF]
        if not ids:
            raise TermError("the robot has no hinge or slide joints", "joints")
    else:
        ids = [lookup(model.jnt_name, name, "joint", "joints") for name in joints]
        for name, j in zip(joints, ids, strict=True):
            if model.jnt_type[j] not in _ONE_DOF:
                raise TermError(f"joint {name!r} is not a hinge or slide joint", "joints")
    return np.array([model.jnt_qposadr[j] for j in ids]), np.array([model.jnt_dofadr[j] for j in ids])


def _range(value, param):
    lo, hi = value
    if lo > hi:
        raise TermError(f"lower ({lo}) must be <= upper ({hi})", param)
    return float(lo), float(hi)


def _positive(value, param):
    if not value > 0:
        raise TermError(f"must be > 0, got {value}", param)
    return value


# --- command --------------------------------------------------------------------------------
@register("command")
def base_velocity(model, *, lin_vel_x: tuple[float, float] = (-1.0, 1.0), lin_vel_y: tuple[float, float] = (-0.5, 0.5),
                  ang_vel_z: tuple[float, float] = (-1.0, 1.0), resampling_time: float = 10.0,
                  standing_probability: float = 0.0):
    """A base velocity command (vx, vy, yaw rate) in the base frame, uniform in the ranges,
    redrawn every ``resampling_time`` seconds; with ``standing_probability`` it is zero
    instead, so that policies also learn to stand still (Isaac Lab's standing envs)."""
    ranges = np.array([_range(lin_vel_x, "lin_vel_x"), _range(lin_vel_y, "lin_vel_y"), _range(ang_vel_z, "ang_vel_z")])
    _positive(resampling_time, "resampling_time")
    if not 0.0 <= standing_probability <= 1.0:
        raise TermError(f"must be in [0, 1], got {standing_probability}", "standing_probability")

    def draw(rng):
        # both draws always happen, so the stream's use does not depend on the outcome
        command = rng.uniform(ranges[:, 0], ranges[:, 1])
        stand = rng.uniform() < standing_probability
        return np.zeros(3) if stand else command

    return Term(draw, size=3, info={"resampling_time": float(resampling_time)})


# --- observations --------------------------------------------------------------------------
@register("observation")
def base_lin_vel(model, *, body: str = "base"):
    """Linear velocity of the base in the base frame (3)."""
    b, dof = _free_base(model, body)
    return Term(size=3, ops=lambda c: _base_lin_vel_ops(c, b, dof))


@register("observation")
def base_ang_vel(model, *, body: str = "base"):
    """Angular velocity of the base in the base frame (3)."""
    _, dof = _free_base(model, body)
    return Term(size=3, ops=lambda c: c.load("qvel", range(dof + 3, dof + 6)))


@register("observation")
def projected_gravity(model, *, body: str = "base"):
    """The gravity direction in the base frame (3), (0, 0, -1) when the base is level."""
    b, _ = _free_base(model, body)
    return Term(size=3, ops=lambda c: _projected_gravity_ops(c, b))


@register("observation")
def velocity_command(model, *, command: str = "base_velocity"):
    """The current command ``command`` (vx, vy, yaw rate)."""
    return Term(size=3, info={"command": command}, ops=lambda c: c.command(command))


@register("observation")
def joint_pos_rel(model, *, joints: list[str] | None = None):
    """Joint positions minus the default pose qpos0 (hinge and slide joints; all by default)."""
    qadr, _ = _joint_dofs(model, joints)
    default = np.asarray(model.qpos0, dtype=np.float64)[qadr]
    return Term(size=len(qadr), ops=lambda c: c.b.affine(c.load("qpos", qadr), 1.0, -default))


@register("observation")
def actuator_ctrl(model):
    """The controls last applied, one per actuator: the last action as joint targets
    (offset + scale * action); zero after a reset, as the World resets them."""
    return Term(size=model.nu, ops=lambda c: c.load("ctrl", range(model.nu)))


# --- rewards --------------------------------------------------------------------------------
@register("reward")
def track_lin_vel_xy_exp(model, *, std: float = 0.5, command: str = "base_velocity", body: str = "base"):
    """exp(-|v_xy - command_xy|^2 / std^2): 1 when the base's planar velocity (base frame)
    equals the commanded one."""
    b, dof = _free_base(model, body)
    _positive(std, "std")

    def ops(c):
        error = c.b.sub(c.command(command)[:2], _base_lin_vel_ops(c, b, dof)[:2])
        return _exp_kernel_ops(c, error, std)

    return Term(info={"command": command}, ops=ops)


@register("reward")
def track_ang_vel_z_exp(model, *, std: float = 0.5, command: str = "base_velocity", body: str = "base"):
    """exp(-(w_z - command_yaw)^2 / std^2), the base's yaw rate in its own frame."""
    _, dof = _free_base(model, body)
    _positive(std, "std")

    def ops(c):
        return _exp_kernel_ops(c, c.b.sub(c.command(command)[2], c.load("qvel", dof + 5)), std)

    return Term(info={"command": command}, ops=ops)


@register("reward")
def lin_vel_z_l2(model, *, body: str = "base"):
    """Squared vertical velocity of the base (base frame z): penalizes bouncing."""
    b, dof = _free_base(model, body)
    return Term(ops=lambda c: c.b.square(_base_lin_vel_ops(c, b, dof)[2]))


@register("reward")
def ang_vel_xy_l2(model, *, body: str = "base"):
    """Squared roll and pitch rates of the base: penalizes rocking."""
    _, dof = _free_base(model, body)
    return Term(ops=lambda c: c.b.sum(c.b.square(c.load("qvel", range(dof + 3, dof + 5)))))


@register("reward")
def flat_orientation_l2(model, *, body: str = "base"):
    """Squared x and y of the projected gravity: 0 when the base is level."""
    b, _ = _free_base(model, body)
    return Term(ops=lambda c: c.b.sum(c.b.square(_projected_gravity_ops(c, b)[:2])))


@register("reward")
def joint_acc_l2(model, *, joints: list[str] | None = None):
    """Squared joint accelerations, as (qvel after - qvel before) / dt over the control
    period (hinge and slide joints; all by default)."""
    _, dofs = _joint_dofs(model, joints)

    def ops(c):
        acc = c.b.affine(c.b.sub(c.load("qvel", dofs), c.prev("qvel", dofs)), 1.0 / c.dt, 0.0)
        return c.b.sum(c.b.square(acc))

    return Term(ops=ops)


@register("reward")
def action_rate_l2(model):
    """Squared change of the controls over the step, sum over actuators. On controls rather
    than raw actions: ctrl = offset + scale * action, so this is scale^2 times the action
    rate; a reset zeroes the controls, so the first step compares with the default pose."""
    def ops(c):
        actuators = range(model.nu)
        return c.b.sum(c.b.square(c.b.sub(c.load("ctrl", actuators), c.prev("ctrl", actuators))))

    return Term(ops=ops)


@register("reward")
def joint_torques_l2(model, *, joints: list[str] | None = None):
    """Squared actuator forces on the joints' dofs (qfrc_actuator)."""
    _, dofs = _joint_dofs(model, joints)
    return Term(ops=lambda c: c.b.sum(c.b.square(c.load("qfrc_actuator", dofs))))


@register("reward")
def feet_air_time(model, *, feet: list[str], threshold: float = 0.3, contact_force: float = 1.0,
                  command: str = "base_velocity", min_command: float = 0.1):
    """Sum over feet touching down this step of (time in the air - ``threshold``) [s]:
    rewards long steps (Isaac Lab's feet_air_time). Zero while the commanded planar speed is
    below ``min_command``, so standing still is not discouraged. A foot is in contact when
    the contact force on its body exceeds ``contact_force`` [N]; the time each foot has
    spent in the air is kept per env (memory ``feet_air_time``)."""
    bodies = np.array([lookup(model.body_name, foot, "body", "feet") for foot in feet], dtype=np.int64)
    if bodies.size == 0:
        raise TermError("needs at least one foot", "feet")
    _positive(contact_force, "contact_force")

    def ops(c):
        b, air = c.b, c.memory("feet_air_time")
        value = b.const(0.0)
        for k, body in enumerate(bodies):
            contact = _in_contact_ops(c, int(body), contact_force)
            touchdown = b.mul(contact, b.greater(air[k], 0.0))
            b.add(value, b.mul(touchdown, b.affine(air[k], 1.0, -threshold)), out=value)
            # in contact: 0; in the air: one more step's time
            b.mul(b.affine(contact, -1.0, 1.0), b.affine(air[k], 1.0, c.dt), out=air[k])
        moving = b.greater(b.norm(c.command(command)[:2]), min_command)
        return b.mul(value, moving)

    return Term(memory={"feet_air_time": len(bodies)}, info={"command": command}, ops=ops)


# --- terminations ---------------------------------------------------------------------------
@register("termination")
def body_contact(model, *, bodies: list[str], force: float = 1.0):
    """Any of ``bodies`` pressed on by a contact force above ``force`` [N] (a base on the
    ground: Isaac Lab's illegal contact)."""
    idx = body_indices(model, bodies, 0, None)
    _positive(force, "force")
    def ops(c):
        flags = c.b.alloc(len(idx))
        for k, body in enumerate(idx):
            c.b.copy(_in_contact_ops(c, int(body), force), out=flags[k])
        return c.b.any(flags)

    return Term(ops=ops)


@register("termination")
def base_tilt_above(model, *, max_angle: float, body: str = "base"):
    """The base tilted from level by more than ``max_angle`` [rad] (the angle between its z
    axis and the world's), or a non-finite orientation."""
    b, _ = _free_base(model, body)
    if not 0 < max_angle <= np.pi:
        raise TermError(f"must be in (0, pi], got {max_angle}", "max_angle")
    cos_max = np.cos(max_angle)
    # cos(tilt) is the base z axis' world z: xmat[2, 2]; NaN is outside, so it ends too
    return Term(ops=lambda c: c.b.outside(c.load("xmat", b, 8), cos_max, np.inf))
