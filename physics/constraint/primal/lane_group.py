"""A group of GROUP_LANES lanes that works on one env together: the staged schedule's
cooperative constraint solve (lane_solver.py).

The algorithm is written once, for both devices:

- on a GPU each lane is a thread of one thread block per env; ``me`` is the thread's lane,
  a loop over the lanes runs once, :func:`sync` is the block's barrier and a sum goes
  through the env's scratch in efc_Y (each lane its partial, then every lane adds them up
  in lane order, so that all lanes hold the same total and take the same branches);
- on the CPU one thread runs the lanes one after the other: a loop over the lanes runs
  them all, ``me`` is 0, a barrier is nothing and a sum is carried from lane to lane. The
  lanes take the elements in order (:func:`chunk`: lane l the l-th run of them), so a sum
  adds its terms in element order, as the thread-per-env solve does.

Work that one lane does (a tree-sparse product with M, a factor's diagonal) runs where
:func:`first` holds, then a barrier."""

import functools
import types

from ...layout import GROUP_LANES, GROUP_SUM_WIDTH
from ...runtime.backend import ti
from ...runtime.lanes import env_index, env_width


def lane_solve_supported(solver: str, cone: str) -> bool:
    """Whether a lane group solves this configuration's constraints: the primal solvers
    with scalar rows and pyramidal cones (an elliptic cone's rows go together, and
    projected Gauss-Seidel visits the rows one after the other)."""
    return solver in ("Newton", "CG") and cone == "pyramidal"


@functools.lru_cache(maxsize=None)
def make_group(fp, simt: bool):
    """The group's operations: ``simt`` lanes as a GPU block's threads, else one thread's loop."""
    count = 1 if simt else GROUP_LANES

    @ti.func
    def lane(k, me):
        """The lane that iteration k of a loop over the lanes runs."""
        out = k
        if ti.static(simt):
            out = me
        return out

    @ti.func
    def first(me):
        return me == 0

    @ti.func
    def sync():
        if ti.static(simt):
            ti.simt.block.sync()

    @ti.func
    def chunk(lane_k, n):
        """Lane ``lane_k``'s run of n elements: [lo, hi), the runs in lane order."""
        size = (n + GROUP_LANES - 1) // GROUP_LANES
        lo = ti.min(lane_k * size, n)
        return ti.Vector([lo, ti.min(lo + size, n)])

    @ti.func
    def start(me, init):
        """A sum's start in lane ``me``: ``init`` in one lane, zero in the others."""
        out = init
        if ti.static(simt):  # a static branch alone: the lane's test is the device's
            if me != 0:
                out = init * 0
        return out

    @ti.func
    def slot(w, q, efc_Y: ti.template()):
        columns = env_width(efc_Y)
        base = efc_Y.shape[1] - (GROUP_LANES * GROUP_SUM_WIDTH + columns - 1) // columns  # group_sum_rows
        return env_index(w, base + q // columns, q % columns)

    @ti.func
    def total(w, me, part, efc_Y: ti.template()):
        """The group's sum of ``part`` (a vector of at most GROUP_SUM_WIDTH values), in every lane."""
        out = part
        if ti.static(simt):
            for c in ti.static(range(part.n)):
                efc_Y[slot(w, me * GROUP_SUM_WIDTH + c, efc_Y)] = part[c]
            ti.simt.block.sync()
            out = part * 0
            for k in range(GROUP_LANES):
                for c in ti.static(range(part.n)):
                    out[c] += efc_Y[slot(w, k * GROUP_SUM_WIDTH + c, efc_Y)]
            ti.simt.block.sync()
        return out

    return types.SimpleNamespace(count=count, lane=lane, first=first, sync=sync, chunk=chunk, start=start,
                                 total=total)
