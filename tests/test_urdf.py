"""URDF importer: a small arm checked against the same robot written as MJCF and loaded
by ``mujoco``, plus the errors and warnings bad or unsupported URDF gives."""

from __future__ import annotations

import re
import warnings

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics import ModelError
from taigym.physics.compiler.transforms import quat_to_mat
from taigym.physics.compiler.urdf import load_urdf, load_urdf_string
from taigym.physics.model import JNT_FREE, JNT_HINGE, JNT_SLIDE

from taigym import physics

# Base welded to the world; revolute shoulder with limits; continuous elbow; prismatic
# slider; a tool welded by a fixed joint; and a camera welded to the base, declared
# after the shoulder so that body order follows the tree, not the file. Inertials have
# off-diagonal terms and rotated frames; joint origins have rpy.
ARM_URDF = """<?xml version="1.0"?>
<robot name="arm">
  <material name="blue">
    <color rgba="0.1 0.2 0.8 1"/>
  </material>
  <link name="base">
    <inertial>
      <origin xyz="0 0 0.05" rpy="0 0 0"/>
      <mass value="4.0"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.025" iyz="0" izz="0.03"/>
    </inertial>
    <visual>
      <origin xyz="0 0 0.05"/>
      <geometry><cylinder radius="0.1" length="0.1"/></geometry>
      <material name="blue"/>
    </visual>
    <collision>
      <origin xyz="0 0 0.05"/>
      <geometry><cylinder radius="0.1" length="0.1"/></geometry>
    </collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/>
    <child link="upper_arm"/>
    <origin xyz="0 0 0.1" rpy="0.1 -0.2 0.3"/>
    <axis xyz="0 0 2"/>
    <limit lower="-1.5" upper="1.2" effort="50" velocity="3"/>
    <dynamics damping="0.5" friction="0.1"/>
  </joint>
  <link name="upper_arm">
    <inertial>
      <origin xyz="0.01 0.02 0.2" rpy="0.3 0.2 0.1"/>
      <mass value="2.0"/>
      <inertia ixx="0.027" ixy="0.001" ixz="-0.002" iyy="0.025" iyz="0.0015" izz="0.005"/>
    </inertial>
    <visual name="upper_arm_visual">
      <origin xyz="0 0 0.2" rpy="0 0 0.5"/>
      <geometry><box size="0.05 0.06 0.4"/></geometry>
      <material name="red"><color rgba="1 0 0 1"/></material>
    </visual>
    <collision name="upper_arm_collision">
      <origin xyz="0 0 0.2" rpy="0 0 0.5"/>
      <geometry><box size="0.05 0.06 0.4"/></geometry>
    </collision>
  </link>
  <joint name="camera_mount" type="fixed">
    <parent link="base"/>
    <child link="camera"/>
    <origin xyz="0.1 0 0.08" rpy="0 0.4 0"/>
  </joint>
  <link name="camera">
    <inertial>
      <mass value="0.2"/>
      <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.0001"/>
    </inertial>
    <visual><geometry><box size="0.02 0.04 0.02"/></geometry></visual>
  </link>
  <joint name="elbow" type="continuous">
    <parent link="upper_arm"/>
    <child link="forearm"/>
    <origin xyz="0 0.01 0.4" rpy="-0.7 0.25 1.1"/>
    <axis xyz="1 1 0"/>
    <dynamics damping="0.2"/>
  </joint>
  <link name="forearm">
    <inertial>
      <origin xyz="0.15 0 0" rpy="1.2 -0.4 0.8"/>
      <mass value="1.2"/>
      <inertia ixx="0.002" ixy="-0.0003" ixz="0.0002" iyy="0.012" iyz="0.0001" izz="0.011"/>
    </inertial>
    <collision>
      <origin xyz="0.3 0 0"/>
      <geometry><sphere radius="0.04"/></geometry>
    </collision>
  </link>
  <joint name="slider" type="prismatic">
    <parent link="forearm"/>
    <child link="carriage"/>
    <origin xyz="0.3 0 0" rpy="0 0 -0.6"/>
    <axis xyz="0 1 0"/>
    <limit lower="-0.1" upper="0.2" effort="20" velocity="0.5"/>
    <dynamics damping="1.5" friction="0.3"/>
  </joint>
  <link name="carriage">
    <inertial>
      <origin xyz="0 0.02 0" rpy="0.5 0 0"/>
      <mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0008" iyz="0" izz="0.0006"/>
    </inertial>
    <collision>
      <geometry><box size="0.04 0.04 0.04"/></geometry>
    </collision>
  </link>
  <joint name="tool_mount" type="fixed">
    <parent link="carriage"/>
    <child link="tool"/>
    <origin xyz="0 0 0.05" rpy="3.14159 0 0.2"/>
  </joint>
  <link name="tool">
    <inertial>
      <origin xyz="0 0 0.01"/>
      <mass value="0.1"/>
      <inertia ixx="0.00002" ixy="0.000001" ixz="0" iyy="0.00002" iyz="0" izz="0.00001"/>
    </inertial>
    <visual>
      <geometry><sphere radius="0.01"/></geometry>
    </visual>
  </link>
</robot>
"""

# The same robot by hand in MJCF. URDF rpy is extrinsic x-y-z (eulerseq "XYZ"); a
# <frame> carries an inertial origin whose orientation is combined with a full tensor
# (MJCF forbids euler together with fullinertia on <inertial>); box and cylinder sizes
# are halved; visual shapes do not collide.
ARM_MJCF = """<mujoco model="arm">
  <compiler angle="radian" eulerseq="XYZ" inertiafromgeom="false"/>
  <worldbody>
    <body name="base">
      <inertial pos="0 0 0.05" mass="4.0" fullinertia="0.02 0.025 0.03 0.001 0 0"/>
      <geom type="cylinder" size="0.1 0.05" pos="0 0 0.05" contype="0" conaffinity="0" rgba="0.1 0.2 0.8 1"/>
      <geom type="cylinder" size="0.1 0.05" pos="0 0 0.05"/>
      <body name="upper_arm" pos="0 0 0.1" euler="0.1 -0.2 0.3">
        <joint name="shoulder" type="hinge" axis="0 0 2" range="-1.5 1.2" damping="0.5" frictionloss="0.1"/>
        <frame pos="0.01 0.02 0.2" euler="0.3 0.2 0.1">
          <inertial pos="0 0 0" mass="2.0" fullinertia="0.027 0.025 0.005 0.001 -0.002 0.0015"/>
        </frame>
        <geom name="upper_arm_visual" type="box" size="0.025 0.03 0.2" pos="0 0 0.2" euler="0 0 0.5"
              contype="0" conaffinity="0" rgba="1 0 0 1"/>
        <geom name="upper_arm_collision" type="box" size="0.025 0.03 0.2" pos="0 0 0.2" euler="0 0 0.5"/>
        <body name="forearm" pos="0 0.01 0.4" euler="-0.7 0.25 1.1">
          <joint name="elbow" type="hinge" axis="1 1 0" limited="false" damping="0.2"/>
          <frame pos="0.15 0 0" euler="1.2 -0.4 0.8">
            <inertial pos="0 0 0" mass="1.2" fullinertia="0.002 0.012 0.011 -0.0003 0.0002 0.0001"/>
          </frame>
          <geom type="sphere" size="0.04" pos="0.3 0 0"/>
          <body name="carriage" pos="0.3 0 0" euler="0 0 -0.6">
            <joint name="slider" type="slide" axis="0 1 0" range="-0.1 0.2" damping="1.5" frictionloss="0.3"/>
            <inertial pos="0 0.02 0" euler="0.5 0 0" mass="0.5" diaginertia="0.001 0.0008 0.0006"/>
            <geom type="box" size="0.02 0.02 0.02"/>
            <body name="tool" pos="0 0 0.05" euler="3.14159 0 0.2">
              <inertial pos="0 0 0.01" mass="0.1" fullinertia="0.00002 0.00002 0.00001 0.000001 0 0"/>
              <geom type="sphere" size="0.01" contype="0" conaffinity="0"/>
            </body>
          </body>
        </body>
      </body>
      <body name="camera" pos="0.1 0 0.08" euler="0 0.4 0">
        <inertial pos="0 0 0" mass="0.2" diaginertia="0.0001 0.0001 0.0001"/>
        <geom type="box" size="0.01 0.02 0.01" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

TOL = 1e-12


def _tensor(quat, moments):
    rot = quat_to_mat(quat)
    return rot @ np.diag(moments) @ rot.T


def _same_up_to_sign(a, b):
    return np.all([min(np.abs(x - y).max(), np.abs(x + y).max()) <= TOL for x, y in zip(a, b)])


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    path = tmp_path_factory.mktemp("urdf") / "arm.urdf"
    path.write_text(ARM_URDF)
    return physics.load_model(path)  # the .urdf route of load_model


@pytest.fixture(scope="module")
def arm_mj():
    return mujoco.MjModel.from_xml_string(ARM_MJCF)


def test_arm_matches_hand_written_mjcf(arm, arm_mj):
    m, mj = arm, arm_mj
    assert (m.nbody, m.njnt, m.nq, m.nv, m.ngeom, m.nu) == (mj.nbody, mj.njnt, mj.nq, mj.nv, mj.ngeom, mj.nu)
    assert m.body_name == [mj.body(i).name for i in range(mj.nbody)]
    assert m.jnt_name == [mj.joint(i).name for i in range(mj.njnt)]
    assert m.nu == 0  # no actuators are made from <limit effort>

    for name in ("body_parentid", "body_rootid", "body_weldid", "body_jntnum", "body_jntadr", "body_dofnum",
                 "body_dofadr", "jnt_type", "jnt_bodyid", "jnt_qposadr", "jnt_dofadr", "jnt_limited",
                 "dof_bodyid", "dof_jntid", "dof_parentid", "geom_type", "geom_bodyid", "geom_contype",
                 "geom_conaffinity"):
        np.testing.assert_array_equal(getattr(m, name), getattr(mj, name), err_msg=name)
    for name in ("body_pos", "body_mass", "body_ipos", "body_subtreemass", "jnt_pos", "jnt_axis", "jnt_range",
                 "dof_damping", "dof_frictionloss", "qpos0", "geom_size", "geom_pos"):
        np.testing.assert_allclose(getattr(m, name), getattr(mj, name), rtol=0, atol=TOL, err_msg=name)
    assert _same_up_to_sign(m.body_quat, mj.body_quat)
    assert _same_up_to_sign(m.geom_quat, mj.geom_quat)
    for i in range(m.nbody):
        np.testing.assert_allclose(_tensor(m.body_iquat[i], m.body_inertia[i]),
                                   _tensor(mj.body_iquat[i], mj.body_inertia[i]), rtol=0, atol=TOL,
                                   err_msg=m.body_name[i])
    np.testing.assert_allclose(m.geom_rgba, mj.geom_rgba, rtol=0, atol=1e-7)  # mujoco stores rgba as float32
    assert list(m.jnt_type) == [JNT_HINGE, JNT_HINGE, JNT_SLIDE]


def test_arm_matches_mujocos_own_urdf_importer(arm):
    # A second oracle: mujoco's URDF parser on the same text (static bodies kept).
    text = ARM_URDF.replace('<robot name="arm">', '<robot name="arm"><mujoco><compiler fusestatic="false" '
                                                   'discardvisual="false"/></mujoco>')
    mj = mujoco.MjModel.from_xml_string(text)
    assert sorted(arm.body_name) == sorted(mj.body(i).name for i in range(mj.nbody))
    for i, name in enumerate(arm.body_name):
        k = mj.body(name).id
        np.testing.assert_allclose(arm.body_pos[i], mj.body_pos[k], atol=TOL)
        assert _same_up_to_sign([arm.body_quat[i]], [mj.body_quat[k]])
        np.testing.assert_allclose(arm.body_ipos[i], mj.body_ipos[k], atol=TOL)
        assert arm.body_mass[i] == pytest.approx(mj.body_mass[k], abs=TOL)
        np.testing.assert_allclose(_tensor(arm.body_iquat[i], arm.body_inertia[i]),
                                   _tensor(mj.body_iquat[k], mj.body_inertia[k]), atol=TOL)
    for j, name in enumerate(arm.jnt_name):
        k = mj.joint(name).id
        np.testing.assert_allclose(arm.jnt_axis[j], mj.jnt_axis[k], atol=TOL)
        np.testing.assert_allclose(arm.jnt_range[j], mj.jnt_range[k], atol=TOL)
        assert arm.jnt_limited[j] == mj.jnt_limited[k]


def test_string_and_file_give_the_same_model(arm):
    m = load_urdf_string(ARM_URDF)
    for name in ("body_pos", "body_quat", "body_inertia", "jnt_axis", "geom_size"):
        np.testing.assert_array_equal(getattr(m, name), getattr(arm, name))


def test_fixed_joint_bodies_have_no_dofs(arm):
    for name in ("tool", "camera"):
        b = arm.body(name)
        assert arm.body_jntnum[b] == 0 and arm.body_dofnum[b] == 0
    assert arm.body_weldid[arm.body("tool")] == arm.body("carriage")
    assert arm.body_weldid[arm.body("camera")] == 0  # welded through base to the world


# --- floating bases and the world link ---------------------------------------------------

def _two_links(joint_type="revolute", root="base", extra_joint="", extra_link="", limit=True):
    limit_xml = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if limit else ""
    return f"""<robot name="r">
  <link name="{root}"/>
  <link name="body">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
  </link>
  <joint name="j" type="{joint_type}">
    <parent link="{root}"/>
    <child link="body"/>
    <origin xyz="0.1 0.2 0.3"/>
    {limit_xml}
  </joint>
  {extra_joint}
  {extra_link}
</robot>
"""


def test_floating_option_puts_a_free_joint_on_the_root():
    text = ARM_URDF
    m = load_urdf_string(text, floating=True)
    assert m.jnt_type[0] == JNT_FREE and m.jnt_bodyid[0] == m.body("base")
    assert m.jnt_name[0] == "root_joint"
    assert (m.nq, m.nv) == (10, 9)
    np.testing.assert_array_equal(m.qpos0[:7], [0, 0, 0, 1, 0, 0, 0])


def test_world_link_is_the_world_and_floating_joint_below_it_is_free():
    m = load_urdf_string(_two_links("floating", root="world", limit=False))
    assert m.body_name == ["world", "body"]
    assert m.jnt_type.tolist() == [JNT_FREE] and m.jnt_name == ["j"]
    np.testing.assert_allclose(m.qpos0, [0.1, 0.2, 0.3, 1, 0, 0, 0])

    m = load_urdf_string(_two_links("revolute", root="world"))
    assert m.body_parentid.tolist() == [0, 0] and m.jnt_type.tolist() == [JNT_HINGE]


def test_continuous_joint_is_unlimited_hinge():
    m = load_urdf_string(_two_links("continuous", limit=False))
    assert m.jnt_type.tolist() == [JNT_HINGE] and m.jnt_limited.tolist() == [0]
    np.testing.assert_array_equal(m.jnt_axis, [[1.0, 0.0, 0.0]])  # URDF's default axis


# --- errors ------------------------------------------------------------------------------

def _line_of(text, needle, occurrence=1):
    lines = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    return lines[occurrence - 1]


def _fails(tmp_path, text, *, element, attribute, needle, occurrence=1, match=None, **kw):
    """Load ``text`` from a file; check the error names file, element, attribute and line."""
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        load_urdf(path, **kw)
    err, msg = info.value, str(info.value)
    line = _line_of(text, needle, occurrence)
    assert str(path) in msg and f":{line}" in msg, msg
    assert err.file == str(path) and err.line == line, (err.file, err.line, line)
    if element is not None:
        assert element in msg and err.element == element, msg
    if attribute is not None:
        assert f"attribute '{attribute}'" in msg and err.attribute == attribute, msg
    if match is not None:
        assert re.search(match, msg), msg
    return msg


def test_missing_parent(tmp_path):
    text = _two_links().replace('<parent link="base"/>', "")
    _fails(tmp_path, text, element="joint 'j'", attribute="parent", needle='<joint name="j"')


def test_missing_child(tmp_path):
    text = _two_links().replace('<child link="body"/>', "")
    _fails(tmp_path, text, element="joint 'j'", attribute="child", needle='<joint name="j"')


def test_unknown_link(tmp_path):
    text = _two_links().replace('<child link="body"/>', '<child link="bodi"/>')
    _fails(tmp_path, text, element="joint 'j'", attribute="child", needle='<child link="bodi"/>', match="'bodi'")


def test_link_with_two_parents(tmp_path):
    extra_link = '<link name="other"/>'
    extra_joint = '<joint name="k" type="fixed">\n<parent link="other"/>\n<child link="body"/>\n</joint>'
    text = _two_links(extra_joint=extra_joint, extra_link=extra_link)
    _fails(tmp_path, text, element="joint 'k'", attribute="child", needle='<child link="body"/>', occurrence=2,
           match="one parent")


def test_cycle(tmp_path):
    extra_link = '<link name="c"/>'
    extra_joint = ('<joint name="k" type="fixed">\n<parent link="body"/>\n<child link="c"/>\n</joint>\n'
                   '<joint name="back" type="fixed">\n<parent link="c"/>\n<child link="body"/>\n</joint>')
    text = _two_links(extra_joint=extra_joint, extra_link=extra_link)
    # "body" then has two parents, which is reported first; a pure cycle has no root.
    text = text.replace('<parent link="base"/>', '<parent link="c"/>').replace(
        '<joint name="back" type="fixed">\n<parent link="c"/>\n<child link="body"/>\n</joint>', "")
    msg = _fails(tmp_path, text, element=None, attribute="parent", needle='<parent link="', match="cycle")
    assert "joint '" in msg


@pytest.mark.parametrize("value", ["0 0 abc", "0 0", "0 0 nan", "1 2 3 4"])
def test_bad_numbers(tmp_path, value):
    text = _two_links().replace('<origin xyz="0.1 0.2 0.3"/>', f'<origin xyz="{value}"/>')
    _fails(tmp_path, text, element="joint 'j'", attribute="xyz", needle="<origin xyz=")


def test_bad_mass_number(tmp_path):
    text = _two_links().replace('<mass value="1"/>', '<mass value="heavy"/>')
    _fails(tmp_path, text, element="link 'body'", attribute="value", needle="<mass value=")


def test_negative_mass(tmp_path):
    text = _two_links().replace('<mass value="1"/>', '<mass value="-1"/>')
    _fails(tmp_path, text, element="link 'body'", attribute="value", needle="<mass value=", match=">= 0")


def test_inertia_not_positive_definite(tmp_path):
    text = _two_links().replace('ixy="0"', 'ixy="0.2"')
    _fails(tmp_path, text, element="link 'body'", attribute="ixy", needle="<inertia", match="positive definite")


def test_inertia_negative_moment(tmp_path):
    text = _two_links().replace('iyy="0.1"', 'iyy="-0.1"')
    _fails(tmp_path, text, element="link 'body'", attribute="iyy", needle="<inertia")


def test_inertia_triangle_inequality(tmp_path):
    text = _two_links().replace('izz="0.1"', 'izz="0.3"')
    _fails(tmp_path, text, element="link 'body'", attribute="izz", needle="<inertia", match="triangle")


def test_lower_above_upper(tmp_path):
    text = _two_links().replace('lower="-1" upper="1"', 'lower="1" upper="-1"')
    _fails(tmp_path, text, element="joint 'j'", attribute="lower", needle="<limit", match="lower limit")


def test_revolute_needs_limits(tmp_path):
    _fails(tmp_path, _two_links(limit=False), element="joint 'j'", attribute="limit", needle='<joint name="j"')
    text = _two_links().replace('lower="-1" ', "")
    _fails(tmp_path, text, element="joint 'j'", attribute="lower", needle="<limit")


def test_zero_axis(tmp_path):
    text = _two_links().replace("<origin", '<axis xyz="0 0 0"/>\n    <origin')
    _fails(tmp_path, text, element="joint 'j'", attribute="xyz", needle="<axis", match="zero")


def test_unknown_joint_type_and_planar(tmp_path):
    _fails(tmp_path, _two_links("hinge"), element="joint 'j'", attribute="type", needle='<joint name="j"',
           match="unknown joint type")
    _fails(tmp_path, _two_links("planar"), element="joint 'j'", attribute="type", needle='<joint name="j"',
           match="planar joints are not supported")


def test_floating_joint_not_on_root(tmp_path):
    _fails(tmp_path, _two_links("floating", limit=False), element="joint 'j'", attribute="type",
           needle='<joint name="j"', match="floating")


def test_mimic_joint(tmp_path):
    extra_link = ('<link name="finger">\n<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" '
                  'iyz="0" izz="0.1"/></inertial>\n</link>')
    extra_joint = ('<joint name="k" type="revolute">\n<parent link="body"/>\n<child link="finger"/>\n'
                   '<limit lower="-1" upper="1" effort="1" velocity="1"/>\n'
                   '<mimic joint="j" multiplier="2" offset="0"/>\n</joint>')
    text = _two_links(extra_joint=extra_joint, extra_link=extra_link)
    _fails(tmp_path, text, element="joint 'k'", attribute="mimic", needle="<mimic",
           match="mimic joints are not supported yet")
    # strict=False does not drop it: ignoring it would change the robot's motion
    path = tmp_path / "robot.urdf"
    with pytest.raises(ModelError, match="mimic"):
        load_urdf(path, strict=False)


def test_malformed_xml(tmp_path):
    text = _two_links().replace("</joint>", "</joints>")
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        load_urdf(path)
    line = _line_of(text, "</joints>")
    assert f"{path}:{line}" in str(info.value) and "malformed XML" in str(info.value)
    assert info.value.line == line


def test_moving_link_without_mass(tmp_path):
    text = _two_links().replace(
        '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>', "")
    _fails(tmp_path, text, element="link 'body'", attribute="mass", needle='<link name="body"', match="positive")


def test_duplicate_link(tmp_path):
    text = _two_links(extra_link='<link name="body"/>')
    _fails(tmp_path, text, element="link 'body'", attribute="name", needle='<link name="body"', occurrence=2,
           match="duplicate")


def test_load_model_reports_missing_file(tmp_path):
    with pytest.raises(ModelError, match="cannot read"):
        physics.load_model(tmp_path / "nope.urdf")


# --- unsupported content: strict errors, one warning otherwise ------------------------------

UNSUPPORTED = """<robot name="r">
  <link name="base">
    <visual>
      <geometry><mesh filename="package://r/base.stl"/></geometry>
    </visual>
    <collision>
      <geometry><box size="0.1 0.2 0.3"/></geometry>
    </collision>
  </link>
  <transmission name="tr">
    <type>transmission_interface/SimpleTransmission</type>
  </transmission>
  <gazebo reference="base"><material>Gazebo/Blue</material></gazebo>
  <sensor name="imu"/>
</robot>
"""


def _only(*keep):
    """UNSUPPORTED with only the unsupported parts named in ``keep``."""
    parts = {"mesh": ("<visual>", "<mesh", "</visual>"), "transmission": ("transmission", "<type>"),
             "gazebo": ("<gazebo",), "sensor": ("<sensor",)}
    drop = [m for k, marks in parts.items() if k not in keep for m in marks]
    return "\n".join(line for line in UNSUPPORTED.splitlines() if not any(m in line for m in drop))


@pytest.mark.parametrize("what, element", [("mesh", "link 'base'"), ("transmission", "robot 'r'"),
                                           ("gazebo", "robot 'r'"), ("sensor", "robot 'r'")])
def test_unsupported_is_an_error_when_strict(tmp_path, what, element):
    msg = _fails(tmp_path, _only(what), element=element, attribute=None, needle=what, match=what)
    assert "strict=False" in msg


def test_unsupported_is_one_warning_when_not_strict():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_urdf_string(UNSUPPORTED, strict=False)
    assert len(caught) == 1
    text = str(caught[0].message)
    for what in ("mesh", "package://r/base.stl", "transmission", "gazebo", "sensor"):
        assert what in text, text
    for line in (4, 10, 13, 14):
        assert f"line {line}" in text, text
    # the mesh visual is skipped; the box collision remains
    assert m.ngeom == 1 and m.geom_size[0].tolist() == [0.05, 0.1, 0.15]


def test_unknown_attribute(tmp_path):
    text = _two_links().replace('<joint name="j"', '<joint name="j" stiffness="3"')
    _fails(tmp_path, text, element="joint 'j'", attribute="stiffness", needle='<joint name="j"', match="strict=False")
    with pytest.warns(UserWarning, match="stiffness"):
        load_urdf_string(text, strict=False)


@pytest.mark.parametrize("filename, reason", [("base.dae", ".dae meshes"), ("package://r/base.stl", "package not found")])
def test_an_unreadable_mesh_is_an_error_when_strict_and_left_out_otherwise(tmp_path, filename, reason):
    text = UNSUPPORTED.replace("package://r/base.stl", filename)
    text = "\n".join(line for line in text.splitlines() if not any(m in line for m in ("transmission", "<type>",
                                                                                          "gazebo", "sensor")))
    msg = _fails(tmp_path, text, element="link 'base'", attribute="filename", needle="<mesh", match=reason)
    assert "skipped" not in msg and "strict=False to leave this visual shape out" in msg, msg
    with pytest.warns(UserWarning, match="visual shape skipped"):
        assert load_urdf(tmp_path / "robot.urdf", strict=False).ngeom == 1
