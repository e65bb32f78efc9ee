"""ModelBuilder: the one way a :class:`physics.Model` is made.

Bodies form a tree; each body's frame is given relative to its parent at the reference
configuration. Joints attach a body to its parent and compose in the order they are
added (a D6 joint is a sequence of slide and hinge joints on one body; a fixed joint is
a body without joints). The MJCF and URDF importers build through this class, so all
three routes produce the same Model.

Example::

    b = ModelBuilder()
    link = b.add_body(parent=0, pos=(0, 0, 1), name="link")
    b.add_joint_revolute(link, axis=(0, 1, 0), limit_lower=-1.0, limit_upper=1.0)
    b.add_shape_capsule(link, radius=0.05, half_height=0.25, density=1000)
    b.add_actuator("link_joint", kind="motor", gear=10)
    model = b.finalize()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .. import model as M
from ..errors import ModelError
from ..compiler.integers import int32
from ..compiler.mass_properties import combine, geom_inertia, geom_volume, principal_axes
from ..compiler.sensors import (
    CONTACT_FIRST,
    CONTACT_SECOND,
    FRAME_OBJECTS,
    KINDS,
    OBJ_UNKNOWN,
    SensorSpec,
    contact_sensor,
)
from ..compiler.sensors import where as sensor_where
from ..compiler.mesh import Mesh, compile_mesh, fitted_size
from ..compiler.transforms import quat_mul, quat_normalize, quat_rotate

_JOINT_TYPES = {"free": M.JNT_FREE, "ball": M.JNT_BALL, "slide": M.JNT_SLIDE, "hinge": M.JNT_HINGE}
_GEOM_TYPES = {
    "plane": M.GEOM_PLANE,
    "hfield": M.GEOM_HFIELD,
    "sphere": M.GEOM_SPHERE,
    "capsule": M.GEOM_CAPSULE,
    "ellipsoid": M.GEOM_ELLIPSOID,
    "cylinder": M.GEOM_CYLINDER,
    "box": M.GEOM_BOX,
    "mesh": M.GEOM_MESH,
}
_SITE_TYPES = {k: _GEOM_TYPES[k] for k in ("sphere", "capsule", "ellipsoid", "cylinder", "box")}
_DEFAULT_SOLREF = (0.02, 1.0)
_DEFAULT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
_MINVAL = 1e-15


@dataclass
class _Body:
    parent: int
    pos: np.ndarray
    quat: np.ndarray
    name: str
    mass: Optional[float]
    com: Optional[np.ndarray]
    inertia: Optional[np.ndarray]  # (3,) principal or (3, 3) full, body frame
    iquat: Optional[np.ndarray]
    mocap: bool = False  # its pose comes from mjData's mocap_pos/mocap_quat, not from pos/quat
    gravcomp: float = 0.0  # the fraction of its weight an upward force at its centre of mass holds


@dataclass
class _Joint:
    body: int
    type: int
    axis: np.ndarray
    pos: np.ndarray
    name: str
    limited: bool
    range: np.ndarray
    ref: float
    springref: float
    stiffness: float
    damping: float
    armature: float
    frictionloss: float
    margin: float
    solref: np.ndarray
    solimp: np.ndarray
    solreffriction: np.ndarray
    solimpfriction: np.ndarray
    springdamper: tuple = (0.0, 0.0)  # (timeconst, dampratio): stiffness and damping set from them
    actfrclimited: bool = False  # the actuators' total force on the joint clamped to actfrcrange
    actfrcrange: tuple = (0.0, 0.0)
    actgravcomp: bool = False  # its dofs' gravity compensation goes through the actuators (and their clamp)


@dataclass
class _Geom:
    body: int
    type: int
    size: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    name: str
    mass: Optional[float]
    density: float
    contype: int
    conaffinity: int
    condim: int
    friction: np.ndarray
    margin: float
    gap: float
    solref: np.ndarray
    solimp: np.ndarray
    rgba: np.ndarray
    dataid: int = -1  # height field of an hfield geom, mesh of a mesh geom
    priority: int = 0
    solmix: float = 1.0


@dataclass
class _HField:
    name: str
    size: np.ndarray  # radius_x, radius_y, elevation_z, base_z
    data: np.ndarray  # (nrow, ncol) normalized to [0, 1], row 0 at -y


@dataclass
class _Actuator:
    target: object  # joint/tendon name or id
    trntype: int
    name: str
    gear: np.ndarray
    gaintype: int
    gainprm: np.ndarray
    biastype: int
    biasprm: np.ndarray
    ctrllimited: bool
    ctrlrange: np.ndarray
    forcelimited: bool
    forcerange: np.ndarray
    dyntype: int = M.DYN_NONE
    dynprm: np.ndarray = None
    actlimited: bool = False
    actrange: np.ndarray = None
    actearly: bool = False


@dataclass
class _Tendon:
    terms: list  # [(joint name or id, coef)]
    name: str
    limited: bool
    range: np.ndarray
    stiffness: float
    damping: float
    frictionloss: float
    lengthspring: Optional[np.ndarray]
    margin: float
    solref: np.ndarray  # limit
    solimp: np.ndarray
    solreffriction: np.ndarray
    solimpfriction: np.ndarray
    # a spatial tendon's path instead of joint terms: ("site", site), ("geom", geom,
    # side site or None), ("pulley", divisor)
    spatial: bool = False


@dataclass
class _Equality:
    type: int
    obj1: object  # body, site, joint or tendon: name or id
    obj2: object  # None: the world (connect, weld) or no second joint or tendon
    data: np.ndarray  # (11,) user data; the compile step fills the qpos0-derived parts
    name: str
    active: bool
    solref: np.ndarray
    solimp: np.ndarray
    break_force: float
    break_torque: float
    objtype: int  # OBJ_BODY / OBJ_SITE (obj1, obj2 name sites) / OBJ_JOINT / OBJ_TENDON


def _equality_objects(body1, body2, site1, site2, name):
    """(obj1, obj2, objtype) of a connect or weld given by bodies or by two sites."""
    where = f"equality '{name}'" if name else "equality"
    if site1 is None and site2 is None:
        if body1 is None:
            raise ModelError("give body1 (and optionally body2), or site1 and site2", element=where, attribute="body1")
        return body1, body2, M.OBJ_BODY
    if site1 is None or site2 is None:
        raise ModelError("site semantics need both site1 and site2", element=where,
                         attribute="site2" if site2 is None else "site1")
    if body1 is not None or body2 is not None:
        raise ModelError("give bodies or sites, not both", element=where, attribute="body1")
    return site1, site2, M.OBJ_SITE


@dataclass
class D6Axis:
    """One axis of a D6 joint.

    Args:
        axis: unit direction in the child body frame.
        mode: "free", "limited" or "locked" (a locked axis adds no dof).
        lower, upper: limits [m or rad] when mode is "limited".
    """

    axis: Sequence[float]
    mode: str = "free"
    lower: float = 0.0
    upper: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    armature: float = 0.0
    friction: float = 0.0
    # the limit model of a "limited" axis (None: MuJoCo's soft limit) and a PD drive
    limit: Optional["JointLimit"] = None
    drive_stiffness: float = 0.0
    drive_damping: float = 0.0
    drive_force_limit: float = float("inf")
    drive_acceleration: bool = False


@dataclass
class JointLimit:
    """How a limited joint keeps to its range, beyond MuJoCo's soft limit (physics/smooth/limits.py).

    Args:
        model: "soft" (MuJoCo's solref/solimp constraint), "cubic" (the normalized cubic
            penalty, hinge and slide), "hard" (PhysX's hard limit) or "spring" (PhysX's
            soft limit: a spring-damper beyond the bound).
        strength: cubic: s in E = s (gap / (upper - lower))^3 [J].
        stiffness, damping: spring: force per unit of penetration and of its rate.
        distance: hard, spring: contact distance, how far from a bound the limit starts
            acting [rad or m]; None: PhysX's default min(0.1, 0.49 * range width).
        restitution: hard: rebound speed / approach speed.
        bounce_threshold: hard: slower approaches stop without rebound [rad/s or m/s].
        acceleration: spring: gains per unit of the dof's inverse inertia (PhysX's
            eACCELERATION), so the motion is the same whatever the inertia.
        cone: ball, hard or spring: swing limits (about the body's y, about z) [rad];
            the cone is elliptical when they differ.
        twist: ball, hard or spring: (lower, upper) rotation about the body's x [rad].
    """

    model: str = "soft"
    strength: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    distance: Optional[float] = None
    restitution: float = 0.0
    bounce_threshold: float = 0.0
    acceleration: bool = False
    cone: Optional[Sequence[float]] = None
    twist: Optional[Sequence[float]] = None


def _check_spatial_path(kinds, where) -> None:
    """MuJoCo's rules for a spatial path: two entries or more, a site beside every geom
    and a non-pulley beside every site, no pulley last or after another pulley."""
    if len(kinds) < 2:
        raise ModelError("a spatial tendon's path needs at least two entries", element=where)
    for k, kind in enumerate(kinds):
        before = kinds[k - 1] if k > 0 else None
        after = kinds[k + 1] if k + 1 < len(kinds) else None
        if kind == "pulley" and (after is None or before == "pulley"):
            raise ModelError(f"pulley at path entry {k} must be followed by a branch", element=where)
        if kind == "site" and before in (None, "pulley") and after in (None, "pulley"):
            raise ModelError(f"site at path entry {k} needs a neighbour that is not a pulley", element=where)
        if kind == "geom" and (before != "site" or after != "site"):
            raise ModelError(f"geom at path entry {k} must sit between two sites", element=where)


def _vec(value, n, what) -> np.ndarray:
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != n or not np.all(np.isfinite(arr)):
        raise ModelError(f"expected {n} finite numbers, got {value!r}", element=what)
    return arr


class ModelBuilder:
    """Programmatic construction of a Model (see module docstring)."""

    def __init__(self, name: str = "model"):
        self.name = name
        self.opt = M.Option()
        self.visual: dict = {}
        self._bodies: list[_Body] = [
            _Body(-1, np.zeros(3), np.array([1.0, 0, 0, 0]), "world", 0.0, np.zeros(3), np.zeros(3), None)
        ]
        self._joints: list[_Joint] = []
        self._geoms: list[_Geom] = []
        self._hfields: list[_HField] = []
        self._meshes: list[Mesh] = []
        self._sites: list[tuple] = []
        self._sensors: list = []  # compiler.sensors.SensorSpec, resolved when the model compiles
        self._actuators: list[_Actuator] = []
        self._tendons: list[_Tendon] = []
        self._keys: list[tuple] = []
        self._equalities: list[_Equality] = []
        self._pairs: list[tuple] = []
        self._excludes: list[tuple] = []
        self._joint_limits: dict[int, JointLimit] = {}  # by joint id, where not MuJoCo's soft limit
        self._drives: dict[int, tuple] = {}  # joint id -> (stiffness, damping, force limit, acceleration)
        self._fixed_bodies: set[int] = set()

    # --- bodies -------------------------------------------------------------------
    def add_body(
        self,
        parent: int = 0,
        *,
        pos=(0.0, 0.0, 0.0),
        quat=(1.0, 0.0, 0.0, 0.0),
        name: str = "",
        mass: Optional[float] = None,
        com=None,
        inertia=None,
        inertia_quat=None,
        mocap: bool = False,
        gravcomp: float = 0.0,
    ) -> int:
        """Add a body whose frame is ``pos``/``quat`` in its parent's frame.

        Mass properties: give ``mass`` with ``inertia`` (principal moments (3,) in the
        frame ``inertia_quat``, or a full (3, 3) tensor in the body frame) about ``com``;
        or leave them None to derive them from the body's shapes at finalize().

        ``mocap``: a mocap body (MuJoCo's), a child of the world without joints whose pose
        each env sets (World.set_mocap); ``pos``/``quat`` are its pose at reset.

        ``gravcomp``: an upward force of that fraction of the body's weight at its centre of
        mass (MuJoCo's gravity compensation: 1 floats it, 0 none), a passive force unless
        its joints route it through the actuators (``add_joint(actuatorgravcomp=True)``).
        """
        where = f"body '{name}'" if name else f"body {len(self._bodies)}"
        if not 0 <= parent < len(self._bodies):
            raise ModelError(f"parent {parent} does not exist", element=where, attribute="parent")
        if name and name in (b.name for b in self._bodies):
            raise ModelError("duplicate body name", element=where, attribute="name")
        if mass is not None:
            if not np.isfinite(mass) or mass < 0:
                raise ModelError(f"mass must be >= 0, got {mass}", element=where, attribute="mass")
            inertia = np.zeros(3) if inertia is None else np.asarray(inertia, dtype=float)
            if inertia.shape not in ((3,), (3, 3)):
                raise ModelError("inertia must be 3 moments or a 3x3 tensor", element=where, attribute="inertia")
            com = np.zeros(3) if com is None else _vec(com, 3, where)
        if not np.isfinite(gravcomp):
            raise ModelError(f"gravcomp must be a finite number, got {gravcomp}", element=where, attribute="gravcomp")
        if mocap and parent != 0:  # MuJoCo's rule: its pose is given in the world frame
            raise ModelError("a mocap body must be a child of the world body", element=where, attribute="mocap")
        self._bodies.append(
            _Body(
                parent,
                _vec(pos, 3, where),
                quat_normalize(_vec(quat, 4, where)),
                name,
                None if mass is None else float(mass),
                com,
                inertia,
                None if inertia_quat is None else quat_normalize(_vec(inertia_quat, 4, where)),
                bool(mocap),
                float(gravcomp),
            )
        )
        return len(self._bodies) - 1

    def body_id(self, body) -> int:
        if isinstance(body, str):
            for i, b in enumerate(self._bodies):
                if b.name == body:
                    return i
            raise ModelError("no such body", element=f"body '{body}'")
        if not 0 <= int(body) < len(self._bodies):
            raise ModelError(f"body {body} does not exist", element="body")
        return int(body)

    # --- joints -------------------------------------------------------------------
    def add_joint(
        self,
        body,
        type: str = "hinge",
        *,
        axis=(0.0, 0.0, 1.0),
        pos=(0.0, 0.0, 0.0),
        name: str = "",
        limited: Optional[bool] = None,
        range=None,
        ref: float = 0.0,
        springref: float = 0.0,
        stiffness: float = 0.0,
        damping: float = 0.0,
        armature: float = 0.0,
        frictionloss: float = 0.0,
        margin: float = 0.0,
        solref=_DEFAULT_SOLREF,
        solimp=_DEFAULT_SOLIMP,
        solreffriction=_DEFAULT_SOLREF,
        solimpfriction=_DEFAULT_SOLIMP,
        limit: Optional[JointLimit] = None,
        springdamper=None,
        actuatorfrcrange=None,
        actuatorfrclimited: Optional[bool] = None,
        actuatorgravcomp: bool = False,
    ) -> int:
        """Add a MuJoCo joint (hinge, slide, ball, free) between ``body`` and its parent.

        ``axis`` and ``pos`` (the anchor) are in the body frame; ``range`` is
        (lower, upper) [rad or m] and enables the limit unless ``limited`` is False.
        ``springdamper`` (timeconst [s], dampratio) sets stiffness and damping from the
        joint's inertia at qpos0 as MuJoCo's does, in place of those given.
        ``actuatorfrcrange`` (lower, upper) [N m or N] clamps the sum of the actuators'
        forces on the joint (its first dof, as MuJoCo's), unless ``actuatorfrclimited``
        is False. ``actuatorgravcomp``: the bodies' gravity compensation on its dofs is an
        actuator force (within that clamp), not a passive one.
        """
        b = self.body_id(body)
        where = f"joint '{name}'" if name else f"joint {len(self._joints)}"
        if type not in _JOINT_TYPES:
            raise ModelError(f"unknown joint type {type!r}; expected one of {sorted(_JOINT_TYPES)}", element=where, attribute="type")
        if b == 0:
            raise ModelError("the world body cannot have joints", element=where)
        if b in self._fixed_bodies:
            raise ModelError("body is attached with a fixed joint", element=where)
        if self._bodies[b].mocap:  # its pose is set, not simulated (MuJoCo refuses it too)
            raise ModelError(f"mocap body '{self._bodies[b].name}' cannot have joints: a mocap body is a fixed child "
                             "of the world", element=where)
        if name and name in (j.name for j in self._joints):
            raise ModelError("duplicate joint name", element=where, attribute="name")
        jtype = _JOINT_TYPES[type]
        axis = _vec(axis, 3, where)
        if jtype in (M.JNT_BALL, M.JNT_FREE):
            axis = np.array([0.0, 0.0, 1.0])
        elif abs(np.linalg.norm(axis) - 1.0) > 1e-6:
            raise ModelError(f"axis must be a unit vector, got {axis.tolist()} (norm {np.linalg.norm(axis):.6g})", element=where, attribute="axis")
        if (jtype == M.JNT_FREE and any(j.body == b for j in self._joints)) or any(
            j.body == b and j.type == M.JNT_FREE for j in self._joints
        ):
            raise ModelError("a free joint must be the only joint of its body", element=where, attribute="type")
        rng = np.zeros(2) if range is None else _vec(range, 2, where)
        limited = (range is not None) if limited is None else bool(limited)
        if limited and jtype == M.JNT_FREE:
            raise ModelError("free joints cannot be limited", element=where, attribute="limited")
        if limited and rng[0] > rng[1] and jtype != M.JNT_BALL:
            raise ModelError(f"lower limit {rng[0]} > upper limit {rng[1]}", element=where, attribute="range")
        for attr, value in (("stiffness", stiffness), ("damping", damping), ("armature", armature), ("frictionloss", frictionloss)):
            if not np.isfinite(value) or value < 0:
                raise ModelError(f"{attr} must be >= 0, got {value}", element=where, attribute=attr)
        springdamper = (0.0, 0.0) if springdamper is None else tuple(float(v) for v in _vec(springdamper, 2, where))
        if any(springdamper) and min(springdamper) <= 0:
            raise ModelError(f"springdamper values must both be > 0, got {list(springdamper)}", element=where,
                             attribute="springdamper")
        actfrcrange = (0.0, 0.0) if actuatorfrcrange is None else tuple(map(float, _vec(actuatorfrcrange, 2, where)))
        actfrclimited = (actuatorfrcrange is not None) if actuatorfrclimited is None else bool(actuatorfrclimited)
        if actfrclimited and actfrcrange[0] > actfrcrange[1]:
            raise ModelError(f"actuatorfrcrange lower {actfrcrange[0]} > upper {actfrcrange[1]}", element=where,
                             attribute="actuatorfrcrange")
        self._joints.append(
            _Joint(
                b, jtype, axis, _vec(pos, 3, where), name, limited, rng, float(ref), float(springref),
                float(stiffness), float(damping), float(armature), float(frictionloss), float(margin),
                _vec(solref, 2, where), _vec(solimp, 5, where), _vec(solreffriction, 2, where),
                _vec(solimpfriction, 5, where), springdamper, actfrclimited, actfrcrange, bool(actuatorgravcomp),
            )
        )
        if limit is not None:
            self.set_joint_limit(len(self._joints) - 1, limit)
        return len(self._joints) - 1

    def add_joint_revolute(self, body, *, axis=(0.0, 0.0, 1.0), anchor=(0.0, 0.0, 0.0), limit_lower=None,
                           limit_upper=None, name="", **kwargs) -> int:
        """Revolute (hinge) joint about ``axis`` through ``anchor`` (child body frame)."""
        return self.add_joint(body, "hinge", axis=axis, pos=anchor, name=name,
                              range=_range(limit_lower, limit_upper), **kwargs)

    def add_joint_prismatic(self, body, *, axis=(1.0, 0.0, 0.0), anchor=(0.0, 0.0, 0.0), limit_lower=None,
                            limit_upper=None, name="", **kwargs) -> int:
        """Prismatic (slide) joint along ``axis`` (child body frame)."""
        return self.add_joint(body, "slide", axis=axis, pos=anchor, name=name,
                              range=_range(limit_lower, limit_upper), **kwargs)

    def add_joint_ball(self, body, *, anchor=(0.0, 0.0, 0.0), name="", **kwargs) -> int:
        """Ball joint: free rotation about ``anchor``; qpos is a quaternion."""
        return self.add_joint(body, "ball", pos=anchor, name=name, **kwargs)

    def add_joint_free(self, body, *, name="", **kwargs) -> int:
        """Free joint: qpos = world position (3) and orientation (4)."""
        b = self.body_id(body)
        if self._bodies[b].parent != 0:
            raise ModelError("a free joint is allowed only on a child of the world", element=f"joint '{name}'",
                             attribute="type")
        return self.add_joint(b, "free", name=name, **kwargs)

    def add_joint_fixed(self, body, *, name="") -> None:
        """Weld ``body`` to its parent: it gets no degrees of freedom."""
        b = self.body_id(body)
        if any(j.body == b for j in self._joints):
            raise ModelError("body already has joints; a fixed joint must be its only joint", element=f"joint '{name}'")
        self._fixed_bodies.add(b)

    def add_joint_d6(self, body, *, linear_axes: Sequence[D6Axis] = (), angular_axes: Sequence[D6Axis] = (),
                     anchor=(0.0, 0.0, 0.0), name="") -> list[int]:
        """D6 joint: up to 3 linear then up to 3 angular axes, each free, limited or locked.

        Compiles to slide joints followed by hinge joints on ``body``; locked axes add
        nothing. Returns the ids of the joints made (named ``name_lin0``, ``name_ang1``...).
        """
        if len(linear_axes) > 3 or len(angular_axes) > 3:
            raise ModelError("a D6 joint has at most 3 linear and 3 angular axes", element=f"joint '{name}'")
        ids = []
        for kind, axes in (("lin", linear_axes), ("ang", angular_axes)):
            for k, ax in enumerate(axes):
                if ax.mode not in ("free", "limited", "locked"):
                    raise ModelError(f"axis mode must be free, limited or locked, got {ax.mode!r}", element=f"joint '{name}'", attribute="mode")
                if ax.mode == "locked":
                    continue
                limited = ax.mode == "limited"
                ids.append(self.add_joint(
                    body, "slide" if kind == "lin" else "hinge", axis=ax.axis, pos=anchor,
                    name=f"{name}_{kind}{k}" if name else "", limited=limited,
                    range=(ax.lower, ax.upper) if limited else None, stiffness=ax.stiffness,
                    damping=ax.damping, armature=ax.armature, frictionloss=ax.friction,
                    limit=ax.limit if limited else None,
                ))
                if ax.drive_stiffness or ax.drive_damping:
                    self.add_drive(ids[-1], stiffness=ax.drive_stiffness, damping=ax.drive_damping,
                                   force_limit=ax.drive_force_limit, acceleration=ax.drive_acceleration)
        return ids

    # --- limit models and drives ---------------------------------------------------------
    def set_joint_limit(self, joint, limit: JointLimit, *, range=None) -> None:
        """Give a joint (id or name) a limit model (see :class:`JointLimit`); with
        ``range`` (lower, upper) [rad or m, in qpos] also set its bounds. The joint
        becomes limited. Hinge and slide bounds come from the joint's range; ball joints
        take ``limit.cone`` and ``limit.twist``."""
        j = self._joint_index(joint)
        jt = self._joints[j]
        where = f"joint '{jt.name}'" if jt.name else f"joint {j}"
        if not isinstance(limit, JointLimit):
            raise ModelError(f"limit must be a JointLimit, got {type(limit).__name__}", element=where, attribute="limit")
        if limit.model not in M.LIMIT_MODELS:
            raise ModelError(f"limit model must be one of {sorted(M.LIMIT_MODELS)}, got {limit.model!r}",
                             element=where, attribute="limit")
        ball = jt.type == M.JNT_BALL
        if jt.type == M.JNT_FREE or (ball and limit.model == "cubic"):
            raise ModelError(f"{limit.model} limits are for hinge and slide{' and ball' * (limit.model != 'cubic')} "
                             "joints", element=where, attribute="limit")
        for attr in ("strength", "stiffness", "damping", "restitution", "bounce_threshold"):
            value = getattr(limit, attr)
            if not np.isfinite(value) or value < 0:
                raise ModelError(f"limit {attr} must be >= 0, got {value}", element=where, attribute=attr)
        if limit.distance is not None and not limit.distance >= 0:
            raise ModelError(f"limit distance must be >= 0, got {limit.distance}", element=where, attribute="distance")
        if limit.model == "spring" and limit.stiffness == 0 and limit.damping == 0:
            raise ModelError("a spring limit needs stiffness or damping", element=where, attribute="stiffness")
        if range is not None:
            rng = _vec(range, 2, where)
            if rng[0] > rng[1]:
                raise ModelError(f"lower limit {rng[0]} > upper limit {rng[1]}", element=where, attribute="range")
            jt.range = rng
        elif not jt.limited and (not ball or limit.model == "soft"):
            raise ModelError(f"a {limit.model} limit needs a range", element=where, attribute="range")
        if ball and limit.model in ("hard", "spring"):
            if limit.cone is None and limit.twist is None:
                raise ModelError("a ball joint's hard or spring limit needs a cone or a twist range", element=where,
                                 attribute="cone")
            cone = np.full(2, np.inf) if limit.cone is None else _vec(limit.cone, 2, where)
            if np.any(cone <= 0) or np.any(cone > np.pi):
                raise ModelError(f"cone angles must be in (0, pi], got {cone.tolist()}", element=where, attribute="cone")
            twist = np.array([-np.inf, np.inf]) if limit.twist is None else _vec(limit.twist, 2, where)
            if twist[0] > twist[1] or twist[0] < -np.pi or twist[1] > np.pi:
                raise ModelError(f"twist range must be within [-pi, pi], lower <= upper, got {twist.tolist()}",
                                 element=where, attribute="twist")
            jt.range = np.array([0.0, float(np.min(np.where(np.isfinite(cone), cone, np.pi)))])
        jt.limited = True
        self._joint_limits[j] = limit

    def add_drive(self, joint, *, stiffness: float = 0.0, damping: float = 0.0, force_limit: float = float("inf"),
                  acceleration: bool = False) -> None:
        """A PD drive on a hinge or slide joint (id or name): force = stiffness (q* - q)
        + damping (qd* - qd), clamped to +-force_limit, toward the targets q*, qd* of
        ``World.set_drive_target`` (default 0). ``acceleration`` scales both gains by the
        dof's inertia (1 / dof_invweight0). The drive is integrated implicitly by the
        Euler and implicitspringdamper integrators (physics/smooth/drives.py)."""
        j = self._joint_index(joint)
        jt = self._joints[j]
        where = f"joint '{jt.name}'" if jt.name else f"joint {j}"
        if jt.type not in (M.JNT_HINGE, M.JNT_SLIDE):
            raise ModelError("drives act on hinge and slide joints", element=where, attribute="drive")
        for attr, value in (("stiffness", stiffness), ("damping", damping)):
            if not np.isfinite(value) or value < 0:
                raise ModelError(f"drive {attr} must be >= 0, got {value}", element=where, attribute=attr)
        if not force_limit > 0:
            raise ModelError(f"drive force_limit must be > 0, got {force_limit}", element=where, attribute="force_limit")
        self._drives[j] = (float(stiffness), float(damping), float(force_limit), bool(acceleration))

    def _joint_index(self, joint) -> int:
        """A joint's id (order of addition) from its id or name."""
        if isinstance(joint, str):
            for i, jt in enumerate(self._joints):
                if jt.name == joint:
                    return i
            raise ModelError("no such joint", element=f"joint '{joint}'")
        if not 0 <= int(joint) < len(self._joints):
            raise ModelError(f"joint {joint} does not exist", element="joint")
        return int(joint)

    # --- shapes -------------------------------------------------------------------
    def add_geom(
        self,
        body,
        type: str = "sphere",
        *,
        size=(0.0, 0.0, 0.0),
        pos=(0.0, 0.0, 0.0),
        quat=(1.0, 0.0, 0.0, 0.0),
        name: str = "",
        mass: Optional[float] = None,
        density: float = 1000.0,
        contype: int = 1,
        conaffinity: int = 1,
        condim: int = 3,
        friction=(1.0, 0.005, 0.0001),
        margin: float = 0.0,
        gap: float = 0.0,
        solref=_DEFAULT_SOLREF,
        solimp=_DEFAULT_SOLIMP,
        priority: int = 0,
        solmix: float = 1.0,
        rgba=(0.5, 0.5, 0.5, 1.0),
        hfield=None,
        mesh=None,
        fitscale: float = 1.0,
    ) -> int:
        """Add a collision/visual shape with MuJoCo's geom parameters (sizes as MuJoCo's).
        An ``hfield`` geom names its height field (name or id from :meth:`add_hfield`);
        its size comes from the height field, as MuJoCo's. A ``mesh`` geom names its mesh
        (:meth:`add_mesh`); ``pos``/``quat`` are those of the mesh's file frame, and the
        mesh's own frame (centre of mass, principal axes) is folded into them, as MuJoCo
        does. A primitive type with ``mesh`` is fitted to the mesh's equivalent-inertia
        box (times ``fitscale``). ``priority`` and ``solmix`` choose or weigh this geom's
        contact parameters against the other geom's, as MuJoCo's (mj_contactParam)."""
        b = self.body_id(body)
        where = f"geom '{name}'" if name else f"geom {len(self._geoms)}"
        if type not in _GEOM_TYPES:
            raise ModelError(f"unknown geom type {type!r}; expected one of {sorted(_GEOM_TYPES)}", element=where, attribute="type")
        dataid = -1
        if mesh is not None:
            pos, quat, size, dataid = self._mesh_geom(type, mesh, pos, quat, fitscale, where)
        elif type == "mesh":
            raise ModelError("a mesh geom needs a mesh", element=where, attribute="mesh")
        if (type == "hfield") != (hfield is not None):
            raise ModelError("an hfield geom, and only an hfield geom, names a height field", element=where,
                             attribute="hfield")
        if hfield is not None:
            dataid = self._hfield_index(hfield, where)
            hs = self._hfields[dataid].size
            size = (hs[0], hs[1], 0.25 * hs[2] + 0.5 * hs[3])  # MuJoCo's geom_size of an hfield
        size = np.asarray(size, dtype=float).reshape(-1)
        size = np.concatenate([size, np.zeros(3 - size.size)]) if size.size < 3 else size[:3]
        gtype = _GEOM_TYPES[type]
        needed = {M.GEOM_SPHERE: 1, M.GEOM_CAPSULE: 2, M.GEOM_CYLINDER: 2, M.GEOM_ELLIPSOID: 3, M.GEOM_BOX: 3}.get(gtype, 0)
        if needed and (np.any(size[:needed] <= 0) or not np.all(np.isfinite(size))):
            raise ModelError(f"{type} needs {needed} positive size values, got {size[:needed].tolist()}", element=where, attribute="size")
        if mass is not None and mass < 0:
            raise ModelError(f"mass must be >= 0, got {mass}", element=where, attribute="mass")
        if condim not in (1, 3, 4, 6):
            raise ModelError(f"condim must be 1, 3, 4 or 6, got {condim}", element=where, attribute="condim")
        self._geoms.append(_Geom(
            b, gtype, size, _vec(pos, 3, where), quat_normalize(_vec(quat, 4, where)), name,
            None if mass is None else float(mass), float(density), int32(contype, where, "contype"),
            int32(conaffinity, where, "conaffinity"),
            int(condim), _vec(friction, 3, where), float(margin), float(gap),
            _vec(solref, 2, where), _vec(solimp, 5, where), _vec(rgba, 4, where), dataid,
            int32(priority, where, "priority"), float(_vec(solmix, 1, where)[0]),
        ))
        return len(self._geoms) - 1

    def add_hfield(self, name: str, elevation, size) -> int:
        """A height field asset: ``elevation`` (nrow, ncol), row 0 at -y and column 0 at -x
        (mjModel's order), is normalized to [0, 1] as MuJoCo does; ``size`` = (radius_x,
        radius_y, elevation_z, base_z) [m], all positive. Returns its id."""
        where = f"hfield '{name}'" if name else f"hfield {len(self._hfields)}"
        if name and name in (h.name for h in self._hfields):
            raise ModelError("duplicate hfield name", element=where, attribute="name")
        hsize = np.asarray(size, dtype=float).reshape(-1)
        if hsize.size != 4 or not np.all(np.isfinite(hsize)) or np.any(hsize <= 0):
            raise ModelError(f"size takes 4 positive numbers (radius_x radius_y elevation_z base_z), got {size!r}",
                             element=where, attribute="size")
        data = np.asarray(elevation, dtype=np.float32)
        if data.ndim != 2 or data.shape[0] < 2 or data.shape[1] < 2:
            raise ModelError(f"elevation must be a 2D array of at least 2x2 samples, got shape {data.shape}",
                             element=where, attribute="elevation")
        if not np.all(np.isfinite(data)):
            raise ModelError("elevation has non-finite values", element=where, attribute="elevation")
        # MuJoCo normalizes in single precision: the same bits as its hfield_data
        data = data - data.min()
        span = data.max()
        if span > 1e-14:  # mjEPS
            data = data / span
        self._hfields.append(_HField(name, hsize, data.astype(np.float64)))
        return len(self._hfields) - 1

    def add_mesh(self, name: str, vertices, faces=None, *, scale=(1.0, 1.0, 1.0), refpos=(0.0, 0.0, 0.0),
                 refquat=(1.0, 0.0, 0.0, 0.0), inertia: str = "legacy", maxhullvert: int = -1) -> int:
        """A mesh asset from vertices (n, 3) and triangles (m, 3), or its convex hull's
        triangles when ``faces`` is None, compiled as MuJoCo compiles it
        (physics/compiler/mesh.py): ``inertia`` is MuJoCo's mode (convex, exact, legacy,
        shell), ``maxhullvert`` caps the hull's vertices (-1: no cap). Returns its id."""
        where = f"mesh '{name}'" if name else f"mesh {len(self._meshes)}"
        if name and name in (m.name for m in self._meshes):
            raise ModelError("duplicate mesh name", element=where, attribute="name")
        self._meshes.append(compile_mesh(name, vertices, faces, scale=scale, refpos=refpos, refquat=refquat,
                                         inertia=inertia, maxhullvert=maxhullvert))
        return len(self._meshes) - 1

    def _mesh_geom(self, type, mesh, pos, quat, fitscale, where):
        """(pos, quat, size, dataid) of a geom on a mesh: a mesh geom's size is the
        largest extent of the mesh's box along each axis of its frame (MuJoCo's)."""
        if type not in ("mesh", "sphere", "capsule", "cylinder", "ellipsoid", "box"):
            raise ModelError(f"a {type} geom cannot take a mesh", element=where, attribute="mesh")
        mid = self._mesh_index(mesh, where)
        m = self._meshes[mid]
        quat = quat_normalize(_vec(quat, 4, where))
        pos = _vec(pos, 3, where) + quat_rotate(quat, m.pos)
        quat = quat_normalize(quat_mul(quat, m.quat))
        if type == "mesh":
            return pos, quat, np.maximum(np.abs(m.aamm[:3]), np.abs(m.aamm[3:])), mid
        return pos, quat, float(fitscale) * fitted_size(_GEOM_TYPES[type], m), -1

    def _mesh_index(self, mesh, where) -> int:
        if isinstance(mesh, str):
            names = [m.name for m in self._meshes]
            if mesh not in names:
                raise ModelError(f"no mesh named {mesh!r}", element=where, attribute="mesh")
            return names.index(mesh)
        if not 0 <= int(mesh) < len(self._meshes):
            raise ModelError(f"mesh {mesh} does not exist", element=where, attribute="mesh")
        return int(mesh)

    def _hfield_index(self, hfield, where) -> int:
        if isinstance(hfield, str):
            names = [h.name for h in self._hfields]
            if hfield not in names:
                raise ModelError(f"no hfield named {hfield!r}; known: {[n for n in names if n]}", element=where,
                                 attribute="hfield")
            return names.index(hfield)
        if not 0 <= int(hfield) < len(self._hfields):
            raise ModelError(f"hfield {hfield} does not exist", element=where, attribute="hfield")
        return int(hfield)

    def add_shape_sphere(self, body, *, radius, **kw) -> int:
        return self.add_geom(body, "sphere", size=(radius, 0, 0), **kw)

    def add_shape_capsule(self, body, *, radius, half_height, **kw) -> int:
        """Capsule along the shape's z axis."""
        return self.add_geom(body, "capsule", size=(radius, half_height, 0), **kw)

    def add_shape_cylinder(self, body, *, radius, half_height, **kw) -> int:
        return self.add_geom(body, "cylinder", size=(radius, half_height, 0), **kw)

    def add_shape_box(self, body, *, hx, hy, hz, **kw) -> int:
        return self.add_geom(body, "box", size=(hx, hy, hz), **kw)

    def add_shape_ellipsoid(self, body, *, rx, ry, rz, **kw) -> int:
        return self.add_geom(body, "ellipsoid", size=(rx, ry, rz), **kw)

    def add_shape_plane(self, body=0, *, half_width=0.0, half_length=0.0, **kw) -> int:
        return self.add_geom(body, "plane", size=(half_width, half_length, 1.0), **kw)

    def add_shape_hfield(self, body=0, *, hfield, **kw) -> int:
        """A height field (name or id from :meth:`add_hfield`) in the shape's frame: its
        grid spans x, y in [-radius, radius], its surface rises along z."""
        return self.add_geom(body, "hfield", hfield=hfield, **kw)

    def add_site(self, body, *, pos=(0.0, 0.0, 0.0), quat=(1.0, 0.0, 0.0, 0.0), size=(0.01, 0, 0), name="",
                 type="sphere") -> int:
        """A site: a frame on ``body`` that sensors and equality constraints name; ``type``
        (sphere, capsule, ellipsoid, cylinder, box) and ``size`` shape a touch sensor's zone."""
        b = self.body_id(body)
        if type not in _SITE_TYPES:
            raise ModelError(f"site type must be one of {list(_SITE_TYPES)}, got {type!r}", element=f"site {name!r}",
                             attribute="type")
        size = np.asarray(size, dtype=float).reshape(-1)
        size = np.concatenate([size, np.zeros(3 - size.size)]) if size.size < 3 else size[:3]
        self._sites.append((b, _vec(pos, 3, "site"), quat_normalize(_vec(quat, 4, "site")), size, name,
                            _SITE_TYPES[type]))
        return len(self._sites) - 1

    def add_sensor(self, kind: str, obj: str = "", *, objtype: str | None = None, ref: str = "",
                   reftype: str | None = None, name: str = "", cutoff: float = 0.0, noise: float = 0.0) -> int:
        """A sensor as MuJoCo's (``kind`` its MJCF element: jointpos, framequat, touch...,
        compiler.sensors.KINDS), reading the object named ``obj``: a site, joint,
        actuator, tendon or body as the kind takes, or for the frame sensors an object of
        ``objtype`` (body, xbody, geom, site), optionally relative to ``ref`` of ``reftype``.
        ``cutoff`` > 0 clips real values to [-cutoff, cutoff] (positive ones to cutoff)."""
        where = sensor_where(kind, name, len(self._sensors))
        if kind not in KINDS:
            raise ModelError(f"unknown sensor kind; known: {sorted(KINDS)}", element=where)
        spec_kind = KINDS[kind]
        if spec_kind.attribute == "objname":
            if objtype not in FRAME_OBJECTS or objtype == "camera":
                raise ModelError(f"objtype must be one of body, xbody, geom, site, got {objtype!r}", element=where,
                                 attribute="objtype")
            otype = FRAME_OBJECTS[objtype]
        else:
            otype = spec_kind.objtype
        rtype = OBJ_UNKNOWN
        if ref or reftype:
            if reftype not in FRAME_OBJECTS or reftype == "camera" or not ref:
                raise ModelError(f"a reference frame needs refname and a reftype of body, xbody, geom or site, "
                                 f"got {reftype!r}", element=where, attribute="reftype")
            rtype = FRAME_OBJECTS[reftype]
        if cutoff < 0 or noise < 0:
            raise ModelError("cutoff and noise must be >= 0", element=where, attribute="cutoff" if cutoff < 0 else "noise")
        self._sensors.append(SensorSpec(kind, name, otype, obj, rtype, ref, float(cutoff), float(noise)))
        return len(self._sensors) - 1

    def add_contact_sensor(self, *, name: str = "", data: str = "found", reduce: str = "none", num: int = 1,
                           cutoff: float = 0.0, noise: float = 0.0, **objects) -> int:
        """MuJoCo's contact sensor: ``num`` slots of the ``data`` fields (found force torque
        dist pos normal tangent linvel angvel, in that order) of the contacts that match
        its objects, given as MJCF's attributes (at most one of geom1, body1, subtree1 and
        site; at most one of geom2, body2, subtree2; none: every contact), ordered by
        ``reduce`` (none, mindist, maxforce) or summed (netforce)."""
        where = sensor_where("contact", name, len(self._sensors))
        unknown = set(objects) - set(CONTACT_FIRST) - set(CONTACT_SECOND)
        if unknown:
            raise ModelError(f"unknown object attribute {sorted(unknown)[0]!r}", element=where)
        chosen = []
        for group in (CONTACT_FIRST, CONTACT_SECOND):
            given = [k for k in group if objects.get(k)]
            if len(given) > 1:
                raise ModelError(f"at most one of {list(group)} may be given, got {given}", element=where,
                                 attribute=given[1])
            chosen.append((group[given[0]], objects[given[0]]) if given else (OBJ_UNKNOWN, ""))
        intprm = contact_sensor(data, reduce, num, where)
        (otype, obj), (rtype, ref) = chosen
        self._sensors.append(SensorSpec("contact", name, otype, obj, rtype, ref, float(cutoff), float(noise), intprm))
        return len(self._sensors) - 1

    # --- tendons and actuators ----------------------------------------------------------
    def add_tendon_fixed(self, terms, *, name="", limited=None, range=None, stiffness=0.0, damping=0.0,
                         frictionloss=0.0, lengthspring=None, margin=0.0, solref=_DEFAULT_SOLREF,
                         solimp=_DEFAULT_SOLIMP, solreffriction=_DEFAULT_SOLREF,
                         solimpfriction=_DEFAULT_SOLIMP) -> int:
        """Fixed tendon: length = sum(coef * qpos[joint]) over ``terms`` [(joint, coef)].
        A limited tendon keeps its length in ``range`` with a soft constraint (``solref``,
        ``solimp``, active within ``margin``), as a limited joint."""
        where = f"tendon '{name}'" if name else f"tendon {len(self._tendons)}"
        if not terms:
            raise ModelError("a fixed tendon needs at least one joint", element=where)
        return self._add_tendon([(t, float(c)) for t, c in terms], False, where, name, limited, range, stiffness,
                                damping, frictionloss, lengthspring, margin, solref, solimp, solreffriction,
                                solimpfriction)

    def add_tendon_spatial(self, path, *, name="", limited=None, range=None, stiffness=0.0, damping=0.0,
                           frictionloss=0.0, lengthspring=None, margin=0.0, solref=_DEFAULT_SOLREF,
                           solimp=_DEFAULT_SOLIMP, solreffriction=_DEFAULT_SOLREF,
                           solimpfriction=_DEFAULT_SOLIMP) -> int:
        """Spatial tendon along ``path``, MuJoCo's <spatial>: ("site", site) points it passes
        through, ("geom", geom) or ("geom", geom, sidesite) a sphere or cylinder it wraps
        around when the straight line would cross it (between two sites; the side site picks
        the side), ("pulley", divisor) dividing the lengths of the branch that follows.
        Sites and geoms by name or id; the other arguments as add_tendon_fixed's."""
        where = f"tendon '{name}'" if name else f"tendon {len(self._tendons)}"
        entries = []
        for k, entry in enumerate(path):
            entry = tuple(entry)
            kind = entry[0] if entry else None
            if kind == "site" and len(entry) == 2:
                entries.append(entry)
            elif kind == "geom" and len(entry) in (2, 3):
                entries.append((kind, entry[1], entry[2] if len(entry) == 3 else None))
            elif kind == "pulley" and len(entry) == 2:
                if float(entry[1]) <= 0:
                    raise ModelError(f"pulley {k} needs a positive divisor, got {entry[1]}", element=where,
                                     attribute="divisor")
                entries.append((kind, float(entry[1])))
            else:
                raise ModelError(f"path entry {k} {entry!r} is not ('site', s), ('geom', g[, sidesite]) or "
                                 "('pulley', divisor)", element=where)
        _check_spatial_path([e[0] for e in entries], where)
        return self._add_tendon(entries, True, where, name, limited, range, stiffness, damping, frictionloss,
                                lengthspring, margin, solref, solimp, solreffriction, solimpfriction)

    def _add_tendon(self, terms, spatial, where, name, limited, range, stiffness, damping, frictionloss,
                    lengthspring, margin, solref, solimp, solreffriction, solimpfriction) -> int:
        rng = np.zeros(2) if range is None else _vec(range, 2, where)
        limited = (range is not None) if limited is None else bool(limited)
        if limited and rng[0] > rng[1]:
            raise ModelError(f"lower limit {rng[0]} > upper limit {rng[1]}", element=where, attribute="range")
        ls = None
        if lengthspring is not None:
            ls = np.asarray(lengthspring, dtype=float).reshape(-1)
            ls = np.array([ls[0], ls[0]]) if ls.size == 1 else _vec(ls, 2, where)
        self._tendons.append(_Tendon(terms, name, limited, rng, float(stiffness),
                                     float(damping), float(frictionloss), ls, float(margin), _vec(solref, 2, where),
                                     _vec(solimp, 5, where), _vec(solreffriction, 2, where),
                                     _vec(solimpfriction, 5, where), spatial))
        return len(self._tendons) - 1

    def add_actuator(
        self,
        target,
        *,
        kind: str = "motor",
        name: str = "",
        transmission: str = "joint",
        gear=1.0,
        ctrllimited: Optional[bool] = None,
        ctrlrange=None,
        forcelimited: Optional[bool] = None,
        forcerange=None,
        kp: float = 1.0,
        kv: float = 0.0,
        dampratio: float = 0.0,
        gaintype: str = "fixed",
        gainprm=None,
        biastype: str = "none",
        biasprm=None,
        dyntype: str = "none",
        dynprm=None,
        actlimited: Optional[bool] = None,
        actrange=None,
        actearly: bool = False,
    ) -> int:
        """Add an actuator on a joint or tendon (``target``: name or id).

        ``kind`` is motor (force = ctrl), position (kp (ctrl - q) - kv qdot), velocity
        (kv (ctrl - qdot)) or general (gain * ctrl + bias with ``gainprm``/``biasprm``).
        A position servo's ``dampratio`` (instead of kv) sets kv to that fraction of critical
        damping for the inertia its transmission moves at qpos0, as MuJoCo's.
        Forces are scaled by ``gear`` and clamped to ``forcerange`` when limited.
        ``dyntype`` gives the actuator an activation, MuJoCo's ``act``, which its gain
        multiplies instead of ctrl: ``integrator`` (act' = ctrl), ``filter`` or
        ``filterexact`` (act' = (ctrl - act) / dynprm[0], the latter integrated exactly),
        clamped to ``actrange`` when ``actlimited``; with ``actearly`` the force uses the
        activation the step ends with.
        """
        where = f"actuator '{name}'" if name else f"actuator {len(self._actuators)}"
        gear = np.asarray(gear, dtype=float).reshape(-1)
        gear = np.concatenate([gear, np.zeros(6 - gear.size)]) if gear.size < 6 else gear[:6]
        gainprm_ = np.zeros(10)
        biasprm_ = np.zeros(10)
        if kind == "motor":
            gaintype_, biastype_ = M.GAIN_FIXED, M.BIAS_NONE
            gainprm_[0] = 1.0
        elif kind == "position":
            if kv and dampratio:
                raise ModelError("kv and dampratio cannot both be defined", element=where, attribute="dampratio")
            gaintype_, biastype_ = M.GAIN_FIXED, M.BIAS_AFFINE
            gainprm_[0] = kp
            # a positive biasprm[2] holds the damping ratio until the compiler resolves it
            biasprm_[:3] = (0.0, -kp, dampratio if dampratio else -kv)
        elif kind == "velocity":
            gaintype_, biastype_ = M.GAIN_FIXED, M.BIAS_AFFINE
            gainprm_[0] = kv
            biasprm_[:3] = (0.0, 0.0, -kv)
        elif kind == "general":
            types = {"fixed": M.GAIN_FIXED, "affine": M.GAIN_AFFINE}
            btypes = {"none": M.BIAS_NONE, "affine": M.BIAS_AFFINE}
            if gaintype not in types:
                raise ModelError(f"gaintype must be one of {sorted(types)}, got {gaintype!r}", element=where, attribute="gaintype")
            if biastype not in btypes:
                raise ModelError(f"biastype must be one of {sorted(btypes)}, got {biastype!r}", element=where, attribute="biastype")
            gaintype_, biastype_ = types[gaintype], btypes[biastype]
            gainprm_[0] = 1.0
            for dst, src in ((gainprm_, gainprm), (biasprm_, biasprm)):
                if src is not None:
                    src = np.asarray(src, dtype=float).reshape(-1)[:10]
                    dst[:] = 0.0
                    dst[: src.size] = src
        else:
            raise ModelError(f"kind must be motor, position, velocity or general, got {kind!r}", element=where, attribute="kind")
        if transmission not in ("joint", "tendon"):
            raise ModelError(f"transmission must be joint or tendon, got {transmission!r}", element=where, attribute="transmission")
        crange = np.zeros(2) if ctrlrange is None else _vec(ctrlrange, 2, where)
        frange = np.zeros(2) if forcerange is None else _vec(forcerange, 2, where)
        ctrllimited = (ctrlrange is not None) if ctrllimited is None else bool(ctrllimited)
        forcelimited = (forcerange is not None) if forcelimited is None else bool(forcelimited)
        if ctrllimited and crange[0] > crange[1]:
            raise ModelError(f"ctrlrange lower {crange[0]} > upper {crange[1]}", element=where, attribute="ctrlrange")
        if forcelimited and frange[0] > frange[1]:
            raise ModelError(f"forcerange lower {frange[0]} > upper {frange[1]}", element=where, attribute="forcerange")
        if dyntype not in M.DYNAMICS:
            raise ModelError(f"dyntype must be one of {list(M.DYNAMICS)}, got {dyntype!r}", element=where,
                             attribute="dyntype")
        dynprm_ = np.zeros(10)
        dynprm_[0] = 1.0  # MuJoCo's default time constant
        if dynprm is not None:
            src = np.asarray(dynprm, dtype=float).reshape(-1)[:10]
            dynprm_[:] = 0.0
            dynprm_[: src.size] = src
        arange = np.zeros(2) if actrange is None else _vec(actrange, 2, where)
        actlimited = (actrange is not None) if actlimited is None else bool(actlimited)
        if actlimited and arange[0] > arange[1]:
            raise ModelError(f"actrange lower {arange[0]} > upper {arange[1]}", element=where, attribute="actrange")
        self._actuators.append(_Actuator(
            target, M.TRN_JOINT if transmission == "joint" else M.TRN_TENDON, name, gear,
            gaintype_, gainprm_, biastype_, biasprm_, ctrllimited, crange, forcelimited, frange,
            M.DYNAMICS[dyntype], dynprm_, actlimited, arange, bool(actearly),
        ))
        return len(self._actuators) - 1

    # --- contact filtering ----------------------------------------------------------------
    def add_contact_pair(self, geom1, geom2, *, condim=None, friction=None, solref=None, solimp=None, margin=None,
                         gap=None, name="") -> int:
        """Geoms (names or ids) that always go to the narrow phase, with these contact
        parameters; a parameter left None is mixed from the two geoms as for any pair
        (MJCF's <pair> passes MuJoCo's pair defaults instead)."""
        where = f"pair '{name}'" if name else f"pair {len(self._pairs)}"
        if condim is not None and condim not in (1, 3, 4, 6):
            raise ModelError(f"condim must be 1, 3, 4 or 6, got {condim}", element=where, attribute="condim")
        values = dict(condim=condim, friction=None if friction is None else _vec(friction, 5, where),
                      solref=None if solref is None else _vec(solref, 2, where),
                      solimp=None if solimp is None else _vec(solimp, 5, where), margin=margin, gap=gap)
        self._pairs.append((geom1, geom2, values, name))
        return len(self._pairs) - 1

    def add_contact_exclude(self, body1, body2) -> int:
        """Bodies (names or ids) whose geoms never collide with each other."""
        self._excludes.append((self.body_id(body1), self.body_id(body2)))
        return len(self._excludes) - 1

    # --- equality constraints -----------------------------------------------------------
    def add_equality_connect(self, body1=None, body2=None, *, anchor=(0.0, 0.0, 0.0), site1=None, site2=None,
                             name="", active=True, solref=_DEFAULT_SOLREF, solimp=_DEFAULT_SOLIMP,
                             break_force=np.inf) -> int:
        """Hold a point of body1 (``anchor``, body1 frame) on body2 (default: the world)
        where it is at qpos0: a ball joint closing a loop. Or, with ``site1`` and
        ``site2`` instead of bodies, hold the two sites at the same point (MuJoCo's site
        semantics: nothing is taken from qpos0)."""
        data = np.zeros(11)
        data[:3] = _vec(anchor, 3, f"equality '{name}'")
        body1, body2, objtype = _equality_objects(body1, body2, site1, site2, name)
        return self._add_equality(M.EQ_CONNECT, body1, body2, data, name, active, solref, solimp, break_force,
                                  objtype=objtype)

    def add_equality_weld(self, body1=None, body2=None, *, anchor=(0.0, 0.0, 0.0), relpose=None, torquescale=1.0,
                          site1=None, site2=None, name="", active=True, solref=_DEFAULT_SOLREF,
                          solimp=_DEFAULT_SOLIMP, break_force=np.inf, break_torque=np.inf) -> int:
        """Fix body1's pose relative to body2 (default: the world). ``relpose`` (pos 3,
        quat 4) is body2's pose in body1's frame to hold; None holds the pose at qpos0.
        ``anchor`` (body2 frame) is where the translation is enforced. Or, with ``site1``
        and ``site2`` instead of bodies, make the two sites' frames coincide (MuJoCo's
        site semantics; anchor and relpose do not apply)."""
        where = f"equality '{name}'"
        body1, body2, objtype = _equality_objects(body1, body2, site1, site2, name)
        data = np.zeros(11)
        data[:3] = _vec(anchor, 3, where)
        if relpose is not None:
            rel = _vec(relpose, 7, where)
            data[3:6] = rel[:3]
            data[6:10] = quat_normalize(rel[3:])
        data[10] = float(torquescale)
        return self._add_equality(M.EQ_WELD, body1, body2, data, name, active, solref, solimp, break_force,
                                  break_torque, objtype=objtype)

    def add_equality_joint(self, joint1, joint2=None, *, polycoef=(0.0, 1.0, 0.0, 0.0, 0.0), name="", active=True,
                           solref=_DEFAULT_SOLREF, solimp=_DEFAULT_SOLIMP, break_force=np.inf) -> int:
        """Couple hinge/slide joints: q1 - q1_0 = c0 + c1 d + c2 d^2 + c3 d^3 + c4 d^4 with
        d = q2 - q2_0; without joint2, q1 - q1_0 = c0 (a joint held in place)."""
        return self._add_equality(M.EQ_JOINT, joint1, joint2, _polynomial(polycoef, name), name, active, solref,
                                  solimp, break_force)

    def add_equality_tendon(self, tendon1, tendon2=None, *, polycoef=(0.0, 1.0, 0.0, 0.0, 0.0), name="", active=True,
                            solref=_DEFAULT_SOLREF, solimp=_DEFAULT_SOLIMP, break_force=np.inf) -> int:
        """Couple fixed tendons' lengths: L1 - L1_0 = c0 + c1 d + ... + c4 d^4 with
        d = L2 - L2_0 (lengths at qpos0 subtracted); without tendon2, L1 - L1_0 = c0."""
        return self._add_equality(M.EQ_TENDON, tendon1, tendon2, _polynomial(polycoef, name), name, active, solref,
                                  solimp, break_force, objtype=M.OBJ_TENDON)

    def _add_equality(self, kind, obj1, obj2, data, name, active, solref, solimp, break_force=np.inf,
                      break_torque=np.inf, objtype=None) -> int:
        """``break_force`` / ``break_torque``: the constraint turns off, in that env only,
        when the force (torque) it transmits exceeds them (PhysX's breakable joints)."""
        where = f"equality '{name}'" if name else f"equality {len(self._equalities)}"
        if name and name in (e.name for e in self._equalities):
            raise ModelError("duplicate equality name", element=where, attribute="name")
        for attr, value in (("break_force", break_force), ("break_torque", break_torque)):
            if not value > 0:
                raise ModelError(f"{attr} must be > 0 (inf: unbreakable), got {value}", element=where, attribute=attr)
        if objtype is None:
            objtype = M.OBJ_JOINT if kind == M.EQ_JOINT else M.OBJ_BODY
        self._equalities.append(_Equality(kind, obj1, obj2, data, name, bool(active), _vec(solref, 2, where),
                                          _vec(solimp, 5, where), float(break_force), float(break_torque), objtype))
        return len(self._equalities) - 1

    def add_key(self, *, name="", qpos=None, qvel=None, ctrl=None, act=None, mpos=None, mquat=None) -> int:
        """Keyframe; arrays left None take qpos0 / zeros at finalize(), and the mocap bodies'
        own poses for ``mpos`` and ``mquat`` (3 and 4 numbers a mocap body, in mocap order;
        each quaternion normalized). ``act`` holds one activation per stateful actuator, in
        actuator order (MuJoCo's key_act)."""
        self._keys.append((name, qpos, qvel, ctrl, act, mpos, mquat))
        return len(self._keys) - 1

    # --- finalize -----------------------------------------------------------------
    def finalize(self, *, total_mass: Optional[float] = None, bound_mass: float = 0.0, bound_inertia: float = 0.0,
                 balance_inertia: bool = False) -> M.Model:
        """Compile into an immutable Model (MuJoCo's orderings and derived quantities).

        Args:
            total_mass: rescale all masses and inertias so the model weighs this [kg]
                (MJCF ``settotalmass``).
            bound_mass, bound_inertia: the least mass and principal moment a body (not the
                world) gets (MJCF ``boundmass``, ``boundinertia``), applied before
                ``total_mass``.
            balance_inertia: moments that break the triangle inequality are replaced by
                their mean (MJCF ``balanceinertia``), where they would be refused.
        """
        from ..compiler.compile import compile_model  # local: keeps the builder light to import

        return compile_model(self, total_mass=total_mass, bounds=(bound_mass, bound_inertia, balance_inertia))

    # the compile step reads these
    def _body_mass_properties(self, b: int):
        body = self._bodies[b]
        if body.mass is not None:
            if body.inertia.shape == (3, 3):
                iquat, moments = principal_axes(body.inertia)
            else:
                iquat = body.iquat if body.iquat is not None else np.array([1.0, 0, 0, 0])
                moments = body.inertia
            return body.mass, body.com, iquat, np.asarray(moments, dtype=float)
        parts = []
        for g in self._geoms:
            if g.body != b:
                continue
            mesh = self._meshes[g.dataid] if g.type == M.GEOM_MESH else None
            vol = mesh.volume if mesh is not None else geom_volume(g.type, g.size)
            if vol <= 0:
                continue
            mass = g.mass if g.mass is not None else g.density * vol
            # a mesh's frame is its principal frame: its moments per unit volume, scaled
            moments = mass * mesh.inertia / vol if mesh is not None else geom_inertia(g.type, g.size, mass)
            parts.append((mass, g.pos, g.quat, moments))
        mass, com, iquat, moments = combine(parts)
        if mass == 0:  # no geom gives it mass: MuJoCo copies the body's own pos and quat here
            return 0.0, np.array(body.pos, dtype=float), np.array(body.quat, dtype=float), moments
        return mass, com, iquat, moments


def _polynomial(polycoef, name) -> np.ndarray:
    """A joint or tendon coupling's eq_data: its polynomial's coefficients, zero-padded."""
    data = np.zeros(11)
    coef = np.asarray(polycoef, dtype=float).reshape(-1)
    if coef.size > 5 or not np.all(np.isfinite(coef)):
        raise ModelError(f"polycoef takes up to 5 finite numbers, got {polycoef!r}", element=f"equality '{name}'",
                         attribute="polycoef")
    data[: coef.size] = coef
    return data


def _range(lower, upper):
    if lower is None and upper is None:
        return None
    return (-np.inf if lower is None else lower, np.inf if upper is None else upper)


__all__ = ["ModelBuilder", "D6Axis", "JointLimit"]
