"""Position and velocity kinematics: body frames, com-based inertias and dofs, velocities,
fixed-tendon lengths (MuJoCo's mj_kinematics, mj_comPos, mj_comVel, mj_tendon).

Each function handles one world ``w``; the pipeline calls them inside its env loop.
"""


import functools
import types

from .. import layout as L
from ..model import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

XPOS, XQUAT, XMAT = L.BODY_D["xpos"][0], L.BODY_D["xquat"][0], L.BODY_D["xmat"][0]
XIPOS, XIMAT = L.BODY_D["xipos"][0], L.BODY_D["ximat"][0]
SUBTREE_COM, SUBTREE_MASS = L.BODY_D["subtree_com"][0], L.BODY_D["subtree_mass"][0]
CINERT, CVEL = L.BODY_D["cinert"][0], L.BODY_D["cvel"][0]
XANCHOR, XAXIS, HALF_SINCOS = L.JNT_D["xanchor"][0], L.JNT_D["xaxis"][0], L.JNT_D["half_sincos"][0]
CDOF, CDOF_DOT = L.DOF_D["cdof"][0], L.DOF_D["cdof_dot"][0]
B_POS, B_QUAT, B_IPOS = L.BODY_F["pos"][0], L.BODY_F["quat"][0], L.BODY_F["ipos"][0]
B_IQUAT, B_MASS, B_INERTIA = L.BODY_F["iquat"][0], L.BODY_F["mass"][0], L.BODY_F["inertia"][0]
J_POS, J_AXIS = L.JNT_F["pos"][0], L.JNT_F["axis"][0]
QPOS0 = L.Q_F["qpos0"][0]
T_LEN, T_VEL = L.TEN_D["length"][0], L.TEN_D["velocity"][0]


@functools.lru_cache(maxsize=None)
def make_kinematics(fp):
    """Positions (body frames, com-based inertias and dofs), then velocities (cvel,
    cdof_dot) and fixed tendons, of one world."""
    positions, velocities = make_positions(fp), make_velocities(fp)
    return types.SimpleNamespace(body_frames=positions.body_frames, com_pos=positions.com_pos,
                                 com_vel=velocities.com_vel, tendons=velocities.tendons)


@functools.lru_cache(maxsize=None)
def make_positions(fp):
    m = make_math(fp)

    @ti.func
    def body_frames(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(), q_f: ti.template(),
        # Data in:
        qpos: ti.template(),
        # Data out:
        body_d: ti.template(), jnt_d: ti.template(),
    ):
        """xpos, xquat, xmat of every body, xipos/ximat of its inertia frame, and the
        world anchor and axis of every joint."""
        o_jnt = m.env_start(w, sizes, L.SIZE_JNT_STRIDE, L.NJNT_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        mq = w % q_f.shape[0]
        m.put(body_d, o_body + XPOS, m.vec3(0))
        m.put(body_d, o_body + XQUAT, m.vec4(1, 0, 0, 0))
        m.put_mat3(body_d, o_body + XMAT, ti.Matrix.identity(fp, 3))
        m.put(body_d, o_body + XIPOS, m.vec3(0))
        m.put_mat3(body_d, o_body + XIMAT, ti.Matrix.identity(fp, 3))
        # the hinges' rotations depend on qpos alone: computed apart, their sin and cos
        # (a long chain of dependent flops each) overlap instead of waiting in turn on the
        # chain of body frames, which needs each parent's frame first
        for j in range(sizes[L.SIZE_NJNT]):
            if jnt_i[j * L.NJNT_I + L.JNT_TYPE] == JNT_HINGE:
                a = jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]
                s, c = m.sincos(fp(0.5) * (qpos[w, a] - q_f[mq, a, QPOS0]))
                jnt_d[o_jnt + j * L.NJNT_D + HALF_SINCOS] = s
                jnt_d[o_jnt + j * L.NJNT_D + HALF_SINCOS + 1] = c
        for b in range(1, sizes[L.SIZE_NBODY]):
            jadr = body_i[b * L.NBODY_I + L.BODY_JNTADR]
            jnum = body_i[b * L.NBODY_I + L.BODY_JNTNUM]
            pos = m.vec3(0)
            quat = m.vec4(1, 0, 0, 0)
            if jnum == 1 and jnt_i[jadr * L.NJNT_I + L.JNT_TYPE] == JNT_FREE:
                a = jnt_i[jadr * L.NJNT_I + L.JNT_QPOSADR]
                pos = m.vec3(qpos[w, a], qpos[w, a + 1], qpos[w, a + 2])
                # qpos itself is left as given: MuJoCo's forward pass normalizes a copy
                quat = m.quat_normalize(m.vec4(qpos[w, a + 3], qpos[w, a + 4], qpos[w, a + 5], qpos[w, a + 6]))
                m.put(jnt_d, o_jnt + jadr * L.NJNT_D + XANCHOR, pos)
                m.put(jnt_d, o_jnt + jadr * L.NJNT_D + XAXIS, m.vec3(0, 0, 1))
            else:
                p = body_i[b * L.NBODY_I + L.BODY_PARENT]
                pquat = m.at4(body_d, o_body + p * L.NBODY_D + XQUAT)
                pos = (m.at3(body_d, o_body + p * L.NBODY_D + XPOS)
                       + m.quat_rotate(pquat, m.at3(body_f, mb + b * L.NBODY_F + B_POS)))
                quat = m.quat_mul(pquat, m.at4(body_f, mb + b * L.NBODY_F + B_QUAT))
                for j in range(jadr, jadr + jnum):
                    jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
                    a = jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]
                    axis = m.at3(jnt_f, mj + j * L.NJNT_F + J_AXIS)
                    jpos = m.at3(jnt_f, mj + j * L.NJNT_F + J_POS)
                    xaxis = m.quat_rotate(quat, axis)
                    xanchor = m.quat_rotate(quat, jpos) + pos
                    if jtype == JNT_SLIDE:
                        pos += xaxis * (qpos[w, a] - q_f[mq, a, QPOS0])
                    else:
                        qloc = m.vec4(1, 0, 0, 0)
                        if jtype == JNT_BALL:
                            qloc = m.quat_normalize(m.vec4(qpos[w, a], qpos[w, a + 1], qpos[w, a + 2], qpos[w, a + 3]))
                        else:
                            qloc = m.half_angle_quat(axis, jnt_d[o_jnt + j * L.NJNT_D + HALF_SINCOS],
                                                     jnt_d[o_jnt + j * L.NJNT_D + HALF_SINCOS + 1])
                        quat = m.quat_mul(quat, qloc)
                        pos = xanchor - m.quat_rotate(quat, jpos)
                    m.put(jnt_d, o_jnt + j * L.NJNT_D + XANCHOR, xanchor)
                    m.put(jnt_d, o_jnt + j * L.NJNT_D + XAXIS, xaxis)
            # no normalization here: a product of unit quaternions (the free and ball joints'
            # normalized as read) drifts from unit length by rounding alone, and a square
            # root and a division on every body would lengthen the parent-to-child chain
            xmat = m.quat_to_mat(quat)
            m.put(body_d, o_body + b * L.NBODY_D + XPOS, pos)
            m.put(body_d, o_body + b * L.NBODY_D + XQUAT, quat)
            m.put_mat3(body_d, o_body + b * L.NBODY_D + XMAT, xmat)
            m.put(body_d, o_body + b * L.NBODY_D + XIPOS, pos + xmat @ m.at3(body_f, mb + b * L.NBODY_F + B_IPOS))
            iquat = m.quat_mul(quat, m.at4(body_f, mb + b * L.NBODY_F + B_IQUAT))
            m.put_mat3(body_d, o_body + b * L.NBODY_D + XIMAT, m.quat_to_mat(m.quat_normalize(iquat)))

    @ti.func
    def com_pos(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(),
        # Data in: body frames
        # Data out:
        body_d: ti.template(), jnt_d: ti.template(), dof_d: ti.template(),
    ):
        """Subtree centres of mass, com-based inertias (cinert) and motion dofs (cdof)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_jnt = m.env_start(w, sizes, L.SIZE_JNT_STRIDE, L.NJNT_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        nbody = sizes[L.SIZE_NBODY]
        for b in range(nbody):
            mass = body_f[mb + b * L.NBODY_F + B_MASS]
            m.put(body_d, o_body + b * L.NBODY_D + SUBTREE_COM, mass * m.at3(body_d, o_body + b * L.NBODY_D + XIPOS))
            body_d[o_body + b * L.NBODY_D + SUBTREE_MASS] = mass
        for i in range(nbody - 1):
            b = nbody - 1 - i
            mass = body_d[o_body + b * L.NBODY_D + SUBTREE_MASS]
            com = m.at3(body_d, o_body + b * L.NBODY_D + SUBTREE_COM)
            p = body_i[b * L.NBODY_I + L.BODY_PARENT]
            prow = o_body + p * L.NBODY_D
            m.put(body_d, prow + SUBTREE_COM, m.at3(body_d, prow + SUBTREE_COM) + com)
            body_d[prow + SUBTREE_MASS] = body_d[prow + SUBTREE_MASS] + mass
            if mass < fp(1e-15):
                m.put(body_d, o_body + b * L.NBODY_D + SUBTREE_COM, m.at3(body_d, o_body + b * L.NBODY_D + XIPOS))
            else:
                m.put(body_d, o_body + b * L.NBODY_D + SUBTREE_COM, com / mass)
        if body_d[o_body + SUBTREE_MASS] >= fp(1e-15):
            m.put(body_d, o_body + SUBTREE_COM, m.at3(body_d, o_body + SUBTREE_COM) / body_d[o_body + SUBTREE_MASS])
        m.put(body_d, o_body + CINERT, m.vec10(0))
        for b in range(1, nbody):
            root = body_i[b * L.NBODY_I + L.BODY_ROOT]
            dif = m.at3(body_d, o_body + b * L.NBODY_D + XIPOS) - m.at3(body_d, o_body + root * L.NBODY_D + SUBTREE_COM)
            ximat = m.at_mat3(body_d, o_body + b * L.NBODY_D + XIMAT)
            cinert = m.inert_com(m.at3(body_f, mb + b * L.NBODY_F + B_INERTIA), ximat, dif,
                                 body_f[mb + b * L.NBODY_F + B_MASS])
            m.put(body_d, o_body + b * L.NBODY_D + CINERT, cinert)
        for j in range(sizes[L.SIZE_NJNT]):
            b = jnt_i[j * L.NJNT_I + L.JNT_BODY]
            da = jnt_i[j * L.NJNT_I + L.JNT_DOFADR]
            jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
            com = m.at3(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_ROOT] * L.NBODY_D + SUBTREE_COM)
            offset = com - m.at3(jnt_d, o_jnt + j * L.NJNT_D + XANCHOR)
            if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                xaxis = m.at3(jnt_d, o_jnt + j * L.NJNT_D + XAXIS)
                m.put(dof_d, o_dof + da * L.NDOF_D + CDOF, m.dof_com(xaxis, offset, jtype == JNT_HINGE))
            else:
                rot = 0
                if jtype == JNT_FREE:
                    rot = 3
                    for k in ti.static(range(3)):
                        e = m.vec3(0)
                        e[k] = 1
                        m.put(dof_d, o_dof + (da + k) * L.NDOF_D + CDOF, m.spatial(m.vec3(0), e))
                xmat = m.at_mat3(body_d, o_body + b * L.NBODY_D + XMAT)
                for k in ti.static(range(3)):
                    axis = m.vec3(xmat[0, k], xmat[1, k], xmat[2, k])
                    m.put(dof_d, o_dof + (da + rot + k) * L.NDOF_D + CDOF, m.dof_com(axis, offset, True))

    return types.SimpleNamespace(body_frames=body_frames, com_pos=com_pos)


@functools.lru_cache(maxsize=None)
def make_velocities(fp):
    m = make_math(fp)

    @ti.func
    def com_vel(
        w,
        # Model:
        sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(),
        # Data in:
        qvel: ti.template(),
        # Data out:
        body_d: ti.template(), dof_d: ti.template(),
    ):
        """Body spatial velocities (cvel) and the time derivatives of cdof (cdof_dot)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        m.put(body_d, o_body + CVEL, m.vec6(0))
        for b in range(1, sizes[L.SIZE_NBODY]):
            cvel = m.at6(body_d, o_body + body_i[b * L.NBODY_I + L.BODY_PARENT] * L.NBODY_D + CVEL)
            da = body_i[b * L.NBODY_I + L.BODY_DOFADR]
            k = 0
            while k < body_i[b * L.NBODY_I + L.BODY_DOFNUM]:
                d = da + k
                jtype = jnt_i[dof_i[d * L.NDOF_I + L.DOF_JNT] * L.NJNT_I + L.JNT_TYPE]
                if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                    m.put(dof_d, o_dof + d * L.NDOF_D + CDOF_DOT,
                          m.cross_motion(cvel, m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF)))
                    cvel += m.at6(dof_d, o_dof + d * L.NDOF_D + CDOF) * qvel[w, d]
                    k += 1
                else:
                    if jtype == JNT_FREE:
                        # world-fixed translation axes: their derivative is zero
                        for t in ti.static(range(3)):
                            m.put(dof_d, o_dof + (d + t) * L.NDOF_D + CDOF_DOT, m.vec6(0))
                            cvel += m.at6(dof_d, o_dof + (d + t) * L.NDOF_D + CDOF) * qvel[w, d + t]
                        d += 3
                        k += 3
                    # the three rotations use the velocity before any of them is added
                    for t in ti.static(range(3)):
                        m.put(dof_d, o_dof + (d + t) * L.NDOF_D + CDOF_DOT,
                              m.cross_motion(cvel, m.at6(dof_d, o_dof + (d + t) * L.NDOF_D + CDOF)))
                    for t in ti.static(range(3)):
                        cvel += m.at6(dof_d, o_dof + (d + t) * L.NDOF_D + CDOF) * qvel[w, d + t]
                    k += 3
            m.put(body_d, o_body + b * L.NBODY_D + CVEL, cvel)

    @ti.func
    def tendons(w, sizes: ti.template(), jnt_i: ti.template(), ten_i: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(), qpos: ti.template(), qvel: ti.template(), ten_d: ti.template()):
        """Fixed tendon lengths and velocities: sums of coef * joint coordinate."""
        mw = w % wrap_f.shape[0]
        for t in range(sizes[L.SIZE_NTENDON]):
            length = fp(0.0)
            vel = fp(0.0)
            for k in range(ten_i[t, L.TEN_ADR], ten_i[t, L.TEN_ADR] + ten_i[t, L.TEN_NUM]):
                j = wrap_i[k, L.WRAP_OBJID]
                coef = wrap_f[mw, k, L.WRAP_COEF]
                length += coef * qpos[w, jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]]
                vel += coef * qvel[w, jnt_i[j * L.NJNT_I + L.JNT_DOFADR]]
            ten_d[w, t, T_LEN] = length
            ten_d[w, t, T_VEL] = vel

    return types.SimpleNamespace(com_vel=com_vel, tendons=tendons)
