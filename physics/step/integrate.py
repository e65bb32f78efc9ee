"""Time integration of one world: semi-implicit Euler (with MuJoCo's implicit joint
damping), the implicit spring-damper integrator, MuJoCo's implicitfast integrator
(physics/step/implicitfast.py) and 4th-order Runge-Kutta.

The implicit variants solve (M + h D + h^2 K) qacc = qfrc_smooth - h K qvel, with D the
joint damping and, for the spring-damper integrator, K the hinge/slide stiffness: the
spring and damper forces already in qfrc_smooth are then integrated implicitly, which
keeps stiff joints stable at large time steps. The PD drives' and cubic limits' stiffness
and damping (physics/smooth/drives.py, physics/smooth/limits.py) join K and D in both variants; Euler
takes this implicit path whenever there are any, whatever its eulerdamp flag.
"""


import functools
import types

from .. import layout as L
from ..runtime.lanes import env_index
from ..model import (DSBL_EULERDAMP, INT_EULER, INT_IMPLICIT_SPRING_DAMPER, INT_IMPLICITFAST, INT_RK4, JNT_FREE,
                     JNT_HINGE, JNT_SLIDE)
from ..runtime.backend import ti
from ..access import make_access
from ..features import ALL, Features
from ..runtime.ti_math import make_math
from ..smooth.inertia import make_inertia
from ..compiler.sensors import STAGE_ACC, STAGE_VEL
from ..sensors import make_sensors
from ..smooth.actuation import make_actuation
from ..step.forward import make_forward
from .implicitfast import make_implicitfast

# what a pass of step() does: a forward() pass alone; a time step; a forward() pass that
# refreshes the position and velocity sensors only, after a step (World.step(refresh=True))
FORWARD, STEP, REFRESH = 0, 1, 2
# the step kernels' ``advance`` argument: FORWARD or STEP for every pass, or STEP_REFRESH:
# the launch's steps, then a REFRESH pass
STEP_REFRESH = 3


@functools.lru_cache(maxsize=None)
def make_integrate(fp, solver: str = "Newton", cone: str = "pyramidal", features: Features = ALL,
                   outline: bool = False, group: str = ""):
    m = make_math(fp)
    A = make_access(fp)
    inertia = make_inertia(fp)
    forward = make_forward(fp, solver, cone, features, outline, group)
    sensors = make_sensors(fp, features.ray_meshes, features.contact_sensors)
    actuation = make_actuation(fp, features.activation)
    # the integrators compiled in: the model's own, unless features holds them all
    rk4 = features.integrates(INT_RK4)
    first_order = features.integrates(INT_EULER, INT_IMPLICIT_SPRING_DAMPER, INT_IMPLICITFAST)
    fast = features.integrates(INT_IMPLICITFAST)
    implicitfast = make_implicitfast(fp, features)

    @ti.func
    def integrate_pos(w, sizes: ti.template(), jnt_i: ti.template(), qpos: ti.template(), dof_s: ti.template(), h):
        """qpos <- qpos (+) dx_vel * h; quaternions move on the sphere by the body-frame
        angular velocity."""
        o = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        for j in range(sizes[L.SIZE_NJNT]):
            jtype = A.jnt_type(jnt_i, j)
            pa = A.jnt_qposadr(jnt_i, j)
            da = A.jnt_dofadr(jnt_i, j)
            if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                qpos[env_index(w, pa)] = qpos[env_index(w, pa)] + h * A.dof_dx_vel(dof_s, o, da)
            else:
                if jtype == JNT_FREE:
                    for t in ti.static(range(3)):
                        qpos[env_index(w, pa + t)] = qpos[env_index(w, pa + t)] + (h * A.dof_dx_vel(dof_s, o, da + t))
                    pa += 3
                    da += 3
                q = m.vec4(qpos[env_index(w, pa)], qpos[env_index(w, pa + 1)], qpos[env_index(w, pa + 2)], qpos[env_index(w, pa + 3)])
                omega = m.vec3(A.dof_dx_vel(dof_s, o, da), A.dof_dx_vel(dof_s, o, da + 1), A.dof_dx_vel(dof_s, o, da + 2))
                q = m.quat_integrate(q, omega, h)
                for t in ti.static(range(4)):
                    qpos[env_index(w, pa + t)] = q[t]

    @ti.func
    def implicit_acc(w, sizes: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), qvel: ti.template(), dof_d: ti.template(), dof_s: ti.template(), qM: ti.template(), qLD: ti.template(), h, with_stiffness, with_damping):
        """The scratch column <- (M + h D + h^2 K)^-1 (qfrc_smooth - h K qvel); refactors qLD.
        D holds the dof damping (if ``with_damping``) and K the joint stiffness (if
        ``with_stiffness``), plus, always, the drives' and cubic limits' implicit terms."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        inertia.copy_sparse(w, sizes, qM, qLD)
        for d in range(sizes[L.SIZE_NV]):
            if with_damping:
                inertia.add_diag(w, sizes, qLD, dof_i, d, h * A.dof_damping(dof_f, md, d))
            A.set_dof_scratch(dof_s, o_s, d, A.dof_qfrc_smooth(dof_d, o_dof, d)
                                                     + A.dof_qfrc_constraint(dof_d, o_dof, d))
        add_drive_and_limit_terms(w, sizes, dof_i, qvel, dof_d, dof_s, qLD, h)
        if with_stiffness:
            for j in range(sizes[L.SIZE_NJNT]):
                jtype = A.jnt_type(jnt_i, j)
                if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                    d = A.jnt_dofadr(jnt_i, j)
                    k = A.jnt_stiffness(jnt_f, mj, j)
                    inertia.add_diag(w, sizes, qLD, dof_i, d, h * h * k)
                    A.set_dof_scratch(dof_s, o_s, d, A.dof_scratch(dof_s, o_s, d) - h * k * qvel[env_index(w, d)])
        inertia.factor(w, sizes, dof_i, qLD)
        inertia.solve(w, sizes, dof_i, qLD, dof_s, "dof_scratch")

    @ti.func
    def add_drive_and_limit_terms(w, sizes: ti.template(), dof_i: ti.template(), qvel: ti.template(),
                                  dof_d: ti.template(), dof_s: ti.template(), qLD: ti.template(), h):
        """The drives' and cubic limits' stiffness K and damping D (per dof, from forward)
        into the implicit solve: h D + h^2 K on the diagonal, -h K qvel on the right."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        for d in range(sizes[L.SIZE_NV]):
            k = A.dof_implicit_stiffness(dof_d, o_dof, d)
            inertia.add_diag(w, sizes, qLD, dof_i, d, h * A.dof_implicit_damping(dof_d, o_dof, d) + h * h * k)
            A.set_dof_scratch(dof_s, o_s, d, A.dof_scratch(dof_s, o_s, d) - h * k * qvel[env_index(w, d)])

    @ti.func
    def has_drive_or_limit_terms(w, sizes: ti.template(), dof_d: ti.template()):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        found = 0
        for d in range(sizes[L.SIZE_NV]):
            if A.dof_implicit_stiffness(dof_d, o_dof, d) != 0 or A.dof_implicit_damping(dof_d, o_dof, d) != 0:
                found = 1
        return found

    @ti.func
    def has_damping(w, sizes: ti.template(), dof_f: ti.template()):
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        found = 0
        for d in range(sizes[L.SIZE_NV]):
            if A.dof_damping(dof_f, md, d) > 0:
                found = 1
        return found

    @ti.func
    def stages(t: ti.template(), advance):
        """forward() passes in a step: RK4 re-evaluates it at three more points."""
        n = 1
        if ti.static(rk4):
            if t.sizes[L.SIZE_INTEGRATOR] == INT_RK4 and advance == STEP:
                n = 4
        return n

    @ti.func
    def stage_begin(w, t: ti.template(), stage, nstage):
        """The state forward() evaluates in ``stage`` of ``nstage``: stage 0 is the current
        one (kept as RK4's start), RK4's later stages advance from the start."""
        if ti.static(rk4):
            o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
            h = A.opt_timestep(t.opt_f, m.param_set(w, t.opt_f), 0)
            nv = t.sizes[L.SIZE_NV]
            if stage == 0:
                if nstage == 4:
                    for i in range(t.sizes[L.SIZE_NQ]):
                        t.qpos_start[env_index(w, i)] = t.qpos[env_index(w, i)]
                    for d in range(nv):
                        A.set_dof_qvel_start(t.dof_s, o_s, d, t.qvel[env_index(w, d)])
            else:
                # classic RK4 tableau: stage i advances from the start by a_i * stage i-1
                a = fp(1.0) if stage == 3 else fp(0.5)
                for d in range(nv):
                    A.set_dof_dx_vel(t.dof_s, o_s, d, a * A.dof_qvel_rk_at(t.dof_s, o_s, d, stage - 1))
                    t.qvel[env_index(w, d)] = (A.dof_qvel_start(t.dof_s, o_s, d)
                                    + h * a * A.dof_qacc_rk_at(t.dof_s, o_s, d, stage - 1))
                for i in range(t.sizes[L.SIZE_NQ]):
                    t.qpos[env_index(w, i)] = t.qpos_start[env_index(w, i)]
                integrate_pos(w, t.sizes, t.jnt_i, t.qpos, t.dof_s, h)

    @ti.func
    def stage_end(w, t: ti.template(), stage, nstage, advance):
        """The sensors read the first pass, the state the step starts from (MuJoCo's RK4
        skips them in its later stages), a REFRESH pass those of positions and velocities;
        RK4 keeps each stage's velocity and acceleration."""
        if ti.static(features.sensors):
            if stage == 0:
                sensors.compute(w, t, STAGE_VEL if advance == REFRESH else STAGE_ACC)
        if ti.static(rk4):
            if nstage == 4:
                o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
                for d in range(t.sizes[L.SIZE_NV]):
                    A.set_dof_qvel_rk_at(t.dof_s, o_s, d, stage, t.qvel[env_index(w, d)])
                    A.set_dof_qacc_rk_at(t.dof_s, o_s, d, stage, t.qacc[env_index(w, d)])

    @ti.func
    def finish(w, t: ti.template()):
        """The state at the end of the step, from its forward() passes."""
        o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        h = A.opt_timestep(t.opt_f, m.param_set(w, t.opt_f), 0)
        # the next step's solver starts from this step's last qacc, in every RK4 stage
        # (MuJoCo's mj_advance): a forward pass alone does not move the warm start
        for d in range(t.sizes[L.SIZE_NV]):
            A.set_dof_qacc_warmstart(t.dof_d, o_dof, d, t.qacc[env_index(w, d)])
        if ti.static(rk4 and first_order):
            if t.sizes[L.SIZE_INTEGRATOR] == INT_RK4:
                finish_rk4(w, t, h)
            else:
                finish_first_order(w, t, h)
        elif ti.static(rk4):
            finish_rk4(w, t, h)
        else:
            finish_first_order(w, t, h)
        # after the integration: implicitfast's actuator derivative reads the step's activations
        if ti.static(features.activation):
            actuation.advance_activations(w, t.sizes, t.act_i, t.act_f, t.act_d, t.opt_f)

    @ti.func
    def step(w, t: ti.template(), advance):
        """One pass of world w (``advance``: FORWARD, STEP or REFRESH): forward() at the
        current state, then for a STEP the integration (so one compiled kernel serves all
        three). ``t`` holds the step kernel's arrays by name (physics/step/pipeline.py)."""
        nstage = stages(t, advance)
        # One dynamic stage loop keeps forward() inlined once: compile time is user-facing.
        for stage in range(nstage):
            stage_begin(w, t, stage, nstage)
            forward.forward(w, t)
            stage_end(w, t, stage, nstage, advance)
        if advance == STEP:
            finish(w, t)

    @ti.func
    def finish_rk4(w, t: ti.template(), h):
        """qvel and qpos from the start of the step by RK4's weighted stages."""
        o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        for d in range(t.sizes[L.SIZE_NV]):
            vel = fp(0.0)
            acc = fp(0.0)
            for stage in ti.static(range(4)):
                weight = fp(1.0 / 6.0) if stage == 0 or stage == 3 else fp(1.0 / 3.0)
                vel += weight * A.dof_qvel_rk_at(t.dof_s, o_s, d, stage)
                acc += weight * A.dof_qacc_rk_at(t.dof_s, o_s, d, stage)
            A.set_dof_dx_vel(t.dof_s, o_s, d, vel)
            t.qvel[env_index(w, d)] = A.dof_qvel_start(t.dof_s, o_s, d) + h * acc
        for i in range(t.sizes[L.SIZE_NQ]):
            t.qpos[env_index(w, i)] = t.qpos_start[env_index(w, i)]
        integrate_pos(w, t.sizes, t.jnt_i, t.qpos, t.dof_s, h)

    @ti.func
    def implicitfast_acc(w, t: ti.template(), h):
        """The scratch column <- (M - h qDeriv)^-1 (qfrc_smooth + qfrc_constraint), the
        drives' and cubic limits' implicit terms added as the other integrators add them;
        refactors qLD."""
        o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        inertia.copy_sparse(w, t.sizes, t.qM, t.qLD)
        for d in range(t.sizes[L.SIZE_NV]):
            A.set_dof_scratch(t.dof_s, o_s, d, A.dof_qfrc_smooth(t.dof_d, o_dof, d)
                                                 + A.dof_qfrc_constraint(t.dof_d, o_dof, d))
        add_drive_and_limit_terms(w, t.sizes, t.dof_i, t.qvel, t.dof_d, t.dof_s, t.qLD, h)
        implicitfast.add_qderiv(w, t, h)
        implicitfast.solve_free_bodies(w, t, h)
        inertia.factor(w, t.sizes, t.dof_i, t.qLD)
        inertia.solve(w, t.sizes, t.dof_i, t.qLD, t.dof_s, "dof_scratch")
        implicitfast.restore_free_bodies(w, t)

    @ti.func
    def finish_first_order(w, t: ti.template(), h):
        """Semi-implicit Euler, with the implicit damping and stiffness terms it takes."""
        o_s = m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S)
        integrator = t.sizes[L.SIZE_INTEGRATOR]
        implicit = integrator == INT_IMPLICIT_SPRING_DAMPER
        eulerdamp = integrator == INT_EULER and (t.sizes[L.SIZE_DISABLE] & DSBL_EULERDAMP) == 0
        done = 0
        if ti.static(fast):
            if integrator == INT_IMPLICITFAST:
                implicitfast_acc(w, t, h)
                done = 1
        if done == 0:
            # drives and cubic limits are implicit whenever the integrator is not RK4
            if (implicit or (eulerdamp and has_damping(w, t.sizes, t.dof_f))
                    or has_drive_or_limit_terms(w, t.sizes, t.dof_d)):
                implicit_acc(w, t.sizes, t.jnt_i, t.dof_i, t.jnt_f, t.dof_f, t.qvel,
                             t.dof_d, t.dof_s, t.qM, t.qLD, h, implicit, implicit or eulerdamp)
            else:
                for d in range(t.sizes[L.SIZE_NV]):
                    A.set_dof_scratch(t.dof_s, o_s, d, t.qacc[env_index(w, d)])
        for d in range(t.sizes[L.SIZE_NV]):
            t.qvel[env_index(w, d)] += h * A.dof_scratch(t.dof_s, o_s, d)
            A.set_dof_dx_vel(t.dof_s, o_s, d, t.qvel[env_index(w, d)])
        integrate_pos(w, t.sizes, t.jnt_i, t.qpos, t.dof_s, h)

    return types.SimpleNamespace(step=step, stages=stages, stage_begin=stage_begin, phases=forward.phases,
                                 stage_end=stage_end, finish=finish)

