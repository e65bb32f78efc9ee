"""The table of a pair's candidate contacts (rows: dist, pos (3), normal (3), in the
hfield's frame), which merges duplicates (the same point reached from neighbouring
triangles) and keeps the deepest few, or with ``spread`` the most spread out.
"""


import functools
import types

from ...runtime.backend import ti
from ...runtime.ti_math import make_math


@functools.cache
def make_candidates(fp):
    m = make_math(fp)
    vec3 = m.vec3

    @ti.func
    def keep(buf: ti.template(), n, maxcon, dist, pos, normal, merge2, spread: ti.template()):
        """Add a candidate: merged with one at the same place and normal (the deeper wins),
        else appended. A full table replaces its shallowest if the new one is deeper; with
        ``spread`` it drops the shallower of its two closest candidates instead (the new one
        included), so that contacts from many prisms under a flat face stay spread over the
        face rather than crowding the first cells visited. Returns the count."""
        slot = -1
        for k in range(n):
            d = pos - vec3(buf[k, 1], buf[k, 2], buf[k, 3])
            if d.dot(d) < merge2 and normal.dot(vec3(buf[k, 4], buf[k, 5], buf[k, 6])) > fp(0.99):
                slot = k
        write = True
        if slot >= 0:
            write = dist < buf[slot, 0]
        elif n < maxcon:
            slot = n
            n += 1
        elif ti.static(spread):
            closest = fp(1e30)
            for i in range(n + 1):
                pi = pos
                di = dist
                if i < n:
                    pi = vec3(buf[i, 1], buf[i, 2], buf[i, 3])
                    di = buf[i, 0]
                for j in range(i):
                    d = pi - vec3(buf[j, 1], buf[j, 2], buf[j, 3])
                    if d.dot(d) < closest:
                        closest = d.dot(d)
                        slot = i if di >= buf[j, 0] else j
            write = slot < n
        else:
            slot = 0
            for k in range(1, n):
                if buf[k, 0] > buf[slot, 0]:
                    slot = k
            write = dist < buf[slot, 0]
        if write:
            buf[slot, 0] = dist
            for i in ti.static(range(3)):
                buf[slot, 1 + i] = pos[i]
                buf[slot, 4 + i] = normal[i]
        return n

    return types.SimpleNamespace(keep=keep)
