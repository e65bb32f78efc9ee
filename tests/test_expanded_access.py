"""Table accessors expanded where they are called (physics/access.py, taichi_adapter.traced_access)
step a World exactly as the ``@ti.func`` accessors do: same loads, stores and index
arithmetic, so float64 states must agree to the bit, not to round-off."""


import numpy as np
import pytest
from taigym.physics.access import make_access
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.runtime.taichi_adapter import expansion, implementation, traced_access

# the expansions build what taichi 1.7's tracer builds; on quadrants (an empty patch list,
# taichi_adapter/quadrants.py) accessors stay @ti.funcs and matrix operations are the fork's own
EXPANDED = expansion.MATRIX_OPS in implementation(ti).PATCHES


def test_accessors_are_expanded_where_taichi_is_the_one_this_knows():
    ensure_runtime("cpu")
    assert (traced_access() is not None) is EXPANDED
    if EXPANDED:
        assert not hasattr(make_access(ti.f64).body_xpos, "_primal")  # a plain function, not Taichi's


def test_an_accessor_called_with_the_wrong_arguments_is_named():
    ensure_runtime("cpu")
    A = make_access(ti.f64)
    table = ti.ndarray(ti.f64, 64)

    @ti.kernel
    def wrong(a: ti.types.ndarray(ti.f64, ndim=1)):
        for i in range(1):
            A.set_body_xpos(a, 0, i)  # the value is missing

    # expanded, the accessor says so itself; as a @ti.func, Taichi's message shows the call
    message = (r"set_body_xpos takes the table and 3 more arguments, got 2" if traced_access() is not None
               else r"A\.set_body_xpos\(a, 0, i\)")
    with pytest.raises(Exception, match=message):
        wrong(table)


@pytest.mark.skipif(not EXPANDED, reason=f"{ti.__name__} uses its own matrix operations: the expansion knows "
                    "taichi 1.7.4's tracer only")
def test_expanded_matrix_operations_compute_what_taichis_do(monkeypatch):
    """Cross and dot products, matrix products, sums and norms in a kernel marked for
    expansion against the same kernel unmarked (Taichi's own functions): float64, bitwise."""
    from taigym.physics.runtime.taichi_adapter import expanded_math_in, installed

    ensure_runtime("cpu")
    assert installed()["expanded matrix operations"]
    v3, m3 = ti.types.vector(3, ti.f64), ti.types.matrix(3, 3, ti.f64)
    arr = ti.types.ndarray(ti.f64, ndim=2)

    @ti.func
    def operations(a: ti.template(), out: ti.template(), i):
        x, y = v3(a[i, 0], a[i, 1], a[i, 2]), v3(a[i, 3], a[i, 4], a[i, 5])
        m = m3([[a[i, 6 + 3 * r + c] for c in ti.static(range(3))] for r in ti.static(range(3))])
        c = x.cross(y)
        p = m @ m.transpose()
        q = m @ (x + y)
        values = [c[0], c[1], c[2], x.dot(y), (x * y).sum(), m.sum(), x.norm(), x.norm_sqr(), p[0, 1], p[2, 2],
                  q[0], q[2]]
        for k in ti.static(range(len(values))):
            out[i, k] = values[k]

    @ti.kernel
    @expanded_math_in
    def expanded(a: arr, out: arr):
        for i in range(a.shape[0]):
            operations(a, out, i)

    @ti.kernel
    def taichis(a: arr, out: arr):
        for i in range(a.shape[0]):
            operations(a, out, i)

    # which of Taichi's matrix functions each kernel traces
    from taichi.lang.ast.ast_transformer import ASTTransformer

    traced, build = [], ASTTransformer.build_FunctionDef
    monkeypatch.setattr(ASTTransformer, "build_FunctionDef", staticmethod(
        lambda ctx, node: traced.append((ctx.func.func.__module__, node.name)) or build(ctx, node)))
    expanded_ones = {("taichi.lang.matrix_ops", name) for name in
                     ("cross", "dot", "matmul", "_matmul_helper", "sum", "_reduce", "norm", "norm_sqr")}
    rng = np.random.default_rng(0)
    a = rng.normal(size=(16, 15))
    got, want = np.zeros((16, 12)), np.zeros((16, 12))
    expanded(a, got)
    assert not expanded_ones & set(traced)
    taichis(a, want)
    assert expanded_ones <= set(traced)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got).all() and np.abs(got).max() > 0


@pytest.mark.parametrize("expanded", [True, False], ids=["expanded", "functions"])
def test_a_vector_written_from_its_own_row_reads_it_before_overwriting_it(expanded):
    """``set_x(row, v)`` where v's entries read other entries of the same row: written entry by
    entry, v must have been read whole first (the function's copy of its argument; the
    expanded writer copies it too), or later entries would read overwritten ones."""
    from taigym.physics.access import Access

    ensure_runtime("cpu")
    traced = traced_access()
    if expanded and traced is None:
        pytest.skip("accessors are expanded with taichi 1.7's tracer only")
    A = Access(ti.f64, traced if expanded else None)
    from taigym.physics import layout as L

    width = L.BODY_D.width  # three rows of body_d
    v3 = ti.types.vector(3, ti.f64)

    @ti.kernel
    def rotate_rows(a: ti.types.ndarray(ti.f64, ndim=1)):
        for b in range(3):
            # a vector of the row's own entries, cycled: entry 1 reads entry 0, written first
            A.set_body_xpos(a, 0, b, v3(A.body_xpos_at(a, 0, b, 2), A.body_xpos_at(a, 0, b, 0),
                                        A.body_xpos_at(a, 0, b, 1)) + A.body_xpos(a, 0, b).sum())

    start = L.BODY_D.columns["xpos"].start
    table = np.arange(3 * width, dtype=np.float64) + 1.0
    before = table.reshape(3, width)[:, start:start + 3].copy()
    rotate_rows(table)
    after = table.reshape(3, width)[:, start:start + 3]
    want = before[:, [2, 0, 1]] + before.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(after, want)
