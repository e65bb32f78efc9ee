"""forward(): every derived quantity of one world's state, ending with qacc
(MuJoCo's mj_forward): positions, velocities, actuation, bias and
passive forces, the mass matrix and its factorization, and M qacc = qfrc_smooth."""


import functools
import types

from .. import layout as L
from ..collision.driver import make_collision
from ..constraint.rows import make_constraint
from ..features import ALL, Features
from ..runtime.lanes import env_count, env_index, table_lanes
from ..model import DSBL_CONSTRAINT, DSBL_LIMIT
from ..runtime.backend import ti
from ..access import make_access
from ..runtime.ti_math import make_math
from ..smooth.actuation import make_actuation
from ..smooth.bias import make_bias
from ..smooth.drives import make_drives
from ..smooth.inertia import make_inertia
from ..smooth.kinematics import make_kinematics
from ..smooth.limits import make_limits
from ..smooth.passive import make_passive
from ..smooth.tendons import make_tendons
from ..step.outline import make_outline
from ..step.schedule import DOWN, UP, Phase

# where the collision stage finds the body poses in body_d (its generic pose input)
XPOS, XQUAT = L.BODY_D.start("xpos"), L.BODY_D.start("xquat")


@functools.lru_cache(maxsize=None)
def make_forward(fp, solver: str = "Newton", cone: str = "pyramidal", features: Features = ALL,
                 outline: bool = False, group: str = ""):
    """forward() with only the parts ``features`` names compiled in (physics/features.py);
    ``outline`` compiles its stages as functions of their own (physics/step/outline.py).
    ``group``: the staged schedule's constraint solve by a lane group per env, its lanes
    run as a loop ("loop") or as a GPU block's threads ("block"); "": a thread per env."""
    m = make_math(fp)
    A = make_access(fp)
    kin = make_kinematics(fp)
    inertia = make_inertia(fp)
    bias = make_bias(fp)
    passive = make_passive(fp, features)
    drv = make_drives(fp)
    lim = make_limits(fp)
    act = make_actuation(fp, features.activation)
    cons = make_constraint(fp, solver, cone, features, group == "block")
    ten = make_tendons(fp)
    col = make_collision(fp, features.colliders)

    call = make_outline(fp, outline).call

    @ti.func
    def joints(t: ti.template()):
        return t.sizes[L.SIZE_NJNT]

    @ti.func
    def bodies(t: ti.template()):
        return t.sizes[L.SIZE_NBODY]

    @ti.func
    def tendons(t: ti.template()):
        return t.sizes[L.SIZE_NTENDON]

    @ti.func
    def hinge_angle(w, j, t: ti.template()):
        kin.hinge_half_angle(w, j, t.sizes, t.jnt_i, t.q_f, t.qpos, t.jnt_d)

    @ti.func
    def body_frames(w, t: ti.template()):
        if ti.static(not features.contacts):
            A.set_ncon(t.con_n, w, 0)
            A.set_ncon_overflow(t.con_n, w, 0)
        kin.body_chain(w, t.sizes, t.body_i, t.body_f, t.jnt_i, t.jnt_f, t.q_f, t.qpos, t.body_d, t.jnt_d)

    @ti.func
    def tree_frame(w, b, t: ti.template()):
        if ti.static(not features.contacts):
            if b == 0:
                A.set_ncon(t.con_n, w, 0)
                A.set_ncon_overflow(t.con_n, w, 0)
        kin.tree_frame(w, b, t.sizes, t.body_i, t.body_f, t.jnt_i, t.jnt_f, t.q_f, t.qpos, t.body_d, t.jnt_d)

    @ti.func
    def subtree_com(w, t: ti.template()):
        kin.subtree_com(w, t.sizes, t.body_i, t.body_f, t.body_d)

    @ti.func
    def subtree_own(w, b, t: ti.template()):
        kin.subtree_own(w, b, t.sizes, t.body_f, t.body_d)

    @ti.func
    def subtree_gather(w, b, t: ti.template()):
        kin.subtree_gather(w, b, t.sizes, t.body_i, t.body_d)

    @ti.func
    def subtree_mean(w, b, t: ti.template()):
        kin.subtree_mean(w, b, t.sizes, t.body_d)

    @ti.func
    def cinert(w, b, t: ti.template()):
        kin.body_cinert(w, b, t.sizes, t.body_i, t.body_f, t.body_d)

    @ti.func
    def cdof(w, j, t: ti.template()):
        kin.joint_cdof(w, j, t.sizes, t.body_i, t.jnt_i, t.body_d, t.jnt_d, t.dof_d)

    @ti.func
    def tendon(w, k, t: ti.template()):
        ten.tendon_state(w, k, t.sizes, t.body_i, t.jnt_i, t.ten_i, t.wrap_i, t.wrap_f, t.qpos, t.qvel, t.body_d,
                         t.dof_d, t.ten_d)

    @ti.func
    def posed_geoms(t: ti.template()):
        # geom poses feed only the pair tests (rendering computes its own): without pairs
        # (contacts disabled, or no geom that can touch another) they are not needed
        n = 0
        if t.sizes[L.SIZE_NPAIR] > 0:
            n = t.sizes[L.SIZE_NGEOM]
        return n

    @ti.func
    def geom_pose(w, g, t: ti.template()):
        o_body = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        col.geom_pose(w, g, t.geom_i, t.geom_f, t.body_d, o_body, L.NBODY_D, XPOS, XQUAT, t.geom_x,
                      ti.static(table_lanes()))

    @ti.func
    def pairs(t: ti.template()):
        return t.sizes[L.SIZE_NPAIR]

    @ti.func
    def broad_phase(w, p, t: ti.template()):
        col.test_pair(w, p, t.pair_i, t.pair_f, t.geom_i, t.geom_f, t.geom_x, t.pair_hit)

    @ti.func
    def contacts(w, t: ti.template()):
        col.collide_pairs(w, t.sizes[L.SIZE_NPAIR], t.pair_i, t.pair_f, t.geom_i, t.geom_f, t.geom_x, t.con_f,
                          t.con_i, t.con_n)

    @ti.func
    def pair_contacts(w, p, t: ti.template()):
        col.pair_contacts(w, p, p * env_count(t.qvel) + w, t.pair_i, t.pair_f, t.geom_i, t.geom_f, t.geom_x,
                          t.pair_hit, t.pair_con_f, t.pair_con_i, t.pair_con_n)

    @ti.func
    def contact_table(w, t: ti.template()):
        col.gather_contacts(w, t.sizes[L.SIZE_NPAIR], env_count(t.qvel), t.pair_con_f, t.pair_con_i, t.pair_con_n,
                            t.con_f, t.con_i, t.con_n)

    @ti.func
    def mass_matrix(w, t: ti.template()):
        inertia.crb(w, t.sizes, t.body_i, t.dof_i, t.dof_f, t.body_d, t.dof_d, t.qM)

    @ti.func
    def body_motion(w, b, t: ti.template()):
        """Body b's velocity, acceleration and own force (from its parent's), and its own
        composite inertia: one thread of a pass from the root."""
        kin.tree_velocity(w, b, t.sizes, t.body_i, t.jnt_i, t.dof_i, t.qvel, t.body_d, t.dof_d)
        bias.tree_acceleration(w, b, t.sizes, t.body_i, t.opt_f, t.qvel, t.body_d, t.dof_d)
        inertia.crb_own(w, b, t.sizes, t.body_d)

    @ti.func
    def inertia_and_forces(w, b, t: ti.template()):
        """Body b's composite inertia and force, its children's added: one thread of a pass
        from the leaves."""
        inertia.crb_gather(w, b, t.sizes, t.body_i, t.body_d)
        bias.force_gather(w, b, t.sizes, t.body_i, t.body_d)

    @ti.func
    def mass_row(w, i, t: ti.template()):
        inertia.mass_row_of(w, i, t.sizes, t.dof_i, t.dof_f, t.body_d, t.dof_d, t.qM)

    @ti.func
    def mass_entries(t: ti.template()):
        return t.sizes[L.SIZE_M_STRIDE]

    @ti.func
    def copy_mass_entry(w, a, t: ti.template()):
        inertia.copy_entry(w, a, t.sizes, t.qM, t.qLD)

    @ti.func
    def factor_mass(w, t: ti.template()):
        inertia.factor(w, t.sizes, t.dof_i, t.qLD)

    @ti.func
    def smooth_forces(w, t: ti.template()):
        """Velocities and the smooth forces: passive, actuation and bias."""
        kin.com_vel(w, t.sizes, t.body_i, t.jnt_i, t.dof_i, t.qvel, t.body_d, t.dof_d)
        passive_and_actuation(w, t)
        bias.rne(w, t.sizes, t.body_i, t.dof_i, t.opt_f, t.qvel, t.body_d, t.dof_d)

    @ti.func
    def dof_bias(w, d, t: ti.template()):
        bias.dof_bias_of(w, d, t.sizes, t.dof_i, t.body_d, t.dof_d)

    @ti.func
    def passive_and_actuation(w, t: ti.template()):
        passive.passive(w, t.sizes, t.body_i, t.jnt_i, t.dof_i, t.body_f, t.jnt_f, t.dof_f, t.q_f, t.ten_f, t.opt_f,
                        t.qpos, t.qvel, t.body_d, t.ten_d, t.dof_d)
        act.actuation(w, t.sizes, t.jnt_i, t.act_i, t.act_f, t.opt_f, t.qpos, t.qvel,
                      t.ctrl, t.ten_d, t.act_d, t.dof_d)
        if ti.static(features.tendons):
            ten.tendon_actuation(w, t.sizes, t.act_i, t.act_f, t.act_d, t.ten_d, t.dof_d)
        if t.sizes[L.SIZE_GRAVCOMP] != 0:
            act.gravity_compensation(w, t.sizes, t.jnt_i, t.dof_d)
        if ti.static(features.joint_actuator_limits):
            act.clamp_joint_forces(w, t.sizes, t.jnt_i, t.jnt_f, t.dof_d)

    # PD drives (after the forces they hold), then cubic limits: forces and the terms the
    # integrator treats implicitly
    @ti.func
    def drive(w, d, t: ti.template()):
        drv.drive(w, d, t.sizes, t.jnt_i, t.dof_i, t.dof_f, t.opt_f, t.qpos, t.qvel, t.qfrc_applied, t.dof_d)

    @ti.func
    def cubic_limit(w, j, t: ti.template()):
        if (t.sizes[L.SIZE_DISABLE] & (DSBL_CONSTRAINT | DSBL_LIMIT)) == 0:
            lim.cubic_limit_of(w, j, t.sizes, t.jnt_i, t.jnt_f, t.qpos, t.dof_d)

    @ti.func
    def dofs(t: ti.template()):
        return t.sizes[L.SIZE_NV]

    @ti.func
    def smooth_total(w, d, t: ti.template()):
        """qfrc_smooth of dof d, and the right-hand side of M qacc = qfrc_smooth."""
        o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
        f = (A.dof_qfrc_passive(t.dof_d, o_dof, d) + A.dof_qfrc_actuator(t.dof_d, o_dof, d)
             + t.qfrc_applied[env_index(w, d)] - A.dof_qfrc_bias(t.dof_d, o_dof, d))
        A.set_dof_qfrc_smooth(t.dof_d, o_dof, d, f)
        A.set_dof_scratch(t.dof_s, m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S), d, f)

    @ti.func
    def smooth_solve(w, t: ti.template()):
        inertia.solve(w, t.sizes, t.dof_i, t.qLD, t.dof_s, "dof_scratch")

    @ti.func
    def smooth_acceleration(w, d, t: ti.template()):
        t.qacc[env_index(w, d)] = A.dof_scratch(t.dof_s, m.env_start(w, t.sizes, L.SIZE_DOFS_STRIDE, L.NDOF_S), d)

    @ti.func
    def constraints_inside(w, t: ti.template()):
        cons.rows(w, t)
        cons.solve(w, t)

    @ti.func
    def constraints(w, t: ti.template()):
        call((constraints_inside,), w, t)

    # the constraint stage's parts for the staged schedule: the rows and the solver a
    # thread per env, but a contact's rows a thread per env and contact (the env's rows
    # thread places them), the rows' soft parameters, cones and references a thread per row
    # (of the capacity; an env's rows past its count skip), J^T f a thread per dof
    @ti.func
    def constraint_rows(w, t: ti.template()):
        cons.rows_apart(w, t)

    @ti.func
    def contact_capacity(t: ti.template()):
        return t.con_i.shape[1]

    @ti.func
    def contact_row(w, c, t: ti.template()):
        cons.contact_row(w, c, t)

    @ti.func
    def row_capacity(t: ti.template()):
        return t.sizes[L.SIZE_NEFC]

    @ti.func
    def soft_row(w, i, t: ti.template()):
        cons.soft_row(w, i, t)

    @ti.func
    def cone_row(w, i, t: ti.template()):
        cons.cone_row(w, i, t)

    @ti.func
    def reference_row(w, i, t: ti.template()):
        cons.reference_row(w, i, t)

    @ti.func
    def constraint_solve(w, t: ti.template()):
        cons.float32_rows(w, t)
        cons.forces(w, t)

    @ti.func
    def group_solve(w, me, t: ti.template()):
        cons.group_forces(w, me, t)

    @ti.func
    def constraint_force(w, d, t: ti.template()):
        cons.constraint_force(w, d, t)

    @ti.func
    def constraint_acceleration(w, t: ti.template()):
        cons.acceleration(w, t)

    phases = (Phase("hinge_angles", hinge_angle, joints),
              Phase("body_frames", body_frames, staged=(Phase("body_frames", tree_frame, bodies, tree=DOWN),)),
              Phase("subtree_com", subtree_com, staged=(Phase("subtree_own", subtree_own, bodies),
                                                        Phase("subtree_com", subtree_gather, bodies, tree=UP),
                                                        Phase("subtree_mean", subtree_mean, bodies))),
              Phase("cinert", cinert, bodies),
              Phase("cdof", cdof, joints),
              *((Phase("tendons", tendon, tendons),) if features.tendons else ()),
              # one thread per env tests each pair's bounding spheres as it comes to the pair;
              # staged, every pair of every env is tested at once, its outcome kept in pair_hit
              *((Phase("geom_poses", geom_pose, posed_geoms),
                 Phase("contacts", contacts, staged=(Phase("broad_phase", broad_phase, pairs),
                                                     Phase("pair_contacts", pair_contacts, pairs),
                                                     Phase("contact_table", contact_table))))
                if features.contacts else ()),
              # the smooth forces before the mass matrix, which neither reads nor writes what
              # the other does: so the staged schedule walks the tree once from the root for
              # the velocities and accelerations and once from the leaves for the composite
              # inertias and the bias forces
              Phase("smooth_forces", smooth_forces, staged=(
                  Phase("body_motion", body_motion, bodies, tree=DOWN),
                  Phase("passive_and_actuation", passive_and_actuation))),
              Phase("mass_matrix", mass_matrix, staged=(Phase("inertia_and_forces", inertia_and_forces, bodies, tree=UP),
                                                        Phase("mass_rows", mass_row, dofs),
                                                        Phase("bias", dof_bias, dofs))),
              Phase("mass_copy", copy_mass_entry, mass_entries),
              Phase("mass_factor", factor_mass),
              Phase("drives", drive, dofs),
              *((Phase("cubic_limits", cubic_limit, joints),) if features.cubic_limits else ()),
              Phase("smooth_total", smooth_total, dofs),
              Phase("smooth_solve", smooth_solve),
              Phase("smooth_acceleration", smooth_acceleration, dofs),
              Phase("constraints", constraints, staged=(
                  Phase("constraint_rows", constraint_rows),
                  *((Phase("contact_rows", contact_row, contact_capacity),) if features.contacts else ()),
                  Phase("soft_rows", soft_row, row_capacity),
                  *((Phase("cone_rows", cone_row, row_capacity),) if features.contacts else ()),
                  Phase("reference_rows", reference_row, row_capacity),
                  Phase("constraint_solve", group_solve, group=True) if group else Phase("constraint_solve",
                                                                                          constraint_solve),
                  Phase("constraint_forces", constraint_force, dofs),
                  *((Phase("constraint_accelerations", constraint_acceleration),)
                    if solver == "PGS" or features.noslip else ()))))

    @ti.func
    def forward(w, t: ti.template()):
        """Every derived quantity of world w's state: the phases in order (the fused
        schedule, physics/step/schedule.py). ``t`` holds the step kernel's arrays by name
        (physics/step/pipeline.py); each stage is given those it reads and writes. On CPU
        the constraints (rows and solver, the largest part) are compiled as a function of
        their own (physics/step/outline.py). Splitting the rest off too, in two more
        functions, compiled no faster and cost small models more per step."""
        for p in ti.static(phases):
            if ti.static(p.per_env):
                p.run(w, t)
            elif ti.static(p.tree == UP):
                n = p.count(t)
                for e in range(n):
                    p.run(w, n - 1 - e, t)
            else:
                for e in range(p.count(t)):
                    p.run(w, e, t)

    return types.SimpleNamespace(forward=forward, phases=phases)
