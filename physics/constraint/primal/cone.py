"""The elliptic friction cone of one contact, over its block of dim rows (the normal row
i, then the dim - 1 friction rows; MuJoCo's mjCNSTR_CONTACT_ELLIPTIC).

In the circular space U = diag(mu, friction) jar, with N the normal component and T the
tangents' norm, the contact is in one of three zones: the top (N >= mu T: no force), the
bottom (mu N + T <= 0: every row quadratic, 1/2 D jar^2) or the middle, on the cone,
with cost 1/2 Dm (N - mu T)^2, Dm = 1 / (R_0 mu^2 (1 + mu^2)) (MuJoCo's
mj_constraintUpdate). Here: the zone, the block's forces and state at its jar, the
entries of its Hessian on the cone, and its cost along the line search's direction
(the quadratic of its bottom zone and the terms N(alpha), T(alpha)^2 of the middle one,
kept in the row's ``quad`` and ``cone`` columns)."""

import functools
import types

from ...access import make_access
from ...runtime.backend import ti
from .columns import STATE_CONE, STATE_QUADRATIC, STATE_SATISFIED


@functools.lru_cache(maxsize=None)
def make_cone(fp):
    A = make_access(fp)

    @ti.func
    def cone_zone(n, t, mu):
        """1 top (no force), 2 bottom (all rows quadratic), 3 middle (on the cone)."""
        zone = 3
        if t <= 0:
            zone = 2 if n < 0 else 1
        elif n >= mu * t:
            zone = 1
        elif mu * n + t <= 0:
            zone = 2
        return zone

    @ti.func
    def contact_dim(w, i, efc_f: ti.template()):
        return ti.cast(A.efc_cone_at(efc_f, w, i, 5), ti.i32)

    @ti.func
    def cone_coordinates(w, i, dim, efc_f: ti.template()):
        """(N, T) of an elliptic contact: its jar in the circular space U = diag(mu,
        friction) jar, split into the normal component and the tangents' norm."""
        t2 = fp(0.0)
        for j in range(1, dim):
            u = A.efc_jar(efc_f, w, i + j) * A.efc_fric(efc_f, w, i + j)
            t2 += u * u
        return ti.Vector([A.efc_jar(efc_f, w, i) * A.efc_fric(efc_f, w, i), ti.sqrt(t2)])

    @ti.func
    def elliptic_update(w, i, dim, efc_f: ti.template()):
        """Forces and state of an elliptic contact's rows i .. i+dim-1; returns (their cost,
        1 if the state changed or the contact is on the cone, whose Hessian moves with jar)."""
        mu = A.efc_fric(efc_f, w, i)
        nt = cone_coordinates(w, i, dim, efc_f)
        n = nt[0]
        t = nt[1]
        zone = cone_zone(n, t, mu)
        cost = fp(0.0)
        state = STATE_SATISFIED
        if zone == 1:
            for j in range(dim):
                A.set_efc_force(efc_f, w, i + j, 0)
        elif zone == 2:
            state = STATE_QUADRATIC
            for j in range(dim):
                jar = A.efc_jar(efc_f, w, i + j)
                cost += fp(0.5) * jar * jar / A.efc_R(efc_f, w, i + j)
                A.set_efc_force(efc_f, w, i + j, -jar / A.efc_R(efc_f, w, i + j))
        else:
            state = STATE_CONE
            dm = 1 / (A.efc_R(efc_f, w, i) * mu * mu * (1 + mu * mu))
            nmt = n - mu * t
            cost = fp(0.5) * dm * nmt * nmt
            f0 = -dm * nmt * mu
            A.set_efc_force(efc_f, w, i, f0)
            for j in range(1, dim):
                fric = A.efc_fric(efc_f, w, i + j)
                A.set_efc_force(efc_f, w, i + j, -f0 / t * A.efc_jar(efc_f, w, i + j) * fric * fric)
        changed = fp(1.0) if A.efc_state(efc_f, w, i) != state or state == STATE_CONE else fp(0.0)
        for j in range(dim):
            A.set_efc_state(efc_f, w, i + j, state)
        return ti.Vector([cost, changed])

    @ti.func
    def cone_hessian_entry(w, i, dim, k, j, efc_f: ti.template()):
        """Entry (k, j) of the second derivative of the middle-zone cone cost
        1/2 Dm (N - mu T)^2 in the rows' own coordinates (MuJoCo's cone Hessian): formed in
        the circular space U = diag(mu, friction) jar, then mapped back."""
        mu = A.efc_fric(efc_f, w, i)
        nt = cone_coordinates(w, i, dim, efc_f)
        n = nt[0]
        t = nt[1]
        dm = 1 / (A.efc_R(efc_f, w, i) * mu * mu * (1 + mu * mu))
        uk = A.efc_jar(efc_f, w, i + k) * A.efc_fric(efc_f, w, i + k)
        uj = A.efc_jar(efc_f, w, i + j) * A.efc_fric(efc_f, w, i + j)
        h = fp(1.0)
        if k == 0 and j > 0:
            h = -mu / t * uj
        elif k > 0:
            h = mu * n / (t * t * t) * uj * uk
            if j == k:
                h += mu * mu - mu * n / t
        return h * dm * A.efc_fric(efc_f, w, i + k) * A.efc_fric(efc_f, w, i + j)

    @ti.func
    def prepare_cone(w, i, dim, efc_f: ti.template()):
        """The quadratic of all the contact's rows (its bottom zone) and the cone terms."""
        mu = A.efc_fric(efc_f, w, i)
        q = ti.Vector([fp(0.0), fp(0.0), fp(0.0)])
        uu = fp(0.0)
        uv = fp(0.0)
        vv = fp(0.0)
        for j in range(dim):
            jar = A.efc_jar(efc_f, w, i + j)
            jv = A.efc_jv(efc_f, w, i + j)
            d = 1 / A.efc_R(efc_f, w, i + j)
            q += ti.Vector([fp(0.5) * d * jar * jar, d * jv * jar, fp(0.5) * d * jv * jv])
            if j > 0:
                fr = A.efc_fric(efc_f, w, i + j)
                uu += (jar * fr) ** 2
                uv += jar * jv * fr * fr
                vv += (jv * fr) ** 2
        for k in ti.static(range(3)):
            A.set_efc_quad_at(efc_f, w, i, k, q[k])
        A.set_efc_cone_at(efc_f, w, i, 0, A.efc_jar(efc_f, w, i) * mu)
        A.set_efc_cone_at(efc_f, w, i, 1, A.efc_jv(efc_f, w, i) * mu)
        A.set_efc_cone_at(efc_f, w, i, 2, uu)
        A.set_efc_cone_at(efc_f, w, i, 3, uv)
        A.set_efc_cone_at(efc_f, w, i, 4, vv)

    @ti.func
    def elliptic_cost_change(w, i, alpha, efc_f: ti.template()):
        """cost(alpha) - cost(0) of an elliptic contact, and its first two derivatives."""
        mu = A.efc_fric(efc_f, w, i)
        u0 = A.efc_cone_at(efc_f, w, i, 0)
        v0 = A.efc_cone_at(efc_f, w, i, 1)
        uu = A.efc_cone_at(efc_f, w, i, 2)
        uv = A.efc_cone_at(efc_f, w, i, 3)
        vv = A.efc_cone_at(efc_f, w, i, 4)
        q0 = A.efc_quad_at(efc_f, w, i, 0)
        q1 = A.efc_quad_at(efc_f, w, i, 1)
        q2 = A.efc_quad_at(efc_f, w, i, 2)
        dm = 1 / (A.efc_R(efc_f, w, i) * mu * mu * (1 + mu * mu))
        t0 = ti.sqrt(ti.max(uu, fp(0.0)))
        zone0 = cone_zone(u0, t0, mu)
        n = u0 + alpha * v0
        t2 = uu + alpha * (2 * uv + alpha * vv)
        t = ti.sqrt(ti.max(t2, fp(0.0)))
        zone = cone_zone(n, t, mu)
        cost0 = fp(0.0)
        if zone0 == 2:
            cost0 = q0
        elif zone0 == 3:
            cost0 = fp(0.5) * dm * (u0 - mu * t0) ** 2
        cost = fp(0.0)
        d0 = fp(0.0)
        d1 = fp(0.0)
        if zone == 2:
            cost = alpha * alpha * q2 + alpha * q1 + q0
            d0 = 2 * alpha * q2 + q1
            d1 = 2 * q2
        elif zone == 3:
            n1 = v0
            t1 = (uv + alpha * vv) / t
            tt = vv / t - (uv + alpha * vv) * t1 / (t * t)
            cost = fp(0.5) * dm * (n - mu * t) ** 2
            d0 = dm * (n - mu * t) * (n1 - mu * t1)
            d1 = dm * ((n1 - mu * t1) ** 2 + (n - mu * t) * (-mu * tt))
        change = cost - cost0
        if zone0 == 3 and zone == 3:
            # the same difference without cancelling two nearly equal costs
            t_delta = alpha * (2 * uv + alpha * vv) / (t + t0)
            r_delta = alpha * v0 - mu * t_delta
            change = fp(0.5) * dm * r_delta * (2 * (u0 - mu * t0) + r_delta)
        elif zone0 == 2 and zone == 2:
            change = alpha * alpha * q2 + alpha * q1
        return ti.Vector([change, d0, d1])

    return types.SimpleNamespace(cone_zone=cone_zone, contact_dim=contact_dim, cone_coordinates=cone_coordinates,
                                 elliptic_update=elliptic_update, cone_hessian_entry=cone_hessian_entry,
                                 prepare_cone=prepare_cone, elliptic_cost_change=elliptic_cost_change)
