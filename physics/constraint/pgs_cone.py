"""Projected Gauss-Seidel's update of one elliptic contact (MuJoCo's solPGS block).

The dual variables of an elliptic contact are its normal force f0 >= 0 and friction
forces f_j inside the ellipsoid sum_j (f_j / mu_j)^2 <= f0^2 (mu_j: the contact's own
friction coefficients). Gauss-Seidel updates the whole block at once: first the normal
force (a scaling of the block along its own ray, which keeps it in the cone), then the
friction forces with the normal held, which is a quadratic program over the ellipsoid
(a QCQP) solved by Newton's method on its Lagrange multiplier.

Blocks are padded to the largest condim (6), so every loop is unrolled at compile time.
"""

import functools
import types

from ..access import make_access
from ..runtime.lanes import env_index
from ..runtime.backend import ti

_MINVAL = 1e-15
_QCQP_ITERATIONS = 20


@functools.lru_cache(maxsize=None)
def make_pgs_cone(fp):
    A = make_access(fp)
    vec6 = ti.types.vector(6, fp)
    mat6 = ti.types.matrix(6, 6, fp)
    vec5 = ti.types.vector(5, fp)
    mat5 = ti.types.matrix(5, 5, fp)

    @ti.func
    def solve5(a, b):
        """x = a^-1 b for a symmetric positive definite 5 x 5 matrix (Cholesky)."""
        low = mat5(0)
        for j in ti.static(range(5)):
            s = a[j, j]
            for k in ti.static(range(j)):
                s -= low[j, k] * low[j, k]
            low[j, j] = ti.sqrt(ti.max(s, fp(_MINVAL)))
            for i in ti.static(range(j + 1, 5)):
                t = a[i, j]
                for k in ti.static(range(j)):
                    t -= low[i, k] * low[j, k]
                low[i, j] = t / low[j, j]
        y = vec5(0)
        for i in ti.static(range(5)):
            t = b[i]
            for k in ti.static(range(i)):
                t -= low[i, k] * y[k]
            y[i] = t / low[i, i]
        x = vec5(0)
        for i in ti.static(range(4, -1, -1)):
            t = y[i]
            for k in ti.static(range(i + 1, 5)):
                t -= low[k, i] * x[k]
            x[i] = t / low[i, i]
        return x

    @ti.func
    def qcqp(a, b, radius):
        """argmin 1/2 y^T a y + y^T b over |y| <= radius (a padded with the identity):
        the unconstrained minimum if inside, else the point where (a + lam I) y = -b has
        |y| = radius, found by Newton steps on lam."""
        y = solve5(a, -b)
        r2 = radius * radius
        if y.dot(y) > r2:
            lam = fp(0.0)
            for _ in range(_QCQP_ITERATIONS):
                shifted = a + lam * ti.Matrix.identity(fp, 5)
                y = solve5(shifted, -b)
                gap = y.dot(y) - r2
                if ti.abs(gap) > fp(1e-10) * r2:
                    z = solve5(shifted, y)
                    lam = ti.max(fp(0.0), lam + gap / (2 * y.dot(z)))
            y *= radius / ti.max(fp(_MINVAL), y.norm())  # onto the sphere, as MuJoCo does
        return y

    @ti.func
    def friction_in_cone(ac, bc, mu, normal, dim):
        """argmin 1/2 f^T ac f + f^T bc over the friction forces f of a contact of condim
        ``dim`` (its first dim - 1 entries; ac padded with the identity) inside the
        ellipsoid sum_j (f_j / mu_j)^2 <= normal^2: in y_j = f_j / mu_j it is a ball."""
        sc = ti.Matrix.identity(fp, 5)
        sb = vec5(0)
        for j in ti.static(range(5)):
            if j + 1 < dim:
                sb[j] = mu[j] * bc[j]
                for k in ti.static(range(5)):
                    if k + 1 < dim:
                        sc[j, k] = mu[j] * ac[j, k] * mu[k]
        y = qcqp(sc, sb, normal)
        f = vec5(0)
        for j in ti.static(range(5)):
            if j + 1 < dim:
                f[j] = mu[j] * y[j]
        return f

    @ti.func
    def update(w, i, dim, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """One Gauss-Seidel update of the elliptic contact in rows i .. i+dim-1, with
        A = J M^-1 J^T in efc_Y; returns the decrease of the dual cost."""
        # the block of A + R and the dual's gradient at the current forces
        a = mat6(0)
        res = vec6(0)
        old = vec6(0)
        for j in ti.static(range(6)):
            if j < dim:
                old[j] = A.efc_force(efc_f, w, i + j)
                s = A.efc_bias(efc_f, w, i + j) + A.efc_R(efc_f, w, i + j) * old[j]
                for m in range(nefc):
                    s += efc_Y[env_index(w, i + j, m)] * A.efc_force(efc_f, w, m)
                res[j] = s
                a[j, j] = efc_Y[env_index(w, i + j, i + j)] + A.efc_R(efc_f, w, i + j)
                for k in ti.static(range(j + 1, 6)):
                    if k < dim:
                        a[j, k] = efc_Y[env_index(w, i + j, i + k)]
                        a[k, j] = a[j, k]
        force = old
        if force[0] < fp(_MINVAL):
            force = vec6(0)
            force[0] = ti.max(fp(0.0), old[0] - res[0] / a[0, 0])
        else:
            denom = force.dot(a @ force)
            if denom >= fp(_MINVAL):
                x = -force.dot(res) / denom
                if force[0] + x * force[0] < 0:
                    x = fp(-1.0)
                force += x * force
        # friction with the normal held
        mu = vec5(1)
        ac = ti.Matrix.identity(fp, 5)
        bc = vec5(0)
        for j in ti.static(range(5)):
            if j + 1 < dim:
                mu[j] = A.efc_fric(efc_f, w, i + j + 1)
        for j in ti.static(range(5)):
            if j + 1 < dim:
                s = res[j + 1] + a[j + 1, 0] * (force[0] - old[0])
                for k in ti.static(range(5)):
                    if k + 1 < dim:
                        s -= a[j + 1, k + 1] * old[k + 1]
                        ac[j, k] = a[j + 1, k + 1]
                bc[j] = s
        friction = vec5(0)
        if force[0] >= fp(_MINVAL):
            friction = friction_in_cone(ac, bc, mu, force[0], dim)
        for j in ti.static(range(5)):
            force[j + 1] = friction[j] if j + 1 < dim else fp(0.0)
        delta = force - old
        change = delta.dot(res) + fp(0.5) * delta.dot(a @ delta)
        if change > fp(1e-10):
            # the QCQP is solved approximately: a step that raises the cost is undone (MuJoCo's)
            force = old
            change = fp(0.0)
        for j in ti.static(range(6)):
            if j < dim:
                A.set_efc_force(efc_f, w, i + j, force[j])
        return -change

    return types.SimpleNamespace(update=update, friction_in_cone=friction_in_cone)
