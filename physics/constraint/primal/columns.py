"""What the primal solvers share: the columns they use in the packed tables (the rows'
``efc_f``, the dofs' ``dof_d``, the options' ``opt_f``; see physics/layout.py), the rows'
states (MuJoCo's mjtConstraintState) and the numerical limits.

The per-dof vectors live in ``dof_d``: MA = M (qacc - qacc_smooth), GRAD the cost's
gradient, MGRAD the preconditioned gradient (H^-1 or M^-1 grad), SEARCH the search
direction, MV = M search, GRADOLD and MGRADOLD the previous iteration's for CG, and
SCRATCH a work vector.
"""

from ... import layout as L

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
