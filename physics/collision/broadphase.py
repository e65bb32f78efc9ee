"""Broad phase, host side: which geom pairs may ever touch, and their contact parameters.

The candidate list is built once per Model with MuJoCo's static rules (mj_broadphase,
filterBodyPair, filterCollisionPair, mj_contactParam); the kernel then only runs a
bounding-sphere test per candidate each step. Everything a contact carries that depends
on the pair alone (mixed friction, condim, solref, solimp, margin, gap) is mixed here,
once, instead of per contact in the kernel.

Rules, as MuJoCo applies them to a body pair (b1, b2) and then to each geom pair:
- bodies are compared through their weld roots (``body_weldid``): geoms of bodies welded
  together never collide;
- two bodies whose weld roots have no dofs (static, welded to the world, or mocap bodies,
  which root weld groups of their own) never collide;
- a body and its parent (again through weld roots) do not collide unless the parent is
  the world or the ``filterparent`` disable flag is set;
- excluded body pairs (MJCF ``<exclude>``) are skipped;
- geoms pass when ``(contype1 & conaffinity2) or (contype2 & conaffinity1)``;
- explicit pairs (MJCF ``<pair>``) bypass all of the above and replace the automatic pair
  of the same two geoms, with their own condim/friction/solref/solimp/margin/gap.
Geom order within a pair: lower geom type first, as MuJoCo's collision table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..colliders import (
    COLLIDE_BOX_BOX,
    COLLIDE_CAPSULE_BOX,
    COLLIDE_CAPSULE_CAPSULE,
    COLLIDE_CONVEX,
    COLLIDE_FACES,
    COLLIDE_HFIELD_BOX,
    COLLIDE_HFIELD_CAPSULE,
    COLLIDE_HFIELD_CONVEX,
    COLLIDE_HFIELD_MESH,
    COLLIDE_HFIELD_SPHERE,
    COLLIDE_PLANE_BOX,
    COLLIDE_PLANE_CAPSULE,
    COLLIDE_PLANE_CYLINDER,
    COLLIDE_PLANE_ELLIPSOID,
    COLLIDE_PLANE_MESH,
    COLLIDE_PLANE_SPHERE,
    COLLIDE_SPHERE_BOX,
    COLLIDE_SPHERE_CAPSULE,
    COLLIDE_SPHERE_CYLINDER,
    COLLIDE_SPHERE_SPHERE,
)
from ..model import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD, GEOM_MESH, GEOM_PLANE
from ..model import GEOM_SPHERE, Model

DSBL_FILTERPARENT = 1024  # mjDSBL_FILTERPARENT
MINVAL = 1e-15  # mjMINVAL

# Narrow-phase routine (physics/colliders.py) of each (lower type, higher type) pair, and the
# most contacts it can produce (MuJoCo's mj_maxContact for the primitive colliders).
COLLIDERS = {
    (GEOM_PLANE, GEOM_SPHERE): (COLLIDE_PLANE_SPHERE, 1),
    (GEOM_PLANE, GEOM_CAPSULE): (COLLIDE_PLANE_CAPSULE, 2),
    (GEOM_PLANE, GEOM_BOX): (COLLIDE_PLANE_BOX, 4),
    (GEOM_PLANE, GEOM_CYLINDER): (COLLIDE_PLANE_CYLINDER, 4),
    (GEOM_PLANE, GEOM_ELLIPSOID): (COLLIDE_PLANE_ELLIPSOID, 1),
    (GEOM_SPHERE, GEOM_SPHERE): (COLLIDE_SPHERE_SPHERE, 1),
    (GEOM_SPHERE, GEOM_CAPSULE): (COLLIDE_SPHERE_CAPSULE, 1),
    (GEOM_SPHERE, GEOM_CYLINDER): (COLLIDE_SPHERE_CYLINDER, 1),
    (GEOM_SPHERE, GEOM_BOX): (COLLIDE_SPHERE_BOX, 1),
    (GEOM_CAPSULE, GEOM_CAPSULE): (COLLIDE_CAPSULE_CAPSULE, 2),
    (GEOM_CAPSULE, GEOM_BOX): (COLLIDE_CAPSULE_BOX, 4),
    (GEOM_BOX, GEOM_BOX): (COLLIDE_BOX_BOX, 8),
    # height fields: several faces, edges or box corners at once
    (GEOM_HFIELD, GEOM_SPHERE): (COLLIDE_HFIELD_SPHERE, 4),
    (GEOM_HFIELD, GEOM_CAPSULE): (COLLIDE_HFIELD_CAPSULE, 6),
    (GEOM_HFIELD, GEOM_BOX): (COLLIDE_HFIELD_BOX, 8),
    (GEOM_HFIELD, GEOM_ELLIPSOID): (COLLIDE_HFIELD_CONVEX, 4),
    (GEOM_HFIELD, GEOM_CYLINDER): (COLLIDE_HFIELD_CONVEX, 16),
    (GEOM_HFIELD, GEOM_MESH): (COLLIDE_HFIELD_MESH, 16),
    # MuJoCo's general convex collider, one contact: GJK and EPA on the support functions
    (GEOM_SPHERE, GEOM_ELLIPSOID): (COLLIDE_CONVEX, 1),
    (GEOM_CAPSULE, GEOM_ELLIPSOID): (COLLIDE_CONVEX, 1),
    (GEOM_ELLIPSOID, GEOM_ELLIPSOID): (COLLIDE_CONVEX, 1),
    (GEOM_ELLIPSOID, GEOM_CYLINDER): (COLLIDE_CONVEX, 1),
    (GEOM_ELLIPSOID, GEOM_BOX): (COLLIDE_CONVEX, 1),
    (GEOM_SPHERE, GEOM_MESH): (COLLIDE_CONVEX, 1),
    (GEOM_ELLIPSOID, GEOM_MESH): (COLLIDE_CONVEX, 1),
    # and with multi-CCD (MuJoCo 4's default) up to four, where features with faces or
    # edges lie flat on each other: clipped as MuJoCo 4 clips them (meshes as their hulls)
    (GEOM_CAPSULE, GEOM_CYLINDER): (COLLIDE_FACES, 4),
    (GEOM_CAPSULE, GEOM_MESH): (COLLIDE_FACES, 4),
    (GEOM_CYLINDER, GEOM_CYLINDER): (COLLIDE_FACES, 4),
    (GEOM_CYLINDER, GEOM_BOX): (COLLIDE_FACES, 4),
    (GEOM_CYLINDER, GEOM_MESH): (COLLIDE_FACES, 4),
    (GEOM_BOX, GEOM_MESH): (COLLIDE_FACES, 4),
    (GEOM_MESH, GEOM_MESH): (COLLIDE_FACES, 4),
    # a mesh on a plane by its hull's vertices
    (GEOM_PLANE, GEOM_MESH): (COLLIDE_PLANE_MESH, 4),
}
DSBL_MULTICCD = 524288  # mjDSBL_MULTICCD: the convex collider makes one contact a pair
# MuJoCo collides no plane or hfield with another plane or hfield: static terrain
_NEVER = {(GEOM_PLANE, GEOM_PLANE), (GEOM_PLANE, GEOM_HFIELD), (GEOM_HFIELD, GEOM_HFIELD)}


@dataclass(frozen=True)
class ExplicitPair:
    """A geom pair that always goes to the narrow phase with its own parameters (MJCF ``<pair>``)."""

    geom1: int
    geom2: int
    condim: int = 3
    friction: tuple = (1.0, 1.0, 0.005, 0.0001, 0.0001)  # 5 values, as mjModel.pair_friction
    solref: tuple = (0.02, 1.0)
    solimp: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    margin: float = 0.0
    gap: float = 0.0


@dataclass
class PairTable:
    """Candidate pairs, one row each: geom ids, narrow-phase routine, contact parameters."""

    geom1: np.ndarray  # (npair,) int
    geom2: np.ndarray
    collider: np.ndarray  # COLLIDE_* code
    maxcon: np.ndarray  # most contacts the routine can produce
    explicit: np.ndarray  # index into the explicit pairs, -1 for automatic pairs
    condim: np.ndarray
    friction: np.ndarray  # (npair, 5)
    solref: np.ndarray  # (npair, 2)
    solimp: np.ndarray  # (npair, 5)
    margin: np.ndarray  # (npair,)
    gap: np.ndarray  # (npair,)

    @property
    def npair(self) -> int:
        return len(self.geom1)

    @property
    def convex(self) -> bool:
        """Whether a pair needs the convex collider (compiled into a kernel only then)."""
        return bool(np.isin(self.collider, (COLLIDE_CONVEX, COLLIDE_HFIELD_CONVEX, COLLIDE_PLANE_MESH,
                                            COLLIDE_HFIELD_MESH, COLLIDE_FACES)).any())


def geom_rbound(m: Model) -> np.ndarray:
    """Radius of each geom's bounding sphere about its centre; 0 for planes (unbounded)."""
    r = np.zeros(m.ngeom)
    for g in range(m.ngeom):
        s = m.geom_size[g]
        t = m.geom_type[g]
        if t == GEOM_SPHERE:
            r[g] = s[0]
        elif t == GEOM_CAPSULE:
            r[g] = s[0] + s[1]
        elif t == GEOM_CYLINDER:
            r[g] = np.hypot(s[0], s[1])
        elif t == GEOM_ELLIPSOID:
            r[g] = s[:3].max()
        elif t in (GEOM_BOX, GEOM_MESH):  # a mesh's size: its box's half extents about its frame
            r[g] = np.linalg.norm(s[:3])
        elif t == GEOM_HFIELD:
            hs = m.hfield_size[m.geom_dataid[g]]
            r[g] = np.sqrt(hs[0] ** 2 + hs[1] ** 2 + max(hs[2], hs[3]) ** 2)
    return r


def body_pair_filtered(m: Model, b1: int, b2: int) -> bool:
    """True when MuJoCo never lets bodies b1 and b2 collide (filterBodyPair without sleep)."""
    weld1, weld2 = m.body_weldid[b1], m.body_weldid[b2]
    if weld1 == weld2:
        return True
    if m.body_dofnum[weld1] == 0 and m.body_dofnum[weld2] == 0:
        return True
    parent1 = m.body_weldid[m.body_parentid[weld1]]
    parent2 = m.body_weldid[m.body_parentid[weld2]]
    filterparent = not (m.opt.disableflags & DSBL_FILTERPARENT)
    return bool(filterparent and weld1 != 0 and weld2 != 0 and (weld1 == parent2 or weld2 == parent1))


def bitmask_pass(m: Model, g1: int, g2: int) -> bool:
    return bool((m.geom_contype[g1] & m.geom_conaffinity[g2]) or (m.geom_contype[g2] & m.geom_conaffinity[g1]))


def contact_params(m: Model, g1: int, g2: int):
    """condim, friction (5), solref, solimp of an automatic pair, as mj_contactParam: the
    higher-priority geom's outright; at equal priority the larger condim and frictions, and
    solref and solimp weighed by the geoms' solmix."""
    priority, solmix = m.geom_priority, m.geom_solmix
    if priority[g1] != priority[g2]:
        g = g1 if priority[g1] > priority[g2] else g2
        condim, solref, solimp, fri = m.geom_condim[g], m.geom_solref[g], m.geom_solimp[g], m.geom_friction[g]
    else:
        condim = max(m.geom_condim[g1], m.geom_condim[g2])
        s1, s2 = solmix[g1], solmix[g2]
        if s1 >= MINVAL and s2 >= MINVAL:
            mix = s1 / (s1 + s2)
        elif s1 < MINVAL and s2 < MINVAL:
            mix = 0.5
        else:
            mix = 0.0 if s1 < MINVAL else 1.0
        r1, r2 = m.geom_solref[g1], m.geom_solref[g2]
        # standard (positive) references mix; direct (negative) references take the minimum
        solref = mix * r1 + (1 - mix) * r2 if (r1[0] > 0 and r2[0] > 0) else np.minimum(r1, r2)
        solimp = mix * m.geom_solimp[g1] + (1 - mix) * m.geom_solimp[g2]
        fri = np.maximum(m.geom_friction[g1], m.geom_friction[g2])
    friction = np.array([fri[0], fri[0], fri[1], fri[2], fri[2]])
    return int(condim), friction, np.asarray(solref, float), np.asarray(solimp, float)


def _ordered(m: Model, g1: int, g2: int):
    # MuJoCo's collision table is upper triangular in geom type: the lower type goes first
    return (g2, g1) if m.geom_type[g1] > m.geom_type[g2] else (g1, g2)


def _collider(m: Model, g1: int, g2: int):
    """(routine, most contacts) of a geom pair, or None for terrain against terrain.
    Every other pair of the geom types a Model can hold has a routine. With multi-CCD
    disabled the clipped pairs make one contact, by the convex collider, as MuJoCo's."""
    key = (int(m.geom_type[g1]), int(m.geom_type[g2]))
    if key in _NEVER:
        return None
    code, maxcon = COLLIDERS[key]
    if code == COLLIDE_FACES and m.opt.disableflags & DSBL_MULTICCD:
        code, maxcon = COLLIDE_CONVEX, 1
    return code, maxcon


def _explicit_pairs(m: Model, pairs):
    if pairs is not None:
        return list(pairs)
    if getattr(m, "pair_geom1", None) is None:
        return []
    return [ExplicitPair(int(m.pair_geom1[i]), int(m.pair_geom2[i]), int(m.pair_dim[i]), tuple(m.pair_friction[i]),
                         tuple(m.pair_solref[i]), tuple(m.pair_solimp[i]), float(m.pair_margin[i]),
                         float(m.pair_gap[i])) for i in range(len(m.pair_geom1))]


def _excluded_bodies(m: Model, exclude):
    if exclude is None and getattr(m, "exclude_body1", None) is not None:
        exclude = zip(m.exclude_body1, m.exclude_body2)
    return {frozenset((int(a), int(b))) for a, b in (exclude or [])}


def no_pairs() -> PairTable:
    """An empty pair table: contacts are switched off."""
    return PairTable(geom1=np.zeros(0, np.int32), geom2=np.zeros(0, np.int32), collider=np.zeros(0, np.int32),
                     maxcon=np.zeros(0, np.int32), explicit=np.zeros(0, np.int32), condim=np.zeros(0, np.int32),
                     friction=np.zeros((0, 5)), solref=np.zeros((0, 2)), solimp=np.zeros((0, 5)),
                     margin=np.zeros(0), gap=np.zeros(0))


def _body_signature(m: Model, g1: int, g2: int) -> tuple:
    b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
    return (min(b1, b2), max(b1, b2))


def candidate_pairs(m: Model, *, exclude=None, pairs=None) -> PairTable:
    """The geom pairs the narrow phase examines each step, with their contact parameters.

    ``exclude``: body-id pairs never to collide; ``pairs``: :class:`ExplicitPair` list.
    By default both are read from the Model's ``exclude_body1/2`` and ``pair_*`` arrays
    when it has them.
    """
    explicit = _explicit_pairs(m, pairs)
    excluded = _excluded_bodies(m, exclude)
    rows = []
    explicit_keys = set()
    for k, p in enumerate(explicit):
        g1, g2 = _ordered(m, p.geom1, p.geom2)
        explicit_keys.add(frozenset((g1, g2)))
        col = _collider(m, g1, g2)
        if col is not None:
            rows.append((g1, g2, *col, k, p.condim, np.asarray(p.friction, float), np.asarray(p.solref, float),
                         np.asarray(p.solimp, float), p.margin, p.gap))

    geoms_of = [np.nonzero(m.geom_bodyid == b)[0] for b in range(m.nbody)]
    for b1 in range(m.nbody):
        for b2 in range(b1 + 1, m.nbody):
            if not len(geoms_of[b1]) or not len(geoms_of[b2]):
                continue
            if body_pair_filtered(m, b1, b2) or frozenset((b1, b2)) in excluded:
                continue
            for ga in geoms_of[b1]:
                for gb in geoms_of[b2]:
                    if not bitmask_pass(m, ga, gb):
                        continue
                    g1, g2 = _ordered(m, int(ga), int(gb))
                    if frozenset((g1, g2)) in explicit_keys:
                        continue
                    col = _collider(m, g1, g2)
                    if col is None:
                        continue
                    condim, friction, solref, solimp = contact_params(m, g1, g2)
                    # MuJoCo sums the two geoms' margins and gaps
                    margin = m.geom_margin[g1] + m.geom_margin[g2]
                    gap = m.geom_gap[g1] + m.geom_gap[g2]
                    rows.append((g1, g2, *col, -1, condim, friction, solref, solimp, margin, gap))

    # MuJoCo's contact order: by body pair (lower body id first), an explicit pair before
    # the automatic pairs of its bodies; the sort is stable, so geom order holds within
    rows.sort(key=lambda r: (_body_signature(m, r[0], r[1]), r[4] < 0))

    def column(i, dtype, shape=()):
        return np.array([r[i] for r in rows], dtype=dtype).reshape((len(rows), *shape))

    return PairTable(geom1=column(0, np.int32), geom2=column(1, np.int32), collider=column(2, np.int32),
                     maxcon=column(3, np.int32), explicit=column(4, np.int32), condim=column(5, np.int32),
                     friction=column(6, float, (5,)), solref=column(7, float, (2,)), solimp=column(8, float, (5,)),
                     margin=column(9, float), gap=column(10, float))
