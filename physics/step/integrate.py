"""Time integration of one world: semi-implicit Euler (with MuJoCo's implicit joint
damping), the implicit spring-damper integrator, and 4th-order Runge-Kutta.

The implicit variants solve (M + h D + h^2 K) qacc = qfrc_smooth - h K qvel, with D the
joint damping and, for the spring-damper integrator, K the hinge/slide stiffness: the
spring and damper forces already in qfrc_smooth are then integrated implicitly, which
keeps stiff joints stable at large time steps. The PD drives' and cubic limits' stiffness
and damping (physics/smooth/drives.py, physics/smooth/limits.py) join K and D in both variants; Euler
takes this implicit path whenever there are any, whatever its eulerdamp flag.
"""


import functools

from .. import layout as L
from ..model import DSBL_EULERDAMP, INT_EULER, INT_IMPLICIT_SPRING_DAMPER, INT_RK4, JNT_FREE, JNT_HINGE, JNT_SLIDE
from ..runtime.backend import ti
from ..runtime.ti_math import make_math
from ..smooth.inertia import make_inertia
from ..step.forward import make_forward

QFRC_SMOOTH, SCRATCH, DX_VEL = L.DOF_D["qfrc_smooth"][0], L.DOF_D["scratch"][0], L.DOF_D["dx_vel"][0]
QFRC_CONSTRAINT, QACC_WARMSTART = L.DOF_D["qfrc_constraint"][0], L.DOF_D["qacc_warmstart"][0]
IMPLICIT_K, IMPLICIT_D = L.DOF_D["implicit_stiffness"][0], L.DOF_D["implicit_damping"][0]
QACC_RK, QVEL_RK, QVEL_START = L.DOF_D["qacc_rk"][0], L.DOF_D["qvel_rk"][0], L.DOF_D["qvel_start"][0]
TIMESTEP = L.OPT_F["timestep"][0]
DAMPING = L.DOF_F["damping"][0]
J_STIFFNESS = L.JNT_F["stiffness"][0]


@functools.lru_cache(maxsize=None)
def make_integrate(fp, solver: str = "Newton", cone: str = "pyramidal", convex: bool = False):
    m = make_math(fp)
    inertia = make_inertia(fp)
    forward = make_forward(fp, solver, cone, convex)

    @ti.func
    def integrate_pos(w, sizes: ti.template(), jnt_i: ti.template(), qpos: ti.template(), dof_d: ti.template(), vcol: ti.template(), h):
        """qpos <- qpos (+) vel * h, vel read from column vcol of dof_d; quaternions move on
        the sphere by the body-frame angular velocity."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for j in range(sizes[L.SIZE_NJNT]):
            jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
            pa = jnt_i[j * L.NJNT_I + L.JNT_QPOSADR]
            da = jnt_i[j * L.NJNT_I + L.JNT_DOFADR]
            if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                qpos[w, pa] += h * dof_d[o_dof + da * L.NDOF_D + vcol]
            else:
                if jtype == JNT_FREE:
                    for t in ti.static(range(3)):
                        qpos[w, pa + t] += h * dof_d[o_dof + (da + t) * L.NDOF_D + vcol]
                    pa += 3
                    da += 3
                q = m.vec4(qpos[w, pa], qpos[w, pa + 1], qpos[w, pa + 2], qpos[w, pa + 3])
                omega = m.vec3(dof_d[o_dof + da * L.NDOF_D + vcol], dof_d[o_dof + (da + 1) * L.NDOF_D + vcol],
                               dof_d[o_dof + (da + 2) * L.NDOF_D + vcol])
                q = m.quat_integrate(q, omega, h)
                for t in ti.static(range(4)):
                    qpos[w, pa + t] = q[t]

    @ti.func
    def implicit_acc(w, sizes: ti.template(), jnt_i: ti.template(), dof_i: ti.template(), jnt_f: ti.template(), dof_f: ti.template(), qvel: ti.template(), dof_d: ti.template(), qM: ti.template(), qLD: ti.template(), h, with_stiffness, with_damping):
        """dof_d[:, SCRATCH] <- (M + h D + h^2 K)^-1 (qfrc_smooth - h K qvel); refactors qLD.
        D holds the dof damping (if ``with_damping``) and K the joint stiffness (if
        ``with_stiffness``), plus, always, the drives' and cubic limits' implicit terms."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        inertia.copy_sparse(w, sizes, qM, qLD)
        for d in range(sizes[L.SIZE_NV]):
            if with_damping:
                inertia.add_diag(w, sizes, qLD, dof_i, d, h * dof_f[md + d * L.NDOF_F + DAMPING])
            dof_d[o_dof + d * L.NDOF_D + SCRATCH] = (dof_d[o_dof + d * L.NDOF_D + QFRC_SMOOTH]
                                                     + dof_d[o_dof + d * L.NDOF_D + QFRC_CONSTRAINT])
        add_drive_and_limit_terms(w, sizes, dof_i, qvel, dof_d, qLD, h)
        if with_stiffness:
            for j in range(sizes[L.SIZE_NJNT]):
                jtype = jnt_i[j * L.NJNT_I + L.JNT_TYPE]
                if jtype == JNT_HINGE or jtype == JNT_SLIDE:
                    d = jnt_i[j * L.NJNT_I + L.JNT_DOFADR]
                    k = jnt_f[mj + j * L.NJNT_F + J_STIFFNESS]
                    inertia.add_diag(w, sizes, qLD, dof_i, d, h * h * k)
                    dof_d[o_dof + d * L.NDOF_D + SCRATCH] = dof_d[o_dof + d * L.NDOF_D + SCRATCH] - h * k * qvel[w, d]
        inertia.factor(w, sizes, dof_i, qLD)
        inertia.solve(w, sizes, dof_i, qLD, dof_d, SCRATCH)

    @ti.func
    def add_drive_and_limit_terms(w, sizes: ti.template(), dof_i: ti.template(), qvel: ti.template(),
                                  dof_d: ti.template(), qLD: ti.template(), h):
        """The drives' and cubic limits' stiffness K and damping D (per dof, from forward)
        into the implicit solve: h D + h^2 K on the diagonal, -h K qvel on the right."""
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        for d in range(sizes[L.SIZE_NV]):
            k = dof_d[o_dof + d * L.NDOF_D + IMPLICIT_K]
            inertia.add_diag(w, sizes, qLD, dof_i, d, h * dof_d[o_dof + d * L.NDOF_D + IMPLICIT_D] + h * h * k)
            dof_d[o_dof + d * L.NDOF_D + SCRATCH] = dof_d[o_dof + d * L.NDOF_D + SCRATCH] - h * k * qvel[w, d]

    @ti.func
    def has_drive_or_limit_terms(w, sizes: ti.template(), dof_d: ti.template()):
        o_dof = m.env_start(w, sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        found = 0
        for d in range(sizes[L.SIZE_NV]):
            if dof_d[o_dof + d * L.NDOF_D + IMPLICIT_K] != 0 or dof_d[o_dof + d * L.NDOF_D + IMPLICIT_D] != 0:
                found = 1
        return found

    @ti.func
    def has_damping(w, sizes: ti.template(), dof_f: ti.template()):
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        found = 0
        for d in range(sizes[L.SIZE_NV]):
            if dof_f[md + d * L.NDOF_F + DAMPING] > 0:
                found = 1
        return found

    @ti.func
    def step(w, t: ti.template(), advance):
        """One time step of world w: forward() at the current state, then integration;
        with ``advance`` 0, forward() alone (so one compiled kernel serves both). ``t``
        holds the step kernel's arrays by name (physics/step/pipeline.py)."""
        o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        h = t.opt_f[w % t.opt_f.shape[0], 0, TIMESTEP]
        nv = t.sizes[L.SIZE_NV]
        integrator = t.sizes[L.SIZE_INTEGRATOR]
        # Stage 0 is the current state; RK4 re-evaluates forward() at three more points.
        # One dynamic stage loop keeps forward() inlined once: compile time is user-facing.
        nstage = 4 if integrator == INT_RK4 and advance != 0 else 1
        for stage in range(nstage):
            if stage == 0:
                if nstage == 4:
                    for i in range(t.sizes[L.SIZE_NQ]):
                        t.qpos_start[w, i] = t.qpos[w, i]
                    for d in range(nv):
                        t.dof_d[o_dof + d * L.NDOF_D + QVEL_START] = t.qvel[w, d]
            else:
                # classic RK4 tableau: stage i advances from the start by a_i * stage i-1
                a = fp(1.0) if stage == 3 else fp(0.5)
                for d in range(nv):
                    t.dof_d[o_dof + d * L.NDOF_D + DX_VEL] = (
                        a * t.dof_d[o_dof + d * L.NDOF_D + QVEL_RK + stage - 1])
                    t.qvel[w, d] = (t.dof_d[o_dof + d * L.NDOF_D + QVEL_START]
                                         + h * a * t.dof_d[o_dof + d * L.NDOF_D + QACC_RK + stage - 1])
                for i in range(t.sizes[L.SIZE_NQ]):
                    t.qpos[w, i] = t.qpos_start[w, i]
                integrate_pos(w, t.sizes, t.jnt_i, t.qpos, t.dof_d, DX_VEL, h)
            forward(w, t)
            if nstage == 4:
                for d in range(nv):
                    t.dof_d[o_dof + d * L.NDOF_D + QVEL_RK + stage] = t.qvel[w, d]
                    t.dof_d[o_dof + d * L.NDOF_D + QACC_RK + stage] = t.qacc[w, d]
        if advance != 0:
            # the next step's solver starts from this step's last qacc, in every RK4 stage
            # (MuJoCo's mj_advance): a forward pass alone does not move the warm start
            for d in range(nv):
                t.dof_d[o_dof + d * L.NDOF_D + QACC_WARMSTART] = t.qacc[w, d]
        if advance == 0:
            pass
        elif integrator == INT_RK4:
            for d in range(nv):
                vel = fp(0.0)
                acc = fp(0.0)
                for stage in ti.static(range(4)):
                    weight = fp(1.0 / 6.0) if stage == 0 or stage == 3 else fp(1.0 / 3.0)
                    vel += weight * t.dof_d[o_dof + d * L.NDOF_D + QVEL_RK + stage]
                    acc += weight * t.dof_d[o_dof + d * L.NDOF_D + QACC_RK + stage]
                t.dof_d[o_dof + d * L.NDOF_D + DX_VEL] = vel
                t.qvel[w, d] = t.dof_d[o_dof + d * L.NDOF_D + QVEL_START] + h * acc
            for i in range(t.sizes[L.SIZE_NQ]):
                t.qpos[w, i] = t.qpos_start[w, i]
            integrate_pos(w, t.sizes, t.jnt_i, t.qpos, t.dof_d, DX_VEL, h)
        else:
            implicit = integrator == INT_IMPLICIT_SPRING_DAMPER
            eulerdamp = integrator == INT_EULER and (t.sizes[L.SIZE_DISABLE] & DSBL_EULERDAMP) == 0
            # drives and cubic limits are implicit whenever the integrator is not RK4
            if (implicit or (eulerdamp and has_damping(w, t.sizes, t.dof_f))
                    or has_drive_or_limit_terms(w, t.sizes, t.dof_d)):
                implicit_acc(w, t.sizes, t.jnt_i, t.dof_i, t.jnt_f, t.dof_f, t.qvel,
                             t.dof_d, t.qM, t.qLD, h, implicit, implicit or eulerdamp)
            else:
                for d in range(nv):
                    t.dof_d[o_dof + d * L.NDOF_D + SCRATCH] = t.qacc[w, d]
            for d in range(nv):
                t.qvel[w, d] += h * t.dof_d[o_dof + d * L.NDOF_D + SCRATCH]
                t.dof_d[o_dof + d * L.NDOF_D + DX_VEL] = t.qvel[w, d]
            integrate_pos(w, t.sizes, t.jnt_i, t.qpos, t.dof_d, DX_VEL, h)

    return step

