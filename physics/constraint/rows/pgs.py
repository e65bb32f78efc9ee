"""Projected Gauss-Seidel on the dual (MuJoCo's solPGS): the constraint forces f minimise
1/2 f^T (A + R) f + f^T (J qacc_smooth - aref) under each row's bounds (unilateral rows
f >= 0; elliptic contacts inside their cone, physics/constraint/pgs_cone.py).

A = J M^-1 J^T (nefc x nefc, in efc_Y) is formed once per forward pass (nefc solves with
M and nefc^2/2 dot products) as MuJoCo does: a row's update then reads one row of A,
where keeping v = M^-1 J^T f up to date instead would cost 2 nv per row, and a solve
takes tens of sweeps. The warm start maps the previous step's acceleration back to
forces and is dropped for zero forces when its dual cost is positive, as MuJoCo does.

The sweeps are MuJoCo 4's: each visits the blocks in a fresh Fisher-Yates shuffle of the
last order, drawn from PCG32 seeded alike for every solve, and starts from a Nesterov
extrapolation of the forces (projected back into their bounds), restarted when a sweep's
correction opposes it (O'Donoghue and Candes). On Gymnasium's Humanoid that makes 25% fewer
sweeps than plain Gauss-Seidel in row order, and MuJoCo's own count on the same states.
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...model import DSBL_WARMSTART
from ...runtime.backend import ti
from ...smooth.unrolled_tree import dofs_in_registers
from ...runtime.taichi_adapter import vector_loops
from ...access import make_access
from ...runtime.ti_math import make_math
from ...smooth.inertia import make_inertia
from ..pgs_cone import make_pgs_cone
from ..primal.columns import _MINVAL
from ..primal.vectors import make_vectors
from .table import CNSTR_CONTACT_ELLIPTIC, make_row_table


@functools.lru_cache(maxsize=None)
def make_pgs(fp, cone: str = "pyramidal"):
    """PGS for one friction cone ("pyramidal", "elliptic"): elliptic contacts are updated
    as blocks only when compiled for them."""
    m = make_math(fp)
    A = make_access(fp)
    inertia = make_inertia(fp)
    pgs_cone = make_pgs_cone(fp)
    row_dot = make_row_table(fp).row_dot
    vectors = make_vectors(fp)
    dofs_loaded, row_times = vectors.dofs_loaded, vectors.row_times

    @ti.func
    @vector_loops
    def dual_matrix(w, nefc, sizes: ti.template(), dof_i: ti.template(), qLD: ti.template(),
                    dof_d: ti.template(), dof_s: ti.template(), efc_J: ti.template(), efc_Y: ti.template(), efc_f: ti.template()):
        """A = J M^-1 J^T into efc_Y (nefc x nefc, both triangles), and AR_ii = A_ii + R_i.
        One solve per row gives column j (M^-1 J_j^T, held in the scratch column constraint_vel); a sweep of Gauss-Seidel
        then costs nefc per row instead of 2 nv to keep M^-1 J^T f up to date."""
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        nv = sizes[L.SIZE_NV]
        for j in range(nefc):
            for d in range(nv):
                A.set_dof_constraint_vel(dof_s, o_s, d, efc_J[env_index(w, j, d)])
            inertia.solve(w, sizes, dof_i, qLD, dof_s, "dof_constraint_vel")
            if ti.static(dofs_in_registers(dof_i)):
                x = dofs_loaded(w, dof_i, dof_s, "dof_constraint_vel")
                for i in range(j, nefc):
                    set_dual_entry(w, i, j, row_times(w, i, efc_J, x, fp(0.0)), efc_Y)
            else:
                for i in range(j, nefc):
                    set_dual_entry(w, i, j, row_dot(w, i, efc_J, nv, dof_s, "dof_constraint_vel"), efc_Y)
            A.set_efc_AR(efc_f, w, j, efc_Y[env_index(w, j, j)] + A.efc_R(efc_f, w, j))

    @ti.func
    def set_dual_entry(w, i, j, a, efc_Y: ti.template()):
        efc_Y[env_index(w, i, j)] = a
        efc_Y[env_index(w, j, i)] = a

    @ti.func
    def warm_start(w, nefc, nv, sizes: ti.template(), dof_d: ti.template(), efc_J: ti.template(),
                   efc_f: ti.template()):
        """Initial forces: the previous acceleration mapped through each row's force law
        (f = -D (J qacc - aref), projected), as MuJoCo starts its dual solvers."""
        for i in range(nefc):
            f = fp(0.0)
            if (sizes[L.SIZE_DISABLE] & DSBL_WARMSTART) == 0:
                jar = row_dot(w, i, efc_J, nv, dof_d, "dof_qacc_warmstart") - A.efc_aref(efc_f, w, i)
                f = -jar / A.efc_R(efc_f, w, i)
                f = ti.min(ti.max(f, A.efc_lower(efc_f, w, i)), A.efc_upper(efc_f, w, i))
            A.set_efc_force(efc_f, w, i, f)

    @ti.func
    @vector_loops
    def pgs_row(w, i, nefc, efc_Y: ti.template(), efc_f: ti.template()):
        """Gauss-Seidel update of one scalar row within its bounds; returns the dual's decrease
        (MuJoCo's arithmetic: the step by the inverse diagonal, and a step that raises the
        cost beyond round-off undone)."""
        # gradient of the dual: J_i qacc_smooth - aref_i + (A f)_i + R_i f_i
        grad = A.efc_bias(efc_f, w, i) + A.efc_R(efc_f, w, i) * A.efc_force(efc_f, w, i)
        for j in range(nefc):
            grad += efc_Y[env_index(w, i, j)] * A.efc_force(efc_f, w, j)
        old = A.efc_force(efc_f, w, i)
        inverse = 1 / A.efc_AR(efc_f, w, i)
        new = ti.min(ti.max(old - grad * inverse, A.efc_lower(efc_f, w, i)), A.efc_upper(efc_f, w, i))
        delta = new - old
        change = fp(0.5) * delta * delta * (1 / inverse) + delta * grad
        if change > fp(1e-10):
            change = fp(0.0)
        elif delta != 0:
            A.set_efc_force(efc_f, w, i, new)
        return -change

    @ti.func
    def block_size(w, i, efc_f: ti.template()):
        """The rows updated together from row i: an elliptic contact's, else one."""
        size = 1
        if ti.static(cone == "elliptic"):
            if A.efc_type(efc_f, w, i) == CNSTR_CONTACT_ELLIPTIC:
                size = ti.cast(A.efc_cone_at(efc_f, w, i, 5), ti.i32)
        return size

    @ti.func
    def project(w, nefc, efc_f: ti.template()):
        """Forces back into their bounds after a momentum step, where elliptic contacts are
        compiled in: a scalar row's interval, an elliptic contact's cone (a negative normal
        force zeroes the block; friction outside the ellipsoid is scaled onto it)."""
        i = 0
        while i < nefc:
            size = block_size(w, i, efc_f)
            if size == 1:
                A.set_efc_force(efc_f, w, i, ti.min(ti.max(A.efc_force(efc_f, w, i), A.efc_lower(efc_f, w, i)),
                                                    A.efc_upper(efc_f, w, i)))
            else:
                normal = A.efc_force(efc_f, w, i)
                if normal < 0:
                    for j in range(size):
                        A.set_efc_force(efc_f, w, i + j, 0)
                else:
                    s = fp(0.0)
                    for j in range(1, size):
                        t = A.efc_force(efc_f, w, i + j) / A.efc_fric(efc_f, w, i + j)
                        s += t * t
                    if s > normal * normal:
                        scale = ti.sqrt(normal * normal / ti.max(fp(_MINVAL), s))
                        for j in range(1, size):
                            A.set_efc_force(efc_f, w, i + j, A.efc_force(efc_f, w, i + j) * scale)
            i += size

    @ti.func
    def momentum_step(w, nefc, k, it, efc_f: ti.template()):
        """Nesterov's extrapolation before a sweep, beta = (k - 1) / (k + 2) for the k-th
        sweep since the last restart; pgs_prev keeps the force it started from and
        pgs_momentum the point the sweep starts at. Scalar rows are projected in the same
        pass; elliptic contacts after it."""
        beta = fp(0.0)
        if it > 0:
            beta = fp(k - 1) / fp(k + 2)
        if beta > 0:
            for i in range(nefc):
                f = A.efc_force(efc_f, w, i)
                x = f + beta * (f - A.efc_pgs_prev(efc_f, w, i))
                if ti.static(cone != "elliptic"):
                    x = ti.min(ti.max(x, A.efc_lower(efc_f, w, i)), A.efc_upper(efc_f, w, i))
                A.set_efc_force(efc_f, w, i, x)
                A.set_efc_pgs_prev(efc_f, w, i, f)
                A.set_efc_pgs_momentum(efc_f, w, i, x)
            if ti.static(cone == "elliptic"):
                project(w, nefc, efc_f)
                for i in range(nefc):
                    A.set_efc_pgs_momentum(efc_f, w, i, A.efc_force(efc_f, w, i))
        else:
            for i in range(nefc):
                f = A.efc_force(efc_f, w, i)
                A.set_efc_pgs_prev(efc_f, w, i, f)
                A.set_efc_pgs_momentum(efc_f, w, i, f)

    @ti.func
    def restarts(w, nefc, efc_f: ti.template()):
        """Whether the sweep's correction opposes the extrapolation before it (O'Donoghue and
        Candes' gradient restart of the momentum)."""
        s = fp(0.0)
        for i in range(nefc):
            start = A.efc_pgs_momentum(efc_f, w, i)
            s += (A.efc_force(efc_f, w, i) - start) * (start - A.efc_pgs_prev(efc_f, w, i))
        return s < 0

    @ti.func
    def pcg32(state):
        """The next state and 32-bit draw of PCG32 (increment 1), MuJoCo's generator."""
        draw_from = ((state >> ti.u64(18)) ^ state) >> ti.u64(27)
        x = ti.cast(draw_from & ti.u64(0xFFFFFFFF), ti.u32)
        rot = ti.cast(state >> ti.u64(59), ti.u32)
        return state * ti.u64(6364136223846793005) + ti.u64(1), (x >> rot) | (x << ((ti.u32(32) - rot) & ti.u32(31)))

    @ti.func
    def shuffle(w, nblocks, state, efc_f: ti.template()):
        """Fisher-Yates on the blocks' visiting order; returns the generator's state."""
        b = nblocks - 1
        while b > 0:
            draw = ti.u32(0)
            state, draw = pcg32(state)
            j = ti.cast(draw % ti.cast(b + 1, ti.u32), ti.i32)
            first = A.efc_pgs_order(efc_f, w, b)
            A.set_efc_pgs_order(efc_f, w, b, A.efc_pgs_order(efc_f, w, j))
            A.set_efc_pgs_order(efc_f, w, j, first)
            b -= 1
        return state

    @ti.func
    @vector_loops
    def pgs(w, nefc, nv, scale, sizes: ti.template(), opt_f: ti.template(), dof_d: ti.template(),
            efc_J: ti.template(), efc_Y: ti.template(), efc_f: ti.template()):
        """Projected Gauss-Seidel on the dual, with A = J M^-1 J^T in efc_Y, as MuJoCo 4 runs
        it: each sweep visits the blocks in a fresh shuffle of the last order (PCG32 seeded
        alike for every solve) from a Nesterov extrapolation of the forces, the momentum
        restarted when a sweep's correction opposes it; ``scale``: the stopping test's unit
        (rows.solver_scale). Returns the sweeps it made."""
        mo = m.param_set(w, opt_f)
        tolerance = A.opt_tolerance(opt_f, mo, 0)
        for i in range(nefc):
            A.set_efc_bias(efc_f, w, i, row_dot(w, i, efc_J, nv, dof_d, "dof_qacc_smooth") - A.efc_aref(efc_f, w, i))
        # the warm start is kept only if its dual cost is below that of zero forces (MuJoCo's)
        cost = fp(0.0)
        for i in range(nefc):
            f = A.efc_force(efc_f, w, i)
            af = A.efc_R(efc_f, w, i) * f
            for j in range(nefc):
                af += efc_Y[env_index(w, i, j)] * A.efc_force(efc_f, w, j)
            cost += f * (A.efc_bias(efc_f, w, i) + fp(0.5) * af)
        if cost > 0:
            for i in range(nefc):
                A.set_efc_force(efc_f, w, i, 0)
        nblocks = 0
        i = 0
        while i < nefc:
            A.set_efc_pgs_order(efc_f, w, nblocks, i)
            nblocks += 1
            i += block_size(w, i, efc_f)
        state = ti.u64(0)
        state, _ = pcg32(state)  # MuJoCo draws once after seeding
        # MuJoCo's stopping rule: the sweep's decrease of the dual cost, times scale, falls
        # below the tolerance
        converged = 0
        it = 0
        k = 0
        while it < sizes[L.SIZE_ITERATIONS] and converged == 0:
            momentum_step(w, nefc, k, it, efc_f)
            state = shuffle(w, nblocks, state, efc_f)
            improvement = fp(0.0)
            for b in range(nblocks):
                i = ti.cast(A.efc_pgs_order(efc_f, w, b), ti.i32)
                if ti.static(cone == "elliptic"):
                    size = block_size(w, i, efc_f)
                    if size > 1:
                        improvement += pgs_cone.update(w, i, size, nefc, efc_Y, efc_f)
                    else:
                        improvement += pgs_row(w, i, nefc, efc_Y, efc_f)
                else:
                    improvement += pgs_row(w, i, nefc, efc_Y, efc_f)
            if it > 0 and restarts(w, nefc, efc_f):
                k = 0
            else:
                k += 1
            it += 1
            if improvement * scale < tolerance:
                converged = 1
        return it

    return types.SimpleNamespace(dual_matrix=dual_matrix, warm_start=warm_start, pgs=pgs)
