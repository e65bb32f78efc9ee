"""Models at the edges of what MuJoCo accepts: joints sharing an axis in one body, integer
attributes past 32 bits, deep nesting. Each loads and runs as it does in the ``mujoco``
package (float64), or is refused with a ModelError naming its element and attribute.
"""

import contextlib
import sys

import mujoco
import numpy as np
import pytest
from conftest import GYM_MODELS, gym_asset
from oracle import rel_err
from taigym.physics import ModelError, layout
from taigym.physics.compiler.mass_matrix import factor
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.compiler.xml_source import MAX_DEPTH
from taigym.scripts.cli import main as cli

from taigym import physics

# Two sliders on one axis in a body MuJoCo calls simple: it keeps their mass matrix rows
# diagonal (body_simple 2), so each moves as if the other were not there. Tilted gravity,
# different springs and a motor on one of them make the two move differently.
TWO_SLIDES = """<mujoco>
  <option gravity="-2 0 -9.81"/>
  <worldbody>
    <body name="cart" pos="0 0 1">
      <joint name="s1" type="slide" axis="1 0 0" stiffness="3" damping="0.2"/>
      <joint name="s2" type="slide" axis="1 0 0" stiffness="1"/>
      <geom type="sphere" size="0.1" mass="2"/>
    </body>
  </worldbody>
  <actuator><motor joint="s1" ctrlrange="-1 1"/></actuator>
</mujoco>"""
# the same with a hinge after them: body_simple 1
SLIDES_HINGE = TWO_SLIDES.replace(
    '<joint name="s2" type="slide" axis="1 0 0" stiffness="1"/>',
    '<joint name="s2" type="slide" axis="1 0 0" stiffness="1"/>\n'
    '      <joint name="spin" type="hinge" axis="0 0 1" damping="0.1"/>').replace(
    '<geom type="sphere" size="0.1" mass="2"/>', '<geom type="box" size="0.1 0.2 0.05" mass="2"/>').replace(
    "</actuator>", '<motor joint="spin" ctrlrange="-1 1"/></actuator>')
# Two hinges on one axis: M is singular and MuJoCo's factorization raises its zero pivot to
# mjMINVAL = 1e-15, so the first hinge's weight is ~1e15.
TWO_HINGES = """<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0"/>
      <joint name="h2" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>"""
# two sliders on one axis below a hinge (not simple: singular as the hinges are)
SLIDES_BELOW_HINGE = """<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05" mass="1"/>
      <body name="b" pos="0.3 0 0">
        <joint name="s1" type="slide" axis="1 0 0"/>
        <joint name="s2" type="slide" axis="1 0 0"/>
        <geom type="sphere" size="0.1" mass="1"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""
SHARED_AXES = {"two_slides": TWO_SLIDES, "slides_hinge": SLIDES_HINGE, "two_hinges": TWO_HINGES,
               "slides_below_hinge": SLIDES_BELOW_HINGE}


def _both(text):
    return load_mjcf_string(text), mujoco.MjModel.from_xml_string(text)


# --- joints sharing an axis --------------------------------------------------------------
@pytest.mark.parametrize("name", SHARED_AXES)
def test_shared_axis_weights_match_mujoco(name):
    """body_simple exactly; the inverse weights to 1e-12 relative: the same factorization
    as MuJoCo's (physics/compiler/mass_matrix.py) of an M that agrees to rounding, including the
    singular ones' 1/mjMINVAL."""
    ours, mj = _both(SHARED_AXES[name])
    np.testing.assert_array_equal(ours.body_simple, mj.body_simple)
    for field in ("dof_invweight0", "body_invweight0"):
        got, ref = getattr(ours, field), getattr(mj, field)
        assert np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))) <= 1e-12, (name, field, got, ref)
    if name in ("two_hinges", "slides_below_hinge"):
        assert ours.dof_invweight0.max() > 1e14  # the zero pivot, raised to 1e-15


@pytest.mark.parametrize("name", ["humanoid", "walker2d_v5"])
def test_factorization_is_mujocos_to_the_bit(name):
    """physics/compiler/mass_matrix.factor of mujoco's own M at a random state gives mujoco's
    qLD exactly: the weights follow MuJoCo's rounding, which singular models expose."""
    mj = mujoco.MjModel.from_xml_path(gym_asset(name))
    d = mujoco.MjData(mj)
    d.qpos[:] = mj.qpos0 + np.random.default_rng(0).normal(scale=0.3, size=mj.nq)
    mujoco.mj_forward(mj, d)
    full = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, full)
    lower, diag = factor(full)
    ref = np.eye(mj.nv)
    for i in range(mj.nv):  # qLD's rows: the ancestors' entries of L, then D
        start, n = mj.M_rowadr[i], mj.M_rownnz[i]
        ref[i, mj.M_colind[start : start + n - 1]] = d.qLD[start : start + n - 1]
        assert diag[i] == d.qLD[start + n - 1], (name, i)
    np.testing.assert_array_equal(lower, ref)


@pytest.mark.parametrize("name", GYM_MODELS)
def test_simple_bodies_match_mujoco(name):
    ours = physics.load_model(gym_asset(name))
    np.testing.assert_array_equal(ours.body_simple, mujoco.MjModel.from_xml_path(gym_asset(name)).body_simple)


@pytest.mark.parametrize("name", ["two_slides", "slides_hinge"])
def test_shared_axis_sliders_step_like_mujoco(name, device):
    """qM (MuJoCo's diagonal rows) at 3 random states, then 300 steps under random controls
    against mj_step: 1e-10 relative, the same arithmetic on both sides up to rounding. (Two
    hinges on one axis are left out: there M's zero pivot multiplies rounding by 1e15, in
    MuJoCo as here, so neither engine's trajectory is reproducible by the other.)"""
    ours, mj = _both(SHARED_AXES[name])
    rng = np.random.default_rng(5)
    qpos = mj.qpos0 + rng.uniform(-0.3, 0.3, size=(3, mj.nq))
    qvel = rng.normal(size=(3, mj.nv))
    ctrl = rng.uniform(-1, 1, size=(3, mj.nu))
    world = physics.World(ours, num_envs=3, device=device, precision="float64")
    world.set_state(qpos=qpos, qvel=qvel)
    world.set_ctrl(ctrl)
    world.forward()
    datas = []
    for e in range(3):
        d = mujoco.MjData(mj)
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos[e], qvel[e], ctrl[e]
        mujoco.mj_forward(mj, d)
        full = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, d, full)
        assert rel_err(world.get("qM")[e], full) <= 1e-12, (name, e)
        datas.append(d)
    world.step(300)
    for e, d in enumerate(datas):
        mujoco.mj_step(mj, d, nstep=300)
        assert rel_err(world.get("qpos")[e], d.qpos) <= 1e-10, (name, e, world.get("qpos")[e], d.qpos)
        assert rel_err(world.get("qvel")[e], d.qvel) <= 1e-10, (name, e)


def test_fidelity_runs_on_two_sliders_on_one_axis(tmp_path, capsys):
    path = tmp_path / "two_slides.xml"
    path.write_text(TWO_SLIDES)
    status = cli(["fidelity", str(path), "--states", "2", "--steps", "50", "--ctrl", "random"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "all within tolerance" in out


# --- integers past 32 bits ---------------------------------------------------------------
def _geom(attrs):
    return f'<mujoco><worldbody><body><freejoint/><geom name="ball" size="0.1" {attrs}/></body></worldbody></mujoco>'


@pytest.mark.parametrize("text, element, attribute, value", [
    (_geom(f'contype="{2**40}"'), "geom 'ball'", "contype", 2**40),
    (_geom(f'conaffinity="{2**32}"'), "geom 'ball'", "conaffinity", 2**32),
    (_geom(f'condim="{2**32 + 3}"'), "geom 'ball'", "condim", 2**32 + 3),
    (f'<mujoco><option iterations="{2**31}"/></mujoco>', "option", "iterations", 2**31),
    (f'<mujoco><option ls_iterations="{-(2**31) - 1}"/></mujoco>', "option", "ls_iterations", -(2**31) - 1),
    (f'<mujoco><default><geom contype="{2**33}"/></default>' + _geom("")[8:], "geom 'ball'", "contype", 2**33),
])
def test_integers_past_32_bits_are_refused(text, element, attribute, value):
    with pytest.raises(ValueError, match="number is too large"):
        mujoco.MjModel.from_xml_string(text)
    with pytest.raises(ModelError) as info:
        load_mjcf_string(text)
    e = info.value
    assert (e.element, e.attribute) == (element, attribute)
    assert f"number is too large: {value} (an integer from -2147483648 to 2147483647)" in str(e)


def test_integers_at_32_bits_load():
    """MuJoCo's extremes: contype -1 sets every bit; iterations up to 2**31 - 1."""
    text = _geom('contype="-1" conaffinity="2147483647"').replace("<mujoco>", '<mujoco><option iterations="2147483647"/>')
    ours, mj = _both(text)
    assert (ours.geom_contype[0], ours.geom_conaffinity[0], ours.opt.iterations) == (-1, 2**31 - 1, 2**31 - 1)
    assert (mj.geom_contype[0], mj.geom_conaffinity[0], mj.opt.iterations) == (-1, 2**31 - 1, 2**31 - 1)


def test_builder_refuses_integers_past_32_bits():
    b = physics.ModelBuilder()
    body = b.add_body(0, mass=1.0, inertia=np.ones(3))
    with pytest.raises(ModelError) as info:
        b.add_geom(body, "sphere", size=(0.1,), contype=2**40, name="g")
    assert (info.value.element, info.value.attribute) == ("geom 'g'", "contype") and str(2**40) in str(info.value)
    b.opt.iterations = 2**31
    with pytest.raises(ModelError) as info:
        b.finalize()
    assert (info.value.element, info.value.attribute) == ("option", "iterations")
    assert "from -2147483648 to 2147483647" in str(info.value)


# --- deep nesting ------------------------------------------------------------------------
@contextlib.contextmanager
def _little_stack(frames: int = 120):
    """Python's recursion limit set to ``frames`` above the caller: a reader that called
    itself once per level would fail on the deep files below."""
    depth, frame = 0, sys._getframe()
    while frame:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _chain(n: int, joint: str = "", leaf: str = '<geom size="0.05"/>') -> str:
    """n bodies, each inside the one before, one per line."""
    opening = "".join(f'\n<body name="b{i}" pos="0 0 0.1">{joint}' for i in range(n))
    return f"<mujoco><worldbody>{opening}{leaf}{'</body>' * n}</worldbody></mujoco>"


def test_nesting_past_the_limit_is_refused():
    """<mujoco> and <worldbody> are two levels, so body b498 is the 501st."""
    text = _chain(MAX_DEPTH - 1)
    with pytest.raises(ValueError, match="nesting is too deep"):
        mujoco.MjModel.from_xml_string(text)
    with pytest.raises(ModelError) as info:
        load_mjcf_string(text)
    e = info.value
    assert (e.element, e.line) == (f"body 'b{MAX_DEPTH - 2}'", MAX_DEPTH)  # b0 is on line 2
    assert f"at most {MAX_DEPTH} deep" in str(e) and f"depth {MAX_DEPTH + 1}" in str(e)


@pytest.mark.parametrize("kind", ["bodies", "frames", "defaults"])
def test_deepest_nesting_mujoco_reads_loads_without_recursion(kind):
    """496 levels below <worldbody> (MuJoCo's deepest), read with ~120 frames of stack."""
    n = 496
    if kind == "bodies":
        text = _chain(n)
    elif kind == "frames":
        text = ("<mujoco><worldbody><body name='b'>" + '<frame pos="0 0 0.01">' * (n - 1) + '<geom size="0.05"/>'
                + "</frame>" * (n - 1) + "</body></worldbody></mujoco>")
    else:
        nested = "".join(f'<default class="c{i}"><geom rgba="0 0 {i / n:.3f} 1"/>' for i in range(n - 1))
        text = (f"<mujoco><default>{nested}{'</default>' * (n - 1)}</default>"
                f'<worldbody><geom class="c{n - 2}" size="0.05"/></worldbody></mujoco>')
    mj = mujoco.MjModel.from_xml_string(text)
    with _little_stack():
        ours = load_mjcf_string(text)
    np.testing.assert_array_equal(ours.body_parentid, mj.body_parentid)
    np.testing.assert_allclose(ours.geom_pos, mj.geom_pos, atol=1e-12)
    np.testing.assert_allclose(ours.geom_rgba, mj.geom_rgba, atol=1e-12)


def test_hundred_level_chain_compiles_and_runs_like_mujoco(device):
    """A chain of 100 hinges: the weights against MuJoCo's to 1e-6 relative (M's condition
    number, ~1e8 for this chain of light links, scales both factorizations' rounding), the
    World's tables, and qM and qfrc_bias at a random state (1e-8, as
    tests/test_dynamics_mujoco.py)."""
    link = 'pos="0 0 0.1"><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 0.1" size="0.02"/>'
    text = _chain(100, leaf="").replace('pos="0 0 0.1">', link)
    with _little_stack():
        ours = load_mjcf_string(text)
    mj = mujoco.MjModel.from_xml_string(text)
    assert ours.nbody == 101 and ours.nM == mj.nM == 5050
    np.testing.assert_allclose(ours.dof_invweight0, mj.dof_invweight0, rtol=1e-6, atol=0)
    np.testing.assert_allclose(ours.body_invweight0, mj.body_invweight0, rtol=1e-6, atol=0)
    assert layout.pack_model(ours, np.float64)["dof_i"].size >= ours.nM
    rng = np.random.default_rng(1)
    qpos, qvel = rng.uniform(-0.2, 0.2, size=mj.nq), rng.normal(size=mj.nv)
    world = physics.World(ours, num_envs=1, device=device, precision="float64")
    world.set_state(qpos=qpos[None], qvel=qvel[None])
    world.forward()
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(mj, d)
    full = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, full)
    assert rel_err(world.get("qM")[0], full) <= 1e-8
    assert rel_err(world.get("qfrc_bias")[0], d.qfrc_bias) <= 1e-8
