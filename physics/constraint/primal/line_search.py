"""The exact line search along SEARCH (MuJoCo's PrimalSearch): the cost along a + alpha
search is piecewise quadratic in alpha, each row's piece a quadratic q0 + q1 alpha +
q2 alpha^2 while its state holds (kept in the row's ``quad`` columns); safeguarded
Newton steps in alpha inside a shrinking bracket find its minimum."""

import functools
import types

from ...access import make_access
from ...runtime.backend import ti
from .columns import _HALF_INF, _INF, _MINVAL, CNSTR_CONTACT_ELLIPTIC
from .cone import make_cone
from .vectors import make_vectors


@functools.lru_cache(maxsize=None)
def make_line_search(fp, elliptic: bool):
    A = make_access(fp)
    vectors = make_vectors(fp)
    dot, mul_M, mul_J = vectors.dot, vectors.mul_M, vectors.mul_J
    cone = make_cone(fp)
    contact_dim, prepare_cone, elliptic_cost_change = cone.contact_dim, cone.prepare_cone, cone.elliptic_cost_change

    @ti.func
    def prepare(w, nefc, nv, dof_d: ti.template(), dof_s: ti.template(), efc_f: ti.template()):
        """Each row's cost along a + alpha search as a quadratic in alpha (q0 + q1 alpha +
        q2 alpha^2 while its state holds), and the cone terms of elliptic contacts. Returns
        the Gauss term's linear and quadratic coefficients."""
        i = 0
        while i < nefc:
            step = 1
            is_cone = 0
            if ti.static(elliptic):
                if A.efc_type(efc_f, w, i) == CNSTR_CONTACT_ELLIPTIC:
                    is_cone = 1
                    step = contact_dim(w, i, efc_f)
                    prepare_cone(w, i, step, efc_f)
            if is_cone == 0:
                scalar_quad(w, i, efc_f)
            i += step
        return ti.Vector([dot(w, nv, dof_s, "dof_search", "dof_ma"), fp(0.5) * dot(w, nv, dof_s, "dof_search", "dof_mv")])

    @ti.func
    def scalar_quad(w, i, efc_f: ti.template()):
        """Row i's cost along the search while its state holds, q0 + q1 alpha + q2 alpha^2."""
        jar = A.efc_jar(efc_f, w, i)
        jv = A.efc_jv(efc_f, w, i)
        d = 1 / A.efc_R(efc_f, w, i)
        A.set_efc_quad_at(efc_f, w, i, 0, fp(0.5) * d * jar * jar)
        A.set_efc_quad_at(efc_f, w, i, 1, d * jv * jar)
        A.set_efc_quad_at(efc_f, w, i, 2, fp(0.5) * d * jv * jv)

    @ti.func
    def huber(x, f, rf, d):
        cost = fp(0.5) * d * x * x
        if x <= -rf:
            cost = f * (-fp(0.5) * rf - x)
        elif x >= rf:
            cost = f * (-fp(0.5) * rf + x)
        return cost

    @ti.func
    def scalar_terms(w, i, alpha, acc, efc_f: ti.template()):
        """``acc`` (the quadratic's coefficients q0, q1, q2, then the cost change and its two
        derivatives summed apart) with row i's terms at alpha, i not part of an elliptic cone."""
        out = acc
        lower = A.efc_lower(efc_f, w, i)
        upper = A.efc_upper(efc_f, w, i)
        if lower < -_HALF_INF:
            out[1] += A.efc_quad_at(efc_f, w, i, 1)
            out[2] += A.efc_quad_at(efc_f, w, i, 2)
        elif upper < _HALF_INF:
            start = A.efc_jar(efc_f, w, i)
            jv = A.efc_jv(efc_f, w, i)
            x = start + alpha * jv
            d = 1 / A.efc_R(efc_f, w, i)
            rf = A.efc_R(efc_f, w, i) * upper
            out[3] += huber(x, upper, rf, d) - huber(start, upper, rf, d)
            if x <= -rf:
                out[4] -= upper * jv
            elif x >= rf:
                out[4] += upper * jv
            else:
                out[4] += d * x * jv
                out[5] += d * jv * jv
        else:
            start = A.efc_jar(efc_f, w, i)
            x = start + alpha * A.efc_jv(efc_f, w, i)
            cost0 = A.efc_quad_at(efc_f, w, i, 0) if start < 0 else fp(0.0)
            if x < 0:
                out[0] += A.efc_quad_at(efc_f, w, i, 0) - cost0
                out[1] += A.efc_quad_at(efc_f, w, i, 1)
                out[2] += A.efc_quad_at(efc_f, w, i, 2)
            else:
                out[3] -= cost0
        return out

    @ti.func
    def evaluated(alpha, acc):
        """(alpha, cost(alpha) - cost(0), d cost/d alpha, d2 cost/d alpha2) from the summed terms."""
        quad = ti.Vector([acc[0], acc[1], acc[2]])
        total = ti.Vector([acc[3], acc[4], acc[5]]) + ti.Vector([alpha * alpha * quad[2] + alpha * quad[1] + quad[0],
                                                                 2 * alpha * quad[2] + quad[1], 2 * quad[2]])
        return ti.Vector([alpha, total[0], total[1], ti.max(total[2], fp(_MINVAL))])

    @ti.func
    def evaluate(w, nefc, gauss, alpha, efc_f: ti.template()):
        """(alpha, cost(alpha) - cost(0), d cost/d alpha, d2 cost/d alpha2)."""
        acc = ti.Vector([fp(0.0), gauss[0], gauss[1], fp(0.0), fp(0.0), fp(0.0)])
        i = 0
        while i < nefc:
            step = 1
            is_cone = 0
            if ti.static(elliptic):
                if A.efc_type(efc_f, w, i) == CNSTR_CONTACT_ELLIPTIC:
                    is_cone = 1
                    step = contact_dim(w, i, efc_f)
                    change = elliptic_cost_change(w, i, alpha, efc_f)
                    for c in ti.static(range(3)):
                        acc[3 + c] += change[c]
            if is_cone == 0:
                acc = scalar_terms(w, i, alpha, acc, efc_f)
            i += step
        return evaluated(alpha, acc)

    @ti.func
    def bracketed_step(p, evals, gtol, st):
        """The search's state ``st`` (alpha, the bracket lo and hi, the best alpha and its cost
        change, 1 where done) after the ``evals``-th evaluation ``p`` (:func:`evaluated`'s, at
        alpha): done at a slope below ``gtol`` or a step that no longer moves alpha; else a
        Newton step in alpha, bisection where it leaves a finite bracket."""
        alpha, low, high, best_alpha, best_cost = p[0], st[1], st[2], st[3], st[4]
        if p[1] < best_cost:
            best_cost = p[1]
            best_alpha = alpha
        done = fp(0.0)
        if ti.abs(p[2]) < gtol and (evals > 1 or p[1] < 0):
            done = fp(1.0)
        else:
            if p[2] < 0:
                low = alpha
            else:
                high = alpha
            step = alpha - p[2] / p[3]
            if step <= low or step >= high:
                step = fp(0.5) * (low + high)
            if low <= -fp(_HALF_INF) or high >= fp(_HALF_INF):
                step = alpha - p[2] / p[3]
            if step == alpha:
                done = fp(1.0)  # numerical accuracy reached
            alpha = step
        return ti.Vector([alpha, low, high, best_alpha, best_cost, done])

    @ti.func
    def line_search(w, nefc, nv, sizes: ti.template(), dof_i: ti.template(), qM: ti.template(),
                    dof_d: ti.template(), dof_s: ti.template(), efc_J: ti.template(), efc_f: ti.template(), gtol_scale, ls_iterations):
        """(alpha, improvement) that minimise the cost along SEARCH: safeguarded Newton steps
        on the convex, piecewise-quadratic cost(alpha), each exact while no row changes
        state, kept inside the bracket of slopes of opposite sign (bisection when a step
        leaves it). Stops when the slope is below the scaled tolerance, as MuJoCo's search;
        a handful of scalars instead of MuJoCo's bracket points keeps compile time small."""
        out = ti.Vector([fp(0.0), fp(0.0)])
        snorm = ti.sqrt(dot(w, nv, dof_s, "dof_search", "dof_search"))
        if snorm >= fp(_MINVAL):
            gtol = gtol_scale * snorm
            mul_M(w, nv, sizes, dof_i, qM, dof_s, "dof_search", "dof_mv")
            mul_J(w, nefc, nv, dof_i, efc_J, dof_s, "dof_search", efc_f, "efc_jv")
            gauss = prepare(w, nefc, nv, dof_d, dof_s, efc_f)
            # alpha, the bracket (the slope < 0 at lo, > 0 at hi), the best alpha and its cost, done
            st = ti.Vector([fp(0.0), -fp(_INF), fp(_INF), fp(0.0), fp(0.0), fp(0.0)])
            evals = 0
            while st[5] == 0 and evals < ls_iterations:
                evals += 1
                st = bracketed_step(evaluate(w, nefc, gauss, st[0], efc_f), evals, gtol, st)
            if st[4] < 0:
                out = ti.Vector([st[3], -st[4]])
        return out

    return types.SimpleNamespace(line_search=line_search, bracketed_step=bracketed_step, scalar_quad=scalar_quad, scalar_terms=scalar_terms, evaluated=evaluated)
