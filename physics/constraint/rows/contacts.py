"""Rows of contacts (MuJoCo's mj_instantiateContact), in the contact frame (normal, then
two tangents) of the collision stage's contact table.

condim 1: one frictionless row, force >= 0 along the normal. Pyramidal cones (condim 3,
4, 6): the 2 (condim - 1) edges J_n +- mu_k J_k, each force >= 0. Elliptic cones: the
normal row and one per friction direction (tangents, spin, rolling), the friction forces
bounded by the cone in the solver. pos is the contact's signed distance (m) and margin
its includemargin.
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
    _INF,
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_FRICTIONLESS,
    CNSTR_CONTACT_PYRAMIDAL,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_contact_rows(fp, cone: str = "pyramidal"):
    """The contact rows for one friction cone ("pyramidal", "elliptic"): only its code is
    compiled in."""
    m = make_math(fp)
    A = make_access(fp)
    set_row = make_row_table(fp).set_row
    relative_jacobian = make_row_jacobian(fp).relative_jacobian

    @ti.func
    def contact_axis(w, c, con_f: ti.template(), k):
        """Row k of the contact frame: the normal, then the two tangents."""
        return m.vec3(A.contact_frame_at(con_f, w, c, 3 * k), A.contact_frame_at(con_f, w, c, 3 * k + 1),
                      A.contact_frame_at(con_f, w, c, 3 * k + 2))

    @ti.func
    def row_count(dim):
        """The rows a contact of condim ``dim`` makes: one frictionless row, a pyramid's
        2 (condim - 1) edges, or an elliptic cone's condim rows."""
        nrow = 1 if dim == 1 else 2 * (dim - 1)
        if ti.static(cone == "elliptic"):
            if dim > 1:
                nrow = dim
        return nrow

    @ti.func
    def place(w, c, n, sizes: ti.template(), con_i: ti.template(), efc_n: ti.template()):
        """Contact c's first row, given the n rows before it, kept as its efc_address, and
        its row count: the address -1 where it makes none (excluded, or its rows past the
        capacity, counted as overflow)."""
        address, nrow = -1, 0
        if A.contact_exclude(con_i, w, c) == 0:
            nrow = row_count(A.contact_dim(con_i, w, c))
            if n + nrow > sizes[L.SIZE_NEFC]:
                A.set_nefc_overflow(efc_n, w, A.nefc_overflow(efc_n, w) + nrow)
            else:
                address = n
        A.set_contact_efc_address(con_i, w, c, address)
        return address, nrow

    @ti.func
    def addresses(w, nefc, sizes: ti.template(), con_i: ti.template(), con_n: ti.template(),
                  efc_n: ti.template()):
        """Each contact's place among env w's rows (its efc_address), from row nefc on, and
        the env's row count after them: contacts(), less the rows themselves, which
        :func:`contact_rows` then makes a contact at a time."""
        n = nefc
        for c in range(A.ncon(con_n, w)):
            address, nrow = place(w, c, n, sizes, con_i, efc_n)
            if address >= 0:
                n += nrow
        return n

    @ti.func
    def contacts(w, nefc, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(), body_d: ti.template(),
                 dof_d: ti.template(), geom_i: ti.template(), con_f: ti.template(), con_i: ti.template(),
                 con_n: ti.template(), efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows of each contact, from row nefc on (MuJoCo's mj_instantiateContact), and the
        env's row count after them. The contacts are placed first, in a loop of their own:
        an integer store among the rows' loads (the contact's efc_address) would make LLVM
        load the model's integer tables again after it (Ant's step ~3% slower)."""
        n = addresses(w, nefc, sizes, con_i, con_n, efc_n)
        mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        for c in range(A.ncon(con_n, w)):
            address = A.contact_efc_address(con_i, w, c)
            if address >= 0:
                rows_at(w, c, address, row_count(A.contact_dim(con_i, w, c)), mb, sizes, body_i, body_f, body_d,
                        dof_d, geom_i, con_f, con_i, efc_J, efc_f)
        return n

    @ti.func
    def contact_rows(w, c, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(),
                     body_d: ti.template(), dof_d: ti.template(), geom_i: ti.template(), con_f: ti.template(),
                     con_i: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """Contact c's rows where :func:`addresses` placed them (none where it placed none)."""
        address = A.contact_efc_address(con_i, w, c)
        if address >= 0:
            mb = m.row_set(w, body_f, sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
            rows_at(w, c, address, row_count(A.contact_dim(con_i, w, c)), mb, sizes, body_i, body_f, body_d, dof_d,
                    geom_i, con_f, con_i, efc_J, efc_f)

    @ti.func
    def rows_at(w, c, n, nrow, mb, sizes: ti.template(), body_i: ti.template(), body_f: ti.template(),
                body_d: ti.template(), dof_d: ti.template(), geom_i: ti.template(), con_f: ti.template(),
                con_i: ti.template(), efc_J: ti.template(), efc_f: ti.template()):
        """Contact c's ``nrow`` rows from row n on; ``mb`` the env's row of body_f."""
        dim = A.contact_dim(con_i, w, c)
        b1 = A.geom_body(geom_i, A.contact_geom1(con_i, w, c))
        b2 = A.geom_body(geom_i, A.contact_geom2(con_i, w, c))
        point = m.vec3(A.contact_pos_at(con_f, w, c, 0), A.contact_pos_at(con_f, w, c, 1),
                       A.contact_pos_at(con_f, w, c, 2))
        tran = A.body_invweight0_at(body_f, mb, b1, 0) + A.body_invweight0_at(body_f, mb, b2, 0)
        rot = A.body_invweight0_at(body_f, mb, b1, 1) + A.body_invweight0_at(body_f, mb, b2, 1)
        nv = sizes[L.SIZE_NV]
        # frame rows: the normal and tangents; geom2 moves relative to geom1
        frame = ti.Matrix.rows([contact_axis(w, c, con_f, 0), contact_axis(w, c, con_f, 1),
                                contact_axis(w, c, con_f, 2)])
        relative_jacobian(w, n, dim, nv, b2, point, b1, point, frame, body_i, body_d, dof_d, efc_J)
        if ti.static(cone == "elliptic"):
            if dim > 1:
                elliptic_rows(w, n, c, dim, tran, rot, con_f, efc_f)
            else:
                pyramid_rows(w, n, c, dim, nv, tran, rot, con_f, efc_J, efc_f)
        else:
            pyramid_rows(w, n, c, dim, nv, tran, rot, con_f, efc_J, efc_f)
        for r in range(nrow):
            for k in ti.static(range(2)):
                A.set_efc_solref_at(efc_f, w, n + r, k, A.contact_solref_at(con_f, w, c, k))
            for k in ti.static(range(5)):
                A.set_efc_solimp_at(efc_f, w, n + r, k, A.contact_solimp_at(con_f, w, c, k))

    @ti.func
    def pyramid_rows(w, n, c, dim, nv, tran, rot, con_f: ti.template(), efc_J: ti.template(),
                     efc_f: ti.template()):
        """The frame rows n .. n+dim-1 of relative_jacobian become the pyramid's edges
        J_n +- mu_k J_k, in place."""
        if dim == 1:
            set_row(w, n, efc_f, CNSTR_CONTACT_FRICTIONLESS, c, A.contact_dist(con_f, w, c),
                    A.contact_includemargin(con_f, w, c), tran, fp(0.0), fp(_INF))
        else:
            mu = m.vec6(0)
            for k in ti.static(range(1, 6)):
                if k < dim:
                    mu[k] = A.contact_friction_at(con_f, w, c, k - 1)
            for d in range(nv):
                p = m.vec6(0)
                for k in ti.static(range(6)):
                    if k < dim:
                        p[k] = efc_J[env_index(w, n + k, d)]
                for k in ti.static(range(1, 6)):
                    if k < dim:
                        efc_J[env_index(w, n + 2 * (k - 1), d)] = p[0] + mu[k] * p[k]
                        efc_J[env_index(w, n + 2 * (k - 1) + 1, d)] = p[0] - mu[k] * p[k]
            for k in ti.static(range(1, 6)):
                if k < dim:
                    # dims 1, 2 slide along the tangents; 3 spins about the normal; 4, 5 roll
                    other = tran
                    if ti.static(k >= 3):
                        other = rot
                    diag = tran + mu[k] * mu[k] * other
                    for s in ti.static(range(2)):
                        set_row(w, n + 2 * (k - 1) + s, efc_f, CNSTR_CONTACT_PYRAMIDAL, c, A.contact_dist(con_f, w, c),
                                A.contact_includemargin(con_f, w, c), diag, fp(0.0), fp(_INF))

    @ti.func
    def elliptic_rows(w, n, c, dim, tran, rot, con_f: ti.template(), efc_f: ti.template()):
        """The normal row, then one row per friction direction (tangents, spin, rolling):
        the contact-frame rows of relative_jacobian. Only the normal row has a position; the
        impedance of all of them comes from the contact's distance."""
        for k in range(dim):
            pos = A.contact_dist(con_f, w, c) if k == 0 else fp(0.0)
            margin = A.contact_includemargin(con_f, w, c) if k == 0 else fp(0.0)
            # the normal force is >= 0; friction forces have either sign, bounded by the cone
            set_row(w, n + k, efc_f, CNSTR_CONTACT_ELLIPTIC, c, pos, margin, tran if k < 3 else rot,
                    fp(0.0) if k == 0 else fp(-_INF), fp(_INF))
            A.set_efc_imppos(efc_f, w, n + k, A.contact_dist(con_f, w, c) - A.contact_includemargin(con_f, w, c) + margin)
            A.set_efc_fric(efc_f, w, n + k, A.contact_friction_at(con_f, w, c, k - 1) if k > 0 else fp(0.0))
        A.set_efc_cone_at(efc_f, w, n, 5, dim)

    return types.SimpleNamespace(contacts=contacts, addresses=addresses, contact_rows=contact_rows)
