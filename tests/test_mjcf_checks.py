"""MJCF settings the importer either applies as MuJoCo does or refuses by name: collider
options, flags, <size>/<visual>/<statistic>, discardvisual, keyframe act, actuators it
cannot drive (left out under strict=False) and the errors' locations."""

import warnings

import mujoco
import numpy as np
import pytest
from taigym.physics import ModelError
from taigym.physics.collision.convex.common import CCD_ITERATIONS, CCD_TOLERANCE
from taigym.physics.compiler.mjcf import _OPTION_DEFAULT_ONLY, load_mjcf_string

BODY = '<worldbody><body name="b"><joint name="j"/><geom size="0.1"/></body></worldbody>'


def _error(text, **kw) -> ModelError:
    with pytest.raises(ModelError) as info:
        load_mjcf_string(text, **kw)
    return info.value


def _where(e: ModelError):
    return e.line, e.element, e.attribute


def _skipped(text):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf_string(text, strict=False)
    messages = [str(w.message) for w in caught if "unsupported MJCF" in str(w.message)]
    assert len(messages) == 1
    return model, messages[0]


# --- option and flags ------------------------------------------------------------------
def test_collider_bounds_are_mujocos_defaults():
    opt = mujoco.MjModel.from_xml_string("<mujoco/>").opt
    assert _OPTION_DEFAULT_ONLY == {"ccd_iterations": opt.ccd_iterations, "ccd_tolerance": opt.ccd_tolerance}
    assert (CCD_ITERATIONS, CCD_TOLERANCE) == (opt.ccd_iterations, opt.ccd_tolerance)


@pytest.mark.parametrize("key, value", [("ccd_iterations", "50"), ("ccd_tolerance", "1e-8")])
def test_other_collider_bounds_are_refused(key, value):
    load_mjcf_string(f'<mujoco><option {key}="{_OPTION_DEFAULT_ONLY[key]:g}"/></mujoco>')
    e = _error(f'<mujoco>\n<option {key}="{value}"/></mujoco>')
    assert _where(e) == (2, "option", key) and "strict=False" in str(e)


def test_the_flags_without_an_effect_here_load():
    text = '<mujoco><option><flag nativeccd="{}" island="{}" midphase="disable" autoreset="disable"/></option></mujoco>'
    for flags in (("enable", "enable"), ("disable", "disable")):
        model = load_mjcf_string(text.format(*flags))
        assert model.opt.disableflags == mujoco.MjModel.from_xml_string(text.format(*flags)).opt.disableflags


# --- <size>, <visual>, <statistic> -------------------------------------------------------
def test_mujocos_settings_load():
    text = ('<mujoco><size njmax="100" nconmax="50" nuserdata="4" nkey="2" nuser_geom="1"/>'
            '<statistic meansize="0.1" extent="2" center="0 0 1"/>'
            '<visual><global offwidth="640"/><quality shadowsize="1024"/><map znear="0.01"/>'
            '<rgba haze="0 0 0 1"/></visual></mujoco>')
    mujoco.MjModel.from_xml_string(text)
    model = load_mjcf_string(text)
    assert model.nkey == 2 and model.visual["settings"]["visual"][0]["children"][0]["tag"] == "global"


@pytest.mark.parametrize("text, element, attribute", [
    ('<size foo="bar"/>', "size", "foo"),
    ('<statistic meanmas="1"/>', "statistic", "meanmas"),
    ('<visual><global fov="45"/></visual>', "visual <global>", "fov"),
    ('<visual><globals/></visual>', "visual", None),
])
def test_unknown_settings_are_refused(text, element, attribute):
    e = _error(f"<mujoco>\n{text}</mujoco>")
    assert _where(e) == (2, element, attribute) and "strict=False" in str(e)


# --- discardvisual ------------------------------------------------------------------------
DISCARD = """<mujoco><compiler discardvisual="{}"/>
  <asset><mesh name="hull" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/><mesh name="fit" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
    <mesh name="look" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/><mesh name="unused" vertex="0 0 0 2 0 0 0 1 0 0 0 1"/>
    <material name="red" rgba="1 0 0 1"/></asset>
  <worldbody><geom name="floor" type="plane" size="1 1 1"/>
    <body name="a"><joint/><geom type="mesh" mesh="hull"/><geom type="box" mesh="fit"/>
      <geom type="mesh" mesh="look" contype="0" conaffinity="0" material="red"/></body>
    <body name="b" pos="1 0 0"><joint type="slide"/><geom size="0.1"/>
      <geom name="paired" size="0.2" pos="0 0 1" contype="0" conaffinity="0" mass="3"/>
      <geom size="0.2" pos="0 1 1" contype="0" conaffinity="0"/></body>
    <body name="c" pos="2 0 0"><joint type="slide"/><geom size="0.2" contype="0" conaffinity="0"/></body>
    <body name="d" pos="3 0 0"><joint type="slide"/><inertial pos="0 0 0" mass="2" diaginertia="1 1 1"/>
      <geom size="0.2" contype="0" conaffinity="0"/></body>
  </worldbody>
  <contact><pair geom1="paired" geom2="floor"/></contact></mujoco>"""


@pytest.mark.parametrize("discard", ["true", "false"])
def test_discardvisual_leaves_out_what_mujoco_does(discard):
    text = DISCARD.format(discard)
    ours, mj = load_mjcf_string(text), mujoco.MjModel.from_xml_string(text)
    assert (ours.ngeom, ours.nmesh) == (mj.ngeom, mj.nmesh)
    for name in ("geom_bodyid", "geom_type", "geom_dataid", "geom_pos", "body_mass", "body_ipos", "body_inertia"):
        np.testing.assert_allclose(getattr(ours, name), getattr(mj, name), rtol=0, atol=1e-12, err_msg=name)
    assert bool(ours.visual["materials"]) == bool(mj.nmat)


# --- mass and inertia bounds ------------------------------------------------------------
BOUNDED = """<mujoco><compiler boundmass="0.05" boundinertia="0.002" balanceinertia="true" settotalmass="{}"/>
<worldbody>
  <body name="arm"><joint axis="0 1 0"/><geom size="0.1"/>
    <body name="massless" pos="0 0 0.3"><joint axis="1 0 0"/><site size="0.01"/>
      <body name="flat" pos="0 0 0.2"><joint/><inertial pos="0 0 0" mass="0.2" diaginertia="0.01 0.001 0.02"/>
      </body></body></body>
  <body name="light" pos="1 0 0"><freejoint/><geom size="0.01" mass="0.001"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("total", ["0", "3"])
def test_bounded_masses_and_balanced_inertias_are_mujocos(total):
    """boundmass and boundinertia lift light bodies (a massless one, a 1 g sphere), and
    balanceinertia evens out moments that break the triangle inequality, before settotalmass
    scales the whole (0: not asked)."""
    text = BOUNDED.format(total)
    ours, mj = load_mjcf_string(text), mujoco.MjModel.from_xml_string(text)
    for name in ("body_mass", "body_inertia", "body_subtreemass", "body_invweight0", "dof_invweight0"):
        np.testing.assert_allclose(getattr(ours, name), getattr(mj, name), rtol=1e-12, atol=1e-15, err_msg=name)


def test_a_broken_triangle_inequality_is_refused_without_balanceinertia():
    e = _error(BOUNDED.format("0").replace(' balanceinertia="true"', ""))
    assert "triangle inequality" in str(e) and e.element == "body 'flat'"


# --- keyframes --------------------------------------------------------------------------
ACTIVATED = ('<mujoco>' + BODY + '<actuator><motor joint="j"/>'
             '<general joint="j" dyntype="integrator" actlimited="true" actrange="-1 1"/>'
             '<position joint="j" timeconst="0.1"/></actuator>\n<keyframe><key act="{}" ctrl="1 2 3"/></keyframe></mujoco>')


def test_keyframe_act_is_read():
    text = ACTIVATED.format("0.5 -0.25")
    ours, mj = load_mjcf_string(text), mujoco.MjModel.from_xml_string(text)
    np.testing.assert_array_equal(ours.key_act, mj.key_act)
    np.testing.assert_array_equal(ours.key_ctrl, mj.key_ctrl)


def test_keyframe_act_of_the_wrong_size_names_its_line():
    e = _error(ACTIVATED.format("0.5"))
    assert _where(e) == (2, "key", "act") and "needs 2" in str(e)


MOCAP_KEYS = """<mujoco><worldbody>
  <body name="m1" mocap="true" pos="1 2 3" quat="0 1 0 0"><geom size="0.1"/></body>
  <body name="b" pos="0 0 1"><freejoint/><geom size="0.1"/></body>
  <body name="m2" mocap="true" pos="4 5 6" euler="0 0 30"><geom size="0.1"/></body>
</worldbody>
<keyframe>
  <key name="both" mpos="0 0 1 7 8 9" mquat="{}"/>
  <key name="neither" qpos="0 0 2 1 0 0 0"/>
  <key name="positions" mpos="0 0 1 7 8 9"/>
</keyframe></mujoco>"""


def test_keyframe_mocap_poses_are_mujocos():
    """mpos and mquat as MuJoCo compiles them: given ones as they are (quaternions normalized),
    missing ones the mocap bodies' own poses, in mocap order."""
    text = MOCAP_KEYS.format("2 0 0 0 1 1 0 0")
    ours, mj = load_mjcf_string(text), mujoco.MjModel.from_xml_string(text)
    for name in ("key_mpos", "key_mquat", "key_qpos"):
        np.testing.assert_allclose(getattr(ours, name), getattr(mj, name), rtol=0, atol=1e-15, err_msg=name)
    bare = load_mjcf_string(BODY.join(("<mujoco>", "<keyframe><key/></keyframe></mujoco>")))
    assert bare.key_mpos.shape == (1, 0) and bare.key_mquat.shape == (1, 0)


@pytest.mark.parametrize("attribute, value, message", [
    ("mquat", "1 0 0 0", "needs 8"), ("mquat", "0 0 0 0 1 0 0 0", "zero quaternion"), ("mpos", "1 2 3", "needs 6")])
def test_keyframe_mocap_poses_of_the_wrong_size_or_zero_name_their_line(attribute, value, message):
    text = MOCAP_KEYS.format(value if attribute == "mquat" else "1 0 0 0 1 0 0 0")
    if attribute == "mpos":
        text = text.replace('mpos="0 0 1 7 8 9"', f'mpos="{value}"', 1)
    e = _error(text)
    assert _where(e)[1:] == ("key 'both'", attribute) and message in str(e)


# --- actuators ----------------------------------------------------------------------------
DAMPED = """<mujoco><default><default class="servo"><position kp="7" dampratio="0.7"/></default></default>
<worldbody><body><joint name="j" armature="0.1"/><geom size="0.1" pos="0.2 0 0"/>
  <body pos="0.3 0 0"><joint name="k" axis="0 1 0"/><geom size="0.1" mass="2"/></body></body>
  <body name="base" pos="0 1 1"><freejoint/><geom type="box" size="0.2 0.1 0.05"/>
    <body pos="0.2 0 0"><joint name="hip" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.1 0 -0.3" size="0.03"/>
      <body pos="0.1 0 -0.3"><joint name="knee" axis="0 1 0" armature="0.01"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02"/></body></body></body></worldbody>
<tendon><fixed name="t"><joint joint="j" coef="1"/><joint joint="k" coef="-0.5"/></fixed></tendon>
<actuator>
  <position joint="j" kp="10" dampratio="1"/>
  <intvelocity joint="k" kp="10" dampratio="0.5" actrange="-1 1"/>
  <general joint="j" gainprm="10" biastype="affine" biasprm="0 -10 2"/>
  <position tendon="t" kp="5" dampratio="2" gear="3"/>
  <position class="servo" joint="k"/>
  <position joint="k" kp="3" kv="0.4"/>
  <position joint="hip" kp="50" dampratio="1"/>
  <position joint="knee" kp="30" dampratio="0.8" gear="2"/>
</actuator></mujoco>"""


def test_dampratio_gives_mujocos_damping():
    """A position-like actuator's damping ratio (dampratio, or a positive biasprm[2]) resolved
    against the inertia its transmission moves at qpos0 (joint, tendon, class default, and a
    floating leg's hip and knee, whose base moves with them)."""
    ours, mj = load_mjcf_string(DAMPED), mujoco.MjModel.from_xml_string(DAMPED)
    np.testing.assert_allclose(ours.actuator_biasprm, mj.actuator_biasprm, rtol=1e-12, atol=0)
    assert (ours.actuator_biasprm[:, 2] < 0).all()


def test_kv_and_dampratio_together_are_refused():
    e = _error(DAMPED.replace('kp="10" dampratio="1"', 'kp="10" kv="1" dampratio="1"'))
    assert "kv and dampratio cannot both be defined" in str(e) and e.attribute == "dampratio"



SITE = '<site name="s"/>'
ACTUATED = ('<mujoco><worldbody><body name="b"><joint name="j"/><geom size="0.1"/>' + SITE + '</body></worldbody>'
            '<actuator><motor name="first" joint="j"/>\n{}\n<motor name="last" joint="j"/></actuator>'
            '<keyframe><key ctrl="1 2 3"/></keyframe></mujoco>')


@pytest.mark.parametrize("actuator, attribute", [
    ('<motor name="x" site="s"/>', "site"),
    ('<motor name="x" body="b"/>', "body"),
    ('<motor name="x" jointinparent="j"/>', "jointinparent"),
    ('<general name="x" cranksite="s" slidersite="s" cranklength="1"/>', "cranksite"),
    ('<general name="x" joint="j" gaintype="muscle"/>', "gaintype"),
    ('<general name="x" joint="j" dyntype="muscle"/>', "dyntype"),
    ('<motor name="x" joint="j" gear="1 2"/>', "gear"),
])
def test_an_actuator_it_cannot_drive_is_refused_or_left_out(actuator, attribute):
    text = ACTUATED.format(actuator)
    e = _error(text)
    assert _where(e) == (2, actuator.split()[0][1:] + " 'x'", attribute) and "strict=False" in str(e)
    model, message = _skipped(text)
    assert model.actuator_name == ["first", "last"] and attribute in message
    np.testing.assert_array_equal(model.key_ctrl, [[1, 3]])
    assert not np.any(model.actuator_gear[:, 1:])


def test_a_left_out_actuators_activation_leaves_the_keyframe():
    text = ('<mujoco>' + BODY + '<actuator><general joint="j" dyntype="integrator"/>'
            '<general joint="j" dyntype="muscle"/><general joint="j" dyntype="filter"/></actuator>'
            '<keyframe><key act="1 2 3"/></keyframe></mujoco>')
    model, _ = _skipped(text)
    np.testing.assert_array_equal(model.key_act, [[1, 3]])


@pytest.mark.parametrize("actuator, attribute", [
    ('<position name="x" joint="j" timeconst="0.1"/>', "timeconst"),
    ('<general name="x" joint="j" dyntype="filter"/>', "dyntype"),
    ('<intvelocity name="x" joint="j" actrange="-1 1"/>', None),
])
def test_rk4_with_activation_names_what_gave_it(actuator, attribute):
    e = _error(f'<mujoco><option integrator="RK4"/>{BODY}<actuator>\n{actuator}</actuator></mujoco>')
    assert _where(e) == (2, actuator.split()[0][1:] + " 'x'", attribute)
    assert "implicitfast" in str(e)


# --- locations and namespaces ---------------------------------------------------------------
@pytest.mark.parametrize("joint, attribute", [('<freejoint name="f"/>', None),
                                              ('<joint name="f" type="free"/>', "type")])
def test_a_nested_free_joint_names_its_line(joint, attribute):
    e = _error(f'<mujoco><worldbody><body><geom size="1"/><body>\n{joint}<geom size="1"/></body></body>'
               '</worldbody></mujoco>')
    assert _where(e) == (2, "freejoint 'f'" if "freejoint" in joint else "joint 'f'", attribute)
    assert "child of the world" in str(e)


def test_break_limits_need_the_taigym_namespace():
    weld = '<equality>\n<weld body1="b" taigym:break_force="10"/></equality>'
    e = _error(f"<mujoco>{BODY}{weld}</mujoco>")
    assert _where(e) == (2, "weld", "taigym:break_force") and "xmlns:taigym" in str(e)
    model = load_mjcf_string(f'<mujoco xmlns:taigym="urn:taigym">{BODY}{weld}</mujoco>')
    assert model.eq_break_force.tolist() == [10.0]
