"""forward(): every derived quantity of one world's state, ending with qacc
(MuJoCo's mj_forward): positions, velocities, actuation, bias and
passive forces, the mass matrix and its factorization, and M qacc = qfrc_smooth."""


import functools

from .. import layout as L
from ..collision.driver import make_collision
from ..constraint.rows import make_constraint
from ..model import DSBL_CONSTRAINT, DSBL_LIMIT
from ..runtime.backend import ti
from ..runtime.ti_math import make_math
from ..smooth.actuation import make_actuation
from ..smooth.bias import make_bias
from ..smooth.drives import make_drives
from ..smooth.inertia import make_inertia
from ..smooth.kinematics import make_kinematics
from ..smooth.limits import make_limits
from ..smooth.passive import make_passive

QFRC_SMOOTH, SCRATCH = L.DOF_D["qfrc_smooth"][0], L.DOF_D["scratch"][0]
XPOS, XQUAT = L.BODY_D["xpos"][0], L.BODY_D["xquat"][0]
QFRC_BIAS, QFRC_PASSIVE, QFRC_ACTUATOR = (L.DOF_D[k][0] for k in ("qfrc_bias", "qfrc_passive", "qfrc_actuator"))


@functools.lru_cache(maxsize=None)
def make_forward(fp, solver: str = "Newton", cone: str = "pyramidal", convex: bool = False):
    m = make_math(fp)
    kin = make_kinematics(fp)
    inertia = make_inertia(fp)
    bias = make_bias(fp)
    passive = make_passive(fp)
    drv = make_drives(fp)
    lim = make_limits(fp)
    act = make_actuation(fp)
    cons = make_constraint(fp, solver, cone)
    col = make_collision(fp, convex)

    @ti.func
    def forward(w, sizes: ti.template(), body_i: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), act_i: ti.template(), ten_i: ti.template(), wrap_i: ti.template(),
                body_f: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), q_f: ti.template(), act_f: ti.template(), ten_f: ti.template(), wrap_f: ti.template(), opt_f: ti.template(),
                qpos: ti.template(), qvel: ti.template(), qacc: ti.template(), ctrl: ti.template(), qfrc_applied: ti.template(), body_d: ti.template(), jnt_d: ti.template(), dof_d: ti.template(), qM: ti.template(), qLD: ti.template(), act_d: ti.template(), ten_d: ti.template(),
                efc_J: ti.template(), efc_Y: ti.template(), efc_f: ti.template(), efc_n: ti.template(),
                pair_i: ti.template(), pair_f: ti.template(), geom_i: ti.template(), geom_f: ti.template(),
                geom_x: ti.template(), con_f: ti.template(), con_i: ti.template(), con_n: ti.template(),
                eq_i: ti.template(), eq_f: ti.template(), eq_d: ti.template()):
        # position
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        kin.body_frames(w, sizes, body_i, body_f, jnt_i, jnt_f, q_f, qpos, body_d, jnt_d)
        kin.com_pos(w, sizes, body_i, body_f, jnt_i, body_d, jnt_d, dof_d)
        kin.tendons(w, sizes, jnt_i, ten_i, wrap_i, wrap_f, qpos, qvel, ten_d)
        # geom poses feed only the pair tests (rendering computes its own): without pairs
        # (contacts disabled, or no geom that can touch another) they are not needed
        if sizes[L.SIZE_NPAIR] > 0:
            o_body = m.env_start(w, sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
            col.geom_poses(w, sizes[L.SIZE_NGEOM], geom_i, geom_f, body_d, o_body, L.NBODY_D, XPOS, XQUAT, geom_x)
        col.collide_pairs(w, sizes[L.SIZE_NPAIR], pair_i, pair_f, geom_i, geom_f, geom_x, con_f, con_i, con_n)
        inertia.crb(w, sizes, body_i, dof_i, dof_f, body_d, dof_d, qM)
        inertia.copy_sparse(w, sizes, qM, qLD)
        inertia.factor(w, sizes, dof_i, qLD)
        # velocity
        kin.com_vel(w, sizes, body_i, jnt_i, dof_i, qvel, body_d, dof_d)
        passive.passive(w, sizes, body_i, jnt_i, dof_i, ten_i, wrap_i, body_f, jnt_f, dof_f, q_f, ten_f, wrap_f,
                        opt_f, qpos, qvel, body_d, ten_d, dof_d)
        # actuation and acceleration
        act.actuation(w, sizes, jnt_i, act_i, act_f, ten_i, wrap_i, wrap_f, qpos, qvel, ctrl, ten_d, act_d, dof_d)
        bias.rne(w, sizes, body_i, dof_i, opt_f, qvel, body_d, dof_d)
        # PD drives (after the forces they hold), then cubic limits: forces and the terms
        # the integrator treats implicitly
        drv.drives(w, sizes, jnt_i, dof_i, dof_f, opt_f, qpos, qvel, qfrc_applied, dof_d)
        if (sizes[L.SIZE_DISABLE] & (DSBL_CONSTRAINT | DSBL_LIMIT)) == 0:
            lim.cubic_limits(w, sizes, jnt_i, jnt_f, qpos, dof_d)
        for d in range(sizes[L.SIZE_NV]):
            f = (dof_d[o_dof + d * L.NDOF_D + QFRC_PASSIVE] + dof_d[o_dof + d * L.NDOF_D + QFRC_ACTUATOR]
                 + qfrc_applied[w, d] - dof_d[o_dof + d * L.NDOF_D + QFRC_BIAS])
            dof_d[o_dof + d * L.NDOF_D + QFRC_SMOOTH] = f
            dof_d[o_dof + d * L.NDOF_D + SCRATCH] = f
        inertia.solve(w, sizes, dof_i, qLD, dof_d, SCRATCH)
        for d in range(sizes[L.SIZE_NV]):
            qacc[w, d] = dof_d[o_dof + d * L.NDOF_D + SCRATCH]
        # constraints
        cons.constraint(w, sizes, body_i, jnt_i, dof_i, body_f, jnt_f, dof_f, q_f, opt_f, qpos, qvel, qacc, body_d, dof_d,
                        qM, qLD,
                        geom_i, con_f, con_i, con_n, eq_i, eq_f, eq_d, ten_i, ten_f, wrap_i, wrap_f, ten_d, efc_J, efc_Y,
                        efc_f, efc_n)

    return forward
