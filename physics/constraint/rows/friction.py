"""Rows of friction loss (MuJoCo's mj_instantiateFriction): one per dof and one per fixed
tendon with frictionloss > 0, a force bounded by +-frictionloss (N or N m) that opposes
motion. They have no position (pos = 0); the soft-constraint model gives them no
stiffness. Used unless Option.frictionloss is "smooth" (a passive force instead).
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...runtime.backend import ti
from ...access import make_access
from ...runtime.ti_math import make_math
from .jacobian import make_row_jacobian
from .table import (
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_friction_rows(fp):
    m = make_math(fp)
    A = make_access(fp)
    table = make_row_table(fp)
    new_row, set_row, copy_sol = table.new_row, table.set_row, table.copy_sol
    tendon_jacobian_add = make_row_jacobian(fp).tendon_jacobian_add

    @ti.func
    def friction_loss(w, nefc, sizes: ti.template(), jnt_i: ti.template(), dof_f: ti.template(),
                      ten_i: ti.template(), ten_f: ti.template(), ten_d: ti.template(),
                      efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """A row per dof and per tendon with friction loss: a force bounded by +-frictionloss
        that opposes motion (MuJoCo's mj_instantiateFriction)."""
        n = nefc
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mt = m.param_set(w, ten_f)
        for d in range(sizes[L.SIZE_NV]):
            loss = A.dof_frictionloss(dof_f, md, d)
            if loss > 0:
                row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                if row >= 0:
                    efc_J[env_index(w, row, d)] = 1
                    set_row(w, row, efc_f, CNSTR_FRICTION_DOF, d, fp(0.0), fp(0.0),
                            A.dof_invweight0(dof_f, md, d), -loss,
                            loss)
                    copy_sol(w, row, efc_f, A.dof_solref(dof_f, md, d), A.dof_solimp(dof_f, md, d))
                    n += 1
        for t in range(sizes[L.SIZE_NTENDON]):
            loss = A.tendon_frictionloss(ten_f, mt, t)
            if loss > 0:
                row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                if row >= 0:
                    tendon_jacobian_add(w, row, t, fp(1.0), sizes, ten_d, efc_J)
                    set_row(w, row, efc_f, CNSTR_FRICTION_TENDON, t, fp(0.0), fp(0.0), A.tendon_invweight0(ten_f, mt, t),
                            -loss, loss)
                    copy_sol(w, row, efc_f, A.tendon_solref_fri(ten_f, mt, t), A.tendon_solimp_fri(ten_f, mt, t))
                    n += 1
        return n

    return types.SimpleNamespace(friction_loss=friction_loss)
