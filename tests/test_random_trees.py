"""Randomly generated kinematic trees against MuJoCo (float64, no contacts).

Each tree has random joint types (hinge, slide, ball, and several joints on one body),
axes, anchors, body offsets and full inertias, under a free or a fixed root. Tolerances:
qacc relative error <= 1e-7 (one solve with M, whose conditioning costs digits) and qpos
after 200 steps of Euler and of RK4 <= 1e-5 (roundoff grows along the trajectory).
"""

import mujoco
import numpy as np
import pytest
from oracle import random_state, rel_err, smooth

from taigym import physics

NTREES = 6


def _vec(rng, n, scale=1.0):
    return " ".join(f"{x:.6f}" for x in rng.normal(scale=scale, size=n))


def _random_joint(rng, k):
    kind = rng.choice(["hinge", "hinge", "slide", "ball", "hinge2"])
    if kind == "hinge2":  # two hinges on one body, as a D6 joint compiles
        return (f'<joint name="j{k}a" type="hinge" axis="{_vec(rng, 3)}" pos="{_vec(rng, 3, 0.1)}" damping="0.1"/>'
                f'<joint name="j{k}b" type="hinge" axis="{_vec(rng, 3)}" pos="{_vec(rng, 3, 0.1)}" stiffness="0.5"/>')
    extra = "" if kind == "ball" else f' axis="{_vec(rng, 3)}"'
    return f'<joint name="j{k}" type="{kind}"{extra} pos="{_vec(rng, 3, 0.1)}" armature="0.01"/>'


def _random_inertial(rng):
    a = rng.uniform(0.05, 0.3, size=3)  # principal moments satisfying the triangle inequality
    a[2] = rng.uniform(abs(a[0] - a[1]) + 0.01, a[0] + a[1] - 0.01)
    q = rng.normal(size=4)
    return (f'<inertial pos="{_vec(rng, 3, 0.1)}" quat="{" ".join(f"{x:.6f}" for x in q / np.linalg.norm(q))}" '
            f'mass="{rng.uniform(0.5, 2.0):.4f}" diaginertia="{a[0]:.5f} {a[1]:.5f} {a[2]:.5f}"/>')


def random_tree_mjcf(seed: int, nbody: int = 6, integrator: str = "Euler") -> str:
    rng = np.random.default_rng(seed)
    free_root = bool(seed % 2)
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, nbody)]
    children = {i: [c for c in range(nbody) if parents[c] == i] for i in range(nbody)}

    def body(i):
        q = rng.normal(size=4)
        quat = " ".join(f"{x:.6f}" for x in q / np.linalg.norm(q))
        joint = "<freejoint/>" if (i == 0 and free_root) else _random_joint(rng, i)
        inner = "".join(body(c) for c in children[i])
        pos = "0 0 1" if i == 0 else _vec(rng, 3, 0.3)
        return f'<body name="b{i}" pos="{pos}" quat="{quat}">{joint}{_random_inertial(rng)}{inner}</body>'

    return (f'<mujoco><option integrator="{integrator}" timestep="0.002"/>'
            f"<worldbody>{body(0)}</worldbody></mujoco>")


def _load_both(tmp_path, xml):
    path = tmp_path / "tree.xml"
    path.write_text(xml)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return mjm, smooth(physics.load_model(str(path)))


@pytest.mark.parametrize("seed", range(NTREES))
def test_random_tree_qacc(seed, tmp_path, device):
    mjm, model = _load_both(tmp_path, random_tree_mjcf(seed))
    rng = np.random.default_rng(100 + seed)
    states = [random_state(mjm, rng) for _ in range(4)]
    world = physics.World(model, num_envs=4, device=device, precision="float64")
    world.set_state(qpos=np.array([s[0] for s in states]), qvel=np.array([s[1] for s in states]))
    world.forward()
    for e, (qpos, qvel) in enumerate(states):
        d = mujoco.MjData(mjm)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, d)
        assert rel_err(world.get("qacc")[e], d.qacc) <= 1e-7, (seed, e, rel_err(world.get("qacc")[e], d.qacc))


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
@pytest.mark.parametrize("seed", range(NTREES))
def test_random_tree_trajectory(seed, integrator, tmp_path, device):
    mjm, model = _load_both(tmp_path, random_tree_mjcf(seed, integrator=integrator))
    rng = np.random.default_rng(200 + seed)
    qpos, qvel = random_state(mjm, rng, scale=0.5)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qpos=qpos, qvel=qvel)
    world.step(200)
    d = mujoco.MjData(mjm)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_step(mjm, d, nstep=200)
    assert rel_err(world.get("qpos")[0], d.qpos) <= 1e-5, (seed, integrator, rel_err(world.get("qpos")[0], d.qpos))
