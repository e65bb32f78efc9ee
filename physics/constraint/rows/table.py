"""The constraint table (efc_*) of one world: row types, the columns rows read from the
model and data tables, and the writers every kind of row shares.

A row i is efc_J[w, i, :] (its Jacobian, nv columns) and efc_f[w, i, :] (type, id, pos,
margin, diagA, bounds, solref/solimp and what the soft-constraint model and the solvers
derive from them; layout.EFC_F names the columns). Row types are numbered as MuJoCo's
mjtConstraint.
"""

import functools
import types

from ...access import make_access
from ... import layout as L
from ...runtime.lanes import env_index
from ...runtime.backend import ti
from ...runtime.taichi_adapter import vector_loops
from ...runtime.ti_math import make_math

CNSTR_EQUALITY, CNSTR_FRICTION_DOF, CNSTR_FRICTION_TENDON, CNSTR_LIMIT_JOINT, CNSTR_LIMIT_TENDON = 0, 1, 2, 3, 4
CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL, CNSTR_CONTACT_ELLIPTIC = 5, 6, 7
_MINVAL, _MINIMP, _MAXIMP = 1e-15, 1e-4, 0.9999

_INF = 1e30


@functools.lru_cache(maxsize=None)
def make_row_table(fp):
    """new_row and set_row (a row's slot and its scalar columns), copy_sol and
    copy_sol_cols (its solref/solimp from a flat or a per-world model table), and
    row_dot (a row of a [w, i, d] table dotted with a column of dof_d)."""
    A = make_access(fp)
    m = make_math(fp)

    @ti.func
    def new_row(w, nefc, sizes: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Index of a fresh zeroed row, or -1 (and the overflow count bumped) when full."""
        row = -1
        if nefc < sizes[L.SIZE_NEFC]:
            row = nefc
            for d in range(sizes[L.SIZE_NV]):
                efc_J[env_index(w, row, d)] = 0
        else:
            A.set_nefc_overflow(efc_n, w, A.nefc_overflow(efc_n, w) + 1)
        return row

    @ti.func
    def set_row(w, row, efc_f: ti.template(), kind, obj, pos, margin, diag_a, lower, upper):
        A.set_efc_type(efc_f, w, row, kind)
        A.set_efc_id(efc_f, w, row, obj)
        A.set_efc_pos(efc_f, w, row, pos)
        A.set_efc_imppos(efc_f, w, row, pos)
        A.set_efc_jdotv(efc_f, w, row, 0)
        A.set_efc_margin(efc_f, w, row, margin)
        A.set_efc_diagA(efc_f, w, row, diag_a)
        A.set_efc_lower(efc_f, w, row, lower)
        A.set_efc_upper(efc_f, w, row, upper)

    @ti.func
    def copy_sol(w, row, efc_f: ti.template(), solref, solimp):
        """A row's solref and solimp."""
        A.set_efc_solref(efc_f, w, row, solref)
        A.set_efc_solimp(efc_f, w, row, solimp)

    @ti.func
    @vector_loops
    def row_dot(w, i, rows: ti.template(), nv, vec: ti.template(), col: ti.template()):
        """Row i of ``rows`` (efc_J) times the dof table ``vec``'s column ``col`` (its
        accessor's name)."""
        get = ti.static(A.read[col])
        o = m.env_rows(w, ti.max(nv, 1), ti.static(A.row_width[col]))
        s = fp(0.0)
        for d in range(nv):
            s += rows[env_index(w, i, d)] * get(vec, o, d)
        return s

    return types.SimpleNamespace(new_row=new_row, set_row=set_row, copy_sol=copy_sol,
                                 row_dot=row_dot)
