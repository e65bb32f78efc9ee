"""eval_fk / eval_ik round trips and the Newton index views."""

import mujoco
import numpy as np
import pytest
from conftest import GYM_MODELS, gym_asset
from oracle import random_state
from taigym.physics.model import JNT_BALL, JNT_FREE, JNT_HINGE

from taigym import physics


def _joint_q_error(model, q_back, q):
    d = q_back - q
    for j in range(model.njnt):
        a = model.jnt_qposadr[j]
        if model.jnt_type[j] == JNT_HINGE:  # angles compare modulo 2 pi
            d[:, a] = (d[:, a] + np.pi) % (2 * np.pi) - np.pi
        elif model.jnt_type[j] in (JNT_FREE, JNT_BALL):  # quaternions compare up to sign
            a += 3 if model.jnt_type[j] == JNT_FREE else 0
            sign = np.sign(np.sum(q_back[:, a : a + 4] * q[:, a : a + 4], axis=1, keepdims=True))
            d[:, a : a + 4] = q_back[:, a : a + 4] * sign - q[:, a : a + 4]
    return np.abs(d).max()


@pytest.mark.parametrize("name", GYM_MODELS)
def test_fk_then_ik_returns_joint_q(name, device):
    path = gym_asset(name)
    model = physics.load_model(path)
    mjm = mujoco.MjModel.from_xml_path(path)
    rng = np.random.default_rng(11)
    q = np.array([random_state(mjm, rng, scale=1.0)[0] for _ in range(5)])
    body_q = physics.eval_fk(model, q, device=device)
    assert body_q.shape == (5, model.nbody, 7)
    assert _joint_q_error(model, physics.eval_ik(model, body_q), q) < 1e-9


def test_revolute_angle_branch():
    b = physics.ModelBuilder()
    link = b.add_body(0, mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint_revolute(link, axis=(0, 0, 1))
    model = b.finalize()
    for angle in (np.pi, -np.pi + 1e-9, 3 * np.pi / 2, 0.25):
        pose = np.zeros((1, 2, 7))
        pose[:, :, 3] = 1
        pose[0, 1, 3:] = [np.cos(angle / 2), 0, 0, np.sin(angle / 2)]
        got = physics.eval_ik(model, pose)[0, 0]
        assert -np.pi < got <= np.pi
        assert np.isclose((got - angle + np.pi) % (2 * np.pi) - np.pi, 0, atol=1e-12)


def test_newton_views():
    b = physics.ModelBuilder()
    root = b.add_body(0, pos=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint_free(root)
    arm = b.add_body(root, mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint_ball(arm)
    link = b.add_body(arm, mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint_revolute(link, axis=(0, 1, 0), limit_lower=-1, limit_upper=2)
    slider = b.add_body(link, mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint_prismatic(slider, axis=(1, 0, 0))
    m = b.finalize()
    assert m.joint_q_start.tolist() == [0, 7, 11, 12, 13]
    assert m.joint_qd_start.tolist() == [0, 6, 9, 10, 11]
    assert m.joint_dof_dim.tolist() == [[3, 3], [0, 3], [0, 1], [1, 0]]
    assert np.allclose(m.joint_axis[9], [0, 1, 0]) and np.allclose(m.joint_axis[10], [1, 0, 0])
    assert m.joint_limit_lower[9] == -1 and m.joint_limit_upper[9] == 2 and np.isinf(m.joint_limit_upper[10])
