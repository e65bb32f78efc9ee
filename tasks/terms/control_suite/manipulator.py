"""Manipulator: a planar arm with a two-fingered hand brings a ball to a target."""

from __future__ import annotations

import numpy as np
from taigym.physics.compiler.articulation import body_poses
from taigym.physics.compiler.transforms import quat_to_mat
from taigym.physics.step.program import tolerance

from ...registry import Term, register
from .._select import lookup, site_xpos_ops

CLOSE = 0.01  # distance below which the ball is at the target
ARM_JOINTS = ["arm_root", "arm_shoulder", "arm_elbow", "arm_wrist", "finger", "fingertip", "thumb", "thumbtip"]
# how an episode's ball starts: in the hand, at the target, or anywhere
START_P = {"in_hand": 0.1, "in_target": 0.1, "uniform": 0.8}


@register("reward")
def manipulator_bring_reward(model, *, prop: str = "ball", target: str = "target_ball"):
    """dm_control's bring reward for the ball: 1 while the prop's site is within 1 cm of the
    target's, falling off over 2 cm more."""
    a, b = (lookup(model.site_name, name, "site", None) for name in (prop, target))

    def ops(c):
        distance = c.b.norm(site_xpos_ops(c, b) - site_xpos_ops(c, a))
        return tolerance(distance, (0, CLOSE), margin=2 * CLOSE)

    return Term(ops=ops)


def _site_frame(model, qpos, site):
    """A site's world position and rotation at ``qpos``, by host kinematics."""
    xpos, xquat = body_poses(model, qpos)
    body = model.site_bodyid[site]
    rot = quat_to_mat(xquat[body])
    return xpos[body] + rot @ model.site_pos[site], rot @ quat_to_mat(model.site_quat[site])


@register("reset")
def manipulator_bring_state(model, *, prop: str = "ball", target: str = "target_ball"):
    """dm_control's bring-ball start: the arm at random (joints in their ranges, the finger
    matching the thumb), the target's body at a random point and angle in the x-z plane, and
    the ball in the hand, at the target or anywhere with a random horizontal speed. Drawn
    with the target's pose, each draw continuing from the one before (with
    ``reset_until_no_contact``, a speed drawn once stays, as dm_control's loop leaves it)."""
    arm = np.array([model.jnt_qposadr[lookup(model.jnt_name, j, "joint", None)] for j in ARM_JOINTS])
    limited = np.array([bool(model.jnt_limited[lookup(model.jnt_name, j, "joint", None)]) for j in ARM_JOINTS])
    ranges = np.array([model.jnt_range[lookup(model.jnt_name, j, "joint", None)] for j in ARM_JOINTS])
    low, high = np.where(limited, ranges[:, 0], -np.pi), np.where(limited, ranges[:, 1], np.pi)
    finger, thumb = arm[ARM_JOINTS.index("finger")], arm[ARM_JOINTS.index("thumb")]
    x, z, angle = (int(model.jnt_qposadr[lookup(model.jnt_name, f"{prop}_{d}", "joint", "prop")]) for d in "xzy")
    speed = int(model.jnt_dofadr[lookup(model.jnt_name, f"{prop}_x", "joint", "prop")])
    body = np.array([lookup(model.body_name, target, "body", "target")])
    grasp = lookup(model.site_name, "grasp", "site", None)
    kinds, probs = list(START_P), list(START_P.values())

    def apply(rng, qpos, qvel):
        qpos[arm] = rng.uniform(low, high)
        qpos[finger] = qpos[thumb]
        tx, tz, ta = rng.uniform(-0.4, 0.4), rng.uniform(0.1, 0.4), rng.uniform(-np.pi, np.pi)
        pos = model.body_pos[body].copy()
        pos[0, [0, 2]] = tx, tz
        quat = model.body_quat[body].copy()
        quat[0, [0, 2]] = np.cos(ta / 2), np.sin(ta / 2)
        kind = kinds[rng.choice(len(kinds), p=probs)]
        if kind == "in_target":
            qpos[[x, z, angle]] = tx, tz, ta
        elif kind == "in_hand":
            point, rot = _site_frame(model, qpos, grasp)
            qpos[[x, z, angle]] = point[0], point[2], np.pi - np.arctan2(rot[2, 0], rot[0, 0])
        else:
            qpos[[x, z, angle]] = rng.uniform(-0.5, 0.5), rng.uniform(0, 0.7), rng.uniform(0, 2 * np.pi)
            qvel[speed] = rng.uniform(-5, 5)
        return {"body_pos": (body, pos), "body_quat": (body, quat)}

    return Term(apply, info={"parameters": ("body_pos", "body_quat")})
