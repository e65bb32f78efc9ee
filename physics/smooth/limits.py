"""Joint-limit models beyond MuJoCo's soft limit constraints.

Each limited joint carries a limit model (``Model.jnt_limit_model``):

- ``soft`` (default): MuJoCo's soft constraint rows, solref/solimp (physics/constraint/rows/).
- ``cubic``: the normalized cubic penalty of hinge and slide joints. With bounds l <= u
  and strength s, x = qpos measured like the bounds:

      E(x) = s ((x - u) / (u - l))^3   for x > u
             s ((l - x) / (u - l))^3   for x < l
             0                         for l <= x <= u  (bounds are inside)
      E(x) = s |x - l|^3               when u = l

  The normalized gaps are dimensionless, so changing the range does not retune s. Its
  force -dE/dx is added to qfrc_passive and its stiffness d2E/dx2 to the dof's implicit
  stiffness, which the Euler and implicitspringdamper integrators solve implicitly.
- ``hard``: PhysX's hard limit. A constraint row appears once the joint is within the
  limit's contact distance of a bound. It lets the joint reach the bound this step but not
  cross it (velocity after the step >= -distance / h) and, when the joint would reach the
  bound this step faster than the bounce threshold, asks for the rebound velocity
  e * (approach speed) instead (restitution e). The rows are ordinary soft-constraint
  rows whose solref/solimp are chosen per step to encode exactly those velocity targets
  with MuJoCo's stiffest impedance (0.9999): near-rigid, solved by the same PGS together
  with contacts and the other constraints.
- ``spring``: PhysX's soft limit, a spring-damper beyond the bound, f = k pen - c v_pen,
  pushing only. Also a row, whose regularizer R = 1 / (h (h k + c)) and reference make
  the solver's force exactly the spring-damper evaluated at the end of the step (an
  implicit spring, stable for any stiffness); with ``jnt_limit_acceleration`` the gains
  are per unit of the dof's inverse inertia (R scales by dof_invweight0), so the motion
  does not depend on the inertia behind the joint.

Ball joints with the hard or spring model have PhysX's spherical limit: the twist about
the body's x axis within ``jnt_twist`` (lower, upper) and the swing inside the cone
``jnt_cone`` (limit of the rotation about y, about z), elliptical when the two differ.
The swing is measured as the rotation vector s = (s_y, s_z) of the minimal rotation
taking x to its current direction; the cone is (s_y / a)^2 + (s_z / b)^2 <= 1 and the
row's distance is the angle left along s's direction to the ellipse.
"""

import functools
import types

import numpy as np

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import JNT_BALL, JNT_HINGE, JNT_SLIDE, LIMIT_CUBIC, LIMIT_HARD, LIMIT_SPRING
from ..runtime.backend import ti
from ..access import make_access
from ..runtime.ti_math import make_math

CNSTR_LIMIT_JOINT = 3  # mjtConstraint
HARD_IMPEDANCE = 0.9999  # MuJoCo's largest impedance: the stiffest row its model allows
SPRING_IMPEDANCE = 0.5  # any value works: R is set through diagA
_MINVAL, _INF = 1e-15, 1e30


def cubic_limit(x, lower, upper, strength):
    """E(x), dE/dx and d2E/dx2 of the normalized cubic limit (numpy, elementwise).

    The reference for the kernels' ``cubic_penalty``; see the module docstring."""
    x, lower, upper, strength = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, lower, upper, strength)))
    width = upper - lower
    degenerate = width <= 0
    scale = np.where(degenerate, 1.0, width)
    gap = np.where(x > upper, (x - upper) / scale, np.where(x < lower, (lower - x) / scale, 0.0))
    gap = np.where(degenerate, np.abs(x - lower), gap)
    sign = np.sign(x - upper) * (x > upper) + np.sign(x - lower) * (x < lower)
    sign = np.where(degenerate, np.sign(x - lower), sign)
    energy = strength * gap**3
    force = sign * 3 * strength * gap**2 / scale
    stiffness = 6 * strength * gap / scale**2
    return energy, force, stiffness


@functools.lru_cache(maxsize=None)
def make_limits(fp):
    m = make_math(fp)
    A = make_access(fp)
    vec2 = ti.types.vector(2, fp)
    vec8 = ti.types.vector(8, fp)

    # --- the cubic penalty (a passive force) -----------------------------------------
    @ti.func
    def cubic_penalty(x, lower, upper, s):
        """(dE/dx, d2E/dx2) of the normalized cubic limit at x."""
        width = upper - lower
        gap = fp(0.0)
        sign = fp(0.0)
        scale = fp(1.0)
        if width > 0:
            scale = width
            if x > upper:
                gap = (x - upper) / width
                sign = fp(1.0)
            elif x < lower:
                gap = (lower - x) / width
                sign = fp(-1.0)
        else:  # u = l: the un-normalized cubic s |x - l|^3
            gap = ti.abs(x - lower)
            sign = fp(1.0) if x > lower else (fp(-1.0) if x < lower else fp(0.0))
        return vec2(sign * 3 * s * gap * gap / scale, 6 * s * gap / (scale * scale))

    @ti.func
    def cubic_limits(w, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(), qpos: ti.template(),
                     dof_d: ti.template()):
        """qfrc_passive -= dE/dx and implicit stiffness += d2E/dx2 of every cubic limit."""
        for j in range(sizes[L.SIZE_NJNT]):
            cubic_limit_of(w, j, sizes, jnt_i, jnt_f, qpos, dof_d)

    @ti.func
    def cubic_limit_of(w, j, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(), qpos: ti.template(),
                       dof_d: ti.template()):
        """Joint j's cubic limit, if it has one (a hinge's or slide's: its one dof)."""
        jtype = A.jnt_type(jnt_i, j)
        if A.jnt_limit_model(jnt_i, j) == LIMIT_CUBIC and (jtype == JNT_HINGE or jtype == JNT_SLIDE):
            o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
            mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
            da = A.jnt_dofadr(jnt_i, j)
            g = cubic_penalty(qpos[env_index(w, A.jnt_qposadr(jnt_i, j))], A.jnt_range_at(jnt_f, mj, j, 0),
                              A.jnt_range_at(jnt_f, mj, j, 1), A.jnt_limit_strength(jnt_f, mj, j))
            A.set_dof_qfrc_passive(dof_d, o_dof, da, A.dof_qfrc_passive(dof_d, o_dof, da) - g[0])
            A.set_dof_implicit_stiffness(dof_d, o_dof, da, A.dof_implicit_stiffness(dof_d, o_dof, da) + g[1])

    # --- PhysX limits as constraint rows ---------------------------------------------
    @ti.func
    def swing_twist(q, cone_y, cone_z):
        """PhysX's swing-twist split of a ball joint's unit quaternion q (child in parent):
        (cone distance, its Jacobian (3), twist angle, its Jacobian (3)) with respect to
        the joint's body-frame angular velocity. The cone distance is +inf at zero swing.

        With d = R x the twist axis's direction, the swing is the minimal rotation x -> d,
        of angle phi about (0, -d_z, d_y) / sin(phi); twist rate = w_x + (d_y d'_z - d_z d'_y)
        / (1 + cos phi), and d' = R (w cross x) = R (0, w_z, -w_y).
        """
        if q[0] < 0:
            q = -q
        r = m.quat_to_mat(q)
        d = m.vec3(r[0, 0], r[1, 0], r[2, 0])
        twist = 2 * ti.atan2(q[1], q[0])
        gt = r.transpose() @ (m.vec3(0, -d[2], d[1]) / ti.max(fp(_MINVAL), 1 + d[0]))
        cone = fp(_INF)
        gc = m.vec3(0)
        sin2 = d[1] * d[1] + d[2] * d[2]
        if sin2 > fp(1e-12):
            sphi = ti.sqrt(sin2)
            cb = d[1] / sphi  # swing direction beta: d = (cos phi, sin phi cos b, sin phi sin b)
            sb = d[2] / sphi
            inv_a2 = 1 / (cone_y * cone_y)
            inv_b2 = 1 / (cone_z * cone_z)
            rho = 1 / ti.sqrt(sb * sb * inv_a2 + cb * cb * inv_b2)  # the cone's angle along beta
            drho = -rho * rho * rho * sb * cb * (inv_a2 - inv_b2)
            cone = rho - ti.atan2(sphi, d[0])
            gc = r.transpose() @ m.vec3(1 / sphi, -drho * d[2] / sin2, drho * d[1] / sin2)
        return vec8(cone, 0, -gc[2], gc[1], twist, 1, -gt[2], gt[1])

    @ti.func
    def row_parameters(model, dist, vel, h, invweight, jnt_f: ti.template(), mj, j):
        """(diagA, impedance, solref0, solref1) that make MuJoCo's reference acceleration
        aref = -B vel - K imp dist and regularizer R = (1 - imp) / imp diagA encode the
        PhysX limit: for a hard row, J qvel_next >= -dist / h (or >= e * approach speed
        on a bounce); for a spring row, the implicit spring-damper force."""
        out = m.vec4(0)
        if model == LIMIT_HARD:
            d = fp(HARD_IMPEDANCE)
            e = A.jnt_limit_restitution(jnt_f, mj, j)
            if e > 0 and -vel > A.jnt_limit_bounce(jnt_f, mj, j) and dist + h * vel <= 0:
                out = m.vec4(invweight, d, 0, -d * (1 + e) / h)  # aref = -(1 + e) vel / h
            else:
                out = m.vec4(invweight, d, -d / (h * h), -d / h)  # aref = -(vel + dist / h) / h
        else:
            k = A.jnt_limit_stiffness(jnt_f, mj, j)
            kappa = h * k + A.jnt_limit_damping(jnt_f, mj, j)
            weight = invweight if A.jnt_limit_acceleration(jnt_f, mj, j) != 0 else fp(1.0)
            d = fp(SPRING_IMPEDANCE)
            out = m.vec4(weight / ti.max(fp(_MINVAL), kappa * h), d, -d * k / ti.max(fp(_MINVAL), kappa * h), -d / h)
        return out

    @ti.func
    def add_row(w, n, sizes: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template(), j,
                dist, prm):
        """Append a unilateral joint-limit row (its Jacobian is set by the caller); returns
        its index, or -1 with the overflow counted when the buffer is full."""
        row = -1
        if n < sizes[L.SIZE_NEFC]:
            row = n
            for d in range(sizes[L.SIZE_NV]):
                efc_J[env_index(w, row, d)] = 0
            A.set_efc_type(efc_f, w, row, CNSTR_LIMIT_JOINT)
            A.set_efc_id(efc_f, w, row, j)
            A.set_efc_pos(efc_f, w, row, dist)
            A.set_efc_margin(efc_f, w, row, 0)
            A.set_efc_diagA(efc_f, w, row, prm[0])
            A.set_efc_lower(efc_f, w, row, 0)
            A.set_efc_upper(efc_f, w, row, fp(_INF))
            A.set_efc_solref_at(efc_f, w, row, 0, prm[2])
            A.set_efc_solref_at(efc_f, w, row, 1, prm[3])
            A.set_efc_solimp_at(efc_f, w, row, 0, prm[1])
            A.set_efc_solimp_at(efc_f, w, row, 1, prm[1])
            A.set_efc_solimp_at(efc_f, w, row, 2, 0)
            A.set_efc_solimp_at(efc_f, w, row, 3, fp(0.5))
            A.set_efc_solimp_at(efc_f, w, row, 4, 2)
            A.set_efc_imppos(efc_f, w, row, dist)
            A.set_efc_jdotv(efc_f, w, row, 0)
        else:
            A.set_nefc_overflow(efc_n, w, A.nefc_overflow(efc_n, w) + 1)
        return row

    @ti.func
    def physx_limit_rows(w, nefc, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(),
                         dof_f: ti.template(), opt_f: ti.template(), qpos: ti.template(), qvel: ti.template(),
                         efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows of the hard and spring limits within their contact distance; returns nefc."""
        n = nefc
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        h = A.opt_timestep(opt_f, m.param_set(w, opt_f), 0)
        for j in range(sizes[L.SIZE_NJNT]):
            model = A.jnt_limit_model(jnt_i, j)
            if model == LIMIT_HARD or model == LIMIT_SPRING:
                jtype = A.jnt_type(jnt_i, j)
                da = A.jnt_dofadr(jnt_i, j)
                reach = A.jnt_limit_distance(jnt_f, mj, j)
                invweight = A.dof_invweight0(dof_f, md, da)
                if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                    value = qpos[env_index(w, A.jnt_qposadr(jnt_i, j))]
                    for s in ti.static(range(2)):
                        side = fp(-1.0) if s == 0 else fp(1.0)
                        dist = side * (A.jnt_range_at(jnt_f, mj, j, s) - value)
                        if dist < reach:
                            prm = row_parameters(model, dist, -side * qvel[env_index(w, da)], h, invweight, jnt_f, mj, j)
                            row = add_row(w, n, sizes, efc_J, efc_f, efc_n, j, dist, prm)
                            if row >= 0:
                                efc_J[env_index(w, row, da)] = -side
                                n += 1
                elif jtype == JNT_BALL:
                    pa = A.jnt_qposadr(jnt_i, j)
                    q = m.quat_normalize(m.vec4(qpos[env_index(w, pa)], qpos[env_index(w, pa + 1)], qpos[env_index(w, pa + 2)], qpos[env_index(w, pa + 3)]))
                    g = swing_twist(q, A.jnt_cone_at(jnt_f, mj, j, 0), A.jnt_cone_at(jnt_f, mj, j, 1))
                    omega = m.vec3(qvel[env_index(w, da)], qvel[env_index(w, da + 1)], qvel[env_index(w, da + 2)])
                    # the cone (part 0), the twist's lower (1) and upper (2) bounds
                    for part in range(3):
                        sign = fp(1.0) if part < 2 else fp(-1.0)
                        base = 0 if part == 0 else 4
                        jac = sign * m.vec3(g[base + 1], g[base + 2], g[base + 3])
                        dist = g[0]
                        if part == 1:
                            dist = g[4] - A.jnt_twist_at(jnt_f, mj, j, 0)
                        elif part == 2:
                            dist = A.jnt_twist_at(jnt_f, mj, j, 1) - g[4]
                        if dist < reach:
                            prm = row_parameters(model, dist, jac.dot(omega), h, invweight, jnt_f, mj, j)
                            row = add_row(w, n, sizes, efc_J, efc_f, efc_n, j, dist, prm)
                            if row >= 0:
                                for k in ti.static(range(3)):
                                    efc_J[env_index(w, row, da + k)] = jac[k]
                                n += 1
        return n

    return types.SimpleNamespace(cubic_limits=cubic_limits, cubic_limit_of=cubic_limit_of,
                                 physx_limit_rows=physx_limit_rows, cubic_penalty=cubic_penalty,
                                 swing_twist=swing_twist)
