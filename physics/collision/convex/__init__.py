"""Convex narrow phase: the pairs of primitives without an analytic routine.

Capsule-cylinder, cylinder-cylinder, cylinder-box and the ellipsoid pairs (with sphere,
capsule, ellipsoid, cylinder and box) collide as MuJoCo's general convex collider does
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

Where no geom of the pair is a sphere or an ellipsoid, MuJoCo 4 adds up to four contacts
by rotating the geoms slightly about the first contact (multi-CCD); :func:`make_convex`
does the same when ``multiccd`` is set: the same solver runs on the perturbed poses,
each new contact far enough from the others kept with the first contact's depth.

The parts, each a factory of ``@ti.func``s that Taichi inlines where they are called:

- ``common``: tolerances, array sizes, the local array types, row access;
- ``support``: the geoms as objects and their support functions;
- ``subdistance``: GJK's signed-volume distance subalgorithm;
- ``gjk``: GJK's distance and overlap test;
- ``polytope``, ``epa_start``, ``epa``: EPA's polytope tests, its first polytope, its expansion;
- ``penetration``: signed distance and witness points of two geoms;
- ``multiccd``: the contacts, with multi-CCD;
- ``plane_mesh``: a mesh on a plane, from its hull vertices (MuJoCo's mjc_PlaneConvex);
- ``faces``: a box or mesh against a mesh with multi-CCD, the faces EPA ends on clipped
  against each other (MuJoCo's multicontact), from the hull's polygons (``polygons``).

Meshes collide as their convex hulls (support.py), through GJK/EPA like the primitives
above: against capsules and cylinders with multi-CCD's rotated poses, against boxes and
meshes with the clipped faces, against planes by their own routine.
"""


import functools
import types

from .common import (
    BIG,
    CCD_ITERATIONS,
    CCD_TOLERANCE,
    MINVAL,
    MULTICCD_ANGLE,
    MULTICCD_TOLERANCE,
    NFACE,
    NVERT,
    NVIS,
    PRISM,
    make_common,
)
from .faces import make_faces
from .multiccd import make_multiccd
from .penetration import make_penetration
from .plane_mesh import make_plane_mesh
from .support import make_support

__all__ = ["BIG", "CCD_ITERATIONS", "CCD_TOLERANCE", "MINVAL", "MULTICCD_ANGLE", "MULTICCD_TOLERANCE", "NFACE",
           "NVERT", "NVIS", "PRISM", "make_convex"]


@functools.lru_cache(maxsize=None)
def make_convex(fp):
    """The convex collider's ``@ti.func``s: ``collide`` (the contacts of a pair),
    ``penetration`` and ``overlap`` (signed distance and witness points of two geoms, or
    of two objects), ``support``, ``make_obj``, ``make_prism`` and ``with_hull`` (objects
    for them), ``normalize``, ``plane_mesh`` and ``faces`` (a box or mesh on a mesh)."""
    sup = make_support(fp)
    pen = make_penetration(fp)
    return types.SimpleNamespace(support=sup.support, penetration=pen.penetration, collide=make_multiccd(fp).collide,
                                 make_obj=sup.make_obj, make_prism=sup.make_prism, with_hull=sup.with_hull,
                                 overlap=pen.overlap, normalize=make_common(fp).normalize,
                                 plane_mesh=make_plane_mesh(fp).plane_mesh, faces=make_faces(fp).collide)
