"""Models a package builds in code, named in a task file as ``module:function(arguments)``
(dm_control's swimmer), and MJCF text whose include files come with it (``assets``)."""

import textwrap

import numpy as np
import pytest
from taigym.physics import ModelError
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.tasks import ConfigError, Task

SWIMMER = "dm_control.suite.swimmer:get_model_and_assets"

TASK = textwrap.dedent("""\
    id: Test/Generated-v0
    robot:
      asset: ASSET
    observations:
      - term: qpos
    rewards:
      - term: alive
        weight: 1.0
    episode_length: 10
""")

ROBOT = b"""<mujoco><include file="./parts/arm.xml"/><worldbody><body name="base">
  <joint name="hinge" type="hinge"/><geom type="sphere" size=".1"/></body></worldbody></mujoco>"""
ARM = b"""<mujoco><option timestep="0.005"/><worldbody><body name="arm" pos="1 0 0">
  <joint name="slide" type="slide"/><geom type="box" size=".1 .1 .1"/></body></worldbody></mujoco>"""


def _task(tmp_path, asset):
    path = tmp_path / "task.yaml"
    path.write_text(TASK.replace("ASSET", asset))
    return Task.from_source(path)


def test_include_files_from_assets(tmp_path):
    # the include is found by its normalized name, and the disk is not read for it
    model = load_mjcf_string(ROBOT, base_dir=tmp_path, assets={"parts/arm.xml": ARM})
    assert model.jnt_name == ["slide", "hinge"] and model.opt.timestep == 0.005
    with pytest.raises(ModelError, match="arm.xml"):
        load_mjcf_string(ROBOT, base_dir=tmp_path)
    with pytest.raises(ModelError, match="assets must be a dict"):
        load_mjcf_string(ROBOT, assets=[ARM])


@pytest.mark.parametrize("links", [6, 15])
def test_generated_swimmer_is_mujocos(tmp_path, links):
    mujoco = pytest.importorskip("mujoco")
    swimmer = pytest.importorskip("dm_control.suite.swimmer")
    ours = _task(tmp_path, f"{SWIMMER}({links})").model
    theirs = mujoco.MjModel.from_xml_string(*swimmer.get_model_and_assets(links))
    assert (ours.nq, ours.nv, ours.nu, ours.nbody, ours.ngeom) == (
        theirs.nq, theirs.nv, theirs.nu, theirs.nbody, theirs.ngeom)
    np.testing.assert_allclose(ours.body_mass, theirs.body_mass, rtol=1e-12)
    np.testing.assert_allclose(ours.jnt_range, theirs.jnt_range, rtol=1e-12)
    assert ours.opt.density == theirs.opt.density == 3000


def test_keyword_arguments(tmp_path):
    pytest.importorskip("dm_control.suite.swimmer")
    assert _task(tmp_path, f"{SWIMMER}(n_joints=4)").model.nu == 3


BAD = {
    "not a literal": (f"{SWIMMER}(n)", "not literals"),
    "a call in the arguments": (f"{SWIMMER}(int('6'))", "not literals"),
    "unpacked arguments": (f"{SWIMMER}(*[6])", "not literals"),
    "no such function": ("dm_control.suite.swimmer:get_model_and_asset(6)",
                         "did you mean 'get_model_and_assets'"),
    "no such module": ("dm_control.suite.swimer:get_model_and_assets(6)", "cannot import"),
    "package not installed": ("nosuchpkg.models:make(3)", "not installed"),
    "the generator refuses": (f"{SWIMMER}(2)", "ValueError: At least 3 bodies"),
    "not MJCF text": ("dm_control.suite.swimmer:_make_body(1)", "returned"),
}


@pytest.mark.parametrize("asset,fragment", BAD.values(), ids=BAD.keys())
def test_bad_generator_is_one_line_at_the_key(tmp_path, asset, fragment):
    pytest.importorskip("dm_control.suite.swimmer")
    with pytest.raises(ConfigError) as err:
        _task(tmp_path, f'"{asset}"')
    message = str(err.value)
    assert "key 'robot.asset'" in message and fragment in message and "\n" not in message
