"""The convex collider (physics/collision/convex/) against MuJoCo's native GJK/EPA, in float64.

Pairs: sphere, capsule, ellipsoid, cylinder and box against an ellipsoid; capsule,
cylinder and box against a cylinder. Tolerances, from what MuJoCo's solver itself
achieves with its default 35 iterations and tolerance 1e-6:
- a sphere or capsule whose centre point or segment stays outside the other geom is
  found by GJK distance, as MuJoCo: dist within 1e-8, normal within 1e-5 (observed:
  ~1e-10 and ~2e-7);
- deeper contacts come from EPA, whose stopping rule bounds the depth (to 1e-6) but not
  the face it stops on: the normal can lie up to ~2e-2 rad from the exact
  minimum-translation direction at 35 iterations, MuJoCo's as much as ours (checked
  against a Nelder-Mead minimum of the support function). The comparison is dist within
  2e-6, normal within 5e-2, point within 1e-3 (observed worst over the eight pairs:
  5.6e-7, 3.7e-2, 5.5e-4); past 3 cm of overlap, dist within 1e-4 (observed 1.6e-5).
"""

from types import SimpleNamespace

import mujoco  # a dev dependency: the oracle
import numpy as np
import pytest
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.collision import broadphase as B
from taigym.physics.collision.driver import Collider

from taigym import physics

SIZES = {"sphere": ".1", "capsule": ".06 .12", "box": ".1 .07 .05", "cylinder": ".08 .06", "ellipsoid": ".08 .06 .04"}
CONVEX_PAIRS = [("sphere", "ellipsoid"), ("capsule", "ellipsoid"), ("ellipsoid", "ellipsoid"),
                ("ellipsoid", "cylinder"), ("ellipsoid", "box"), ("capsule", "cylinder"), ("cylinder", "cylinder"),
                ("cylinder", "box")]
DEEP = 0.03  # contacts deeper than this (a third of the geoms' size) are checked loosely
NOFLOOR = 'contype="2" conaffinity="2"'  # the two bodies collide with each other only


def scene(a, b, *, multiccd=False, extra=""):
    flag = "" if multiccd else '<option><flag multiccd="disable"/></option>'
    return f"""<mujoco>{flag}<worldbody><geom type="plane" size="5 5 .1" contype="1" conaffinity="1"/>
    <body pos="0 0 .3"><freejoint/><geom type="{a}" size="{SIZES[a]}" {NOFLOOR} {extra}/></body>
    <body pos=".15 0 .3"><freejoint/><geom type="{b}" size="{SIZES[b]}" {NOFLOOR} {extra}/></body>
    </worldbody></mujoco>"""


def poses(seed, n=64, near=0.08, far=0.2):
    """Random orientations, centres apart by near..far in a random direction."""
    rng = np.random.default_rng(seed)
    q = np.zeros((n, 14))
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    q[:, 0:3] = [0, 0, 0.5]
    q[:, 7:10] = q[:, 0:3] + u * rng.uniform(near, far, (n, 1))
    for k in range(2):
        quat = rng.normal(size=(n, 4))
        q[:, 7 * k + 3 : 7 * k + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return q


def ours(xml, qpos, device):
    model = load_mjcf_string(xml)
    world = physics.World(model, len(qpos), device=device, precision="float64")
    world.set_state(qpos=qpos)
    world.forward()
    col = Collider(model, len(qpos), device=device, precision="float64")
    col.collide(world.get("xpos"), world.get("xquat"))
    return col.get(), world.contacts()


def theirs(xml, qpos):
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    out = []
    for q in qpos:
        d.qpos[:] = q
        mujoco.mj_forward(mjm, d)
        out.append([SimpleNamespace(dist=float(c.dist), pos=np.copy(c.pos), normal=np.copy(c.frame[:3]),
                                    geom=tuple(c.geom)) for c in d.contact[: d.ncon]])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("a,b", CONVEX_PAIRS)
def test_convex_pairs_match_mujoco(a, b, device):
    xml = scene(a, b)
    qpos = poses(CONVEX_PAIRS.index((a, b)))
    got, from_world = ours(xml, qpos, device)
    ref = theirs(xml, qpos)
    worst = dict(dist=0.0, normal=0.0, pos=0.0)
    ncon = 0
    for e, cons in enumerate(ref):
        assert got["ncon"][e] == len(cons), f"env {e}: {got['ncon'][e]} contacts, MuJoCo {len(cons)}"
        for i, c in enumerate(cons):
            assert tuple(got["geom"][e, i]) == c.geom
            assert got["dist"][e, i] < 0
            if c.dist < -DEEP:  # neither solver converges in 35 iterations this deep
                assert abs(got["dist"][e, i] - c.dist) < 1e-4
                continue
            worst["dist"] = max(worst["dist"], abs(got["dist"][e, i] - c.dist))
            worst["normal"] = max(worst["normal"], np.abs(got["frame"][e, i, 0] - c.normal).max())
            worst["pos"] = max(worst["pos"], np.abs(got["pos"][e, i] - c.pos).max())
            ncon += 1
    assert ncon >= 5, "too few shallow contacts sampled"
    assert worst["dist"] < 2e-6 and worst["normal"] < 5e-2 and worst["pos"] < 1e-3, worst
    # the World's fused kernel makes the same contacts as the Collider
    np.testing.assert_array_equal(from_world["ncon"], got["ncon"])
    for e in range(len(qpos)):
        n = got["ncon"][e]
        # (poses from the fused kernel round differently; EPA's stopping face may differ)
        np.testing.assert_allclose(from_world["dist"][e, :n], got["dist"][e, :n], atol=1e-5)


@pytest.mark.parametrize("a", ["sphere", "capsule"])
def test_shallow_sphere_and_capsule_contacts_are_gjk_distances(a, device):
    """A sphere or capsule just touching an ellipsoid or cylinder: GJK's distance to the
    core point or segment, as MuJoCo, agrees to rounding."""
    b = "ellipsoid" if a == "sphere" else "cylinder"
    xml = scene(a, b)
    qpos = poses(4, 256)
    got, _ = ours(xml, qpos, device)
    ref = theirs(xml, qpos)
    checked = 0
    for e, cons in enumerate(ref):
        assert got["ncon"][e] == len(cons)
        for i, c in enumerate(cons):
            if c.dist > -0.02:  # shallow: the core stays outside
                assert abs(got["dist"][e, i] - c.dist) < 1e-8
                # the normal of a nearly parallel capsule and cylinder is ill-conditioned:
                # measured 8.0e-6 on taichi 1.7.4 and 1.08e-5 on quadrants 1.3.3, whose
                # newer LLVM orders GJK's arithmetic differently (the distance stays at 1e-8)
                np.testing.assert_allclose(got["frame"][e, i, 0], c.normal, atol=1.5e-5)
                np.testing.assert_allclose(got["pos"][e, i], c.pos, atol=1e-6)
                checked += 1
    assert checked >= 5


def _support(t, size, pos, mat, d):
    local = mat.T @ d
    if t == "sphere":
        s = local * size[0]
    elif t == "capsule":
        s = local * size[0] + [0, 0, np.copysign(size[1], local[2])]
    elif t == "ellipsoid":
        e = local * size
        s = e / np.linalg.norm(e) * size
    elif t == "cylinder":
        r = np.hypot(local[0], local[1])
        s = np.array([size[0] * local[0] / r, size[0] * local[1] / r, np.copysign(size[1], local[2])])
    else:
        s = np.where(local >= 0, size, -size)
    return mat @ s + pos


def test_epa_depth_is_the_minimum_translation(device):
    """Against the exact penetration depth (the minimum over directions of the Minkowski
    difference's support, found by Nelder-Mead from our normal): ours is a lower bound
    within the solver's tolerance, and our normal's support is within 1e-4 of it."""
    from scipy.optimize import minimize

    a, b = "ellipsoid", "box"
    xml = scene(a, b)
    qpos = poses(5, 32, 0.1, 0.16)
    got, _ = ours(xml, qpos, device)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    sizes = [np.array([float(x) for x in SIZES[t].split()]) for t in (a, b)]
    checked = 0
    for e in range(len(qpos)):
        if not got["ncon"][e]:
            continue
        d.qpos[:] = qpos[e]
        mujoco.mj_forward(mjm, d)
        g = got["geom"][e, 0]
        frames = [(d.geom_xpos[k], d.geom_xmat[k].reshape(3, 3)) for k in g]

        def depth(v):
            n = v / np.linalg.norm(v)
            return (_support(a, sizes[0], *frames[0], n) - _support(b, sizes[1], *frames[1], -n)) @ n

        normal = got["frame"][e, 0, 0]
        best = minimize(depth, normal, method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-13, maxiter=4000))
        exact = min(best.fun, depth(normal))
        assert -got["dist"][e, 0] <= exact + 1e-6
        assert -got["dist"][e, 0] >= exact - 5e-5
        assert depth(normal) - exact < 1e-4
        checked += 1
    assert checked >= 5


def test_no_contact_when_separated_beyond_margin(device):
    """Just apart: no contact; apart by less than the margin: a contact with the
    positive distance, as MuJoCo."""
    for a, b in CONVEX_PAIRS:
        # geom1 at the origin, geom2 along x at the sum of x extents plus a gap
        ext = {"sphere": .1, "capsule": .06, "box": .1, "cylinder": .08, "ellipsoid": .08}
        for gap, margin in ((0.002, 0.0), (0.002, 0.005)):
            x = ext[a] + ext[b] + gap
            xml = scene(a, b, extra=f'margin="{margin / 2}"')
            qpos = np.array([[0, 0, .5, 1, 0, 0, 0, x, 0, .5, 1, 0, 0, 0]])
            got, _ = ours(xml, qpos, device)
            ref = theirs(xml, qpos)[0]
            assert got["ncon"][0] == len(ref), (a, b, gap, margin)
            if margin:
                assert got["ncon"][0] >= 1, (a, b)
                # EPA on the grown geoms: the depth to its tolerance, short of it for
                # the curved ones (MuJoCo's likewise)
                assert got["dist"][0, 0] == pytest.approx(gap, abs=2e-5)
                assert got["dist"][0, 0] == pytest.approx(ref[0].dist, abs=2e-5)
            else:
                assert got["ncon"][0] == 0, (a, b)


@pytest.mark.slow  # the clipped faces' kernel (a World and a Collider), compiled for this test alone
def test_multiccd_stacked_cylinders_make_mujocos_contacts(device):
    """A cylinder standing on another, off centre: MuJoCo 4 clips the upper one's bottom cap
    (a regular 16-gon) against the lower one's top cap and keeps the four vertices that
    bound the most area, each at its own depth (measured: MuJoCo's to 1.7e-9)."""
    xml = scene("cylinder", "cylinder", multiccd=True)
    qpos = np.array([[0, 0, .5, 1, 0, 0, 0, .01, .02, .5 + .11, 1, 0, 0, 0]])
    got, _ = ours(xml, qpos, device)
    ref = theirs(xml, qpos)[0]
    assert got["ncon"][0] == len(ref) == 4
    for c in ref:  # the same contacts, in any order
        errs = [max(abs(got["dist"][0, i] - c.dist), np.abs(got["pos"][0, i] - c.pos).max(),
                    np.abs(got["frame"][0, i, 0] - c.normal).max()) for i in range(4)]
        assert min(errs) < 1e-8, errs
    pts = got["pos"][0, :4]  # the points span the overlap of the two caps
    assert np.ptp(pts[:, 0]) > 0.05 and np.ptp(pts[:, 1]) > 0.05


def _drop(xml, steps, device):
    model = load_mjcf_string(xml)
    world = physics.World(model, 1, device=device, precision="float64")
    world.step(steps)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    mujoco.mj_step(mjm, d, steps)
    return world.get("qpos")[0], world.get("qvel")[0], d.qpos.copy()


@pytest.mark.parametrize("shape,base,rest_z", [
    ('<geom type="ellipsoid" size=".08 .06 .04"/>', '<geom type="box" size=".2 .2 .05" pos="0 0 .05"/>', .14),
    # the clipped faces' kernel: the slow tier
    pytest.param('<geom type="cylinder" size=".06 .04"/>', '<geom type="cylinder" size=".1 .05" pos="0 0 .05"/>', .14,
                 marks=pytest.mark.slow),
])
def test_dropped_shapes_come_to_rest(shape, base, rest_z, device):
    xml = f"""<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="2 2 .1"/>{base}
      <body pos=".01 -.01 .2"><freejoint/>{shape}</body></worldbody></mujoco>"""
    qpos, qvel, ref = _drop(xml, 1000, device)  # 2 s
    assert np.abs(qvel).max() < 5e-3, qvel
    assert qpos[2] == pytest.approx(rest_z, abs=2e-3)
    np.testing.assert_allclose(qpos[:3], ref[:3], atol=3e-3)
    # upright: the body's z axis stays vertical
    w, x, y, z = qpos[3:7]
    assert 1 - 2 * (x * x + y * y) > 0.999


def test_convex_pairs_are_compiled_only_when_needed():
    plain = load_mjcf_string(scene("sphere", "box"))
    convex = load_mjcf_string(scene("cylinder", "box"))
    assert not B.candidate_pairs(plain).convex
    assert B.candidate_pairs(convex).convex
    table = B.candidate_pairs(load_mjcf_string(scene("cylinder", "box", multiccd=True)))
    assert list(table.maxcon[table.collider == B.COLLIDE_FACES]) == [4]
    assert list(B.candidate_pairs(convex).maxcon[B.candidate_pairs(convex).collider == B.COLLIDE_CONVEX]) == [1]
