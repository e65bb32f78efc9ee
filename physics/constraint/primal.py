"""MuJoCo's primal constraint solvers, Newton and conjugate gradient, for one world.

The constraint forces of the soft model are those that minimise, over the acceleration a,

    cost(a) = 1/2 (a - qacc_smooth)^T M (a - qacc_smooth) + sum_i s_i(J_i a - aref_i)

where each row's s_i is convex and piecewise quadratic in jar_i = J_i a - aref_i
(Todorov 2014; MuJoCo's mj_constraintUpdate):
  equality rows          1/2 D jar^2 always,
  friction-loss rows     Huber: quadratic within |jar| < R floss, linear outside,
  limits, contacts       1/2 D jar^2 while jar < 0 (the row pushes), else 0,
  elliptic contacts      a cone cost over the contact's block of rows,
with D = 1/R, and the force of row i is -ds_i/djar_i. The problem is smooth and convex,
so Newton's method (H = M + J^T D_active J, refactored each iteration) converges in a
handful of iterations; CG uses M^-1 as preconditioner. Both move along a search
direction by an exact line search on the piecewise-quadratic cost (MuJoCo's PrimalSearch:
Newton steps in alpha inside a shrinking bracket).

Rows are told apart by their bounds, so limit rows of any model (MuJoCo's or PhysX's)
take part: lower = -inf is an equality, finite lower and upper a friction loss, lower 0
a unilateral row.
"""

import functools
import types

from .. import layout as L
from ..runtime.backend import ti
from ..runtime.ti_math import make_math
from ..smooth.inertia import make_inertia

E = {k: v[0] for k, v in L.EFC_F.items()}
DOF = {k: v[0] for k, v in L.DOF_D.items()}
TOLERANCE, LS_TOLERANCE = L.OPT_F["tolerance"][0], L.OPT_F["ls_tolerance"][0]
MEANINERTIA = L.OPT_F["meaninertia"][0]
CNSTR_CONTACT_ELLIPTIC = 7
STATE_SATISFIED, STATE_QUADRATIC, STATE_LINEARNEG, STATE_LINEARPOS, STATE_CONE = 0, 1, 2, 3, 4
_MINVAL, _HALF_INF, _INF = 1e-15, 1e29, 1e30
MA, GRAD, MGRAD, SEARCH, MV = DOF["ma"], DOF["grad"], DOF["mgrad"], DOF["search"], DOF["mv"]
GRADOLD, MGRADOLD, SCRATCH = DOF["gradold"], DOF["mgradold"], DOF["scratch"]
QACC_SMOOTH, QACC_WARMSTART, QFRC_SMOOTH = DOF["qacc_smooth"], DOF["qacc_warmstart"], DOF["qfrc_smooth"]
FLOAT32_EPS = 2.0**-24  # unit round-off
HESS_CHUNK = 32  # rows of J^T D J summed per pass over a column


@functools.lru_cache(maxsize=None)
def make_primal(fp, newton: bool, elliptic: bool):
    """The solver for one configuration: Newton or CG, with or without elliptic cones,
    compiled in only where used (the fused step kernel's compile time is user-facing)."""
    inertia = make_inertia(fp)
    m = make_math(fp)
    single = fp == ti.f32

    # --- vectors ------------------------------------------------------------------------
    @ti.func
    def dot(w, nv, dof_d: ti.template(), a: ti.template(), b: ti.template()):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        s = fp(0.0)
        for d in range(nv):
            s += dof_d[o_dof + d * L.NDOF_D + a] * dof_d[o_dof + d * L.NDOF_D + b]
        return s

    @ti.func
    def mul_M(w, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), dof_d: ti.template(),
              src: ti.template(), dst: ti.template()):
        """dof_d[:, dst] <- M dof_d[:, src] from the tree-sparse rows of qM."""
        o_m = w * sizes[L.SIZE_M_STRIDE]
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for i in range(nv):
            dof_d[o_dof + i * L.NDOF_D + dst] = 0
        for i in range(nv):
            a = dof_i[i * L.NDOF_I + L.DOF_MADR]
            dof_d[o_dof + i * L.NDOF_D + dst] = (dof_d[o_dof + i * L.NDOF_D + dst]
                                                 + qM[o_m + a] * dof_d[o_dof + i * L.NDOF_D + src])
            j = dof_i[i * L.NDOF_I + L.DOF_PARENT]
            while j >= 0:
                a += 1
                dof_d[o_dof + i * L.NDOF_D + dst] = (dof_d[o_dof + i * L.NDOF_D + dst]
                                                     + qM[o_m + a] * dof_d[o_dof + j * L.NDOF_D + src])
                dof_d[o_dof + j * L.NDOF_D + dst] = (dof_d[o_dof + j * L.NDOF_D + dst]
                                                     + qM[o_m + a] * dof_d[o_dof + i * L.NDOF_D + src])
                j = dof_i[j * L.NDOF_I + L.DOF_PARENT]

    @ti.func
    def mul_J(w, nefc, nv, efc_J: ti.template(), dof_d: ti.template(), src: ti.template(), efc_f: ti.template(),
              dst: ti.template()):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        for i in range(nefc):
            s = fp(0.0)
            for d in range(nv):
                s += efc_J[w, i, d] * dof_d[o_dof + d * L.NDOF_D + src]
            efc_f[w, i, dst] = s

    @ti.func
    def set_jar(w, nefc, nv, qacc: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """jar = J qacc - aref."""
        for i in range(nefc):
            s = -efc_f[w, i, E["aref"]]
            for d in range(nv):
                s += efc_J[w, i, d] * qacc[w, d]
            efc_f[w, i, E["jar"]] = s

    @ti.func
    def set_ma(w, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), qacc: ti.template(),
               dof_d: ti.template()):
        """MA <- M (qacc - qacc_smooth); returns the Gauss cost 1/2 (a - a0)^T M (a - a0)."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + SCRATCH] = qacc[w, d] - dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH]
        mul_M(w, nv, sizes, dof_i, qM, dof_d, SCRATCH, MA)
        return fp(0.5) * dot(w, nv, dof_d, SCRATCH, MA)

    # --- the cost of the rows -----------------------------------------------------------------
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
        return ti.cast(efc_f[w, i, E["cone"] + 5], ti.i32)

    @ti.func
    def update_rows(w, nefc, efc_f: ti.template()):
        """Force and state of every row at its jar; returns (the rows' cost, how many rows
        changed their Hessian: a new state, or an elliptic contact on its cone)."""
        out = ti.Vector([fp(0.0), fp(0.0)])
        i = 0
        while i < nefc:
            step = 1
            if ti.static(elliptic):
                if efc_f[w, i, E["type"]] == CNSTR_CONTACT_ELLIPTIC:
                    step = contact_dim(w, i, efc_f)
                    out += elliptic_update(w, i, step, efc_f)
                else:
                    out += scalar_update(w, i, efc_f)
            else:
                out += scalar_update(w, i, efc_f)
            i += step
        return out

    @ti.func
    def scalar_update(w, i, efc_f: ti.template()):
        """Force and state of row i, which is not part of an elliptic cone; returns (its
        cost, 1 if its state changed)."""
        cost = fp(0.0)
        jar = efc_f[w, i, E["jar"]]
        d = 1 / efc_f[w, i, E["R"]]
        upper = efc_f[w, i, E["upper"]]
        force = -d * jar
        state = STATE_QUADRATIC
        if efc_f[w, i, E["lower"]] < -_HALF_INF:
            cost = fp(0.5) * d * jar * jar
        elif upper < _HALF_INF:
            rf = efc_f[w, i, E["R"]] * upper
            if jar <= -rf:
                cost = -fp(0.5) * rf * upper - upper * jar
                force = upper
                state = STATE_LINEARNEG
            elif jar >= rf:
                cost = -fp(0.5) * rf * upper + upper * jar
                force = -upper
                state = STATE_LINEARPOS
            else:
                cost = fp(0.5) * d * jar * jar
        elif jar >= 0:
            force = fp(0.0)
            state = STATE_SATISFIED
        else:
            cost = fp(0.5) * d * jar * jar
        efc_f[w, i, E["force"]] = force
        changed = fp(1.0) if efc_f[w, i, E["state"]] != state else fp(0.0)
        efc_f[w, i, E["state"]] = state
        return ti.Vector([cost, changed])

    @ti.func
    def cone_coordinates(w, i, dim, efc_f: ti.template()):
        """(N, T) of an elliptic contact: its jar in the circular space U = diag(mu,
        friction) jar, split into the normal component and the tangents' norm."""
        t2 = fp(0.0)
        for j in range(1, dim):
            u = efc_f[w, i + j, E["jar"]] * efc_f[w, i + j, E["fric"]]
            t2 += u * u
        return ti.Vector([efc_f[w, i, E["jar"]] * efc_f[w, i, E["fric"]], ti.sqrt(t2)])

    @ti.func
    def elliptic_update(w, i, dim, efc_f: ti.template()):
        """Forces and state of an elliptic contact's rows i .. i+dim-1; returns (their cost,
        1 if the state changed or the contact is on the cone, whose Hessian moves with jar)."""
        mu = efc_f[w, i, E["fric"]]
        nt = cone_coordinates(w, i, dim, efc_f)
        n = nt[0]
        t = nt[1]
        zone = cone_zone(n, t, mu)
        cost = fp(0.0)
        state = STATE_SATISFIED
        if zone == 1:
            for j in range(dim):
                efc_f[w, i + j, E["force"]] = 0
        elif zone == 2:
            state = STATE_QUADRATIC
            for j in range(dim):
                jar = efc_f[w, i + j, E["jar"]]
                cost += fp(0.5) * jar * jar / efc_f[w, i + j, E["R"]]
                efc_f[w, i + j, E["force"]] = -jar / efc_f[w, i + j, E["R"]]
        else:
            state = STATE_CONE
            dm = 1 / (efc_f[w, i, E["R"]] * mu * mu * (1 + mu * mu))
            nmt = n - mu * t
            cost = fp(0.5) * dm * nmt * nmt
            f0 = -dm * nmt * mu
            efc_f[w, i, E["force"]] = f0
            for j in range(1, dim):
                fric = efc_f[w, i + j, E["fric"]]
                efc_f[w, i + j, E["force"]] = -f0 / t * efc_f[w, i + j, E["jar"]] * fric * fric
        changed = fp(1.0) if efc_f[w, i, E["state"]] != state or state == STATE_CONE else fp(0.0)
        for j in range(dim):
            efc_f[w, i + j, E["state"]] = state
        return ti.Vector([cost, changed])

    @ti.func
    def update(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(), qM: ti.template(),
               qacc: ti.template(), dof_d: ti.template(), efc_J: ti.template(), efc_f: ti.template(),
               efc_Y: ti.template(), hess, rows_moved):
        """Row forces at the current jar, grad = M (a - a0) - J^T f, and the preconditioned
        gradient MGRAD: with ``hess`` (Newton) H^-1 grad, else M^-1 grad. ``hess`` 1 builds
        and factors the Hessian; 2 keeps the factor from the last update unless a row's
        Hessian changed. Without ``rows_moved`` the rows and grad are those of the last
        update and only MGRAD is redone. Returns the total cost and, in float32, the
        squared norm of the gradient's terms (sum over dofs of (|qfrc_smooth| + sum_i
        |J f|)^2) that bounds its round-off."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        out = ti.Vector([fp(0.0), fp(0.0)])
        changed = fp(1.0)
        if rows_moved != 0:
            rows = update_rows(w, nefc, efc_f)
            changed = rows[1]
            size2 = fp(0.0)
            for d in range(nv):
                g = dof_d[o_dof + d * L.NDOF_D + MA]
                size = ti.abs(dof_d[o_dof + d * L.NDOF_D + QFRC_SMOOTH])
                for i in range(nefc):
                    force = efc_J[w, i, d] * efc_f[w, i, E["force"]]
                    g -= force
                    if ti.static(single):
                        size += ti.abs(force)
                if ti.static(single):
                    size2 += size * size
                dof_d[o_dof + d * L.NDOF_D + GRAD] = g
                dof_d[o_dof + d * L.NDOF_D + SCRATCH] = qacc[w, d] - dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH]
            out = ti.Vector([rows[0] + fp(0.5) * dot(w, nv, dof_d, SCRATCH, MA), size2])
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + MGRAD] = dof_d[o_dof + d * L.NDOF_D + GRAD]
        if ti.static(newton):
            if hess != 0:
                if hess == 1 or changed > 0:
                    hessian(w, nefc, nv, sizes, dof_i, qM, efc_J, efc_f, efc_Y)
                    cholesky(w, nv, efc_Y)
                cholesky_solve(w, nv, efc_Y, dof_d, MGRAD)
            else:
                inertia.solve(w, sizes, dof_i, qLD, dof_d, MGRAD)
        else:
            inertia.solve(w, sizes, dof_i, qLD, dof_d, MGRAD)
        return out

    # --- Newton's Hessian -------------------------------------------------------------------------
    @ti.func
    def add_outer(w, nv, efc_J: ti.template(), efc_Y: ti.template(), r, s, scale):
        """Lower triangle of H += scale (J_r J_s^T + J_s J_r^T), r != s, or scale J_r J_r^T."""
        for a in range(nv):
            jra = efc_J[w, r, a]
            jsa = efc_J[w, s, a]
            if jra != 0 or jsa != 0:
                for b in range(a + 1):
                    v = jra * efc_J[w, s, b]
                    if r != s:
                        v += jsa * efc_J[w, r, b]
                    efc_Y[w, a, b] += scale * v

    @ti.func
    def hessian(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), efc_J: ti.template(),
                efc_f: ti.template(), efc_Y: ti.template()):
        """Lower triangle of H = M + J^T D J over the quadratic rows, plus each elliptic
        contact's cone Hessian while it slides on the cone. Each entry of J^T D J is one
        reduction, a loop without stores (several times faster than accumulating outer
        products row by row), over only the rows that touch its column: a limit or a
        contact's row touches the few dofs of its bodies' chains, not all of them. Those
        rows are listed in registers, HESS_CHUNK at a time: a list in memory costs twice
        the time."""
        o_m = w * sizes[L.SIZE_M_STRIDE]
        for i in range(nefc):
            weight = fp(0.0)
            if efc_f[w, i, E["state"]] == STATE_QUADRATIC:
                weight = 1 / efc_f[w, i, E["R"]]
            efc_f[w, i, E["hess"]] = weight
        for a in range(nv):
            for b in range(a + 1):
                efc_Y[w, a, b] = 0
            i = 0
            while i < nefc:
                rows = ti.Vector([0] * HESS_CHUNK)
                vals = ti.Vector([fp(0.0)] * HESS_CHUNK)
                count = 0
                while i < nefc and count < HESS_CHUNK:
                    v = efc_f[w, i, E["hess"]] * efc_J[w, i, a]
                    if v != 0:
                        rows[count] = i
                        vals[count] = v
                        count += 1
                    i += 1
                for b in range(a + 1):
                    h = fp(0.0)
                    for k in range(count):
                        h += vals[k] * efc_J[w, rows[k], b]
                    efc_Y[w, a, b] += h
        for i in range(nv):
            adr = dof_i[i * L.NDOF_I + L.DOF_MADR]
            efc_Y[w, i, i] += qM[o_m + adr]
            j = dof_i[i * L.NDOF_I + L.DOF_PARENT]
            while j >= 0:
                adr += 1
                efc_Y[w, i, j] += qM[o_m + adr]
                j = dof_i[j * L.NDOF_I + L.DOF_PARENT]
        if ti.static(elliptic):
            i = 0
            while i < nefc:
                dim = 1
                if efc_f[w, i, E["type"]] == CNSTR_CONTACT_ELLIPTIC:
                    dim = contact_dim(w, i, efc_f)
                    if efc_f[w, i, E["state"]] == STATE_CONE:
                        for k in range(dim):
                            for j in range(k, dim):
                                h = cone_hessian_entry(w, i, dim, k, j, efc_f)
                                if h != 0:
                                    add_outer(w, nv, efc_J, efc_Y, i + k, i + j, h)
                i += dim

    @ti.func
    def cone_hessian_entry(w, i, dim, k, j, efc_f: ti.template()):
        """Entry (k, j) of the second derivative of the middle-zone cone cost
        1/2 Dm (N - mu T)^2 in the rows' own coordinates (MuJoCo's cone Hessian): formed in
        the circular space U = diag(mu, friction) jar, then mapped back."""
        mu = efc_f[w, i, E["fric"]]
        nt = cone_coordinates(w, i, dim, efc_f)
        n = nt[0]
        t = nt[1]
        dm = 1 / (efc_f[w, i, E["R"]] * mu * mu * (1 + mu * mu))
        uk = efc_f[w, i + k, E["jar"]] * efc_f[w, i + k, E["fric"]]
        uj = efc_f[w, i + j, E["jar"]] * efc_f[w, i + j, E["fric"]]
        h = fp(1.0)
        if k == 0 and j > 0:
            h = -mu / t * uj
        elif k > 0:
            h = mu * n / (t * t * t) * uj * uk
            if j == k:
                h += mu * mu - mu * n / t
        return h * dm * efc_f[w, i + k, E["fric"]] * efc_f[w, i + j, E["fric"]]

    @ti.func
    def cholesky(w, nv, efc_Y: ti.template()):
        """In place: the lower triangle of efc_Y[w, :nv, :nv] <- its Cholesky factor."""
        for j in range(nv):
            s = efc_Y[w, j, j]
            for k in range(j):
                s -= efc_Y[w, j, k] * efc_Y[w, j, k]
            ljj = ti.sqrt(ti.max(s, fp(_MINVAL)))
            efc_Y[w, j, j] = ljj
            for i in range(j + 1, nv):
                s = efc_Y[w, i, j]
                for k in range(j):
                    s -= efc_Y[w, i, k] * efc_Y[w, j, k]
                efc_Y[w, i, j] = s / ljj

    @ti.func
    def cholesky_solve(w, nv, efc_Y: ti.template(), dof_d: ti.template(), col: ti.template()):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        for i in range(nv):
            s = dof_d[o_dof + i * L.NDOF_D + col]
            for k in range(i):
                s -= efc_Y[w, i, k] * dof_d[o_dof + k * L.NDOF_D + col]
            dof_d[o_dof + i * L.NDOF_D + col] = s / efc_Y[w, i, i]
        for r in range(nv):
            i = nv - 1 - r
            s = dof_d[o_dof + i * L.NDOF_D + col]
            for k in range(i + 1, nv):
                s -= efc_Y[w, k, i] * dof_d[o_dof + k * L.NDOF_D + col]
            dof_d[o_dof + i * L.NDOF_D + col] = s / efc_Y[w, i, i]

    # --- line search --------------------------------------------------------------------------------
    @ti.func
    def prepare(w, nefc, nv, dof_d: ti.template(), efc_f: ti.template()):
        """Each row's cost along a + alpha search as a quadratic in alpha (q0 + q1 alpha +
        q2 alpha^2 while its state holds), and the cone terms of elliptic contacts. Returns
        the Gauss term's linear and quadratic coefficients."""
        i = 0
        while i < nefc:
            step = 1
            is_cone = 0
            if ti.static(elliptic):
                if efc_f[w, i, E["type"]] == CNSTR_CONTACT_ELLIPTIC:
                    is_cone = 1
                    step = contact_dim(w, i, efc_f)
                    prepare_cone(w, i, step, efc_f)
            if is_cone == 0:
                jar = efc_f[w, i, E["jar"]]
                jv = efc_f[w, i, E["jv"]]
                d = 1 / efc_f[w, i, E["R"]]
                efc_f[w, i, E["quad"]] = fp(0.5) * d * jar * jar
                efc_f[w, i, E["quad"] + 1] = d * jv * jar
                efc_f[w, i, E["quad"] + 2] = fp(0.5) * d * jv * jv
            i += step
        return ti.Vector([dot(w, nv, dof_d, SEARCH, MA), fp(0.5) * dot(w, nv, dof_d, SEARCH, MV)])

    @ti.func
    def prepare_cone(w, i, dim, efc_f: ti.template()):
        """The quadratic of all the contact's rows (its bottom zone) and the cone terms."""
        mu = efc_f[w, i, E["fric"]]
        q = ti.Vector([fp(0.0), fp(0.0), fp(0.0)])
        uu = fp(0.0)
        uv = fp(0.0)
        vv = fp(0.0)
        for j in range(dim):
            jar = efc_f[w, i + j, E["jar"]]
            jv = efc_f[w, i + j, E["jv"]]
            d = 1 / efc_f[w, i + j, E["R"]]
            q += ti.Vector([fp(0.5) * d * jar * jar, d * jv * jar, fp(0.5) * d * jv * jv])
            if j > 0:
                fr = efc_f[w, i + j, E["fric"]]
                uu += (jar * fr) ** 2
                uv += jar * jv * fr * fr
                vv += (jv * fr) ** 2
        for k in ti.static(range(3)):
            efc_f[w, i, E["quad"] + k] = q[k]
        efc_f[w, i, E["cone"]] = efc_f[w, i, E["jar"]] * mu
        efc_f[w, i, E["cone"] + 1] = efc_f[w, i, E["jv"]] * mu
        efc_f[w, i, E["cone"] + 2] = uu
        efc_f[w, i, E["cone"] + 3] = uv
        efc_f[w, i, E["cone"] + 4] = vv

    @ti.func
    def huber(x, f, rf, d):
        cost = fp(0.5) * d * x * x
        if x <= -rf:
            cost = f * (-fp(0.5) * rf - x)
        elif x >= rf:
            cost = f * (-fp(0.5) * rf + x)
        return cost

    @ti.func
    def elliptic_cost_change(w, i, alpha, efc_f: ti.template()):
        """cost(alpha) - cost(0) of an elliptic contact, and its first two derivatives."""
        mu = efc_f[w, i, E["fric"]]
        u0 = efc_f[w, i, E["cone"]]
        v0 = efc_f[w, i, E["cone"] + 1]
        uu = efc_f[w, i, E["cone"] + 2]
        uv = efc_f[w, i, E["cone"] + 3]
        vv = efc_f[w, i, E["cone"] + 4]
        q0 = efc_f[w, i, E["quad"]]
        q1 = efc_f[w, i, E["quad"] + 1]
        q2 = efc_f[w, i, E["quad"] + 2]
        dm = 1 / (efc_f[w, i, E["R"]] * mu * mu * (1 + mu * mu))
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

    @ti.func
    def evaluate(w, nefc, gauss, alpha, efc_f: ti.template()):
        """(alpha, cost(alpha) - cost(0), d cost/d alpha, d2 cost/d alpha2)."""
        quad = ti.Vector([fp(0.0), gauss[0], gauss[1]])
        total = ti.Vector([fp(0.0), fp(0.0), fp(0.0)])
        i = 0
        while i < nefc:
            step = 1
            lower = efc_f[w, i, E["lower"]]
            upper = efc_f[w, i, E["upper"]]
            is_cone = 0
            if ti.static(elliptic):
                if efc_f[w, i, E["type"]] == CNSTR_CONTACT_ELLIPTIC:
                    is_cone = 1
                    step = contact_dim(w, i, efc_f)
                    total += elliptic_cost_change(w, i, alpha, efc_f)
            if is_cone != 0:
                pass
            elif lower < -_HALF_INF:
                quad[1] += efc_f[w, i, E["quad"] + 1]
                quad[2] += efc_f[w, i, E["quad"] + 2]
            elif upper < _HALF_INF:
                start = efc_f[w, i, E["jar"]]
                jv = efc_f[w, i, E["jv"]]
                x = start + alpha * jv
                d = 1 / efc_f[w, i, E["R"]]
                rf = efc_f[w, i, E["R"]] * upper
                total[0] += huber(x, upper, rf, d) - huber(start, upper, rf, d)
                if x <= -rf:
                    total[1] -= upper * jv
                elif x >= rf:
                    total[1] += upper * jv
                else:
                    total[1] += d * x * jv
                    total[2] += d * jv * jv
            else:
                start = efc_f[w, i, E["jar"]]
                x = start + alpha * efc_f[w, i, E["jv"]]
                cost0 = efc_f[w, i, E["quad"]] if start < 0 else fp(0.0)
                if x < 0:
                    quad[0] += efc_f[w, i, E["quad"]] - cost0
                    quad[1] += efc_f[w, i, E["quad"] + 1]
                    quad[2] += efc_f[w, i, E["quad"] + 2]
                else:
                    total[0] -= cost0
            i += step
        total += ti.Vector([alpha * alpha * quad[2] + alpha * quad[1] + quad[0], 2 * alpha * quad[2] + quad[1],
                            2 * quad[2]])
        return ti.Vector([alpha, total[0], total[1], ti.max(total[2], fp(_MINVAL))])

    @ti.func
    def line_search(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(),
                    dof_d: ti.template(), efc_J: ti.template(), efc_f: ti.template(), gtol_scale, ls_iterations):
        """(alpha, improvement) that minimise the cost along SEARCH: safeguarded Newton steps
        on the convex, piecewise-quadratic cost(alpha), each exact while no row changes
        state, kept inside the bracket of slopes of opposite sign (bisection when a step
        leaves it). Stops when the slope is below the scaled tolerance, as MuJoCo's search;
        a handful of scalars instead of MuJoCo's bracket points keeps compile time small."""
        out = ti.Vector([fp(0.0), fp(0.0)])
        snorm = ti.sqrt(dot(w, nv, dof_d, SEARCH, SEARCH))
        if snorm >= fp(_MINVAL):
            gtol = gtol_scale * snorm
            mul_M(w, nv, sizes, dof_i, qM, dof_d, SEARCH, MV)
            mul_J(w, nefc, nv, efc_J, dof_d, SEARCH, efc_f, E["jv"])
            gauss = prepare(w, nefc, nv, dof_d, efc_f)
            lo = -fp(_INF)  # slope < 0 here
            hi = fp(_INF)  # slope > 0 here
            alpha = fp(0.0)
            best_alpha = fp(0.0)
            best_cost = fp(0.0)
            evals = 0
            done = 0
            while done == 0 and evals < ls_iterations:
                p = evaluate(w, nefc, gauss, alpha, efc_f)
                evals += 1
                if p[1] < best_cost:
                    best_cost = p[1]
                    best_alpha = alpha
                if ti.abs(p[2]) < gtol and (evals > 1 or p[1] < 0):
                    done = 1
                else:
                    if p[2] < 0:
                        lo = alpha
                    else:
                        hi = alpha
                    step = alpha - p[2] / p[3]
                    if step <= lo or step >= hi:
                        step = fp(0.5) * (lo + hi)
                    if lo <= -fp(_HALF_INF) or hi >= fp(_HALF_INF):
                        step = alpha - p[2] / p[3]
                    if step == alpha:
                        done = 1  # numerical accuracy reached
                    alpha = step
            if best_cost < 0:
                out = ti.Vector([best_alpha, -best_cost])
        return out

    # --- the solver ------------------------------------------------------------------------------------
    @ti.func
    def start(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(), qacc: ti.template(),
              dof_d: ti.template(), efc_J: ti.template(), efc_f: ti.template(), warmstart):
        """qacc <- the better of the previous step's acceleration and qacc_smooth, with jar
        and MA at it (one loop around one update_rows, which the compiler inlines). At
        qacc_smooth, jar is the rows' bias and MA is zero: nothing to recompute."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        use_smooth = 1
        if warmstart:
            cost_warm = fp(0.0)
            for k in range(2):
                gauss = fp(0.0)
                if k == 0:
                    for d in range(nv):
                        qacc[w, d] = dof_d[o_dof + d * L.NDOF_D + QACC_WARMSTART]
                    set_jar(w, nefc, nv, qacc, efc_J, efc_f)
                    gauss = set_ma(w, nv, sizes, dof_i, qM, qacc, dof_d)
                else:
                    for i in range(nefc):  # keep the warm start's jar in jv, free until the line search
                        efc_f[w, i, E["jv"]] = efc_f[w, i, E["jar"]]
                        efc_f[w, i, E["jar"]] = efc_f[w, i, E["bias"]]
                cost = update_rows(w, nefc, efc_f)[0] + gauss
                if k == 0:
                    cost_warm = cost
                elif cost >= cost_warm:
                    use_smooth = 0
                    for i in range(nefc):
                        efc_f[w, i, E["jar"]] = efc_f[w, i, E["jv"]]
        if use_smooth != 0:
            for d in range(nv):
                qacc[w, d] = dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH]
                dof_d[o_dof + d * L.NDOF_D + MA] = 0
            for i in range(nefc):
                efc_f[w, i, E["jar"]] = efc_f[w, i, E["bias"]]

    @ti.func
    def solve(w, nefc, nv, sizes: ti.template(), opt_f: ti.template(), dof_i: ti.template(), qM: ti.template(),
              qLD: ti.template(), qacc: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
              efc_f: ti.template(), efc_Y: ti.template(), warmstart):
        """qacc <- argmin cost(a), with the rows' forces and states at the minimum (MuJoCo's
        mj_solPrimal); returns the iterations made. One loop around one update() and one
        line_search(), for compile time."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        mo = w % opt_f.shape[0]
        tolerance = opt_f[mo, 0, TOLERANCE]
        scale = 1 / (opt_f[mo, 0, MEANINERTIA] * ti.max(1, nv))
        gtol_scale = tolerance * opt_f[mo, 0, LS_TOLERANCE] / scale
        for i in range(nefc):
            bias = -efc_f[w, i, E["aref"]]
            for d in range(nv):
                bias += efc_J[w, i, d] * dof_d[o_dof + d * L.NDOF_D + QACC_SMOOTH]
            efc_f[w, i, E["bias"]] = bias
        start(w, nefc, nv, sizes, dof_i, qM, qacc, dof_d, efc_J, efc_f, warmstart)
        # stage 0 (CG): the start point's certificate (M^-1 preconditioning); 1 (Newton):
        # the same, and failing it, the first Hessian, whose decrement certifies the start;
        # 2: iterating
        stage = 1 if ti.static(newton) else 0
        # Newton tries M^-1 first: H = M + J^T D J >= M, so grad^T M^-1 grad bounds Newton's
        # decrement, and a warm start it certifies needs no Hessian at all
        hess = 0
        rows_moved = 1
        terms2 = fp(0.0)
        it = 0
        improvement = fp(0.0)
        done = 0
        while done == 0:
            upd = update(w, nefc, nv, sizes, dof_i, qLD, qM, qacc, dof_d, efc_J, efc_f, efc_Y, hess, rows_moved)
            if rows_moved != 0:
                terms2 = upd[1]
            rows_moved = 1
            if hess == 1:
                hess = 2  # factored: later updates refactor only where rows changed
            gradient = scale * ti.sqrt(dot(w, nv, dof_d, GRAD, GRAD))
            if ti.static(single):
                # a gradient within its own round-off (a sum of nv + nefc terms, each with
                # relative error eps) is zero as far as float32 can tell: iterating on it
                # only moves around the optimum
                floor = scale * (nv + nefc) * FLOAT32_EPS * ti.sqrt(terms2)
                if gradient < floor:
                    gradient = fp(0.0)
            # 1/2 grad^T P^-1 grad: with P = M it bounds the suboptimality (the cost is
            # strongly convex in the M norm); with P = H it is Newton's decrement
            decrement = ti.max(fp(0.0), fp(0.5) * scale * dot(w, nv, dof_d, GRAD, MGRAD))
            if stage == 0:
                stage = 2
                if decrement < tolerance:
                    done = 1
            elif stage == 1:
                if gradient < tolerance and decrement < tolerance:
                    done = 1
                elif hess == 0:
                    hess = 1  # not certified by M: factor H at the same point and ask again
                    rows_moved = 0
                else:
                    stage = 2
            elif (improvement > 0 and improvement < tolerance) or gradient < tolerance:
                done = 1
            elif ti.static(newton) and decrement < tolerance:
                done = 1
            if done == 0 and stage == 2:
                if ti.static(newton):
                    for d in range(nv):
                        dof_d[o_dof + d * L.NDOF_D + SEARCH] = -dof_d[o_dof + d * L.NDOF_D + MGRAD]
                elif it == 0:
                    for d in range(nv):
                        dof_d[o_dof + d * L.NDOF_D + SEARCH] = -dof_d[o_dof + d * L.NDOF_D + MGRAD]
                else:
                    conjugate_direction(w, nv, dof_d)
                if it >= sizes[L.SIZE_ITERATIONS]:
                    done = 1
                else:
                    step = line_search(w, nefc, nv, sizes, dof_i, qM, dof_d, efc_J, efc_f, gtol_scale,
                                       sizes[L.SIZE_LS_ITERATIONS])
                    alpha = step[0]
                    improvement = scale * step[1]
                    it += 1
                    if alpha == 0:
                        done = 1
                    else:
                        move(w, nefc, nv, alpha, qacc, dof_d, efc_f)
        return it

    @ti.func
    def move(w, nefc, nv, alpha, qacc: ti.template(), dof_d: ti.template(), efc_f: ti.template()):
        """a += alpha search, and what is linear in a with it; keep the old gradients for CG."""
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        for d in range(nv):
            qacc[w, d] += alpha * dof_d[o_dof + d * L.NDOF_D + SEARCH]
            dof_d[o_dof + d * L.NDOF_D + MA] = (dof_d[o_dof + d * L.NDOF_D + MA]
                                                + alpha * dof_d[o_dof + d * L.NDOF_D + MV])
            dof_d[o_dof + d * L.NDOF_D + GRADOLD] = dof_d[o_dof + d * L.NDOF_D + GRAD]
            dof_d[o_dof + d * L.NDOF_D + MGRADOLD] = dof_d[o_dof + d * L.NDOF_D + MGRAD]
        for i in range(nefc):
            efc_f[w, i, E["jar"]] += alpha * efc_f[w, i, E["jv"]]

    @ti.func
    def conjugate_direction(w, nv, dof_d: ti.template()):
        """Polak-Ribiere-plus update of the M^-1-preconditioned search direction."""
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        num = fp(0.0)
        den = fp(0.0)
        for d in range(nv):
            num += dof_d[o_dof + d * L.NDOF_D + GRAD] * (dof_d[o_dof + d * L.NDOF_D + MGRAD]
                                                         - dof_d[o_dof + d * L.NDOF_D + MGRADOLD])
            den += dof_d[o_dof + d * L.NDOF_D + GRADOLD] * dof_d[o_dof + d * L.NDOF_D + MGRADOLD]
        beta = ti.max(fp(0.0), num / ti.max(fp(_MINVAL), den))
        for d in range(nv):
            dof_d[o_dof + d * L.NDOF_D + SEARCH] = (-dof_d[o_dof + d * L.NDOF_D + MGRAD]
                                                    + beta * dof_d[o_dof + d * L.NDOF_D + SEARCH])

    return types.SimpleNamespace(solve=solve)
