"""Mesh assets and mesh geoms against the mujoco package's compiled model (float64).

Meshes are generated here with trimesh (boxes, icospheres, a non-convex L) and written as
binary STL, OBJ and MuJoCo's .msh; dm_control's dog brings 162 real meshes. Compared:
body mass, centre of mass and inertia tensor, geom pos, size and bounding radius, the
mesh's vertices and convex hull placed in the body frame, and the geom frame up to the
sign of each principal axis (an eigenvector's sign is arbitrary; the vertices carry it).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
trimesh = pytest.importorskip("trimesh")

from taigym.physics import ModelError
from taigym.physics.collision.broadphase import candidate_pairs, geom_rbound
from taigym.physics.compiler.mjcf import load_mjcf, load_mjcf_string
from taigym.physics.compiler.transforms import quat_to_mat

TOL = 1e-9  # float64 sums over triangles; MuJoCo's own arithmetic differs in the last bits
VERT_TOL = 1e-7  # vertices are single precision, as mjModel.mesh_vert


def write_msh(path, vert, face):
    header = np.array([len(vert), 0, 0, len(face)], dtype="<i4")
    path.write_bytes(header.tobytes() + np.asarray(vert, "<f4").tobytes() + np.asarray(face, "<i4").tobytes())


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("meshes")
    box = trimesh.creation.box(extents=(0.3, 0.2, 0.1))
    box.apply_transform(trimesh.transformations.rotation_matrix(0.4, [1, 2, 3]))
    box.apply_translation([0.1, -0.05, 0.2])
    box.export(d / "box.stl")
    box.export(d / "box_ascii.stl", file_type="stl_ascii")
    ico = trimesh.creation.icosphere(subdivisions=2, radius=0.1)
    ico.apply_scale([1.0, 0.7, 0.4])
    ico.apply_transform(trimesh.transformations.rotation_matrix(1.0, [0, 1, 1]))
    ico.export(d / "ico.obj")
    ico.export(d / "ico.stl")
    write_msh(d / "ico.msh", ico.vertices, ico.faces)
    bar = trimesh.creation.box(extents=(0.3, 0.1, 0.1))
    leg = trimesh.creation.box(extents=(0.1, 0.3, 0.1))
    leg.apply_translation([0.1, 0.1, 0])
    trimesh.util.concatenate([bar, leg]).export(d / "L.stl")
    return d


MODEL = """<mujoco><compiler meshdir="{meshdir}"/>
<default><mesh scale="1 1 1"/><default class="big"><mesh scale="1.5 1.5 1.5"/></default></default>
<asset>
 <mesh name="box" file="box.stl" scale="1 2 1.5"/>
 <mesh name="ico" file="ico.obj" refpos="0.01 0.02 0" refquat="0.9 0.1 0.2 0.3"/>
 <mesh name="icoh" file="ico.stl" inertia="convex" maxhullvert="12"/>
 <mesh name="icomsh" file="ico.msh" class="big"/>
 <mesh name="Lc" file="L.stl" inertia="convex"/>
 <mesh name="Ll" file="L.stl"/>
 <mesh name="Ls" file="L.stl" inertia="shell"/>
 <mesh name="boxe" file="box.stl" inertia="exact"/>
 <mesh name="tet" vertex="0 0 0  0.2 0 0  0 0.1 0  0 0 0.3"/>
</asset>
<worldbody>
 <body name="a" pos="0 0 1"><freejoint/><geom type="mesh" mesh="box" pos="0.1 0 0" euler="10 20 30"/></body>
 <body name="b"><freejoint/><geom type="mesh" mesh="ico" density="300"/>
   <geom type="mesh" mesh="icoh" pos="0 0.2 0" group="1"/></body>
 <body name="c"><freejoint/><geom type="mesh" mesh="Lc"/><geom type="mesh" mesh="icomsh" mass="2" pos="0 0 0.3"/></body>
 <body name="d"><freejoint/><geom type="mesh" mesh="Ll" quat="0 1 0 0"/></body>
 <body name="e"><freejoint/><geom type="mesh" mesh="Ls"/></body>
 <body name="f"><freejoint/><geom type="mesh" mesh="boxe"/><geom type="mesh" mesh="tet" pos="0.4 0 0"/></body>
 <body name="g"><freejoint/><geom mesh="ico"/><geom type="box" mesh="ico"/>
   <geom type="capsule" mesh="ico" fitscale="1.2"/><geom type="cylinder" mesh="Ll"/><geom type="ellipsoid" mesh="box"/></body>
</worldbody></mujoco>"""


def mesh_vertices(model, mesh):
    return model.mesh_vert[model.mesh_vertadr[mesh]:model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]


def in_body_frame(model, g, vert):
    return vert @ quat_to_mat(model.geom_quat[g]).T + model.geom_pos[g]


def same_point_sets(a, b, tol):
    from scipy.spatial import cKDTree

    assert len(a) == len(b)
    assert cKDTree(b).query(a)[0].max() <= tol and cKDTree(a).query(b)[0].max() <= tol


def mujoco_hull(mj, mesh):
    adr = mj.mesh_graphadr[mesh]
    nv = mj.mesh_graph[adr]
    return mesh_vertices(mj, mesh)[mj.mesh_graph[adr + 2 + nv: adr + 2 + 2 * nv]]


def tensor(quat, moments):
    rot = quat_to_mat(quat)
    return rot @ np.diag(moments) @ rot.T


def assert_meshes_match(ours, mj, *, size_rtol=1e-6, hull=True):
    assert (ours.nbody, ours.ngeom, ours.nmesh) == (mj.nbody, mj.ngeom, mj.nmesh)
    np.testing.assert_array_equal(ours.geom_type, mj.geom_type)
    np.testing.assert_allclose(ours.body_mass, mj.body_mass, rtol=TOL, atol=0)
    np.testing.assert_allclose(ours.body_ipos, mj.body_ipos, rtol=0, atol=TOL)
    for b in range(mj.nbody):
        ref = tensor(mj.body_iquat[b], mj.body_inertia[b])
        np.testing.assert_allclose(tensor(ours.body_iquat[b], ours.body_inertia[b]), ref, rtol=0,
                                   atol=1e-7 * max(np.abs(ref).max(), 1e-300), err_msg=f"body {b}")
    np.testing.assert_allclose(ours.geom_pos, mj.geom_pos, rtol=0, atol=TOL)
    np.testing.assert_allclose(ours.geom_size, mj.geom_size, rtol=size_rtol, atol=0)
    np.testing.assert_allclose(geom_rbound(ours), mj.geom_rbound, rtol=size_rtol, atol=0)
    for g in range(mj.ngeom):
        # the same frame up to the sign of each axis
        flips = quat_to_mat(mj.geom_quat[g]).T @ quat_to_mat(ours.geom_quat[g])
        if size_rtol <= 1e-6:
            np.testing.assert_allclose(np.abs(flips), np.eye(3), atol=1e-6, err_msg=f"geom {g} frame")
        if mj.geom_type[g] != mujoco.mjtGeom.mjGEOM_MESH:
            continue
        m, k = mj.geom_dataid[g], ours.geom_dataid[g]
        same_point_sets(in_body_frame(ours, g, mesh_vertices(ours, k)), in_body_frame(mj, g, mesh_vertices(mj, m)),
                        VERT_TOL)
        if hull and mj.mesh_graphadr[m] >= 0:
            hull_ours = mesh_vertices(ours, k)[ours.mesh_hull[ours.mesh_hulladr[k]:][:ours.mesh_hullnum[k]]]
            same_point_sets(in_body_frame(ours, g, hull_ours), in_body_frame(mj, g, mujoco_hull(mj, m)), VERT_TOL)
            # vertices in the same order (both merge repeated ones in order of appearance):
            # the hull graphs compare by vertex id
            np.testing.assert_allclose(in_body_frame(ours, g, mesh_vertices(ours, k)),
                                       in_body_frame(mj, g, mesh_vertices(mj, m)), atol=VERT_TOL)
            assert hull_graph_sets(ours.mesh_graph[ours.mesh_graphadr[k]:]) == \
                hull_graph_sets(mj.mesh_graph[mj.mesh_graphadr[m]:])


def hull_graph_sets(graph):
    """A mesh_graph as {vertex: its neighbours} and the set of its triangles (each a
    rotation-invariant tuple: the orientation counts)."""
    n, nface = graph[0], graph[1]
    ids = graph[2 + n: 2 + 2 * n]
    edges = graph[2 + 2 * n: 2 + 3 * n + 3 * nface]
    neighbours = {}
    for i in range(n):
        rest = list(edges[graph[2 + i]:])
        neighbours[int(ids[i])] = frozenset(int(ids[e]) for e in rest[:rest.index(-1)])
    faces = graph[2 + 3 * n + 3 * nface: 2 + 3 * n + 6 * nface].reshape(-1, 3)
    turned = {tuple(int(x) for x in np.roll(f, -int(np.argmin(f)))) for f in faces}
    return neighbours, turned


def test_meshes_of_every_format_and_inertia_mode_match_mujoco(assets):
    text = MODEL.format(meshdir=str(assets))
    assert_meshes_match(load_mjcf_string(text), mujoco.MjModel.from_xml_string(text))


def test_ascii_stl_reads_as_binary(assets):
    # MuJoCo reads only binary STL; the ASCII one must give the same mesh
    text = MODEL.format(meshdir=str(assets))
    ours = load_mjcf_string(text)
    ascii_ = load_mjcf_string(text.replace('file="box.stl" scale', 'file="box_ascii.stl" scale'))
    np.testing.assert_array_equal(ascii_.mesh_vert, ours.mesh_vert)
    np.testing.assert_array_equal(ascii_.body_inertia, ours.body_inertia)


@pytest.mark.parametrize("compiler", ['inertiafromgeom="true"', 'inertiagrouprange="0 0"', 'assetdir="{d}"'])
def test_compiler_settings_apply_to_meshes(assets, compiler):
    text = MODEL.format(meshdir=str(assets))
    if "assetdir" in compiler:
        text = text.replace(f'meshdir="{assets}"', compiler.format(d=assets))
    else:
        text = text.replace("<compiler ", f"<compiler {compiler} ")
    text = text.replace('<freejoint/><geom type="mesh" mesh="box"',
                        '<freejoint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/><geom type="mesh" mesh="box"')
    assert_meshes_match(load_mjcf_string(text), mujoco.MjModel.from_xml_string(text))


def test_meshdir_is_relative_to_the_model_file(assets):
    text = MODEL.format(meshdir=".")
    path = assets / "model.xml"
    path.write_text(text)
    assert_meshes_match(load_mjcf(path), mujoco.MjModel.from_xml_path(str(path)))


@pytest.mark.parametrize("named", ["box.stl", "assets/box.stl"])
def test_an_included_files_mesh_is_found_as_mujoco_finds_it(tmp_path, assets, named):
    """An included file's mesh under its meshdir, or named from the model's folder where
    meshdir + file is not there (MuJoCo Menagerie's mjx_panda.xml, included by its scenes);
    the file read alone is refused by both, MuJoCo and taigym."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "box.stl").write_bytes((assets / "box.stl").read_bytes())
    (tmp_path / "robot.xml").write_text(
        f'<mujoco><compiler meshdir="assets"/><asset><mesh name="box" file="{named}"/></asset>'
        '<worldbody><body><freejoint/><geom type="mesh" mesh="box"/></body></worldbody></mujoco>')
    (tmp_path / "scene.xml").write_text('<mujoco><include file="robot.xml"/></mujoco>')
    ours, mj = load_mjcf(tmp_path / "scene.xml"), mujoco.MjModel.from_xml_path(str(tmp_path / "scene.xml"))
    np.testing.assert_allclose(ours.mesh_vert, mj.mesh_vert, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.body_mass, mj.body_mass, rtol=1e-12)
    if named.startswith("assets/"):
        with pytest.raises(ValueError):
            mujoco.MjModel.from_xml_path(str(tmp_path / "robot.xml"))
        with pytest.raises(ModelError, match="cannot read mesh file"):
            load_mjcf(tmp_path / "robot.xml")


def test_a_scene_in_another_folder_finds_the_robots_files_as_mujoco_does(tmp_path, assets):
    """MuJoCo Playground's layout: a task's scene includes a robot's scene from another
    folder, which includes the robot, whose meshes sit beside it; nested includes and the
    meshes are found from the including file's folder."""
    robot = tmp_path / "menagerie" / "arm"
    (robot / "assets").mkdir(parents=True)
    (robot / "assets" / "box.stl").write_bytes((assets / "box.stl").read_bytes())
    (robot / "arm.xml").write_text(
        '<mujoco><compiler meshdir="assets"/><asset><mesh name="box" file="assets/box.stl"/></asset>'
        '<worldbody><body><freejoint/><geom type="mesh" mesh="box"/></body></worldbody></mujoco>')
    (robot / "scene.xml").write_text('<mujoco><include file="arm.xml"/></mujoco>')
    task = tmp_path / "tasks" / "reach"
    task.mkdir(parents=True)
    (task / "task.xml").write_text('<mujoco><include file="../../menagerie/arm/scene.xml"/>'
                                   '<worldbody><geom name="table" type="box" size="1 1 0.1"/></worldbody></mujoco>')
    ours, mj = load_mjcf(task / "task.xml"), mujoco.MjModel.from_xml_path(str(task / "task.xml"))
    np.testing.assert_allclose(ours.mesh_vert, mj.mesh_vert, rtol=0, atol=1e-6)
    assert ours.ngeom == mj.ngeom == 2


def test_dm_control_dog_matches_mujoco():
    suite = pytest.importorskip("dm_control.suite")
    path = os.path.join(os.path.dirname(suite.__file__), "dog.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = load_mjcf(path, strict=False)  # its sensors, priorities and muscles are others' concern
    mj = mujoco.MjModel.from_xml_path(path)
    assert ours.nmesh == 162
    # two of its bones have two nearly equal principal moments: their principal frames (and
    # so their boxes) are defined only to 1e-4; the solids themselves agree to float precision
    assert_meshes_match(ours, mj, size_rtol=1e-4, hull=False)


@pytest.mark.parametrize("mesh, words", [
    ('<mesh name="m" file="part.dae"/>', ".dae meshes are not supported; convert it to STL or OBJ"),
    ('<mesh name="m" file="missing.stl"/>', "cannot read mesh file"),
    ('<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 1 1 0"/>', "in a plane"),
    ('<mesh name="m" vertex="0 0 0 1 0 0 0 1 0"/>', "at least 4"),
    ('<mesh name="m" file="L.stl" maxhullvert="3"/>', "maxhullvert"),
    ('<mesh name="m" file="L.stl" inertia="solid"/>', "inertia"),
    ('<mesh name="m" builtin="sphere" params="3"/>', "builtin"),
])
def test_bad_meshes_are_refused_in_one_line(assets, mesh, words):
    text = (f'<mujoco><compiler meshdir="{assets}"/><asset>{mesh}</asset><worldbody><body><freejoint/>'
            '<geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match=None) as info:
        load_mjcf_string(text)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_every_mesh_pair_has_a_routine(assets):
    """Meshes collide with height fields and, with multi-CCD on, with boxes and meshes by
    their own routines (tests/test_hfield_meshes.py, tests/test_mesh_multiccd.py); geoms
    that collide with nothing make no pair."""
    text = (f'<mujoco><compiler meshdir="{assets}"/><asset><mesh file="box.stl"/>'
            '<hfield name="h" nrow="2" ncol="2" size="1 1 .1 .1"/></asset><worldbody>'
            '<geom type="hfield" hfield="h"/><body><freejoint/><geom name="m" type="mesh" mesh="box"/></body>'
            '</worldbody></mujoco>')
    assert candidate_pairs(load_mjcf_string(text)).maxcon.tolist() == [16]
    text = text.replace('<geom type="hfield" hfield="h"/>', '<geom type="box" size=".1 .1 .1"/>')
    assert candidate_pairs(load_mjcf_string(text)).maxcon.tolist() == [4]
    one = load_mjcf_string(text.replace("<worldbody>", '<option><flag multiccd="disable"/></option><worldbody>'))
    assert candidate_pairs(one).maxcon.tolist() == [1]
    quiet = load_mjcf_string(text.replace('mesh="box"/>', 'mesh="box" contype="0" conaffinity="0"/>'))
    assert candidate_pairs(quiet).npair == 0


# --- collisions -----------------------------------------------------------------------
SHAPES = {"sphere": 'type="sphere" size=".1"', "capsule": 'type="capsule" size=".06 .12"',
          "box": 'type="box" size=".1 .07 .05"', "cylinder": 'type="cylinder" size=".08 .06"',
          "ellipsoid": 'type="ellipsoid" size=".08 .06 .04"', "tet": 'type="mesh" mesh="tet"',
          "ico": 'type="mesh" mesh="ico"', "cube": 'type="mesh" mesh="cube"'}


@pytest.fixture(scope="module")
def solids(tmp_path_factory):
    d = tmp_path_factory.mktemp("solids")
    tet = trimesh.Trimesh(vertices=[[0, 0, 0], [0.2, 0, 0], [0, 0.15, 0], [0.03, 0.04, 0.18]],
                          faces=[[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    tet.export(d / "tet.stl")
    ico = trimesh.creation.icosphere(subdivisions=1, radius=0.1)
    ico.apply_scale([1.0, 0.7, 0.5])
    ico.export(d / "ico.stl")
    trimesh.creation.box(extents=(0.3, 0.2, 0.1)).export(d / "cube.stl")
    return d


def pair_scene(meshdir, a, b):
    return f"""<mujoco><compiler meshdir="{meshdir}"/><option><flag multiccd="disable"/></option>
    <asset><mesh name="tet" file="tet.stl"/><mesh name="ico" file="ico.stl"/><mesh name="cube" file="cube.stl"/>
    </asset><worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .3"><freejoint/><geom {SHAPES[a]} contype="2" conaffinity="2"/></body>
    <body pos=".15 0 .3"><freejoint/><geom {SHAPES[b]} contype="2" conaffinity="2"/></body>
    </worldbody></mujoco>"""


def random_poses(seed, n=64, near=0.08, far=0.2):
    rng = np.random.default_rng(seed)
    q = np.zeros((n, 14))
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    q[:, 0:3] = [0, 0, 0.5]
    q[:, 7:10] = q[:, 0:3] + u * rng.uniform(near, far, (n, 1))
    for k in range(2):
        quat = rng.normal(size=(n, 4))
        q[:, 7 * k + 3: 7 * k + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return q


def contacts_both(xml, qpos, device):
    """MuJoCo's contacts at each pose, and ours from the same geom poses (the collision
    stage alone: the poses are mujoco's)."""
    from taigym.physics.collision.driver import Collider

    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    ref, xpos, xquat = [], [], []
    for q in qpos:
        d.qpos[:] = q
        mujoco.mj_forward(mjm, d)
        ref.append([(float(c.dist), c.pos.copy(), c.frame[:3].copy(), tuple(c.geom)) for c in d.contact[:d.ncon]])
        xpos.append(d.xpos.copy())
        xquat.append(d.xquat.copy())
    col = Collider(load_mjcf_string(xml), len(qpos), device=device, precision="float64")
    col.collide(np.array(xpos), np.array(xquat))
    return ref, col.get()


def by_depth(cons):
    return sorted(cons, key=lambda c: c[0])


DEEP = 0.03  # as tests/test_convex.py
# EPA's stopping face bounds the normal only loosely where neither geom is smooth at the
# contact (tests/test_convex.py): a mesh against an ellipsoid or a cylinder
PAIR_TOL = {"sphere": (1e-9, 1e-8), "box": (1e-8, 1e-7), "tet": (1e-8, 1e-7), "ico": (1e-8, 1e-7),
            "capsule": (1e-6, 1e-4), "cylinder": (2e-6, 5e-2), "ellipsoid": (2e-6, 5e-2)}


@pytest.mark.parametrize("other", ["sphere", "capsule", "box", "cylinder", "ellipsoid", "tet"])
def test_mesh_pairs_match_mujoco(solids, other, device):
    xml = pair_scene(solids, "ico", other)
    ref, got = contacts_both(xml, random_poses(7), device)
    dist_tol, normal_tol = PAIR_TOL[other]
    made = 0
    for e, cons in enumerate(ref):
        assert got["ncon"][e] == len(cons), e
        for i, (dist, pos, normal, geoms) in enumerate(cons):
            assert tuple(got["geom"][e, i]) == geoms
            if dist < -DEEP:  # neither EPA converges in 35 iterations this deep
                assert abs(got["dist"][e, i] - dist) < 1e-4
                continue
            assert abs(got["dist"][e, i] - dist) < dist_tol, (e, got["dist"][e, i], dist)
            assert np.abs(got["frame"][e, i, 0] - normal).max() < normal_tol
            assert np.abs(got["pos"][e, i] - pos).max() < max(10 * normal_tol, 1e-7)
            made += 1
    assert made >= 8, "too few contacts sampled"


def resting_poses(xml, n, seed):
    """Random orientations of body 1 with its lowest hull vertex from 2 cm below the plane
    to 5 mm above it."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    q = np.zeros((n, mjm.nq))
    for e in range(n):
        quat = rng.normal(size=4)
        d.qpos[:] = 0
        d.qpos[3:7] = quat / np.linalg.norm(quat)
        d.qpos[7:10] = [3, 3, 3]
        d.qpos[10] = 1
        mujoco.mj_forward(mjm, d)
        g = mjm.body_geomadr[1]
        vert = mesh_vertices(mjm, mjm.geom_dataid[g]) @ d.geom_xmat[g].reshape(3, 3).T + d.geom_xpos[g]
        q[e] = d.qpos
        q[e, 2] = -vert[:, 2].min() + rng.uniform(-0.02, 0.005)
    return q


@pytest.mark.parametrize("mesh", ["tet", "ico", "cube"])
def test_mesh_plane_contacts_match_mujoco(solids, mesh, device):
    """Faces of three and four vertices: the contacts are MuJoCo's, as sets (the order in
    which each lists a face's vertices may differ)."""
    xml = pair_scene(solids, mesh, "sphere").replace('<geom type="plane" size="5 5 .1"/>',
                                                     '<geom type="plane" size="5 5 .1" contype="1" conaffinity="3"/>')
    xml = xml.replace(f'<geom {SHAPES[mesh]} contype="2" conaffinity="2"/>', f'<geom {SHAPES[mesh]}/>')
    ref, got = contacts_both(xml, resting_poses(xml, 128, 3), device)
    several = 0
    for e, cons in enumerate(ref):
        assert got["ncon"][e] == len(cons), (e, got["ncon"][e], len(cons))
        ours = by_depth([(got["dist"][e, i], got["pos"][e, i], got["frame"][e, i, 0]) for i in range(len(cons))])
        for (dist, pos, normal, _), (d, p, n) in zip(by_depth(cons), ours):
            # vertices are float32 in each one's principal frame, which differ in rounding
            assert abs(d - dist) < 1e-7 and np.abs(p - pos).max() < 1e-7 and np.abs(n - normal).max() < 1e-12
        several += len(cons) > 1
    assert several >= 3, "too few poses with more than one contact"


@pytest.mark.parametrize("mesh, euler, ncon", [("tet", "20 -30 10", 3), ("cube", "2 -1 0", 4)])
def test_a_dropped_mesh_follows_mujoco(solids, mesh, euler, ncon, device):
    from taigym import physics

    xml = f"""<mujoco><compiler meshdir="{solids}"/><option timestep="0.002"/>
    <asset><mesh name="{mesh}" file="{mesh}.stl"/></asset><worldbody><geom type="plane" size="2 2 .1"/>
    <body pos=".01 -.02 .15" euler="{euler}"><freejoint/><geom type="mesh" mesh="{mesh}"/></body>
    </worldbody></mujoco>"""
    world = physics.World(load_mjcf_string(xml), 1, device=device, precision="float64")
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mjm)
    worst = 0.0
    for _ in range(5):
        world.step(40)
        mujoco.mj_step(mjm, d, 40)
        worst = max(worst, np.abs(world.get("qpos")[0] - d.qpos).max())
    # 0.4 s: the fall, the first impacts, the settling on a face (measured: 1e-8 for the
    # tetrahedron, 1e-15 for the box)
    assert worst < 1e-7, worst
    assert d.ncon == ncon and world.contacts()["ncon"][0] == ncon


# --- drawing ----------------------------------------------------------------------------
def test_a_box_mesh_is_drawn_as_the_box_primitive(solids, device):
    """A box mesh's triangles draw as the box primitive of its size does; a tetrahedron's
    are drawn too (tests/test_mesh_rays.py draws non-convex meshes)."""
    from taigym.physics.render import FreeCamera, Renderer

    scene = f"""<mujoco><compiler meshdir="{solids}"/>
    <asset><mesh name="cube" file="cube.stl"/><mesh name="tet" file="tet.stl"/></asset><worldbody>
    <geom type="plane" size="2 2 .1" rgba=".9 .9 .9 1"/>
    <body pos="0 0 .3" euler="10 20 30"><freejoint/>{{shape}}</body></worldbody></mujoco>"""
    camera = FreeCamera(lookat=(0.0, 0.0, 0.25), distance=1.2, azimuth=60.0, elevation=-25.0, fovy=45.0)

    def draw(shape):
        model = load_mjcf_string(scene.format(shape=shape))
        xpos = np.array([model.body_pos])
        xquat = np.array([model.body_quat])
        return Renderer(model, width=96, height=72, device=device).render_poses(xpos, xquat, camera=camera)[0]

    mesh = draw('<geom type="mesh" mesh="cube" rgba="0 1 0 1"/>')
    box = draw('<geom type="box" size=".15 .1 .05" rgba="0 1 0 1"/>')
    green = lambda frame: frame[..., 1].astype(int) > frame[..., 0].astype(int) + 40  # noqa: E731
    assert green(box).sum() > 150
    # the same silhouette and shading, but for pixels along its edges
    assert (green(mesh) != green(box)).sum() <= 0.03 * green(box).sum()
    inside = green(mesh) & green(box)
    assert np.abs(mesh[inside].astype(int) - box[inside].astype(int)).max() <= 2
    assert green(draw('<geom type="mesh" mesh="tet" rgba="0 1 0 1"/>')).sum() > 100


# --- URDF -------------------------------------------------------------------------------
URDF = """<robot name="r">
  <link name="base">
    <inertial><mass value="2"/><inertia ixx=".1" iyy=".1" izz=".1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 .1" rpy="0 .3 0"/>
      <geometry><mesh filename="package://pkg/meshes/box.stl" scale="2 1 1"/></geometry></collision>
    <visual><geometry><mesh filename="package://pkg/meshes/box.stl" scale="2 1 1"/></geometry></visual>
    <visual><origin xyz=".3 0 0"/><geometry><mesh filename="meshes/ico.obj"/></geometry></visual>
  </link>
</robot>"""


@pytest.fixture()
def package(assets, tmp_path):
    (tmp_path / "pkg" / "meshes").mkdir(parents=True)
    (tmp_path / "pkg" / "meshes" / "box.stl").write_bytes((assets / "box.stl").read_bytes())
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "ico.obj").write_bytes((assets / "ico.obj").read_bytes())
    (tmp_path / "robot.urdf").write_text(URDF)
    return tmp_path


@pytest.mark.parametrize("roots", ["parent", "package"])
def test_urdf_meshes_load_as_mjcf_meshes(package, roots):
    from taigym.physics.compiler.urdf import load_urdf

    root = package if roots == "parent" else package / "pkg"  # a folder of packages, or the package itself
    ours = load_urdf(package / "robot.urdf", package_dirs=[root])
    assert ours.nmesh == 2 and ours.mesh_name == ["box", "ico"]  # the collision and visual box share one
    assert ours.geom_type.tolist() == [mujoco.mjtGeom.mjGEOM_MESH] * 3
    assert ours.geom_contype.tolist() == [1, 0, 0] and ours.body_mass[1] == 2.0
    # the same meshes through MJCF, which is checked against mujoco above
    mjcf = load_mjcf_string(f"""<mujoco><compiler meshdir="{package}" angle="radian"/><asset>
      <mesh name="box" file="pkg/meshes/box.stl" scale="2 1 1"/><mesh name="ico" file="meshes/ico.obj"/></asset>
      <worldbody><body name="base"><inertial pos="0 0 0" mass="2" diaginertia=".1 .1 .1"/>
      <geom type="mesh" mesh="box" pos="0 0 .1" euler="0 .3 0"/><geom type="mesh" mesh="box"/>
      <geom type="mesh" mesh="ico" pos=".3 0 0"/></body></worldbody></mujoco>""")
    for name in ("geom_pos", "geom_quat", "geom_size", "mesh_vert", "mesh_pos", "mesh_quat"):
        np.testing.assert_allclose(getattr(ours, name), getattr(mjcf, name), atol=1e-12, err_msg=name)


def test_urdf_mesh_files_that_cannot_be_read_are_refused_in_one_line(package):
    from taigym.physics.compiler.urdf import load_urdf

    (package / "pkg" / "meshes" / "arm.dae").write_text("<COLLADA/>")
    path = package / "robot.urdf"
    path.write_text(URDF.replace("meshes/box.stl", "meshes/arm.dae"))
    with pytest.raises(ModelError) as info:
        load_urdf(path, package_dirs=[package])
    assert "arm.dae" in str(info.value) and "convert it to STL or OBJ" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(ModelError, match="package not found under package_dirs"):
        load_urdf(package / "robot.urdf")
    with pytest.warns(UserWarning, match="package not found"):
        skipped = load_urdf(package / "robot.urdf", strict=False)
    assert skipped.ngeom == 1  # the OBJ visual, found beside the URDF
