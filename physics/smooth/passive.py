"""Passive forces: joint springs and dampers, fixed-tendon springs and dampers, smooth
joint friction loss, and fluid drag from the inertia-box model (MuJoCo's mj_passive)."""


import functools
import types

from .. import layout as L
from ..model import DSBL_PASSIVE, JNT_FREE, JNT_HINGE, JNT_SLIDE
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

QFRC_PASSIVE, CDOF = L.DOF_D["qfrc_passive"][0], L.DOF_D["cdof"][0]
XIPOS, XIMAT = L.BODY_D["xipos"][0], L.BODY_D["ximat"][0]
SUBTREE_COM, CVEL = L.BODY_D["subtree_com"][0], L.BODY_D["cvel"][0]
B_MASS, B_INERTIA = L.BODY_F["mass"][0], L.BODY_F["inertia"][0]
J_STIFFNESS = L.JNT_F["stiffness"][0]
DAMPING, FRICTIONLOSS = L.DOF_F["damping"][0], L.DOF_F["frictionloss"][0]
QPOS_SPRING = L.Q_F["qpos_spring"][0]
T_STIFF, T_DAMP, T_FRIC, T_SPRING = (L.TEN_F[k][0] for k in ("stiffness", "damping", "frictionloss", "lengthspring"))
T_LEN, T_VEL = L.TEN_D["length"][0], L.TEN_D["velocity"][0]
WIND, DENSITY, VISCOSITY = L.OPT_F["wind"][0], L.OPT_F["density"][0], L.OPT_F["viscosity"][0]
SMOOTHING = L.OPT_F["friction_smoothing"][0]


@functools.lru_cache(maxsize=None)
def make_passive(fp):
    m = make_math(fp)

    @ti.func
    def apply_ft(w, sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), body_d: ti.template(), dof_d: ti.template(), force, torque, point, b, col: ti.template()):
        """Add J^T [force, torque] at a world ``point`` on body ``b`` to column col of dof_d."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        # the last dof on the path from the world to b; its ancestors are the chain
        d = -1
        bb = b
        while bb > 0 and d < 0:
            if body_i[bb * L.NBODY_I + L.BODY_DOFNUM] > 0:
                d = body_i[bb * L.NBODY_I + L.BODY_DOFADR] + body_i[bb * L.NBODY_I + L.BODY_DOFNUM] - 1
            bb = body_i[bb * L.NBODY_I + L.BODY_PARENT]
        while d >= 0:
            root = body_i[dof_i[d * L.NDOF_I + L.DOF_BODY] * L.NBODY_I + L.BODY_ROOT]
            c = m.at3(body_d, o_body + root * L.NBODY_D + SUBTREE_COM)
            wrench = m.spatial(torque + (point - c).cross(force), force)
            dof_d[o_dof + d * L.NDOF_D + col] = (dof_d[o_dof + d * L.NDOF_D + col]
                                                 + (m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF).dot(wrench)))
            d = dof_i[d * L.NDOF_I + L.DOF_PARENT]

    @ti.func
    def joint_springs_dampers(w, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), q_f: ti.template(), qpos: ti.template(), qvel: ti.template(), dof_d: ti.template()):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        mq = w % q_f.shape[0]
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        for j in range(sizes[L.SIZE_NJNT]):
            k = jnt_f[mj + j * L.NJNT_F + J_STIFFNESS]
            jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
            pa = jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]
            da = jnt_i[j * L.NJNT_I + L.JNT_DOFADR]
            if k != 0:
                if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                    dof_d[o_dof + da * L.NDOF_D + QFRC_PASSIVE] = (dof_d[o_dof + da * L.NDOF_D + QFRC_PASSIVE]
                                                                   - k * (qpos[w, pa] - q_f[mq, pa, QPOS_SPRING]))
                else:
                    if jtype == JNT_FREE:
                        for t in ti.static(range(3)):
                            dof_d[o_dof + (da + t) * L.NDOF_D + QFRC_PASSIVE] = (
                                dof_d[o_dof + (da + t) * L.NDOF_D + QFRC_PASSIVE]
                                - k * (qpos[w, pa + t] - q_f[mq, pa + t, QPOS_SPRING]))
                        pa += 3
                        da += 3
                    q = m.quat_normalize(m.vec4(qpos[w, pa], qpos[w, pa + 1], qpos[w, pa + 2], qpos[w, pa + 3]))
                    q0 = m.vec4(q_f[mq, pa, QPOS_SPRING], q_f[mq, pa + 1, QPOS_SPRING],
                                q_f[mq, pa + 2, QPOS_SPRING], q_f[mq, pa + 3, QPOS_SPRING])
                    dif = m.quat_sub(q, q0)
                    for t in ti.static(range(3)):
                        dof_d[o_dof + (da + t) * L.NDOF_D + QFRC_PASSIVE] = (
                            dof_d[o_dof + (da + t) * L.NDOF_D + QFRC_PASSIVE] - k * dif[t])
        for d in range(sizes[L.SIZE_NV]):
            dof_d[o_dof + d * L.NDOF_D + QFRC_PASSIVE] = (dof_d[o_dof + d * L.NDOF_D + QFRC_PASSIVE]
                                                          - dof_f[md + d * L.NDOF_F + DAMPING] * qvel[w, d])

    @ti.func
    def joint_friction_smooth(w, sizes: ti.template(), dof_f: ti.template(), opt_f: ti.template(), qvel: ti.template(), dof_d: ti.template()):
        """Coulomb friction loss smoothed as frictionloss * tanh(qvel * smoothing)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        s = opt_f[w % opt_f.shape[0], 0, SMOOTHING]
        for d in range(sizes[L.SIZE_NV]):
            f = dof_f[md + d * L.NDOF_F + FRICTIONLOSS]
            if f > 0:
                dof_d[o_dof + d * L.NDOF_D + QFRC_PASSIVE] = (dof_d[o_dof + d * L.NDOF_D + QFRC_PASSIVE]
                                                              - f * ti.tanh(qvel[w, d] * s))

    @ti.func
    def tendon_springs_dampers(w, sizes: ti.template(), jnt_i: ti.template(), ten_i: ti.template(), ten_f: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(), opt_f: ti.template(), ten_d: ti.template(), dof_d: ti.template()):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        mt = w % ten_f.shape[0]
        mw = w % wrap_f.shape[0]
        s = opt_f[w % opt_f.shape[0], 0, SMOOTHING]
        for t in range(sizes[L.SIZE_NTENDON]):
            length = ten_d[w, t, T_LEN]
            lower = ten_f[mt, t, T_SPRING]
            upper = ten_f[mt, t, T_SPRING + 1]
            k = ten_f[mt, t, T_STIFF]
            frc = fp(0.0)
            if length > upper:
                frc = k * (upper - length)
            elif length < lower:
                frc = k * (lower - length)
            vel = ten_d[w, t, T_VEL]
            frc -= ten_f[mt, t, T_DAMP] * vel
            if sizes[L.SIZE_SMOOTH_FRICTION] != 0:
                frc -= ten_f[mt, t, T_FRIC] * ti.tanh(vel * s)
            for n in range(ten_i[t, L.TEN_ADR], ten_i[t, L.TEN_ADR] + ten_i[t, L.TEN_NUM]):
                da = jnt_i[wrap_i[n, L.WRAP_OBJID] * L.NJNT_I + L.JNT_DOFADR]
                dof_d[o_dof + da * L.NDOF_D + QFRC_PASSIVE] = (dof_d[o_dof + da * L.NDOF_D + QFRC_PASSIVE]
                                                               + wrap_f[mw, n, L.WRAP_COEF] * frc)

    @ti.func
    def fluid_inertia_box(w, sizes: ti.template(), body_i: ti.template(), dof_i: ti.template(), body_f: ti.template(), opt_f: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        """Drag and viscous forces on each body's equivalent inertia box."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        mo = w % opt_f.shape[0]
        density = opt_f[mo, 0, DENSITY]
        viscosity = opt_f[mo, 0, VISCOSITY]
        pi = fp(3.141592653589793)
        for b in range(1, sizes[L.SIZE_NBODY]):
            mass = body_f[mb + b * L.NBODY_F + B_MASS]
            if mass >= fp(1e-15):
                inertia = m.at3(body_f, mb + b * L.NBODY_F + B_INERTIA)
                box = m.vec3(0)
                for k in ti.static(range(3)):
                    other = inertia[(k + 1) % 3] + inertia[(k + 2) % 3] - inertia[k]
                    box[k] = ti.sqrt(ti.max(fp(1e-15), other) / mass * 6)
                xipos = m.at3(body_d, o_body + b * L.NBODY_D + XIPOS)
                ximat = m.at_mat3(body_d, o_body + b * L.NBODY_D + XIMAT)
                cvel = m.at6(body_d, o_body + b * L.NBODY_D + CVEL)
                com = m.at3(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_ROOT] * L.NBODY_D + SUBTREE_COM)
                lang = ximat.transpose() @ m.ang(cvel)
                llin = ximat.transpose() @ (m.lin(cvel) + m.ang(cvel).cross(xipos - com) - m.ld3(opt_f, mo, 0, WIND))
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
                apply_ft(w, sizes, body_i, dof_i, body_d, dof_d, ximat @ fc, ximat @ tq, xipos, b, QFRC_PASSIVE)

    @ti.func
    def passive(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), ten_i: ti.template(), wrap_i: ti.template(), body_f: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), q_f: ti.template(), ten_f: ti.template(), wrap_f: ti.template(), opt_f: ti.template(),
        # Data in:
        qpos: ti.template(), qvel: ti.template(), body_d: ti.template(), ten_d: ti.template(),
        # Data out: qfrc_passive
        dof_d: ti.template(),
    ):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for d in range(sizes[L.SIZE_NV]):
            dof_d[o_dof + d * L.NDOF_D + QFRC_PASSIVE] = 0
        if (sizes[L.SIZE_DISABLE] & DSBL_PASSIVE) != DSBL_PASSIVE:
            joint_springs_dampers(w, sizes, jnt_i, jnt_f, dof_f, q_f, qpos, qvel, dof_d)
            if sizes[L.SIZE_SMOOTH_FRICTION] != 0:
                joint_friction_smooth(w, sizes, dof_f, opt_f, qvel, dof_d)
            tendon_springs_dampers(w, sizes, jnt_i, ten_i, ten_f, wrap_i, wrap_f, opt_f, ten_d, dof_d)
            mo = w % opt_f.shape[0]
            if opt_f[mo, 0, DENSITY] > 0 or opt_f[mo, 0, VISCOSITY] > 0:
                fluid_inertia_box(w, sizes, body_i, dof_i, body_f, opt_f, body_d, dof_d)

    return types.SimpleNamespace(passive=passive, apply_ft=apply_ft)
