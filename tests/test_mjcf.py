"""The MJCF importer against mujoco's own compiler, field by field, and its errors.

Compiled quantities are compared with ``mujoco.MjModel`` on the same XML to 1e-12
(both sides compute them in float64 from the same numbers; quaternions up to sign,
inertia as the tensor R diag(I) R^T since principal axes of equal moments are not unique).
"""

import warnings

import mujoco
import numpy as np
import pytest
from conftest import GYM_MODELS, gym_asset
from oracle import smooth
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf, load_mjcf_string
from taigym.physics.compiler.transforms import quat_to_mat

from taigym import physics

TOL = 1e-12
FIELDS = (
    "body_parentid", "body_pos", "body_mass", "body_ipos", "jnt_type", "jnt_bodyid", "jnt_qposadr", "jnt_dofadr",
    "jnt_pos", "jnt_axis", "jnt_stiffness", "dof_damping", "dof_armature", "dof_frictionloss", "dof_parentid",
    "qpos0", "qpos_spring", "geom_type", "geom_bodyid", "geom_size", "geom_pos", "geom_contype",
    "geom_conaffinity", "geom_condim", "geom_friction", "site_bodyid", "site_pos", "actuator_trnid",
    "actuator_ctrllimited", "actuator_forcelimited", "actuator_gainprm", "actuator_biasprm",
    "tendon_stiffness", "tendon_damping", "tendon_lengthspring",
)


def _tensor(quat, moments):
    rot = quat_to_mat(quat)
    return rot @ np.diag(moments) @ rot.T


def assert_matches_mujoco(ours, mj):
    for name in ("nq", "nv", "nbody", "njnt", "ngeom", "nsite", "nu", "ntendon", "nkey"):
        assert getattr(ours, name) == getattr(mj, name), name
    for name in FIELDS:
        ref = getattr(mj, name)[:, 0] if name == "actuator_trnid" else getattr(mj, name)
        np.testing.assert_allclose(getattr(ours, name), ref, rtol=0, atol=TOL, err_msg=name)
    limited = np.asarray(mj.jnt_limited, bool)
    np.testing.assert_array_equal(ours.jnt_limited.astype(bool), limited)
    np.testing.assert_allclose(ours.jnt_range[limited], mj.jnt_range[limited], atol=TOL)
    for u in range(mj.nu):
        if mj.actuator_ctrllimited[u]:
            np.testing.assert_allclose(ours.actuator_ctrlrange[u], mj.actuator_ctrlrange[u], atol=TOL)
        if mj.actuator_forcelimited[u]:
            np.testing.assert_allclose(ours.actuator_forcerange[u], mj.actuator_forcerange[u], atol=TOL)
        np.testing.assert_allclose(ours.actuator_gear[u], mj.actuator_gear[u], atol=TOL)
    for name in ("body_quat", "geom_quat", "site_quat"):
        for i, (x, y) in enumerate(zip(getattr(ours, name), getattr(mj, name))):
            assert min(np.abs(x - y).max(), np.abs(x + y).max()) <= TOL, (name, i, x, y)
    for i in range(mj.nbody):
        np.testing.assert_allclose(_tensor(ours.body_iquat[i], ours.body_inertia[i]),
                                   _tensor(mj.body_iquat[i], mj.body_inertia[i]), atol=TOL, err_msg=f"inertia {i}")
    assert ours.opt.timestep == mj.opt.timestep
    np.testing.assert_array_equal(ours.opt.gravity, mj.opt.gravity)
    assert (ours.opt.density, ours.opt.viscosity) == (mj.opt.density, mj.opt.viscosity)
    assert ours.opt.integrator == int(mj.opt.integrator)
    assert ours.opt.disableflags == int(mj.opt.disableflags)
    if mj.nkey:
        np.testing.assert_allclose(ours.key_qpos, mj.key_qpos, atol=TOL)
        np.testing.assert_allclose(ours.key_qvel, mj.key_qvel, atol=TOL)
        np.testing.assert_allclose(ours.key_ctrl, mj.key_ctrl, atol=TOL)


@pytest.mark.parametrize("name", GYM_MODELS)
def test_gym_models_compile_like_mujoco(name):
    path = gym_asset(name)
    assert_matches_mujoco(load_mjcf(path), mujoco.MjModel.from_xml_path(path))


FEATURES = """<mujoco model="features">
  <compiler angle="degree" eulerseq="zyx" autolimits="true"/>
  <option timestep="0.004" gravity="0 0.5 -9" density="1.2" viscosity="0.01" integrator="RK4">
    <flag gravity="enable" clampctrl="disable"/>
  </option>
  <default>
    <joint damping="0.5" armature="0.01"/>
    <geom density="500" friction="0.7"/>
    <motor ctrlrange="-2 2"/>
    <default class="stiff">
      <joint stiffness="3" springref="10" damping="0.2"/>
      <geom type="box" size="0.05 0.06 0.07" condim="4"/>
      <default class="stiffer">
        <joint stiffness="9"/>
      </default>
    </default>
  </default>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="64" height="64" rgb1="0 0 0" rgb2="1 1 1"/>
    <material name="floor" texture="grid" texrepeat="2 2" rgba="0.8 0.8 0.8 1"/>
  </asset>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1" directional="true"/>
    <geom name="floor" type="plane" size="5 5 0.1" material="floor"/>
    <camera name="side" pos="0 -3 1" xyaxes="1 0 0 0 0.3 1"/>
    <body name="base" pos="0 0 1" euler="10 20 30">
      <freejoint name="root"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.2 0.1 -0.3"/>
      <geom type="ellipsoid" size="0.05 0.07" fromto="0 0 0 0 0.2 0"/>
      <site name="imu" pos="0.01 0 0" zaxis="1 1 0"/>
      <body name="arm" pos="0.1 0 0" axisangle="1 1 0 40" childclass="stiff">
        <joint name="shoulder" type="ball" range="0 60"/>
        <geom pos="0 0 0.1" euler="5 0 0"/>
        <frame pos="0 0.1 0" quat="0.9 0.1 0.2 0.3">
          <body name="forearm" pos="0 0 0.2" xyaxes="0 1 0 -1 0 0">
            <joint name="elbow" axis="1 2 0" range="-30 120" class="stiffer" ref="5"/>
            <joint name="slide" type="slide" axis="0 0 1" range="-0.1 0.1"/>
            <geom type="cylinder" size="0.03 0.1" mass="0.4"/>
            <geom class="main" type="sphere" size="0.04" pos="0 0 0.1"/>
          </body>
        </frame>
      </body>
      <body name="leg" pos="-0.1 0 0" zaxis="0 1 1">
        <inertial pos="0 0 -0.1" euler="0 10 0" mass="1.5" diaginertia="0.01 0.02 0.03"/>
        <joint name="hip" axis="0 1 0"/>
        <geom type="box" size="0.02 0.02 0.1"/>
        <body name="foot" pos="0 0 -0.2">
          <inertial pos="0 0 0" mass="0.3" fullinertia="0.002 0.003 0.004 0.0001 -0.0002 0.0003"/>
          <joint name="ankle" axis="1 0 0" range="-45 45" limited="false"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="coupling" stiffness="2" damping="0.1" springlength="0.3">
      <joint joint="elbow" coef="0.5"/>
      <joint joint="hip" coef="-1"/>
    </fixed>
  </tendon>
  <actuator>
    <motor name="m_hip" joint="hip" gear="40"/>
    <position name="p_elbow" joint="elbow" kp="30" kv="2" ctrlrange="-1 1" forcerange="-5 5"/>
    <velocity name="v_slide" joint="slide" kv="4"/>
    <general name="g_ankle" joint="ankle" gaintype="affine" gainprm="2 0.1 0.2" biastype="affine" biasprm="0.1 -1 -0.5"/>
    <motor name="m_tendon" tendon="coupling" gear="3" ctrllimited="false"/>
  </actuator>
  <keyframe>
    <key name="home" qpos="0 0 1 1 0 0 0 1 0 0 0 0.2 0.01 0.3 0.1" ctrl="1 0.5 0 0 0"/>
  </keyframe>
</mujoco>
"""


def test_features_compile_like_mujoco():
    assert_matches_mujoco(load_mjcf_string(FEATURES), mujoco.MjModel.from_xml_string(FEATURES))


def test_features_dynamics_match_mujoco(device):
    """The compiled features also move the same: forward quantities at a random state."""
    model = smooth(load_mjcf_string(FEATURES))
    mjm = mujoco.MjModel.from_xml_string(FEATURES)
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    d = mujoco.MjData(mjm)
    mujoco.mj_resetDataKeyframe(mjm, d, 0)
    d.qvel[:] = np.random.default_rng(1).normal(size=mjm.nv)
    mujoco.mj_forward(mjm, d)
    world = physics.World(model, num_envs=1, device=device, precision="float64")
    world.set_state(qpos=d.qpos[None], qvel=d.qvel[None])
    world.set_ctrl(d.ctrl[None])
    world.forward()
    for key in ("qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc", "xpos"):
        np.testing.assert_allclose(world.get(key)[0], getattr(d, key), rtol=0, atol=1e-9, err_msg=key)


def test_visual_elements_are_kept():
    model = load_mjcf_string(FEATURES)
    assert model.visual["cameras"][0]["name"] == "side"
    assert model.visual["lights"][0]["directional"] is True
    assert model.visual["materials"]["floor"]["texture"] == "grid"
    assert "grid" in model.visual["textures"]
    assert model.visual["geom_material"][0] == "floor"


def test_include_and_settotalmass(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "arm.xml").write_text(
        '<mujocoinclude><body name="link" pos="0 0 1"><joint axis="0 1 0"/>'
        '<geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/></body></mujocoinclude>')
    (tmp_path / "robot.xml").write_text(
        '<mujoco><compiler settotalmass="7"/><worldbody><include file="parts/arm.xml"/></worldbody></mujoco>')
    ours = physics.load_model(tmp_path / "robot.xml")
    assert_matches_mujoco(ours, mujoco.MjModel.from_xml_path(str(tmp_path / "robot.xml")))
    assert ours.body_mass.sum() == pytest.approx(7.0, abs=1e-12)


# --- errors ------------------------------------------------------------------------------
def _error(text, **kw) -> ModelError:
    with pytest.raises(ModelError) as info:
        load_mjcf_string(text, **kw)
    return info.value


def test_unsupported_element_names_file_line_element():
    e = _error('<mujoco>\n<worldbody>\n<body name="b">\n<geom size="0.1"/>\n</body>\n</worldbody>\n'
               '<sensor>\n<jointlimitpos joint="j"/>\n</sensor>\n</mujoco>')
    assert (e.line, e.element) == (8, "sensor") and "<jointlimitpos>" in str(e) and "strict=False" in str(e)


def test_unsupported_attribute_names_attribute_and_line(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text('<mujoco>\n<worldbody>\n<body name="b">\n  <joint name="j" springyield="0.5"/>\n'
                    '<geom size="0.1"/>\n</body>\n</worldbody>\n</mujoco>')
    with pytest.raises(ModelError) as info:
        load_mjcf(path)
    e = info.value
    assert (e.file, e.line, e.element, e.attribute) == (str(path), 4, "joint 'j'", "springyield")
    assert f"{path}:4" in str(e)


def test_non_strict_warns_once_listing_everything():
    text = ('<mujoco>\n<worldbody>\n<body name="b">\n<joint name="j" springyield="0.5"/>\n<geom size="0.1"/>\n'
            '<geom type="sdf" mesh="m"/>\n</body>\n</worldbody>\n<sensor><clock/></sensor>\n</mujoco>')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf_string(text, strict=False)
    messages = [str(w.message) for w in caught if "unsupported MJCF" in str(w.message)]
    assert len(messages) == 1
    assert "ignored 3" in messages[0]
    for part in ("line 4: attribute 'springyield'", "line 6: sdf geoms", "line 9: element <clock>"):
        assert part in messages[0]
    assert model.ngeom == 1 and model.njnt == 1


def test_error_in_included_file_names_that_file(tmp_path):
    (tmp_path / "part.xml").write_text('<mujoco>\n<body>\n<geom size="0.1" priority="2.5"/>\n</body>\n</mujoco>')
    (tmp_path / "main.xml").write_text('<mujoco><worldbody><include file="part.xml"/></worldbody></mujoco>')
    with pytest.raises(ModelError) as info:
        load_mjcf(tmp_path / "main.xml")
    assert info.value.file == str((tmp_path / "part.xml").resolve()) and info.value.line == 3
    assert info.value.attribute == "priority"


@pytest.mark.parametrize("text, element, attribute, words", [
    ('<mujoco><worldbody><body><joint name="j" range="1 -1"/><geom size="1"/></body></worldbody></mujoco>',
     "joint 'j'", "range", "lower limit"),
    ('<mujoco><worldbody><body><joint name="j" axis="0 0 0"/><geom size="1"/></body></worldbody></mujoco>',
     "joint 'j'", "axis", "zero length"),
    ('<mujoco><worldbody><body><geom name="g" size="abc"/></body></worldbody></mujoco>',
     "geom 'g'", "size", "number"),
    ('<mujoco><worldbody><body><geom name="g" type="box" size="0.1 0.1"/></body></worldbody></mujoco>',
     "geom 'g'", "size", "positive"),
    ('<mujoco><worldbody><body childclass="nope"><geom size="1"/></body></worldbody></mujoco>',
     "body", "childclass", "unknown default class"),
    ('<mujoco><worldbody><body name="b"><inertial pos="0 0 0" mass="1"/></body></worldbody></mujoco>',
     "body 'b' <inertial>", "diaginertia", "diaginertia"),
    ('<mujoco><worldbody><body name="b"><inertial pos="0 0 0" mass="1" diaginertia="1 -1 1"/></body>'
     '</worldbody></mujoco>', "body 'b' <inertial>", "diaginertia", ">= 0"),
    ('<mujoco><worldbody><body><joint/><geom size="1"/></body></worldbody>'
     '<actuator><motor name="m" joint="missing"/></actuator></mujoco>', "motor 'm'", "joint", "missing"),
    ('<mujoco><option integrator="Verlet"/></mujoco>', "option", "integrator", "unknown integrator"),
    ('<mujoco><worldbody><body name="b" quat="1 0 0 0" euler="0 0 1"><geom size="1"/></body></worldbody></mujoco>',
     "body 'b'", "euler", "orientation given twice"),
    ('<robot/>', "robot", None, "<mujoco>"),
])
def test_bad_models_name_element_and_attribute(text, element, attribute, words):
    e = _error(text)
    assert e.element == element and e.attribute == attribute and e.line is not None, str(e)
    assert words in str(e)


def test_malformed_xml_and_missing_files(tmp_path):
    e = _error("<mujoco><worldbody></mujoco>")
    assert "malformed XML" in str(e) and e.line == 1
    with pytest.raises(ModelError, match="cannot read the file"):
        load_mjcf(tmp_path / "absent.xml")
    (tmp_path / "main.xml").write_text('<mujoco><include file="nope.xml"/></mujoco>')
    with pytest.raises(ModelError, match="cannot read included file"):
        load_mjcf(tmp_path / "main.xml")
    (tmp_path / "loop.xml").write_text('<mujoco><include file="loop.xml"/></mujoco>')
    with pytest.raises(ModelError, match="include cycle"):
        load_mjcf(tmp_path / "loop.xml")


INERTIA_GROUPS = """<mujoco model="inertia groups">
  <compiler inertiagrouprange="{range}"/>
  <default><default class="visual"><geom group="3" contype="0" conaffinity="0" density="5000"/></default></default>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.05"/>
      <geom class="visual" type="box" pos="0.2 0.1 0" size="0.2 0.05 0.05"/>
      <body name="hand" pos="0.4 0 0">
        <joint type="hinge" axis="0 0 1"/>
        <geom type="sphere" size="0.06" group="2" mass="0.3"/>
        <geom class="visual" type="ellipsoid" pos="0.05 0 0" size="0.08 0.04 0.03"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("groups", ["0 5", "0 2", "2 3", "3 3"])
def test_inertiagrouprange_selects_the_geoms_that_give_mass(groups):
    text = INERTIA_GROUPS.format(range=groups)
    assert_matches_mujoco(load_mjcf_string(text), mujoco.MjModel.from_xml_string(text))


@pytest.mark.parametrize("groups", ["1", "2 1", "0.5 3"])
def test_a_bad_inertiagrouprange_is_named(groups):
    with pytest.raises(ModelError, match="inertiagrouprange"):
        load_mjcf_string(INERTIA_GROUPS.format(range=groups))


def test_springdamper_sets_stiffness_and_damping_as_mujoco():
    text = """<mujoco><worldbody><body pos="0 0 1">
      <joint name="hinge" axis="0 1 0" springdamper=".2 .7" armature=".01"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".05"/>
      <body pos=".3 0 0"><joint name="ball" type="ball" springdamper=".1 1.5"/><geom size=".06"/>
        <body pos=".2 0 0"><joint name="slide" type="slide" axis="1 0 0" stiffness="3" damping=".2"/>
          <geom type="box" size=".05 .04 .03"/></body></body></body></worldbody>
      <asset><skin name="s" vertex="0 0 0 1 0 0 0 1 0" face="0 1 2">
        <bone body="world" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2" vertweight="1 1 1"/></skin></asset>
      </mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(text)
    model = load_mjcf_string(text)
    np.testing.assert_allclose(model.jnt_stiffness, mjm.jnt_stiffness, rtol=1e-12, atol=0)
    np.testing.assert_allclose(model.dof_damping, mjm.dof_damping, rtol=1e-12, atol=0)
    assert model.visual["skins"][0]["name"] == "s"
    with pytest.raises(ModelError, match="springdamper values must both be > 0"):
        load_mjcf_string(text.replace('springdamper=".2 .7"', 'springdamper=".2 0"'))


def test_the_no_slip_options_are_read():
    model = load_mjcf_string('<mujoco><option noslip_iterations="3" noslip_tolerance="1e-5"/><worldbody/></mujoco>')
    assert (model.opt.noslip_iterations, model.opt.noslip_tolerance) == (3, 1e-5)
