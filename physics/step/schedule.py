"""The step as a list of phases, written once and scheduled two ways.

forward() is a tuple of :class:`Phase`: each names a stage function and its extent, one
call per env or one per element of a kind (a geom, a dof) in every env. Two emitters make
kernels from the same list:

- **fused** (physics/step/pipeline.py, the default): one parallel loop over envs, and
  inside it, for each env, the phases in order, an element phase as a loop over its
  elements. This is the CPU's shape: one thread walks an env's whole step, its tables hot
  in cache, one launch per env step.
- **staged** (physics/step/staged.py): one parallel loop per phase over env x element,
  consecutive envs on consecutive lanes (iteration i takes env ``i % n`` and element
  ``i // n``), so that a GPU spreads a step's work over many more threads than envs and a
  warp reads one table entry of 32 envs side by side. Taichi launches a kernel's top-level
  loops back to back, each finishing before the next starts: a phase sees every env's
  previous phases done.

Both run the same stage functions on the same tables, in the same order within an env, so
their results agree to round-off (tests/test_schedule.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..layout import TREE_LEVELS

SCHEDULES = ("fused", "staged")
# the staged schedule's constraint solve: a thread per env, or a group of lanes per env
# (physics/constraint/primal/lane_group.py), where lane_group.lane_solve_supported
SOLVES = ("thread", "group")
DOWN, UP = "down", "up"  # the directions of a pass over the kinematic tree (Phase.tree)
DEEPER = -1  # a tree phase's loop over the levels past TREE_LEVELS, per env


class Phase(NamedTuple):
    """One step of forward(): ``run(w, t)`` for env w once (``count`` None), or
    ``run(w, e, t)`` for each element e < ``count(t)`` (a ``@ti.func`` of the step's
    tables, the same for every env: model sizes, never per-env state). ``t`` holds the
    step kernel's arrays by name (physics/step/pipeline.py). ``staged``: the phases the
    staged schedule runs instead, where the work splits into more threads than one per
    env at the cost of a pass through memory that one thread per env does without (the
    narrow phase per candidate pair, then the env's contact table in pair order).
    ``tree``: an element phase over the bodies that reads what it wrote for a body's
    parent (DOWN, from the root outwards) or children (UP, from the leaves inwards); the
    fused schedule walks the bodies in order (DOWN) or in reverse (UP), the staged one
    level by level (staged.py). ``group``: ``run(w, me, t)`` by a lane group per env
    (physics/constraint/primal/lane_group.py), a loop of its own."""

    name: str
    run: Any
    count: Any = None
    staged: tuple = ()
    tree: str = ""
    group: bool = False

    @property
    def per_env(self) -> bool:
        return self.count is None and not self.group


def staged_loops(phases) -> tuple:
    """The staged schedule's loops over ``phases``: each element phase a loop of its own,
    and each run of consecutive per-env phases one loop. An env's per-env phases run in
    one thread, in order, so they need no barrier between them; an element phase reads
    what other threads wrote for the same env, so a loop ends before it."""
    loops: list[tuple] = []
    for phase in staged_phases(phases):
        if phase.per_env and loops and loops[-1][0].per_env:
            loops[-1] = (*loops[-1], phase)
        else:
            loops.append((phase,))
    return tuple(loops)


def staged_phases(phases) -> tuple:
    """``phases`` as the staged schedule runs them: each replaced by its staged ones."""
    return tuple(p for phase in phases for p in (phase.staged or (phase,)))


def tree_levels(phase, depth: int) -> tuple:
    """The levels of a tree phase's staged loops, in the order they run, for a tree of
    ``depth`` levels (layout.tree_depth): a loop per level up to TREE_LEVELS (layout.py),
    and DEEPER, one thread per env walking the rest, where the tree goes deeper."""
    levels = (*range(min(depth, TREE_LEVELS)), *((DEEPER,) if depth > TREE_LEVELS else ()))
    return levels if phase.tree == DOWN else levels[::-1]


def tree_loop_names(phase, depth: int) -> tuple:
    """The names of a tree phase's staged loops, in the order they run."""
    return tuple(f"{phase.name}.deeper" if level == DEEPER else f"{phase.name}.level{level}"
                 for level in tree_levels(phase, depth))
