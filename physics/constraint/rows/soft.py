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

from ...access import make_access
from ... import layout as L
from ...model import DSBL_REFSAFE
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .table import (
    _MAXIMP,
    _MINIMP,
    _MINVAL,
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_soft(fp):
    A = make_access(fp)
    m = make_math(fp)
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
        h = A.opt_timestep(opt_f, w % opt_f.shape[0], 0)
        for i in range(nefc):
            ref0 = A.efc_solref_at(efc_f, w, i, 0)
            ref1 = A.efc_solref_at(efc_f, w, i, 1)
            if (ref0 > 0) != (ref1 > 0):  # mixed formats: MuJoCo falls back to the default
                ref0 = fp(0.02)
                ref1 = fp(1.0)
            if (sizes[L.SIZE_DISABLE] & DSBL_REFSAFE) == 0 and ref0 > 0:
                ref0 = ti.max(ref0, 2 * h)
            dmin = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), A.efc_solimp_at(efc_f, w, i, 0)))
            dmax = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), A.efc_solimp_at(efc_f, w, i, 1)))
            width = ti.max(fp(0.0), A.efc_solimp_at(efc_f, w, i, 2))
            mid = ti.min(fp(_MAXIMP), ti.max(fp(_MINIMP), A.efc_solimp_at(efc_f, w, i, 3)))
            power = ti.max(fp(1.0), A.efc_solimp_at(efc_f, w, i, 4))
            imp = impedance(dmin, dmax, width, mid, power, A.efc_imppos(efc_f, w, i) - A.efc_margin(efc_f, w, i))
            A.set_efc_imp(efc_f, w, i, imp)
            A.set_efc_R(efc_f, w, i, ti.max(fp(_MINVAL), (1 - imp) * A.efc_diagA(efc_f, w, i) / imp))
            if ref0 > 0:
                A.set_efc_K(efc_f, w, i, 1 / ti.max(fp(_MINVAL), dmax * dmax * ref0 * ref0 * ref1 * ref1))
                A.set_efc_B(efc_f, w, i, 2 / ti.max(fp(_MINVAL), dmax * ref0))
            else:
                A.set_efc_K(efc_f, w, i, -ref0 / ti.max(fp(_MINVAL), dmax * dmax))
                A.set_efc_B(efc_f, w, i, -ref1 / ti.max(fp(_MINVAL), dmax))
            kind = ti.cast(A.efc_type(efc_f, w, i), ti.i32)
            if kind == CNSTR_FRICTION_DOF or kind == CNSTR_FRICTION_TENDON:
                A.set_efc_K(efc_f, w, i, 0)  # friction has no position to restore

    @ti.func
    def cone_regularizer(w, nefc, opt_f: ti.template(), con_f: ti.template(), con_i: ti.template(),
                         efc_f: ti.template()):
        """Friction impedance of contacts (MuJoCo's mj_makeImpedance). With R_0 the normal
        row's, the regularized cone has mu = friction_0 / sqrt(impratio); all edges of a
        pyramid share R = 2 mu^2 R_0, which matches the elliptic cone's friction impedance;
        an elliptic cone's friction rows get R_j = R_0 friction_0^2 / (impratio friction_j^2)
        and no position stiffness."""
        impratio = ti.max(fp(_MINVAL), A.opt_impratio(opt_f, w % opt_f.shape[0], 0))
        i = 0
        while i < nefc:
            step = 1
            kind = A.efc_type(efc_f, w, i)
            if kind == CNSTR_CONTACT_PYRAMIDAL:
                c = ti.cast(A.efc_id(efc_f, w, i), ti.i32)
                step = 2 * (A.contact_dim(con_i, w, c) - 1)
                mu0 = A.contact_friction_at(con_f, w, c, 0)
                r_py = 2 * mu0 * mu0 * A.efc_R(efc_f, w, i) / impratio
                for j in range(step):
                    A.set_efc_R(efc_f, w, i + j, r_py)
            elif kind == CNSTR_CONTACT_ELLIPTIC:
                c = ti.cast(A.efc_id(efc_f, w, i), ti.i32)
                step = A.contact_dim(con_i, w, c)
                mu0 = A.contact_friction_at(con_f, w, c, 0)
                r1 = A.efc_R(efc_f, w, i) / impratio
                A.set_efc_fric(efc_f, w, i, mu0 / ti.sqrt(impratio))
                for j in range(1, step):
                    fj = A.contact_friction_at(con_f, w, c, j - 1)
                    A.set_efc_R(efc_f, w, i + j, r1 * mu0 * mu0 / (fj * fj))
                    A.set_efc_K(efc_f, w, i + j, 0)
            i += step

    @ti.func
    def reference(w, nefc, nv, qvel: ti.template(), dof_s: ti.template(), efc_J: ti.template(),
                  efc_f: ti.template()):
        """aref = -B J qvel - K imp (pos - margin)."""
        o_s = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        for d in range(nv):
            A.set_dof_constraint_vel(dof_s, o_s, d, qvel[w, d])
        for i in range(nefc):
            vel = row_dot(w, i, efc_J, nv, dof_s, "dof_constraint_vel")
            A.set_efc_vel(efc_f, w, i, vel)
            A.set_efc_aref(efc_f, w, i, -A.efc_B(efc_f, w, i) * vel - A.efc_K(efc_f, w, i) * A.efc_imp(efc_f, w, i)
                                      * (A.efc_pos(efc_f, w, i) - A.efc_margin(efc_f, w, i)) - A.efc_jdotv(efc_f, w, i))

    return types.SimpleNamespace(soft_parameters=soft_parameters, cone_regularizer=cone_regularizer,
                                 reference=reference)
