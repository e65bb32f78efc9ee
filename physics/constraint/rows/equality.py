"""Rows of the equality constraints (MuJoCo's mj_instantiateEquality), and their breaking.

connect: 3 rows, p1 - p2 = 0 for an anchor point on each body (world frame, m).
weld: those 3 at the weld's anchor and 3 for the orientation error, the vector part of
conj(q2) q1 relpose scaled by torquescale. joint: 1 row, q1 - q1_0 = poly(q2 - q2_0);
tendon: the same of two fixed tendons' lengths, L1 - L1_0 = poly(L2 - L2_0).
The rows of a connect or weld take their impedance from the whole violation (imppos =
|error|) and subtract Jdot qvel (jdotv) in their reference acceleration, as MuJoCo's.
An equality with break limits (PhysX's breakable joint) turns itself off, per world,
once its solved force or torque exceeds them.
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index, env_width
from ...model import EQ_CONNECT, EQ_JOINT, EQ_TENDON, EQ_WELD
from ...runtime.backend import ti
from ...access import make_access
from ...runtime.ti_math import make_math
from .jacobian import make_row_jacobian
from .table import (
    _INF,
    CNSTR_EQUALITY,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_equality_rows(fp):
    m = make_math(fp)
    A = make_access(fp)
    table = make_row_table(fp)
    jac = make_row_jacobian(fp)
    set_row = table.set_row
    relative_jacobian, point_jacdot_qvel, quat_deriv = jac.relative_jacobian, jac.point_jacdot_qvel, jac.quat_deriv
    tendon_jacobian_add = jac.tendon_jacobian_add

    @ti.func
    def equalities(w, nefc, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), jnt_i: ti.template(),
                   dof_i: ti.template(), dof_f: ti.template(), q_f: ti.template(), qpos: ti.template(),
                   qvel: ti.template(), body_d: ti.template(),
                   dof_d: ti.template(), ten_i: ti.template(), ten_f: ti.template(),
                   ten_d: ti.template(), eq_i: ti.template(), eq_f: ti.template(),
                   eq_d: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows of the equality constraints active in world w (MuJoCo's mj_instantiateEquality)."""
        n = nefc
        me = m.param_set(w, eq_f)
        for e in range(sizes[L.SIZE_NEQ]):
            if A.eq_active(eq_d, w, e) != 0:
                kind = A.eq_type(eq_i, e)
                nrow = 1
                if kind == EQ_CONNECT:
                    nrow = 3
                elif kind == EQ_WELD:
                    nrow = 6
                if n + nrow > sizes[L.SIZE_NEFC]:
                    A.set_nefc_overflow(efc_n, w, A.nefc_overflow(efc_n, w) + nrow)
                else:
                    if kind == EQ_JOINT or kind == EQ_TENDON:
                        # a coupling row adds into its objects' columns (body rows write all theirs)
                        for d in range(sizes[L.SIZE_NV]):
                            efc_J[env_index(w, n, d)] = 0
                        coupling(w, n, e, me, kind, sizes, jnt_i, dof_f, q_f, qpos, ten_i, ten_f,
                                 ten_d, eq_i, eq_f, efc_J, efc_f)
                    else:
                        body_equality(w, n, e, me, kind, sizes, body_i, body_f, jnt_i, dof_i, qvel, body_d, dof_d,
                                      eq_i, eq_f,
                                      efc_J, efc_f)
                    for r in range(nrow):
                        for k in ti.static(range(2)):
                            A.set_efc_solref_at(efc_f, w, n + r, k, A.eq_solref_at(eq_f, me, e, k))
                        for k in ti.static(range(5)):
                            A.set_efc_solimp_at(efc_f, w, n + r, k, A.eq_solimp_at(eq_f, me, e, k))
                    n += nrow
        return n

    @ti.func
    def break_overloaded(w, nefc, eq_i: ti.template(), eq_f: ti.template(), eq_d: ti.template(),
                         efc_f: ti.template()):
        """Turn off, in world w only, each equality constraint whose force (rows 0-2, or
        the joint row) or torque (a weld's rows 3-5) exceeds its break limits; it still
        acts in the step it breaks, as a PhysX joint does, and the break is recorded."""
        me = m.param_set(w, eq_f)
        i = 0
        while i < nefc:
            nrow = 1
            if A.efc_type(efc_f, w, i) == CNSTR_EQUALITY:
                e = ti.cast(A.efc_id(efc_f, w, i), ti.i32)
                kind = A.eq_type(eq_i, e)
                nrow = 3 if kind == EQ_CONNECT else (6 if kind == EQ_WELD else 1)
                force = fp(0.0)
                for r in range(ti.min(nrow, 3)):
                    force += A.efc_force(efc_f, w, i + r) ** 2
                torque = fp(0.0)
                for r in range(3, nrow):
                    torque += A.efc_force(efc_f, w, i + r) ** 2
                if ti.sqrt(force) > A.eq_break_at(eq_f, me, e, 0) or ti.sqrt(torque) > A.eq_break_at(eq_f, me, e, 1):
                    A.set_eq_active(eq_d, w, e, 0)
                    A.set_eq_broken(eq_d, w, e, 1)
            i += nrow

    @ti.func
    def coupled(w, kind, obj, md, mt, jnt_i: ti.template(), dof_f: ti.template(), q_f: ti.template(),
                qpos: ti.template(), ten_f: ti.template(), ten_d: ti.template()):
        """(value less its value at qpos0, inverse weight) of a joint's coordinate or a
        fixed tendon's length."""
        dif = fp(0.0)
        invweight = fp(0.0)
        if kind == EQ_JOINT:
            a = A.jnt_qposadr(jnt_i, obj)
            dif = qpos[env_index(w, a)] - A.qpos0(q_f, 0, a)
            invweight = A.dof_invweight0(dof_f, md, A.jnt_dofadr(jnt_i, obj))
        else:
            dif = A.ten_length(ten_d, w, obj) - A.tendon_length0(ten_f, mt, obj)
            invweight = A.tendon_invweight0(ten_f, mt, obj)
        return dif, invweight

    @ti.func
    def coupled_jacobian_add(w, row, kind, obj, scale, sizes: ti.template(), jnt_i: ti.template(),
                             ten_d: ti.template(), efc_J: ti.template()):
        if kind == EQ_JOINT:
            d = A.jnt_dofadr(jnt_i, obj)
            efc_J[env_index(w, row, d)] = efc_J[env_index(w, row, d)] + scale
        else:
            tendon_jacobian_add(w, row, obj, scale, sizes, ten_d, efc_J)

    @ti.func
    def coupling(w, row, e, me, kind, sizes: ti.template(), jnt_i: ti.template(), dof_f: ti.template(),
                 q_f: ti.template(), qpos: ti.template(), ten_i: ti.template(), ten_f: ti.template(),
                 ten_d: ti.template(), eq_i: ti.template(),
                 eq_f: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """x1 = c0 + c1 d + ... + c4 d^4 with d = x2, or x1 = c0, where x is a joint's
        coordinate or a tendon's length less its value at qpos0; the Jacobian is
        J1 - poly'(d) J2, as MuJoCo's."""
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mt = m.param_set(w, ten_f)
        o1 = A.eq_obj1(eq_i, e)
        o2 = A.eq_obj2(eq_i, e)
        pos, diag = coupled(w, kind, o1, md, mt, jnt_i, dof_f, q_f, qpos, ten_f, ten_d)
        pos -= A.eq_data_at(eq_f, me, e, 0)
        coupled_jacobian_add(w, row, kind, o1, fp(1.0), sizes, jnt_i, ten_d, efc_J)
        if o2 >= 0:
            dif, invweight = coupled(w, kind, o2, md, mt, jnt_i, dof_f, q_f, qpos, ten_f, ten_d)
            poly = fp(0.0)
            deriv = fp(0.0)
            for k in ti.static(range(1, 5)):
                c = A.eq_data_at(eq_f, me, e, k)
                poly += c * ti.pow(dif, k)
                deriv += k * c * ti.pow(dif, k - 1)
            pos -= poly
            diag += invweight
            coupled_jacobian_add(w, row, kind, o2, -deriv, sizes, jnt_i, ten_d, efc_J)
        set_row(w, row, efc_f, CNSTR_EQUALITY, e, pos, fp(0.0), diag, fp(-_INF), fp(_INF))

    @ti.func
    def body_point(o_body, b, local, body_d: ti.template()):
        return A.body_xpos(body_d, o_body, b) + m.quat_rotate(A.body_xquat(body_d, o_body, b), local)

    @ti.func
    def body_equality(w, row, e, me, kind, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(),
                      jnt_i: ti.template(), dof_i: ti.template(), qvel: ti.template(), body_d: ti.template(),
                      dof_d: ti.template(), eq_i: ti.template(), eq_f: ti.template(), efc_J: ti.template(),
                      efc_f: ti.template()):
        """Connect: 3 rows p1 - p2 = 0. Weld: those at its anchor plus 3 rows for the
        orientation error, the vector part of conj(q2) q1 relpose, scaled by torquescale."""
        o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        b1 = A.eq_obj1(eq_i, e)
        b2 = A.eq_obj2(eq_i, e)
        d0 = m.vec3(A.eq_data_at(eq_f, me, e, 0), A.eq_data_at(eq_f, me, e, 1), A.eq_data_at(eq_f, me, e, 2))
        d1 = m.vec3(A.eq_data_at(eq_f, me, e, 3), A.eq_data_at(eq_f, me, e, 4), A.eq_data_at(eq_f, me, e, 5))
        p1 = body_point(o_body, b1, d0, body_d)
        p2 = body_point(o_body, b2, d1, body_d)
        if kind == EQ_WELD:
            p1 = body_point(o_body, b1, d1, body_d)
            p2 = body_point(o_body, b2, d0, body_d)
        cpos = p1 - p2
        tran = A.body_invweight0_at(body_f, mb, b1, 0) + A.body_invweight0_at(body_f, mb, b2, 0)
        rot = A.body_invweight0_at(body_f, mb, b1, 1) + A.body_invweight0_at(body_f, mb, b2, 1)
        norm2 = cpos.dot(cpos)
        # connect: the points' relative velocity; weld: and the bodies' relative angular velocity
        relative_jacobian(w, row, 6 if kind == EQ_WELD else 3, env_width(qvel), b1, p1, b2, p2,
                          ti.Matrix.identity(fp, 3), body_i, body_d, dof_d, efc_J)
        for k in ti.static(range(3)):
            set_row(w, row + k, efc_f, CNSTR_EQUALITY, e, cpos[k], fp(0.0), tran, fp(-_INF), fp(_INF))
        jdv1 = point_jacdot_qvel(w, b1, p1, sizes, body_i, jnt_i, dof_i, qvel, body_d, dof_d)
        jdv2 = point_jacdot_qvel(w, b2, p2, sizes, body_i, jnt_i, dof_i, qvel, body_d, dof_d)
        jdv = m.lin(jdv1) - m.lin(jdv2)
        for k in ti.static(range(3)):
            A.set_efc_jdotv(efc_f, w, row + k, jdv[k])
        if kind == EQ_WELD:
            scale = A.eq_data_at(eq_f, me, e, 10)
            rel = m.vec4(A.eq_data_at(eq_f, me, e, 6), A.eq_data_at(eq_f, me, e, 7), A.eq_data_at(eq_f, me, e, 8),
                         A.eq_data_at(eq_f, me, e, 9))
            quat2 = m.vec4(A.eq_quat2_at(eq_f, me, e, 0), A.eq_quat2_at(eq_f, me, e, 1), A.eq_quat2_at(eq_f, me, e, 2),
                           A.eq_quat2_at(eq_f, me, e, 3))
            q1rel = m.quat_mul(A.body_xquat(body_d, o_body, b1), rel)
            q2inv = m.quat_conj(m.quat_mul(A.body_xquat(body_d, o_body, b2), quat2))
            err = m.quat_mul(q2inv, q1rel)
            # d(err)/d(qvel): 0.5 conj(q2) (w1 - w2) q1 relpose, per dof
            for d in range(env_width(qvel)):
                omega = m.vec4(fp(0.0), efc_J[env_index(w, row + 3, d)], efc_J[env_index(w, row + 4, d)], efc_J[env_index(w, row + 5, d)])
                if omega[1] != 0 or omega[2] != 0 or omega[3] != 0:
                    col = m.quat_mul(m.quat_mul(q2inv, omega), q1rel)
                    for k in ti.static(range(3)):
                        efc_J[env_index(w, row + 3 + k, d)] = fp(0.5) * scale * col[k + 1]
            for k in ti.static(range(3)):
                set_row(w, row + 3 + k, efc_f, CNSTR_EQUALITY, e, scale * err[k + 1], fp(0.0), rot, fp(-_INF),
                        fp(_INF))
                norm2 += (scale * err[k + 1]) ** 2
            # d/dt of 0.5 conj(q2) (w1 - w2) q1 relpose, by the product rule
            omega1 = m.ang(A.body_cvel(body_d, o_body, b1))
            omega2 = m.ang(A.body_cvel(body_d, o_body, b2))
            domega = m.vec4(fp(0.0), omega1[0] - omega2[0], omega1[1] - omega2[1], omega1[2] - omega2[2])
            djr = m.ang(jdv1) - m.ang(jdv2)
            qdot1rel = m.quat_mul(quat_deriv(A.body_xquat(body_d, o_body, b1), omega1), rel)
            xquat2 = A.body_xquat(body_d, o_body, b2)
            qdot2inv = m.quat_conj(m.quat_mul(quat_deriv(xquat2, omega2), quat2))
            t1 = m.quat_mul(m.quat_mul(qdot2inv, domega), q1rel)
            t2 = m.quat_mul(m.quat_mul(q2inv, m.vec4(fp(0.0), djr[0], djr[1], djr[2])), q1rel)
            t3 = m.quat_mul(m.quat_mul(q2inv, domega), qdot1rel)
            for k in ti.static(range(3)):
                A.set_efc_jdotv(efc_f, w, row + 3 + k, fp(0.5) * scale * (t1[k + 1] + t2[k + 1] + t3[k + 1]))
        nrow = 6 if kind == EQ_WELD else 3
        for r in range(nrow):
            A.set_efc_imppos(efc_f, w, row + r, ti.sqrt(norm2))

    return types.SimpleNamespace(equalities=equalities, break_overloaded=break_overloaded)
