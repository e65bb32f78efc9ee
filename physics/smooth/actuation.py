"""Actuation: controls to generalized forces through joint or fixed-tendon transmissions
(MuJoCo's mj_transmission and mj_fwdActuation for stateless actuators).

force = gain * ctrl + bias, gain = g0 (+ g1 * length + g2 * velocity if affine),
bias = b0 + b1 * length + b2 * velocity (if affine); ctrl is clamped to ctrlrange and
force to forcerange when limited; qfrc_actuator = moment^T force with moment = gear
(times the tendon coefficients for tendon transmissions).
"""


import functools
import types

from .. import layout as L
from ..model import BIAS_AFFINE, DSBL_ACTUATION, DSBL_CLAMPCTRL, GAIN_AFFINE, TRN_JOINT
from ..runtime.backend import ti
from ..runtime.ti_math import make_math

GAINPRM, BIASPRM, GEAR = L.ACT_F["gainprm"][0], L.ACT_F["biasprm"][0], L.ACT_F["gear"][0]
CTRLRANGE, FORCERANGE = L.ACT_F["ctrlrange"][0], L.ACT_F["forcerange"][0]
A_FORCE, A_LENGTH, A_VELOCITY = L.ACT_D["force"][0], L.ACT_D["length"][0], L.ACT_D["velocity"][0]
QFRC_ACTUATOR = L.DOF_D["qfrc_actuator"][0]
T_LEN, T_VEL = L.TEN_D["length"][0], L.TEN_D["velocity"][0]


@functools.lru_cache(maxsize=None)
def make_actuation(fp):
    m = make_math(fp)

    @ti.func
    def actuation(
        w,
        # Model:
        sizes: ti.template(), jnt_i: ti.template(), act_i: ti.template(), act_f: ti.template(), ten_i: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(),
        # Data in:
        qpos: ti.template(), qvel: ti.template(), ctrl: ti.template(), ten_d: ti.template(),
        # Data out:
        act_d: ti.template(), dof_d: ti.template(),
    ):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        ma = w % act_f.shape[0]
        mw = w % wrap_f.shape[0]
        for d in range(sizes[L.SIZE_NV]):
            dof_d[o_dof + d * L.NDOF_D + QFRC_ACTUATOR] = 0
        for u in range(sizes[L.SIZE_NU]):
            gear = act_f[ma, u, GEAR]
            trnid = act_i[u, L.ACT_TRNID]
            length = fp(0.0)
            velocity = fp(0.0)
            if act_i[u, L.ACT_TRNTYPE] == TRN_JOINT:
                length = gear * qpos[w, jnt_i[trnid * L.NJNT_I + L.JNT_QPOSADR]]
                velocity = gear * qvel[w, jnt_i[trnid * L.NJNT_I + L.JNT_DOFADR]]
            else:
                length = gear * ten_d[w, trnid, T_LEN]
                velocity = gear * ten_d[w, trnid, T_VEL]
            c = ctrl[w, u]
            if act_i[u, L.ACT_CTRLLIMITED] != 0 and (sizes[L.SIZE_DISABLE] & DSBL_CLAMPCTRL) == 0:
                c = ti.min(ti.max(c, act_f[ma, u, CTRLRANGE]), act_f[ma, u, CTRLRANGE + 1])
            gain = act_f[ma, u, GAINPRM]
            if act_i[u, L.ACT_GAINTYPE] == GAIN_AFFINE:
                gain += act_f[ma, u, GAINPRM + 1] * length + act_f[ma, u, GAINPRM + 2] * velocity
            force = gain * c
            if act_i[u, L.ACT_BIASTYPE] == BIAS_AFFINE:
                force += act_f[ma, u, BIASPRM] + act_f[ma, u, BIASPRM + 1] * length + act_f[ma, u, BIASPRM + 2] * velocity
            if act_i[u, L.ACT_FORCELIMITED] != 0:
                force = ti.min(ti.max(force, act_f[ma, u, FORCERANGE]), act_f[ma, u, FORCERANGE + 1])
            if (sizes[L.SIZE_DISABLE] & DSBL_ACTUATION) != 0:
                force = fp(0.0)
            act_d[w, u, A_FORCE] = force
            act_d[w, u, A_LENGTH] = length
            act_d[w, u, A_VELOCITY] = velocity
            if act_i[u, L.ACT_TRNTYPE] == TRN_JOINT:
                da = jnt_i[trnid * L.NJNT_I + L.JNT_DOFADR]
                dof_d[o_dof + da * L.NDOF_D + QFRC_ACTUATOR] = (dof_d[o_dof + da * L.NDOF_D + QFRC_ACTUATOR]
                                                                + gear * force)
            else:
                for n in range(ten_i[trnid, L.TEN_ADR], ten_i[trnid, L.TEN_ADR] + ten_i[trnid, L.TEN_NUM]):
                    da = jnt_i[wrap_i[n, L.WRAP_OBJID] * L.NJNT_I + L.JNT_DOFADR]
                    dof_d[o_dof + da * L.NDOF_D + QFRC_ACTUATOR] = (dof_d[o_dof + da * L.NDOF_D + QFRC_ACTUATOR]
                                                                    + gear * wrap_f[mw, n, L.WRAP_COEF] * force)

    return types.SimpleNamespace(actuation=actuation)
