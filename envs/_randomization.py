"""Writing per-env randomized model parameters into a World.

Randomization terms draw, per env, ``{parameter: (indices, values)}``; this writer turns
them into full per-env rows (the nominal value where a term left an entry alone) and
hands them to the World's per-env parameter hook.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.compiler.sameframe import geom_poses
from taigym.tasks.loader import error_at

# nominal value of each parameter a randomization term may set, read from the Model
_NOMINAL = {
    "body_mass": lambda m: m.body_mass,
    "actuator_gear": lambda m: m.actuator_gear[:, 0],
    "dof_damping": lambda m: m.dof_damping,
    "gravity": lambda m: m.opt.gravity,
    "jnt_range": lambda m: m.jnt_range,
    "geom_friction": lambda m: m.geom_friction[:, 0],
    "geom_pos": lambda m: geom_poses(m)[0],  # as the kernels place the geoms
    "site_pos": lambda m: m.site_pos,
    "body_pos": lambda m: m.body_pos,
    "body_quat": lambda m: m.body_quat,
}


class ParameterWriter:
    def __init__(self, task, world):
        if not hasattr(world, "set_param"):
            # the kernels already read per-env model rows; the World has no public setter yet
            raise error_at(task.config, ("randomization",), "per-env randomization needs the engine hook "
                           "World.set_param(name, values, env_ids), which this physics engine does not provide yet")
        self.model, self.world = task.model, world

    def write(self, env_ids, draws):
        names = {name for d in draws for name in d}
        for name in names:
            nominal = np.asarray(_NOMINAL[name](self.model), dtype=np.float64)
            rows = np.repeat(nominal[None], len(env_ids), axis=0)
            for k, d in enumerate(draws):
                if name in d:
                    idx, values = d[name]
                    rows[k, idx] = values
            self.world.set_param(name, rows, env_ids=env_ids)
