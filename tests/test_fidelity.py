"""``taigym fidelity``: every shipped robot agrees with MuJoCo; a model the importer refuses
is named in one line (exit 2); a model that loads but disagrees fails (exit 1) and the
table names the offending dof.

Everything runs in this process through the CLI's ``main``, so the step kernel compiles
(or loads from Taichi's cache) once for all assets.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import mujoco  # noqa: F401  (a dev dependency: the oracle)
import numpy as np
import pytest
import yaml
from taigym.scripts import fidelity
from taigym.scripts.cli import main as cli
from taigym.tasks.loader import CONFIG_DIR

# where each package the task configs take robots from keeps them (as tasks/robot.py finds them)
PACKAGE_ASSET_DIRS = {"gymnasium": ("envs", "mujoco", "assets"), "mjlab": ()}


def _task_assets() -> set[Path]:
    """The robot files the task configs name (``gymnasium:ant.xml`` or a path in configs/)."""
    found = set()
    for cfg in sorted((CONFIG_DIR / "tasks").glob("*.yaml")):
        asset = ((yaml.safe_load(cfg.read_text()) or {}).get("robot") or {}).get("asset")
        if not asset:
            continue  # extends another config, which names the robot
        package, _, name = asset.rpartition(":")
        assert package in ("", *PACKAGE_ASSET_DIRS), f"{cfg.name}: teach this test where {package!r} keeps its assets"
        if package:
            spec = importlib.util.find_spec(package)
            if spec is None:
                continue  # mjlab, installed apart (scripts/test.sh); tests/test_robot_tasks.py skips on it
            found.add(Path(spec.submodule_search_locations[0]).joinpath(*PACKAGE_ASSET_DIRS[package], name))
        else:
            found.add(CONFIG_DIR / name)
    return found


SHIPPED = sorted(_task_assets() | {p for p in (CONFIG_DIR / "assets").iterdir() if p.suffix in (".xml", ".urdf")})

# A small arm in URDF: a base welded to the world, a revolute shoulder, a continuous elbow
# and a prismatic slider; spheres and boxes only (analytic contacts).
ARM_URDF = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base">
    <inertial><mass value="4"/><inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>
    <collision><origin xyz="0 0 0.05"/><geometry><box size="0.2 0.2 0.1"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><origin xyz="0 0 0.2" rpy="0.1 -0.2 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-1.5" upper="1.2" effort="50" velocity="3"/>
    <dynamics damping="0.5"/>
  </joint>
  <link name="upper">
    <inertial><origin xyz="0 0 0.2" rpy="0.3 0.2 0.1"/><mass value="2"/>
      <inertia ixx="0.027" ixy="0.001" ixz="-0.002" iyy="0.025" iyz="0.0015" izz="0.005"/></inertial>
    <visual><origin xyz="0 0 0.2"/><geometry><box size="0.05 0.06 0.4"/></geometry></visual>
    <collision><origin xyz="0 0 0.4"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <joint name="elbow" type="continuous">
    <parent link="upper"/><child link="fore"/><origin xyz="0 0 0.4"/><axis xyz="1 1 0"/>
  </joint>
  <link name="fore">
    <inertial><origin xyz="0.15 0 0"/><mass value="1.2"/>
      <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.011"/></inertial>
    <collision><origin xyz="0.3 0 0"/><geometry><sphere radius="0.04"/></geometry></collision>
  </link>
  <joint name="slider" type="prismatic">
    <parent link="fore"/><child link="carriage"/><origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-0.1" upper="0.2" effort="20" velocity="0.5"/>
  </joint>
  <link name="carriage">
    <inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0008" iyz="0" izz="0.0006"/></inertial>
    <collision><geometry><box size="0.04 0.04 0.04"/></geometry></collision>
  </link>
</robot>
"""


def _run(capsys, *args) -> tuple[int, str, str]:
    status = cli(["fidelity", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out, out.err


def _row(out: str, quantity: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(quantity + " "))


def test_the_shipped_assets_are_found():
    names = {p.name for p in SHIPPED}
    assert {"arm6.xml", "quadruped.xml", "quadruped_rough.xml", "sumo_ants.xml", "ant.xml", "humanoid.xml"} <= names
    assert all(p.is_file() for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_robot_agrees_with_mujoco(path, capsys):
    status, out, err = _run(capsys, path)
    assert status == 0, out + err
    for quantity in ("qM", "qfrc_bias", "qacc_smooth", "qacc", "ncon", "contact dist", "rollout qpos",
                     "rollout qvel"):
        assert _row(out, quantity).endswith(" ok"), out
    if path.name == "arm6.xml":  # its PD drives are taigym's own attributes, named in a note
        assert "note: compared without taigym's own attributes" in out and "taigym:drive_stiffness" in out


def test_a_urdf_robot_agrees_with_mujocos_urdf_import(tmp_path, capsys):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM_URDF)
    status, out, err = _run(capsys, path, "--states", "4", "--steps", "100")
    assert status == 0, out + err
    assert "shoulder" in out or "elbow" in out or "slider" in out  # dofs named in the table


@pytest.mark.slow  # a kernel of its own (mesh collisions in a URDF robot)
def test_a_urdf_robot_of_meshes_agrees_with_mujocos_urdf_import(tmp_path, capsys):
    """The arm with its shapes as STL and OBJ meshes (files beside the URDF, where MuJoCo's
    URDF import looks for them): inertia, collisions and a rollout against MuJoCo's own
    URDF compiler."""
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.box(extents=(1.4, 1.4, 0.1)).export(tmp_path / "base.stl")  # a platform the arm reaches
    trimesh.creation.icosphere(subdivisions=2, radius=0.05).export(tmp_path / "ball.obj")
    trimesh.creation.box(extents=(0.04, 0.04, 0.04)).export(tmp_path / "cube.stl")
    text = (ARM_URDF.replace('<box size="0.2 0.2 0.1"/>', '<mesh filename="base.stl"/>')
            .replace('<sphere radius="0.04"/>', '<mesh filename="ball.obj" scale="0.8 0.8 0.8"/>')
            .replace('<box size="0.04 0.04 0.04"/>', '<mesh filename="cube.stl"/>'))
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    status, out, err = _run(capsys, path, "--states", "16", "--steps", "100", "--ctrl", "random", "--seed", "1")
    assert status == 0, out + err
    # mesh on mesh: the carriage's cube on the platform
    assert int(re.search(r"(\d+) MuJoCo contacts", _row(out, "ncon")).group(1)) > 0, out


PENDULUM = """<mujoco>
  <worldbody>
    <body name="b">
      <joint name="j" type="hinge"{attr}/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>{extra}
</mujoco>"""


@pytest.mark.parametrize("text,needle", [
    (PENDULUM.format(attr="", extra='<sensor><clock/></sensor>'), "<clock>"),
    (PENDULUM.format(attr=' springyield="0.5"', extra=""), "attribute 'springyield'"),
], ids=["element", "attribute"])
def test_an_unsupported_element_or_attribute_is_named_in_one_line(tmp_path, capsys, text, needle):
    # both are valid MuJoCo, which the importer does not support
    path = tmp_path / "robot.xml"
    path.write_text(text)
    status, out, err = _run(capsys, path)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and needle in lines[0], err
    assert "Traceback" not in err and "quantity" not in out


def test_a_urdf_the_importer_refuses_is_named(tmp_path, capsys):
    path = tmp_path / "robot.urdf"
    path.write_text('<robot name="r"><link name="base"/><transmission name="t"/></robot>')
    status, _, err = _run(capsys, path)
    assert status == 2 and str(path) in err and "<transmission>" in err, err


def _perturbed(edit):
    """fidelity.load_taigym_model with ``edit(model)`` applied to what it returns."""
    load = fidelity.load_taigym_model

    def patched(path):
        model, note = load(path)
        return dataclasses.replace(model, **edit(model)).freeze(), note

    return patched


def test_extra_armature_on_one_dof_fails_and_names_it(monkeypatch, capsys):
    def armature(model):
        arm = np.array(model.dof_armature, dtype=float)
        arm[model.jnt_dofadr[model.joint("thigh_joint")]] += 0.05
        return {"dof_armature": arm}

    monkeypatch.setattr(fidelity, "load_taigym_model", _perturbed(armature))
    hopper = next(p for p in SHIPPED if p.name == "hopper.xml")
    status, out, _ = _run(capsys, hopper, "--states", "2", "--steps", "20")
    assert status == 1
    row = _row(out, "qM")
    assert row.endswith("FAIL") and "thigh_joint" in row, out
    assert "FAIL: qM" in out


def test_a_heavier_body_fails(monkeypatch, capsys):
    def mass(model):
        m = np.array(model.body_mass, dtype=float)
        m[model.body("foot")] *= 1.5
        return {"body_mass": m}

    monkeypatch.setattr(fidelity, "load_taigym_model", _perturbed(mass))
    hopper = next(p for p in SHIPPED if p.name == "hopper.xml")
    # random controls: a falling body's path does not depend on its mass, a driven one's does
    status, out, _ = _run(capsys, hopper, "--states", "2", "--steps", "20", "--ctrl", "random")
    assert status == 1
    for quantity in ("qM", "qfrc_bias", "qacc_smooth", "rollout qpos"):
        assert _row(out, quantity).endswith("FAIL"), out


def test_a_different_structure_is_one_failing_row(monkeypatch, capsys):
    pendulum = next(p for p in SHIPPED if p.name == "inverted_pendulum.xml")
    load = fidelity.load_taigym_model
    monkeypatch.setattr(fidelity, "load_taigym_model", lambda path: load(pendulum))
    hopper = next(p for p in SHIPPED if p.name == "hopper.xml")
    status, out, _ = _run(capsys, hopper)
    assert status == 1 and _row(out, "structure").endswith("FAIL") and "nq" in out, out


# --- sensors and several files at once ------------------------------------------------------

# an arm swinging over a floor, with a motor and position, velocity and touch sensors
SENSED = """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="arm" pos="0 0 0.25">
      <joint name="swing" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
      <site name="tip" pos="0.3 0 0" size="0.06"/>
    </body>
  </worldbody>
  <actuator><motor joint="swing" ctrlrange="-1 1"/></actuator>
  <sensor>
    <jointpos name="angle" joint="swing"/>
    <framepos name="tip_pos" objtype="site" objname="tip"/>
    <velocimeter name="tip_vel" site="tip"/>
    <touch name="tip_touch" site="tip"/>
  </sensor>
</mujoco>"""


def test_sensordata_is_compared_and_names_the_sensor(monkeypatch, tmp_path, capsys):
    path = tmp_path / "arm.xml"
    path.write_text(SENSED)
    status, out, err = _run(capsys, path, "--states", "4", "--steps", "0")
    assert status == 0, out + err
    assert _row(out, "sensordata").endswith(" ok"), out

    def cutoff(model):  # taigym clips the joint angle, MuJoCo does not
        cut = np.array(model.sensor_cutoff, dtype=float)
        cut[model.sensor("angle")] = 1e-3
        return {"sensor_cutoff": cut}

    monkeypatch.setattr(fidelity, "load_taigym_model", _perturbed(cutoff))
    status, out, _ = _run(capsys, path, "--states", "4", "--steps", "0")
    row = _row(out, "sensordata")
    assert status == 1 and row.endswith("FAIL") and "jointpos 'angle'" in row, out
    assert "FAIL: sensordata" in out


def _summary(out: str) -> dict[str, list[str]]:
    """The summary table's rows by model: [loaded, matching, detail]."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model ") and "loaded" in line)
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip() or line[0].isdigit() and " files: " in line:
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:] + [""] * (4 - len(cells))
    return rows


def _folder(tmp_path, good=True, refused=True, fragment=True) -> Path:
    (tmp_path / "sub").mkdir()
    if good:
        (tmp_path / "arm.xml").write_text(SENSED)
    if refused:  # valid MuJoCo that the importer does not support
        (tmp_path / "sub" / "clock.xml").write_text(PENDULUM.format(attr="", extra="<sensor><clock/></sensor>"))
    if fragment:  # what a model includes: materials, no bodies
        (tmp_path / "sub" / "materials.xml").write_text(
            '<mujoco><asset><material name="red" rgba="1 0 0 1"/></asset></mujoco>')
        (tmp_path / "sub" / "launch.xml").write_text('<launch><node name="n"/></launch>')  # not MuJoCo at all
        (tmp_path / "notes.txt").write_text("not searched")
    return tmp_path


def test_a_directory_gives_a_line_per_model_and_a_summary(tmp_path, capsys):
    folder = _folder(tmp_path)
    status, out, err = _run(capsys, folder, "--states", "2", "--steps", "10")
    assert status == 2, out + err  # taigym refuses a model MuJoCo loads
    assert "arm.xml: loaded, matching" in out
    assert "sub/clock.xml: refused-by-taigym: " in out and "<clock>" in out
    assert "sub/materials.xml: not a model" in out and "sub/launch.xml: not a model" in out
    rows = _summary(out)
    assert set(rows) == {"arm.xml", "sub/clock.xml", "sub/launch.xml", "sub/materials.xml"}, out
    assert rows["arm.xml"][:2] == ["yes", "ok"]
    assert rows["sub/clock.xml"][:2] == ["refused-by-taigym", "-"] and "<clock>" in rows["sub/clock.xml"][2]
    assert rows["sub/materials.xml"][0] == "not a model" and "<launch>" in rows["sub/launch.xml"][2]
    assert "4 files: 1 loaded by both engines, 1 matching, 0 failing; 1 refused by taigym, 0 refused by mujoco, " \
           "2 not models" in out


def test_files_that_are_not_models_do_not_fail_a_directory(tmp_path, capsys):
    folder = _folder(tmp_path, refused=False)
    status, out, err = _run(capsys, folder, "--states", "2", "--steps", "10")
    assert status == 0, out + err
    # files and directories mixed: a directory's files are named with the directory then
    status, out, _ = _run(capsys, folder / "arm.xml", folder / "sub", "--states", "2", "--steps", "0")
    assert status == 0 and set(_summary(out)) == {str(folder / "arm.xml"), str(folder / "sub" / "launch.xml"),
                                                  str(folder / "sub" / "materials.xml")}, out


def test_a_mismatch_outranks_a_refusal_in_a_directory(monkeypatch, tmp_path, capsys):
    def armature(model):
        arm = np.array(model.dof_armature, dtype=float)
        arm[:] += 0.05
        return {"dof_armature": arm}

    monkeypatch.setattr(fidelity, "load_taigym_model", _perturbed(armature))
    status, out, _ = _run(capsys, _folder(tmp_path), "--states", "2", "--steps", "0")
    assert status == 1, out
    assert _summary(out)["arm.xml"][1].startswith("FAIL qM"), out
    assert "arm.xml: loaded, FAIL: qM " in out and "at swing" in out


def test_a_path_that_does_not_exist_is_refused_in_one_line(tmp_path, capsys):
    status, _, err = _run(capsys, _folder(tmp_path), tmp_path / "missing")
    assert status == 2 and err.strip() == f"error: {tmp_path / 'missing'}: no such file or directory"


@pytest.mark.slow
def test_the_whole_control_suite_directory_loads_and_matches(capsys):
    spec = importlib.util.find_spec("dm_control")
    if spec is None:
        pytest.skip("dm_control is not installed")
    suite = Path(spec.submodule_search_locations[0]) / "suite"
    status, out, err = _run(capsys, suite, "--states", "4", "--steps", "50")
    rows = _summary(out)
    models = {p.name for p in suite.glob("*.xml")}
    assert models <= set(rows) and len(models) >= 19, out
    assert {name for name, r in rows.items() if r[0] == "not a model"} == set(rows) - models, out
    for name in sorted(models):
        assert tuple(rows[name][:2]) == ("yes", "ok"), f"{name}: {rows[name]}\n{out}{err}"
    assert status == 0, out
