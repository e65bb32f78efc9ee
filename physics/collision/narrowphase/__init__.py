"""Narrow phase: contacts between two posed primitive geoms, as MuJoCo's primitive colliders.

Each routine takes the world pose (centre ``pos``, rotation ``mat`` whose columns are
the geom's axes) and MuJoCo ``size`` of both geoms plus the detection margin, and
appends its contacts to the env's row of the contact table through :func:`emit`: the
signed distance (negative = penetration), the position (midway between the surfaces),
and the frame whose first row is the normal from geom1 to geom2. Geom1 has the lower
geom type, as in MuJoCo's collision table. A contact is made when dist <= margin.

The geometry follows MuJoCo's analytic routines (engine_collision_primitive.c and the
separating-axis box-box of engine_collision_box.c) so that contact sets agree with it to
rounding; plane-ellipsoid uses the ellipsoid's support point, as MuJoCo's plane-convex
routine does.

One module a pair family: :mod:`.contact` (the contact table, writing a contact),
:mod:`.plane` (plane pairs), :mod:`.spheres` (sphere and capsule pairs),
:mod:`.capsule_box`, :mod:`.box_face` and :mod:`.box_box` (box-box).
"""


import functools
import types

from .box_box import BOX_EDGEBIAS, BOX_PAREPS, BOX_SEPEPS, BOX_SGNEPS, make_box_box
from .box_face import BOX_DUPEPS, BOX_MAXVERT
from .capsule_box import make_capsule_box
from .contact import (
    CON_DIM,
    CON_EFC_ADDRESS,
    CON_EXCLUDE,
    CON_GEOM1,
    CON_GEOM2,
    CON_PAIR,
    CONTACT_F,
    FAR,
    MAXVAL,
    MINVAL,
    NCON,
    NCON_F,
    NCON_I,
    NOVERFLOW,
    make_contact,
)
from .plane import make_plane
from .spheres import make_spheres


@functools.cache
def make_narrowphase(fp):
    """Every primitive pair's routine, and the contact helpers, in one namespace."""
    c = make_contact(fp)
    pl = make_plane(fp)
    sp = make_spheres(fp)
    cb = make_capsule_box(fp)
    bb = make_box_box(fp)
    return types.SimpleNamespace(
        emit=c.emit, complete_frame=c.complete_frame, plane_sphere=pl.plane_sphere, plane_capsule=pl.plane_capsule,
        plane_cylinder=pl.plane_cylinder, cylinder_rim=pl.cylinder_rim, plane_box=pl.plane_box,
        plane_ellipsoid=pl.plane_ellipsoid, sphere_sphere=sp.sphere_sphere, sphere_capsule=sp.sphere_capsule,
        sphere_cylinder=sp.sphere_cylinder, capsule_capsule=sp.capsule_capsule, sphere_box=sp.sphere_box,
        capsule_box=cb.capsule_box, box_box=bb.box_box,
    )


__all__ = ["BOX_DUPEPS", "BOX_EDGEBIAS", "BOX_MAXVERT", "BOX_PAREPS", "BOX_SEPEPS", "BOX_SGNEPS",
           "CON_DIM", "CON_EFC_ADDRESS", "CON_EXCLUDE", "CON_GEOM1", "CON_GEOM2", "CON_PAIR", "CONTACT_F", "FAR",
           "MAXVAL", "MINVAL", "NCON", "NCON_F", "NCON_I", "NOVERFLOW", "make_narrowphase"]
