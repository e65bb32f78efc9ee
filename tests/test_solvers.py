"""The constraint solvers (PGS, CG, Newton) and friction cones (pyramidal, elliptic)
against mujoco, float64.

At a given state every solver minimises the same strictly convex problem, so run to
convergence each agrees with mujoco's Newton solver to how far it converges: Newton to
~1e-12 relative (the tests allow 1e-9), CG to ~1e-7 (allowed 1e-6: conjugate gradients
stall on the kinks of the piecewise-quadratic cost), PGS to ~2e-6 in 5000 sweeps
(allowed 1e-5: Gauss-Seidel converges linearly). PGS solves elliptic cones by MuJoCo's block update (physics/constraint/pgs_cone.py). The scene has contacts of
every condim (1, 3, 4, 6), friction loss, joint limits and a joint equality, so every
row type and cost zone of the primal solvers takes part.
"""

import mujoco
import numpy as np
import pytest
from conftest import gym_asset
from oracle import rel_err
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

SCENE = """<mujoco>
  <option timestep="0.002" cone="{cone}" impratio="{impratio}"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="0.8 0.02 0.01"/>
    <body pos="0 0 0.05"><freejoint/><geom type="box" size="0.1 0.08 0.05" condim="3"/></body>
    <body pos="0.4 0 0.1"><freejoint/><geom type="sphere" size="0.1" condim="6" friction="0.9 0.05 0.02"/></body>
    <body pos="-0.4 0 0.05"><freejoint/><geom type="capsule" size="0.05 0.1" euler="0 90 0" condim="4"/></body>
    <body name="ball" pos="0 0.5 0.08"><freejoint/><geom name="ball" type="sphere" size="0.08"/></body>
    <body pos="0 -0.6 0.5">
      <joint name="h1" type="hinge" axis="0 1 0" range="-30 30" frictionloss="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body pos="0.3 0 0">
        <joint name="h2" type="hinge" axis="0 1 0" range="-10 10" frictionloss="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
  <contact>
    <exclude body1="world" body2="ball"/>
    <pair geom1="floor" geom2="ball" condim="1"/>
  </contact>
  <equality><joint joint1="h2" joint2="h1" polycoef="0 0.5 0 0 0" solref="0.05 1"/></equality>
</mujoco>"""

CONFIGS = [("Newton", "pyramidal"), ("CG", "pyramidal"), ("PGS", "pyramidal"), ("Newton", "elliptic"),
           ("CG", "elliptic"), ("PGS", "elliptic")]
MJ_CONE = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}


def scene_states(xml, n=3, seed=0):
    """States with the bodies in contact and sliding, from a mujoco rollout with kicks."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        d.qvel[:] += rng.normal(0, 0.5, mjm.nv)
        for _ in range(40):
            mujoco.mj_step(mjm, d)
        out.append((d.qpos.copy(), d.qvel.copy()))
    return out


def converged_mujoco(xml):
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjm.opt.solver, mjm.opt.iterations, mjm.opt.tolerance = mujoco.mjtSolver.mjSOL_NEWTON, 1000, 1e-15
    return mjm


@pytest.mark.slow
@pytest.mark.parametrize("solver,cone", CONFIGS)
def test_scene_forces_match_mujoco(solver, cone, device):
    xml = SCENE.format(cone=cone, impratio=3)
    states = scene_states(xml)
    mjm = converged_mujoco(xml)
    model = load_mjcf_string(xml).with_options(solver=solver, iterations=1000 if solver != "PGS" else 5000,
                                               tolerance=1e-15)
    world = physics.World(model, num_envs=len(states), device=device, precision="float64")
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    dims = set()
    bound = {"Newton": 1e-9, "CG": 1e-6, "PGS": 1e-5}[solver]
    for e, (qpos, qvel) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, d)
        dims.update(int(c) for c in d.contact.dim)
        nefc = d.nefc
        assert world.get("nefc")[e] == nefc
        assert np.array_equal(world.get("efc_type")[e, :nefc], d.efc_type)
        # the soft model's parameters are exact; the solution is within the tolerance
        for key in ("R", "aref", "D"):
            ours = 1 / world.get("efc_R")[e, :nefc] if key == "D" else world.get("efc_" + key)[e, :nefc]
            assert rel_err(ours, getattr(d, "efc_" + key)) <= 1e-12, (key, e)
        for key in ("qacc", "qfrc_constraint"):
            assert rel_err(world.get(key)[e], getattr(d, key)) <= bound, (key, e)
        assert rel_err(world.get("efc_force")[e, :nefc], d.efc_force) <= bound, e
        if solver != "PGS":  # each row's state (mjtConstraintState) is the zone its force lies in
            state, force = world.get("efc_state")[e, :nefc], world.get("efc_force")[e, :nefc]
            assert np.all(force[state == 0] == 0)
            linear = (state == 2) | (state == 3)
            assert linear.any() and np.allclose(np.abs(force[linear]), d.efc_frictionloss[linear], rtol=1e-12)
    assert dims >= {1, 3, 4, 6}


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["PGS", "CG"])
def test_iterations_as_mujoco_on_humanoid_states(solver, device):
    """Gymnasium's Humanoid solves with PGS: on the same states and warm starts (16 envs of
    random controls, 40 steps), each solve makes MuJoCo's number of sweeps and lands on its
    forces; CG too. MuJoCo 4's PGS visits the rows in a shuffled order, steps with Nesterov
    momentum and measures its progress in units of the touched trees' inertia, and its CG
    takes Hager-Zhang directions: the textbook PGS sweep took 33% more sweeps on these
    states and stopped on forces 1e-3 apart, and Polak-Ribiere CG 6% fewer iterations."""
    path = gym_asset("humanoid")
    mjm = mujoco.MjModel.from_xml_path(path)
    mjm.opt.solver = {"PGS": mujoco.mjtSolver.mjSOL_PGS, "CG": mujoco.mjtSolver.mjSOL_CG}[solver]
    d = mujoco.MjData(mjm)
    n = 16
    rng = np.random.default_rng(5)
    world = physics.World(physics.load_model(path).with_options(solver=solver), num_envs=n, device=device,
                          precision="float64")
    qpos = np.tile(mjm.qpos0, (n, 1)) + rng.uniform(-0.05, 0.05, (n, mjm.nq))
    world.set_state(qpos=qpos, qvel=rng.normal(0, 0.5, (n, mjm.nv)))
    same = total = 0
    worst = 0.0
    for _ in range(40):
        world.set_ctrl(rng.uniform(-0.4, 0.4, (n, mjm.nu)))
        world.step()
        world.forward()
        q, v, warm = world.get("qpos"), world.get("qvel"), world.get("qacc_warmstart")
        niter, nefc, force, ctrl = world.get("solver_niter"), world.get("nefc"), world.get("efc_force"), world.get("ctrl")
        for i in range(n):
            d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = q[i], v[i], warm[i], ctrl[i]
            mujoco.mj_forward(mjm, d)
            assert d.nefc == nefc[i]
            if d.nefc == 0:
                continue
            total += 1
            if d.solver_niter[0] == niter[i]:
                same += 1
                worst = max(worst, float(np.max(np.abs(force[i][: d.nefc] - d.efc_force[: d.nefc]))
                                         / max(1.0, np.max(np.abs(d.efc_force[: d.nefc])))))
    assert total >= 200 and same >= total - 1, (same, total)  # one sweep more or less at round-off's edge
    assert worst < 1e-9, worst


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_newton_converges_in_few_iterations(cone, device):
    """At mujoco's default tolerance Newton needs a handful of iterations on humanoid
    states where PGS needs many, and lands on the converged solution."""
    path = gym_asset("humanoid")
    mjm = mujoco.MjModel.from_xml_path(path)
    mjm.opt.cone = MJ_CONE[cone]
    d = mujoco.MjData(mjm)
    rng = np.random.default_rng(3)
    states = []
    for _ in range(4):
        for _ in range(60):
            d.ctrl[:] = rng.uniform(-0.4, 0.4, mjm.nu)
            mujoco.mj_step(mjm, d)
        states.append((d.qpos.copy(), d.qvel.copy()))
    qpos = np.array([s[0] for s in states])
    qvel = np.array([s[1] for s in states])
    model = physics.load_model(path).with_options(cone=cone)
    results = {}
    for solver, iterations, tol in (("Newton", 100, 1e-8), ("Newton", 1000, 1e-15)):
        world = physics.World(model.with_options(solver=solver, iterations=iterations, tolerance=tol),
                              num_envs=len(states), device=device, precision="float64")
        world.set_state(qpos=qpos, qvel=qvel)
        world.forward()
        assert (world.get("nefc") > 0).sum() >= 2
        results[tol] = (world.get("qacc"), world.get("solver_niter"))
    qacc, niter = results[1e-8]
    assert niter.max() <= 12, niter
    assert rel_err(qacc, results[1e-15][0]) <= 1e-6


def test_pgs_takes_more_sweeps_than_newton_iterations(device):
    path = gym_asset("ant")
    model = physics.load_model(path)
    niter = {}
    for solver in ("PGS", "Newton"):
        world = physics.World(model.with_options(solver=solver), num_envs=4, device=device, precision="float64")
        rng = np.random.default_rng(0)
        for _ in range(150):
            world.set_ctrl(rng.uniform(-1, 1, (4, model.nu)))
            world.step()
        niter[solver] = world.get("solver_niter")
        assert np.all(np.isfinite(world.get("qpos")))
    assert niter["Newton"].max() <= 10 and niter["PGS"].mean() > niter["Newton"].mean(), niter


@pytest.mark.parametrize("changes,match", [
    (dict(solver="Jacobi"), "solver must be one of"),
    (dict(cone="round"), "cone must be one of"),
    (dict(ls_iterations=0), "ls_iterations must be >= 1"),
])
def test_bad_solver_options_are_refused(changes, match, device):
    model = load_mjcf_string(SCENE.format(cone="pyramidal", impratio=1)).with_options(**changes)
    with pytest.raises(physics.WorldError, match=match):
        physics.World(model, num_envs=1, device=device)


def test_elliptic_box_slides_like_coulomb(device):
    """A box sliding on a plane with an elliptic cone stops where Coulomb friction says:
    v^2 / (2 mu g), within 3 % (the soft contact's slip while sticking is below that)."""
    xml = """<mujoco><option timestep="0.001" cone="elliptic" impratio="10"/><worldbody>
      <geom type="plane" size="0 0 1" friction="0.5"/>
      <body pos="0 0 0.05"><freejoint/><geom type="box" size="0.1 0.1 0.05" friction="0.5"/></body>
    </worldbody></mujoco>"""
    model = load_mjcf_string(xml)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    v0 = 2.0
    qpos = model.qpos0.copy()
    qpos[2] = 0.0499
    world.set_state(qpos=qpos[None], qvel=np.array([[v0, 0, 0, 0, 0, 0]]))
    world.step(1500)
    expected = v0 ** 2 / (2 * 0.5 * 9.81)
    assert abs(world.get("qvel")[0, 0]) < 1e-3
    assert abs(world.get("qpos")[0, 0] - expected) <= 0.03 * expected


def test_float32_newton_stops_at_its_round_off(device):
    """MuJoCo's tolerance (1e-8) is below what a float32 gradient can resolve; a float32
    World stops once the gradient is within its round-off instead of iterating around the
    optimum, so it takes about as many iterations as float64 on the same walk (it took
    1.47x as many before), and still lands on float64's solution to float32 precision."""
    model = physics.load_model(gym_asset("ant"))
    n = 32
    ctrl = np.random.default_rng(0).uniform(-1, 1, (n, model.nu))
    niter, worlds = {}, {}
    for precision in ("float32", "float64"):
        world = worlds[precision] = physics.World(model, num_envs=n, device=device, precision=precision)
        world.set_ctrl(ctrl)
        counts = []
        for t in range(150):
            world.step()
            if t >= 100:  # standing and walking on the floor, warm-started
                counts.append(world.get("solver_niter"))
        niter[precision] = np.mean(counts)
    assert niter["float32"] <= 1.2 * niter["float64"], niter
    ref = worlds["float64"]
    single = worlds["float32"]
    single.set_state(qpos=ref.get("qpos"), qvel=ref.get("qvel"))
    ref.forward()
    single.forward()
    assert np.array_equal(single.get("nefc"), ref.get("nefc"))
    assert rel_err(single.get("qacc"), ref.get("qacc")) <= 2e-4  # measured 4.6e-5


WARM_SCENE = """<mujoco>
  <option timestep="0.005" integrator="{integrator}" solver="{solver}" iterations="{iterations}" cone="{cone}"/>
  <worldbody>
    <geom type="plane" size="0 0 1" condim="{condim}"/>
    <body pos="0 0 0.1"><freejoint/><geom type="{shape}" size="0.1 0.08 0.1" condim="{condim}"/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("integrator,solver,iterations,condim,shape,cone", [
    ("RK4", "PGS", 1, 1, "sphere", "pyramidal"), ("Euler", "PGS", 1, 1, "sphere", "pyramidal"),
    ("Euler", "PGS", 4, 3, "box", "pyramidal"), ("RK4", "Newton", 1, 3, "box", "pyramidal"),
    pytest.param("Euler", "PGS", 4, 3, "box", "elliptic", marks=pytest.mark.slow),
    pytest.param("RK4", "CG", 1, 3, "box", "pyramidal", marks=pytest.mark.slow)])  # a kernel variant each
def test_warm_start_follows_mujoco_step_by_step(integrator, solver, iterations, condim, shape, cone, device):
    """With too few iterations to converge, each step's result depends on where the solver
    starts. MuJoCo starts every RK4 stage from the previous step's last qacc: a sliding box
    under Newton or CG with one iteration departs from mj_step by ~0.4 when later stages
    start from the stage before instead. The ball is then lifted by 3x its weight. PGS
    unconverged on a box's contacts also depends on the order it visits them in and on its
    momentum (MuJoCo 4's: shuffled blocks, Nesterov steps with restarts), which the box's
    four contacts with pyramids of four rows each follow. Tolerance 1e-10 over 40 steps."""
    xml = WARM_SCENE.format(integrator=integrator, solver=solver, iterations=iterations, condim=condim, shape=shape,
                            cone=cone)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    world = physics.World(load_mjcf_string(xml), num_envs=1, device=device, precision="float64")
    d.qpos[2] = 0.099  # slightly in the floor: the contact pushes from the first step
    d.qvel[0] = 1.0  # sliding: friction rows change state as it slows
    world.set_state(qpos=d.qpos.copy(), qvel=d.qvel.copy())
    lift = np.zeros(mjm.nv)
    lift[2] = 3 * 9.81 * float(mjm.body_mass[1])
    worst = 0.0
    for step in range(40):
        if step == 20:
            d.qfrc_applied[:] = lift
            world.set_qfrc_applied(lift)
        mujoco.mj_step(mjm, d)
        world.step()
        worst = max(worst, float(np.max(np.abs(world.get("qpos")[0] - d.qpos))),
                    float(np.max(np.abs(world.get("qvel")[0] - d.qvel))))
    assert worst < 1e-10, worst
