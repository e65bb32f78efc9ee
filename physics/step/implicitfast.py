"""MuJoCo's implicitfast integrator: the derivative of the smooth forces in the velocities
that it integrates implicitly (mjd_smooth_vel without the bias forces' part), and its
local solve of each standalone free body (mjd_freeMhat).

The step's acceleration is (M - h qDeriv)^-1 (qfrc_smooth + qfrc_constraint), with qDeriv
= d(qfrc_passive + qfrc_actuator)/d qvel: the dof and tendon dampers and the actuators'
velocity terms. qDeriv is symmetric and, as MuJoCo's, kept on the sparsity pattern of M
(a dof and its ancestors), so M - h qDeriv is assembled in place of qLD's copy of M and
factored as M is. A free body alone in its tree (no children with dofs or mass) is solved
apart, by its 6x6 block of M - h qDeriv plus h times the derivative of its gyroscopic bias
force, an unsymmetric block that the tree factorization cannot take; its rows of the tree
solve are overwritten.
"""

import functools
import types

from .. import layout as L
from ..access import make_access
from ..features import ALL, Features
from ..model import BIAS_AFFINE, DSBL_ACTUATION, DSBL_CLAMPCTRL, DSBL_DAMPER, DYN_NONE, GAIN_AFFINE, JNT_FREE, TRN_JOINT
from ..runtime.backend import ti
from ..runtime.lanes import env_index
from ..runtime.ti_math import make_math
from ..smooth.actuation import make_actuation
from ..smooth.inertia import make_inertia


@functools.lru_cache(maxsize=None)
def make_implicitfast(fp, features: Features = ALL):
    m = make_math(fp)
    A = make_access(fp)
    inertia = make_inertia(fp)
    actuation = make_actuation(fp, features.activation)

    @ti.func
    def add_tendon_outer(w, t: ti.template(), ten, scale):
        """qLD += scale J J^T on M's pattern, J tendon ``ten``'s Jacobian."""
        o_m = m.env_offset(w, t.sizes[L.SIZE_M_STRIDE])
        mcol = t.sizes[L.SIZE_MCOL]
        for i in range(t.sizes[L.SIZE_NV]):
            ji = A.ten_J_at(t.ten_d, w, ten, i)
            if ji != 0:
                adr = A.dof_madr(t.dof_i, i)
                for a in range(adr, adr + A.dof_mrowlen(t.dof_i, i)):
                    j = t.dof_i[mcol + a]
                    t.qLD[m.entry(o_m, a)] = t.qLD[m.entry(o_m, a)] + scale * ji * A.ten_J_at(t.ten_d, w, ten, j)

    @ti.func
    def add_dampers(w, t: ti.template(), h):
        """-h times the dof and tendon dampers' derivative: h D on the diagonal, h b J J^T."""
        if (t.sizes[L.SIZE_DISABLE] & DSBL_DAMPER) == 0:
            md = m.row_set(w, t.dof_f, t.sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
            for d in range(t.sizes[L.SIZE_NV]):
                inertia.add_diag(w, t.sizes, t.qLD, t.dof_i, d, h * A.dof_damping(t.dof_f, md, d))
            if ti.static(features.tendons):
                mt = m.param_set(w, t.ten_f)
                for ten in range(t.sizes[L.SIZE_NTENDON]):
                    b = A.tendon_damping(t.ten_f, mt, ten)
                    if b != 0:
                        add_tendon_outer(w, t, ten, h * b)

    @ti.func
    def actuator_bias_vel(w, u, t: ti.template()):
        """d force / d velocity of actuator u (MuJoCo's mjd_actuator_vel): the affine bias's
        kv plus the affine gain's velocity term times the clamped ctrl or the activation the
        force uses; 0 where the force is held at its range."""
        ma = m.param_set(w, t.act_f)
        bias_vel = fp(0.0)
        if A.actuator_biastype(t.act_i, u) == BIAS_AFFINE:
            bias_vel = A.actuator_biasprm_at(t.act_f, ma, u, 2)
        if A.actuator_gaintype(t.act_i, u) == GAIN_AFFINE:
            gain_vel = A.actuator_gainprm_at(t.act_f, ma, u, 2)
            if gain_vel != 0:
                c = t.ctrl[env_index(w, u)]
                if A.actuator_ctrllimited(t.act_i, u) != 0 and (t.sizes[L.SIZE_DISABLE] & DSBL_CLAMPCTRL) == 0:
                    c = ti.min(ti.max(c, A.actuator_ctrlrange_at(t.act_f, ma, u, 0)),
                               A.actuator_ctrlrange_at(t.act_f, ma, u, 1))
                if ti.static(features.activation):
                    if A.actuator_dyntype(t.act_i, u) != DYN_NONE:
                        c = A.actuator_act(t.act_d, w, u)
                        if A.actuator_actearly(t.act_i, u) != 0:
                            c = actuation.next_activation(w, u, c, A.actuator_act_dot(t.act_d, w, u), t.act_i,
                                                          t.act_f, t.opt_f)
                bias_vel += gain_vel * c
        if A.actuator_forcelimited(t.act_i, u) != 0:
            force = A.actuator_force(t.act_d, w, u)
            if force <= A.actuator_forcerange_at(t.act_f, ma, u, 0) or force >= A.actuator_forcerange_at(t.act_f, ma, u, 1):
                bias_vel = fp(0.0)
        return bias_vel

    @ti.func
    def add_actuators(w, t: ti.template(), h):
        """-h times the actuators' derivative: -h bias_vel moment^T moment each."""
        if (t.sizes[L.SIZE_DISABLE] & DSBL_ACTUATION) == 0:
            ma = m.param_set(w, t.act_f)
            for u in range(t.sizes[L.SIZE_NU]):
                b = actuator_bias_vel(w, u, t)
                if b != 0:
                    gear = A.actuator_gear(t.act_f, ma, u)
                    trnid = A.actuator_trnid(t.act_i, u)
                    if A.actuator_trntype(t.act_i, u) == TRN_JOINT:
                        inertia.add_diag(w, t.sizes, t.qLD, t.dof_i, A.jnt_dofadr(t.jnt_i, trnid), -h * b * gear * gear)
                    else:
                        if ti.static(features.tendons):
                            add_tendon_outer(w, t, trnid, -h * b * gear * gear)

    @ti.func
    def add_qderiv(w, t: ti.template(), h):
        """qLD (a copy of M) -= h qDeriv."""
        add_dampers(w, t, h)
        add_actuators(w, t, h)

    @ti.func
    def standalone_free(w, j, t: ti.template()):
        """1 if joint j is the free joint of a body whose tree has no other dof and whose
        subtree weighs no more than itself (MuJoCo's mj_isFreeBody)."""
        out = 0
        if A.jnt_type(t.jnt_i, j) == JNT_FREE:
            da = A.jnt_dofadr(t.jnt_i, j)
            alone = 1
            if da + 6 < t.sizes[L.SIZE_NV]:
                # a tree's dofs are contiguous: the next dof descends from this body if any does
                if A.dof_parent(t.dof_i, da + 6) == da + 5:
                    alone = 0
            if alone != 0:
                b = A.jnt_body(t.jnt_i, j)
                o_body = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
                mb = m.row_set(w, t.body_f, t.sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
                if A.body_subtree_mass(t.body_d, o_body, b) == A.body_mass(t.body_f, mb, b):
                    out = 1
        return out

    @ti.func
    def skew(v):
        return m.mat3([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])

    @ti.func
    def bias_vel_blocks(w, b, da, t: ti.template()):
        """The free body's gyroscopic bias derivative d qfrc_bias / d qvel: its rotational
        columns are [-mass lin; rot] (MuJoCo's freeBias_vel_blocks); returns mass * lin, rot."""
        o_body = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mb = m.row_set(w, t.body_f, t.sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        mass = A.body_mass(t.body_f, mb, b)
        moments = A.body_inertia(t.body_f, mb, b)
        R = A.body_xmat(t.body_d, o_body, b)
        Xi = A.body_ximat(t.body_d, o_body, b)
        s = A.body_xipos(t.body_d, o_body, b) - A.body_xpos(t.body_d, o_body, b)
        omega = R @ m.vec3(t.qvel[env_index(w, da + 3)], t.qvel[env_index(w, da + 4)], t.qvel[env_index(w, da + 5)])
        Iw = Xi @ m.mat3([[moments[0], 0, 0], [0, moments[1], 0], [0, 0, moments[2]]]) @ Xi.transpose()
        K = s.outer_product(omega) - omega.dot(s) * ti.Matrix.identity(fp, 3) + skew(omega.cross(s))
        C = -mass * (skew(s) @ K) + skew(omega) @ Iw - skew(Iw @ omega)
        return mass * (K @ R), R.transpose() @ C @ R

    @ti.func
    def free_body_acc(w, j, t: ti.template(), h):
        """The free joint j's accelerations by its own 6x6 solve, kept in dx_vel until the
        tree solve is done: (its block of M - h qDeriv + h B)^-1 its block of the scratch
        column, B the bias derivative."""
        da = A.jnt_dofadr(t.jnt_i, j)
        o_m = m.env_offset(w, t.sizes[L.SIZE_M_STRIDE])
        o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        a = ti.Matrix.zero(fp, 6, 6)
        x = ti.Vector.zero(fp, 6)
        for r in ti.static(range(6)):
            x[r] = A.dof_scratch(t.dof_s, o_s, da + r)
            # row da + r of M holds (r, r), (r, r - 1), ... (r, 0): a free joint's dofs are a chain
            for c in ti.static(range(r + 1)):
                v = t.qLD[m.entry(o_m, A.dof_madr(t.dof_i, da + r) + r - c)]
                a[r, c] = v
                a[c, r] = v
        mlin, rot = bias_vel_blocks(w, A.jnt_body(t.jnt_i, j), da, t)
        for r in ti.static(range(3)):
            for c in ti.static(range(3)):
                a[r, 3 + c] -= h * mlin[r, c]
                a[3 + r, 3 + c] += h * rot[r, c]
        # Gaussian elimination: the block is M's plus terms of order h, far from singular
        for k in ti.static(range(6)):
            for r in ti.static(range(k + 1, 6)):
                f = a[r, k] / a[k, k]
                for c in ti.static(range(k + 1, 6)):
                    a[r, c] -= f * a[k, c]
                x[r] -= f * x[k]
        for k in ti.static(range(5, -1, -1)):
            s = x[k]
            for c in ti.static(range(k + 1, 6)):
                s -= a[k, c] * x[c]
            x[k] = s / a[k, k]
        for r in ti.static(range(6)):
            A.set_dof_dx_vel(t.dof_s, o_s, da + r, x[r])

    @ti.func
    def solve_free_bodies(w, t: ti.template(), h):
        """Before the tree factorization: each standalone free body's accelerations."""
        for j in range(t.sizes[L.SIZE_NJNT]):
            if standalone_free(w, j, t) != 0:
                free_body_acc(w, j, t, h)

    @ti.func
    def restore_free_bodies(w, t: ti.template()):
        """After the tree solve: its rows of the standalone free bodies take their own solve's."""
        o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        for j in range(t.sizes[L.SIZE_NJNT]):
            if standalone_free(w, j, t) != 0:
                da = A.jnt_dofadr(t.jnt_i, j)
                for r in ti.static(range(6)):
                    A.set_dof_scratch(t.dof_s, o_s, da + r, A.dof_dx_vel(t.dof_s, o_s, da + r))

    return types.SimpleNamespace(add_qderiv=add_qderiv, solve_free_bodies=solve_free_bodies,
                                 restore_free_bodies=restore_free_bodies)
