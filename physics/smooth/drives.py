"""PD drives on hinge and slide dofs (PhysX's D6 drive, one per axis).

    force = clamp(stiffness (q* - q) + damping (qd* - qd), -forcelimit, forcelimit)

with the targets q* (a qpos value, like a MuJoCo position actuator's ctrl) and qd* set per
env (``World.set_drive_target``). An acceleration drive multiplies both gains by the
dof's inertia 1 / dof_invweight0, so its motion does not depend on the mass behind it.

The force is added to qfrc_actuator. While the drive is below its limit, its stiffness
and damping also go to the dof's implicit stiffness and damping: the Euler and
implicitspringdamper integrators then solve (M + h D + h^2 K) qacc = qfrc - h K qvel,
i.e. they evaluate the drive at the end of the step, which keeps stiff gains stable at
any time step. Saturation is decided on the force that implicit step applies, estimated
for the dof's own inertia and the forces already on it (passive, actuators, applied,
bias; not constraints); a saturated drive is a constant +-limit. ``qfrc_drive`` reports
that applied force (exact for a lone dof without constraints; never beyond the limit). RK4 integrates drives explicitly.

A MuJoCo ``<position kp kv>`` actuator is the same law with ctrl as q*, qd* = 0 and its
forcerange as the limit (``<velocity kv>``: stiffness 0, damping kv, ctrl as qd*);
MuJoCo's Euler integrates it explicitly, so only small kp are stable there. A drive is
the implicit form; both can act on one joint.
"""

import functools
import types

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import DSBL_ACTUATION, INT_RK4, JNT_HINGE, JNT_SLIDE
from ..runtime.backend import ti
from ..access import make_access
from ..runtime.ti_math import make_math

_MINVAL = 1e-15


@functools.lru_cache(maxsize=None)
def make_drives(fp):
    m = make_math(fp)
    A = make_access(fp)

    @ti.func
    def drives(w, sizes: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), dof_f: ti.template(),
               opt_f: ti.template(), qpos: ti.template(), qvel: ti.template(), qfrc_applied: ti.template(),
               dof_d: ti.template()):
        """qfrc_drive and the implicit stiffness and damping of every dof (zero where
        undriven); the drive force is added to qfrc_actuator. Runs after the bias forces
        and before the other contributions to the implicit terms (the cubic limits)."""
        for d in range(sizes[L.SIZE_NV]):
            drive(w, d, sizes, jnt_i, dof_i, dof_f, opt_f, qpos, qvel, qfrc_applied, dof_d)

    @ti.func
    def drive(w, d, sizes: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), dof_f: ti.template(),
              opt_f: ti.template(), qpos: ti.template(), qvel: ti.template(), qfrc_applied: ti.template(),
              dof_d: ti.template()):
        """Dof d's drive (drives())."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        off = (sizes[L.SIZE_DISABLE] & DSBL_ACTUATION) != 0
        # the step the integrator treats the drives implicitly over (RK4: none)
        hi = A.opt_timestep(opt_f, m.param_set(w, opt_f), 0) if sizes[L.SIZE_INTEGRATOR] != INT_RK4 else fp(0.0)
        k = A.dof_drive_stiffness(dof_f, md, d)
        c = A.dof_drive_damping(dof_f, md, d)
        force = fp(0.0)
        applied = fp(0.0)
        ik = fp(0.0)
        ic = fp(0.0)
        j = A.dof_jnt(dof_i, d)
        jtype = A.jnt_type(jnt_i, j)
        if (k != 0 or c != 0) and not off and (jtype == JNT_HINGE or jtype == JNT_SLIDE):
            if A.dof_drive_acceleration(dof_f, md, d) != 0:
                scale = 1 / ti.max(fp(_MINVAL), A.dof_invweight0(dof_f, md, d))
                k *= scale
                c *= scale
            error = A.dof_drive_qpos_target(dof_d, o_dof, d) - qpos[env_index(w, A.jnt_qposadr(jnt_i, j))]
            force = k * error + c * (A.dof_drive_qvel_target(dof_d, o_dof, d) - qvel[env_index(w, d)])
            # The force the implicit step applies, k (e - h v') + c (qd* - v') with v' the
            # velocity after it, is (force - h k v - h (h k + c) other / m) / (1 + h (h k + c)
            # / m) for a lone dof of inertia m under other forces: it, not the force now, decides saturation (else a large step
            # flips a saturated drive from side to side) and is what qfrc_drive reports.
            shrink = 1 + hi * (hi * k + c) * A.dof_invweight0(dof_f, md, d)
            # the dof's other forces so far (no constraints): the drive also holds them
            other = (A.dof_qfrc_passive(dof_d, o_dof, d) + A.dof_qfrc_actuator(dof_d, o_dof, d)
                     + qfrc_applied[env_index(w, d)]
                     - A.dof_qfrc_bias(dof_d, o_dof, d))
            applied = (force - hi * k * qvel[env_index(w, d)]
                       - hi * (hi * k + c) * A.dof_invweight0(dof_f, md, d) * other) / shrink
            limit = A.dof_drive_forcelimit(dof_f, md, d)
            if ti.abs(applied) < limit:
                ik = k
                ic = c
            else:
                force = ti.min(ti.max(applied, -limit), limit)
                applied = force
        A.set_dof_qfrc_drive(dof_d, o_dof, d, applied)
        A.set_dof_qfrc_actuator(dof_d, o_dof, d, A.dof_qfrc_actuator(dof_d, o_dof, d) + force)
        A.set_dof_implicit_stiffness(dof_d, o_dof, d, ik)
        A.set_dof_implicit_damping(dof_d, o_dof, d, ic)

    return types.SimpleNamespace(drives=drives, drive=drive)


@functools.lru_cache(maxsize=None)
def make_dof_column_kernel(fp):
    """A kernel writing one column of chosen envs' rows of the per-env dof table:
    write(dof_d, values (n, nv), env_ids (n,), column, stride), the column named by its
    accessor ("dof_drive_qpos_target"). A kernel, not a host round trip of the whole
    table, because drive targets change every env step and resets come often."""
    A = make_access(fp)
    m = make_math(fp)

    @ti.kernel
    def write(dof_d: ti.types.ndarray(dtype=fp, ndim=1), values: ti.types.ndarray(dtype=fp, ndim=2),
              env_ids: ti.types.ndarray(dtype=ti.i32, ndim=1), column: ti.template(), stride: ti.i32):
        put = ti.static(A.write[column])
        for i, d in ti.ndrange(values.shape[0], values.shape[1]):
            put(dof_d, m.env_offset(env_ids[i], stride), d, values[i, d])

    return write
