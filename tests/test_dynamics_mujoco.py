"""Smooth dynamics against MuJoCo on gymnasium's models (float64).

Each test builds one World whose envs are different random states, loads the same MJCF
into mujoco, and compares mjData quantities by name. Tolerance: relative error
max|ours - mujoco| / max(max|mujoco|, 1) <= 1e-8; both sides compute in float64 with
the same algorithms, so the observed errors are ~1e-15 and 1e-8 leaves room only for
summation-order differences.
"""

import mujoco
import numpy as np
import pytest
from conftest import GYM_MODELS, gym_asset
from oracle import random_state, rel_err, rk4_step, smooth

from taigym import physics

NENV = 6
TOL = 1e-8


def _mujoco_forward(mjm, qpos, qvel, ctrl):
    d = mujoco.MjData(mjm)
    d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl
    mujoco.mj_forward(mjm, d)
    full_m = np.zeros((mjm.nv, mjm.nv))
    mujoco.mj_fullM(mjm, d, full_m)
    return d, full_m


@pytest.mark.parametrize("name", GYM_MODELS)
def test_smooth_quantities_match_mujoco(name, device):
    path = gym_asset(name)
    mjm = mujoco.MjModel.from_xml_path(path)
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT  # smooth dynamics only
    model = smooth(physics.load_model(path))
    world = physics.World(model, num_envs=NENV, device=device, precision="float64")
    rng = np.random.default_rng(7)
    states = [random_state(mjm, rng) for _ in range(NENV)]
    ctrl = rng.uniform(-1, 1, size=(NENV, mjm.nu))
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.set_ctrl(ctrl)
    world.forward()
    ours = {k: world.get(k) for k in ("qM", "qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc", "xpos", "xquat")}
    for e, (qpos, qvel) in enumerate(states):
        d, full_m = _mujoco_forward(mjm, qpos, qvel, ctrl[e])
        for key, ref in (("qM", full_m), ("qfrc_bias", d.qfrc_bias), ("qfrc_passive", d.qfrc_passive),
                         ("qfrc_actuator", d.qfrc_actuator), ("xpos", d.xpos)):
            assert rel_err(ours[key][e], ref) <= TOL, (name, key, e, rel_err(ours[key][e], ref))
        # quaternions are equal up to sign
        sign = np.sign(np.sum(ours["xquat"][e] * d.xquat, axis=1, keepdims=True))
        assert rel_err(ours["xquat"][e] * sign, d.xquat) <= TOL, (name, "xquat", e)
        # qacc = M^-1 f amplifies by the condition number of M
        assert rel_err(ours["qacc"][e], d.qacc) <= 1e-7, (name, "qacc", e, rel_err(ours["qacc"][e], d.qacc))


def _trajectory(name, device, nstep=200):
    """Our World and a MuJoCo model stepped from the same 2 random states."""
    path = gym_asset(name)
    mjm = mujoco.MjModel.from_xml_path(path)
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    world = physics.World(smooth(physics.load_model(path)), num_envs=2, device=device, precision="float64")
    rng = np.random.default_rng(3)
    states = [random_state(mjm, rng, scale=0.3) for _ in range(2)]
    ctrl = rng.uniform(-1, 1, size=(2, mjm.nu))
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.set_ctrl(ctrl)
    world.step(nstep)
    datas = []
    for e, (qpos, qvel) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl[e]
        datas.append(d)
    return mjm, world, datas


@pytest.mark.parametrize("name", ["humanoid", "swimmer", "hopper"])
def test_trajectory_matches_mj_step(name, device):
    """200 steps with the model's own integrator against mujoco's mj_step. Hopper and
    swimmer agree to rounding; the humanoid's free joint sees mujoco 4.0's RK4 variant
    (see oracle.rk4_step), ~1e-6 after 200 steps."""
    mjm, world, datas = _trajectory(name, device)
    for e, d in enumerate(datas):
        mujoco.mj_step(mjm, d, nstep=200)
        assert rel_err(world.get("qpos")[e], d.qpos) <= 1e-5, (name, e, rel_err(world.get("qpos")[e], d.qpos))


@pytest.mark.parametrize("name", ["ant", "humanoid", "inverted_double_pendulum"])
def test_rk4_trajectory_matches_mujoco_rk4(name, device):
    """200 RK4 steps against RK4 composed of mujoco's mj_forward and mj_integratePos:
    the same scheme on both sides, so even the chaotic ant agrees to ~1e-15."""
    mjm, world, datas = _trajectory(name, device)
    for e, d in enumerate(datas):
        for _ in range(200):
            rk4_step(mjm, d)
        assert rel_err(world.get("qpos")[e], d.qpos) <= 1e-10, (name, e, rel_err(world.get("qpos")[e], d.qpos))
        assert rel_err(world.get("qvel")[e], d.qvel) <= 1e-9, (name, e, rel_err(world.get("qvel")[e], d.qvel))


def test_float32_world_tracks_float64(device):
    path = gym_asset("ant")
    model = physics.load_model(path)
    mjm = mujoco.MjModel.from_xml_path(path)
    qpos, qvel = random_state(mjm, np.random.default_rng(0), scale=0.5)
    out = {}
    for precision in ("float32", "float64"):
        w = physics.World(model, num_envs=3, device=device, precision=precision)
        w.set_state(qpos=qpos, qvel=qvel)
        w.step(20)
        out[precision] = w.get("qpos")
    assert out["float32"].dtype == np.float32  # get() returns copies in the World's precision
    # float32 rounding (~1e-7 relative) grows over 20 RK4 steps but stays small
    assert rel_err(out["float32"], out["float64"]) < 1e-4
