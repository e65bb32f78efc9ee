"""The constraint table (efc_*) of one world: row types, the columns rows read from the
model and data tables, and the writers every kind of row shares.

A row i is efc_J[w, i, :] (its Jacobian, nv columns) and efc_f[w, i, :] (type, id, pos,
margin, diagA, bounds, solref/solimp and what the soft-constraint model and the solvers
derive from them; layout.EFC_F names the columns). Row types are numbered as MuJoCo's
mjtConstraint.
"""

import functools
import types

from ... import layout as L
from ...collision.narrowphase import CONTACT_F
from ...runtime.backend import ti

CNSTR_EQUALITY, CNSTR_FRICTION_DOF, CNSTR_FRICTION_TENDON, CNSTR_LIMIT_JOINT, CNSTR_LIMIT_TENDON = 0, 1, 2, 3, 4
CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL, CNSTR_CONTACT_ELLIPTIC = 5, 6, 7
_MINVAL, _MINIMP, _MAXIMP = 1e-15, 1e-4, 0.9999

E = {k: v[0] for k, v in L.EFC_F.items()}
QACC_SMOOTH, QFRC_CONSTRAINT = L.DOF_D["qacc_smooth"][0], L.DOF_D["qfrc_constraint"][0]
QACC_WARMSTART, CVEL = L.DOF_D["qacc_warmstart"][0], L.DOF_D["constraint_vel"][0]
J_RANGE, J_MARGIN = L.JNT_F["range"][0], L.JNT_F["margin"][0]
J_SOLREF, J_SOLIMP = L.JNT_F["solref"][0], L.JNT_F["solimp"][0]
INVWEIGHT, FRICTIONLOSS = L.DOF_F["invweight0"][0], L.DOF_F["frictionloss"][0]
D_SOLREF, D_SOLIMP = L.DOF_F["solref"][0], L.DOF_F["solimp"][0]
TF = {k: v[0] for k, v in L.TEN_F.items()}
T_LEN = L.TEN_D["length"][0]
B_INVWEIGHT = L.BODY_F["invweight0"][0]
TIMESTEP, TOLERANCE, IMPRATIO = L.OPT_F["timestep"][0], L.OPT_F["tolerance"][0], L.OPT_F["impratio"][0]
MEANINERTIA = L.OPT_F["meaninertia"][0]
CDOF = L.DOF_D["cdof"][0]
SUBTREE_COM, CVEL_B = L.BODY_D["subtree_com"][0], L.BODY_D["cvel"][0]
CDOF_DOT = L.DOF_D["cdof_dot"][0]
XPOS, XQUAT = L.BODY_D["xpos"][0], L.BODY_D["xquat"][0]
EQ_DATA, EQ_SOLREF, EQ_SOLIMP = L.EQ_F["data"][0], L.EQ_F["solref"][0], L.EQ_F["solimp"][0]
EQ_BREAK, EQ_QUAT2 = L.EQ_F["break"][0], L.EQ_F["quat2"][0]
QPOS0 = L.Q_F["qpos0"][0]
C = {k: a for k, (a, _) in CONTACT_F.items()}
GEOM_BODY = 1  # column of the collision stage's geom_i table
_INF = 1e30


@functools.lru_cache(maxsize=None)
def make_row_table(fp):
    """new_row and set_row (a row's slot and its scalar columns), copy_sol and
    copy_sol_cols (its solref/solimp from a flat or a per-world model table), and
    row_dot (a row of a [w, i, d] table dotted with a column of dof_d)."""

    @ti.func
    def new_row(w, nefc, sizes: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Index of a fresh zeroed row, or -1 (and the overflow count bumped) when full."""
        row = -1
        if nefc < sizes[L.SIZE_NEFC]:
            row = nefc
            for d in range(sizes[L.SIZE_NV]):
                efc_J[w, row, d] = 0
        else:
            efc_n[w, L.EFC_OVERFLOW] += 1
        return row

    @ti.func
    def set_row(w, row, efc_f: ti.template(), kind, obj, pos, margin, diag_a, lower, upper):
        efc_f[w, row, E["type"]] = kind
        efc_f[w, row, E["id"]] = obj
        efc_f[w, row, E["pos"]] = pos
        efc_f[w, row, E["imppos"]] = pos
        efc_f[w, row, E["jdotv"]] = 0
        efc_f[w, row, E["margin"]] = margin
        efc_f[w, row, E["diagA"]] = diag_a
        efc_f[w, row, E["lower"]] = lower
        efc_f[w, row, E["upper"]] = upper

    @ti.func
    def copy_sol_cols(w, row, efc_f: ti.template(), src: ti.template(), ms, obj, ref_col, imp_col):
        for k in ti.static(range(2)):
            efc_f[w, row, E["solref"] + k] = src[ms, obj, ref_col + k]
        for k in ti.static(range(5)):
            efc_f[w, row, E["solimp"] + k] = src[ms, obj, imp_col + k]

    @ti.func
    def copy_sol(w, row, efc_f: ti.template(), src: ti.template(), ref_at, imp_at):
        """A row's solref and solimp from a flat model table's entries ref_at and imp_at on."""
        for k in ti.static(range(2)):
            efc_f[w, row, E["solref"] + k] = src[ref_at + k]
        for k in ti.static(range(5)):
            efc_f[w, row, E["solimp"] + k] = src[imp_at + k]

    @ti.func
    def row_dot(w, i, rows: ti.template(), nv, vec: ti.template(), col):
        o_dof = w * ti.max(nv, 1) * L.NDOF_D
        s = fp(0.0)
        for d in range(nv):
            s += rows[w, i, d] * vec[o_dof + d * L.NDOF_D + col]
        return s

    return types.SimpleNamespace(new_row=new_row, set_row=set_row, copy_sol=copy_sol, copy_sol_cols=copy_sol_cols,
                                 row_dot=row_dot)
