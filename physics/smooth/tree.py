"""Sums over a body's children in the kinematic tree, for passes by level."""

import functools
import types

from ..access import make_access
from ..runtime.backend import ti


@functools.lru_cache(maxsize=None)
def make_tree(fp):
    A = make_access(fp)

    @ti.func
    def child_sum(b, o_body, body_i: ti.template(), body_d: ti.template(), col: ti.template()):
        """Body b's value of body_d's column ``col`` (its accessor's name) plus its
        children's, added in descending body order: the order a walk over the bodies from
        the last to the first adds each to its parent, so the sums come out the same."""
        get = ti.static(A.read[col])
        total = get(body_d, o_body, b)
        first, n = A.body_childadr(body_i, b), A.body_childnum(body_i, b)
        for k in range(n):
            total += get(body_d, o_body, A.body_treeorder(body_i, first + n - 1 - k))
        return total

    return types.SimpleNamespace(child_sum=child_sum)
