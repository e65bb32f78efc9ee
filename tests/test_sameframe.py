"""Geoms and sites MuJoCo moves with their body's frame or inertial frame (its
geom_sameframe and site_sameframe), compared with the poses the kernels are given."""

import os

import mujoco
import numpy as np
import pytest
from taigym.physics import load_model
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.compiler.sameframe import geom_poses, site_poses

# offsets below MuJoCo's 1e-6 from the body frame, its inertial frame, and neither
NEAR = """<mujoco><worldbody><body pos="0 0 1"><freejoint/>
  <geom type="sphere" size="0.1" pos="4e-7 0 0" quat="1 3e-7 0 0"/>
  <geom type="capsule" size="0.05 0.2" pos="0.3 0 0"/>
  <geom type="box" size="0.1 0.1 0.1" pos="0.3 0.1 0" quat="1 0 0 5e-7"/>
  <site name="a" pos="0 2e-7 0"/><site name="b" pos="0.5 0 0" quat="0.9 0.1 0 0"/>
</body>
<body pos="1 0 1"><freejoint/><geom type="capsule" size="0.05 0.2" pos="0.1 0 0" euler="0 30 0"/>
  <site name="c" pos="0.1 4e-7 0" euler="0 30 0"/></body>
</worldbody></mujoco>"""


def _expected(code, pos, quat, ipos, iquat):
    unit = np.array([1.0, 0, 0, 0])
    # mjtSameFrame: none, body, inertia, body rotation, inertia rotation
    return {0: (pos, quat), 1: (np.zeros(3), unit), 2: (ipos, iquat), 3: (pos, unit), 4: (pos, iquat)}[int(code)]


def _check(model, mjm):
    for poses, kind in ((geom_poses(model), "geom"), (site_poses(model), "site")):
        pos, quat = poses
        for k in range(len(pos)):
            b = getattr(mjm, f"{kind}_bodyid")[k]
            want = _expected(getattr(mjm, f"{kind}_sameframe")[k], getattr(mjm, f"{kind}_pos")[k],
                             getattr(mjm, f"{kind}_quat")[k], mjm.body_ipos[b], mjm.body_iquat[b])
            np.testing.assert_allclose(pos[k], want[0], atol=1e-15, err_msg=f"{kind} {k}")
            np.testing.assert_allclose(np.abs(quat[k] @ want[1]), 1.0, atol=1e-15, err_msg=f"{kind} {k}")


def test_objects_near_a_frame_move_with_it():
    _check(load_mjcf_string(NEAR), mujoco.MjModel.from_xml_string(NEAR))
    assert set(mujoco.MjModel.from_xml_string(NEAR).geom_sameframe) >= {1, 2, 3}


@pytest.mark.parametrize("name", ["humanoid_CMU", "quadruped", "walker"])
def test_control_suite_frames(name):
    suite = pytest.importorskip("dm_control.suite")
    path = os.path.join(os.path.dirname(suite.__file__), f"{name}.xml")
    _check(load_model(path), mujoco.MjModel.from_xml_path(path))
