"""World.step(n, refresh=True) against dm_control's step, on dm_control's hopper (float64).

dm_control's Physics.step finishes each control step with mj_step1: the frames and the
position and velocity sensors are those of the state the step ends in, while the touch
sensors (acceleration stage) keep the values of the last substep. Its sequence, run here on
MjData: mj_forward at the reset, then per control step mj_step2, mj_step (n - 1), mj_step1.
The World steps n substeps with refresh and must give the same qpos, qvel, frames and every
sensor to 1e-12 relative (the solver runs to 1e-15; observed 7e-15 in the state and the
frames, 5e-13 in the touch sensors, which sum contact forces), in both schedules.
"""

import os
import warnings

import mujoco
import numpy as np
import pytest
from oracle import rel_err

from taigym import physics

# the staged schedule compiles kernels of its own for this model: the slow tier runs it
STAGED = pytest.param("staged", marks=pytest.mark.slow)

NSUB = 4  # dm_control's hopper: 0.005 s physics steps, 0.02 s control steps
NSTEP = 30
TOL = 1e-12


def _hopper_path():
    suite = pytest.importorskip("dm_control.suite")
    return os.path.join(os.path.dirname(suite.__file__), "hopper.xml")


def _converged(mjm):
    mjm.opt.tolerance = 1e-15
    mjm.opt.iterations = 200
    mjm.opt.ls_tolerance = 1e-15


@pytest.mark.parametrize("schedule", ["fused", STAGED])
def test_refresh_matches_dm_control_step(schedule, device):
    path = _hopper_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = physics.load_model(path)
    mjm = mujoco.MjModel.from_xml_path(path)
    _converged(mjm)
    model = model.with_options(tolerance=1e-15, iterations=200, ls_tolerance=1e-15)
    nenv = 2
    world = physics.World(model, num_envs=nenv, device=device, precision="float64", schedule=schedule)
    rng = np.random.default_rng(0)
    datas = [mujoco.MjData(mjm) for _ in range(nenv)]
    qpos = np.stack([mjm.qpos0 + rng.uniform(-0.2, 0.2, mjm.nq) for _ in range(nenv)])
    qpos[:, 1] = 0.2  # the feet start on the floor: touch sensors fire from the first steps
    world.set_state(qpos=qpos, qvel=np.zeros((nenv, mjm.nv)))
    world.forward()
    for d, q in zip(datas, qpos):
        d.qpos[:] = q
        mujoco.mj_forward(mjm, d)
    errors, touched = {}, 0.0
    for _ in range(NSTEP):
        u = rng.uniform(-1, 1, (nenv, mjm.nu))
        world.set_ctrl(u)
        world.step(NSUB, refresh=True)
        for e, d in enumerate(datas):
            d.ctrl[:] = u[e]
            mujoco.mj_step2(mjm, d)
            mujoco.mj_step(mjm, d, NSUB - 1)
            mujoco.mj_step1(mjm, d)
            touched = max(touched, float(np.max(d.sensordata[3:])))
            for key in ("qpos", "qvel", "xpos", "xmat", "sensordata"):
                errors[key] = max(errors.get(key, 0.0), rel_err(world.get(key)[e].ravel(), getattr(d, key).ravel()))
    print(f"refresh ({schedule}) max relative errors:", {k: f"{v:.1e}" for k, v in errors.items()})
    assert touched > 0  # the touch sensors were tested on contact, not on zeros
    assert max(errors.values()) <= TOL, errors


def test_step_without_refresh_keeps_the_start_state(device):
    """The default step leaves the frames of the last substep's start, as mj_step: after
    one refreshing step and one plain one, xpos differs from the state's own kinematics."""
    path = _hopper_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = physics.load_model(path)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.step(2)
    stale = world.get("xpos").copy()
    world.forward()
    assert rel_err(stale, world.get("xpos")) > 1e-6
    world.step(2, refresh=True)
    fresh = world.get("xpos").copy()
    world.forward()
    assert rel_err(fresh, world.get("xpos")) <= 1e-15
