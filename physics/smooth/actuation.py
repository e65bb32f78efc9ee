"""Actuation: controls to generalized forces through joint or tendon transmissions
(MuJoCo's mj_transmission and mj_fwdActuation), and the activations of stateful actuators.

force = gain * ctrl + bias, gain = g0 (+ g1 * length + g2 * velocity if affine),
bias = b0 + b1 * length + b2 * velocity (if affine); ctrl is clamped to ctrlrange and
force to forcerange when limited; qfrc_actuator = moment^T force with moment = gear (times
the tendon's Jacobian for tendon transmissions, physics/smooth/tendons.py).
"""


import functools
import types

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import (BIAS_AFFINE, DSBL_ACTUATION, DSBL_CLAMPCTRL, DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_NONE,
                     GAIN_AFFINE, JNT_BALL, JNT_FREE, TRN_JOINT)
from ..runtime.backend import ti
from ..access import make_access
from ..runtime.ti_math import make_math



@functools.lru_cache(maxsize=None)
def make_actuation(fp, activation: bool = True):
    """``activation``: compile the activation dynamics (a model with stateful actuators)."""
    m = make_math(fp)
    A = make_access(fp)

    @ti.func
    def next_activation(w, u, act, act_dot, act_i: ti.template(), act_f: ti.template(), opt_f: ti.template()):
        """The activation after a step of act_dot (MuJoCo's mj_nextActivation): a filterexact
        filter integrated exactly, the others by Euler, clamped to actrange when limited."""
        ma = m.param_set(w, act_f)
        h = A.opt_timestep(opt_f, m.param_set(w, opt_f), 0)
        out = act + act_dot * h
        if A.actuator_dyntype(act_i, u) == DYN_FILTEREXACT:
            tau = A.actuator_dyntau(act_f, ma, u)
            out = act + act_dot * tau * (1 - ti.exp(-h / tau))
        if A.actuator_actlimited(act_i, u) != 0:
            out = ti.min(ti.max(out, A.actuator_actrange_at(act_f, ma, u, 0)), A.actuator_actrange_at(act_f, ma, u, 1))
        return out

    @ti.func
    def activation_input(w, u, c, sizes: ti.template(), act_i: ti.template(), act_f: ti.template(),
                         act_d: ti.template(), opt_f: ti.template()):
        """act_dot of a stateful actuator from its clamped control ``c`` (stored), and what its
        gain multiplies: its activation, or with actearly the one the step ends with."""
        act = A.actuator_act(act_d, w, u)
        act_dot = c
        if A.actuator_dyntype(act_i, u) != DYN_INTEGRATOR:
            act_dot = (c - act) / A.actuator_dyntau(act_f, m.param_set(w, act_f), u)
        A.set_actuator_act_dot(act_d, w, u, act_dot)
        out = act
        if A.actuator_actearly(act_i, u) != 0:
            out = next_activation(w, u, act, act_dot, act_i, act_f, opt_f)
        return out

    @ti.func
    def advance_activations(w, sizes: ti.template(), act_i: ti.template(), act_f: ti.template(),
                            act_d: ti.template(), opt_f: ti.template()):
        """Each stateful actuator's activation at the end of the step (MuJoCo's mj_advance)."""
        if (sizes[L.SIZE_DISABLE] & DSBL_ACTUATION) == 0:
            for u in range(sizes[L.SIZE_NU]):
                if A.actuator_dyntype(act_i, u) != DYN_NONE:
                    A.set_actuator_act(act_d, w, u, next_activation(w, u, A.actuator_act(act_d, w, u),
                                                                    A.actuator_act_dot(act_d, w, u), act_i, act_f,
                                                                    opt_f))

    @ti.func
    def actuation(
        w,
        # Model:
        sizes: ti.template(), jnt_i: ti.template(), act_i: ti.template(), act_f: ti.template(),
        opt_f: ti.template(),
        # Data in:
        qpos: ti.template(), qvel: ti.template(), ctrl: ti.template(), ten_d: ti.template(),
        # Data out:
        act_d: ti.template(), dof_d: ti.template(),
    ):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        ma = m.param_set(w, act_f)
        for d in range(sizes[L.SIZE_NV]):
            A.set_dof_qfrc_actuator(dof_d, o_dof, d, 0)
        for u in range(sizes[L.SIZE_NU]):
            gear = A.actuator_gear(act_f, ma, u)
            trnid = A.actuator_trnid(act_i, u)
            length = fp(0.0)
            velocity = fp(0.0)
            if A.actuator_trntype(act_i, u) == TRN_JOINT:
                length = gear * qpos[env_index(w, A.jnt_qposadr(jnt_i, trnid))]
                velocity = gear * qvel[env_index(w, A.jnt_dofadr(jnt_i, trnid))]
            else:
                length = gear * A.ten_length(ten_d, w, trnid)
                velocity = gear * A.ten_velocity(ten_d, w, trnid)
            c = ctrl[env_index(w, u)]
            if A.actuator_ctrllimited(act_i, u) != 0 and (sizes[L.SIZE_DISABLE] & DSBL_CLAMPCTRL) == 0:
                c = ti.min(ti.max(c, A.actuator_ctrlrange_at(act_f, ma, u, 0)), A.actuator_ctrlrange_at(act_f, ma, u, 1))
            if ti.static(activation):
                if A.actuator_dyntype(act_i, u) != DYN_NONE:
                    c = activation_input(w, u, c, sizes, act_i, act_f, act_d, opt_f)
            gain = A.actuator_gainprm_at(act_f, ma, u, 0)
            if A.actuator_gaintype(act_i, u) == GAIN_AFFINE:
                gain += A.actuator_gainprm_at(act_f, ma, u, 1) * length + A.actuator_gainprm_at(act_f, ma, u, 2) * velocity
            force = gain * c
            if A.actuator_biastype(act_i, u) == BIAS_AFFINE:
                force += A.actuator_biasprm_at(act_f, ma, u, 0) + A.actuator_biasprm_at(act_f, ma, u, 1) * length + A.actuator_biasprm_at(act_f, ma, u, 2) * velocity
            if A.actuator_forcelimited(act_i, u) != 0:
                force = ti.min(ti.max(force, A.actuator_forcerange_at(act_f, ma, u, 0)), A.actuator_forcerange_at(act_f, ma, u, 1))
            if (sizes[L.SIZE_DISABLE] & DSBL_ACTUATION) != 0:
                force = fp(0.0)
            A.set_actuator_force(act_d, w, u, force)
            A.set_actuator_length(act_d, w, u, length)
            A.set_actuator_velocity(act_d, w, u, velocity)
            # a tendon transmission's force acts through the tendon's Jacobian: added by
            # physics/smooth/tendons.py's tendon_actuation
            if A.actuator_trntype(act_i, u) == TRN_JOINT:
                da = A.jnt_dofadr(jnt_i, trnid)
                A.set_dof_qfrc_actuator(dof_d, o_dof, da, A.dof_qfrc_actuator(dof_d, o_dof, da)
                                                                + gear * force)

    @ti.func
    def clamp_joint_forces(w, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(),
                           dof_d: ti.template()):
        """qfrc_actuator at each joint's first dof within the joint's actuatorfrcrange (as
        MuJoCo clamps it, after every transmission has added its force)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        for j in range(sizes[L.SIZE_NJNT]):
            d = A.jnt_dofadr(jnt_i, j)
            f = A.dof_qfrc_actuator(dof_d, o_dof, d)
            f = ti.min(ti.max(f, A.jnt_actfrcrange_at(jnt_f, mj, j, 0)), A.jnt_actfrcrange_at(jnt_f, mj, j, 1))
            A.set_dof_qfrc_actuator(dof_d, o_dof, d, f)

    @ti.func
    def gravity_compensation(w, sizes: ti.template(), jnt_i: ti.template(), dof_d: ti.template()):
        """qfrc_actuator += qfrc_gravcomp on the dofs of the joints that route their
        gravity compensation through the actuators (before the joints' clamp, as MuJoCo;
        none with actuation disabled)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for j in range(sizes[L.SIZE_NJNT]):
            if A.jnt_actgravcomp(jnt_i, j) != 0 and (sizes[L.SIZE_DISABLE] & DSBL_ACTUATION) == 0:
                jtype = A.jnt_type(jnt_i, j)
                n = 6 if jtype == JNT_FREE else 3 if jtype == JNT_BALL else 1
                for d in range(A.jnt_dofadr(jnt_i, j), A.jnt_dofadr(jnt_i, j) + n):
                    A.set_dof_qfrc_actuator(dof_d, o_dof, d, A.dof_qfrc_actuator(dof_d, o_dof, d)
                                            + A.dof_qfrc_gravcomp(dof_d, o_dof, d))

    return types.SimpleNamespace(actuation=actuation, advance_activations=advance_activations,
                                 next_activation=next_activation, clamp_joint_forces=clamp_joint_forces,
                                 gravity_compensation=gravity_compensation)
