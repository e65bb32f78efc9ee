"""Helpers for comparing the engine with the `mujoco` package.

``model_from_mujoco`` rebuilds a compiled MjModel through ModelBuilder, so dynamics can
be checked against MuJoCo independently of our importers.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.model import INT_EULER, INT_RK4

from taigym import physics

_JNT = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
_GEOM = {0: "plane", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box"}


def _wrap(mjm, k):
    """Wrap k of a spatial tendon as add_tendon_spatial's path entry (sites and geoms by id:
    model_from_mujoco adds them in mjModel's order)."""
    kind, obj, prm = int(mjm.wrap_type[k]), int(mjm.wrap_objid[k]), float(mjm.wrap_prm[k])
    if kind == 2:  # mjWRAP_PULLEY
        return ("pulley", prm)
    if kind == 3:  # mjWRAP_SITE
        return ("site", obj)
    return ("geom", obj, int(prm) if prm >= 0 else None)


def model_from_mujoco(mjm) -> physics.Model:
    import mujoco

    b = physics.ModelBuilder()
    b.opt.timestep = float(mjm.opt.timestep)
    b.opt.gravity = np.array(mjm.opt.gravity)
    b.opt.wind = np.array(mjm.opt.wind)
    b.opt.density = float(mjm.opt.density)
    b.opt.viscosity = float(mjm.opt.viscosity)
    b.opt.integrator = {0: INT_EULER, 1: INT_RK4}[int(mjm.opt.integrator)]
    b.opt.disableflags = int(mjm.opt.disableflags)
    name = lambda t, i: mujoco.mj_id2name(mjm, t, i) or ""  # noqa: E731
    for i in range(1, mjm.nbody):
        b.add_body(int(mjm.body_parentid[i]), pos=mjm.body_pos[i], quat=mjm.body_quat[i],
                   name=name(mujoco.mjtObj.mjOBJ_BODY, i), mass=float(mjm.body_mass[i]), com=mjm.body_ipos[i],
                   inertia=mjm.body_inertia[i], inertia_quat=mjm.body_iquat[i], mocap=bool(mjm.body_mocapid[i] >= 0))
    for j in range(mjm.njnt):
        t = int(mjm.jnt_type[j])
        d = mjm.jnt_dofadr[j]
        q = mjm.jnt_qposadr[j]
        kw = {}
        if t in (2, 3):
            kw = dict(axis=mjm.jnt_axis[j], ref=float(mjm.qpos0[q]), springref=float(mjm.qpos_spring[q]))
        b.add_joint(int(mjm.jnt_bodyid[j]), _JNT[t], pos=mjm.jnt_pos[j], name=name(mujoco.mjtObj.mjOBJ_JOINT, j),
                    limited=bool(mjm.jnt_limited[j]) if t != 0 else False,
                    range=mjm.jnt_range[j] if mjm.jnt_limited[j] and t != 0 else None,
                    stiffness=float(mjm.jnt_stiffness[j]), damping=float(mjm.dof_damping[d]),
                    armature=float(mjm.dof_armature[d]), frictionloss=float(mjm.dof_frictionloss[d]), **kw)
    for g in range(mjm.ngeom):
        b.add_geom(int(mjm.geom_bodyid[g]), _GEOM[int(mjm.geom_type[g])], size=mjm.geom_size[g],
                   pos=mjm.geom_pos[g], quat=mjm.geom_quat[g], mass=0.0, name=name(mujoco.mjtObj.mjOBJ_GEOM, g))
    for s in range(mjm.nsite):
        b.add_site(int(mjm.site_bodyid[s]), pos=mjm.site_pos[s], quat=mjm.site_quat[s],
                   name=name(mujoco.mjtObj.mjOBJ_SITE, s))
    for t in range(mjm.ntendon):
        a, n = mjm.tendon_adr[t], mjm.tendon_num[t]
        kw = dict(stiffness=float(mjm.tendon_stiffness[t]), damping=float(mjm.tendon_damping[t]),
                  lengthspring=mjm.tendon_lengthspring[t], name=name(mujoco.mjtObj.mjOBJ_TENDON, t))
        if mjm.wrap_type[a] == mujoco.mjtWrap.mjWRAP_JOINT:
            b.add_tendon_fixed([(int(mjm.wrap_objid[k]), float(mjm.wrap_prm[k])) for k in range(a, a + n)], **kw)
        else:
            b.add_tendon_spatial([_wrap(mjm, k) for k in range(a, a + n)], **kw)
    for u in range(mjm.nu):
        tendon = int(mjm.actuator_trntype[u]) == 3
        b.add_actuator(int(mjm.actuator_trnid[u, 0]), kind="general", transmission="tendon" if tendon else "joint",
                       gear=mjm.actuator_gear[u], ctrllimited=bool(mjm.actuator_ctrllimited[u]),
                       ctrlrange=mjm.actuator_ctrlrange[u], forcelimited=bool(mjm.actuator_forcelimited[u]),
                       forcerange=mjm.actuator_forcerange[u],
                       gaintype={0: "fixed", 1: "affine"}[int(mjm.actuator_gaintype[u])],
                       gainprm=mjm.actuator_gainprm[u], biastype={0: "none", 1: "affine"}[int(mjm.actuator_biastype[u])],
                       biasprm=mjm.actuator_biasprm[u])
    return b.finalize()


def smooth(model: physics.Model) -> physics.Model:
    """The model with constraints disabled: its smooth dynamics, for comparison with
    mujoco run under ``mjDSBL_CONSTRAINT``."""
    from taigym.physics.model import DSBL_CONSTRAINT

    return model.with_options(disableflags=model.opt.disableflags | DSBL_CONSTRAINT)


def random_state(mjm, rng, scale=1.0):
    """A random (qpos, qvel) of a compiled MjModel: joint angles within +-scale rad,
    random unit quaternions, random velocities."""
    qpos = np.array(mjm.qpos0, dtype=float)
    qvel = rng.normal(scale=scale, size=mjm.nv)
    for j in range(mjm.njnt):
        a, t = mjm.jnt_qposadr[j], mjm.jnt_type[j]
        if t == 0:
            qpos[a : a + 3] += rng.normal(scale=0.5, size=3)
            q = rng.normal(size=4)
            qpos[a + 3 : a + 7] = q / np.linalg.norm(q)
        elif t == 1:
            q = rng.normal(size=4)
            qpos[a : a + 4] = q / np.linalg.norm(q)
        else:
            qpos[a] += rng.uniform(-scale, scale)
    return qpos, qvel


def rel_err(ours, ref) -> float:
    """max |ours - ref| / max(max |ref|, 1): relative to the quantity's scale."""
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1.0)) if ref.size else 0.0


def rk4_step(mjm, data) -> None:
    """One classic RK4 step of MuJoCo's continuous-time dynamics, composed of mujoco's own
    ``mj_forward`` and ``mj_integratePos`` (the scheme MuJoCo documents for RK4).

    mujoco 4.0's ``mj_step`` departs from this scheme for free joints by ~1e-7 in the
    orientation per step, which chaotic models such as the ant amplify over a long
    trajectory; comparing with the documented scheme keeps the check tight.
    """
    import mujoco

    h = mjm.opt.timestep
    qpos0, qvel0 = data.qpos.copy(), data.qvel.copy()

    def qacc(qpos, qvel):
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, data)
        return data.qacc.copy()

    vel, acc = [qvel0], [qacc(qpos0, qvel0)]
    for a in (0.5, 0.5, 1.0):
        qpos = qpos0.copy()
        mujoco.mj_integratePos(mjm, qpos, a * vel[-1], h)
        qvel = qvel0 + a * h * acc[-1]
        vel.append(qvel)
        acc.append(qacc(qpos, qvel))
    weights = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
    dq = sum(w * v for w, v in zip(weights, vel))
    qpos = qpos0.copy()
    mujoco.mj_integratePos(mjm, qpos, dq, h)
    data.qpos[:], data.qvel[:] = qpos, qvel0 + h * sum(w * a for w, a in zip(weights, acc))
    data.time += h
