"""The static model: a host-side description of a multibody system in numpy arrays.

Names, orderings and meanings follow MuJoCo's compiled ``mjModel`` so that every
field can be compared with the ``mujoco`` package by name. Arrays are float64 on the
host; a :class:`physics.World` casts them to its precision when it uploads them.

A ``Model`` is built only by :meth:`physics.ModelBuilder.finalize` (which the MJCF and
URDF importers call) and is immutable afterwards: its arrays are made read-only.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import numpy as np

# Joint types, numbered as mjtJoint.
JNT_FREE, JNT_BALL, JNT_SLIDE, JNT_HINGE = 0, 1, 2, 3
JNT_NQ = {JNT_FREE: 7, JNT_BALL: 4, JNT_SLIDE: 1, JNT_HINGE: 1}
JNT_NV = {JNT_FREE: 6, JNT_BALL: 3, JNT_SLIDE: 1, JNT_HINGE: 1}

# Geom types, numbered as mjtGeom.
GEOM_PLANE, GEOM_HFIELD, GEOM_SPHERE, GEOM_CAPSULE, GEOM_ELLIPSOID = 0, 1, 2, 3, 4
GEOM_CYLINDER, GEOM_BOX, GEOM_MESH = 5, 6, 7

# Integrators. EULER, RK4 and IMPLICITFAST are numbered as mjtIntegrator (MuJoCo's full
# implicit integrator, 2 there, is not supported); the implicit spring-damper integrator
# treats joint stiffness and damping implicitly (no MuJoCo counterpart).
INT_EULER, INT_RK4, INT_IMPLICIT_SPRING_DAMPER, INT_IMPLICITFAST = 0, 1, 2, 3
INTEGRATORS = {"Euler": INT_EULER, "RK4": INT_RK4, "implicitspringdamper": INT_IMPLICIT_SPRING_DAMPER,
               "implicitfast": INT_IMPLICITFAST}

# Equality constraint types, numbered as mjtEq.
EQ_CONNECT, EQ_WELD, EQ_JOINT, EQ_TENDON = 0, 1, 2, 3
# mjtObj: what an equality constraint's obj1id/obj2id name
OBJ_BODY, OBJ_JOINT, OBJ_SITE, OBJ_TENDON = 1, 3, 6, 18

# Joint-limit models (jnt_limit_model): MuJoCo's soft constraint, the normalized cubic
# penalty, PhysX's hard limit (restitution, contact distance) and PhysX's spring limit.
LIMIT_SOFT, LIMIT_CUBIC, LIMIT_HARD, LIMIT_SPRING = 0, 1, 2, 3
LIMIT_MODELS = {"soft": LIMIT_SOFT, "cubic": LIMIT_CUBIC, "hard": LIMIT_HARD, "spring": LIMIT_SPRING}

# Actuator transmission, gain, bias and activation-dynamics types, numbered as in MuJoCo.
TRN_JOINT, TRN_TENDON = 0, 3
# Tendon wrap types, numbered as mjtWrap.
WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER = 1, 2, 3, 4, 5
DYN_NONE, DYN_INTEGRATOR, DYN_FILTER, DYN_FILTEREXACT = 0, 1, 2, 3
DYNAMICS = {"none": DYN_NONE, "integrator": DYN_INTEGRATOR, "filter": DYN_FILTER, "filterexact": DYN_FILTEREXACT}
GAIN_FIXED, GAIN_AFFINE = 0, 1
BIAS_NONE, BIAS_AFFINE = 0, 1

# Disable flags (bits as mjtDisableBit) that the pipeline honours. Springs and dampers
# (MuJoCo's two passive-force flags) are switched off together.
DSBL_CONSTRAINT, DSBL_EQUALITY, DSBL_FRICTIONLOSS, DSBL_LIMIT, DSBL_CONTACT = 1, 2, 4, 8, 16
DSBL_SPRING, DSBL_DAMPER, DSBL_GRAVITY, DSBL_CLAMPCTRL = 32, 64, 128, 256
DSBL_WARMSTART, DSBL_ACTUATION, DSBL_REFSAFE, DSBL_EULERDAMP = 512, 2048, 4096, 1 << 15
DSBL_ISLAND = 1 << 18
DSBL_PASSIVE = DSBL_SPRING | DSBL_DAMPER


def _f(*shape):
    return field(default_factory=lambda: np.zeros(shape, dtype=np.float64))


def _i(*shape):
    return field(default_factory=lambda: np.zeros(shape, dtype=np.int32))


@dataclass
class Option:
    """Simulation options (MuJoCo's ``mjOption``)."""

    timestep: float = 0.002  # [s]
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))  # [m/s^2]
    wind: np.ndarray = field(default_factory=lambda: np.zeros(3))  # [m/s]
    magnetic: np.ndarray = field(default_factory=lambda: np.array([0.0, -0.5, 0.0]))  # what magnetometers read [T]
    density: float = 0.0  # fluid density [kg/m^3]
    viscosity: float = 0.0  # fluid viscosity [Pa s]
    integrator: int = INT_EULER
    disableflags: int = 0
    enableflags: int = 0
    # Constraint-solver settings, named as mjOption.
    solver: str = "Newton"  # PGS, CG or Newton
    cone: str = "pyramidal"  # pyramidal or elliptic friction cones
    jacobian: str = "auto"  # dense, sparse or auto
    iterations: int = 100
    tolerance: float = 1e-8
    ls_iterations: int = 50
    ls_tolerance: float = 0.01
    noslip_iterations: int = 0
    noslip_tolerance: float = 1e-6
    impratio: float = 1.0
    # friction loss: "constraint" rows as MuJoCo, or "smooth" (f tanh(1000 qvel)) forces
    frictionloss: str = "constraint"

    def __setattr__(self, name, value):
        # A Model's options are part of the Model, so they are frozen with it; the
        # builder's own Option stays writable (dataclasses.replace makes edited copies).
        if getattr(self, "_frozen", False):
            raise AttributeError(f"Model options are immutable; cannot set {name!r}")
        object.__setattr__(self, name, value)

    def freeze(self) -> "Option":
        object.__setattr__(self, "_frozen", True)
        return self


@dataclass
class Model:
    """A compiled multibody model. Shapes are given per field; body 0 is the world."""

    name: str = "model"
    opt: Option = field(default_factory=Option)

    # sizes
    nq: int = 0  # generalized coordinates
    nv: int = 0  # degrees of freedom
    nbody: int = 1
    njnt: int = 0
    ngeom: int = 0
    nsite: int = 0
    nu: int = 0  # actuators
    ntendon: int = 0
    nwrap: int = 0
    nkey: int = 0
    neq: int = 0  # equality constraints
    nM: int = 0  # nonzeros of the tree-sparse mass matrix's lower triangle
    nsensor: int = 0
    nsensordata: int = 0  # sensordata entries: the sensors' dims summed
    nmocap: int = 0  # mocap bodies

    # bodies (nbody,)
    body_parentid: np.ndarray = _i(1)
    body_rootid: np.ndarray = _i(1)  # top ancestor below the world
    body_weldid: np.ndarray = _i(1)  # top ancestor welded to this body
    body_jntnum: np.ndarray = _i(1)
    body_jntadr: np.ndarray = _i(1)  # -1 if no joints
    body_dofnum: np.ndarray = _i(1)
    body_dofadr: np.ndarray = _i(1)  # -1 if no dofs
    # index of the body's pose in mjData's mocap_pos/mocap_quat, -1 if not a mocap body
    body_mocapid: np.ndarray = field(default_factory=lambda: np.full(1, -1, np.int32))
    body_pos: np.ndarray = _f(1, 3)  # frame offset from parent frame [m]
    body_quat: np.ndarray = _f(1, 4)  # frame orientation relative to parent (w, x, y, z)
    body_ipos: np.ndarray = _f(1, 3)  # centre of mass in body frame [m]
    body_iquat: np.ndarray = _f(1, 4)  # principal inertia frame in body frame
    body_mass: np.ndarray = _f(1)  # [kg]
    body_gravcomp: np.ndarray = _f(1)  # fraction of the body's weight held up at its centre of mass
    body_subtreemass: np.ndarray = _f(1)  # [kg]
    body_inertia: np.ndarray = _f(1, 3)  # principal moments about the com [kg m^2]
    body_name: list = field(default_factory=lambda: ["world"])
    # MuJoCo's body_simple: 1 if MuJoCo keeps the mass matrix rows of the body's dofs diagonal,
    # 2 if moreover they are all sliders (physics/compiler/mass_matrix.py), else 0
    body_simple: np.ndarray = _i(1)
    # inverse weights at qpos0 (translation, rotation), scaling soft constraints
    body_invweight0: np.ndarray = _f(1, 2)
    stat_meaninertia: float = 1.0  # mean diagonal of M at qpos0

    # joints (njnt,)
    jnt_type: np.ndarray = _i(0)
    jnt_bodyid: np.ndarray = _i(0)
    jnt_qposadr: np.ndarray = _i(0)
    jnt_dofadr: np.ndarray = _i(0)
    jnt_pos: np.ndarray = _f(0, 3)  # anchor in body frame [m]
    jnt_axis: np.ndarray = _f(0, 3)  # unit axis in body frame; (0, 0, 1) for ball/free
    jnt_stiffness: np.ndarray = _f(0)  # [N m/rad] or [N/m]
    jnt_limited: np.ndarray = _i(0)
    jnt_actfrclimited: np.ndarray = _i(0)  # 1: the actuators' total force on the joint is clamped
    jnt_actgravcomp: np.ndarray = _i(0)  # 1: gravity compensation on its dofs is an actuator force
    jnt_actfrcrange: np.ndarray = _f(0, 2)
    jnt_range: np.ndarray = _f(0, 2)  # [rad] or [m]; (0, max swing) for ball
    jnt_margin: np.ndarray = _f(0)
    jnt_solref: np.ndarray = _f(0, 2)
    jnt_solimp: np.ndarray = _f(0, 5)
    jnt_name: list = field(default_factory=list)
    # limit models beyond MuJoCo's (physics/smooth/limits.py); used where jnt_limited is set
    jnt_limit_model: np.ndarray = _i(0)  # LIMIT_SOFT, LIMIT_CUBIC, LIMIT_HARD or LIMIT_SPRING
    jnt_limit_strength: np.ndarray = _f(0)  # cubic: s [J]
    jnt_limit_stiffness: np.ndarray = _f(0)  # spring: [N m/rad] or [N/m] (per inverse inertia if acceleration)
    jnt_limit_damping: np.ndarray = _f(0)  # spring: [N m s/rad] or [N s/m]
    jnt_limit_distance: np.ndarray = _f(0)  # hard, spring: contact distance where the row starts [rad] or [m]
    jnt_limit_restitution: np.ndarray = _f(0)  # hard: rebound speed / approach speed
    jnt_limit_bounce: np.ndarray = _f(0)  # hard: approach speed below which there is no rebound
    jnt_limit_acceleration: np.ndarray = _i(0)  # spring: gains scaled by the dof's inertia
    jnt_cone: np.ndarray = _f(0, 2)  # ball, hard or spring: swing limits about body y and z [rad]
    jnt_twist: np.ndarray = _f(0, 2)  # ball, hard or spring: twist range about body x [rad]

    # dofs (nv,)
    dof_bodyid: np.ndarray = _i(0)
    dof_jntid: np.ndarray = _i(0)
    dof_parentid: np.ndarray = _i(0)  # parent dof in the tree, -1 at a root
    dof_Madr: np.ndarray = _i(0)  # start of row i of sparse qM: (i, parent(i), parent(parent(i)), ...)
    dof_armature: np.ndarray = _f(0)  # [kg m^2] or [kg]
    dof_damping: np.ndarray = _f(0)  # [N m s/rad] or [N s/m]
    dof_frictionloss: np.ndarray = _f(0)  # [N m] or [N]
    dof_invweight0: np.ndarray = _f(0)  # inverse inertia of the dof at qpos0
    dof_solref: np.ndarray = _f(0, 2)  # friction-loss constraint (joint solreffriction)
    dof_solimp: np.ndarray = _f(0, 5)
    # PD drives (physics/smooth/drives.py): stiffness (q* - q) + damping (qd* - qd), clamped
    dof_drive_stiffness: np.ndarray = _f(0)  # [N m/rad] or [N/m]; per inverse inertia if acceleration
    dof_drive_damping: np.ndarray = _f(0)  # [N m s/rad] or [N s/m]
    dof_drive_forcelimit: np.ndarray = _f(0)  # [N m] or [N]; inf: unlimited
    dof_drive_acceleration: np.ndarray = _i(0)  # gains scaled by 1 / dof_invweight0

    # generalized coordinates (nq,)
    qpos0: np.ndarray = _f(0)  # reference configuration (joint ref)
    qpos_spring: np.ndarray = _f(0)  # spring rest configuration (joint springref)

    # geoms (ngeom,)
    geom_type: np.ndarray = _i(0)
    geom_bodyid: np.ndarray = _i(0)
    geom_contype: np.ndarray = _i(0)
    geom_conaffinity: np.ndarray = _i(0)
    geom_condim: np.ndarray = _i(0)
    geom_size: np.ndarray = _f(0, 3)  # type-dependent sizes [m]
    geom_pos: np.ndarray = _f(0, 3)  # in body frame [m]
    geom_quat: np.ndarray = _f(0, 4)  # in body frame
    geom_friction: np.ndarray = _f(0, 3)  # sliding, torsional, rolling
    geom_margin: np.ndarray = _f(0)  # [m]
    geom_gap: np.ndarray = _f(0)  # [m]
    geom_solref: np.ndarray = _f(0, 2)
    geom_solimp: np.ndarray = _f(0, 5)
    # a contact takes the higher-priority geom's condim, friction, solref and solimp; at
    # equal priority solmix weighs the two geoms' solref and solimp
    geom_priority: np.ndarray = _i(0)
    geom_solmix: np.ndarray = _f(0)
    geom_rgba: np.ndarray = _f(0, 4)
    geom_name: list = field(default_factory=list)
    geom_dataid: np.ndarray = _i(0)  # the height field of an hfield geom, the mesh of a mesh geom, else -1

    # height fields (nhfield,), as mjModel: elevation samples normalized to [0, 1], row r
    # (along y, from -y) and column c (along x) at hfield_adr + r * ncol + c; a sample is
    # at height data * size[2] above the geom frame, the solid reaches down to -size[3]
    nhfield: int = 0
    nhfielddata: int = 0
    hfield_size: np.ndarray = _f(0, 4)  # radius_x, radius_y, elevation_z, base_z [m]
    hfield_nrow: np.ndarray = _i(0)
    hfield_ncol: np.ndarray = _i(0)
    hfield_adr: np.ndarray = _i(0)
    hfield_data: np.ndarray = _f(0)
    hfield_name: list = field(default_factory=list)

    # meshes (nmesh,), as mjModel: vertices in the mesh's frame (centred at its centre of
    # mass, along its principal axes; float32 values), triangles, and the convex hull that
    # collision uses: its vertices (indices into the mesh's own vertices) and its graph,
    # laid out as mjModel.mesh_graph (counts, vert_edgeadr, vert_globalid, edge_localid,
    # face_globalid; physics/compiler/mesh.py, hull_graph)
    nmesh: int = 0
    mesh_vertadr: np.ndarray = _i(0)
    mesh_vertnum: np.ndarray = _i(0)
    mesh_vert: np.ndarray = _f(0, 3)
    mesh_faceadr: np.ndarray = _i(0)
    mesh_facenum: np.ndarray = _i(0)
    mesh_face: np.ndarray = _i(0, 3)
    mesh_hulladr: np.ndarray = _i(0)
    mesh_hullnum: np.ndarray = _i(0)
    mesh_hull: np.ndarray = _i(0)
    mesh_graphadr: np.ndarray = _i(0)
    mesh_graph: np.ndarray = _i(0)
    mesh_pos: np.ndarray = _f(0, 3)  # the mesh frame in the frame its file was written in
    mesh_quat: np.ndarray = _f(0, 4)
    mesh_name: list = field(default_factory=list)
    # trees over the triangles of the meshes that rays see (physics/compiler/mesh_bvh.py):
    # a mesh's first node and node count (-1, 0: no tree); a node's box in the mesh frame
    # (min xyz, max xyz) and (first, count): its children first and first + 1 of the mesh's
    # nodes (count 0), or a leaf's triangles bvh_face[mesh_faceadr + first:][:count];
    # bvh_face, laid out as mesh_face: each mesh's triangle ids (from 0) leaf by leaf
    nbvh: int = 0
    mesh_bvhadr: np.ndarray = _i(0)
    mesh_bvhnum: np.ndarray = _i(0)
    bvh_box: np.ndarray = _f(0, 6)
    bvh_node: np.ndarray = _i(0, 2)
    bvh_face: np.ndarray = _i(0)

    # sites (nsite,)
    site_bodyid: np.ndarray = _i(0)
    site_pos: np.ndarray = _f(0, 3)
    site_quat: np.ndarray = _f(0, 4)
    site_size: np.ndarray = _f(0, 3)
    site_name: list = field(default_factory=list)
    site_type: np.ndarray = _i(0)  # mjtGeom: the shape of a touch sensor's zone

    # sensors (nsensor,), as mjModel (physics/sensors.py computes them)
    sensor_type: np.ndarray = _i(0)  # mjtSensor
    sensor_objtype: np.ndarray = _i(0)  # mjtObj of what is sensed
    sensor_objid: np.ndarray = _i(0)
    sensor_reftype: np.ndarray = _i(0)  # mjtObj of the reference frame, 0 if none
    sensor_refid: np.ndarray = _i(0)  # -1 if none
    sensor_needstage: np.ndarray = _i(0)  # mjtStage: 1 position, 2 velocity, 3 acceleration
    sensor_datatype: np.ndarray = _i(0)  # mjtDataType: real 0, positive 1, axis 2, quaternion 3
    sensor_dim: np.ndarray = _i(0)
    sensor_adr: np.ndarray = _i(0)  # first entry in sensordata
    sensor_cutoff: np.ndarray = _f(0)  # 0: none; else the value is clipped to it
    sensor_noise: np.ndarray = _f(0)  # standard deviation, kept for the user as MuJoCo keeps it
    # a contact sensor's data fields (bits, compiler.sensors.CONTACT_DATA), reduction
    # (CONTACT_REDUCE) and slots; zeros for the others (MuJoCo's sensor_intprm)
    sensor_intprm: np.ndarray = _i(0, 3)
    sensor_name: list = field(default_factory=list)

    # tendons (ntendon,), fixed or spatial, and their wraps (nwrap,): a fixed tendon's are
    # joints, a spatial one's a path of sites, wrapping geoms and pulleys
    tendon_adr: np.ndarray = _i(0)
    tendon_num: np.ndarray = _i(0)
    tendon_limited: np.ndarray = _i(0)
    tendon_range: np.ndarray = _f(0, 2)  # [m]
    tendon_stiffness: np.ndarray = _f(0)
    tendon_damping: np.ndarray = _f(0)
    tendon_frictionloss: np.ndarray = _f(0)
    tendon_lengthspring: np.ndarray = _f(0, 2)  # spring dead band (low, high) [m]
    tendon_length0: np.ndarray = _f(0)  # length at qpos0 [m]
    tendon_name: list = field(default_factory=list)
    tendon_invweight0: np.ndarray = _f(0)
    tendon_margin: np.ndarray = _f(0)
    tendon_solref_lim: np.ndarray = _f(0, 2)
    tendon_solimp_lim: np.ndarray = _f(0, 5)
    tendon_solref_fri: np.ndarray = _f(0, 2)
    tendon_solimp_fri: np.ndarray = _f(0, 5)
    wrap_type: np.ndarray = _i(0)  # mjtWrap: WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER
    wrap_objid: np.ndarray = _i(0)  # joint, site or geom id (-1 for a pulley)
    wrap_prm: np.ndarray = _f(0)  # joint: coefficient; geom: side site id or -1; pulley: divisor

    # actuators (nu,)
    actuator_trntype: np.ndarray = _i(0)
    actuator_trnid: np.ndarray = _i(0)  # joint or tendon id
    actuator_gaintype: np.ndarray = _i(0)
    actuator_biastype: np.ndarray = _i(0)
    actuator_gainprm: np.ndarray = _f(0, 10)
    actuator_biasprm: np.ndarray = _f(0, 10)
    actuator_gear: np.ndarray = _f(0, 6)
    actuator_ctrllimited: np.ndarray = _i(0)
    actuator_ctrlrange: np.ndarray = _f(0, 2)
    actuator_forcelimited: np.ndarray = _i(0)
    actuator_forcerange: np.ndarray = _f(0, 2)
    actuator_name: list = field(default_factory=list)
    # activation dynamics (mjtDyn): none 0, integrator 1, filter 2, filterexact 3; a stateful
    # actuator holds one activation, act[actuator_actadr], which its gain multiplies instead
    # of ctrl (the next step's, with actearly)
    na: int = 0
    actuator_dyntype: np.ndarray = _i(0)
    actuator_dynprm: np.ndarray = _f(0, 10)  # dynprm[0]: a filter's time constant [s]
    actuator_actadr: np.ndarray = _i(0)  # -1: stateless
    actuator_actnum: np.ndarray = _i(0)
    actuator_actlimited: np.ndarray = _i(0)
    actuator_actrange: np.ndarray = _f(0, 2)
    actuator_actearly: np.ndarray = _i(0)

    # keyframes (nkey,)
    key_qpos: np.ndarray = _f(0, 0)
    key_qvel: np.ndarray = _f(0, 0)
    key_ctrl: np.ndarray = _f(0, 0)
    key_act: np.ndarray = _f(0, 0)  # (nkey, na)
    key_mpos: np.ndarray = _f(0, 0)  # (nkey, 3 nmocap): the mocap bodies' positions, in mocap order
    key_mquat: np.ndarray = _f(0, 0)  # (nkey, 4 nmocap): their orientations, normalized
    key_name: list = field(default_factory=list)

    # explicit contact pairs (npair,), with their own parameters, and body pairs that never
    # collide (nexclude,), as MJCF <contact> <pair> and <exclude>
    pair_geom1: np.ndarray = _i(0)
    pair_geom2: np.ndarray = _i(0)
    pair_dim: np.ndarray = _i(0)
    pair_friction: np.ndarray = _f(0, 5)
    pair_solref: np.ndarray = _f(0, 2)
    pair_solimp: np.ndarray = _f(0, 5)
    pair_margin: np.ndarray = _f(0)
    pair_gap: np.ndarray = _f(0)
    pair_name: list = field(default_factory=list)
    exclude_body1: np.ndarray = _i(0)
    exclude_body2: np.ndarray = _i(0)

    # equality constraints (neq,), as mjModel: connect and weld join bodies (obj2 0 is the
    # world), joint couples joints and tendon fixed tendons (obj2 -1: the first held at a
    # polynomial's constant)
    eq_type: np.ndarray = _i(0)
    eq_obj1id: np.ndarray = _i(0)
    eq_obj2id: np.ndarray = _i(0)
    eq_active0: np.ndarray = _i(0)
    eq_solref: np.ndarray = _f(0, 2)
    eq_solimp: np.ndarray = _f(0, 5)
    # connect: anchor in body1, anchor in body2; weld: anchor in body2, anchor in body1,
    # relative orientation (4), torquescale; joint, tendon: polynomial coefficients (5)
    eq_data: np.ndarray = _f(0, 11)
    # breakable constraints: the constraint turns off in an env when its force [N] or torque
    # [N m] exceeds these (inf: unbreakable)
    eq_break_force: np.ndarray = _f(0)
    eq_break_torque: np.ndarray = _f(0)
    eq_objtype: np.ndarray = _i(0)  # OBJ_BODY or OBJ_SITE (connect, weld), OBJ_JOINT, OBJ_TENDON
    eq_name: list = field(default_factory=list)

    # Rendering-only elements, kept as parsed: lists of dicts (material, texture,
    # camera, light); they do not affect dynamics.
    visual: dict = field(default_factory=dict)

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"Model is immutable; cannot set {name!r}")
        object.__setattr__(self, name, value)

    def freeze(self) -> "Model":
        object.__setattr__(self, "_frozen", True)
        return self

    def with_options(self, **changes) -> "Model":
        """A copy of this model whose options differ by ``changes`` (the arrays are
        shared: they are read-only). Example: ``model.with_options(timestep=0.001)``."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(Option)})
        if unknown:
            raise AttributeError(f"unknown option(s) {unknown}; options are {[f.name for f in dataclasses.fields(Option)]}")
        opt = copy.deepcopy(self.opt)
        object.__setattr__(opt, "_frozen", False)
        for key, value in changes.items():
            setattr(opt, key, np.asarray(value, dtype=float) if isinstance(getattr(opt, key), np.ndarray) else value)
        out = copy.copy(self)
        object.__setattr__(out, "opt", opt.freeze())
        return out

    # --- name lookups -------------------------------------------------------------
    def body(self, name: str) -> int:
        return _lookup(self.body_name, name, "body")

    def joint(self, name: str) -> int:
        return _lookup(self.jnt_name, name, "joint")

    def actuator(self, name: str) -> int:
        return _lookup(self.actuator_name, name, "actuator")

    def geom(self, name: str) -> int:
        return _lookup(self.geom_name, name, "geom")

    def site(self, name: str) -> int:
        return _lookup(self.site_name, name, "site")

    def hfield(self, name: str) -> int:
        return _lookup(self.hfield_name, name, "hfield")

    def sensor(self, name: str) -> int:
        return _lookup(self.sensor_name, name, "sensor")

    # --- the articulation (Newton) view ----------------------------------------------
    @property
    def joint_q_start(self) -> np.ndarray:
        """(njnt + 1,) start of each joint's coordinates in ``joint_q``."""
        return np.append(self.jnt_qposadr, self.nq).astype(np.int32)

    @property
    def joint_qd_start(self) -> np.ndarray:
        """(njnt + 1,) start of each joint's dofs in ``joint_qd``."""
        return np.append(self.jnt_dofadr, self.nv).astype(np.int32)

    @property
    def joint_dof_dim(self) -> np.ndarray:
        """(njnt, 2) number of linear and angular dofs of each joint."""
        lin = {JNT_FREE: 3, JNT_BALL: 0, JNT_SLIDE: 1, JNT_HINGE: 0}
        ang = {JNT_FREE: 3, JNT_BALL: 3, JNT_SLIDE: 0, JNT_HINGE: 1}
        return np.array([[lin[t], ang[t]] for t in self.jnt_type], dtype=np.int32).reshape(-1, 2)

    @property
    def joint_axis(self) -> np.ndarray:
        """(nv, 3) per-dof axis in the child body frame (world axes for free translation)."""
        axes = np.zeros((self.nv, 3))
        for j, t in enumerate(self.jnt_type):
            a = self.jnt_dofadr[j]
            if t in (JNT_HINGE, JNT_SLIDE):
                axes[a] = self.jnt_axis[j]
            else:
                k = 3 if t == JNT_FREE else 0
                if t == JNT_FREE:
                    axes[a : a + 3] = np.eye(3)
                axes[a + k : a + k + 3] = np.eye(3)
        return axes

    @property
    def joint_limit_lower(self) -> np.ndarray:
        """(nv,) lower limit per dof; -inf where unlimited."""
        return self._limit(0)

    @property
    def joint_limit_upper(self) -> np.ndarray:
        """(nv,) upper limit per dof; +inf where unlimited."""
        return self._limit(1)

    def _limit(self, side: int) -> np.ndarray:
        out = np.full(self.nv, -np.inf if side == 0 else np.inf)
        for j, t in enumerate(self.jnt_type):
            if self.jnt_limited[j] and t in (JNT_HINGE, JNT_SLIDE):
                out[self.jnt_dofadr[j]] = self.jnt_range[j, side]
        return out


def _lookup(names: list, name: str, kind: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        raise KeyError(f"no {kind} named {name!r}; known: {[n for n in names if n]}") from None
