"""Smooth dynamics of one world, as ``@ti.func`` factories: kinematics (frames, com, cdof,
velocities), inertia (CRB mass matrix, factorization, solves), bias forces (RNE), passive
forces, actuation, PD drives and the cubic limit penalties."""
