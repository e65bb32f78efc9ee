"""What the primal solvers share: the rows' states (MuJoCo's mjtConstraintState) and the
numerical limits. Their per-dof vectors (M (qacc - qacc_smooth), the cost's gradient and
its preconditioned form, the search direction, M search, CG's previous gradients and a
work vector) are columns of the dof scratch table ``dof_s``, read through the generated
accessors (physics/access.py: ``A.dof_ma``, ``A.dof_grad``, ...).
"""

CNSTR_CONTACT_ELLIPTIC = 7
STATE_SATISFIED, STATE_QUADRATIC, STATE_LINEARNEG, STATE_LINEARPOS, STATE_CONE = 0, 1, 2, 3, 4
_MINVAL, _HALF_INF, _INF = 1e-15, 1e29, 1e30
FLOAT32_EPS = 2.0**-24  # unit round-off
HESS_CHUNK = 32  # rows of J^T D J summed per pass over a column
