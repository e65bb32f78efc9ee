"""ModelBuilder: the routes joints take into the Model, validation, immutability, the
Newton articulation view, and one robot made three ways (builder, MJCF, URDF)."""

from __future__ import annotations

import dataclasses

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics import D6Axis, Model, ModelBuilder, ModelError
from taigym.physics.compiler.transforms import euler_to_quat, quat_to_mat
from taigym.physics.compiler.urdf import load_urdf_string
from taigym.physics.model import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE

UNIT = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))


def _tensor(quat, moments):
    rot = quat_to_mat(quat)
    return rot @ np.diag(moments) @ rot.T


# --- D6 and fixed joints ---------------------------------------------------------------

def _d6_model():
    b = ModelBuilder()
    body = b.add_body(0, pos=(0, 0, 1), name="slider", **UNIT)
    ids = b.add_joint_d6(
        body,
        linear_axes=[D6Axis((1, 0, 0)), D6Axis((0, 1, 0), mode="locked"), D6Axis((0, 0, 1), "limited", -0.1, 0.2)],
        angular_axes=[D6Axis((1, 0, 0), "limited", -1.0, 1.0, damping=0.3), D6Axis((0, 1, 0)),
                      D6Axis((0, 0, 1), mode="locked")],
        anchor=(0.0, 0.0, 0.05), name="d6",
    )
    return b.finalize(), ids


def test_d6_compiles_to_slides_then_hinges():
    m, ids = _d6_model()
    assert ids == [0, 1, 2, 3]
    assert m.jnt_name == ["d6_lin0", "d6_lin2", "d6_ang0", "d6_ang1"]  # locked axes are omitted
    assert m.jnt_type.tolist() == [JNT_SLIDE, JNT_SLIDE, JNT_HINGE, JNT_HINGE]
    np.testing.assert_array_equal(m.jnt_axis, [[1, 0, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0]])
    assert m.jnt_limited.tolist() == [0, 1, 1, 0]  # free axes unlimited, limited axes ranged
    np.testing.assert_array_equal(m.jnt_range, [[0, 0], [-0.1, 0.2], [-1, 1], [0, 0]])
    np.testing.assert_array_equal(m.jnt_pos, np.tile([0, 0, 0.05], (4, 1)))
    assert (m.nq, m.nv) == (4, 4) and m.jnt_bodyid.tolist() == [1] * 4
    assert m.dof_parentid.tolist() == [-1, 0, 1, 2]
    np.testing.assert_array_equal(m.dof_damping, [0, 0, 0.3, 0])
    np.testing.assert_array_equal(m.joint_dof_dim, [[1, 0], [1, 0], [0, 1], [0, 1]])
    np.testing.assert_array_equal(m.joint_limit_lower, [-np.inf, -0.1, -1.0, -np.inf])
    np.testing.assert_array_equal(m.joint_limit_upper, [np.inf, 0.2, 1.0, np.inf])


def test_d6_matches_mujoco_joints_on_one_body():
    m, _ = _d6_model()
    mj = mujoco.MjModel.from_xml_string("""<mujoco><compiler angle="radian"/><worldbody>
      <body pos="0 0 1"><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
        <joint type="slide" axis="1 0 0" pos="0 0 0.05"/>
        <joint type="slide" axis="0 0 1" pos="0 0 0.05" range="-0.1 0.2"/>
        <joint type="hinge" axis="1 0 0" pos="0 0 0.05" range="-1 1" damping="0.3"/>
        <joint type="hinge" axis="0 1 0" pos="0 0 0.05"/>
      </body></worldbody></mujoco>""")
    for name in ("jnt_type", "jnt_qposadr", "jnt_dofadr", "jnt_limited", "dof_parentid", "body_jntadr",
                 "body_jntnum", "body_dofnum", "body_dofadr"):
        np.testing.assert_array_equal(getattr(m, name), getattr(mj, name), err_msg=name)
    for name in ("jnt_axis", "jnt_pos", "jnt_range", "qpos0", "dof_damping"):
        np.testing.assert_allclose(getattr(m, name), getattr(mj, name), atol=1e-12, err_msg=name)


def test_fixed_joint_gives_a_body_without_dofs():
    b = ModelBuilder()
    arm = b.add_body(0, name="arm", **UNIT)
    b.add_joint_revolute(arm, axis=(0, 1, 0), name="hinge")
    tool = b.add_body(arm, pos=(0, 0, 0.5), name="tool", **UNIT)
    b.add_joint_fixed(tool, name="weld")
    with pytest.raises(ModelError, match="fixed joint"):
        b.add_joint_revolute(tool, name="late")
    m = b.finalize()
    t = m.body("tool")
    assert (m.body_jntnum[t], m.body_dofnum[t], m.body_jntadr[t], m.body_dofadr[t]) == (0, 0, -1, -1)
    assert m.body_weldid[t] == m.body("arm") and (m.njnt, m.nv) == (1, 1)
    assert "weld" not in m.jnt_name


# --- validation ----------------------------------------------------------------------------

def _bad_inertia_negative(b):
    b.add_joint_revolute(b.add_body(0, name="b", mass=1.0, inertia=(-0.1, 0.1, 0.1)), name="j")


def _bad_inertia_triangle(b):
    b.add_joint_revolute(b.add_body(0, name="b", mass=1.0, inertia=(0.1, 0.1, 0.3)), name="j")


def _bad_full_inertia(b):
    full = np.array([[0.1, 0.2, 0.0], [0.2, 0.1, 0.0], [0.0, 0.0, 0.1]])  # not positive definite
    b.add_joint_revolute(b.add_body(0, name="b", mass=1.0, inertia=full), name="j")


def _non_unit_axis(b):
    b.add_joint_revolute(b.add_body(0, name="b", **UNIT), axis=(0, 0, 2), name="j")


def _lower_above_upper(b):
    b.add_joint_revolute(b.add_body(0, name="b", **UNIT), limit_lower=1.0, limit_upper=-1.0, name="j")


def _actuator_missing_joint(b):
    b.add_joint_revolute(b.add_body(0, name="b", **UNIT), name="j")
    b.add_actuator("elbow", name="a")


def _actuator_missing_joint_id(b):
    b.add_joint_revolute(b.add_body(0, name="b", **UNIT), name="j")
    b.add_actuator(3, name="a")


def _tendon_missing_joint(b):
    b.add_joint_revolute(b.add_body(0, name="b", **UNIT), name="j")
    b.add_tendon_fixed([("j", 1.0), ("elbow", -1.0)], name="t")


def _zero_mass_moving_body(b):
    b.add_joint_revolute(b.add_body(0, name="b", mass=0.0), name="j")


def _free_joint_not_root(b):
    parent = b.add_body(0, name="p", **UNIT)
    b.add_joint_free(b.add_body(parent, name="b", **UNIT), name="f")


def _free_joint_not_root_via_add_joint(b):
    parent = b.add_body(0, name="p", **UNIT)
    b.add_joint(b.add_body(parent, name="b", **UNIT), "free", name="f")


def _unknown_joint_type(b):
    b.add_joint(b.add_body(0, name="b", **UNIT), "universal", name="j")


@pytest.mark.parametrize("make, element, attribute", [
    (_bad_inertia_negative, "body 'b'", "inertia"),
    (_bad_inertia_triangle, "body 'b'", "inertia"),
    (_bad_full_inertia, "body 'b'", "inertia"),
    (_non_unit_axis, "joint 'j'", "axis"),
    (_lower_above_upper, "joint 'j'", "range"),
    (_actuator_missing_joint, "actuator 'a'", "joint"),
    (_actuator_missing_joint_id, "actuator 'a'", "joint"),
    (_tendon_missing_joint, "tendon 't'", "joint"),
    (_zero_mass_moving_body, "body 'b'", "mass"),
    (_free_joint_not_root, "joint 'f'", "type"),
    (_free_joint_not_root_via_add_joint, "joint 'f'", "type"),
    (_unknown_joint_type, "joint 'j'", "type"),
])
def test_validation_errors_name_element_and_attribute(make, element, attribute):
    b = ModelBuilder()
    with pytest.raises(ModelError) as info:
        make(b)  # some are caught when added, the rest when compiled
        b.finalize()
    err = info.value
    assert err.element == element and err.attribute == attribute, str(err)
    assert f"<{element}>" in str(err) and f"attribute '{attribute}'" in str(err)


def test_no_joint_after_a_free_joint():
    b = ModelBuilder()
    body = b.add_body(0, name="b", **UNIT)
    b.add_joint_free(body, name="f")
    with pytest.raises(ModelError, match="only joint") as info:
        b.add_joint_revolute(body, name="j")
    assert info.value.attribute == "type"


# --- immutability --------------------------------------------------------------------------

def test_model_is_immutable():
    b = ModelBuilder()
    b.add_joint_revolute(b.add_body(0, name="b", **UNIT), name="j")
    m = b.finalize()
    assert isinstance(m, Model)
    with pytest.raises(AttributeError):
        m.nq = 5
    with pytest.raises(AttributeError):
        m.body_mass = np.ones(2)
    with pytest.raises(ValueError):
        m.body_mass[1] = 2.0
    with pytest.raises(ValueError):
        m.jnt_axis[0, 0] = 1.0
    with pytest.raises(AttributeError):
        m.opt.timestep = 0.01
    with pytest.raises(ValueError):
        m.opt.gravity[2] = 0.0
    # the builder stays editable and does not reach into models it already made
    b.opt.timestep = 0.01
    b.opt.gravity[2] = 0.0
    assert m.opt.timestep == 0.002 and m.opt.gravity[2] == -9.81
    assert b.finalize().opt.timestep == 0.01
    # an edited copy is the way to change a model
    m2 = dataclasses.replace(m, opt=dataclasses.replace(m.opt, timestep=0.005))
    assert m2.opt.timestep == 0.005 and m.opt.timestep == 0.002


def test_joint_ids_follow_addition_order_for_actuators_and_tendons():
    # Joints are compiled in body order; ids returned by add_joint must still resolve
    # to the joint they were returned for.
    b = ModelBuilder()
    first = b.add_body(0, name="first", **UNIT)
    second = b.add_body(0, name="second", **UNIT)
    j_second = b.add_joint_revolute(second, name="on_second")
    j_first = b.add_joint_prismatic(first, name="on_first")
    b.add_actuator(j_second, name="a_second")
    b.add_actuator(j_first, name="a_first")
    b.add_tendon_fixed([(j_second, 2.0)], name="t")
    m = b.finalize()
    assert m.jnt_name == ["on_first", "on_second"]
    assert m.actuator_trnid.tolist() == [m.joint("on_second"), m.joint("on_first")]
    assert m.wrap_objid.tolist() == [m.joint("on_second")]


# --- the Newton articulation view ------------------------------------------------------------

def test_articulation_views_for_free_ball_hinge_slide():
    b = ModelBuilder()
    torso = b.add_body(0, pos=(0, 0, 1), name="torso", **UNIT)
    b.add_joint_free(torso, name="root")
    arm = b.add_body(torso, pos=(0.2, 0, 0), name="arm", **UNIT)
    b.add_joint_ball(arm, name="shoulder")
    fore = b.add_body(arm, pos=(0.3, 0, 0), name="fore", **UNIT)
    b.add_joint_revolute(fore, axis=(0, 1, 0), limit_lower=-2.0, limit_upper=0.5, name="elbow")
    hand = b.add_body(fore, pos=(0.3, 0, 0), name="hand", **UNIT)
    b.add_joint_prismatic(hand, axis=(0, 0, 1), name="slide")
    m = b.finalize()

    assert (m.nq, m.nv, m.njnt) == (13, 11, 4)
    np.testing.assert_array_equal(m.joint_q_start, [0, 7, 11, 12, 13])
    np.testing.assert_array_equal(m.joint_qd_start, [0, 6, 9, 10, 11])
    np.testing.assert_array_equal(m.joint_dof_dim, [[3, 3], [0, 3], [0, 1], [1, 0]])
    axes = np.zeros((11, 3))
    axes[0:3] = axes[3:6] = axes[6:9] = np.eye(3)
    axes[9] = (0, 1, 0)
    axes[10] = (0, 0, 1)
    np.testing.assert_array_equal(m.joint_axis, axes)
    lower = np.full(11, -np.inf)
    upper = np.full(11, np.inf)
    lower[9], upper[9] = -2.0, 0.5
    np.testing.assert_array_equal(m.joint_limit_lower, lower)
    np.testing.assert_array_equal(m.joint_limit_upper, upper)
    np.testing.assert_array_equal(m.qpos0, [0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0])

    mj = mujoco.MjModel.from_xml_string("""<mujoco><compiler angle="radian"/><worldbody>
      <body name="torso" pos="0 0 1"><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
        <freejoint name="root"/>
        <body name="arm" pos="0.2 0 0"><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
          <joint name="shoulder" type="ball"/>
          <body name="fore" pos="0.3 0 0"><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
            <joint name="elbow" axis="0 1 0" range="-2 0.5"/>
            <body name="hand" pos="0.3 0 0"><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
              <joint name="slide" type="slide" axis="0 0 1"/>
            </body></body></body></body></worldbody></mujoco>""")
    assert m.jnt_type.tolist() == [JNT_FREE, JNT_BALL, JNT_HINGE, JNT_SLIDE] == mj.jnt_type.tolist()
    for name in ("jnt_qposadr", "jnt_dofadr", "dof_parentid", "dof_jntid", "dof_bodyid", "jnt_limited"):
        np.testing.assert_array_equal(getattr(m, name), getattr(mj, name), err_msg=name)
    np.testing.assert_allclose(m.qpos0, mj.qpos0, atol=1e-12)


# --- one robot, three routes ------------------------------------------------------------------

# A base welded to the world, a limited shoulder, a slider and a welded tool; the
# shoulder link's inertial has off-diagonal terms and a rotated frame.
_SHOULDER = dict(pos=(0.0, 0.0, 0.1), rpy=(0.1, -0.2, 0.3))
_SHOULDER_INERTIA = np.array([[0.027, 0.001, -0.002], [0.001, 0.025, 0.0015], [-0.002, 0.0015, 0.005]])
_SHOULDER_INERTIAL = dict(pos=(0.01, 0.02, 0.2), rpy=(0.3, 0.2, 0.1), mass=2.0)

THREE_WAY_URDF = """<robot name="three">
  <link name="base">
    <inertial><mass value="4"/><inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>
    <collision><origin xyz="0 0 0.05"/><geometry><box size="0.2 0.2 0.1"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0.1 -0.2 0.3"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.2" effort="10" velocity="2"/>
    <dynamics damping="0.5" friction="0.1"/>
  </joint>
  <link name="upper">
    <inertial>
      <origin xyz="0.01 0.02 0.2" rpy="0.3 0.2 0.1"/>
      <mass value="2"/>
      <inertia ixx="0.027" ixy="0.001" ixz="-0.002" iyy="0.025" iyz="0.0015" izz="0.005"/>
    </inertial>
    <collision><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.03" length="0.4"/></geometry></collision>
  </link>
  <joint name="slider" type="prismatic">
    <parent link="upper"/><child link="carriage"/>
    <origin xyz="0 0 0.4"/>
    <axis xyz="0 0 1"/>
    <limit lower="-0.1" upper="0.2" effort="10" velocity="1"/>
    <dynamics damping="1.5"/>
  </joint>
  <link name="carriage">
    <inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
    <collision><geometry><sphere radius="0.04"/></geometry></collision>
  </link>
  <joint name="tool_mount" type="fixed">
    <parent link="carriage"/><child link="tool"/>
    <origin xyz="0 0 0.05"/>
  </joint>
  <link name="tool">
    <inertial><mass value="0.1"/><inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.0001"/></inertial>
  </link>
</robot>
"""

THREE_WAY_MJCF = """<mujoco model="three">
  <compiler angle="radian" eulerseq="XYZ" inertiafromgeom="false"/>
  <worldbody>
    <body name="base">
      <inertial pos="0 0 0" mass="4" diaginertia="0.02 0.02 0.03"/>
      <geom type="box" size="0.1 0.1 0.05" pos="0 0 0.05"/>
      <body name="upper" pos="0 0 0.1" euler="0.1 -0.2 0.3">
        <joint name="shoulder" type="hinge" axis="0 1 0" range="-1.5 1.2" damping="0.5" frictionloss="0.1"/>
        <frame pos="0.01 0.02 0.2" euler="0.3 0.2 0.1">
          <inertial pos="0 0 0" mass="2" fullinertia="0.027 0.025 0.005 0.001 -0.002 0.0015"/>
        </frame>
        <geom type="cylinder" size="0.03 0.2" pos="0 0 0.2"/>
        <body name="carriage" pos="0 0 0.4">
          <joint name="slider" type="slide" axis="0 0 1" range="-0.1 0.2" damping="1.5"/>
          <inertial pos="0 0 0" mass="0.5" diaginertia="0.001 0.001 0.001"/>
          <geom type="sphere" size="0.04"/>
          <body name="tool" pos="0 0 0.05">
            <inertial pos="0 0 0" mass="0.1" diaginertia="0.0001 0.0001 0.0001"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _three_way_builder() -> Model:
    b = ModelBuilder("three")
    base = b.add_body(0, name="base", mass=4.0, inertia=np.diag([0.02, 0.02, 0.03]))
    b.add_shape_box(base, hx=0.1, hy=0.1, hz=0.05, pos=(0, 0, 0.05))
    rot = quat_to_mat(euler_to_quat(_SHOULDER_INERTIAL["rpy"], "XYZ"))
    upper = b.add_body(base, pos=_SHOULDER["pos"], quat=euler_to_quat(_SHOULDER["rpy"], "XYZ"), name="upper",
                       mass=_SHOULDER_INERTIAL["mass"], com=_SHOULDER_INERTIAL["pos"],
                       inertia=rot @ _SHOULDER_INERTIA @ rot.T)
    b.add_joint_revolute(upper, axis=(0, 1, 0), limit_lower=-1.5, limit_upper=1.2, name="shoulder",
                         damping=0.5, frictionloss=0.1)
    b.add_shape_cylinder(upper, radius=0.03, half_height=0.2, pos=(0, 0, 0.2))
    carriage = b.add_body(upper, pos=(0, 0, 0.4), name="carriage", mass=0.5, inertia=np.diag([0.001] * 3))
    b.add_joint_prismatic(carriage, axis=(0, 0, 1), limit_lower=-0.1, limit_upper=0.2, name="slider", damping=1.5)
    b.add_shape_sphere(carriage, radius=0.04)
    tool = b.add_body(carriage, pos=(0, 0, 0.05), name="tool", mass=0.1, inertia=np.diag([0.0001] * 3))
    b.add_joint_fixed(tool, name="tool_mount")
    return b.finalize()


def _assert_same_model(a: Model, b: Model, route: str):
    """Every array of the two models agrees (quaternions up to sign, inertia as a tensor)."""
    skip = {"body_iquat", "body_inertia", "body_quat", "geom_quat", "site_quat"}
    for f in dataclasses.fields(Model):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in skip or not isinstance(x, np.ndarray):
            continue
        assert x.shape == y.shape, f"{route}: {f.name} shape {x.shape} != {y.shape}"
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12, err_msg=f"{route}: {f.name}")
    for name in ("body_quat", "geom_quat", "site_quat"):
        for x, y in zip(getattr(a, name), getattr(b, name)):
            assert min(np.abs(x - y).max(), np.abs(x + y).max()) <= 1e-12, f"{route}: {name}"
    for i in range(a.nbody):
        np.testing.assert_allclose(_tensor(a.body_iquat[i], a.body_inertia[i]),
                                   _tensor(b.body_iquat[i], b.body_inertia[i]), atol=1e-12,
                                   err_msg=f"{route}: inertia of body {i}")
    for name in ("nq", "nv", "nbody", "njnt", "ngeom", "nu", "body_name", "jnt_name"):
        assert getattr(a, name) == getattr(b, name), f"{route}: {name}"


def test_three_routes_builder_and_urdf_agree():
    built = _three_way_builder()
    _assert_same_model(built, load_urdf_string(THREE_WAY_URDF), "URDF")


def test_three_routes_builder_matches_mujoco():
    built = _three_way_builder()
    mj = mujoco.MjModel.from_xml_string(THREE_WAY_MJCF)
    for name in ("body_parentid", "jnt_type", "jnt_limited", "geom_type", "geom_bodyid", "dof_parentid"):
        np.testing.assert_array_equal(getattr(built, name), getattr(mj, name), err_msg=name)
    for name in ("body_pos", "body_mass", "body_ipos", "jnt_axis", "jnt_range", "dof_damping",
                 "dof_frictionloss", "geom_size", "geom_pos", "qpos0"):
        np.testing.assert_allclose(getattr(built, name), getattr(mj, name), atol=1e-12, err_msg=name)
    for i in range(built.nbody):
        np.testing.assert_allclose(_tensor(built.body_iquat[i], built.body_inertia[i]),
                                   _tensor(mj.body_iquat[i], mj.body_inertia[i]), atol=1e-12)


def test_three_routes_mjcf_agrees():
    from taigym.physics.compiler.mjcf import load_mjcf_string

    _assert_same_model(_three_way_builder(), load_mjcf_string(THREE_WAY_MJCF), "MJCF")
