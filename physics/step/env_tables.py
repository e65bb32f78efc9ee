"""Env w's view of the step kernel's tables: what depends on the env alone, read once.

Taichi loads an ndarray's data pointer and shape from the kernel's argument buffer at
every access, and after any store LLVM must assume they changed: an element loop that
writes a table reloads them in every iteration, and cannot hoist out what is computed
from them. Two such reads ran in every element of every element phase:

- **the model's sizes** (layout.SIZE_*), a loop's bound or a table's stride; the view
  holds them in registers (:func:`sizes_in_registers`);
- **the env's parameter set in each model table**: one set shared by every env or one per
  env (World.set_param), set ``w % table.shape[0]`` (a flat table: the rows of set
  ``w % (table.shape[0] // stride)``), an integer division. Each such table of the view
  carries its env's set (``env_set``) beside the array; ``m.param_set`` and ``m.row_set``
  (physics/runtime/ti_math.py) read it there, and find it themselves in other kernels.

The fused schedule makes the view as an env's step begins, and the outlined constraint
stage (physics/step/outline.py) again as it is called: 5% fewer instructions in Hopper's,
Ant's and Humanoid's step kernels (docs/performance.md).

A World's own kernel (its model's, not a kernel shared between models: physics/features.py)
goes further and is traced with the sizes themselves (``baked``): every loop over the
model's bodies, joints or dofs then has a bound, and every flat table a stride, that LLVM
knows. Hopper's physics step ran 12.5% fewer instructions, Ant's 6.6%, Humanoid's 4.6%
(16 envs, callgrind). The view carries them (``baked``, () where the sizes are read), so
the outlined stage is traced with them too. Where the mass matrix's factor is small enough,
the constants hold the dof tree as well, and the view's ``dof_i`` carries it (a
:class:`TreeTable`): the factor and the solves with M are then written out entry by entry
(physics/smooth/unrolled_tree.py).
"""

import collections
import functools
from typing import NamedTuple

from .. import layout as L
from ..runtime.backend import ti
from ..runtime.taichi_adapter import traced_access, traced_load

# the model tables read by parameter set: by their first index, or flat by rows of the
# stride a sizes slot holds (layout.py)
BY_SET = ("q_f", "act_f", "ten_f", "wrap_f", "opt_f", "sensor_f", "pair_f", "geom_f", "eq_f")
BY_ROWS = (("body_f", L.SIZE_BODYF_STRIDE, L.NBODY_F), ("jnt_f", L.SIZE_JNTF_STRIDE, L.NJNT_F),
           ("dof_f", L.SIZE_DOFF_STRIDE, L.NDOF_F))
_VIEWED = (*BY_SET, *(name for name, _, _ in BY_ROWS))


class _TableView:
    """A step kernel's array with what a kernel knows of it beside it, indexed and shaped as
    the array."""

    def __init__(self, array):
        self.array = array

    @property
    def shape(self):
        return self.array.shape

    def __getitem__(self, index):
        return traced_load(self.array, *(index if isinstance(index, tuple) else (index,)))


class EnvTable(_TableView):
    """A model table as one env's step reads it: the array, and ``env_set``, the env's
    parameter set in it (a flat table's: where its rows start)."""

    def __init__(self, array, env_set):
        super().__init__(array)
        self.env_set = env_set


@ti.func
def env_sets(w, t: ti.template()):
    """Env w's parameter set in each viewed table, in _VIEWED's order."""
    sets = ti.Vector([0] * ti.static(len(_VIEWED)), dt=ti.i32)
    for k in ti.static(range(len(BY_SET))):
        sets[k] = w % ti.static(getattr(t, BY_SET[k])).shape[0]
    for k in ti.static(range(len(BY_ROWS))):
        name, slot, width = ti.static(BY_ROWS[k])
        stride = t.sizes[slot]
        sets_in_table = ti.static(getattr(t, name)).shape[0] // stride
        sets[ti.static(len(BY_SET) + k)] = (w % sets_in_table) * (stride // width) * width
    return sets


@ti.func
def sizes_in_registers(t: ti.template(), baked: ti.template()):
    """The model's sizes as a vector a stage indexes by a constant slot: the sizes table's
    where ``baked`` is (), or those of its :class:`Constants`."""
    if ti.static(len(baked) == 0):
        return ti.Vector([t.sizes[i] for i in ti.static(range(L.NSIZES))], dt=ti.i32)
    else:
        return ti.Vector([baked.sizes[i] for i in ti.static(range(L.NSIZES))], dt=ti.i32)


class Tree(NamedTuple):
    """The dof tree a kernel is traced with: each dof's parent (-1 at a root), its row in the
    sparse mass matrix and that row's length (physics/smooth/inertia.py's layout)."""
    parent: tuple
    madr: tuple
    rowlen: tuple


class Constants(NamedTuple):
    """What a model's own kernel is traced with: its sizes (layout.SIZE_*), and its dof tree
    where the mass matrix's factor and solves are written out entry by entry (else None)."""
    sizes: tuple
    tree: Tree | None


UNROLLED_FACTOR_OPS = 3000  # the most multiply-adds of a factor written out entry by entry


def model_constants(packed_sizes, model) -> Constants:
    """A World's sizes table (layout.pack_model's ``sizes``) and its model's dof tree, as a
    kernel is traced with them: the tree only for a factor of at most UNROLLED_FACTOR_OPS
    multiply-adds (Gymnasium's Humanoid takes 778, Ant 231, the quadruped 375), where Taichi can
    expand it (traced_access)."""
    sizes = tuple(int(v) for v in packed_sizes)
    if len(sizes) != L.NSIZES:
        raise AssertionError(f"the sizes table holds {len(sizes)} sizes, layout.NSIZES is {L.NSIZES}")
    tree = dof_tree(model)
    return Constants(sizes, tree if traced_access() is not None and factor_ops(tree) <= UNROLLED_FACTOR_OPS else None)


def dof_tree(model) -> Tree:
    """A model's dof tree: its dofs' parents and their rows of the sparse mass matrix."""
    parent = tuple(int(p) for p in model.dof_parentid)
    madr = tuple(int(a) for a in model.dof_Madr)
    rowlen = tuple((madr[d + 1] if d + 1 < model.nv else int(model.nM)) - madr[d] for d in range(model.nv))
    return Tree(parent, madr, rowlen)


def factor_ops(tree: Tree) -> int:
    """Multiply-adds of the tree-sparse factor: each dof's row updates each ancestor's."""
    ops = 0
    for k in range(len(tree.parent)):
        i = tree.parent[k]
        while i >= 0:
            ops += tree.rowlen[i]
            i = tree.parent[i]
    return ops


class TreeTable(_TableView):
    """The dof table (``dof_i``) as a model's own kernel reads it: the array, and ``tree``,
    the dof tree it is traced with."""

    def __init__(self, array, tree: Tree):
        super().__init__(array)
        self.tree = tree


@functools.lru_cache(maxsize=None)
def _view_type(Tables):
    return collections.namedtuple("EnvTables", (*Tables._fields, "arrays", "baked"))


def env_view(t, sets, sizes, baked=None):
    """The tables ``t`` (a StepTables) as env w's step reads them: ``sets`` its
    :func:`env_sets`, ``sizes`` :func:`sizes_in_registers`, ``baked`` the constant sizes it
    was traced with (or ()); ``arrays`` keeps ``t``, for the outlined stages' calls
    (physics/step/outline.py)."""
    fields = t._asdict()
    for k, name in enumerate(_VIEWED):
        fields[name] = EnvTable(fields[name], traced_load(sets, k))
    fields["sizes"] = sizes
    if baked and baked.tree is not None:
        fields["dof_i"] = TreeTable(fields["dof_i"], baked.tree)
    return _view_type(type(t))(**fields, arrays=t, baked=baked or ())


def baked_of(t):
    """The constant sizes ``t`` (a StepTables or an :func:`env_view`) was traced with, or ()."""
    return getattr(t, "baked", ())


def arrays_of(t):
    """The StepTables behind ``t``, itself or an :func:`env_view`."""
    return getattr(t, "arrays", t)
