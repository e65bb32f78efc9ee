"""Forward kinematics in Newton's articulation view: body poses from joint coordinates,
computed by a World's kinematics stage (its inverse, host-side, is
physics/compiler/articulation.py's eval_ik). It sits above the World it builds, so the
compiler below does not import the World."""

from __future__ import annotations

import numpy as np

from .model import DSBL_CONSTRAINT, Model
from .world import World


def eval_fk(model: Model, joint_q, *, device: str = "cpu") -> np.ndarray:
    """Body poses (n, nbody, 7) from joint coordinates (n, nq), in float64."""
    joint_q = np.atleast_2d(np.asarray(joint_q, dtype=float))
    # kinematics only: constraints (and their collision pairs) play no part in body poses
    kinematic = model.with_options(disableflags=model.opt.disableflags | DSBL_CONSTRAINT)
    world = World(kinematic, num_envs=joint_q.shape[0], device=device, precision="float64")
    world.set_state(qpos=joint_q)
    world.forward()
    return world.get("body_q")
