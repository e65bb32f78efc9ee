"""The DeepMind Control Suite's 19 models, as the dm_control package ships them, loaded
strictly and stepped beside MuJoCo with the same random controls, float64.

Each loads and follows MuJoCo's trajectory: dog, with 40-odd contacts of frictionless,
multi-CCD and no-slip kinds, to 2.5e-13 in qpos over 100 steps (measured).
"""

import os

import dm_control.suite
import mujoco
import numpy as np
import pytest
from taigym.physics import World, load_model

SUITE = os.path.dirname(dm_control.suite.__file__)
MODELS = sorted(f[:-4] for f in os.listdir(SUITE) if f.endswith(".xml"))
STEPS = 100
# round-off grown over 100 steps; the worst measured was 3e-13 (humanoid, contacts)
TOL = 1e-9
# the models whose kernel needs parts beyond the shared one most tests compile (dog's no-slip
# pass): a kernel for one test, which the slow tier runs
BEYOND_SHARED = ("dog",)


def test_the_suite_has_its_19_models():
    assert len(MODELS) == 19


def test_the_models_beyond_the_shared_kernel_are_those_named():
    """BEYOND_SHARED, whose steps the slow tier checks, are the models whose kernel needs
    parts the shared one (COMMON) leaves out."""
    from taigym.physics.collision.broadphase import candidate_pairs
    from taigym.physics.features import COMMON, missing_parts, model_features

    beyond = set()
    for name in MODELS:
        model = load_model(os.path.join(SUITE, f"{name}.xml"))
        if missing_parts(model_features(model, candidate_pairs(model)), COMMON):
            beyond.add(name)
    assert beyond == set(BEYOND_SHARED)


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in BEYOND_SHARED else m
                                  for m in MODELS])
def test_control_suite_model_loads_and_steps_as_mujoco(name, device):
    path = os.path.join(SUITE, f"{name}.xml")
    model = load_model(path)
    mjm = mujoco.MjModel.from_xml_path(path)
    assert (model.nq, model.nv, model.nu, model.nsensordata) == (mjm.nq, mjm.nv, mjm.nu, mjm.nsensordata)
    if mjm.nv == 0:  # lqr.xml: a template whose bodies and joints are generated in Python
        return
    md = mujoco.MjData(mjm)
    world = World(model, 1, device=device, precision="float64")
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        u = rng.uniform(-1, 1, mjm.nu)
        md.ctrl[:] = u
        world.set_ctrl(u[None])
        mujoco.mj_step(mjm, md)
        world.step()
    np.testing.assert_allclose(world.get("qpos")[0], md.qpos, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(world.get("qvel")[0], md.qvel, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("name", MODELS)
def test_principal_frames_are_mujocos(name):
    """body_iquat and body_inertia as MuJoCo's compiler reports them, not only an
    equivalent frame (an inertia has many): geoms and sites MuJoCo puts on a body's
    inertial frame (geom_sameframe) move with it. dog's nearly round bone meshes have
    frames MuJoCo's compiler leaves ~1e-5 from their exact eigenvectors, reproduced."""
    path = os.path.join(SUITE, f"{name}.xml")
    model, mjm = load_model(path), mujoco.MjModel.from_xml_path(path)
    iquat = np.asarray(model.body_iquat)
    same = np.minimum(np.abs(iquat - mjm.body_iquat), np.abs(iquat + mjm.body_iquat)).max(axis=1)
    assert same.max() < 1e-12, (np.argmax(same), same.max())
    if mjm.nmesh:
        mesh = np.asarray(model.mesh_quat)
        assert np.minimum(np.abs(mesh - mjm.mesh_quat), np.abs(mesh + mjm.mesh_quat)).max() < 1e-12
    np.testing.assert_allclose(model.body_inertia, mjm.body_inertia, rtol=1e-12, atol=1e-15)
