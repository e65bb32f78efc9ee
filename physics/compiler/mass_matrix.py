"""The mass matrix as MuJoCo structures and factorizes it, on the host (numpy, float64).

MuJoCo marks "simple" bodies (``body_simple``) whose mass matrix rows it keeps diagonal:
it leaves out the entries that couple a simple body's dofs with each other and with
their ancestors. For the bodies it picks these entries are zero, except where two sliders
of one body share an axis: there MuJoCo's dynamics move each slider as if the other were
not there, and so do ours. Its L^T D L factorization (mj_factorM) has no pivoting and
raises a pivot below 1e-15 to 1e-15, so a singular M (two hinges on one axis) still has
a factorization: the inverse weights built on it are large but finite, and the same
numbers as MuJoCo's.
"""

from __future__ import annotations

import numpy as np

from .. import model as M

_MINVAL = 1e-15  # MuJoCo's mjMINVAL: the smallest pivot of the factorization
_FRAME_EPS = 1e-6  # MuJoCo's kFrameEps: offsets below it count as none
_AXIS_EPS = 1e-14  # MuJoCo's mjEPS: an axis component below it counts as zero


def body_simple(m: M.Model) -> np.ndarray:
    """MuJoCo's body_simple (nbody,): 1 where the body's dofs get a diagonal mass matrix
    (the inertia frame is the body frame, the body is a leaf below the world or below a
    body welded to it, and its joints sit at its origin on coordinate axes with no joint
    after a rotation), 2 where those dofs are all sliders, else 0."""
    out = np.zeros(m.nbody, np.int32)
    for b in range(m.nbody):
        out[b] = _simple_level(m, b)
    parents = m.body_parentid[1:]
    out[parents[parents > 0]] = 0  # a body with children is never simple
    return out


def _simple_level(m: M.Model, b: int) -> int:
    p = m.body_parentid[b]
    sameframe = np.all(np.abs(m.body_ipos[b]) < _FRAME_EPS) and _is_identity(m.body_iquat[b])
    attached = b == 0 or p == 0 or (m.body_parentid[p] == 0 and m.body_dofnum[p] == 0)
    if not (sameframe and attached):
        return 0
    joints = range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]) if b and m.body_jntnum[b] else ()
    rotated = False
    for j in joints:
        t = m.jnt_type[j]
        aligned = np.count_nonzero(np.abs(m.jnt_axis[j]) > _AXIS_EPS) == 1
        if rotated or np.any(np.abs(m.jnt_pos[j]) >= _FRAME_EPS) or (t in (M.JNT_HINGE, M.JNT_SLIDE) and not aligned):
            return 0
        rotated = t in (M.JNT_BALL, M.JNT_HINGE)
    if b and m.body_dofnum[b] and all(m.jnt_type[j] == M.JNT_SLIDE for j in joints):
        return 2
    return 1


def _is_identity(q) -> bool:
    unit = np.array([1.0, 0.0, 0.0, 0.0])
    return bool(np.all(np.abs(q - unit) < _FRAME_EPS) or np.all(np.abs(q + unit) < _FRAME_EPS))


def drop_simple_coupling(mass_matrix: np.ndarray, m: M.Model, simple: np.ndarray) -> np.ndarray:
    """``mass_matrix`` (nv, nv) without the entries MuJoCo leaves out: those between a
    dof of a simple body and its ancestor dofs (a simple body's dofs are last on their
    path, so these are all the off-diagonal entries of its rows and columns)."""
    out = mass_matrix.copy()
    for d in np.flatnonzero(simple[m.dof_bodyid] > 0):
        a = m.dof_parentid[d]
        while a >= 0:
            out[d, a] = out[a, d] = 0.0
            a = m.dof_parentid[a]
    return out


def factor(mass_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's factorization M = L^T D L, eliminating from the last dof to the first:
    (L (nv, nv) unit lower triangular, D (nv,)). Entries outside the tree's sparsity are
    zero and stay zero, so the dense sweep does the sparse one's arithmetic, operation for
    operation (mj_factorI: times 1 / D, not over D)."""
    a = np.tril(mass_matrix).astype(float)
    nv = a.shape[0]
    for k in range(nv - 1, -1, -1):
        a[k, k] = max(a[k, k], _MINVAL)
        row = a[k, :k] * (1.0 / a[k, k])
        a[:k, :k] += np.tril(np.outer(-row, a[k, :k]))
        a[k, :k] = row
    d = np.diag(a).copy()
    np.fill_diagonal(a, 1.0)
    return a, d


def solve(lower: np.ndarray, d: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x = (L^T D L)^-1 y for the columns of ``y`` (nv, n): mj_solveLD's sweeps, L^-T, then
    D^-1 as a product with 1 / D, then L^-1."""
    x = np.array(y, dtype=float).reshape(len(d), -1)
    for k in range(len(d) - 2, -1, -1):
        x[k] -= lower[k + 1 :, k] @ x[k + 1 :]  # the terms mj_solveLD adds column by column, as a row
    x *= (1.0 / d)[:, None]
    for k in range(len(d)):
        x[k] -= lower[k, :k] @ x[:k]
    return x
