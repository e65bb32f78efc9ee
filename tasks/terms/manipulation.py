"""Terms for fixed-base manipulation: reaching a target with an arm commanded through its
PD drives (``actions.kind: drive_position``).

The drives' position targets are World data (``drive_qpos_target``), so the last commanded
action, seen in joint space, is observed and differenced like any other quantity; a reset
points them at the reset pose (``Task.hold_reset_pose``), so the first step of an episode
is compared with holding still.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.model import JNT_HINGE, JNT_SLIDE

from ..registry import Term, TermError, register
from ._select import coordinate_indices, lookup, within_ops

TARGET = "drive_qpos_target"


def _driven_dofs(model, joints, param="joints") -> np.ndarray:
    # dofs of the named joints (all driven ones if None); each must carry a drive, since
    # the target of an undriven dof is meaningless
    driven = [j for j in range(model.njnt) if model.jnt_type[j] in (JNT_HINGE, JNT_SLIDE)
              and (model.dof_drive_stiffness[model.jnt_dofadr[j]] != 0
                   or model.dof_drive_damping[model.jnt_dofadr[j]] != 0)]
    if joints is None:
        if not driven:
            raise TermError("the robot has no PD-driven joints", param)
        return np.array([model.jnt_dofadr[j] for j in driven], dtype=np.int64)
    dofs = coordinate_indices(model, "qvel", joints, 0, None)
    names = {model.jnt_name[j] for j in driven}
    for name in joints:
        if name not in names:
            raise TermError(f"joint {name!r} has no PD drive; driven joints: {sorted(names)}", param)
    return dofs


@register("observation")
def drive_target(model, *, joints: list[str] | None = None):
    """The PD drives' position targets of ``joints`` (default: every driven joint): the last
    position command, in joint space."""
    dofs = _driven_dofs(model, joints)
    return Term(size=len(dofs), ops=lambda c: c.load(TARGET, dofs))


@register("reward")
def drive_target_rate_l2(model, *, joints: list[str] | None = None):
    """Squared change of the drives' position targets over the step, summed over joints (an
    action-rate penalty for position-commanded arms; in rad^2 whatever the action scale)."""
    dofs = _driven_dofs(model, joints)
    return Term(ops=lambda c: c.b.sum(c.b.square(c.b.sub(c.load(TARGET, dofs), c.prev(TARGET, dofs)))))


@register("reward")
def body_within(model, *, body: str, target: str, radius: float):
    """1 while the origins of ``body`` and ``target`` are closer than ``radius``, else 0 (a
    success bonus for reaching)."""
    if radius <= 0:
        raise TermError(f"radius must be > 0, got {radius}", "radius")
    a = lookup(model.body_name, body, "body", "body")
    b = lookup(model.body_name, target, "body", "target")
    return Term(ops=lambda c: within_ops(c, a, b, radius))


@register("reset")
def qpos_uniform_in_shell(model, *, joints: list[str], inner_radius: float, outer_radius: float,
                          min_z: float | None = None):
    """Three coordinates (a target's x, y, z slides) set to a point drawn uniformly in the
    spherical shell inner_radius <= |p| < outer_radius, keeping p_z >= ``min_z`` if given
    (e.g. above the floor), by rejection from the enclosing cube. The shell is centred on
    the coordinates' zero: put the target body's frame at the arm's shoulder."""
    if not 0 <= inner_radius < outer_radius:
        raise TermError(f"needs 0 <= inner_radius < outer_radius, got {inner_radius}, {outer_radius}",
                        "inner_radius")
    if min_z is not None and min_z >= outer_radius:
        raise TermError(f"min_z ({min_z}) leaves nothing of a shell of outer radius {outer_radius}", "min_z")
    idx = coordinate_indices(model, "qpos", joints, 0, None)
    if len(idx) != 3:
        raise TermError(f"needs exactly three coordinates, got {len(idx)}", "joints")
    floor = -np.inf if min_z is None else min_z

    def apply(rng, qpos, qvel):
        while True:
            p = rng.uniform(low=-outer_radius, high=outer_radius, size=3)
            if inner_radius <= np.linalg.norm(p) < outer_radius and p[2] >= floor:
                break
        qpos[idx] = p

    return Term(apply)
