"""Passive forces: joint springs and dampers, tendon springs and dampers, smooth
joint friction loss, fluid drag from the inertia-box model and gravity compensation
(MuJoCo's mj_passive)."""


import functools
import types

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import DSBL_GRAVITY, DSBL_PASSIVE, JNT_FREE, JNT_HINGE, JNT_SLIDE
from ..runtime.backend import ti
from ..access import make_access
from ..features import ALL, Features
from ..runtime.ti_math import make_math



@functools.lru_cache(maxsize=None)
def make_passive(fp, features: Features = ALL):
    """mj_passive's forces; tendons, smooth friction loss and fluid drag only where
    ``features`` has them (physics/features.py)."""
    m = make_math(fp)
    A = make_access(fp)

    @ti.func
    def apply_ft(w, sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), body_d: ti.template(), dof_d: ti.template(), force, torque, point, b, col: ti.template()):
        """Add J^T [force, torque] at a world ``point`` on body ``b`` to dof_d's column ``col``
        (its accessor's name)."""
        get, put = ti.static(A.read[col], A.write[col])
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        # the last dof on the path from the world to b; its ancestors are the chain
        d = -1
        bb = b
        while bb > 0 and d < 0:
            if A.body_dofnum(body_i, bb) > 0:
                d = A.body_dofadr(body_i, bb) + A.body_dofnum(body_i, bb) - 1
            bb = A.body_parent(body_i, bb)
        while d >= 0:
            root = A.body_root(body_i, A.dof_body(dof_i, d))
            c = A.body_subtree_com(body_d, o_body, root)
            wrench = m.spatial(torque + (point - c).cross(force), force)
            put(dof_d, o_dof, d, get(dof_d, o_dof, d) + A.dof_cdof(dof_d, o_dof, d).dot(wrench))
            d = A.dof_parent(dof_i, d)

    @ti.func
    def joint_springs_dampers(w, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), q_f: ti.template(), qpos: ti.template(), qvel: ti.template(), dof_d: ti.template()):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        mq = m.param_set(w, q_f)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        for j in range(sizes[L.SIZE_NJNT]):
            k = A.jnt_stiffness(jnt_f, mj, j)
            jtype = A.jnt_type(jnt_i, j)
            pa = A.jnt_qposadr(jnt_i, j)
            da = A.jnt_dofadr(jnt_i, j)
            if k != 0:
                if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                    A.set_dof_qfrc_passive(dof_d, o_dof, da, A.dof_qfrc_passive(dof_d, o_dof, da)
                                                                   - k * (qpos[env_index(w, pa)] - A.qpos_spring(q_f, mq, pa)))
                else:
                    if jtype == JNT_FREE:
                        for t in ti.static(range(3)):
                            A.set_dof_qfrc_passive(dof_d, o_dof, da + t, A.dof_qfrc_passive(dof_d, o_dof, da + t)
                                - k * (qpos[env_index(w, pa + t)] - A.qpos_spring(q_f, mq, pa + t)))
                        pa += 3
                        da += 3
                    q = m.quat_normalize(m.vec4(qpos[env_index(w, pa)], qpos[env_index(w, pa + 1)], qpos[env_index(w, pa + 2)], qpos[env_index(w, pa + 3)]))
                    q0 = m.vec4(A.qpos_spring(q_f, mq, pa), A.qpos_spring(q_f, mq, pa + 1),
                                A.qpos_spring(q_f, mq, pa + 2), A.qpos_spring(q_f, mq, pa + 3))
                    dif = m.quat_sub(q, q0)
                    for t in ti.static(range(3)):
                        A.set_dof_qfrc_passive(dof_d, o_dof, da + t, A.dof_qfrc_passive(dof_d, o_dof, da + t) - k * dif[t])
        for d in range(sizes[L.SIZE_NV]):
            A.set_dof_qfrc_passive(dof_d, o_dof, d, A.dof_qfrc_passive(dof_d, o_dof, d)
                                                          - A.dof_damping(dof_f, md, d) * qvel[env_index(w, d)])

    @ti.func
    def joint_friction_smooth(w, sizes: ti.template(), dof_f: ti.template(), opt_f: ti.template(), qvel: ti.template(), dof_d: ti.template()):
        """Coulomb friction loss smoothed as frictionloss * tanh(qvel * smoothing)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        s = A.opt_friction_smoothing(opt_f, m.param_set(w, opt_f), 0)
        for d in range(sizes[L.SIZE_NV]):
            f = A.dof_frictionloss(dof_f, md, d)
            if f > 0:
                A.set_dof_qfrc_passive(dof_d, o_dof, d, A.dof_qfrc_passive(dof_d, o_dof, d)
                                                              - f * ti.tanh(qvel[env_index(w, d)] * s))

    @ti.func
    def tendon_springs_dampers(w, sizes: ti.template(), ten_f: ti.template(), opt_f: ti.template(), ten_d: ti.template(),
                               dof_d: ti.template()):
        """Each tendon's spring (outside its dead band), damper and smoothed friction loss,
        a force along the tendon applied as J^T f."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        mt = m.param_set(w, ten_f)
        s = A.opt_friction_smoothing(opt_f, m.param_set(w, opt_f), 0)
        for t in range(sizes[L.SIZE_NTENDON]):
            length = A.ten_length(ten_d, w, t)
            lower = A.tendon_lengthspring_at(ten_f, mt, t, 0)
            upper = A.tendon_lengthspring_at(ten_f, mt, t, 1)
            k = A.tendon_stiffness(ten_f, mt, t)
            frc = fp(0.0)
            if length > upper:
                frc = k * (upper - length)
            elif length < lower:
                frc = k * (lower - length)
            vel = A.ten_velocity(ten_d, w, t)
            frc -= A.tendon_damping(ten_f, mt, t) * vel
            if sizes[L.SIZE_SMOOTH_FRICTION] != 0:
                frc -= A.tendon_frictionloss(ten_f, mt, t) * ti.tanh(vel * s)
            if frc != 0:
                for d in range(sizes[L.SIZE_NV]):
                    A.set_dof_qfrc_passive(dof_d, o_dof, d, A.dof_qfrc_passive(dof_d, o_dof, d)
                                                                 + A.ten_J_at(ten_d, w, t, d) * frc)

    @ti.func
    def fluid_inertia_box(w, sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), body_f: ti.template(), opt_f: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        """Drag and viscous forces on each body's equivalent inertia box."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        mo = m.param_set(w, opt_f)
        density = A.opt_density(opt_f, mo, 0)
        viscosity = A.opt_viscosity(opt_f, mo, 0)
        pi = fp(3.141592653589793)
        for b in range(1, sizes[L.SIZE_NBODY]):
            mass = A.body_mass(body_f, mb, b)
            if mass >= fp(1e-15):
                inertia = A.body_inertia(body_f, mb, b)
                box = m.vec3(0)
                for k in ti.static(range(3)):
                    other = inertia[(k + 1) % 3] + inertia[(k + 2) % 3] - inertia[k]
                    box[k] = ti.sqrt(ti.max(fp(1e-15), other) / mass * 6)
                xipos = A.body_xipos(body_d, o_body, b)
                ximat = A.body_ximat(body_d, o_body, b)
                cvel = A.body_cvel(body_d, o_body, b)
                com = A.body_subtree_com(body_d, o_body, A.body_root(body_i, b))
                lang = ximat.transpose() @ m.ang(cvel)
                llin = ximat.transpose() @ (m.lin(cvel) + m.ang(cvel).cross(xipos - com) - A.opt_wind(opt_f, mo, 0))
                tq = m.vec3(0)
                fc = m.vec3(0)
                if viscosity > 0:
                    diam = (box[0] + box[1] + box[2]) / 3
                    tq = -pi * diam * diam * diam * viscosity * lang
                    fc = -3 * pi * diam * viscosity * llin
                if density > 0:
                    for k in ti.static(range(3)):
                        a, c = (k + 1) % 3, (k + 2) % 3
                        fc[k] -= 0.5 * density * box[a] * box[c] * ti.abs(llin[k]) * llin[k]
                        tq[k] -= density * box[k] * (box[a] ** 4 + box[c] ** 4) * ti.abs(lang[k]) * lang[k] / 64
                apply_ft(w, sizes, body_i, dof_i, body_d, dof_d, ximat @ fc, ximat @ tq, xipos, b, "dof_qfrc_passive")

    @ti.func
    def gravity_compensation(w, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(),
                             dof_i: ti.template(), body_f: ti.template(), opt_f: ti.template(), body_d: ti.template(),
                             dof_d: ti.template()):
        """qfrc_gravcomp: each body's gravcomp fraction of its weight, lifted at its centre of
        mass (MuJoCo's mj_gravcomp), added to qfrc_passive on the dofs of joints that do not
        route it through the actuators (physics/smooth/actuation.py adds it there)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        g = A.opt_gravity(opt_f, m.param_set(w, opt_f), 0)
        if (sizes[L.SIZE_DISABLE] & DSBL_GRAVITY) == 0 and g.norm() > 0:
            for b in range(1, sizes[L.SIZE_NBODY]):
                share = A.body_gravcomp(body_f, mb, b)
                if share != 0:
                    apply_ft(w, sizes, body_i, dof_i, body_d, dof_d, -g * (A.body_mass(body_f, mb, b) * share),
                             m.vec3(0), A.body_xipos(body_d, o_body, b), b, "dof_qfrc_gravcomp")
            for d in range(sizes[L.SIZE_NV]):
                if A.jnt_actgravcomp(jnt_i, A.dof_jnt(dof_i, d)) == 0:
                    A.set_dof_qfrc_passive(dof_d, o_dof, d, A.dof_qfrc_passive(dof_d, o_dof, d)
                                           + A.dof_qfrc_gravcomp(dof_d, o_dof, d))

    @ti.func
    def passive(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), body_f: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), q_f: ti.template(), ten_f: ti.template(), opt_f: ti.template(),
        # Data in:
        qpos: ti.template(), qvel: ti.template(), body_d: ti.template(), ten_d: ti.template(),
        # Data out: qfrc_passive
        dof_d: ti.template(),
    ):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for d in range(sizes[L.SIZE_NV]):
            A.set_dof_qfrc_passive(dof_d, o_dof, d, 0)
        if sizes[L.SIZE_GRAVCOMP] != 0:  # zero too where passive forces are off, as MuJoCo's
            for d in range(sizes[L.SIZE_NV]):
                A.set_dof_qfrc_gravcomp(dof_d, o_dof, d, 0)
        if (sizes[L.SIZE_DISABLE] & DSBL_PASSIVE) != DSBL_PASSIVE:
            joint_springs_dampers(w, sizes, jnt_i, jnt_f, dof_f, q_f, qpos, qvel, dof_d)
            if ti.static(features.frictionloss):
                if sizes[L.SIZE_SMOOTH_FRICTION] != 0:
                    joint_friction_smooth(w, sizes, dof_f, opt_f, qvel, dof_d)
            if ti.static(features.tendons):
                tendon_springs_dampers(w, sizes, ten_f, opt_f, ten_d, dof_d)
            if ti.static(features.fluid):
                mo = m.param_set(w, opt_f)
                if A.opt_density(opt_f, mo, 0) > 0 or A.opt_viscosity(opt_f, mo, 0) > 0:
                    fluid_inertia_box(w, sizes, body_i, dof_i, body_f, opt_f, body_d, dof_d)
            if sizes[L.SIZE_GRAVCOMP] != 0:
                gravity_compensation(w, sizes, body_i, jnt_i, dof_i, body_f, opt_f, body_d, dof_d)

    return types.SimpleNamespace(passive=passive, apply_ft=apply_ft)
