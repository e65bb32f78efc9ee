"""What of the engine a model needs compiled into its step kernel.

A step kernel could hold every stage a model could need, but Taichi's compile and load
times grow with the code (a warm start reloads and re-links all of it). So a World compiles
only the parts its model has: the narrow-phase routines of its candidate pairs' kinds, and
the equality, friction-loss, tendon and limit-model code where the model has such elements.
Such a kernel of the model's own is also traced with the model's sizes as constants
(physics/step/env_tables.py), so it serves that model alone; the shared kernels
(``TAIGYM_KERNELS=shared``, or ``features`` given) read the sizes and serve any model with
their parts.

Only structure decides a part, never a value that a World can change per env
(``World.set_param``): damping, gear, masses, ranges and frictions of an existing part are
run-time values of the compiled code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import colliders as C
from . import settings as _settings
from .compiler.sensors import KINDS, rangefinders_see_meshes
from .errors import WorldError
from .model import INTEGRATORS, LIMIT_CUBIC, LIMIT_HARD, LIMIT_SPRING, Model

if TYPE_CHECKING:
    from .collision.broadphase import PairTable

ALL_COLLIDERS = frozenset(range(C.COLLIDE_PLANE_SPHERE, C.COLLIDE_FACES + 1))
HFIELD_COLLIDERS = frozenset((C.COLLIDE_HFIELD_SPHERE, C.COLLIDE_HFIELD_CAPSULE, C.COLLIDE_HFIELD_BOX,
                              C.COLLIDE_HFIELD_CONVEX, C.COLLIDE_HFIELD_MESH))
CONVEX_COLLIDERS = frozenset((C.COLLIDE_CONVEX, C.COLLIDE_HFIELD_CONVEX, C.COLLIDE_PLANE_MESH, C.COLLIDE_HFIELD_MESH,
                              C.COLLIDE_FACES))


@dataclass(frozen=True)
class Features:
    """The parts of the step kernel a model uses; the defaults compile everything.

    colliders: the COLLIDE_* codes of the candidate pairs (physics/colliders.py);
        none leaves out the collision stage and the contact rows.
    equality: equality constraints (neq > 0).
    tendons: fixed tendons: their lengths, springs, limits and friction loss.
    frictionloss: friction-loss rows of dofs or tendons.
    cubic_limits, physx_limits: joints with the cubic penalty limit, and with the hard or
        spring limit (physics/smooth/limits.py).
    fluid: drag of the medium (Option density or viscosity above 0).
    sensors: the sensor stage (nsensor > 0, physics/sensors.py).
    ray_meshes: rangefinder rays against meshes' triangles (a rangefinder and a mesh geom
        it can see, physics/rays.py).
    contact_sensors: the contact sensor (``<sensor><contact>``), its matching and reductions.
    activation: activation dynamics of stateful actuators (na > 0).
    noslip: the no-slip pass after the solver (Option noslip_iterations > 0).
    joint_actuator_limits: joints whose actuators' total force is clamped (actuatorfrcrange).
    integrators: the MJCF integrators (INT_* codes) compiled in: the model's own.
    """

    colliders: frozenset = ALL_COLLIDERS
    equality: bool = True
    tendons: bool = True
    frictionloss: bool = True
    cubic_limits: bool = True
    physx_limits: bool = True
    fluid: bool = True
    sensors: bool = True
    ray_meshes: bool = True
    contact_sensors: bool = True
    activation: bool = True
    noslip: bool = True
    joint_actuator_limits: bool = True
    integrators: frozenset = frozenset(INTEGRATORS.values())

    @property
    def contacts(self) -> bool:
        return bool(self.colliders)

    def integrates(self, *integrators) -> bool:
        """Whether any of these integrators is compiled in."""
        return bool(self.integrators & set(integrators))

    def label(self) -> str:
        """A short printable name, for kernel-cache markers and messages."""
        if self == ALL:
            return "all"
        if self == COMMON:
            return "common"
        flags = [name for name in _PART_NAMES if getattr(self, name)]
        colliders = "-".join(map(str, sorted(self.colliders))) or "none"
        integrators = "-".join(map(str, sorted(self.integrators)))
        return f"colliders {colliders}, integrators {integrators}" + "".join(f", {f}" for f in flags)


ALL = Features()
# TAIGYM_KERNELS=shared's kernel for models without the parts few models have and that add to
# its compile time: meshes on height fields, the no-slip pass, rays on meshes' triangles,
# contact sensors, implicitfast. On a 2-core Xeon it compiled in 69 s (float64, Newton), the
# every-part kernel in 86 s; a process going through many models compiles the larger one only
# for the models that need it
COMMON = Features(
    colliders=ALL_COLLIDERS - {C.COLLIDE_HFIELD_MESH},
    noslip=False, ray_meshes=False, contact_sensors=False,
    integrators=frozenset(INTEGRATORS.values()) - {INTEGRATORS["implicitfast"]})
_PART_NAMES = ("equality", "tendons", "frictionloss", "cubic_limits", "physx_limits", "fluid", "sensors", "ray_meshes",
               "contact_sensors", "activation", "noslip", "joint_actuator_limits")


def model_features(model: Model, pairs: PairTable) -> Features:
    """The parts ``model`` needs, given its candidate contact ``pairs`` (none when its
    contacts are disabled)."""
    limit_model = np.asarray(model.jnt_limit_model)  # the kernels read it whether or not a joint is limited
    frictionloss = (np.any(np.asarray(model.dof_frictionloss) > 0)
                    or (model.ntendon > 0 and np.any(np.asarray(model.tendon_frictionloss) > 0)))
    return Features(
        colliders=frozenset(int(c) for c in pairs.collider[: pairs.npair]),
        equality=model.neq > 0,
        tendons=model.ntendon > 0,
        frictionloss=bool(frictionloss),
        cubic_limits=bool(np.any(limit_model == LIMIT_CUBIC)),
        physx_limits=bool(np.isin(limit_model, (LIMIT_HARD, LIMIT_SPRING)).any()),
        fluid=model.opt.density > 0 or model.opt.viscosity > 0,
        sensors=model.nsensor > 0,
        ray_meshes=rangefinders_see_meshes(model),
        contact_sensors=bool(np.any(np.asarray(model.sensor_type) == KINDS["contact"].code)),
        activation=model.na > 0,
        noslip=model.opt.noslip_iterations > 0,
        joint_actuator_limits=bool(np.any(np.asarray(model.jnt_actfrclimited))),
        integrators=frozenset((int(model.opt.integrator),)),
    )


def choose_features(model: Model, pairs: PairTable, features: Features | None = None) -> Features:
    """A World's features: those given, which must hold every part ``model`` needs, or by
    default the model's own (with ``TAIGYM_KERNELS=shared`` in the environment, COMMON
    where it holds them, else ALL)."""
    needed = model_features(model, pairs)
    if features is None:
        if not _settings.current().shared_kernels:
            return needed
        return COMMON if not missing_parts(needed, COMMON) else ALL
    if not isinstance(features, Features):
        raise WorldError(f"features must be a physics.features.Features, got {type(features).__name__}")
    missing = missing_parts(needed, features)
    if missing:
        raise WorldError(f"features leave out parts the model {model.name!r} needs: {', '.join(missing)}")
    return features


def missing_parts(needed: Features, features: Features) -> list[str]:
    """The parts of ``needed`` that ``features`` leaves out, by name."""
    missing = [name for name in _PART_NAMES if getattr(needed, name) and not getattr(features, name)]
    missing += [f"collider {c}" for c in sorted(needed.colliders - features.colliders)]
    missing += [f"integrator {i}" for i in sorted(needed.integrators - features.integrators)]
    return missing
