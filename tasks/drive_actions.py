"""Actions as PD-drive position targets (``actions.kind: drive_position``).

A robot whose joints carry the engine's PD drives (physics/smooth/drives.py; MJCF
``taigym:drive_*`` attributes or ``ModelBuilder.add_drive``) is commanded through the
drives' targets rather than through actuator controls: each control step, the chosen
joints' target positions are

    q* = offset + scale * action        (and target velocity qd* = 0)

written with ``World.set_drive_target``. ``actions.joints`` names the commanded joints
("all": every driven hinge or slide joint, in model order). Driven joints left out hold the
model's reference pose qpos0. The action space is each joint's range seen through that map
(unbounded for an unlimited joint), as a position actuator's is its control range.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.model import JNT_HINGE, JNT_SLIDE

from .errors import did_you_mean
from .loader import error_at, per_item
from .schema import TaskConfig

DRIVE_KINDS = ("drive_position",)


class DriveActions:
    """The binding of a config's drive actions to a Model: which dofs, and the affine map."""

    def __init__(self, cfg: TaskConfig, model):
        self.nv = model.nv
        driven = _driven_joints(model)
        if not driven:
            raise error_at(cfg, ("actions", "kind"), "the robot has no PD drives to command",
                           expected="an actuator kind ('torque', 'position', 'velocity'), or an asset with "
                                    "taigym:drive_* joint attributes")
        joints = driven if cfg.actions.joints == "all" else [
            _joint_index(cfg, model, name, driven, ("actions", "joints", k)) for k, name in enumerate(cfg.actions.joints)]
        if len(set(joints)) != len(joints):
            raise error_at(cfg, ("actions", "joints"), "names a joint twice", expected="each joint at most once")
        self.dofs = np.array([model.jnt_dofadr[j] for j in joints], dtype=np.int64)
        self.qpos_adr = np.array([model.jnt_qposadr[j] for j in joints], dtype=np.int64)
        # the targets of every dof when no action says otherwise: the reference pose
        self.rest = np.zeros(model.nv)
        for j in driven:
            self.rest[model.jnt_dofadr[j]] = model.qpos0[model.jnt_qposadr[j]]
        n = len(joints)
        self.scale = per_item(cfg, cfg.actions.scale, n, "scale", "commanded joint")
        self.offset = per_item(cfg, cfg.actions.offset, n, "offset", "commanded joint")
        if np.any(self.scale == 0):
            raise error_at(cfg, ("actions", "scale"), "a zero scale makes the action meaningless", expected="non-zero")
        self.low, self.high = self._bounds(model, joints)

    def targets(self, action: np.ndarray) -> np.ndarray:
        """(num_envs, n) actions -> (num_envs, nv) target qpos per dof; dofs not commanded
        rest at 0."""
        q = np.zeros((action.shape[0], len(self.rest)))
        q[:, self.dofs] = self.offset + self.scale * action
        return q

    def hold(self, qpos: np.ndarray) -> np.ndarray:
        """(n, nq) poses -> (n, nv) targets that hold the commanded joints where they are,
        so that a freshly reset env is not pulled toward the last episode's targets."""
        q = np.tile(self.rest, (qpos.shape[0], 1))
        q[:, self.dofs] = qpos[:, self.qpos_adr]
        return q

    def _bounds(self, model, joints):
        lo, hi = np.full(len(joints), -np.inf), np.full(len(joints), np.inf)
        limited = np.array([bool(model.jnt_limited[j]) for j in joints])
        rng = np.array([model.jnt_range[j] for j in joints]).reshape(-1, 2)
        a, b = (rng[:, 0] - self.offset) / self.scale, (rng[:, 1] - self.offset) / self.scale
        lo[limited], hi[limited] = np.minimum(a, b)[limited], np.maximum(a, b)[limited]
        return lo, hi


def check_kind_fields(cfg: TaskConfig) -> None:
    """``joints`` belongs to drive actions and ``actuators`` to actuator actions."""
    act = cfg.actions
    if act.kind in DRIVE_KINDS and act.actuators != "all":
        raise error_at(cfg, ("actions", "actuators"), f"kind {act.kind!r} commands joints, not actuators",
                       expected="`joints:` (driven joint names) instead of `actuators:`")
    if act.kind not in DRIVE_KINDS and act.joints != "all":
        raise error_at(cfg, ("actions", "joints"), f"kind {act.kind!r} acts through actuators, not drive targets",
                       expected=f"`actuators:`, or kind one of {list(DRIVE_KINDS)}")


def _driven_joints(model) -> list[int]:
    # hinge and slide joints whose dof has a drive gain (the engine drives no other kind)
    out = []
    for j in range(model.njnt):
        d = model.jnt_dofadr[j]
        if model.jnt_type[j] in (JNT_HINGE, JNT_SLIDE) and (
                model.dof_drive_stiffness[d] != 0 or model.dof_drive_damping[d] != 0):
            out.append(j)
    return out


def _joint_index(cfg, model, name, driven, path) -> int:
    names = [model.jnt_name[j] for j in driven]
    if name in names:
        return driven[names.index(name)]
    why = "has no PD drive" if name in model.jnt_name else "is not a joint of the robot"
    raise error_at(cfg, path, f"joint {name!r} {why}", expected=f"a driven joint, one of {names}",
                   suggestion=did_you_mean(name, names))
