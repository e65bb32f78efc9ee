"""Newton's Hessian factor kept up to date by rank-one updates (physics/constraint/primal/
hessian.py, ``rank_one`` and ``refresh``), against refactoring H from scratch with numpy.

Between Newton iterations only the rows that enter or leave the quadratic state change
H = M + J^T D J; the solver brings the Cholesky factor along in O(nv^2) per such row
instead of rebuilding and refactoring H, as MuJoCo's HessianIncremental does."""

import numpy as np
import pytest
from taigym.physics import layout as L
from taigym.physics.constraint.primal.columns import STATE_QUADRATIC, STATE_SATISFIED
from taigym.physics.constraint.primal.hessian import make_hessian
from taigym.physics.runtime.backend import ensure_runtime, ti

NV = 9
TOL = 1e-12  # float64: a factor agrees with numpy's to round-off of its entries (~1)


def _spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _kernels(device):
    ensure_runtime(device)
    fp = ti.f64
    h = make_hessian(fp, False)
    f1, f3, i1 = (ti.types.ndarray(dtype=fp, ndim=1), ti.types.ndarray(dtype=fp, ndim=3),
                  ti.types.ndarray(dtype=ti.i32, ndim=1))

    @ti.kernel
    def rank_one(efc_Y: f3, dof_s: f1, nv: ti.i32, sign: fp, out: i1):
        for w in range(1):
            out[w] = h.rank_one(w, nv, efc_Y, dof_s, 0, sign)

    @ti.kernel
    def refresh(efc_J: f3, efc_f: f3, efc_Y: f3, dof_s: f1, nefc: ti.i32, nv: ti.i32, out: i1):
        for w in range(1):
            out[w] = h.refresh(w, nefc, nv, efc_J, efc_f, efc_Y, dof_s)

    return rank_one, refresh


def _factor_table(lower):
    return np.ascontiguousarray(np.tril(lower)[None])


def _scratch(x):
    dof_s = np.zeros(len(x) * L.NDOF_S)
    dof_s[L.DOF_S.start("scratch")::L.NDOF_S] = x
    return dof_s


def _reciprocals(dof_s):
    """The hinv column: what the factor's solves multiply by in place of its diagonal."""
    return dof_s[L.DOF_S.start("hinv")::L.NDOF_S]


def test_rank_one_update_and_downdate_give_the_factor_numpy_computes(device):
    rank_one, _ = _kernels(device)
    rng = np.random.default_rng(4)
    h = _spd(rng, NV)
    x = rng.normal(size=NV)
    x[:3] = 0.0  # a row of a chain's deeper dofs: the leading columns stay as they are
    y = _factor_table(np.linalg.cholesky(h))
    ok = np.zeros(1, dtype=np.int32)
    dof_s = _scratch(x)
    rank_one(y, dof_s, NV, 1.0, ok)
    assert ok[0] == 1
    np.testing.assert_allclose(np.tril(y[0]), np.linalg.cholesky(h + np.outer(x, x)), rtol=0, atol=TOL)
    # the columns a row leaves alone keep their reciprocal (not written: zero here)
    np.testing.assert_allclose(_reciprocals(dof_s)[3:], 1 / np.diag(y[0])[3:], rtol=1e-15)
    assert np.all(_reciprocals(dof_s)[:3] == 0)
    rank_one(y, _scratch(x), NV, -1.0, ok)
    assert ok[0] == 1
    np.testing.assert_allclose(np.tril(y[0]), np.linalg.cholesky(h), rtol=0, atol=TOL)


def test_a_downdate_that_loses_rank_is_reported(device):
    rank_one, _ = _kernels(device)
    y = _factor_table(np.eye(NV))
    x = np.zeros(NV)
    x[4] = 1.0  # I - e4 e4^T is singular
    ok = np.ones(1, dtype=np.int32)
    rank_one(y, _scratch(x), NV, -1.0, ok)
    assert ok[0] == 0


@pytest.mark.parametrize("held_rows, now_rows", [((0, 1), (1, 2)), ((), (0, 2, 3)), ((0, 1, 2, 3), (3,))])
def test_refresh_follows_the_rows_into_and_out_of_the_quadratic_state(device, held_rows, now_rows):
    _, refresh = _kernels(device)
    rng = np.random.default_rng(len(held_rows) + 10 * len(now_rows))
    nefc = 4
    m = _spd(rng, NV)
    jac = rng.normal(size=(nefc, NV))
    jac[1, :5] = 0.0  # a limit-like row on one chain
    r = rng.uniform(0.5, 2.0, nefc)

    def hessian(rows):
        return m + sum((np.outer(jac[i], jac[i]) / r[i] for i in rows), np.zeros((NV, NV)))

    efc_f = np.zeros((1, nefc, L.NEFC_F))
    efc_f[0, :, L.EFC_F.start("R")] = r
    efc_f[0, :, L.EFC_F.start("state")] = [STATE_QUADRATIC if i in now_rows else STATE_SATISFIED for i in range(nefc)]
    efc_f[0, :, L.EFC_F.start("hess")] = [1 / r[i] if i in held_rows else 0.0 for i in range(nefc)]
    y = _factor_table(np.linalg.cholesky(hessian(held_rows)))
    ok = np.zeros(1, dtype=np.int32)
    dof_s = np.zeros(NV * L.NDOF_S)
    _reciprocals(dof_s)[:] = 1 / np.diag(y[0])
    refresh(np.ascontiguousarray(jac[None]), efc_f, y, dof_s, nefc, NV, ok)
    assert ok[0] == 1
    np.testing.assert_allclose(np.tril(y[0]), np.linalg.cholesky(hessian(now_rows)), rtol=0, atol=TOL)
    np.testing.assert_allclose(_reciprocals(dof_s), 1 / np.diag(y[0]), rtol=1e-15)
    np.testing.assert_array_equal(efc_f[0, :, L.EFC_F.start("hess")],
                                  [1 / r[i] if i in now_rows else 0.0 for i in range(nefc)])
