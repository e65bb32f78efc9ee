"""MuJoCo's soft-constraint model (Todorov 2014): from each row's solref/solimp, residual
pos - margin and diagA ~ A_ii = J_i M^-1 J_i^T (from *_invweight0),

    impedance  d_i = solimp sigmoid of |imppos_i - margin_i|
    regularizer R_i = (1 - d_i) / d_i * diagA_i
    reference  aref_i = -B_i J_i qvel - K_i d_i (pos_i - margin_i) - Jdot_i qvel

with K, B from solref (timeconst, dampratio > 0, or -stiffness, -damping), as MuJoCo's
getsolparam, mj_makeImpedance and mj_makeReference. Contact friction rows get the
friction impedance of their cone (impratio).
"""

import functools
import types

from ... import layout as L
from ...collision.narrowphase import CON_DIM
from ...model import DSBL_REFSAFE
from ...runtime.backend import ti
from .table import (
    _MAXIMP,
    _MINIMP,
    _MINVAL,
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    CVEL,
    IMPRATIO,
    TIMESTEP,
    C,
    E,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_soft(fp):
    row_dot = make_row_table(fp).row_dot

    @ti.func
    def impedance(solimp0, solimp1, width, mid, power, x_raw):
        """MuJoCo's solimp sigmoid: from dmin at 0 to dmax at |x| >= width."""
        imp = fp(0.0)
        if solimp0 == solimp1 or width <= fp(_MINVAL):
            imp = fp(0.5) * (solimp0 + solimp1)
        else:
            x = ti.abs(x_raw) / width
            if x >= 1:
                imp = solimp1
            elif x <= 0:
                imp = solimp0
            else:
                y = fp(0.0)
                if power == 1:
                    y = x
                elif power == 2:  # the default: pow() is a library call, and x * x is as exact
                    if x <= mid:
                        y = x * x / mid
                    else:
                        y = 1 - (1 - x) * (1 - x) / (1 - mid)
                elif x <= mid:
                    y = ti.pow(x, power) / ti.pow(mid, power - 1)
                else:
                    y = 1 - ti.pow(1 - x, power) / ti.pow(1 - mid, power - 1)
                imp = solimp0 + y * (solimp1 - solimp0)
        return imp

    @ti.func
    def soft_parameters(w, nefc, sizes: ti.template(), opt_f: ti.template(), efc_f: ti.template()):
        """R, K, B and impedance of each row (MuJoCo's getsolparam and mj_makeImpedance)."""
        h = opt_f[w % opt_f.shape[0], 0, TIMESTEP]
        for i in range(nefc):
            ref0 = efc_f[w, i, E["solref"]]
            ref1 = efc_f[w, i, E["solref"] + 1]
            if (ref0 > 0) != (ref1 > 0):  # mixed formats: MuJoCo falls back to the default
                ref0 = fp(0.02)
                ref1 = fp(1.0)
            if (sizes[L.SIZE_DISABLE] & DSBL_REFSAFE) == 0 and ref0 > 0:
                ref0 = ti.max(ref0, 2 * h)
            dmin = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), efc_f[w, i, E["solimp"]]))
            dmax = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), efc_f[w, i, E["solimp"] + 1]))
            width = ti.max(fp(0.0), efc_f[w, i, E["solimp"] + 2])
            mid = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), efc_f[w, i, E["solimp"] + 3]))
            power = ti.max(fp(1.0), efc_f[w, i, E["solimp"] + 4])
            imp = impedance(dmin, dmax, width, mid, power, efc_f[w, i, E["imppos"]] - efc_f[w, i, E["margin"]])
            efc_f[w, i, E["imp"]] = imp
            efc_f[w, i, E["R"]] = ti.max(fp(_MINVAL), (1 - imp) * efc_f[w, i, E["diagA"]] / imp)
            if ref0 > 0:
                efc_f[w, i, E["K"]] = 1 / ti.max(fp(_MINVAL), dmax * dmax * ref0 * ref0 * ref1 * ref1)
                efc_f[w, i, E["B"]] = 2 / ti.max(fp(_MINVAL), dmax * ref0)
            else:
                efc_f[w, i, E["K"]] = -ref0 / ti.max(fp(_MINVAL), dmax * dmax)
                efc_f[w, i, E["B"]] = -ref1 / ti.max(fp(_MINVAL), dmax)
            kind = ti.cast(efc_f[w, i, E["type"]], ti.i32)
            if kind == CNSTR_FRICTION_DOF or kind == CNSTR_FRICTION_TENDON:
                efc_f[w, i, E["K"]] = 0  # friction has no position to restore

    @ti.func
    def cone_regularizer(w, nefc, opt_f: ti.template(), con_f: ti.template(), con_i: ti.template(),
                         efc_f: ti.template()):
        """Friction impedance of contacts (MuJoCo's mj_makeImpedance). With R_0 the normal
        row's, the regularized cone has mu = friction_0 / sqrt(impratio); all edges of a
        pyramid share R = 2 mu^2 R_0, which matches the elliptic cone's friction impedance;
        an elliptic cone's friction rows get R_j = R_0 friction_0^2 / (impratio friction_j^2)
        and no position stiffness."""
        impratio = ti.max(fp(_MINVAL), opt_f[w % opt_f.shape[0], 0, IMPRATIO])
        i = 0
        while i < nefc:
            step = 1
            kind = efc_f[w, i, E["type"]]
            if kind == CNSTR_CONTACT_PYRAMIDAL:
                c = ti.cast(efc_f[w, i, E["id"]], ti.i32)
                step = 2 * (con_i[w, c, CON_DIM] - 1)
                mu0 = con_f[w, c, C["friction"]]
                r_py = 2 * mu0 * mu0 * efc_f[w, i, E["R"]] / impratio
                for j in range(step):
                    efc_f[w, i + j, E["R"]] = r_py
            elif kind == CNSTR_CONTACT_ELLIPTIC:
                c = ti.cast(efc_f[w, i, E["id"]], ti.i32)
                step = con_i[w, c, CON_DIM]
                mu0 = con_f[w, c, C["friction"]]
                r1 = efc_f[w, i, E["R"]] / impratio
                efc_f[w, i, E["fric"]] = mu0 / ti.sqrt(impratio)
                for j in range(1, step):
                    fj = con_f[w, c, C["friction"] + j - 1]
                    efc_f[w, i + j, E["R"]] = r1 * mu0 * mu0 / (fj * fj)
                    efc_f[w, i + j, E["K"]] = 0
            i += step

    @ti.func
    def reference(w, nefc, nv, qvel: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
                  efc_f: ti.template()):
        """aref = -B J qvel - K imp (pos - margin)."""
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + CVEL] = qvel[w, d]
        for i in range(nefc):
            vel = row_dot(w, i, efc_J, nv, dof_d, CVEL)
            efc_f[w, i, E["vel"]] = vel
            efc_f[w, i, E["aref"]] = (-efc_f[w, i, E["B"]] * vel - efc_f[w, i, E["K"]] * efc_f[w, i, E["imp"]]
                                      * (efc_f[w, i, E["pos"]] - efc_f[w, i, E["margin"]]) - efc_f[w, i, E["jdotv"]])

    return types.SimpleNamespace(soft_parameters=soft_parameters, cone_regularizer=cone_regularizer,
                                 reference=reference)
