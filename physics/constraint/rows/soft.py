"""MuJoCo's soft-constraint model (Todorov 2014): from each row's solref/solimp, residual
pos - margin and diagA ~ A_ii = J_i M^-1 J_i^T (from *_invweight0),

    impedance  d_i = solimp sigmoid of |imppos_i - margin_i|
    regularizer R_i = (1 - d_i) / d_i * diagA_i
    reference  aref_i = -B_i J_i qvel - K_i d_i (pos_i - margin_i) - Jdot_i qvel

with K, B from solref (timeconst, dampratio > 0, or -stiffness, -damping), as MuJoCo's
getsolparam, mj_makeImpedance and mj_makeReference. Contact friction rows get the
friction impedance of their cone (impratio).

float32 Worlds solved by Newton or CG also keep every row's R at or above FLOAT32_MIN_R
times its exact A_ii. diagA only estimates A_ii, and misses it entirely where a body
cannot move its centre of mass: a sphere on a ball joint at its centre, touching a
capsule, has a contact whose normal no motion can change, translational invweight0 0, so
diagA 0 and R = 1e-15 (MuJoCo's too), while A_ii = 1.25 through the friction rows' lever
arm. Such a row's force -jar / R is ~1e15 N on each edge of the pyramid, the edges' forces
cancel in J^T f, and what float32 loses in that cancellation (~1e15 eps |J|) swamps the
torques M (3e-4 kg m^2 here) answers to: Newton's step spun the sphere about the contact
normal at 1e5 rad/s^2 where float64 and MuJoCo find 0, and the ball joint's speed grew
without bound. PGS keeps MuJoCo's R: it updates one row's force at a time against its
exact A_ii + R_ii and forms neither J^T D J nor D jar, and its float32 matched its
float64 on such contacts (to 2e-4 rad/s over 200 steps), which the floor would have
changed (by up to 4 rad/s: neither converges there in 100 sweeps). Float64 keeps MuJoCo's
regularizer unchanged.
"""

import functools
import types

from ...access import make_access
from ... import layout as L
from ...runtime.lanes import env_index
from ...model import DSBL_REFSAFE
from ...runtime.backend import ti
from ...smooth.unrolled_tree import dofs_in_registers
from ...runtime.ti_math import make_math
from ..primal.vectors import make_vectors
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

# R = 1e-3 A_ii is a row at impedance 0.999 (solimp allows up to 0.9999): a raised row
# reaches its reference acceleration to ~0.1%. Rows diagA estimates well are never raised
# (R ~ 0.05 A_ii at the default solimp; none of the Gymnasium models' rows is). The
# round-off a raised row's force carries into other directions grows as eps32 /
# FLOAT32_MIN_R: over 200 steps of small spheres on ball joints
# (tests/test_float32_robustness.py) float32 strayed from float64 by up to 8% of the
# joints' speed at 1e-4 and 0.4% at 1e-3, where the floor itself (applied in float64)
# moved them by 0.03%.
FLOAT32_MIN_R = 1e-3
FLOAT32_SCREEN = 10.0


@functools.lru_cache(maxsize=None)
def make_soft(fp):
    A = make_access(fp)
    m = make_math(fp)
    row_dot = make_row_table(fp).row_dot
    vectors = make_vectors(fp)
    dofs_loaded, row_times = vectors.dofs_loaded, vectors.row_times

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
        h = A.opt_timestep(opt_f, m.param_set(w, opt_f), 0)
        for i in range(nefc):
            soft_row(w, i, h, sizes, efc_f)

    @ti.func
    def soft_row(w, i, h, sizes: ti.template(), efc_f: ti.template()):
        """Row i's R, K, B and impedance, with time step h."""
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
        impratio = ti.max(fp(_MINVAL), A.opt_impratio(opt_f, m.param_set(w, opt_f), 0))
        i = 0
        while i < nefc:
            i += contact_cone(w, i, impratio, con_f, con_i, efc_f)

    @ti.func
    def cone_row(w, i, opt_f: ti.template(), con_f: ti.template(), con_i: ti.template(), efc_f: ti.template()):
        """cone_regularizer's work at row i, where a contact's rows start: one thread per
        row of a pass over the rows."""
        kind = A.efc_type(efc_f, w, i)
        if kind == CNSTR_CONTACT_PYRAMIDAL or kind == CNSTR_CONTACT_ELLIPTIC:
            if i == 0 or A.efc_type(efc_f, w, i - 1) != kind or A.efc_id(efc_f, w, i - 1) != A.efc_id(efc_f, w, i):
                contact_cone(w, i, ti.max(fp(_MINVAL), A.opt_impratio(opt_f, m.param_set(w, opt_f), 0)), con_f, con_i,
                             efc_f)

    @ti.func
    def contact_cone(w, i, impratio, con_f: ti.template(), con_i: ti.template(), efc_f: ti.template()):
        """The friction impedance of the contact whose rows start at row i (any other row:
        nothing); returns the rows it spans (1 for a row that is no contact's)."""
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
        return step

    @ti.func
    def float32_regularizer(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), dof_f: ti.template(),
                            qLD: ti.template(), dof_s: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """R_i >= FLOAT32_MIN_R A_ii, with A_ii = J_i M^-1 J_i^T = |D^-1/2 L^-T J_i^T|^2 from
        M's factor qLD = L^T D L: half a solve, made only for rows whose R is below
        FLOAT32_SCREEN times the estimate sum_d J_id^2 dof_invweight0_d (A_ii without M^-1's
        off-diagonal terms, at qpos0): what passes the screen lies far from the floor, and
        the half solves took a fifth of an ant's float32 Newton step. A contact's rows are
        raised together, by the most any of them needs, so its cone keeps MuJoCo's ratios
        of R."""
        o_m = m.env_offset(w, sizes[L.SIZE_M_STRIDE])
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mcol = sizes[L.SIZE_MCOL]
        i = 0
        while i < nefc:
            kind = ti.cast(A.efc_type(efc_f, w, i), ti.i32)
            n = 1
            if kind == CNSTR_CONTACT_PYRAMIDAL or kind == CNSTR_CONTACT_ELLIPTIC:
                while (i + n < nefc and A.efc_type(efc_f, w, i + n) == kind
                       and A.efc_id(efc_f, w, i + n) == A.efc_id(efc_f, w, i)):
                    n += 1
            raise_by = fp(1.0)
            for k in range(n):
                guess = fp(0.0)
                for d in range(nv):
                    jd = efc_J[env_index(w, i + k, d)]
                    guess += jd * jd * A.dof_invweight0(dof_f, md, d)
                if A.efc_R(efc_f, w, i + k) < fp(FLOAT32_SCREEN * FLOAT32_MIN_R) * guess:
                    for d in range(nv):
                        A.set_dof_scratch(dof_s, o_s, d, efc_J[env_index(w, i + k, d)])
                    for r in range(nv):
                        j = nv - 1 - r
                        xj = A.dof_scratch(dof_s, o_s, j)
                        if xj != 0:
                            adr = A.dof_madr(dof_i, j)
                            for a in range(adr + 1, adr + A.dof_mrowlen(dof_i, j)):
                                p = dof_i[mcol + a]
                                A.set_dof_scratch(dof_s, o_s, p,
                                                  A.dof_scratch(dof_s, o_s, p) - qLD[m.entry(o_m, a)] * xj)
                    a_ii = fp(0.0)
                    for d in range(nv):
                        x = A.dof_scratch(dof_s, o_s, d)
                        a_ii += x * x / qLD[m.entry(o_m, A.dof_madr(dof_i, d))]
                    held = ti.max(A.efc_R(efc_f, w, i + k), fp(_MINVAL))
                    raise_by = ti.max(raise_by, fp(FLOAT32_MIN_R) * a_ii / held)
            if raise_by > 1:
                for k in range(n):
                    A.set_efc_R(efc_f, w, i + k, raise_by * A.efc_R(efc_f, w, i + k))
            i += n

    @ti.func
    def reference(w, nefc, nv, dof_i: ti.template(), qvel: ti.template(), dof_s: ti.template(), efc_J: ti.template(),
                  efc_f: ti.template()):
        """aref = -B J qvel - K imp (pos - margin)."""
        o_s = m.env_rows(w, ti.max(nv, 1), L.NDOF_S)
        for d in range(nv):
            A.set_dof_constraint_vel(dof_s, o_s, d, qvel[env_index(w, d)])
        if ti.static(dofs_in_registers(dof_i)):
            x = dofs_loaded(w, dof_i, dof_s, "dof_constraint_vel")
            for i in range(nefc):
                set_reference(w, i, row_times(w, i, efc_J, x, fp(0.0)), efc_f)
        else:
            for i in range(nefc):
                set_reference(w, i, row_dot(w, i, efc_J, nv, dof_s, "dof_constraint_vel"), efc_f)

    @ti.func
    def set_reference(w, i, vel, efc_f: ti.template()):
        """Row i's velocity J_i qvel and its aref."""
        A.set_efc_vel(efc_f, w, i, vel)
        A.set_efc_aref(efc_f, w, i, -A.efc_B(efc_f, w, i) * vel - A.efc_K(efc_f, w, i) * A.efc_imp(efc_f, w, i)
                                  * (A.efc_pos(efc_f, w, i) - A.efc_margin(efc_f, w, i)) - A.efc_jdotv(efc_f, w, i))

    @ti.func
    def reference_row(w, i, nv, qvel: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """Row i's aref, as :func:`reference` makes it (J_i qvel summed in dof order)."""
        vel = fp(0.0)
        for d in range(nv):
            vel += efc_J[env_index(w, i, d)] * qvel[env_index(w, d)]
        set_reference(w, i, vel, efc_f)

    return types.SimpleNamespace(soft_parameters=soft_parameters, soft_row=soft_row, cone_row=cone_row,
                                 reference_row=reference_row, cone_regularizer=cone_regularizer,
                                 float32_regularizer=float32_regularizer, reference=reference)
