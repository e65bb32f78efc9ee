"""How Model and World arrays are packed for the kernels: one description per table.

Taichi caps a kernel at 64 argument slots and each ndarray argument costs ~10 us per
launch on CPU, so the kernels take a few packed arrays instead of one per quantity:
per entity kind, one int32 table and one float table. Each is described once below as a
:class:`Table`: its columns in order, each with a width, a meaning and a unit. The
kernels never index a table by position: physics/access.py generates a named accessor
per column from these descriptions (``body_xpos(body_d, o, b)``), and tests/
test_access.py checks that the two agree.

Float model tables have a leading axis of 1 (shared) or num_envs (randomized per env);
kernels read row ``w % table.shape[0]``. Zero-sized tables are padded to one row and
the true sizes travel in ``SIZES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from .compiler import sensors as S
from .compiler.sameframe import frame_pose, geom_poses, site_poses
from .model import (EQ_CONNECT, LIMIT_HARD, LIMIT_SOFT, LIMIT_SPRING, OBJ_SITE, WRAP_CYLINDER, WRAP_JOINT, WRAP_SITE,
                    WRAP_SPHERE, Model)

# How a table is indexed, which fixes its accessors' arguments (physics/access.py):
FLAT = "flat"  # 1-D, row r of the row set starting at o: a[o + r * width + column]; accessor (a, o, r)
FLAT_SHARED = "flat_shared"  # 1-D, one row set for every env: a[r * width + column]; accessor (a, r)
ROWS = "rows"  # 3-D, a[set, r, column] (set: the env, or the env's model row set); accessor (a, s, r)
ROW = "row"  # 2-D, a[r, column]; accessor (a, r)
ENTRIES = "entries"  # 1-D, one row: a[column]; accessor (a)


# The most axes a column's value may have, by how the table is indexed: what the
# accessors of physics/access.py are made for
_MOST_AXES = {FLAT: 2, ROWS: 2, ROW: 1, ENTRIES: 1, FLAT_SHARED: 0}


class Column(NamedTuple):
    name: str
    start: int
    width: int
    meaning: str
    unit: str
    shape: tuple  # () for a scalar, (n,) for a vector, (3, 3) for a row-major matrix


class Table(Mapping):
    """One packed table: its columns, in order, as ``(name, width, meaning, unit)``, a
    width of 9 with a unit ending in "3x3" being a row-major 3x3 matrix. Read as a
    mapping, name -> (start, width). ``prefix`` + a column's name is its accessor's name."""

    def __init__(self, name: str, prefix: str, index: str, dtype: str, meaning: str, *columns, pow2: bool = False,
                 tail: tuple | None = None):
        self.name, self.prefix, self.index, self.dtype, self.meaning = name, prefix, index, dtype, meaning
        self.columns, at = {}, 0
        for col_name, width, col_meaning, unit in columns:
            shape = () if width == 1 else (3, 3) if unit.endswith("3x3") else (width,)
            if len(shape) > _MOST_AXES[index]:
                raise ValueError(f"table {name!r}, column {col_name!r}: a {index} table's columns hold "
                                 f"{('scalars', 'scalars and vectors', 'scalars, vectors and 3x3 matrices')[_MOST_AXES[index]]}")
            self.columns[col_name] = Column(col_name, at, width, col_meaning, unit, shape)
            at += width
        self.used = at
        # ``tail`` (name, meaning, unit): entries after the columns, as many as the model
        # gives its kernel table room for (a row per tendon, then nv entries); read and
        # written an entry at a time (accessors ``*_at``, ``set_*_at`` only)
        self.tail = None if tail is None else Column(tail[0], at, 0, tail[1], tail[2], ())
        # flat tables' rows start at multiples of a power of two, which lets column
        # offsets fold into addresses (physics/runtime/ti_math.py, env_start)
        self.width = _pow2(at) if pow2 else at

    def __getitem__(self, name):
        c = self.columns[name]
        return c.start, c.width

    def __iter__(self):
        return iter(self.columns)

    def __len__(self):
        return len(self.columns)

    def start(self, name: str) -> int:
        return self.columns[name].start


def _columns(*spec):
    """Name -> (start, width) for consecutive columns; returns (dict, total width)."""
    out, at = {}, 0
    for name, width in spec:
        out[name] = (at, width)
        at += width
    return out, at


def _pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


# --- model tables -----------------------------------------------------------------
SIZE_NBODY, SIZE_NJNT, SIZE_NQ, SIZE_NV, SIZE_NU, SIZE_NTENDON, SIZE_INTEGRATOR, SIZE_DISABLE = range(8)
SIZE_NEFC, SIZE_ITERATIONS = 8, 9  # constraint-row capacity per env; solver iterations
SIZE_NGEOM, SIZE_NPAIR = 10, 11  # geoms; candidate collision pairs (0 when contacts are off)
SIZE_NEQ = 12
SIZE_SMOOTH_FRICTION = 13  # 1: friction loss as smooth passive forces instead of constraint rows
SIZE_LS_ITERATIONS = 14  # the primal solvers' line-search budget
# Entries of one env's rows in the flat data tables (FLAT_TABLES): env w's rows start at
# w * stride.
SIZE_BODY_STRIDE, SIZE_JNT_STRIDE, SIZE_DOF_STRIDE, SIZE_M_STRIDE = 15, 16, 17, 18
# Entries of one row of the flat float model tables (FLAT_MODEL_TABLES): shared tables
# hold one row, tables made per env (World.set_param) one row per env.
SIZE_BODYF_STRIDE, SIZE_JNTF_STRIDE, SIZE_DOFF_STRIDE = 19, 20, 21
# Where, in the flat dof_i table, the sparse mass matrix's column table starts (after the
# dof rows): entry a of a qM row is M(i, dof_i[SIZE_MCOL + a]).
SIZE_MCOL = 22
# Entries of one env's rows in the dofs' scratch table (dof_s)
SIZE_DOFS_STRIDE = 23
# The kinematic tree's levels (the world body's is 0, its children's 1, ...): entry
# SIZE_LEVEL_START + l is where level l starts in the bodies' breadth-first order (the
# body_i column "treeorder"), for l up to TREE_LEVELS, whose entry is where the deeper
# levels start (nbody where there are none). The staged schedule runs each of the first
# TREE_LEVELS levels as a loop of its own and the deeper ones per env
# (physics/step/staged.py).
TREE_LEVELS = 8
SIZE_LEVEL_START = 24
# sensors computed in each forward pass (0 where the model has none or disables them), and
# 1 where one of them reads the post-constraint accelerations and forces
SIZE_NSENSOR = SIZE_LEVEL_START + TREE_LEVELS + 1
SIZE_SENSOR_RNE_POST = SIZE_NSENSOR + 1
SIZE_NOSLIP_ITERATIONS = SIZE_SENSOR_RNE_POST + 1  # sweeps of the no-slip pass (physics/constraint/rows/noslip.py)
SIZE_GRAVCOMP = SIZE_NOSLIP_ITERATIONS + 1  # 1: some body has gravity compensation (physics/smooth/passive.py)
NSIZES = SIZE_GRAVCOMP + 1
# The solver and cone are compile-time choices (physics/step/pipeline.py), not sizes.
SOLVERS = ("PGS", "CG", "Newton")
CONES = ("pyramidal", "elliptic")

_ID = "index"
_QUAT = "unit quaternion (w, x, y, z)"
_SOLREF = "(timeconst s, dampratio) or (-stiffness, -damping)"

BODY_I = Table(
    "body_i", "body_", FLAT_SHARED, "int", "the kinematic tree's bodies (MuJoCo's body_* ids)",
    ("parent", 1, "parent body", _ID), ("root", 1, "the root of the body's subtree below the world", _ID),
    ("jntnum", 1, "joints on the body", "count"), ("jntadr", 1, "first joint", _ID),
    ("dofnum", 1, "dofs of the body's joints", "count"), ("dofadr", 1, "first dof", _ID),
    ("treeorder", 1, "the body at this position of the tree's breadth-first order (tree_levels)", _ID),
    ("childadr", 1, "where the body's children start in that order", "position"),
    ("childnum", 1, "the body's children", "count"),
    ("mocapid", 1, "the body's mocap pose (body_d's mocap_pos, mocap_quat) if >= 0: a mocap body", _ID),
    pow2=True)
BODY_F = Table(
    "body_f", "body_", FLAT, "float", "body constants, in the parent's frame",
    ("pos", 3, "frame position in the parent frame", "m"), ("quat", 4, "frame orientation in the parent frame", _QUAT),
    ("ipos", 3, "centre of mass in the body frame", "m"), ("iquat", 4, "principal inertia axes in the body frame", _QUAT),
    ("mass", 1, "mass", "kg"), ("inertia", 3, "principal moments of inertia", "kg m^2"),
    ("invweight0", 2, "mean inverse translational and rotational inertia at qpos0", "1/kg, 1/(kg m^2)"),
    ("gravcomp", 1, "fraction of its weight held up at its centre of mass", "ratio"),
    pow2=True)
JNT_I = Table(
    "jnt_i", "jnt_", FLAT_SHARED, "int", "joints",
    ("type", 1, "mjtJoint: free 0, ball 1, slide 2, hinge 3", "enum"), ("body", 1, "the joint's body", _ID),
    ("qposadr", 1, "first qpos entry", _ID), ("dofadr", 1, "first dof", _ID),
    ("limited", 1, "1 if the limit is MuJoCo's soft one (constraint rows)", "flag"),
    ("limit_model", 1, "limit model of a limited joint (model.LIMIT_*), -1 if unlimited", "enum"),
    ("actgravcomp", 1, "1: gravity compensation on its dofs is an actuator force", "flag"),
    pow2=True)
JNT_F = Table(
    "jnt_f", "jnt_", FLAT, "float", "joint constants",
    ("pos", 3, "anchor in the body frame", "m"), ("axis", 3, "axis in the body frame", "unit vector"),
    ("stiffness", 1, "spring stiffness", "N m/rad or N/m"), ("range", 2, "lower and upper limit", "rad or m"),
    ("margin", 1, "distance at which the limit becomes active", "rad or m"),
    ("solref", 2, "limit reference", _SOLREF), ("solimp", 5, "limit impedance", "dmin, dmax, width, mid, power"),
    # limit models beyond MuJoCo's (physics/smooth/limits.py)
    ("limit_strength", 1, "cubic penalty limit's strength", "N m"), ("limit_stiffness", 1, "spring limit's stiffness", "N m/rad"),
    ("limit_damping", 1, "spring limit's damping", "N m s/rad"), ("limit_distance", 1, "cubic penalty's reach", "rad or m"),
    ("limit_restitution", 1, "hard limit's restitution", "ratio"),
    ("limit_bounce", 1, "approach speed below which a hard limit does not bounce", "rad/s or m/s"),
    ("limit_acceleration", 1, "1: the spring limit's gains are accelerations", "flag"),
    ("cone", 2, "swing cone half angles of a ball joint's limit", "rad"),
    ("actfrcrange", 2, "bounds of the actuators' total force on it (+-1e30 where unlimited)", "N m or N"),
    ("twist", 2, "twist range of a ball joint's limit", "rad"),
    pow2=True)
DOF_I = Table(
    "dof_i", "dof_", FLAT_SHARED, "int", "dofs (followed, in the same flat array, by the sparse mass matrix's columns)",
    ("body", 1, "the dof's body", _ID), ("jnt", 1, "the dof's joint", _ID), ("parent", 1, "parent dof, -1 at a root", _ID),
    ("madr", 1, "the dof's row in the sparse mass matrix", _ID), ("mrowlen", 1, "entries in that row", "count"),
    ("simple", 1, "1: a dof of a simple body (Model.body_simple), its row's off-diagonal entries zero", "flag"),
    pow2=True)
DOF_F = Table(
    "dof_f", "dof_", FLAT, "float", "dof constants",
    ("armature", 1, "rotor inertia", "kg m^2 or kg"), ("damping", 1, "viscous damping", "N m s/rad or N s/m"),
    ("frictionloss", 1, "dry friction", "N m or N"), ("invweight0", 1, "inverse inertia at qpos0", "1/(kg m^2) or 1/kg"),
    ("solref", 2, "friction-loss reference", _SOLREF), ("solimp", 5, "friction-loss impedance", "dmin, dmax, width, mid, power"),
    # PD drives (physics/smooth/drives.py)
    ("drive_stiffness", 1, "PD drive's position gain", "N m/rad or N/m"),
    ("drive_damping", 1, "PD drive's velocity gain", "N m s/rad or N s/m"),
    ("drive_forcelimit", 1, "PD drive's force bound (0: none)", "N m or N"),
    ("drive_acceleration", 1, "1: the gains are accelerations", "flag"),
    pow2=True)
Q_F = Table(
    "q_f", "", ROWS, "float", "per qpos entry",
    ("qpos0", 1, "reference configuration", "rad, m or quaternion"),
    ("qpos_spring", 1, "springs' rest configuration", "rad, m or quaternion"))
ACT_I = Table(
    "act_i", "actuator_", ROW, "int", "actuators",
    ("trntype", 1, "mjtTrn: joint 0, tendon 3", "enum"), ("trnid", 1, "the transmission's joint or tendon", _ID),
    ("gaintype", 1, "mjtGain", "enum"), ("biastype", 1, "mjtBias", "enum"),
    ("ctrllimited", 1, "1 if ctrl is clamped to ctrlrange", "flag"),
    ("forcelimited", 1, "1 if the force is clamped to forcerange", "flag"),
    ("dyntype", 1, "mjtDyn: none 0, integrator 1, filter 2, filterexact 3", "enum"),
    ("actlimited", 1, "1 if the activation is clamped to actrange", "flag"),
    ("actearly", 1, "1: the force uses the activation the step ends with", "flag"))
ACT_F = Table(
    "act_f", "actuator_", ROWS, "float", "actuator constants",
    ("gainprm", 3, "gain parameters", "mjtGain's"), ("biasprm", 3, "bias parameters", "mjtBias's"),
    ("gear", 1, "transmission ratio", "ratio"), ("ctrlrange", 2, "ctrl bounds", "ctrl"),
    ("forcerange", 2, "force bounds", "N m or N"), ("dyntau", 1, "a filter's time constant, dynprm[0]", "s"),
    ("actrange", 2, "activation bounds", "act"))
TEN_I = Table(
    "ten_i", "tendon_", ROW, "int", "tendons, fixed or spatial",
    ("adr", 1, "first wrap entry", _ID), ("num", 1, "wrap entries", "count"), ("limited", 1, "1 if limited", "flag"),
    ("spatial", 1, "1 if a path of sites, wrapping geoms and pulleys", "flag"))
TEN_F = Table(
    "ten_f", "tendon_", ROWS, "float", "tendon constants",
    ("stiffness", 1, "spring stiffness", "N/m"), ("damping", 1, "damping", "N s/m"),
    ("frictionloss", 1, "dry friction", "N"), ("lengthspring", 2, "spring's dead band: lower and upper rest length", "m"),
    ("range", 2, "length limits", "m"), ("margin", 1, "limit margin", "m"),
    ("invweight0", 1, "inverse inertia at qpos0", "1/kg"), ("length0", 1, "length at qpos0", "m"),
    ("solref_lim", 2, "limit reference", _SOLREF), ("solimp_lim", 5, "limit impedance", "dmin, dmax, width, mid, power"),
    ("solref_fri", 2, "friction-loss reference", _SOLREF),
    ("solimp_fri", 5, "friction-loss impedance", "dmin, dmax, width, mid, power"))
# a spatial tendon's sites and geoms carry their frames in their bodies, so that the
# tendon stage reads no site or geom table of its own
WRAP_I = Table(
    "wrap_i", "wrap_", ROW, "int", "tendons' wraps",
    ("objid", 1, "a fixed tendon's joint", _ID), ("type", 1, "mjtWrap: joint 1, pulley 2, site 3, sphere 4, cylinder 5", "enum"),
    ("body", 1, "the site's or geom's body", _ID), ("sidebody", 1, "a wrapping geom's side site's body, -1: none", _ID))
WRAP_F = Table(
    "wrap_f", "wrap_", ROWS, "float", "tendons' wraps",
    ("prm", 1, "a joint's coefficient, a pulley's divisor", "m/rad, 1"),
    ("pos", 3, "the site's or geom's position in its body", "m"),
    ("quat", 4, "the geom's orientation in its body", "quaternion"), ("radius", 1, "the geom's radius", "m"),
    ("sidepos", 3, "the side site's position in its body", "m"))
EQ_I = Table(
    "eq_i", "eq_", ROW, "int", "equality constraints",
    ("type", 1, "mjtEq: connect 0, weld 1, joint 2, tendon 3", "enum"),
    ("obj1", 1, "first body, joint or tendon", _ID),
    ("obj2", 1, "second body, joint or tendon (-1: the world or none)", _ID),
    ("active0", 1, "1 if active at reset", "flag"))
# quat2: a weld's orientation is held as conj(q2 quat2) q1 relpose; quat2 is the second
# site's frame for site-based welds, the identity otherwise
EQ_F = Table(
    "eq_f", "eq_", ROWS, "float", "equality constants",
    ("data", 11, "MuJoCo's eq_data: anchors, relpose, torquescale or polynomial coefficients", "m, quaternion or 1"),
    ("solref", 2, "reference", _SOLREF), ("solimp", 5, "impedance", "dmin, dmax, width, mid, power"),
    ("break", 2, "force and torque at which the constraint breaks", "N, N m"),
    ("quat2", 4, "the second site's frame in its body", _QUAT))
EQ_D = Table(
    "eq_d", "eq_", ROWS, "int", "equality constraints' state per env",
    ("active", 1, "1 if active now", "flag"), ("broken", 1, "1 if it broke since last cleared", "flag"))
OPT_F = Table(
    "opt_f", "opt_", ROWS, "float", "simulation options (row 0 of each set)",
    ("timestep", 1, "step size", "s"), ("gravity", 3, "gravity", "m/s^2"), ("wind", 3, "medium velocity", "m/s"),
    ("density", 1, "medium density", "kg/m^3"), ("viscosity", 1, "medium viscosity", "Pa s"),
    ("friction_smoothing", 1, "slope of smooth friction loss's tanh", "s/rad or s/m"),
    ("tolerance", 1, "solver tolerance", "1"), ("impratio", 1, "frictional-to-normal impedance ratio", "ratio"),
    ("meaninertia", 1, "mean diagonal of the mass matrix at qpos0", "kg m^2"),
    ("ls_tolerance", 1, "line-search tolerance", "1"), ("magnetic", 3, "the magnetic field", "T"),
    ("noslip_tolerance", 1, "the no-slip pass's tolerance", "1"))
# Sensors (physics/sensors.py): the object each reads as its body and a frame in that body
# (a site, geom or the inertial frame), and the same of the reference frame of a frame sensor
SENSOR_I = Table(
    "sensor_i", "sensor_", ROW, "int", "sensors (mjModel's sensor_* arrays)",
    ("type", 1, "mjtSensor", "enum"), ("objtype", 1, "mjtObj of the object read", "enum"),
    ("objid", 1, "the object read", _ID), ("body", 1, "the object's body", _ID),
    ("reftype", 1, "mjtObj of the reference frame, 0: the world", "enum"), ("refbody", 1, "the reference's body", _ID),
    ("adr", 1, "first sensordata entry", _ID), ("dim", 1, "sensordata entries", "count"),
    ("datatype", 1, "mjtDataType: real 0, positive 1 (cutoff applies), axis 2, quaternion 3", "enum"),
    ("zone", 1, "mjtGeom of a touch sensor's site", "enum"),
    ("stage", 1, "mjtStage the value needs: 1 position, 2 velocity, 3 acceleration", "enum"),
    ("refid", 1, "the second object of a contact sensor", _ID),
    ("intprm", 3, "a contact sensor's data fields (bits), reduction and slots", "enum, enum, count"))
SENSOR_F = Table(
    "sensor_f", "sensor_", ROWS, "float", "sensor constants",
    ("cutoff", 1, "bound of the value (0: none)", "the sensor's"),
    ("pos", 3, "the object's frame in its body", "m"), ("quat", 4, "the object's orientation in its body", _QUAT),
    ("size", 3, "a site's size (a touch sensor's zone)", "m"),
    ("refpos", 3, "the reference frame in its body", "m"), ("refquat", 4, "the reference's orientation in its body", _QUAT))

# --- per-world data tables ------------------------------------------------------------
BODY_D = Table(
    "body_d", "body_", FLAT, "float", "per-body state of one env (mjData's body arrays)",
    ("xpos", 3, "frame position", "m"), ("xquat", 4, "frame orientation", _QUAT),
    ("xmat", 9, "frame orientation", "rotation 3x3"), ("xipos", 3, "centre of mass", "m"),
    ("ximat", 9, "principal inertia axes", "rotation 3x3"), ("subtree_com", 3, "centre of mass of the subtree", "m"),
    ("subtree_mass", 1, "mass of the subtree", "kg"),
    ("cinert", 10, "com-based inertia (Ixx, Iyy, Izz, Ixy, Ixz, Iyz, m dx, m dy, m dz, m)", "kg m^2, kg m, kg"),
    ("crb", 10, "composite rigid-body inertia, as cinert", "kg m^2, kg m, kg"),
    ("cvel", 6, "com-based velocity (angular, linear)", "rad/s, m/s"),
    ("cacc", 6, "com-based acceleration (angular, linear)", "rad/s^2, m/s^2"),
    ("cfrc", 6, "com-based force of the bias pass (scratch of the recursive Newton-Euler pass)", "N m, N"),
    ("cfrc_ext", 6, "com-based external force: contacts and equalities", "N m, N"),
    ("cfrc_int", 6, "com-based force from the parent", "N m, N"),
    # a mocap body's pose, set per env (World.set_mocap): mjData's mocap_pos and mocap_quat
    # kept in the body's own row, read by the kinematics in place of body_f's pos and quat
    ("mocap_pos", 3, "a mocap body's position in the world", "m"),
    ("mocap_quat", 4, "a mocap body's orientation in the world, normalized where read", "quaternion (w, x, y, z)"),
    pow2=True)
# Computed on demand from the last forward pass (physics/constraint/reaction.py), not while stepping.
POST_CONSTRAINT = ("cacc", "cfrc_ext", "cfrc_int")
# half_sincos: sin and cos of a hinge's half angle, all hinges' first and off the chain of
# body frames (physics/smooth/kinematics.py)
JNT_D = Table(
    "jnt_d", "jnt_", FLAT, "float", "per-joint state of one env",
    ("xanchor", 3, "anchor", "m"), ("xaxis", 3, "axis", "unit vector"),
    ("half_sincos", 2, "sin and cos of a hinge's half angle from qpos0", "1"),
    pow2=True)
DOF_D = Table(
    "dof_d", "dof_", FLAT, "float", "per-dof state of one env (mjData's nv arrays)",
    ("cdof", 6, "com-based motion axis (angular, linear)", "1, m"),
    ("cdof_dot", 6, "time derivative of cdof", "1/s, m/s"),
    ("qfrc_bias", 1, "Coriolis, centrifugal and gravity force", "N m or N"),
    ("qfrc_passive", 1, "springs, dampers, fluid, smooth friction loss and gravity compensation", "N m or N"),
    ("qfrc_gravcomp", 1, "gravity compensation", "N m or N"),
    ("qfrc_actuator", 1, "actuator force (drives included)", "N m or N"),
    ("qfrc_smooth", 1, "all forces but the constraints'", "N m or N"),
    ("qacc_smooth", 1, "acceleration without constraints", "rad/s^2 or m/s^2"),
    ("qfrc_constraint", 1, "constraint force", "N m or N"),
    ("qacc_warmstart", 1, "the solver's starting acceleration", "rad/s^2 or m/s^2"),
    # drives and cubic limits: the drive force (also in qfrc_actuator), the stiffness and
    # damping the Euler and implicitspringdamper integrators treat implicitly, and each
    # env's drive targets (set by World.set_drive_target)
    ("qfrc_drive", 1, "PD drive force", "N m or N"),
    ("implicit_stiffness", 1, "stiffness integrated implicitly", "N m/rad or N/m"),
    ("implicit_damping", 1, "damping integrated implicitly", "N m s/rad or N s/m"),
    ("drive_qpos_target", 1, "PD drive's position target", "rad or m"),
    ("drive_qvel_target", 1, "PD drive's velocity target", "rad/s or m/s"),
    pow2=True)
# Work vectors of one env's step, per dof: no World.get() quantity lives here.
DOF_S = Table(
    "dof_s", "dof_", FLAT, "float", "per-dof scratch of one env's step",
    ("qacc_rk", 4, "RK4's stage accelerations", "rad/s^2 or m/s^2"),
    ("qvel_rk", 4, "RK4's stage velocities", "rad/s or m/s"),
    ("qvel_start", 1, "qvel at the start of an RK4 step", "rad/s or m/s"),
    ("dx_vel", 1, "RK4's combined velocity for the position update", "rad/s or m/s"),
    ("scratch", 1, "a work vector (an implicit solve's right-hand side, a Jacobian-vector product)", "any"),
    ("constraint_vel", 1, "velocity the constraint rows see", "rad/s or m/s"),
    # the primal solvers' vectors (physics/constraint/primal/): M (qacc - qacc_smooth), the cost's
    # gradient and its preconditioned form, the search direction, M search, and the
    # previous iteration's gradients for the conjugate-gradient update
    ("ma", 1, "M (qacc - qacc_smooth)", "N m or N"), ("grad", 1, "the cost's gradient", "N m or N"),
    ("mgrad", 1, "the preconditioned gradient", "rad/s^2 or m/s^2"), ("search", 1, "search direction", "rad/s^2 or m/s^2"),
    ("mv", 1, "M search", "N m or N"), ("gradold", 1, "the previous gradient (CG)", "N m or N"),
    ("mgradold", 1, "the previous preconditioned gradient (CG)", "rad/s^2 or m/s^2"),
    ("hinv", 1, "1 / the diagonal of Newton's Hessian factor: its solves multiply", "1/sqrt(kg) or 1/sqrt(kg m^2)"),
    pow2=True)
# Constraint rows of one env (MuJoCo's efc_* arrays), up to the SIZE_NEFC capacity.
EFC_F = Table(
    "efc_f", "efc_", ROWS, "float", "constraint rows of one env (MuJoCo's efc_* arrays)",
    ("type", 1, "mjtConstraint", "enum"), ("id", 1, "the constrained object", _ID),
    ("pos", 1, "constraint violation", "m or rad"), ("margin", 1, "inclusion margin", "m or rad"),
    ("diagA", 1, "diagonal of J M^-1 J^T", "1/kg or 1/(kg m^2)"), ("R", 1, "regularizer", "1/kg or 1/(kg m^2)"),
    ("K", 1, "reference stiffness", "1/s^2"), ("B", 1, "reference damping", "1/s"), ("imp", 1, "impedance", "0-1"),
    ("aref", 1, "reference acceleration", "m/s^2 or rad/s^2"), ("vel", 1, "J qvel", "m/s or rad/s"),
    ("force", 1, "constraint force", "N or N m"), ("AR", 1, "diagonal of A + R (PGS)", "1/kg or 1/(kg m^2)"),
    ("lower", 1, "lower force bound (PGS)", "N or N m"), ("upper", 1, "upper force bound (PGS)", "N or N m"),
    ("solref", 2, "reference", _SOLREF), ("solimp", 5, "impedance", "dmin, dmax, width, mid, power"),
    ("imppos", 1, "the residual the impedance sees: |pos| of a whole connect or weld block", "m or rad"),
    ("jdotv", 1, "d(J)/dt qvel of connect and weld rows, taken out of aref as MuJoCo does", "m/s^2 or rad/s^2"),
    ("bias", 1, "J qacc_smooth - aref: the dual's linear term, fixed while the solver runs", "m/s^2 or rad/s^2"),
    # primal solvers (physics/constraint/primal/)
    ("jar", 1, "J qacc - aref", "m/s^2 or rad/s^2"), ("jv", 1, "J search", "m/s^2 or rad/s^2"),
    ("quad", 3, "the row's cost along the line search, as a quadratic", "cost"),
    ("state", 1, "mjtConstraintState", "enum"),
    ("fric", 1, "friction coefficient scaling the row into the elliptic cone's circular space", "1"),
    ("cone", 6, "first row of an elliptic contact: the cone's line-search terms U0, V0, UU, UV, VV and its condim", "cost"),
    ("hess", 1, "the row's weight in Newton's Hessian J^T D J: 1/R while the row is quadratic, else 0", "kg or kg m^2"),
    # PGS (physics/constraint/rows/pgs.py)
    ("pgs_order", 1, "the first rows of the blocks (a row, or an elliptic contact's rows) in the order a sweep visits them", _ID),
    ("pgs_prev", 1, "the force before the sweep before last: the momentum step's origin", "N or N m"),
    ("pgs_momentum", 1, "the force after the momentum step, where the last sweep began", "N or N m"))
EFC_COUNTS = Table(
    "efc_n", "", ROW, "int", "constraint counts of one env",
    ("nefc", 1, "active rows", "count"), ("nefc_overflow", 1, "rows that did not fit", "count"),
    ("solver_niter", 1, "solver iterations of the last step", "count"))
ACT_D = Table(
    "act_d", "actuator_", ROWS, "float", "per-actuator state of one env",
    ("force", 1, "actuator force", "N m or N"), ("length", 1, "transmission length", "rad or m"),
    ("velocity", 1, "transmission velocity", "rad/s or m/s"),
    ("act", 1, "activation of a stateful actuator (MuJoCo's act)", "ctrl"),
    ("act_dot", 1, "its time derivative", "ctrl/s"))
TEN_D = Table(
    "ten_d", "ten_", ROWS, "float", "per-tendon state of one env",
    ("length", 1, "tendon length", "m"), ("velocity", 1, "tendon velocity", "m/s"),
    tail=("J", "the tendon's Jacobian d length / d qvel, nv entries (MuJoCo's ten_J, dense)", "m/rad or 1"))

# --- the collision stage's tables (physics/collision/) -----------------------------------
PAIR_I = Table(
    "pair_i", "pair_", ROW, "int", "candidate geom pairs, fixed at compile time",
    ("geom1", 1, "first geom", _ID), ("geom2", 1, "second geom", _ID),
    ("collider", 1, "the pair's collision function (collision.broadphase.COLLIDE_*)", "enum"),
    ("condim", 1, "contact dimensionality: 1, 3, 4 or 6", "count"),
    ("maxcon", 1, "most contacts the pair can make", "count"))
PAIR_F = Table(
    "pair_f", "pair_", ROWS, "float", "candidate pairs' contact parameters",
    ("margin", 1, "distance at which contacts are made", "m"), ("gap", 1, "margin band where they are not active", "m"),
    ("friction", 5, "tangential, tangential, torsional, rolling, rolling", "1, 1, m, m, m"),
    ("solref", 2, "contact reference", _SOLREF), ("solimp", 5, "contact impedance", "dmin, dmax, width, mid, power"))
# hfield geoms: flat index of the first elevation sample in geom_f (whose rows past the
# geoms hold every hfield's samples, NGEOM_F to a row), the grid's rows and columns; mesh
# geoms: flat index of their hull's first vertex (rows past the height fields) and the
# hull's vertex count (physics/collision/driver.py, _pack_hulls), and where rangefinders
# see meshes, the flat index in geom_i of their mesh's ray tree, whose ints lie in
# geom_i's rows past the geoms and floats in geom_f's past the hulls (physics/mesh_rays.py)
GEOM_I = Table(
    "geom_i", "geom_", ROW, "int", "geoms (rows past them hold meshes' ray trees)",
    ("type", 1, "mjtGeom", "enum"), ("body", 1, "the geom's body", _ID),
    ("hf_base", 1, "a height field's first sample (a mesh's first hull vertex) as a flat index into geom_f", _ID),
    ("hf_nrow", 1, "a height field's grid rows (a mesh's hull vertices)", "count"),
    ("hf_ncol", 1, "a height field's grid columns (a mesh's ray tree, as a flat index into geom_i)", "count"),
    ("rayable", 1, "1 if rangefinder rays see the geom (physics/rays.py)", "flag"))
GEOM_F = Table(
    "geom_f", "geom_", ROWS, "float", "geom constants (rows past the geoms hold height-field samples)",
    ("size", 3, "MuJoCo's geom_size", "m"), ("pos", 3, "position in the body frame", "m"),
    ("quat", 4, "orientation in the body frame", _QUAT), ("rbound", 1, "bounding-sphere radius", "m"),
    ("hfield_size", 4, "a height field's x and y half sizes, elevation and base", "m"))
GEOM_X = Table(
    "geom_x", "geom_", ROWS, "float", "geom world poses of one env",
    ("xpos", 3, "position", "m"), ("xmat", 9, "orientation", "rotation 3x3"))
# Contact table, one row per contact; names as mjContact. ``exclude`` marks contacts in the
# gap band (dist >= includemargin) that the constraint stage skips, as MuJoCo's con.exclude.
CON_F = Table(
    "con_f", "contact_", ROWS, "float", "contacts of one env (mjContact's floats)",
    ("dist", 1, "signed distance, negative in penetration", "m"), ("pos", 3, "contact point", "m"),
    ("frame", 9, "rows: the normal from geom1 to geom2, then two tangents", "rotation 3x3"),
    ("friction", 5, "tangential, tangential, torsional, rolling, rolling", "1, 1, m, m, m"),
    ("solref", 2, "reference", _SOLREF), ("solimp", 5, "impedance", "dmin, dmax, width, mid, power"),
    ("margin", 1, "the pair's margin", "m"), ("gap", 1, "the pair's gap", "m"),
    ("includemargin", 1, "margin - gap: the distance below which the contact is active", "m"))
CON_I = Table(
    "con_i", "contact_", ROWS, "int", "contacts of one env (mjContact's ints)",
    ("geom1", 1, "first geom", _ID), ("geom2", 1, "second geom", _ID), ("dim", 1, "condim", "count"),
    ("exclude", 1, "1 in the gap band: no constraint rows", "flag"), ("pair", 1, "the candidate pair", _ID),
    ("efc_address", 1, "the contact's first constraint row; -1: none (excluded, disabled or past the rows' capacity)",
     _ID))
CON_N = Table(
    "con_n", "", ROW, "int", "contact counts of one env",
    ("ncon", 1, "contacts made", "count"), ("ncon_overflow", 1, "contacts that did not fit in the table", "count"))
COLLISION_TABLES = (PAIR_I, PAIR_F, GEOM_I, GEOM_F, GEOM_X, CON_F, CON_I, CON_N)

# --- the renderer's tables (physics/render/raycast.py, float32) -------------------------
DRAW_F = Table(
    "draw_f", "draw_", ROW, "float", "drawn geoms (rows past them hold height-field samples, DRAW_F.width to a row)",
    ("size", 3, "MuJoCo's geom_size", "m"), ("rgb", 3, "colour", "0-1"), ("rgb2", 3, "second checker colour", "0-1"),
    ("cell", 2, "checker cell size along the plane's x and y (0: no checker)", "m"),
    ("rbound", 1, "bounding-sphere radius", "m"),
    ("hf_base", 1, "a height field's first sample as a flat index into draw_f", "index"),
    ("hf_nrow", 1, "a height field's grid rows", "count"), ("hf_ncol", 1, "a height field's grid columns", "count"),
    ("hf_size", 4, "MuJoCo's hfield size: x and y half sizes, elevation, base", "m"))
DRAW_X = Table(
    "draw_x", "draw_", ROWS, "float", "drawn geoms' world poses, per image",
    ("xpos", 3, "position", "m"), ("xmat", 9, "orientation", "rotation 3x3"))
CAM = Table(
    "cam", "cam_", ROW, "float", "cameras, one row per image",
    ("pos", 3, "position", "m"), ("right", 3, "right unit vector", "1"), ("up", 3, "up unit vector", "1"),
    ("fwd", 3, "viewing direction", "1"), ("tan", 1, "tan(fovy / 2)", "1"))
SCENE = Table(
    "scene", "scene_", ENTRIES, "float", "lights and sky",
    ("light_dir", 3, "direction the key light travels", "unit vector"), ("ambient", 1, "ambient intensity", "0-1"),
    ("headlight", 1, "headlight intensity", "0-1"), ("diffuse", 1, "key light's diffuse intensity", "0-1"),
    ("specular", 1, "key light's specular intensity", "0-1"), ("sky_top", 3, "sky colour above", "0-1"),
    ("sky_bottom", 3, "sky colour at the horizon", "0-1"), ("shadows", 1, "1: cast shadows", "flag"),
    ("haze", 1, "distance at which the fog is whole", "m"))
RENDER_TABLES = (DRAW_F, DRAW_X, CAM, SCENE)

# Every table a kernel reads by column, in one list: physics/access.py makes their accessors.
TABLES = (BODY_I, BODY_F, JNT_I, JNT_F, DOF_I, DOF_F, Q_F, ACT_I, ACT_F, TEN_I, TEN_F, WRAP_I, WRAP_F, EQ_I, EQ_F,
          EQ_D, OPT_F, SENSOR_I, SENSOR_F, BODY_D, JNT_D, DOF_D, DOF_S, EFC_F, EFC_COUNTS, ACT_D, TEN_D, *COLLISION_TABLES, *RENDER_TABLES)

# Row widths, and the column positions the host side packs and reads by
NBODY_I, NBODY_F, NJNT_I, NJNT_F, NDOF_I, NDOF_F = (t.width for t in (BODY_I, BODY_F, JNT_I, JNT_F, DOF_I, DOF_F))
NQ_F, NACT_I, NACT_F, NTEN_I, NTEN_F, NEQ_I, NEQ_F, NOPT_F = (
    t.width for t in (Q_F, ACT_I, ACT_F, TEN_I, TEN_F, EQ_I, EQ_F, OPT_F))
NPLAN = 3  # the staged schedule's plan of a launch per env: program segments, steps, advance
NBODY_D, NJNT_D, NDOF_D, NDOF_S, NEFC_F, NEFC_N, NACT_D, NTEN_D = (
    t.width for t in (BODY_D, JNT_D, DOF_D, DOF_S, EFC_F, EFC_COUNTS, ACT_D, TEN_D))
(BODY_PARENT, BODY_ROOT, BODY_JNTNUM, BODY_JNTADR, BODY_DOFNUM, BODY_DOFADR, BODY_TREEORDER, BODY_CHILDADR,
 BODY_CHILDNUM, BODY_MOCAPID) = (BODY_I.start(k) for k in BODY_I)
JNT_TYPE, JNT_LIMITED, JNT_LIMIT_MODEL = (JNT_I.start(k) for k in ("type", "limited", "limit_model"))
DOF_MROWLEN = DOF_I.start("mrowlen")
EQ_D_ACTIVE, EQ_D_BROKEN = EQ_D.start("active"), EQ_D.start("broken")
NWRAP_I, NWRAP_F = WRAP_I.width, WRAP_F.width
EFC_N, EFC_OVERFLOW, EFC_NITER = (EFC_COUNTS.start(k) for k in EFC_COUNTS)

# body_d's columns that hold mjData's (nmocap,) arrays in the mocap bodies' rows: World.get()
# returns them by mocap id, not by body (quantities.mocap_view)
MOCAP_COLUMNS = ("mocap_pos", "mocap_quat")

# The quantities World.get() can return: name -> (table, start, width); width 0 = scalar per row.
DATA_VIEWS = {
    **{k: ("body_d", a, w) for k, (a, w) in BODY_D.items() if k not in ("cfrc", *MOCAP_COLUMNS)},
    **{k: ("jnt_d", a, w) for k, (a, w) in JNT_D.items() if k != "half_sincos"},
    **{k: ("dof_d", a, w) for k, (a, w) in DOF_D.items()},
    **{"actuator_" + k: ("act_d", a, w) for k, (a, w) in ACT_D.items()},
    **{"ten_" + k: ("ten_d", a, w) for k, (a, w) in TEN_D.items()},
}


def _put(table, row, cols, name, value):
    a, w = cols[name]
    table[row, a : a + w] = np.asarray(value, dtype=float).reshape(-1)[:w]


def _pad(n):
    return max(int(n), 1)


def equality_rows(m: Model) -> int:
    """Rows of the equality constraints: 3 per connect, 6 per weld, 1 per joint or tendon
    coupling."""
    return int(sum({0: 3, 1: 6, 2: 1, 3: 1}[int(t)] for t in m.eq_type))


def limit_rows(m: Model) -> int:
    """Most limit rows an env can have: two per limited hinge, slide or tendon (both sides
    can be within the margin), one per limited ball joint."""
    limited = np.asarray(m.jnt_limited, bool)
    ball = np.asarray(m.jnt_type) == 1
    return int(2 * np.count_nonzero(limited & ~ball) + np.count_nonzero(limited & ball)
               + 2 * np.count_nonzero(m.tendon_limited) + 2 * _swing_twist_limits(m))


def _swing_twist_limits(m: Model) -> int:
    """Ball joints with PhysX limits: a cone row and two twist rows, not MuJoCo's one."""
    physx = np.isin(np.asarray(m.jnt_limit_model), (LIMIT_HARD, LIMIT_SPRING))
    return int(np.count_nonzero(np.asarray(m.jnt_limited, bool) & (np.asarray(m.jnt_type) == 1) & physx))


def friction_rows(m: Model) -> int:
    """One row per dof and per tendon with friction loss, when it is a constraint."""
    if m.opt.frictionloss == "smooth":
        return 0
    return int(np.count_nonzero(m.dof_frictionloss) + np.count_nonzero(m.tendon_frictionloss))


FLOAT32_MIN_TOLERANCE = 1e-6


def solver_tolerance(tolerance: float, dtype) -> float:
    """The tolerance the solvers stop at. MuJoCo's default (1e-8) was chosen for float64:
    in float32 the gradient's round-off alone is larger, so the solver would spend
    iterations moving around the optimum; float32 Worlds stop at 1e-6 at the finest."""
    if np.dtype(dtype) == np.float32:
        return max(tolerance, FLOAT32_MIN_TOLERANCE)
    return tolerance


def sparse_columns(m: Model) -> np.ndarray:
    """The column (dof) of each entry of the sparse mass matrix's rows: row i holds i, then
    its ancestors. Read from a table, the entries of a row are independent loads instead
    of a chain of parent lookups, so walks along a row overlap their steps."""
    cols = np.zeros(_pad(m.nM), np.int32)
    for i in range(m.nv):
        adr, j = m.dof_Madr[i], i
        while j >= 0:
            cols[adr] = j
            adr, j = adr + 1, m.dof_parentid[j]
    return cols


def tree_levels(m: Model):
    """The kinematic tree by level: the sizes' level starts (SIZE_LEVEL_START), the
    breadth-first order (the world, then each listed body's children in body order, so
    that a parent's children are side by side and levels follow one another), and each
    body's children's start in that order and their count."""
    children: list[list[int]] = [[] for _ in range(m.nbody)]
    for b in range(1, m.nbody):
        children[m.body_parentid[b]].append(b)
    order, childadr, depth = [0], np.zeros(m.nbody, np.int64), np.zeros(m.nbody, np.int64)
    for b in order:  # grows as it is walked
        childadr[b] = len(order)
        for c in children[b]:
            depth[c] = depth[b] + 1
            order.append(c)
    starts = np.searchsorted(depth[order], np.arange(TREE_LEVELS + 1), side="left")
    return starts, np.array(order), childadr, np.array([len(c) for c in children])


def tree_depth(m: Model) -> int:
    """The kinematic tree's levels, the world's included (1 for the world alone), or
    TREE_LEVELS + 1 for any tree deeper than TREE_LEVELS."""
    starts = tree_levels(m)[0]
    return int(np.count_nonzero(starts < m.nbody)) if starts[-1] >= m.nbody else TREE_LEVELS + 1


def pack_model(m: Model, dtype, nefc_capacity: int = 0, npair: int = 0) -> dict:
    """Pack a Model into the kernels' tables (numpy arrays, float tables in ``dtype``)."""
    integrator = m.opt.integrator
    # one env's entries in each flat data table, from the shapes the World allocates
    shapes = data_shapes(m, 1)
    strides = [int(np.prod(shapes[name][1:])) for name in ("body_d", "jnt_d", "dof_d", "qM")]
    sizes = np.array([m.nbody, m.njnt, m.nq, m.nv, m.nu, m.ntendon, integrator, m.opt.disableflags,
                      nefc_capacity, m.opt.iterations, m.ngeom, npair, m.neq,
                      m.opt.frictionloss == "smooth", m.opt.ls_iterations, *strides, m.nbody * NBODY_F,
                      _pad(m.njnt) * NJNT_F, _pad(m.nv) * NDOF_F, _pad(m.nv) * NDOF_I,
                      int(np.prod(shapes["dof_s"][1:])), *tree_levels(m)[0], *_sensor_sizes(m),
                      m.opt.noslip_iterations, int(np.any(np.asarray(m.body_gravcomp) != 0))], np.int32)

    body_i = np.zeros((m.nbody, NBODY_I), np.int32)
    body_i[:, BODY_PARENT] = m.body_parentid
    body_i[:, BODY_ROOT] = m.body_rootid
    body_i[:, BODY_JNTNUM] = m.body_jntnum
    body_i[:, BODY_JNTADR] = m.body_jntadr
    body_i[:, BODY_DOFNUM] = m.body_dofnum
    body_i[:, BODY_DOFADR] = m.body_dofadr
    _, order, childadr, childnum = tree_levels(m)
    body_i[:, BODY_TREEORDER] = order
    body_i[:, BODY_CHILDADR] = childadr
    body_i[:, BODY_CHILDNUM] = childnum
    body_i[:, BODY_MOCAPID] = m.body_mocapid
    body_f = np.zeros((m.nbody, NBODY_F))
    for b in range(m.nbody):
        _put(body_f, b, BODY_F, "pos", m.body_pos[b])
        _put(body_f, b, BODY_F, "quat", m.body_quat[b])
        _put(body_f, b, BODY_F, "ipos", m.body_ipos[b])
        _put(body_f, b, BODY_F, "iquat", m.body_iquat[b])
        _put(body_f, b, BODY_F, "mass", m.body_mass[b])
        _put(body_f, b, BODY_F, "inertia", m.body_inertia[b])
        _put(body_f, b, BODY_F, "invweight0", m.body_invweight0[b])
        _put(body_f, b, BODY_F, "gravcomp", m.body_gravcomp[b] if len(m.body_gravcomp) else 0.0)

    jnt_i = np.zeros((_pad(m.njnt), NJNT_I), np.int32)
    jnt_f = np.zeros((_pad(m.njnt), NJNT_F))
    for j in range(m.njnt):
        jnt_i[j, :JNT_LIMIT_MODEL] = (m.jnt_type[j], m.jnt_bodyid[j], m.jnt_qposadr[j], m.jnt_dofadr[j], m.jnt_limited[j])
        jnt_i[j, JNT_I.start("actgravcomp")] = m.jnt_actgravcomp[j] if len(m.jnt_actgravcomp) else 0
        _put(jnt_f, j, JNT_F, "range", m.jnt_range[j])
        _put(jnt_f, j, JNT_F, "margin", m.jnt_margin[j])
        _put(jnt_f, j, JNT_F, "solref", m.jnt_solref[j])
        _put(jnt_f, j, JNT_F, "solimp", m.jnt_solimp[j])
        _put(jnt_f, j, JNT_F, "pos", m.jnt_pos[j])
        _put(jnt_f, j, JNT_F, "axis", m.jnt_axis[j])
        _put(jnt_f, j, JNT_F, "stiffness", m.jnt_stiffness[j])
        _put(jnt_f, j, JNT_F, "actfrcrange", m.jnt_actfrcrange[j] if m.jnt_actfrclimited[j] else (-1e30, 1e30))

    dof_i = np.zeros((_pad(m.nv), NDOF_I), np.int32)
    dof_f = np.zeros((_pad(m.nv), NDOF_F))
    for d in range(m.nv):
        rowlen = (m.dof_Madr[d + 1] if d + 1 < m.nv else m.nM) - m.dof_Madr[d]
        dof_i[d, : DOF_MROWLEN + 2] = (m.dof_bodyid[d], m.dof_jntid[d], m.dof_parentid[d], m.dof_Madr[d], rowlen,
                                       m.body_simple[m.dof_bodyid[d]] > 0)
        dof_f[d, : DOF_F["drive_stiffness"][0]] = (m.dof_armature[d], m.dof_damping[d], m.dof_frictionloss[d], m.dof_invweight0[d], *m.dof_solref[d],
                    *m.dof_solimp[d])

    dof_i = np.concatenate([dof_i.ravel(), sparse_columns(m)])

    q_f = np.zeros((_pad(m.nq), NQ_F))
    q_f[: m.nq, 0] = m.qpos0
    q_f[: m.nq, 1] = m.qpos_spring

    act_i = np.zeros((_pad(m.nu), NACT_I), np.int32)
    act_f = np.zeros((_pad(m.nu), NACT_F))
    for u in range(m.nu):
        act_i[u] = (m.actuator_trntype[u], m.actuator_trnid[u], m.actuator_gaintype[u], m.actuator_biastype[u],
                    m.actuator_ctrllimited[u], m.actuator_forcelimited[u], m.actuator_dyntype[u],
                    m.actuator_actlimited[u], m.actuator_actearly[u])
        _put(act_f, u, ACT_F, "dyntau", max(m.actuator_dynprm[u, 0], 1e-15))  # MuJoCo's mjMINVAL floor
        _put(act_f, u, ACT_F, "actrange", m.actuator_actrange[u])
        _put(act_f, u, ACT_F, "gainprm", m.actuator_gainprm[u, :3])
        _put(act_f, u, ACT_F, "biasprm", m.actuator_biasprm[u, :3])
        _put(act_f, u, ACT_F, "gear", m.actuator_gear[u, 0])
        _put(act_f, u, ACT_F, "ctrlrange", m.actuator_ctrlrange[u])
        _put(act_f, u, ACT_F, "forcerange", m.actuator_forcerange[u])

    ten_i = np.zeros((_pad(m.ntendon), NTEN_I), np.int32)
    ten_f = np.zeros((_pad(m.ntendon), NTEN_F))
    for t in range(m.ntendon):
        ten_i[t] = (m.tendon_adr[t], m.tendon_num[t], m.tendon_limited[t], m.wrap_type[m.tendon_adr[t]] != WRAP_JOINT)
        _put(ten_f, t, TEN_F, "range", m.tendon_range[t])
        _put(ten_f, t, TEN_F, "margin", m.tendon_margin[t])
        _put(ten_f, t, TEN_F, "invweight0", m.tendon_invweight0[t])
        _put(ten_f, t, TEN_F, "length0", m.tendon_length0[t])
        _put(ten_f, t, TEN_F, "solref_lim", m.tendon_solref_lim[t])
        _put(ten_f, t, TEN_F, "solimp_lim", m.tendon_solimp_lim[t])
        _put(ten_f, t, TEN_F, "solref_fri", m.tendon_solref_fri[t])
        _put(ten_f, t, TEN_F, "solimp_fri", m.tendon_solimp_fri[t])
        _put(ten_f, t, TEN_F, "stiffness", m.tendon_stiffness[t])
        _put(ten_f, t, TEN_F, "damping", m.tendon_damping[t])
        _put(ten_f, t, TEN_F, "frictionloss", m.tendon_frictionloss[t])
        _put(ten_f, t, TEN_F, "lengthspring", m.tendon_lengthspring[t])
    wrap_i, wrap_f = _pack_wraps(m)

    opt_f = np.zeros((1, NOPT_F))
    _put(opt_f, 0, OPT_F, "timestep", m.opt.timestep)
    _put(opt_f, 0, OPT_F, "gravity", m.opt.gravity)
    _put(opt_f, 0, OPT_F, "wind", m.opt.wind)
    _put(opt_f, 0, OPT_F, "density", m.opt.density)
    _put(opt_f, 0, OPT_F, "viscosity", m.opt.viscosity)
    _put(opt_f, 0, OPT_F, "friction_smoothing", 1000.0)
    _put(opt_f, 0, OPT_F, "tolerance", solver_tolerance(m.opt.tolerance, dtype))
    _put(opt_f, 0, OPT_F, "impratio", m.opt.impratio)
    _put(opt_f, 0, OPT_F, "meaninertia", m.stat_meaninertia)
    _put(opt_f, 0, OPT_F, "ls_tolerance", m.opt.ls_tolerance)
    _put(opt_f, 0, OPT_F, "magnetic", m.opt.magnetic)
    _put(opt_f, 0, OPT_F, "noslip_tolerance", m.opt.noslip_tolerance)

    eq_i = np.zeros((_pad(m.neq), NEQ_I), np.int32)
    eq_f = np.zeros((_pad(m.neq), NEQ_F))
    for e in range(m.neq):
        obj1, obj2, data, quat2 = _equality_frames(m, e)
        eq_i[e] = (m.eq_type[e], obj1, obj2, m.eq_active0[e])
        eq_f[e] = np.concatenate([data, m.eq_solref[e], m.eq_solimp[e],
                                  [min(m.eq_break_force[e], 1e30), min(m.eq_break_torque[e], 1e30)], quat2])

    _pack_limits_and_drives(m, jnt_i, jnt_f, dof_f)

    sensor_i, sensor_f = pack_sensors(m)
    floats = dict(eq_f=eq_f, body_f=body_f, jnt_f=jnt_f, dof_f=dof_f, q_f=q_f, act_f=act_f, ten_f=ten_f, wrap_f=wrap_f, opt_f=opt_f,
                  sensor_f=sensor_f)
    out = {k: v[None].astype(dtype) for k, v in floats.items()}  # leading axis: shared row
    out.update(eq_i=eq_i, sizes=sizes, body_i=body_i, jnt_i=jnt_i, dof_i=dof_i, act_i=act_i, ten_i=ten_i, wrap_i=wrap_i,
               sensor_i=sensor_i)
    return out


def _pack_wraps(m: Model):
    """(wrap_i, wrap_f): each wrap's type and object; a site's or geom's body and frame in
    it, a geom's radius and its side site's body and position."""
    wrap_i = np.zeros((_pad(m.nwrap), NWRAP_I), np.int32)
    wrap_f = np.zeros((_pad(m.nwrap), NWRAP_F))
    wrap_i[:, WRAP_I.start("sidebody")] = -1
    (gpos, gquat), (spos, _) = geom_poses(m), site_poses(m)
    for k in range(m.nwrap):
        kind, obj = int(m.wrap_type[k]), int(m.wrap_objid[k])
        wrap_i[k, : WRAP_I.start("sidebody")] = (obj, kind, -1)
        _put(wrap_f, k, WRAP_F, "prm", m.wrap_prm[k])
        if kind == WRAP_SITE:
            wrap_i[k, WRAP_I.start("body")] = m.site_bodyid[obj]
            _put(wrap_f, k, WRAP_F, "pos", spos[obj])
        elif kind in (WRAP_SPHERE, WRAP_CYLINDER):
            wrap_i[k, WRAP_I.start("body")] = m.geom_bodyid[obj]
            _put(wrap_f, k, WRAP_F, "pos", gpos[obj])
            _put(wrap_f, k, WRAP_F, "quat", gquat[obj])
            _put(wrap_f, k, WRAP_F, "radius", m.geom_size[obj, 0])
            side = int(round(m.wrap_prm[k]))
            if side >= 0:
                wrap_i[k, WRAP_I.start("sidebody")] = m.site_bodyid[side]
                _put(wrap_f, k, WRAP_F, "sidepos", spos[side])
    return wrap_i, wrap_f


# the sensors that read cacc or cfrc_int, which the post-constraint pass computes
SENSORS_RNE_POST = tuple(S.KINDS[k].code for k in ("accelerometer", "force", "torque", "framelinacc", "frameangacc"))
_DSBL_SENSOR = 8192  # mjtDisableBit's mjDSBL_SENSOR: sensordata is left as it is


def _sensor_sizes(m: Model) -> tuple:
    if m.opt.disableflags & _DSBL_SENSOR:
        return 0, 0
    return m.nsensor, int(np.isin(m.sensor_type, SENSORS_RNE_POST).any())


def _sensor_frame(m: Model, objtype: int, objid: int):
    """(body, pos, quat, size) of a sensor's object or reference frame: a site's, a geom's,
    a body's inertial frame or its own; the world's where there is none."""
    if objtype == S.OBJ_SITE:
        b = m.site_bodyid[objid]
        return (b, *frame_pose(m.site_pos[objid], m.site_quat[objid], m.body_ipos[b], m.body_iquat[b]),
                m.site_size[objid])
    if objtype == S.OBJ_GEOM:
        b = m.geom_bodyid[objid]
        return (b, *frame_pose(m.geom_pos[objid], m.geom_quat[objid], m.body_ipos[b], m.body_iquat[b]),
                np.zeros(3))
    if objtype == S.OBJ_BODY:
        return objid, m.body_ipos[objid], m.body_iquat[objid], np.zeros(3)
    if objtype == S.OBJ_XBODY:
        return objid, np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3)
    return 0, np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3)


def pack_sensors(m: Model):
    """The sensor_i and sensor_f tables."""
    sensor_i = np.zeros((_pad(m.nsensor), SENSOR_I.width), np.int32)
    sensor_f = np.zeros((_pad(m.nsensor), SENSOR_F.width))
    for s in range(m.nsensor):
        objtype, objid = int(m.sensor_objtype[s]), int(m.sensor_objid[s])
        body, pos, quat, size = _sensor_frame(m, objtype, objid)
        refbody, refpos, refquat, _ = _sensor_frame(m, int(m.sensor_reftype[s]), int(m.sensor_refid[s]))
        zone = m.site_type[objid] if objtype == S.OBJ_SITE else 0
        intprm = m.sensor_intprm[s] if len(m.sensor_intprm) else (0, 0, 0)
        sensor_i[s] = (m.sensor_type[s], objtype, objid, body, m.sensor_reftype[s], refbody, m.sensor_adr[s],
                       m.sensor_dim[s], m.sensor_datatype[s], zone, m.sensor_needstage[s], m.sensor_refid[s],
                       *intprm)
        for name, value in (("cutoff", m.sensor_cutoff[s]), ("pos", pos), ("quat", quat), ("size", size),
                            ("refpos", refpos), ("refquat", refquat)):
            _put(sensor_f, s, SENSOR_F, name, value)
    return sensor_i, sensor_f


def _equality_frames(m: Model, e: int):
    """(obj1, obj2, data, quat2) as the kernels read them. Site-based connect and weld
    become constraints between the sites' bodies: connect holds data[:3] (body1 frame) on
    data[3:6] (body2 frame); weld holds data[3:6] (body1) on data[:3] (body2) with
    relpose = site1's orientation and quat2 = site2's, which is MuJoCo's site semantics."""
    data = np.array(m.eq_data[e], dtype=float)
    quat2 = np.array([1.0, 0.0, 0.0, 0.0])
    obj1, obj2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if len(m.eq_objtype) and m.eq_objtype[e] == OBJ_SITE:
        s1, s2 = obj1, obj2
        obj1, obj2 = int(m.site_bodyid[s1]), int(m.site_bodyid[s2])
        if m.eq_type[e] == EQ_CONNECT:
            data[:3], data[3:6] = m.site_pos[s1], m.site_pos[s2]
        else:
            data[:3], data[3:6], data[6:10] = m.site_pos[s2], m.site_pos[s1], m.site_quat[s1]
            quat2 = np.array(m.site_quat[s2], dtype=float)
    return obj1, obj2, data, quat2


def _pack_limits_and_drives(m: Model, jnt_i, jnt_f, dof_f) -> None:
    """Limit-model and drive columns. JNT_LIMITED keeps only MuJoCo's soft limits, so the
    soft-constraint rows skip joints whose limit is another model."""
    for j in range(m.njnt):
        model = int(m.jnt_limit_model[j]) if m.jnt_limited[j] else -1
        jnt_i[j, JNT_LIMIT_MODEL] = model
        jnt_i[j, JNT_LIMITED] = int(model == LIMIT_SOFT)
        for name in ("limit_strength", "limit_stiffness", "limit_damping", "limit_distance", "limit_restitution",
                     "limit_bounce", "limit_acceleration", "cone", "twist"):
            _put(jnt_f, j, JNT_F, name, getattr(m, "jnt_" + name)[j])
    for d in range(m.nv):
        for name in ("drive_stiffness", "drive_damping", "drive_forcelimit", "drive_acceleration"):
            _put(dof_f, d, DOF_F, name, getattr(m, "dof_" + name)[d])


# --- the kernels' tables --------------------------------------------------------------
# Every table the step kernels take is declared once, in KERNEL_TABLES below, in the order
# of the kernels' parameters: their signatures are written from it (physics/step/tables.py)
# and a World allocates its tables from it (physics/data.py). A table declared there reaches
# every stage as ``t.<name>`` with no other list to edit; what fills it is its role's:
MODEL = "model"  # the packed Model (pack_model, collision.driver.pack_collision_model), uploaded
DATA = "data"  # per-env state, allocated zeroed in its declared shape
PROGRAM = "program"  # the World's program (physics/step/program.py) and its registers
IDS = "ids"  # the ids of the envs a launch steps
INT, FLOAT = "int32", "float"  # element types; FLOAT is the World's precision


class Extent(NamedTuple):
    """What the shapes of a World's data tables follow besides its model and envs."""

    model: Model
    num_envs: int
    nefc: int = 0  # constraint rows an env holds (SIZE_NEFC)
    ncon: int = 1  # contacts an env holds
    npair: int = 0  # candidate collision pairs
    pair_rows: tuple = (1, 1)  # the staged narrow phase's per-pair contacts: rows, and contacts a row
    group_sums: bool = False  # rows in efc_Y for a lane group's sums (constraint/primal/lane_group.py)


class KernelTable(NamedTuple):
    """One table of the step kernels: its parameter's ``name``, element type ``dtype`` (INT
    or FLOAT), rank ``ndim`` as the kernels take it, and ``role`` (MODEL, DATA, PROGRAM or
    IDS); a data table's ``shape(extent)``, its (num_envs, ...) rows as the host views them;
    ``flat``: indexed flat, a data table allocated 1-D (FLAT_TABLES), a model table raveled
    (FLAT_MODEL_TABLES)."""

    name: str
    dtype: str
    ndim: int
    role: str
    shape: Callable[[Extent], tuple] | None = None
    flat: bool = False


GROUP_LANES = 32  # a warp: the threads of an env's lane group (constraint/primal/lane_group.py)
GROUP_SUM_WIDTH = 8  # the most values one group sum carries


def group_sum_rows(columns: int) -> int:
    """The rows of efc_Y past an env's matrices that hold its lane group's partial sums."""
    return -(-GROUP_LANES * GROUP_SUM_WIDTH // max(1, columns))


def _efc_y_shape(e: Extent) -> tuple:
    # PGS keeps the rows' dual matrix A = J M^-1 J^T here (nefc x nefc); Newton its
    # nv x nv Hessian's Cholesky factor, and the no-slip pass after it A
    nefc, nv = _pad(e.nefc), _pad(e.model.nv)
    opt = e.model.opt
    columns = nefc if opt.solver == "PGS" else max(nefc, nv) if opt.noslip_iterations > 0 else nv
    return (e.num_envs, max(nefc, nv) + (group_sum_rows(columns) if e.group_sums else 0), columns)


KERNEL_TABLES = (
    KernelTable("sizes", INT, 1, MODEL),
    KernelTable("body_i", INT, 1, MODEL, flat=True),
    KernelTable("jnt_i", INT, 1, MODEL, flat=True),
    KernelTable("dof_i", INT, 1, MODEL, flat=True),
    KernelTable("act_i", INT, 2, MODEL),
    KernelTable("ten_i", INT, 2, MODEL),
    KernelTable("wrap_i", INT, 2, MODEL),
    KernelTable("body_f", FLOAT, 1, MODEL, flat=True),
    KernelTable("jnt_f", FLOAT, 1, MODEL, flat=True),
    KernelTable("dof_f", FLOAT, 1, MODEL, flat=True),
    KernelTable("q_f", FLOAT, 3, MODEL),
    KernelTable("act_f", FLOAT, 3, MODEL),
    KernelTable("ten_f", FLOAT, 3, MODEL),
    KernelTable("wrap_f", FLOAT, 3, MODEL),
    KernelTable("opt_f", FLOAT, 3, MODEL),
    KernelTable("sensor_i", INT, 2, MODEL),
    KernelTable("sensor_f", FLOAT, 3, MODEL),
    # data the step reads (controls, applied forces), then its state, then what it computes
    KernelTable("ctrl", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nu))),
    KernelTable("qfrc_applied", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nv))),
    KernelTable("qpos", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nq))),
    KernelTable("qvel", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nv))),
    KernelTable("qacc", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nv))),
    KernelTable("qpos_start", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nq))),
    KernelTable("body_d", FLOAT, 1, DATA, lambda e: (e.num_envs, e.model.nbody, NBODY_D), flat=True),
    KernelTable("jnt_d", FLOAT, 1, DATA, lambda e: (e.num_envs, _pad(e.model.njnt), NJNT_D), flat=True),
    KernelTable("dof_d", FLOAT, 1, DATA, lambda e: (e.num_envs, _pad(e.model.nv), NDOF_D), flat=True),
    KernelTable("dof_s", FLOAT, 1, DATA, lambda e: (e.num_envs, _pad(e.model.nv), NDOF_S), flat=True),
    KernelTable("qM", FLOAT, 1, DATA, lambda e: (e.num_envs, _pad(e.model.nM)), flat=True),
    KernelTable("qLD", FLOAT, 1, DATA, lambda e: (e.num_envs, _pad(e.model.nM)), flat=True),
    KernelTable("act_d", FLOAT, 3, DATA, lambda e: (e.num_envs, _pad(e.model.nu), NACT_D)),
    # a tendon's row goes on with its Jacobian (TEN_D's tail: a spatial tendon's moment arms
    # change with the configuration), in ten_d rather than a table of its own: the staged
    # step kernel's arguments are at Taichi's limit of 64
    KernelTable("ten_d", FLOAT, 3, DATA, lambda e: (e.num_envs, _pad(e.model.ntendon), NTEN_D + _pad(e.model.nv))),
    KernelTable("efc_J", FLOAT, 3, DATA, lambda e: (e.num_envs, _pad(e.nefc), _pad(e.model.nv))),
    KernelTable("efc_Y", FLOAT, 3, DATA, _efc_y_shape),
    KernelTable("efc_f", FLOAT, 3, DATA, lambda e: (e.num_envs, _pad(e.nefc), NEFC_F)),
    KernelTable("efc_n", INT, 2, DATA, lambda e: (e.num_envs, NEFC_N)),
    KernelTable("sensordata", FLOAT, 2, DATA, lambda e: (e.num_envs, _pad(e.model.nsensordata))),
    # the collision stage's (physics/collision/); pair_hit holds the broad phase's outcomes
    KernelTable("pair_i", INT, 2, MODEL),
    KernelTable("pair_f", FLOAT, 3, MODEL),
    KernelTable("geom_i", INT, 2, MODEL),
    KernelTable("geom_f", FLOAT, 3, MODEL),
    KernelTable("geom_x", FLOAT, 3, DATA, lambda e: (e.num_envs, _pad(e.model.ngeom), GEOM_X.width)),
    KernelTable("con_f", FLOAT, 3, DATA, lambda e: (e.num_envs, e.ncon, CON_F.width)),
    KernelTable("con_i", INT, 3, DATA, lambda e: (e.num_envs, e.ncon, CON_I.width)),
    KernelTable("con_n", INT, 2, DATA, lambda e: (e.num_envs, CON_N.width)),
    KernelTable("pair_hit", INT, 2, DATA, lambda e: (e.num_envs, _pad(e.npair))),
    KernelTable("pair_con_f", FLOAT, 3, DATA, lambda e: (*e.pair_rows, CON_F.width)),
    KernelTable("pair_con_i", INT, 3, DATA, lambda e: (*e.pair_rows, CON_I.width)),
    KernelTable("pair_con_n", INT, 2, DATA, lambda e: (e.pair_rows[0], CON_N.width)),
    # equality constraints
    KernelTable("eq_i", INT, 2, MODEL),
    KernelTable("eq_f", FLOAT, 3, MODEL),
    KernelTable("eq_d", INT, 3, DATA, lambda e: (e.num_envs, _pad(e.model.neq), EQ_D.width)),
    KernelTable("prog_i", INT, 1, PROGRAM),
    KernelTable("prog_f", FLOAT, 1, PROGRAM),
    KernelTable("reg", FLOAT, 2, PROGRAM),
    KernelTable("env_ids", INT, 1, IDS),
)


def kernel_tables(role: str | None = None) -> tuple:
    """The tables KERNEL_TABLES declares as it stands, or those of one ``role``."""
    return tuple(t for t in KERNEL_TABLES if role is None or t.role == role)


# Data tables that the kernels index flat (per-body, per-joint and per-dof rows; the
# sparse mass matrix and its factor as rows of one column): env w's row r, column c is
# entry w * stride + r * columns + c. Indexing a (num_envs, rows, columns) ndarray costs a
# reload of the array's shape and two multiplications after every store in the loop
# (LLVM cannot prove the store leaves the shape alone); the flat index adds values held
# in registers: the body stages run 1.1-1.8x faster on flat rows. One trap: Taichi makes
# `table[i] += v` an atomic compare-and-swap loop unless the index starts with the
# parallel loop's variable, which a flat index never does (nor any index inside the
# constraint stage, a function of its own with w an argument), so data tables are updated
# as `table[i] = table[i] + v` (each env is one thread's). Flat tables are allocated 1-D;
# data_shapes gives the (num_envs, rows, columns) the host views them as.
FLAT_TABLES = tuple(t.name for t in KERNEL_TABLES if t.role == DATA and t.flat)
# Model tables of the kinematic tree, read in every stage's inner loops (a dof's parent,
# a body's joints, their frames and inertias): indexed flat as row * columns + column, for
# the same reason. The float ones hold one row set, or one per env once World.set_param
# has made them per-env; a kernel finds its env's at (w % sets) * stride.
FLAT_MODEL_TABLES = tuple(t.name for t in KERNEL_TABLES if t.role == MODEL and t.flat)
# The other per-env data tables, (num_envs, ..., n) ndarrays: generalized coordinates,
# controls, the constraint rows and counts, the contacts. Kernels index them through
# lanes.env_index and their accessors, which the interleaved layout (physics/runtime/lanes.py)
# reshapes to (num_envs / LANES, ..., n * LANES).
ENV_TABLES = tuple(t.name for t in KERNEL_TABLES if t.role == DATA and not t.flat)


def data_shapes(m: Model, num_envs: int, nefc_capacity: int = 0, ncon: int = 1, npair: int = 0,
                pair_rows: tuple = (1, 1), group_sums: bool = False) -> dict:
    """Shapes of the per-world data tables, by name, as declared in KERNEL_TABLES
    (FLAT_TABLES are allocated 1-D with as many entries and viewed with these shapes on
    the host); the arguments as :class:`Extent`'s."""
    extent = Extent(m, num_envs, nefc_capacity, ncon, npair, pair_rows, group_sums)
    return {t.name: t.shape(extent) for t in kernel_tables(DATA)}
