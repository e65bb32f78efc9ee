"""Turning term parameters (joint/body/site names, index slices) into model indices."""

from __future__ import annotations

import numpy as np

from ..errors import did_you_mean
from ..registry import TermError


def lookup(names: list, name: str, kind: str, param: str) -> int:
    """Index of ``name`` among a model's ``names`` of ``kind``; a TermError otherwise."""
    if name in names:
        return names.index(name)
    hint = did_you_mean(name, [n for n in names if n])
    known = [n for n in names if n]
    raise TermError(f"no {kind} named {name!r}" + (f"; did you mean {hint!r}?" if hint else f"; known: {known}"), param)


def coordinate_indices(model, which: str, joints, start, stop) -> np.ndarray:
    """qpos (``which='qpos'``) or qvel indices chosen by joint names or by a slice."""
    size = model.nq if which == "qpos" else model.nv
    if joints is not None:
        if start != 0 or stop is not None:
            raise TermError("give either joints or start/stop, not both", "joints")
        adr = model.jnt_qposadr if which == "qpos" else model.jnt_dofadr
        width = _joint_widths(model, which)
        out = []
        for name in joints:
            j = lookup(model.jnt_name, name, "joint", "joints")
            out.extend(range(adr[j], adr[j] + width[j]))
        return np.array(out, dtype=np.int64)
    return _sliced(size, start, stop, "qpos entries" if which == "qpos" else "dofs")


def body_indices(model, bodies, start, stop) -> np.ndarray:
    """Body indices chosen by names or by a slice of the bodies (0 is the world)."""
    if bodies is not None:
        if start != 0 or stop is not None:
            raise TermError("give either bodies or start/stop, not both", "bodies")
        return np.array([lookup(model.body_name, b, "body", "bodies") for b in bodies], dtype=np.int64)
    return _sliced(model.nbody, start, stop, "bodies")


def _sliced(size: int, start: int, stop, items: str) -> np.ndarray:
    """``range(size)[start:stop]``, negative from the end as in Python; a bound past either
    end, which Python would clip without a word, is refused, as is an empty selection."""
    for name, value, hi in (("start", start, size - 1), ("stop", stop, size)):
        if value is not None and not -size <= value <= hi:
            raise TermError(f"{name}={value} is outside -{size}..{hi} (the robot has {size} {items})", name)
    idx = np.arange(size)[slice(start, stop)]
    if idx.size == 0:
        raise TermError(f"start={start}, stop={stop} selects none of the robot's {size} {items}", "start")
    return idx


def _joint_widths(model, which):
    from taigym.physics.model import JNT_NQ, JNT_NV

    table = JNT_NQ if which == "qpos" else JNT_NV
    return [table[int(t)] for t in model.jnt_type]


def vector(value, size: int, param: str) -> np.ndarray:
    """A scalar broadcast to ``size`` or a list of exactly ``size`` numbers."""
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.size == 1:
        return np.full(size, arr[0])
    if arr.size != size:
        raise TermError(f"needs 1 or {size} values, got {arr.size}", param)
    return arr


def site_xpos_ops(c, site: int):
    """A site's world position, xpos + R p (p: the site's offset in its body's frame), as
    program instructions."""
    body = int(c.model.site_bodyid[site])
    # R p as R^T's transpose applied: R^T loaded column by column is R row by row
    rt = c.load("xmat", body, [0, 3, 6, 1, 4, 7, 2, 5, 8])
    return c.b.add(c.load("xpos", body), c.b.rot_t(rt, c.b.const(c.model.site_pos[site])))


def within_ops(c, a: int, b: int, radius: float):
    """1 where the origins of bodies a and b are closer than ``radius``, as program
    instructions: not outside (-inf, radius), where NaN is outside, as numpy's ``<`` is False."""
    distance = c.b.norm(c.b.sub(c.load("xpos", a), c.load("xpos", b)))
    return c.b.affine(c.b.outside(distance, -np.inf, radius, inclusive=False), -1.0, 1.0)
