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

from .columns import (
    CNSTR_CONTACT_ELLIPTIC,
    FLOAT32_EPS,
    HESS_CHUNK,
    STATE_CONE,
    STATE_LINEARNEG,
    STATE_LINEARPOS,
    STATE_QUADRATIC,
    STATE_SATISFIED,
)
from .solver import make_solver

__all__ = ["make_primal", "CNSTR_CONTACT_ELLIPTIC", "STATE_SATISFIED", "STATE_QUADRATIC", "STATE_LINEARNEG",
           "STATE_LINEARPOS", "STATE_CONE", "FLOAT32_EPS", "HESS_CHUNK"]


@functools.lru_cache(maxsize=None)
def make_primal(fp, newton: bool, elliptic: bool):
    """The solver for one configuration: Newton or CG, with or without elliptic cones,
    compiled in only where used (the fused step kernel's compile time is user-facing)."""
    return types.SimpleNamespace(solve=make_solver(fp, newton, elliptic).solve)
