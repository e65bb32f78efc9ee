"""Constraints of one world: the rows (contacts, joint and tendon limits, friction loss,
equality constraints) with MuJoCo's soft-constraint model (rows), the solvers over them
(primal: Newton and CG; pgs_cone: PGS's elliptic-cone blocks) and the reaction forces
read from the solution (reaction)."""
