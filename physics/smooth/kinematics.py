"""Position and velocity kinematics: body frames, com-based inertias and dofs, velocities
(MuJoCo's mj_kinematics, mj_comPos, mj_comVel; tendons are physics/smooth/tendons.py).

Each function handles one world ``w``; the pipeline calls them inside its env loop.
"""


import functools
import types

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE
from ..runtime.backend import ti
from ..access import make_access
from ..runtime.ti_math import make_math
from .tree import make_tree



@functools.lru_cache(maxsize=None)
def make_kinematics(fp):
    """Positions (body frames, com-based inertias and dofs), then velocities (cvel,
    cdof_dot), of one world."""
    positions, velocities = make_positions(fp), make_velocities(fp)
    return types.SimpleNamespace(**vars(positions), **vars(velocities))


@functools.lru_cache(maxsize=None)
def make_positions(fp):
    m = make_math(fp)
    A = make_access(fp)
    tree = make_tree(fp)

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
        for j in range(sizes[L.SIZE_NJNT]):
            hinge_half_angle(w, j, sizes, jnt_i, q_f, qpos, jnt_d)
        body_chain(w, sizes, body_i, body_f, jnt_i, jnt_f, q_f, qpos, body_d, jnt_d)

    @ti.func
    def hinge_half_angle(w, j, sizes: ti.template(), jnt_i: ti.template(), q_f: ti.template(), qpos: ti.template(),
                         jnt_d: ti.template()):
        """The sine and cosine of half of joint j's angle, if a hinge. The hinges' rotations
        depend on qpos alone: computed apart, their sin and cos (a long chain of dependent
        flops each) overlap instead of waiting in turn on the chain of body frames, which
        needs each parent's frame first."""
        if A.jnt_type(jnt_i, j) == JNT_HINGE:
            o_jnt = m.env_start(w, sizes, L.SIZE_JNT_STRIDE, L.NJNT_D)
            a = A.jnt_qposadr(jnt_i, j)
            s, c = m.sincos(fp(0.5) * (qpos[env_index(w, a)] - A.qpos0(q_f, m.param_set(w, q_f), a)))
            A.set_jnt_half_sincos_at(jnt_d, o_jnt, j, 0, s)
            A.set_jnt_half_sincos_at(jnt_d, o_jnt, j, 1, c)

    @ti.func
    def body_chain(w, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(),
                   jnt_f: ti.template(), q_f: ti.template(), qpos: ti.template(), body_d: ti.template(),
                   jnt_d: ti.template()):
        """The body frames from the root outwards, each from its parent's (the hinges' half
        angles computed before)."""
        o_jnt = m.env_start(w, sizes, L.SIZE_JNT_STRIDE, L.NJNT_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        mq = m.param_set(w, q_f)
        world_frame(body_d, o_body)
        for b in range(1, sizes[L.SIZE_NBODY]):
            body_frame(w, b, o_jnt, o_body, mb, mj, mq, body_i, body_f, jnt_i, jnt_f, q_f, qpos, body_d, jnt_d)

    @ti.func
    def tree_frame(w, b, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(),
                   jnt_f: ti.template(), q_f: ti.template(), qpos: ti.template(), body_d: ti.template(),
                   jnt_d: ti.template()):
        """Body b's frame alone (the world's for b = 0), its parent's known: one thread of
        a pass over the tree by level."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        if b == 0:
            world_frame(body_d, o_body)
        else:
            body_frame(w, b, m.env_start(w, sizes, L.SIZE_JNT_STRIDE, L.NJNT_D), o_body,
                       m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F),
                       m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F), m.param_set(w, q_f), body_i, body_f, jnt_i, jnt_f, q_f,
                       qpos, body_d, jnt_d)

    @ti.func
    def world_frame(body_d: ti.template(), o_body):
        A.set_body_xpos(body_d, o_body, 0, m.vec3(0))
        A.set_body_xquat(body_d, o_body, 0, m.vec4(1, 0, 0, 0))
        A.set_body_xmat(body_d, o_body, 0, ti.Matrix.identity(fp, 3))
        A.set_body_xipos(body_d, o_body, 0, m.vec3(0))
        A.set_body_ximat(body_d, o_body, 0, ti.Matrix.identity(fp, 3))

    @ti.func
    def body_frame(w, b, o_jnt, o_body, mb, mj, mq, body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(),
                   jnt_f: ti.template(), q_f: ti.template(), qpos: ti.template(), body_d: ti.template(),
                   jnt_d: ti.template()):
        """Body b's frame (b > 0) from its parent's, and its joints' anchors and axes (env
        w's rows of the data tables at o_jnt and o_body, of the model's at mb, mj and mq)."""
        jadr = A.body_jntadr(body_i, b)
        jnum = A.body_jntnum(body_i, b)
        pos = m.vec3(0)
        quat = m.vec4(1, 0, 0, 0)
        if jnum == 1 and A.jnt_type(jnt_i, jadr) == JNT_FREE:
            a = A.jnt_qposadr(jnt_i, jadr)
            pos = m.vec3(qpos[env_index(w, a)], qpos[env_index(w, a + 1)], qpos[env_index(w, a + 2)])
            # qpos itself is left as given: MuJoCo's forward pass normalizes a copy
            quat = m.quat_normalize(m.vec4(qpos[env_index(w, a + 3)], qpos[env_index(w, a + 4)], qpos[env_index(w, a + 5)], qpos[env_index(w, a + 6)]))
            A.set_jnt_xanchor(jnt_d, o_jnt, jadr, pos)
            A.set_jnt_xaxis(jnt_d, o_jnt, jadr, m.vec3(0, 0, 1))
        else:
            p = A.body_parent(body_i, b)
            pquat = A.body_xquat(body_d, o_body, p)
            lpos, lquat = A.body_pos(body_f, mb, b), A.body_quat(body_f, mb, b)
            if A.body_mocapid(body_i, b) >= 0:  # a mocap body: the env's pose (mjData's mocap_pos, mocap_quat)
                lpos = A.body_mocap_pos(body_d, o_body, b)
                lquat = m.quat_normalize(A.body_mocap_quat(body_d, o_body, b))
            pos = A.body_xpos(body_d, o_body, p) + m.quat_rotate(pquat, lpos)
            quat = m.quat_mul(pquat, lquat)
            for j in range(jadr, jadr + jnum):
                jtype = A.jnt_type(jnt_i, j)
                a = A.jnt_qposadr(jnt_i, j)
                axis = A.jnt_axis(jnt_f, mj, j)
                jpos = A.jnt_pos(jnt_f, mj, j)
                xaxis = m.quat_rotate(quat, axis)
                xanchor = m.quat_rotate(quat, jpos) + pos
                if jtype == JNT_SLIDE:
                    pos += xaxis * (qpos[env_index(w, a)] - A.qpos0(q_f, mq, a))
                else:
                    qloc = m.vec4(1, 0, 0, 0)
                    if jtype == JNT_BALL:
                        qloc = m.quat_normalize(m.vec4(qpos[env_index(w, a)], qpos[env_index(w, a + 1)], qpos[env_index(w, a + 2)], qpos[env_index(w, a + 3)]))
                    else:
                        qloc = m.half_angle_quat(axis, A.jnt_half_sincos_at(jnt_d, o_jnt, j, 0),
                                                 A.jnt_half_sincos_at(jnt_d, o_jnt, j, 1))
                    quat = m.quat_mul(quat, qloc)
                    pos = xanchor - m.quat_rotate(quat, jpos)
                A.set_jnt_xanchor(jnt_d, o_jnt, j, xanchor)
                A.set_jnt_xaxis(jnt_d, o_jnt, j, xaxis)
        # no normalization here: a product of unit quaternions (the free and ball joints'
        # normalized as read) drifts from unit length by rounding alone, and a square
        # root and a division on every body would lengthen the parent-to-child chain
        xmat = m.quat_to_mat(quat)
        A.set_body_xpos(body_d, o_body, b, pos)
        A.set_body_xquat(body_d, o_body, b, quat)
        A.set_body_xmat(body_d, o_body, b, xmat)
        A.set_body_xipos(body_d, o_body, b, pos + xmat @ A.body_ipos(body_f, mb, b))
        iquat = m.quat_mul(quat, A.body_iquat(body_f, mb, b))
        A.set_body_ximat(body_d, o_body, b, m.quat_to_mat(m.quat_normalize(iquat)))

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
        subtree_com(w, sizes, body_i, body_f, body_d)
        for b in range(sizes[L.SIZE_NBODY]):
            body_cinert(w, b, sizes, body_i, body_f, body_d)
        for j in range(sizes[L.SIZE_NJNT]):
            joint_cdof(w, j, sizes, body_i, jnt_i, body_d, jnt_d, dof_d)

    @ti.func
    def subtree_com(w, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), body_d: ti.template()):
        """Each body's subtree mass and centre of mass, from the leaves inwards."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        nbody = sizes[L.SIZE_NBODY]
        for b in range(nbody):
            mass = A.body_mass(body_f, mb, b)
            A.set_body_subtree_com(body_d, o_body, b, mass * A.body_xipos(body_d, o_body, b))
            A.set_body_subtree_mass(body_d, o_body, b, mass)
        for i in range(nbody - 1):
            b = nbody - 1 - i
            mass = A.body_subtree_mass(body_d, o_body, b)
            com = A.body_subtree_com(body_d, o_body, b)
            p = A.body_parent(body_i, b)
            A.set_body_subtree_com(body_d, o_body, p, A.body_subtree_com(body_d, o_body, p) + com)
            A.set_body_subtree_mass(body_d, o_body, p, A.body_subtree_mass(body_d, o_body, p) + mass)
            if mass < fp(1e-15):
                A.set_body_subtree_com(body_d, o_body, b, A.body_xipos(body_d, o_body, b))
            else:
                A.set_body_subtree_com(body_d, o_body, b, com / mass)
        if A.body_subtree_mass(body_d, o_body, 0) >= fp(1e-15):
            A.set_body_subtree_com(body_d, o_body, 0, A.body_subtree_com(body_d, o_body, 0) / A.body_subtree_mass(body_d, o_body, 0))

    # subtree_com's three parts for a pass by level, each one body's work: its own mass
    # moment, then (from the deepest level in) the sums of its children's in descending
    # body order, as subtree_com adds them to a parent, so that the sums come out the same
    @ti.func
    def subtree_own(w, b, sizes: ti.template(), body_f: ti.template(), body_d: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mass = A.body_mass(body_f, m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F), b)
        A.set_body_subtree_com(body_d, o_body, b, mass * A.body_xipos(body_d, o_body, b))
        A.set_body_subtree_mass(body_d, o_body, b, mass)

    @ti.func
    def subtree_gather(w, b, sizes: ti.template(), body_i: ti.template(), body_d: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        com = tree.child_sum(b, o_body, body_i, body_d, "body_subtree_com")
        mass = tree.child_sum(b, o_body, body_i, body_d, "body_subtree_mass")
        A.set_body_subtree_com(body_d, o_body, b, com)
        A.set_body_subtree_mass(body_d, o_body, b, mass)

    @ti.func
    def subtree_mean(w, b, sizes: ti.template(), body_d: ti.template()):
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mass = A.body_subtree_mass(body_d, o_body, b)
        if mass >= fp(1e-15):
            A.set_body_subtree_com(body_d, o_body, b, A.body_subtree_com(body_d, o_body, b) / mass)
        elif b > 0:
            A.set_body_subtree_com(body_d, o_body, b, A.body_xipos(body_d, o_body, b))

    @ti.func
    def body_cinert(w, b, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), body_d: ti.template()):
        """Body b's inertia about its tree's centre of mass (the world body's is zero)."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        if b == 0:
            A.set_body_cinert(body_d, o_body, 0, m.vec10(0))
        else:
            mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
            root = A.body_root(body_i, b)
            dif = A.body_xipos(body_d, o_body, b) - A.body_subtree_com(body_d, o_body, root)
            ximat = A.body_ximat(body_d, o_body, b)
            cinert = m.inert_com(A.body_inertia(body_f, mb, b), ximat, dif,
                                 A.body_mass(body_f, mb, b))
            A.set_body_cinert(body_d, o_body, b, cinert)

    @ti.func
    def joint_cdof(w, j, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), body_d: ti.template(),
                   jnt_d: ti.template(), dof_d: ti.template()):
        """The motion axes (cdof) of joint j's dofs about its tree's centre of mass."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_jnt = m.env_start(w, sizes, L.SIZE_JNT_STRIDE, L.NJNT_D)
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        b = A.jnt_body(jnt_i, j)
        da = A.jnt_dofadr(jnt_i, j)
        jtype = A.jnt_type(jnt_i, j)
        com = A.body_subtree_com(body_d, o_body, A.body_root(body_i, b))
        offset = com - A.jnt_xanchor(jnt_d, o_jnt, j)
        if jtype == JNT_HINGE or jtype == JNT_SLIDE:
            xaxis = A.jnt_xaxis(jnt_d, o_jnt, j)
            A.set_dof_cdof(dof_d, o_dof, da, m.dof_com(xaxis, offset, jtype == JNT_HINGE))
        else:
            rot = 0
            if jtype == JNT_FREE:
                rot = 3
                for k in ti.static(range(3)):
                    e = m.vec3(0)
                    e[k] = 1
                    A.set_dof_cdof(dof_d, o_dof, da + k, m.spatial(m.vec3(0), e))
            xmat = A.body_xmat(body_d, o_body, b)
            for k in ti.static(range(3)):
                axis = m.vec3(xmat[0, k], xmat[1, k], xmat[2, k])
                A.set_dof_cdof(dof_d, o_dof, da + rot + k, m.dof_com(axis, offset, True))

    return types.SimpleNamespace(body_frames=body_frames, hinge_half_angle=hinge_half_angle, body_chain=body_chain,
                                 tree_frame=tree_frame, subtree_own=subtree_own, subtree_gather=subtree_gather,
                                 subtree_mean=subtree_mean,
                                 com_pos=com_pos, subtree_com=subtree_com, body_cinert=body_cinert,
                                 joint_cdof=joint_cdof)


@functools.lru_cache(maxsize=None)
def make_velocities(fp):
    m = make_math(fp)
    A = make_access(fp)

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
        A.set_body_cvel(body_d, o_body, 0, m.vec6(0))
        for b in range(1, sizes[L.SIZE_NBODY]):
            body_velocity(w, b, o_dof, o_body, body_i, jnt_i, dof_i, qvel, body_d, dof_d)

    @ti.func
    def tree_velocity(w, b, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(),
                      qvel: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        """Body b's cvel alone (zero for the world, b = 0), its parent's known: one thread
        of a pass over the tree by level."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        if b == 0:
            A.set_body_cvel(body_d, o_body, 0, m.vec6(0))
        else:
            body_velocity(w, b, m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D), o_body, body_i, jnt_i, dof_i,
                          qvel, body_d, dof_d)

    @ti.func
    def body_velocity(w, b, o_dof, o_body, body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(),
                      qvel: ti.template(), body_d: ti.template(), dof_d: ti.template()):
        """Body b's cvel (b > 0) from its parent's, and its dofs' cdof_dot."""
        cvel = A.body_cvel(body_d, o_body, A.body_parent(body_i, b))
        da = A.body_dofadr(body_i, b)
        k = 0
        while k < A.body_dofnum(body_i, b):
            d = da + k
            jtype = A.jnt_type(jnt_i, A.dof_jnt(dof_i, d))
            if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                A.set_dof_cdof_dot(dof_d, o_dof, d, m.cross_motion(cvel, A.dof_cdof(dof_d, o_dof, d)))
                cvel += A.dof_cdof(dof_d, o_dof, d) * qvel[env_index(w, d)]
                k += 1
            else:
                if jtype == JNT_FREE:
                    # world-fixed translation axes: their derivative is zero
                    for t in ti.static(range(3)):
                        A.set_dof_cdof_dot(dof_d, o_dof, d + t, m.vec6(0))
                        cvel += A.dof_cdof(dof_d, o_dof, d + t) * qvel[env_index(w, d + t)]
                    d += 3
                    k += 3
                # the three rotations use the velocity before any of them is added
                for t in ti.static(range(3)):
                    A.set_dof_cdof_dot(dof_d, o_dof, d + t, m.cross_motion(cvel, A.dof_cdof(dof_d, o_dof, d + t)))
                for t in ti.static(range(3)):
                    cvel += A.dof_cdof(dof_d, o_dof, d + t) * qvel[env_index(w, d + t)]
                k += 3
        A.set_body_cvel(body_d, o_body, b, cvel)

    return types.SimpleNamespace(com_vel=com_vel, tree_velocity=tree_velocity)


@functools.lru_cache(maxsize=None)
def make_mocap_kernel(fp):
    """A kernel writing chosen envs' mocap poses into the per-env body table:
    write(body_d, values (n, nmocap, width), bodies (nmocap,), env_ids (n,), column, stride),
    the column named by its entry accessor ("body_mocap_pos_at"). A kernel, not a round trip
    of the whole table: a teleoperated target moves every env step."""
    A = make_access(fp)
    m = make_math(fp)

    @ti.kernel
    def write(body_d: ti.types.ndarray(dtype=fp, ndim=1), values: ti.types.ndarray(dtype=fp, ndim=3),
              bodies: ti.types.ndarray(dtype=ti.i32, ndim=1), env_ids: ti.types.ndarray(dtype=ti.i32, ndim=1),
              column: ti.template(), stride: ti.i32):
        put = ti.static(A.write[column])
        for i, k, c in ti.ndrange(values.shape[0], values.shape[1], values.shape[2]):
            put(body_d, m.env_offset(env_ids[i], stride), bodies[k], c, values[i, k, c])

    return write
