"""Compile a ModelBuilder into a Model: orderings, addresses, derived quantities, checks."""

from __future__ import annotations

import copy

import numpy as np

from .. import model as M
from ..compiler.integers import int32
from ..compiler.invweight import actuator_dampratios, invweight0, tendon_lengths0
from ..compiler.mass_matrix import body_simple
from ..compiler.mesh_bvh import mesh_trees
from ..compiler.sensors import sensor_arrays
from ..errors import ModelError
from ..compiler.transforms import quat_conj, quat_mul, quat_rotate

_MINVAL = 1e-15


def compile_model(b, *, total_mass=None, bounds=(0.0, 0.0, False)) -> M.Model:
    nbody = len(b._bodies)
    for i, body in enumerate(b._bodies[1:], start=1):
        if body.parent >= i:
            raise ModelError("a body's parent must be added before it", element=f"body '{body.name}'")

    # Joints and geoms are stored by body, in the order added (MuJoCo's compiled order).
    # Actuators and tendons may name joints by the id add_joint returned, which is the
    # order of addition; map those ids to the compiled (sorted) order.
    jnt_order = sorted(range(len(b._joints)), key=lambda i: b._joints[i].body)
    jnt_compiled_id = {old: new for new, old in enumerate(jnt_order)}
    joints = [b._joints[i] for i in jnt_order]
    geoms = sorted(b._geoms, key=lambda g: g.body)
    jnt_names = [j.name for j in joints]

    body_mass, body_ipos, body_iquat, body_inertia = [], [], [], []
    for i in range(nbody):
        mass, com, iquat, moments = b._body_mass_properties(i) if i else (0.0, np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3))
        body_mass.append(mass)
        body_ipos.append(com)
        body_iquat.append(iquat)
        body_inertia.append(moments)
    body_mass = np.array(body_mass, dtype=float)
    body_inertia = np.array(body_inertia, dtype=float)
    _bound_inertia(body_mass, body_inertia, *bounds)
    if total_mass is not None:
        scale = total_mass / max(body_mass.sum(), _MINVAL)
        body_mass *= scale
        body_inertia *= scale

    parent = np.array([bd.parent for bd in b._bodies], dtype=np.int32)
    parent[0] = 0
    _check_inertia(b, body_mass, body_inertia)

    # joints, dofs and coordinates
    njnt = len(joints)
    jnt_type = np.array([j.type for j in joints], dtype=np.int32)
    jnt_bodyid = np.array([j.body for j in joints], dtype=np.int32)
    nq_j = np.array([M.JNT_NQ[t] for t in jnt_type], dtype=np.int32)
    nv_j = np.array([M.JNT_NV[t] for t in jnt_type], dtype=np.int32)
    jnt_qposadr = (np.cumsum(nq_j) - nq_j).astype(np.int32)
    jnt_dofadr = (np.cumsum(nv_j) - nv_j).astype(np.int32)
    nq, nv = int(nq_j.sum()), int(nv_j.sum())

    body_jntnum = np.bincount(jnt_bodyid, minlength=nbody).astype(np.int32) if njnt else np.zeros(nbody, np.int32)
    body_jntadr = np.full(nbody, -1, np.int32)
    body_dofnum = np.zeros(nbody, np.int32)
    body_dofadr = np.full(nbody, -1, np.int32)
    for j in range(njnt - 1, -1, -1):
        body_jntadr[jnt_bodyid[j]] = j
        body_dofadr[jnt_bodyid[j]] = jnt_dofadr[j]
        body_dofnum[jnt_bodyid[j]] += nv_j[j]

    dof_bodyid = np.repeat(jnt_bodyid, nv_j).astype(np.int32)
    dof_jntid = np.repeat(np.arange(njnt), nv_j).astype(np.int32)
    dof_parentid = _dof_parents(parent, body_dofadr, body_dofnum, nv)
    dof_Madr, nM = _mass_matrix_layout(dof_parentid)

    for j, jt in enumerate(joints):
        if jt.type == M.JNT_FREE and parent[jt.body] != 0:
            raise ModelError("a free joint is allowed only on a child of the world", element=f"joint '{jt.name}'",
                             attribute="type")

    qpos0 = np.zeros(nq)
    qpos_spring = np.zeros(nq)
    for j, jt in enumerate(joints):
        a = jnt_qposadr[j]
        if jt.type == M.JNT_FREE:
            body = b._bodies[jt.body]
            qpos0[a : a + 3] = body.pos
            qpos0[a + 3 : a + 7] = body.quat
            qpos_spring[a : a + 7] = qpos0[a : a + 7]
        elif jt.type == M.JNT_BALL:
            qpos0[a : a + 4] = (1.0, 0.0, 0.0, 0.0)
            qpos_spring[a : a + 4] = qpos0[a : a + 4]
        else:
            qpos0[a] = jt.ref
            qpos_spring[a] = jt.springref

    def per_dof(attr):
        return np.repeat([getattr(j, attr) for j in joints], nv_j).astype(float) if njnt else np.zeros(0)

    def per_dof_rows(attr, width):
        rows = [getattr(j, attr) for j in joints]
        return np.repeat(np.array(rows).reshape(-1, width), nv_j, axis=0).astype(float)

    def per_tendon(attr, width):
        return np.array([getattr(t, attr) for t in b._tendons], dtype=float).reshape(-1, width)

    # root and weld ids; a mocap body moves apart from the world, so it roots a weld group
    # of its own, as in MuJoCo (collisions with static geoms are then filtered by dofs)
    mocap = np.array([bd.mocap for bd in b._bodies], dtype=bool)
    body_mocapid = np.where(mocap, np.cumsum(mocap) - 1, -1).astype(np.int32)
    rootid = np.zeros(nbody, np.int32)
    weldid = np.zeros(nbody, np.int32)
    for i in range(1, nbody):
        rootid[i] = i if parent[i] == 0 else rootid[parent[i]]
        weldid[i] = i if body_jntnum[i] or mocap[i] else weldid[parent[i]]
    subtreemass = body_mass.copy()
    for i in range(nbody - 1, 0, -1):
        subtreemass[parent[i]] += subtreemass[i]

    # tendons
    ten_adr, ten_num, wrap_type, wrap_obj, wrap_prm = [], [], [], [], []
    for t in b._tendons:
        ten_adr.append(len(wrap_obj))
        ten_num.append(len(t.terms))
        wraps = _spatial_wraps(b, t, geoms) if t.spatial else _joint_wraps(t, jnt_names, jnt_compiled_id, jnt_type)
        for kind, obj, prm in wraps:
            wrap_type.append(kind)
            wrap_obj.append(obj)
            wrap_prm.append(prm)
    wrap_type = np.array(wrap_type, dtype=np.int32)
    wrap_obj = np.array(wrap_obj, dtype=np.int32)
    wrap_prm = np.array(wrap_prm, dtype=float)
    # spatial tendons' lengths at qpos0 need the compiled model's frames: set once it exists
    length0 = np.array([0.0 if t.spatial else sum(qpos0[jnt_qposadr[wrap_obj[k]]] * wrap_prm[k]
                                                  for k in range(a, a + n))
                        for t, a, n in zip(b._tendons, ten_adr, ten_num)], dtype=float)
    lengthspring = np.array([t.lengthspring if t.lengthspring is not None else (length0[i], length0[i])
                             for i, t in enumerate(b._tendons)], dtype=float).reshape(-1, 2)
    ten_names = [t.name for t in b._tendons]

    # actuators
    act_trnid = []
    for a in b._actuators:
        where = f"actuator '{a.name}'"
        if a.trntype == M.TRN_JOINT:
            jid = _resolve(a.target, jnt_names, where, "joint", jnt_compiled_id)
            if jnt_type[jid] not in (M.JNT_HINGE, M.JNT_SLIDE):
                raise ModelError("joint actuators drive hinge and slide joints only", element=where, attribute="joint")
            act_trnid.append(jid)
        else:
            act_trnid.append(_resolve(a.target, ten_names, where, "tendon"))

    eq = _equalities(b, [bd.name for bd in b._bodies], jnt_names, jnt_compiled_id, jnt_type,
                     [s[4] for s in b._sites], [s[0] for s in b._sites], ten_names)

    nu = len(b._actuators)
    na = sum(a.dyntype != M.DYN_NONE for a in b._actuators)
    mocap_order = np.flatnonzero(mocap)[np.argsort(body_mocapid[mocap])]
    mpos0 = np.array([b._bodies[i].pos for i in mocap_order], dtype=float).reshape(-1)
    mquat0 = np.array([b._bodies[i].quat for i in mocap_order], dtype=float).reshape(-1)
    keys = []
    for k, (name, kq, kv, kc, ka, kmp, kmq) in enumerate(b._keys):
        where = f"key '{name}'" if name else f"key {k}"
        keys.append((name, _key_array(kq, qpos0, nq, where, "qpos"), _key_array(kv, np.zeros(nv), nv, where, "qvel"),
                     _key_array(kc, np.zeros(nu), nu, where, "ctrl"), _key_array(ka, np.zeros(na), na, where, "act"),
                     _key_array(kmp, mpos0, mpos0.size, where, "mpos"),
                     _key_quats(_key_array(kmq, mquat0, mquat0.size, where, "mquat"), where)))

    model = M.Model(
        name=b.name,
        opt=_frozen_option(b.opt),
        nq=nq, nv=nv, nbody=nbody, njnt=njnt, ngeom=len(geoms), nsite=len(b._sites), nu=nu,
        ntendon=len(b._tendons), nwrap=len(wrap_obj), nkey=len(keys),
        body_parentid=parent, body_rootid=rootid, body_weldid=weldid,
        nmocap=int(mocap.sum()), body_mocapid=body_mocapid,
        body_jntnum=body_jntnum, body_jntadr=body_jntadr, body_dofnum=body_dofnum, body_dofadr=body_dofadr,
        body_pos=np.array([bd.pos for bd in b._bodies]), body_quat=np.array([bd.quat for bd in b._bodies]),
        body_ipos=np.array(body_ipos, dtype=float), body_iquat=np.array(body_iquat, dtype=float),
        body_mass=body_mass, body_subtreemass=subtreemass, body_inertia=body_inertia,
        body_name=[bd.name for bd in b._bodies],
        body_gravcomp=np.array([bd.gravcomp for bd in b._bodies], dtype=float),
        jnt_actgravcomp=np.array([j.actgravcomp for j in joints], dtype=np.int32),
        jnt_type=jnt_type, jnt_bodyid=jnt_bodyid, jnt_qposadr=jnt_qposadr, jnt_dofadr=jnt_dofadr,
        jnt_pos=np.array([j.pos for j in joints]).reshape(-1, 3),
        jnt_axis=np.array([j.axis for j in joints]).reshape(-1, 3),
        jnt_stiffness=np.array([j.stiffness for j in joints], dtype=float),
        jnt_limited=np.array([j.limited for j in joints], dtype=np.int32),
        jnt_actfrclimited=np.array([j.actfrclimited for j in joints], dtype=np.int32),
        jnt_actfrcrange=np.array([j.actfrcrange for j in joints], dtype=float).reshape(-1, 2),
        jnt_range=np.array([j.range for j in joints]).reshape(-1, 2),
        jnt_margin=np.array([j.margin for j in joints], dtype=float),
        jnt_solref=np.array([j.solref for j in joints]).reshape(-1, 2),
        jnt_solimp=np.array([j.solimp for j in joints]).reshape(-1, 5),
        jnt_name=jnt_names,
        dof_bodyid=dof_bodyid, dof_jntid=dof_jntid, dof_parentid=dof_parentid, dof_Madr=dof_Madr, nM=nM,
        dof_armature=per_dof("armature"), dof_damping=per_dof("damping"), dof_frictionloss=per_dof("frictionloss"),
        dof_solref=per_dof_rows("solreffriction", 2), dof_solimp=per_dof_rows("solimpfriction", 5),
        tendon_margin=per_tendon("margin", 1).reshape(-1), tendon_solref_lim=per_tendon("solref", 2),
        tendon_solimp_lim=per_tendon("solimp", 5), tendon_solref_fri=per_tendon("solreffriction", 2),
        tendon_solimp_fri=per_tendon("solimpfriction", 5),
        qpos0=qpos0, qpos_spring=qpos_spring,
        **_geom_arrays(geoms),
        **_hfields(b),
        **_meshes(b),
        **_site_arrays(b),
        tendon_adr=np.array(ten_adr, dtype=np.int32), tendon_num=np.array(ten_num, dtype=np.int32),
        tendon_limited=np.array([t.limited for t in b._tendons], dtype=np.int32),
        tendon_range=np.array([t.range for t in b._tendons]).reshape(-1, 2),
        tendon_stiffness=np.array([t.stiffness for t in b._tendons], dtype=float),
        tendon_damping=np.array([t.damping for t in b._tendons], dtype=float),
        tendon_frictionloss=np.array([t.frictionloss for t in b._tendons], dtype=float),
        tendon_lengthspring=lengthspring, tendon_length0=length0, tendon_name=ten_names,
        wrap_type=wrap_type, wrap_objid=wrap_obj, wrap_prm=wrap_prm,
        **_actuator_arrays(b, act_trnid),
        key_qpos=np.array([k[1] for k in keys]).reshape(len(keys), nq),
        key_qvel=np.array([k[2] for k in keys]).reshape(len(keys), nv),
        key_ctrl=np.array([k[3] for k in keys]).reshape(len(keys), nu),
        key_act=np.array([k[4] for k in keys]).reshape(len(keys), na),
        key_mpos=np.array([k[5] for k in keys]).reshape(len(keys), mpos0.size),
        key_mquat=np.array([k[6] for k in keys]).reshape(len(keys), mquat0.size),
        key_name=[k[0] for k in keys],
        neq=len(eq["name"]), eq_type=eq["type"], eq_obj1id=eq["obj1"], eq_obj2id=eq["obj2"], eq_active0=eq["active"],
        eq_solref=eq["solref"], eq_solimp=eq["solimp"], eq_data=eq["data"], eq_name=eq["name"],
        eq_break_force=eq["brk_f"], eq_break_torque=eq["brk_t"], eq_objtype=eq["objtype"],
        visual=dict(b.visual),
        **_limit_models_and_drives(b, jnt_order, jnt_type, jnt_dofadr, nv),
    )
    model.body_simple = body_simple(model)
    model.body_simple.setflags(write=False)
    _spatial_lengths0(model, b._tendons)
    model.body_invweight0, model.dof_invweight0, model.tendon_invweight0, model.stat_meaninertia = invweight0(model)
    model.actuator_biasprm = actuator_dampratios(model)
    _auto_spring_damper(model, joints)
    model.eq_data = equality_reference_data(model)
    for key, value in _contact_filters(b, model).items():
        setattr(model, key, value)
    for key, value in sensor_arrays(model, b._sensors).items():
        setattr(model, key, value)
    for key, value in mesh_trees(model).items():
        setattr(model, key, value)
    _check_mesh_hulls(model, b._meshes)
    return model.freeze()


def _check_mesh_hulls(model, meshes) -> None:
    """A geom that can collide needs its mesh's hull, which a flat mesh has none of."""
    paired = set(np.asarray(getattr(model, "pair_geom1", []), dtype=int)) | set(
        np.asarray(getattr(model, "pair_geom2", []), dtype=int))
    for g in np.flatnonzero(model.geom_type == M.GEOM_MESH):
        mesh = meshes[int(model.geom_dataid[g])]
        if mesh.flat and (model.geom_contype[g] or model.geom_conaffinity[g] or g in paired):
            name = model.geom_name[g] or f"geom {g}"
            raise ModelError(f"mesh '{mesh.name}' cannot collide: {mesh.flat}", element=f"geom '{name}'",
                             attribute="mesh")


def _geom_arrays(geoms) -> dict:
    """The geom_* arrays of geoms in compiled order (by body)."""
    return dict(
        geom_type=np.array([g.type for g in geoms], dtype=np.int32),
        geom_bodyid=np.array([g.body for g in geoms], dtype=np.int32),
        geom_contype=np.array([g.contype for g in geoms], dtype=np.int32),
        geom_conaffinity=np.array([g.conaffinity for g in geoms], dtype=np.int32),
        geom_condim=np.array([g.condim for g in geoms], dtype=np.int32),
        geom_size=np.array([g.size for g in geoms]).reshape(-1, 3),
        geom_pos=np.array([g.pos for g in geoms]).reshape(-1, 3),
        geom_quat=np.array([g.quat for g in geoms]).reshape(-1, 4),
        geom_friction=np.array([g.friction for g in geoms]).reshape(-1, 3),
        geom_margin=np.array([g.margin for g in geoms], dtype=float),
        geom_gap=np.array([g.gap for g in geoms], dtype=float),
        geom_solref=np.array([g.solref for g in geoms]).reshape(-1, 2),
        geom_solimp=np.array([g.solimp for g in geoms]).reshape(-1, 5),
        geom_priority=np.array([g.priority for g in geoms], dtype=np.int32),
        geom_solmix=np.array([g.solmix for g in geoms], dtype=float),
        geom_rgba=np.array([g.rgba for g in geoms]).reshape(-1, 4),
        geom_name=[g.name for g in geoms],
        geom_dataid=np.array([g.dataid for g in geoms], dtype=np.int32),
    )


def _site_arrays(b) -> dict:
    """The site_* arrays, in the order added."""
    return dict(
        site_bodyid=np.array([s[0] for s in b._sites], dtype=np.int32),
        site_pos=np.array([s[1] for s in b._sites]).reshape(-1, 3),
        site_quat=np.array([s[2] for s in b._sites]).reshape(-1, 4),
        site_size=np.array([s[3] for s in b._sites]).reshape(-1, 3),
        site_name=[s[4] for s in b._sites],
        site_type=np.array([s[5] for s in b._sites], dtype=np.int32),
    )


def _actuator_arrays(b, act_trnid) -> dict:
    """The actuator_* arrays; ``act_trnid`` holds each actuator's compiled joint or tendon id."""
    return dict(
        actuator_trntype=np.array([a.trntype for a in b._actuators], dtype=np.int32),
        actuator_trnid=np.array(act_trnid, dtype=np.int32),
        actuator_gaintype=np.array([a.gaintype for a in b._actuators], dtype=np.int32),
        actuator_biastype=np.array([a.biastype for a in b._actuators], dtype=np.int32),
        actuator_gainprm=np.array([a.gainprm for a in b._actuators]).reshape(-1, 10),
        actuator_biasprm=np.array([a.biasprm for a in b._actuators]).reshape(-1, 10),
        actuator_gear=np.array([a.gear for a in b._actuators]).reshape(-1, 6),
        actuator_ctrllimited=np.array([a.ctrllimited for a in b._actuators], dtype=np.int32),
        actuator_ctrlrange=np.array([a.ctrlrange for a in b._actuators]).reshape(-1, 2),
        actuator_forcelimited=np.array([a.forcelimited for a in b._actuators], dtype=np.int32),
        actuator_forcerange=np.array([a.forcerange for a in b._actuators]).reshape(-1, 2),
        actuator_name=[a.name for a in b._actuators],
        **_activations(b),
    )


def _auto_spring_damper(model: M.Model, joints) -> None:
    """Stiffness and damping of joints given by springdamper (timeconst, dampratio), from
    their dofs' mean inertia at qpos0, 1 / dof_invweight0, as MuJoCo's compiler sets them."""
    stiffness, damping = model.jnt_stiffness.copy(), model.dof_damping.copy()
    for j, joint in enumerate(joints):
        timeconst, dampratio = joint.springdamper
        if timeconst <= 0 or dampratio <= 0:
            continue
        adr, ndim = model.jnt_dofadr[j], M.JNT_NV[int(model.jnt_type[j])]
        inertia = ndim / max(_MINVAL, float(np.sum(model.dof_invweight0[adr : adr + ndim])))
        stiffness[j] = inertia / max(_MINVAL, timeconst * timeconst * dampratio * dampratio)
        damping[adr : adr + ndim] = 2 * inertia / max(_MINVAL, timeconst)
    model.jnt_stiffness, model.dof_damping = stiffness, damping


# also raised by the MJCF reader, which names the attribute that gave the actuator its activation
RK4_ACTIVATION = ("actuator dynamics with the RK4 integrator are not supported (use Euler, implicitfast or "
                  "implicitspringdamper)")


def _activations(b) -> dict:
    """The activation arrays: one act per stateful actuator, in actuator order (mjModel's)."""
    stateful = np.array([a.dyntype != M.DYN_NONE for a in b._actuators], dtype=bool)
    if stateful.any() and b.opt.integrator == M.INT_RK4:
        u = int(np.argmax(stateful))
        raise ModelError(RK4_ACTIVATION, element=f"actuator '{b._actuators[u].name}'"
                         if b._actuators[u].name else f"actuator {u}", attribute="dyntype")
    return dict(
        na=int(stateful.sum()),
        actuator_dyntype=np.array([a.dyntype for a in b._actuators], dtype=np.int32),
        actuator_dynprm=np.array([a.dynprm for a in b._actuators]).reshape(-1, 10),
        actuator_actadr=np.where(stateful, np.cumsum(stateful) - 1, -1).astype(np.int32),
        actuator_actnum=stateful.astype(np.int32),
        actuator_actlimited=np.array([a.actlimited for a in b._actuators], dtype=np.int32),
        actuator_actrange=np.array([a.actrange for a in b._actuators]).reshape(-1, 2),
        actuator_actearly=np.array([a.actearly for a in b._actuators], dtype=np.int32),
    )


def _hfields(b) -> dict:
    """Height-field arrays, samples of all fields concatenated row-major (mjModel's)."""
    shapes = [h.data.shape for h in b._hfields]
    counts = [r * c for r, c in shapes]
    return dict(nhfield=len(b._hfields), nhfielddata=int(sum(counts)),
                hfield_size=np.array([h.size for h in b._hfields], dtype=float).reshape(-1, 4),
                hfield_nrow=np.array([s[0] for s in shapes], dtype=np.int32),
                hfield_ncol=np.array([s[1] for s in shapes], dtype=np.int32),
                hfield_adr=(np.cumsum(counts, dtype=np.int64) - counts).astype(np.int32),
                hfield_data=np.concatenate([h.data.reshape(-1) for h in b._hfields] or [np.zeros(0)]),
                hfield_name=[h.name for h in b._hfields])


def _meshes(b) -> dict:
    """Mesh arrays: each mesh's vertices, triangles and hull concatenated (mjModel's)."""
    meshes = b._meshes

    def starts(counts):
        return (np.cumsum(counts, dtype=np.int64) - counts).astype(np.int32)

    nv = np.array([len(m.vert) for m in meshes], dtype=np.int32)
    nf = np.array([len(m.face) for m in meshes], dtype=np.int32)
    nh = np.array([len(m.hull) for m in meshes], dtype=np.int32)
    return dict(nmesh=len(meshes), mesh_vertadr=starts(nv), mesh_vertnum=nv,
                mesh_vert=np.concatenate([m.vert for m in meshes] or [np.zeros((0, 3))]),
                mesh_faceadr=starts(nf), mesh_facenum=nf,
                mesh_face=np.concatenate([m.face for m in meshes] or [np.zeros((0, 3))]).astype(np.int32),
                mesh_hulladr=starts(nh), mesh_hullnum=nh,
                mesh_hull=np.concatenate([m.hull for m in meshes] or [np.zeros(0)]).astype(np.int32),
                # -1: no hull (a flat mesh that collides with nothing), as mjModel's
                mesh_graphadr=np.where([len(m.graph) > 0 for m in meshes],
                                       starts(np.array([len(m.graph) for m in meshes], dtype=np.int32)), -1
                                       ).astype(np.int32),
                mesh_graph=np.concatenate([m.graph for m in meshes] or [np.zeros(0)]).astype(np.int32),
                mesh_pos=np.array([m.pos for m in meshes], dtype=float).reshape(-1, 3),
                mesh_quat=np.array([m.quat for m in meshes], dtype=float).reshape(-1, 4),
                mesh_name=[m.name for m in meshes])


def _frozen_option(opt: M.Option) -> M.Option:
    """A read-only copy of the builder's options, so that neither later changes to the
    builder nor writes through ``model.opt`` alter a built Model."""
    out = copy.deepcopy(opt)
    for key, value in vars(out).items():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            int32(value, "option", key)  # the World packs these into 32-bit tables
    return out.freeze()


def _dof_parents(parent, body_dofadr, body_dofnum, nv) -> np.ndarray:
    """Parent dof of each dof: the previous dof of its body, else the last dof of the
    nearest ancestor body that has dofs, else -1."""
    out = np.full(nv, -1, np.int32)
    last = np.full(len(parent), -1, np.int32)  # last dof on the path from the world to body
    for i in range(1, len(parent)):
        prev = last[parent[i]]
        for k in range(body_dofnum[i]):
            d = body_dofadr[i] + k
            out[d] = prev
            prev = d
        last[i] = prev
    return out


def _mass_matrix_layout(dof_parentid):
    """MuJoCo's sparse row layout: row i holds i and its ancestors, rows stored back to back."""
    rowlen = np.ones(len(dof_parentid), np.int32)
    for i, p in enumerate(dof_parentid):
        if p >= 0:
            rowlen[i] = rowlen[p] + 1
    madr = (np.cumsum(rowlen) - rowlen).astype(np.int32)
    return madr, int(rowlen.sum())


def _limit_models_and_drives(b, jnt_order, jnt_type, jnt_dofadr, nv) -> dict:
    """Model fields of the joints' limit models (in compiled joint order) and of the drives
    (per dof). Contact distances left unset take PhysX's default, min(0.1, 0.49 x the
    range width) (the narrowest cone or twist range for ball joints)."""
    njnt = len(jnt_order)
    out = dict(jnt_limit_model=np.zeros(njnt, np.int32), jnt_limit_acceleration=np.zeros(njnt, np.int32),
               jnt_cone=np.full((njnt, 2), np.inf), jnt_twist=np.tile([-np.inf, np.inf], (njnt, 1)),
               **{f"jnt_limit_{k}": np.zeros(njnt) for k in ("strength", "stiffness", "damping", "distance",
                                                             "restitution", "bounce")})
    for j, old in enumerate(jnt_order):
        limit = b._joint_limits.get(old)
        if limit is None:
            continue
        out["jnt_limit_model"][j] = M.LIMIT_MODELS[limit.model]
        out["jnt_limit_strength"][j] = limit.strength
        out["jnt_limit_stiffness"][j] = limit.stiffness
        out["jnt_limit_damping"][j] = limit.damping
        out["jnt_limit_restitution"][j] = limit.restitution
        out["jnt_limit_bounce"][j] = limit.bounce_threshold
        out["jnt_limit_acceleration"][j] = int(limit.acceleration)
        if jnt_type[j] == M.JNT_BALL:
            if limit.cone is not None:
                out["jnt_cone"][j] = limit.cone
            if limit.twist is not None:
                out["jnt_twist"][j] = limit.twist
            widths = [*out["jnt_cone"][j], out["jnt_twist"][j, 1] - out["jnt_twist"][j, 0]]
        else:
            widths = [b._joints[old].range[1] - b._joints[old].range[0]]
        width = float(np.min(widths))
        out["jnt_limit_distance"][j] = (min(0.1, 0.49 * width) if np.isfinite(width) else 0.1) \
            if limit.distance is None else limit.distance
    drive = dict(dof_drive_stiffness=np.zeros(nv), dof_drive_damping=np.zeros(nv),
                 dof_drive_forcelimit=np.full(nv, np.inf), dof_drive_acceleration=np.zeros(nv, np.int32))
    compiled = {old: new for new, old in enumerate(jnt_order)}
    for old, (stiffness, damping, force_limit, acceleration) in b._drives.items():
        d = jnt_dofadr[compiled[old]]
        drive["dof_drive_stiffness"][d] = stiffness
        drive["dof_drive_damping"][d] = damping
        drive["dof_drive_forcelimit"][d] = force_limit
        drive["dof_drive_acceleration"][d] = int(acceleration)
    return {**out, **drive}


def _equalities(b, body_names, jnt_names, jnt_compiled_id, jnt_type, site_names, site_body, ten_names) -> dict:
    """Equality constraints with their objects resolved to compiled ids."""
    out = dict(type=[], obj1=[], obj2=[], active=[], solref=[], solimp=[], data=[], name=[], brk_f=[], brk_t=[],
               objtype=[])
    for i, e in enumerate(b._equalities):
        where = f"equality '{e.name}'" if e.name else f"equality {i}"
        if e.type == M.EQ_JOINT:
            obj1 = _resolve(e.obj1, jnt_names, where, "joint", jnt_compiled_id)
            obj2 = -1 if e.obj2 is None else _resolve(e.obj2, jnt_names, where, "joint", jnt_compiled_id)
            for j in (obj1, obj2):
                if j >= 0 and jnt_type[j] not in (M.JNT_HINGE, M.JNT_SLIDE):
                    raise ModelError("joint equality couples hinge and slide joints only", element=where,
                                     attribute="joint")
        elif e.type == M.EQ_TENDON:
            obj1 = _resolve(e.obj1, ten_names, where, "tendon")
            obj2 = -1 if e.obj2 is None else _resolve(e.obj2, ten_names, where, "tendon")
        elif e.objtype == M.OBJ_SITE:
            obj1 = _resolve(e.obj1, site_names, where, "site")
            obj2 = _resolve(e.obj2, site_names, where, "site")
            if site_body[obj1] == site_body[obj2]:
                raise ModelError("the two sites of an equality constraint must be on different bodies",
                                 element=where, attribute="site2")
        else:
            obj1 = _resolve(e.obj1, body_names, where, "body")
            obj2 = 0 if e.obj2 is None else _resolve(e.obj2, body_names, where, "body")
            if obj1 == obj2:
                raise ModelError("an equality constraint needs two different bodies", element=where, attribute="body2")
        for key, value in (("type", e.type), ("obj1", obj1), ("obj2", obj2), ("active", e.active),
                           ("solref", e.solref), ("solimp", e.solimp), ("data", e.data), ("name", e.name),
                           ("brk_f", e.break_force), ("brk_t", e.break_torque), ("objtype", e.objtype)):
            out[key].append(value)
    for key, dtype, shape in (("type", np.int32, ()), ("obj1", np.int32, ()), ("obj2", np.int32, ()),
                              ("active", np.int32, ()), ("solref", float, (2,)), ("solimp", float, (5,)),
                              ("data", float, (11,)), ("brk_f", float, ()), ("brk_t", float, ()),
                              ("objtype", np.int32, ())):
        out[key] = np.array(out[key], dtype=dtype).reshape(-1, *shape)
    return out


def _contact_filters(b, model: M.Model) -> dict:
    """Explicit pairs (parameters the builder was not given are mixed from the geoms, as
    MuJoCo mixes an automatic pair's; MJCF's <pair> gives MuJoCo's pair defaults) and
    excluded body pairs, as Model arrays."""
    from ..collision.broadphase import contact_params

    rows = []
    for k, (g1, g2, values, name) in enumerate(b._pairs):
        where = f"pair '{name}'" if name else f"pair {k}"
        ids = [_resolve(g, model.geom_name, where, "geom") for g in (g1, g2)]
        if ids[0] == ids[1]:
            raise ModelError("a contact pair needs two different geoms", element=where, attribute="geom2")
        condim, friction, solref, solimp = contact_params(model, *ids)
        margin = model.geom_margin[ids[0]] + model.geom_margin[ids[1]]
        gap = model.geom_gap[ids[0]] + model.geom_gap[ids[1]]
        given = {k2: v for k2, v in values.items() if v is not None}
        rows.append(dict(geom1=ids[0], geom2=ids[1], dim=given.get("condim", condim),
                         friction=given.get("friction", friction), solref=given.get("solref", solref),
                         solimp=given.get("solimp", solimp), margin=given.get("margin", margin),
                         gap=given.get("gap", gap), name=name))

    def column(key, dtype, width=None):
        arr = np.array([r[key] for r in rows], dtype=dtype)
        return arr.reshape(-1, width) if width else arr.reshape(-1)

    return dict(pair_geom1=column("geom1", np.int32), pair_geom2=column("geom2", np.int32),
                pair_dim=column("dim", np.int32), pair_friction=column("friction", float, 5),
                pair_solref=column("solref", float, 2), pair_solimp=column("solimp", float, 5),
                pair_margin=column("margin", float), pair_gap=column("gap", float),
                pair_name=[r["name"] for r in rows],
                exclude_body1=np.array([e[0] for e in b._excludes], np.int32),
                exclude_body2=np.array([e[1] for e in b._excludes], np.int32))


def equality_reference_data(model: M.Model) -> np.ndarray:
    """Fill what connect and weld constraints take from the reference configuration
    (MuJoCo's mj_setConst): connect's anchor in body2's frame; weld's anchor in body1's
    frame and the relative orientation, unless given."""
    from ..compiler.invweight import _reference_frames

    out = np.array(model.eq_data, dtype=float)
    if not model.neq:
        return out
    xpos, xquat = _reference_frames(model)
    for i in range(model.neq):
        if model.eq_objtype[i] == M.OBJ_SITE:
            continue  # site semantics take nothing from qpos0
        b1, b2, data = model.eq_obj1id[i], model.eq_obj2id[i], out[i]
        if model.eq_type[i] == M.EQ_CONNECT:
            world = xpos[b1] + quat_rotate(xquat[b1], data[:3])
            data[3:6] = quat_rotate(quat_conj(xquat[b2]), world - xpos[b2])
        elif model.eq_type[i] == M.EQ_WELD:
            if np.any(data[6:10]):
                data[6:10] /= np.linalg.norm(data[6:10])
                continue
            world = xpos[b2] + quat_rotate(xquat[b2], data[:3])
            data[3:6] = quat_rotate(quat_conj(xquat[b1]), world - xpos[b1])
            data[6:10] = quat_mul(quat_conj(xquat[b1]), xquat[b2])
    return out


def _joint_wraps(t, jnt_names, jnt_compiled_id, jnt_type) -> list:
    """[(WRAP_JOINT, joint id, coefficient)] of fixed tendon t."""
    out = []
    for target, coef in t.terms:
        jid = _resolve(target, jnt_names, f"tendon '{t.name}'", "joint", jnt_compiled_id)
        if jnt_type[jid] not in (M.JNT_HINGE, M.JNT_SLIDE):
            raise ModelError("fixed tendons couple hinge and slide joints only", element=f"tendon '{t.name}'",
                             attribute="joint")
        out.append((M.WRAP_JOINT, jid, coef))
    return out


def _spatial_wraps(b, t, geoms) -> list:
    """[(mjtWrap, object id, prm)] of spatial tendon t's path: a site's id; a geom's id
    and its side site's id (-1: none); a pulley's divisor (object -1)."""
    where = f"tendon '{t.name}'"
    site_names = [s[4] for s in b._sites]
    geom_names = [g.name for g in geoms]
    # add_geom's ids count geoms as added; compiled, they are ordered by body
    order = sorted(range(len(b._geoms)), key=lambda i: b._geoms[i].body)
    geom_id = {old: new for new, old in enumerate(order)}
    out = []
    for entry in t.terms:
        if entry[0] == "site":
            out.append((M.WRAP_SITE, _resolve(entry[1], site_names, where, "site"), 0.0))
        elif entry[0] == "pulley":
            out.append((M.WRAP_PULLEY, -1, entry[1]))
        else:
            g = _resolve(entry[1], geom_names, where, "geom", geom_id)
            if geoms[g].type not in (M.GEOM_SPHERE, M.GEOM_CYLINDER):
                raise ModelError(f"geom {entry[1]!r} is not a sphere or cylinder: tendons wrap those only",
                                 element=where, attribute="geom")
            side = -1 if entry[2] is None else _resolve(entry[2], site_names, where, "sidesite")
            out.append((M.WRAP_CYLINDER if geoms[g].type == M.GEOM_CYLINDER else M.WRAP_SPHERE, g, float(side)))
    return out


def _spatial_lengths0(model, tendons) -> None:
    """Spatial tendons' lengths at qpos0, and the rest length of springs left to it."""
    spatial = [i for i, t in enumerate(tendons) if t.spatial]
    if not spatial:
        return
    lengths = tendon_lengths0(model)
    length0, spring = model.tendon_length0.copy(), model.tendon_lengthspring.copy()
    for i in spatial:
        length0[i] = lengths[i]
        if tendons[i].lengthspring is None:
            spring[i] = lengths[i]
    model.tendon_length0, model.tendon_lengthspring = length0, spring


def _resolve(target, names, where, kind, id_map=None) -> int:
    if isinstance(target, (int, np.integer)):
        if not 0 <= int(target) < len(names):
            raise ModelError(f"{kind} {target} does not exist", element=where, attribute=kind)
        return id_map[int(target)] if id_map is not None else int(target)
    if target not in names:
        raise ModelError(f"references missing {kind} {target!r}", element=where, attribute=kind)
    return names.index(target)


def _key_array(value, default, n, where, what) -> np.ndarray:
    if value is None:
        return np.array(default, dtype=float)
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != n:
        raise ModelError(f"{what} has {arr.size} values, the model needs {n}", element=where, attribute=what)
    return arr


def _key_quats(flat, where) -> np.ndarray:
    """A keyframe's mocap quaternions, each normalized (as MuJoCo's compiler does)."""
    quats = flat.reshape(-1, 4)
    norms = np.linalg.norm(quats, axis=1)
    if np.any(norms < 1e-15):
        raise ModelError(f"mquat holds a zero quaternion (mocap body {int(np.argmin(norms))})", element=where,
                         attribute="mquat")
    return (quats / norms[:, None]).reshape(-1)


def _bound_inertia(mass, inertia, bound_mass, bound_inertia, balance) -> None:
    """In place, every body but the world: at least ``bound_mass`` and ``bound_inertia``
    (each principal moment), and with ``balance`` moments that break the triangle inequality
    (exactly, as MuJoCo tests it) replaced by their mean (MuJoCo's boundmass, boundinertia
    and balanceinertia)."""
    if bound_mass > 0:  # unset, a negative mass or moment is left to be refused
        mass[1:] = np.maximum(mass[1:], bound_mass)
    if bound_inertia > 0:
        inertia[1:] = np.maximum(inertia[1:], bound_inertia)
    if balance:
        a, b, c = inertia[1:].T
        broken = (a + b < c) | (a + c < b) | (b + c < a)
        inertia[1:][broken] = inertia[1:][broken].mean(axis=1, keepdims=True)


def _check_inertia(b, mass, inertia) -> None:
    for i in range(1, len(mass)):
        where = f"body '{b._bodies[i].name or i}'"
        moments = inertia[i]
        if np.any(moments < -1e-12 * max(1.0, np.abs(moments).max())):
            raise ModelError(f"inertia moments must be >= 0, got {moments.tolist()}", element=where, attribute="inertia")
        a, c, d = moments
        tol = 1e-9 * max(abs(a) + abs(c) + abs(d), _MINVAL)
        if a + c < d - tol or a + d < c - tol or c + d < a - tol:
            raise ModelError(f"inertia {moments.tolist()} violates the triangle inequality", element=where, attribute="inertia")
    # a body that moves (has joints) must carry mass somewhere in its welded subtree
    nbody = len(mass)
    parent = [bd.parent for bd in b._bodies]
    has_joint = {j.body for j in b._joints}
    weld_mass = mass.copy()
    weld_inertia = inertia.sum(axis=1)
    for i in range(nbody - 1, 0, -1):
        if i not in has_joint and parent[i] > 0:
            weld_mass[parent[i]] += weld_mass[i]
            weld_inertia[parent[i]] += weld_inertia[i]
    for i in has_joint:
        if weld_mass[i] < _MINVAL or weld_inertia[i] < _MINVAL:
            raise ModelError("mass and inertia of moving bodies must be positive", element=f"body '{b._bodies[i].name or i}'", attribute="mass")
