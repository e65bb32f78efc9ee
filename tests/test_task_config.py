"""Task configs: strict YAML, inheritance, overrides, and refusal of malformed configs."""

import textwrap

import pytest
from taigym.tasks import ConfigError, Task, load_task_config, task_files
from taigym.tasks.compose import read_config_file
from taigym.tasks.yaml_loader import load_yaml

GOOD = textwrap.dedent("""\
    id: Test/Pendulum-v0
    robot:
      asset: gymnasium:inverted_pendulum.xml
    simulation:
      frame_skip: 2
    observations:
      - term: qpos
      - term: qvel
    rewards:
      - term: alive
        weight: 1.0
    terminations:
      - term: qpos_out_of_range
        params: {joints: [hinge], low: -0.2, high: 0.2}
    resets:
      - term: qpos_add_uniform
        params: {low: -0.01, high: 0.01}
    episode_length: 100
""")


def write(tmp_path, text, name="task.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# --- strict YAML ---------------------------------------------------------------------------
def test_yaml_core_schema_scalars():
    data = load_yaml("a: 1e-3\nb: no\nc: yes\nd: true\ne: 0x10\nf: .inf\ng: ~\nh: 2.5\ni: on\n")
    assert data == {"a": 0.001, "b": "no", "c": "yes", "d": True, "e": 16, "f": float("inf"), "g": None,
                    "h": 2.5, "i": "on"}


def test_duplicate_key_is_an_error_with_both_lines():
    with pytest.raises(ConfigError, match=r"x.yaml, line 3: duplicate key 'a' \(first defined on line 1\)"):
        load_yaml("a: 1\nb: 2\na: 3\n", "x.yaml")


def test_every_shipped_config_is_valid():
    ids = [load_task_config(p).id for p in task_files()]
    assert {"TaiGym/InvertedPendulum-v0", "TaiGym/InvertedDoublePendulum-v0", "TaiGym/Reacher-v0",
            "TaiGym/Swimmer-v0"} <= set(ids)


# --- inheritance and overrides -------------------------------------------------------------------
def test_extends_merges_mappings_and_replaces_lists(tmp_path):
    write(tmp_path, GOOD, "base.yaml")
    child = write(tmp_path, """\
        extends: base.yaml
        id: Test/Child-v0
        simulation: {precision: float64}
        rewards:
          - term: alive
            weight: 5.0
    """)
    cfg = load_task_config(child)
    assert cfg.id == "Test/Child-v0"
    assert cfg.simulation.frame_skip == 2 and cfg.simulation.precision == "float64"
    assert [(r.term, r.weight) for r in cfg.rewards] == [("alive", 5.0)]


def test_extends_cycle_is_refused(tmp_path):
    write(tmp_path, "extends: b.yaml\n", "a.yaml")
    write(tmp_path, "extends: a.yaml\n", "b.yaml")
    with pytest.raises(ConfigError, match="extends cycle"):
        read_config_file(tmp_path / "a.yaml")


def test_command_line_overrides(tmp_path):
    path = write(tmp_path, GOOD)
    cfg = load_task_config(path, ["simulation.timestep=1e-3", "rewards.0.weight=2", "episode_length=7"])
    assert cfg.simulation.timestep == 0.001 and isinstance(cfg.simulation.timestep, float)
    assert cfg.rewards[0].weight == 2.0 and cfg.episode_length == 7
    cfg = load_task_config(path, {"robot.init_qpos": [0.0, 0.1]})
    assert cfg.robot.init_qpos == [0.0, 0.1]


def test_override_error_names_the_command_line(tmp_path):
    with pytest.raises(ConfigError, match=r"<command line>: key 'simulation.frame_skip'"):
        load_task_config(write(tmp_path, GOOD), ["simulation.frame_skip=-1"])


def test_overrides_reach_the_model(tmp_path):
    task = Task.from_source(write(tmp_path, GOOD), ["simulation.timestep=0.005", "simulation.integrator=Euler",
                                                    "robot.bodies.pole.mass=2.0", "robot.joints.hinge.damping=0.5",
                                                    "simulation.solver=CG", "simulation.cone=elliptic"])
    m = task.model
    assert m.opt.timestep == 0.005 and m.opt.integrator == 0
    assert m.opt.solver == "CG" and m.opt.cone == "elliptic"
    assert m.body_mass[m.body("pole")] == 2.0 and m.dof_damping[m.jnt_dofadr[m.joint("hinge")]] == 0.5


def test_limit_drive_and_friction_overrides_reach_the_model(tmp_path):
    from taigym.physics.model import LIMIT_CUBIC

    task = Task.from_source(write(tmp_path, GOOD), [
        "robot.joints.hinge.limit.model=cubic", "robot.joints.hinge.limit.strength=5.0",
        "robot.joints.hinge.drive.stiffness=10.0", "robot.joints.hinge.drive.damping=1.0",
        "robot.joints.hinge.drive.force_limit=3.0", "robot.geoms.cpole.friction=0.3"])
    m = task.model
    j, d = m.joint("hinge"), m.jnt_dofadr[m.joint("hinge")]
    assert m.jnt_limit_model[j] == LIMIT_CUBIC and m.jnt_limit_strength[j] == 5.0 and m.jnt_limited[j] == 1
    assert (m.dof_drive_stiffness[d], m.dof_drive_damping[d], m.dof_drive_forcelimit[d]) == (10.0, 1.0, 3.0)
    assert m.geom_friction[m.geom("cpole"), 0] == 0.3


# --- malformed configs: each names the key path ----------------------------------------------------
# (edit applied to GOOD, key path expected in the message, another fragment expected)
MALFORMED = [
    ("episode_length: 100", "", "episode_length", "required key is missing"),
    ("  asset: gymnasium:inverted_pendulum.xml", "  init_qpos: [0, 0]", "robot.asset", "required"),
    ("episode_length: 100", "episode_length: -5", "episode_length", "an integer in 1..2,147,483,647"),
    ("episode_length: 100", "episode_length: lots", "episode_length", "integer"),
    ("  frame_skip: 2", "  frame_skip: 2\n  timestep: -0.01", "simulation.timestep", "greater than 0"),
    ("  frame_skip: 2", "  frame_skip: 0", "simulation.frame_skip", "an integer in 1..2,147,483,647"),
    ("  frame_skip: 2", "  frame_skip: 2\n  precision: float16", "simulation.precision", "float32"),
    ("  frame_skip: 2", "  frame_skip: 2\n  integrator: leapfrog", "simulation.integrator", "RK4"),
    ("  frame_skip: 2", "  frame_skip: 2\n  device: tpu", "simulation.device", "cuda"),
    ("  frame_skip: 2", "  frame_skip: 2\n  solver: Jacobi", "simulation.solver", "Newton"),
    ("  asset: gymnasium:inverted_pendulum.xml", ("  asset: gymnasium:inverted_pendulum.xml\n  joints:\n"
     "    hinge: {limit: {model: rubber}}"), "robot.joints.hinge.limit.model", "cubic"),
    ("  asset: gymnasium:inverted_pendulum.xml", ("  asset: gymnasium:inverted_pendulum.xml\n  joints:\n"
     "    hinge: {drive: {stifness: 1}}"), "robot.joints.hinge.drive.stifness", "did you mean 'stiffness'"),
    ("  asset: gymnasium:inverted_pendulum.xml", ("  asset: gymnasium:inverted_pendulum.xml\n  geoms:\n"
     "    cpole: {friction: -1}"), "robot.geoms.cpole.friction", "greater than or equal to 0"),
    ("  frame_skip: 2", "  frame_skip: 2\n  cone: round", "simulation.cone", "elliptic"),
    ("  frame_skip: 2", "  frame_skp: 2", "simulation.frame_skp", "did you mean 'frame_skip'"),
    ("episode_length: 100", "episode_length: 100\nrewardz: []", "rewardz", "did you mean 'rewards'"),
    ("  - term: qvel", "  - term: qvell", "observations[1].term", "did you mean 'qvel'"),
    ("  - term: alive", "  - term: alve", "rewards[0].term", "did you mean 'alive'"),
    ("    weight: 1.0", "    weight: heavy", "rewards[0].weight", "number"),
    ("    weight: 1.0", "    wieght: 1.0", "rewards[0].wieght", "did you mean 'weight'"),
    ("{joints: [hinge], low: -0.2, high: 0.2}", "{joints: [hinge], low: -0.2, hihg: 0.2}",
     "terminations[0].params.hihg", "did you mean 'high'"),
    ("{joints: [hinge], low: -0.2, high: 0.2}", "{joints: [hinge], low: -0.2}", "terminations[0].params.high",
     "missing"),
    ("{low: -0.01, high: 0.01}", "{low: small, high: 0.01}", "resets[0].params.low", "number"),
    ("  - term: qpos\n", "  - term: qpos\n    clip: [1, -1]\n", "observations[0].clip", "lower"),
    ("  - term: qpos\n", "  - term: qpos\n    noise: {kind: pink, scale: 0.1}\n", "observations[0].noise.kind",
     "uniform"),
    ("  - term: qpos\n", "  - term: qpos\n    noise: {kind: uniform, scale: -1}\n", "observations[0].noise.scale",
     "greater than 0"),
    ("id: Test/Pendulum-v0", "id: not an id", "id", "pattern"),
    ("observations:\n  - term: qpos\n  - term: qvel\n", "observations: []\n", "observations", "at least 1"),
    ("  asset: gymnasium:inverted_pendulum.xml", ("  asset: gymnasium:inverted_pendulum.xml\n  joints:\n"
     "    hinge: {range: [1.0, -1.0]}"), "robot.joints.hinge.range", "lower"),
    ("  asset: gymnasium:inverted_pendulum.xml", ("  asset: gymnasium:inverted_pendulum.xml\n  bodies:\n"
     "    pole: {mass: -1}"), "robot.bodies.pole.mass", "greater than 0"),
    ("simulation:", "actions:\n  kind: thrust\nsimulation:", "actions.kind", "torque"),
    ("simulation:", "actions:\n  nonfinite: ignore\nsimulation:", "actions.nonfinite", "error"),
    ("  asset: gymnasium:inverted_pendulum.xml", "  asset: [a, b]", "robot.asset", "string"),
]


@pytest.mark.parametrize("old,new,key,fragment", MALFORMED, ids=[m[2] for m in MALFORMED])
def test_malformed_config_names_key_path(tmp_path, old, new, key, fragment):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as err:
        load_task_config(path)
    message = str(err.value)
    assert f"key '{key}'" in message and str(path) in message
    assert fragment in message


# errors found only against the robot model, still before any World exists
MODEL_ERRORS = [
    ("  asset: gymnasium:inverted_pendulum.xml", "  asset: gymnasium:inverted_pendulm.xml", "robot.asset",
     "did you mean 'inverted_pendulum.xml'"),
    ("  asset: gymnasium:inverted_pendulum.xml", "  asset: nosuchpkg:robot.xml", "robot.asset", "not installed"),
    ("joints: [hinge]", "joints: [hing]", "terminations[0].params.joints", "did you mean 'hinge'"),
    ("  asset: gymnasium:inverted_pendulum.xml", ("  asset: gymnasium:inverted_pendulum.xml\n  joints:\n"
     "    elbow: {damping: 1}"), "robot.joints.elbow", "no joint named 'elbow'"),
    ("  asset: gymnasium:inverted_pendulum.xml", "  asset: gymnasium:inverted_pendulum.xml\n  init_qpos: [0, 0, 0]",
     "robot.init_qpos", "2 values"),
    ("simulation:", "actions:\n  kind: position\nsimulation:", "actions.kind", "torque actuator"),
    ("simulation:", "actions:\n  actuators: [slidr]\nsimulation:", "actions.actuators[0]", "did you mean 'slider'"),
]


@pytest.mark.parametrize("old,new,key,fragment", MODEL_ERRORS, ids=[m[2] for m in MODEL_ERRORS])
def test_config_errors_against_the_model(tmp_path, old, new, key, fragment):
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as err:
        Task.from_source(path)
    message = str(err.value)
    assert f"key '{key}'" in message and fragment in message


def test_error_gives_the_line(tmp_path):
    path = write(tmp_path, GOOD.replace("    weight: 1.0", "    weight: heavy"))
    with pytest.raises(ConfigError) as err:
        load_task_config(path)
    assert err.value.line == GOOD.splitlines().index("    weight: 1.0") + 1
    assert f", line {err.value.line}:" in str(err.value)


def test_unknown_task_id_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'TaiGym/Reacher-v0'"):
        load_task_config("TaiGym/Reacker-v0")


def test_randomization_config_is_validated(tmp_path):
    text = GOOD + "randomization:\n  - term: body_mass_scale\n    params: {bodies: [pole], low: 2.0, high: 1.0}\n"
    with pytest.raises(ConfigError, match=r"randomization\[0\]\.params\.low"):
        Task.from_source(write(tmp_path, text))


def _same_documents(a, b):
    """Equal values, and every mapping with the same key lines."""
    assert a == b
    if isinstance(a, dict):
        assert a.lines == b.lines
        for key in a:
            _same_documents(a[key], b[key])
    elif isinstance(a, list):
        for x, y in zip(a, b):
            _same_documents(x, y)


def test_libyamls_parser_reads_every_shipped_config_as_the_python_parser_does():
    import yaml
    from taigym.tasks import yaml_loader

    if yaml_loader._CStrictLoader is None:
        pytest.skip("PyYAML was built without libyaml")
    from pathlib import Path

    from taigym import configs

    files = sorted(Path(configs.__file__).parent.rglob("*.yaml"))
    assert len(files) >= 20
    for path in files:
        text = path.read_text()
        _same_documents(yaml.load(text, Loader=yaml_loader._CStrictLoader),
                        yaml.load(text, Loader=yaml_loader.StrictLoader))
    # an invalid file is worded by the Python parser's messages either way
    with pytest.raises(ConfigError, match="a quote opened on this line is never closed"):
        load_yaml('id: "TaiGym/Open-v0\nrobot: x\n', source="open.yaml")
