"""Specialized step kernels (physics/features.py): a World compiles only the parts its model
has, and gives the results of the kernel with every part, float64, to round-off.

The rest of the suite runs on the kernel with every part (``TAIGYM_KERNELS=shared``, set in
conftest.py), so that its many small models share a few compiled kernels; this module
checks the specialized kernels against it: on models that hold every part, and on every
shipped task through its env, as a user runs it.
"""

import os

import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv
from taigym.physics import settings
from taigym.physics.collision import broadphase as B
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.features import ALL, COMMON, Features, choose_features, model_features
from taigym.physics.model import INT_EULER, INT_RK4
from taigym.tasks import loader

from taigym import physics

# Every part but contacts: a connect equality, a fixed tendon with a spring, a limit and
# friction loss, dof friction loss, a viscous medium, and the cubic and hard limit models.
PARTS = """<mujoco xmlns:taigym="urn:taigym">
  <option timestep="0.002" viscosity="0.05" integrator="{integrator}"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" range="-0.4 0.4" limited="true" frictionloss="0.05"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.4 0 0" mass="1"/>
      <body name="b" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" range="-0.3 0.3" taigym:limit="cubic" taigym:limit_strength="2"/>
        <geom type="capsule" size="0.04" fromto="0 0 0 0.3 0 0" mass="0.5"/>
        <body name="c" pos="0.3 0 0">
          <joint name="j3" type="hinge" axis="0 1 0" range="-0.2 0.2" taigym:limit="hard"
                 taigym:limit_distance="0.05"/>
          <geom type="sphere" size="0.05" mass="0.3"/>
        </body>
      </body>
    </body>
    <body name="d" pos="0.7 0 1.2">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.2"/>
    </body>
  </worldbody>
  <equality><connect body1="d" body2="b" anchor="0 0 0"/></equality>
  <tendon>
    <fixed name="t" limited="true" range="-0.2 0.2" frictionloss="0.1" stiffness="1" springlength="0.05">
      <joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/>
    </fixed>
  </tendon>
  <actuator><motor joint="j1"/><motor tendon="t"/></actuator>
</mujoco>"""

# Every kind of contact pair the engine has a routine for, in one scene: primitives on a
# plane and on each other, a height field under a sphere, a capsule, a box and an ellipsoid,
# and the convex pairs (an ellipsoid and a cylinder against the rest).
SHAPES = [("sphere", "0.1"), ("capsule", "0.06 0.1"), ("box", "0.08 0.08 0.08"), ("cylinder", "0.07 0.07"),
          ("ellipsoid", "0.1 0.07 0.06")]
PAIRS = """<mujoco>
  <asset><hfield name="terrain" nrow="6" ncol="6" size="0.6 0.6 0.1 0.05"
                 elevation="0 1 0 1 0 1 1 0 1 0 1 0 0 1 0 1 0 1 1 0 1 0 1 0 0 1 0 1 0 1 1 0 1 0 1 0"/></asset>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <geom type="hfield" hfield="terrain" pos="2 0 0"/>
    {bodies}
  </worldbody>
</mujoco>"""


def _pairs_scene() -> str:
    bodies = []
    for k in range(2 * len(SHAPES)):  # two of each, in a ring tight enough that most pairs touch
        shape, size = SHAPES[k % len(SHAPES)]
        angle = 2 * np.pi * k / (2 * len(SHAPES))
        bodies.append(f'<body pos="{0.12 * np.cos(angle):.4f} {0.12 * np.sin(angle):.4f} {0.07 + 0.01 * k}">'
                      f'<freejoint/><geom type="{shape}" size="{size}"/></body>')
    for k, (shape, size) in enumerate(SHAPES[:3] + SHAPES[4:]):
        bodies.append(f'<body pos="{1.9 + 0.2 * k} 0 0.16"><freejoint/><geom type="{shape}" size="{size}"/></body>')
    return PAIRS.format(bodies="\n    ".join(bodies))


@pytest.fixture(autouse=True)
def own_kernels(monkeypatch):
    """Worlds here compile their model's own kernel unless told otherwise (conftest.py
    gives the rest of the suite the full one)."""
    monkeypatch.delenv("TAIGYM_KERNELS", raising=False)
    settings.reload()


def _rollout(model, features, device, steps=6, num_envs=3):
    """qpos, qvel and qacc after each of ``steps`` steps from perturbed states, float64."""
    world = physics.World(model, num_envs=num_envs, device=device, precision="float64", features=features)
    rng = np.random.default_rng(0)
    world.set_state(qvel=rng.normal(0, 0.3, (num_envs, model.nv)))
    if model.nu:
        world.set_ctrl(rng.uniform(-1, 1, (num_envs, model.nu)))
    out = []
    for _ in range(steps):
        world.step()
        out += [world.get(name) for name in ("qpos", "qvel", "qacc")]
    return world, out


def test_a_model_names_the_parts_it_has():
    full = model_features(load_mjcf_string(PARTS.format(integrator="RK4")), B.no_pairs())
    assert full.equality and full.tendons and full.frictionloss and full.fluid
    assert full.cubic_limits and full.physx_limits and full.integrators == {INT_RK4}
    bare = load_mjcf_string('<mujoco><worldbody><body><joint type="slide"/><geom size="0.1"/></body>'
                            '</worldbody></mujoco>')
    none = model_features(bare, B.candidate_pairs(bare))
    assert not (none.contacts or none.equality or none.tendons or none.frictionloss or none.fluid
                or none.cubic_limits or none.physx_limits)
    assert none.integrators == {INT_EULER}
    scene = load_mjcf_string(_pairs_scene())
    colliders = model_features(scene, B.candidate_pairs(scene)).colliders
    # every routine but the meshes' own (the clipped faces for the cylinders)
    assert colliders == set(range(B.COLLIDE_PLANE_SPHERE, B.COLLIDE_HFIELD_CONVEX + 1)) | {B.COLLIDE_FACES}
    assert model_features(scene, B.no_pairs()).colliders == frozenset()


@pytest.mark.slow  # the full kernel and a specialized one, each compiled for this test alone
@pytest.mark.parametrize("integrator", ["RK4", "Euler"])
def test_specialized_kernel_matches_the_full_one_on_every_part(integrator, device):
    model = load_mjcf_string(PARTS.format(integrator=integrator))
    world, ours = _rollout(model, None, device)
    assert world.features != ALL and world.features.integrators == {INT_RK4 if integrator == "RK4" else INT_EULER}
    _, full = _rollout(model, ALL, device)
    for a, b in zip(ours, full):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


@pytest.mark.slow  # the full kernel and a specialized one, each compiled for this test alone
def test_specialized_kernel_matches_the_full_one_on_every_contact_pair(device):
    model = load_mjcf_string(_pairs_scene())
    # two steps: the own kernel's factor and solves with M, written out entry by entry
    # (physics/smooth/unrolled_tree.py), round differently in the last bit, and the
    # narrow phase's iterations (GJK, EPA, multi-CCD) turn a pose's last bit into ~1e4 times
    # that in the next step's velocities, step after step
    world, ours = _rollout(model, None, device, steps=2, num_envs=2)
    # every routine but the meshes' own, whose kernels tests/test_meshes.py and
    # test_hfield_meshes.py run (the clipped faces run here for the cylinders)
    assert world.features.colliders == ALL.colliders - {B.COLLIDE_PLANE_MESH, B.COLLIDE_HFIELD_MESH}
    contacts = world.contacts()
    touching = {tuple(model.geom_type[g]) for g in contacts["geom"][0, : contacts["ncon"][0]]}
    assert len(touching) >= 12  # kinds of geom pair in contact: the routines do run
    _, full = _rollout(model, ALL, device, steps=2, num_envs=2)
    for a, b in zip(ours, full):  # qacc reaches ~3e3 here: its round-off is relative to that
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(b).max()))


def test_the_shared_kernel_is_common_unless_a_model_needs_more(monkeypatch):
    monkeypatch.setenv("TAIGYM_KERNELS", "shared")
    settings.reload()
    plain = load_mjcf_string(PARTS.format(integrator="RK4"))
    assert choose_features(plain, B.candidate_pairs(plain)) == COMMON
    for option in ('noslip_iterations="3"', 'integrator="implicitfast"'):
        heavy = load_mjcf_string(f'<mujoco><option {option}/><worldbody><geom type="plane" size="1 1 1"/><body>'
                                 '<freejoint/><geom size="0.1"/></body></worldbody></mujoco>')
        assert choose_features(heavy, B.candidate_pairs(heavy)) == ALL, option
    monkeypatch.delenv("TAIGYM_KERNELS")
    settings.reload()
    assert choose_features(plain, B.candidate_pairs(plain)) == model_features(plain, B.candidate_pairs(plain))


def test_features_that_leave_out_a_needed_part_are_refused(device):
    model = load_mjcf_string(PARTS.format(integrator="RK4"))
    needed = model_features(model, B.no_pairs())
    with pytest.raises(physics.WorldError, match="equality"):
        physics.World(model, device=device, features=Features(**{**needed.__dict__, "equality": False}))
    with pytest.raises(physics.WorldError, match="integrator 1"):
        physics.World(model, device=device,
                      features=Features(**{**needed.__dict__, "integrators": frozenset({INT_EULER})}))
    with pytest.raises(physics.WorldError, match="Features"):
        physics.World(model, device=device, features="all")


# the Control Suite's tasks whose own kernels hold parts no other shipped task's does: RK4,
# fluid forces with position actuators, a spatial tendon, fixed tendons, and the most contacts;
# each own kernel is a minute's compile, and the others' parts are covered by these
CONTROL_SUITE_KERNELS = ("cartpole_swingup.yaml", "fish_swim.yaml", "ball_in_cup_catch.yaml", "point_mass_easy.yaml",
                         "humanoid_walk.yaml")


def _tasks_with_their_own_kernels() -> list:
    return [p for p in loader.task_files() if p.parent.name != "control_suite" or p.name in CONTROL_SUITE_KERNELS]


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("TAIGYM_TEST_DEVICE") == "cuda", reason="the task configs simulate on the CPU")
@pytest.mark.parametrize("path", _tasks_with_their_own_kernels(), ids=lambda p: p.stem)
def test_every_task_steps_the_same_on_its_own_kernel(path, monkeypatch):
    """Each shipped task, as a user makes it (its own kernel), against the suite's shared
    kernel (COMMON's parts, or every part): the same observations, rewards and terminations over a few random-action steps.
    The batch env is what gym.make_vec and (with the agents' actions joined) the PettingZoo
    envs step."""
    runs = []
    for kernels in ("own", "shared"):
        monkeypatch.setenv("TAIGYM_KERNELS", kernels)
        settings.reload()
        env = TaiGymVectorEnv(str(path), 2, overrides={"simulation.precision": "float64"})
        obs, _ = env.reset(seed=3)
        rng = np.random.default_rng(3)
        out = [obs]
        for _ in range(5):
            obs, reward, terminated, truncated, _ = env.step(rng.uniform(env.action_space.low, env.action_space.high))
            out += [obs, reward, terminated, truncated]
        runs.append((env.world.features, out))
        env.close()
    (ours, a), (full, b) = runs
    assert full in (COMMON, ALL) and ours != full
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x, float), np.asarray(y, float), rtol=1e-9, atol=1e-9)
