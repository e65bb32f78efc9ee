"""Collision of one world: the candidate pair table made when a World is built
(broadphase), the driver that runs every pair (driver), the analytic primitive pairs
(narrowphase), the convex collider (GJK/EPA, convex) and height fields (hfield)."""
