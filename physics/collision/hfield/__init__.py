"""Height-field collisions: every primitive against an hfield geom (geom1).

MuJoCo splits each grid cell (r, c) along the diagonal from sample (r, c) to (r + 1,
c + 1) into two triangles and collides the prisms under them with its convex solver.
Here the primitives meet the triangles' top surfaces exactly instead, in the hfield's
frame, over the cells under the primitive's bounding box:

- face contacts: the primitive's deepest points along a triangle's normal that lie over
  the triangle (sphere centres and capsule ends, box corners), with the face normal;
- sphere and capsule against the grid's edges and vertices, where the nearest segment
  point lies over no triangle (ridges and peaks), with the normal from the edge toward
  the segment;
- ridges (convex grid edges) clipped to a box: their points inside it push it out along
  its axis nearest the hfield's up direction (bumps and ridges under a box face).

Ellipsoids, cylinders and meshes collide as MuJoCo collides every geom: with the prism
under each triangle, by the convex solver (GJK and EPA, physics/collision/convex/), a
contact through a prism's top face made exact as a box's corners or a plane's contacts are.
The prisms' walls inside the grid are not terrain, so a contact whose normal leaves a
prism through a wall (a sliver of the geom reaching into a neighbouring prism) is left
out, as is every contact with the grid's outer walls; MuJoCo keeps those.

Candidates go through a small table that merges duplicates (the same point reached from
neighbouring triangles) and keeps the deepest few; contacts are emitted with MuJoCo's
frame convention, the normal pointing from the hfield (geom1) to the other geom.

The grid (samples, triangles, edges) is :mod:`.grid`, the candidate table
:mod:`.candidates`; the shapes' routines are :mod:`.segment` (sphere, capsule), :mod:`.box`
and :mod:`.prisms` (ellipsoid, cylinder, mesh).
"""


import functools
import types

from ...model import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_MESH, GEOM_SPHERE
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from ..narrowphase import make_narrowphase
from .box import make_box
from .prisms import make_prisms
from .segment import make_segment

# rows of the candidate table (a pair's own limit may be lower): the prisms' path keeps up
# to 16, so that the contacts under a flat face average out the arbitrary points EPA picks
HF_MAXCON, HF_MAXCON_CONVEX = 8, 16
_MERGE = 1e-3  # candidates closer than this fraction of a cell, with the same normal, are one


@functools.cache
def make_hfield(fp, convex: bool = False, mesh: bool = False):
    """The height-field colliders; ``convex`` compiles in the prisms' convex path
    (ellipsoids and cylinders), and ``mesh`` meshes on it, which only models with such
    pairs need."""
    m = make_math(fp)
    nph = make_narrowphase(fp)
    vec3 = m.vec3
    # candidate rows: dist, pos (3), normal (3), in the hfield frame
    buf_t = ti.types.matrix(HF_MAXCON_CONVEX if convex else HF_MAXCON, 7, fp)
    box = make_box(fp)
    box_faces, box_edges = box.box_faces, box.box_edges
    seg = make_segment(fp)
    segment_faces, segment_edges = seg.segment_faces, seg.segment_edges
    prisms = make_prisms(fp, mesh) if convex else None

    @ti.func
    def hfield_collide(w, con_f: ti.template(), con_n: ti.template(), geom_f: ti.template(), mg, base, nrow, ncol,
                       hsize, pos1, mat1, type2, pos2, mat2, size2, margin, maxcon, hull2):
        """Contacts of geom2 (any primitive; ellipsoids and cylinders where compiled
        with ``convex``, meshes with ``mesh``: hull2 as the convex collider's with_hull
        takes it) with the hfield geom1 whose samples start at flat index ``base`` of
        geom_f and whose size (4) is ``hsize``."""
        pos = mat1.transpose() @ (pos2 - pos1)
        rot = mat1.transpose() @ mat2
        axis = vec3(rot[0, 2], rot[1, 2], rot[2, 2])
        half = vec3(size2[0])  # half-extents of geom2's box in the hfield frame
        if type2 == GEOM_CAPSULE:
            half = ti.abs(axis) * size2[1] + size2[0]
        elif type2 == GEOM_BOX:
            half = ti.abs(rot) @ size2
        elif type2 == GEOM_ELLIPSOID:
            for i in ti.static(range(3)):
                half[i] = vec3(rot[i, 0] * size2[0], rot[i, 1] * size2[1], rot[i, 2] * size2[2]).norm()
        elif type2 == GEOM_CYLINDER:
            for i in ti.static(range(3)):
                half[i] = ti.abs(axis[i]) * size2[1] + size2[0] * ti.sqrt(ti.max(fp(0.0), 1 - axis[i] * axis[i]))
        elif ti.static(mesh):  # noqa: SIM102 (a compile-time branch around a run-time one)
            if type2 == GEOM_MESH:
                half = prisms.hull_half(rot, hull2, geom_f)
        lo = pos - half - margin
        hi = pos + half + margin
        if not (lo[0] > hsize[0] or hi[0] < -hsize[0] or lo[1] > hsize[1] or hi[1] < -hsize[1]
                or lo[2] > hsize[2] or hi[2] < -hsize[3]):
            dx = 2 * hsize[0] / (ncol - 1)
            dy = 2 * hsize[1] / (nrow - 1)
            c0 = ti.max(0, ti.cast(ti.floor((lo[0] + hsize[0]) / dx), ti.i32))
            c1 = ti.min(ncol - 1, ti.cast(ti.ceil((hi[0] + hsize[0]) / dx), ti.i32))
            r0 = ti.max(0, ti.cast(ti.floor((lo[1] + hsize[1]) / dy), ti.i32))
            r1 = ti.min(nrow - 1, ti.cast(ti.ceil((hi[1] + hsize[1]) / dy), ti.i32))
            merge = fp(_MERGE) * ti.min(dx, dy)
            merge2 = merge * merge
            zmin = pos[2] - half[2]
            buf = buf_t(0)
            n = 0
            if type2 == GEOM_BOX:
                n = box_faces(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, pos, rot, size2,
                              zmin, margin, merge2)
                n = box_edges(buf, n, maxcon, geom_f, mg, base, nrow, ncol, hsize, dx, dy, r0, r1, c0, c1, pos, rot,
                              size2, margin, merge2)
            elif type2 == GEOM_SPHERE or type2 == GEOM_CAPSULE:
                a = pos
                b = pos
                if type2 == GEOM_CAPSULE:
                    a = pos + axis * size2[1]
                    b = pos - axis * size2[1]
                n = segment_faces(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, a, b,
                                  size2[0], zmin, margin, merge2)
                n = segment_edges(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, a, b,
                                  size2[0], margin, merge2)
            elif ti.static(convex):
                n = prisms.convex_prisms(buf, n, maxcon, geom_f, mg, base, ncol, hsize, dx, dy, r0, r1, c0, c1, type2,
                                         pos, rot, size2, zmin, margin, merge2, hull2)
            for k in range(n):
                p = vec3(buf[k, 1], buf[k, 2], buf[k, 3])
                nrm = vec3(buf[k, 4], buf[k, 5], buf[k, 6])
                nph.emit(w, con_f, con_n, buf[k, 0], mat1 @ p + pos1, mat1 @ nrm, vec3(0))

    return types.SimpleNamespace(collide=hfield_collide)


__all__ = ["HF_MAXCON", "HF_MAXCON_CONVEX", "make_hfield"]
