"""Rows of friction loss (MuJoCo's mj_instantiateFriction): one per dof and one per fixed
tendon with frictionloss > 0, a force bounded by +-frictionloss (N or N m) that opposes
motion. They have no position (pos = 0); the soft-constraint model gives them no
stiffness. Used unless Option.frictionloss is "smooth" (a passive force instead).
"""

import functools
import types

from ... import layout as L
from ...runtime.backend import ti
from ...runtime.ti_math import make_math
from .jacobian import make_row_jacobian
from .table import (
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    D_SOLIMP,
    D_SOLREF,
    FRICTIONLOSS,
    INVWEIGHT,
    TF,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_friction_rows(fp):
    m = make_math(fp)
    table = make_row_table(fp)
    new_row, set_row, copy_sol, copy_sol_cols = table.new_row, table.set_row, table.copy_sol, table.copy_sol_cols
    tendon_jacobian_add = make_row_jacobian(fp).tendon_jacobian_add

    @ti.func
    def friction_loss(w, nefc, sizes: ti.template(), jnt_i: ti.template(), dof_f: ti.template(),
                      ten_i: ti.template(), ten_f: ti.template(), wrap_i: ti.template(), wrap_f: ti.template(),
                      efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """A row per dof and per tendon with friction loss: a force bounded by +-frictionloss
        that opposes motion (MuJoCo's mj_instantiateFriction)."""
        n = nefc
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mt = w % ten_f.shape[0]
        for d in range(sizes[L.SIZE_NV]):
            loss = dof_f[md + d * L.NDOF_F + FRICTIONLOSS]
            if loss > 0:
                row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                if row >= 0:
                    efc_J[w, row, d] = 1
                    set_row(w, row, efc_f, CNSTR_FRICTION_DOF, d, fp(0.0), fp(0.0),
                            dof_f[md + d * L.NDOF_F + INVWEIGHT], -loss,
                            loss)
                    copy_sol(w, row, efc_f, dof_f, md + d * L.NDOF_F + D_SOLREF, md + d * L.NDOF_F + D_SOLIMP)
                    n += 1
        for t in range(sizes[L.SIZE_NTENDON]):
            loss = ten_f[mt, t, TF["frictionloss"]]
            if loss > 0:
                row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                if row >= 0:
                    tendon_jacobian_add(w, row, t, fp(1.0), ten_i, jnt_i, wrap_i, wrap_f, efc_J)
                    set_row(w, row, efc_f, CNSTR_FRICTION_TENDON, t, fp(0.0), fp(0.0), ten_f[mt, t, TF["invweight0"]],
                            -loss, loss)
                    copy_sol_cols(w, row, efc_f, ten_f, mt, t, TF["solref_fri"], TF["solimp_fri"])
                    n += 1
        return n

    return types.SimpleNamespace(friction_loss=friction_loss)
