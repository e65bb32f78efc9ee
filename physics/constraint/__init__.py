"""Constraints of one world: the rows (contacts, joint and tendon limits, friction loss,
equality constraints) with MuJoCo's soft-constraint model, and PGS on the dual (rows/),
the primal solvers Newton and CG (primal/), PGS's elliptic-cone blocks (pgs_cone) and the
reaction forces read from the solution (reaction)."""
