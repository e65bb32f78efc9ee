"""The DeepMind Control Suite's 19 models, as the dm_control package ships them, loaded
strictly and stepped beside MuJoCo with the same random controls, float64.

Each either loads and follows MuJoCo's trajectory, or is refused with the one line that
names what taigym does not simulate yet.
"""

import os

import dm_control.suite
import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError, World, load_model

SUITE = os.path.dirname(dm_control.suite.__file__)
MODELS = sorted(f[:-4] for f in os.listdir(SUITE) if f.endswith(".xml"))
REFUSED = {"dog": "no-slip solver"}
STEPS = 100
# round-off grown over 100 steps; the worst measured was 3e-13 (humanoid, contacts)
TOL = 1e-9


def test_the_suite_has_its_19_models():
    assert len(MODELS) == 19


@pytest.mark.parametrize("name", MODELS)
def test_control_suite_model_loads_and_steps_as_mujoco(name, device):
    path = os.path.join(SUITE, f"{name}.xml")
    if name in REFUSED:
        with pytest.raises(ModelError, match=REFUSED[name]):
            load_model(path)
        return
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
