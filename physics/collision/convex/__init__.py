"""Convex narrow phase: the pairs of primitives without an analytic routine, and meshes.

The ellipsoid pairs (with sphere, capsule, ellipsoid, cylinder and box), sphere-mesh and,
with multi-CCD disabled, every pair below collide as MuJoCo's general convex collider does
with its default native solver (mjc_Convex, engine_collision_gjk.c): both geoms are
described by their support functions, grown by half the pair's margin each; GJK decides
whether they overlap and EPA expands a polytope inside the Minkowski difference until
the face nearest the origin is within ``CCD_TOLERANCE`` of its surface. That face gives
the penetration depth, the normal (from geom1 to geom2) and a witness point on each
geom; the contact lies midway between them. A sphere or capsule first collides as its
centre point or segment, whose distance GJK finds to ~1e-10, and is grown by its radius
afterwards; only when that core itself penetrates does EPA run on the full shapes.

Iterations are bounded by ``CCD_ITERATIONS`` (MuJoCo's ``ccd_iterations`` default),
tolerances are MuJoCo's defaults. Everything is written for Taichi: no recursion, local
arrays of fixed size, the polytope's horizon found by each face's visibility from the new
vertex rather than a walk over face adjacency.

With multi-CCD on (MuJoCo 4's default), capsule-cylinder, cylinder-cylinder, cylinder-box
and a capsule, cylinder, box or mesh against a mesh go on from the solver's final face:
where features of the two lie flat on each other they are clipped into up to four
contacts, as MuJoCo 4's multicontact (``faces``).

The parts, each a factory of ``@ti.func``s that Taichi inlines where they are called:

- ``common``: tolerances, array sizes, the local array types, row access;
- ``support``: the geoms as objects and their support functions;
- ``subdistance``: GJK's signed-volume distance subalgorithm;
- ``gjk``: GJK's distance and overlap test;
- ``polytope``, ``epa_start``, ``epa``: EPA's polytope tests, its first polytope, its expansion;
- ``penetration``: signed distance and witness points of two geoms;
- ``contact``: the one contact of a pair;
- ``plane_mesh``: a mesh on a plane, from its hull vertices (MuJoCo's mjc_PlaneConvex);
- ``faces``: the multi-CCD pairs, the features the solver ends on clipped against each
  other (MuJoCo's multicontact), meshes' from the hull's polygons (``polygons``).

Meshes collide as their convex hulls (support.py), through GJK/EPA like the primitives
above, and against planes by their own routine.
"""


import functools
import types

from .common import (
    BIG,
    CCD_ITERATIONS,
    CCD_TOLERANCE,
    MINVAL,
    NFACE,
    NVERT,
    NVIS,
    PRISM,
    make_common,
)
from .faces import make_faces
from .contact import make_contact
from .penetration import make_penetration
from .plane_mesh import make_plane_mesh
from .support import make_support

__all__ = ["BIG", "CCD_ITERATIONS", "CCD_TOLERANCE", "MINVAL", "NFACE", "NVERT", "NVIS", "PRISM", "make_convex"]


@functools.lru_cache(maxsize=None)
def make_convex(fp):
    """The convex collider's ``@ti.func``s: ``collide`` (the contacts of a pair),
    ``penetration`` and ``overlap`` (signed distance and witness points of two geoms, or
    of two objects), ``support``, ``make_obj``, ``make_prism`` and ``with_hull`` (objects
    for them), ``normalize``, ``plane_mesh`` and ``faces`` (the multi-CCD pairs)."""
    sup = make_support(fp)
    pen = make_penetration(fp)
    return types.SimpleNamespace(support=sup.support, penetration=pen.penetration, collide=make_contact(fp).collide,
                                 make_obj=sup.make_obj, make_prism=sup.make_prism, with_hull=sup.with_hull,
                                 overlap=pen.overlap, normalize=make_common(fp).normalize,
                                 plane_mesh=make_plane_mesh(fp).plane_mesh, faces=make_faces(fp).collide)
