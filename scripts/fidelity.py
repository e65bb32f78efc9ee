"""Check your own robot against MuJoCo: the same MJCF or URDF file loaded by taigym and by
the ``mujoco`` package, compared quantity by quantity in float64.

    taigym fidelity robot.xml --states 8 --steps 200
    taigym fidelity models/ other/robot.urdf      # several: a line each, then a summary

What is compared:

- at ``--states`` random states (seeded; half are random poses: joint angles within their
  ranges, random unit quaternions; half are poses a short MuJoCo simulation under random
  controls reaches, on the ground; all with normal velocities and controls within
  ctrlrange): the mass matrix ``qM``, the
  bias forces ``qfrc_bias``, the accelerations without constraints ``qacc_smooth`` and
  with them ``qacc``, the number of contacts and each contact's ``dist``, and ``sensordata``
  (each sensor held to its own scale; the row names the sensor);
- a ``--steps`` rollout from the first keyframe (or qpos0 at rest) with zero or random
  controls and the model's own integrator and solver settings: the largest ``qpos`` and
  ``qvel`` difference along the way.

One table row per quantity: the worst absolute error, the tolerance it is held to, where
the worst error is (dof, joint, geom or sensor names) and ok/FAIL. Exit status 0 when every
row is within tolerance, 1 when one is not, 2 when either engine cannot load the file (the
one-line error names the file, element and attribute). Several files or directories: one
line per model and a summary table instead (EPILOG says what counts and the exit status).

taigym's own joint attributes (``taigym:drive_*``, ``taigym:limit*``) have no MuJoCo
counterpart: they are removed from both sides' copy of the file and listed in a note.
A URDF goes to MuJoCo with the compiler settings that make its import match taigym's.

Where the engines differ by design, the comparison says so in a note instead of failing:
height-field contacts (MuJoCo collides the prisms under the grid with its convex solver,
taigym the grid's surface, physics/collision/hfield/) are left out, and GJK/EPA pairs (with
multi-CCD's clipped contacts, which start from EPA's final face) compare their depths within
EPA's precision; a state whose contact set differs there (in number, or with GJK/EPA depths
apart by more than rounding, so that their normals differ too) is left out of the ``qacc`` row and of
the contact-dependent sensors' (touch, force, torque, accelerometer, framelinacc,
frameangacc, contact). The rollout stays strict: a note names such pairs when it touches them, since
drift can start there. For RK4 models the rollout's reference
is the classic scheme made of mujoco's mj_forward and mj_integratePos (see ``rk4_step``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

# Tolerances, relative to each quantity's scale max(1, max |MuJoCo value|) at that state
# (as tests/oracle.py's rel_err), so that a heavy robot is held to the same digits as a light
# one. Observed on the shipped assets and gymnasium's: ~1e-15 for every snapshot row.
TOL_QM = 1e-9  # the same CRBA in float64 on both sides: only summation order differs
TOL_BIAS = 1e-9  # the same recursive Newton-Euler
TOL_QACC_SMOOTH = 1e-8  # M^-1 f: rounding grows with the mass matrix's condition number
TOL_QACC = 1e-6  # both constraint solves run to convergence; contact Jacobians add conditioning
TOL_NCON = 0  # the same pairs pass the same broad and narrow phase: counts are exact
TOL_DIST = 1e-9  # [m] analytic pairs: the same routines as MuJoCo's, rounding only
TOL_DIST_CCD = 1e-4  # [m] GJK/EPA pairs: EPA stops within 1e-6 of the surface, deep overlaps further
TOL_SENSOR = 1e-9  # each sensor scaled by its own values: the same stages' quantities, read out
# Rollouts run the model's own solver settings: an unconverged solver depends on the order
# it visits rows in (the humanoid's 50 PGS iterations: 2e-6 in qpos, 1e-5 in qvel over 200
# steps, 3e-5 and 9e-4 under random controls), and contacts amplify what differences there are.
TOL_ROLLOUT_QPOS = 1e-4
TOL_ROLLOUT_QVEL = 1e-3

# the constrained snapshot: Newton to machine precision on both sides, so that the row
# measures the constraint model, not where each solver's stopping test happens to fire
SNAPSHOT_SOLVER = {"solver": "Newton", "iterations": 200, "tolerance": 1e-15}

_TAIGYM_ATTR = re.compile(r"""\s+(?:xmlns:taigym|taigym:[\w.-]+)\s*=\s*(?:"[^"]*"|'[^']*')""")
_XML_ENCODING = re.compile(rb"""^(?:\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*["']([\w.:-]+)["']""")
_FREE_AXES = ("x", "y", "z", "rx", "ry", "rz")
_QUAT = ("qw", "qx", "qy", "qz")


class LoadError(Exception):
    """A file one of the engines cannot load; the message is the one line printed."""


@dataclass
class Row:
    quantity: str
    error: float  # worst absolute error
    tol: float  # the absolute tolerance at that worst element
    where: str

    @property
    def ok(self) -> bool:
        return self.error <= self.tol


# --- loading ----------------------------------------------------------------------------

def is_urdf(path: Path) -> bool:
    return path.suffix.lower() == ".urdf"


def strip_taigym_attributes(text: str) -> tuple[str, list[str]]:
    """The MJCF text without taigym's own attributes, and the distinct names removed."""
    found = sorted({m.group(0).split("=")[0].strip() for m in _TAIGYM_ATTR.finditer(text)} - {"xmlns:taigym"})
    return _TAIGYM_ATTR.sub("", text), found


def urdf_for_mujoco(text: str) -> str:
    """URDF text with the compiler settings that make MuJoCo's URDF import match taigym's:
    fixed-joint links stay bodies, visual shapes stay (non-colliding) geoms, and a link
    without <inertial> is massless rather than given the inertia of its shapes."""
    settings = '<mujoco><compiler fusestatic="false" discardvisual="false" inertiafromgeom="false"/></mujoco>'
    return re.sub(r"(<robot\b[^>]*>)", lambda m: m.group(1) + settings, text, count=1)


@contextlib.contextmanager
def working_directory(folder: Path):
    # MuJoCo resolves a string model's files (height field PNGs, includes) from the cwd
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def load_taigym_model(path: Path):
    """taigym's Model of the file, strict (raises ModelError naming what is unsupported),
    then, where the MJCF uses taigym: attributes, of the file without them; and a note."""
    from taigym.physics.compiler.mjcf import load_mjcf_string

    from taigym import physics

    model = physics.load_model(path)
    if is_urdf(path):
        return model, ""
    text, removed = strip_taigym_attributes(xml_text(path))
    if not removed:
        return model, ""
    note = f"compared without taigym's own attributes, which MuJoCo lacks: {', '.join(removed)}"
    return load_mjcf_string(text, base_dir=path.resolve().parent), note


def xml_text(path: Path) -> str:
    """The model file as text, decoded as its XML declaration says (UTF-8 where it names none),
    as both engines read it."""
    data = path.read_bytes()
    declared = _XML_ENCODING.match(data)
    encoding = declared.group(1).decode() if declared else "utf-8"
    try:
        return data.decode(encoding).removeprefix("\ufeff")
    except (LookupError, UnicodeDecodeError) as e:
        raise LoadError(f"{path}: cannot decode it as {encoding}: {e}") from None


def load_mujoco_model(path: Path):
    """MuJoCo's MjModel of the same file (taigym: attributes removed, URDF settings added)."""
    import mujoco

    original = xml_text(path)
    text = urdf_for_mujoco(original) if is_urdf(path) else strip_taigym_attributes(original)[0]
    try:
        # as it is, from its path, so that MuJoCo resolves included files' assets as users
        # load it; MuJoCo reads files as UTF-8, so another declared encoding goes as text
        if text == original and original.encode("utf-8") == path.read_bytes().removeprefix(b"\xef\xbb\xbf"):
            return mujoco.MjModel.from_xml_path(str(path))
        with working_directory(path.resolve().parent):
            return mujoco.MjModel.from_xml_string(text)
    except ValueError as e:
        raise LoadError(f"{path}: mujoco cannot load it: {'; '.join(str(e).split(chr(10)))}") from None


def structure_mismatch(model, mjm) -> str:
    """Why the two compiled models cannot be compared element by element ('' if they can)."""
    import mujoco

    for size in ("nq", "nv", "nbody", "njnt", "ngeom", "nu", "nsensordata"):
        if getattr(model, size) != getattr(mjm, size):
            return f"{size}: taigym {getattr(model, size)}, mujoco {getattr(mjm, size)}"
    for j in range(mjm.njnt):
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_JOINT, j) or ""
        if model.jnt_name[j] != name or model.jnt_type[j] != mjm.jnt_type[j]:
            return f"joint {j}: taigym {model.jnt_name[j]!r}, mujoco {name!r}"
    return ""


# --- names for the "where" column ---------------------------------------------------------

def _name(mjm, kind, i: int) -> str:
    import mujoco

    return mujoco.mj_id2name(mjm, getattr(mujoco.mjtObj, kind), i) or ""


def joint_label(mjm, j: int) -> str:
    return _name(mjm, "mjOBJ_JOINT", j) or f"joint{j}"


def dof_names(mjm) -> list[str]:
    """One name per dof: the joint's, with the axis for free and ball joints (root:rz)."""
    names = []
    for j in range(mjm.njnt):
        axes = {0: _FREE_AXES, 1: _FREE_AXES[3:]}.get(int(mjm.jnt_type[j]), ("",))
        names += [joint_label(mjm, j) + (f":{a}" if a else "") for a in axes]
    return names


def qpos_names(mjm) -> list[str]:
    """One name per coordinate, with the body it moves: root:qw (torso)."""
    names = []
    for j in range(mjm.njnt):
        coords = {0: _FREE_AXES[:3] + _QUAT, 1: _QUAT}.get(int(mjm.jnt_type[j]), ("",))
        body = _name(mjm, "mjOBJ_BODY", int(mjm.jnt_bodyid[j])) or f"body{mjm.jnt_bodyid[j]}"
        names += [joint_label(mjm, j) + (f":{c}" if c else "") + f" ({body})" for c in coords]
    return names


def geom_label(mjm, g: int) -> str:
    """The geom's name, or its body's with the geom's index where it has none."""
    body = int(mjm.geom_bodyid[g])
    return _name(mjm, "mjOBJ_GEOM", g) or f"{_name(mjm, 'mjOBJ_BODY', body) or f'body{body}'}/geom{g}"


# --- states -----------------------------------------------------------------------------

def sample_qpos(mjm, rng) -> np.ndarray:
    """A random pose: limited joints uniform in their range, unlimited hinges within +-pi
    and slides within +-0.5 m of qpos0, random unit quaternions; a free body anywhere from
    the floor to its qpos0 height, so that many states touch the ground."""
    qpos = np.array(mjm.qpos0, dtype=float)
    for j in range(mjm.njnt):
        a, kind = int(mjm.jnt_qposadr[j]), int(mjm.jnt_type[j])
        if kind == 0:  # free
            qpos[a : a + 2] += rng.normal(scale=0.1, size=2)
            qpos[a + 2] = rng.uniform(0.0, max(qpos[a + 2], 0.0) + 0.1)
            qpos[a + 3 : a + 7] = unit_quaternion(rng)
        elif kind == 1:  # ball
            qpos[a : a + 4] = unit_quaternion(rng)
        elif mjm.jnt_limited[j]:
            qpos[a] = rng.uniform(*mjm.jnt_range[j])
        else:
            qpos[a] += rng.uniform(-np.pi, np.pi) if kind == 3 else rng.uniform(-0.5, 0.5)
    return qpos


def unit_quaternion(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_ctrl(mjm, rng, n: int) -> np.ndarray:
    """(n, nu) controls: uniform within ctrlrange, or within +-1 where it is unlimited."""
    limited = mjm.actuator_ctrllimited.astype(bool)
    lo = np.where(limited, mjm.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(limited, mjm.actuator_ctrlrange[:, 1], 1.0)
    return rng.uniform(lo, hi, size=(n, mjm.nu))


def settled_poses(mjm, n: int, rng, every_s: float = 0.25) -> list[np.ndarray]:
    """Poses MuJoCo passes through every ``every_s`` seconds of a simulation from the
    initial state under random controls: a legged robot standing or lying on the ground,
    where random poses mostly float above it, so that contacts and limits get compared."""
    import mujoco

    d = mujoco.MjData(mjm)
    d.qpos[:], d.qvel[:], _ = initial_state(mjm)
    poses = []
    for _ in range(n):
        for _ in range(max(1, round(every_s / mjm.opt.timestep))):
            d.ctrl[:] = random_ctrl(mjm, rng, 1)[0]
            mujoco.mj_step(mjm, d)
        poses.append(d.qpos.copy())
    return poses


def random_states(mjm, n: int, rng):
    """(qpos, qvel, ctrl) of n states: half random poses, half settled ones (rounded down),
    all with random normal velocities and random controls."""
    poses = [sample_qpos(mjm, rng) for _ in range(n - n // 2)] + settled_poses(mjm, n // 2, rng)
    return np.array(poses), rng.normal(size=(n, mjm.nv)), random_ctrl(mjm, rng, n)


# --- the snapshot comparison --------------------------------------------------------------

def contact_list(geoms, dists) -> list[tuple[tuple[int, int], float]]:
    """Contacts as ((lower geom id, higher geom id), dist), sorted: order-free matching."""
    return sorted((tuple(sorted(int(g) for g in pair)), float(d)) for pair, d in zip(geoms, dists))


def taigym_snapshot(model, qpos, qvel, ctrl, device: str, max_contacts: int) -> list[dict]:
    """Per state: qM, qfrc_bias, qacc_smooth, qacc, sensordata and the contacts of one forward
    pass (which computes the sensors, as mj_forward does)."""
    from taigym import physics

    world = physics.World(model.with_options(**SNAPSHOT_SOLVER), num_envs=len(qpos), device=device,
                          precision="float64", serial=False, name="fidelity", max_contacts=max_contacts)
    world.set_state(qpos=qpos, qvel=qvel)
    if model.nu:
        world.set_ctrl(ctrl)
    world.forward()
    got = {k: world.get(k) for k in ("qM", "qfrc_bias", "qacc_smooth", "qacc", "sensordata")}
    con = world.contacts()
    return [{**{k: v[e] for k, v in got.items()},
             "contacts": contact_list(con["geom"][e, : con["ncon"][e]], con["dist"][e, : con["ncon"][e]])}
            for e in range(len(qpos))]


def mujoco_snapshot(mjm, qpos, qvel, ctrl) -> list[dict]:
    import mujoco

    tight = copy.deepcopy(mjm)
    tight.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    tight.opt.iterations, tight.opt.tolerance = SNAPSHOT_SOLVER["iterations"], SNAPSHOT_SOLVER["tolerance"]
    out = []
    for e in range(len(qpos)):
        d = mujoco.MjData(tight)
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos[e], qvel[e], ctrl[e]
        mujoco.mj_forward(tight, d)
        full_m = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(tight, d, full_m)
        out.append({"qM": full_m, "qfrc_bias": d.qfrc_bias.copy(), "qacc_smooth": d.qacc_smooth.copy(),
                    "qacc": d.qacc.copy(), "sensordata": d.sensordata.copy(),
                    "contacts": contact_list(d.contact.geom, d.contact.dist)})
    return out


def worst_error(quantity: str, ours: list, refs: list, tol: float, label) -> Row:
    """The element with the largest error relative to its tolerance, over all states;
    ``label(flat index)`` names it."""
    row = Row(quantity, 0.0, tol, "-")
    for a, b in zip(ours, refs):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if not b.size:
            continue
        err = np.abs(a - b)
        err[~np.isfinite(err)] = np.inf  # a NaN on either side is the worst error, never a pass
        k = int(np.argmax(err))
        tol_abs = tol * max(1.0, float(np.max(np.abs(b))))
        if err.flat[k] / tol_abs > row.error / row.tol:
            row = Row(quantity, float(err.flat[k]), tol_abs, label(k))
    return row


def matrix_label(names: list[str]):
    n = len(names)
    return lambda k: names[k // n] if k // n == k % n else f"{names[k // n]} / {names[k % n]}"


def contact_kind(mjm, pair) -> str:
    """How a geom pair's contacts can be compared, from the engine's routing table:
    'exact' (analytic routines, MuJoCo's own: every contact), 'ccd' (one GJK/EPA run: its
    contact, or the features it ends on clipped against each other, as MuJoCo's
    multi-contact) or 'hfield' (MuJoCo collides the prisms under the grid, taigym its
    surface: physics/collision/hfield/)."""
    from taigym.physics.collision import broadphase as B

    code, _ = B.COLLIDERS.get(tuple(sorted(int(mjm.geom_type[g]) for g in pair)), (0, 1))
    if code in (B.COLLIDE_HFIELD_SPHERE, B.COLLIDE_HFIELD_CAPSULE, B.COLLIDE_HFIELD_BOX, B.COLLIDE_HFIELD_CONVEX,
                B.COLLIDE_HFIELD_MESH):
        return "hfield"
    if code in (B.COLLIDE_CONVEX, B.COLLIDE_FACES):
        return "ccd"
    return "exact"


def depths_by_pair(contacts) -> dict:
    out: dict = {}
    for pair, dist in contacts:
        out.setdefault(pair, []).append(dist)
    return out


def pair_label(mjm, pair) -> str:
    return " - ".join(geom_label(mjm, g) for g in pair)


def compare_pair(mjm, pair, da: list, db: list) -> tuple[float, float, float]:
    """(count error, depth error, depth tolerance) of one geom pair at one state: every
    contact's depth, in order of depth."""
    tol = TOL_DIST if contact_kind(mjm, pair) == "exact" else TOL_DIST_CCD
    if len(da) != len(db):
        return float(abs(len(da) - len(db))), 0.0, tol
    return 0.0, float(np.max(np.abs(np.sort(da) - np.sort(db)), initial=0.0)), tol


def contact_rows(mjm, ours: list, refs: list) -> list[Row]:
    """Contact count and depth per geom pair, over the states (height-field pairs left out)."""
    total = sum(contact_kind(mjm, pair) != "hfield" for b in refs for pair, _ in b)
    ncon = Row("ncon", 0.0, TOL_NCON, f"{total} MuJoCo contacts in {len(refs)} states")
    dist = Row("contact dist", 0.0, TOL_DIST, "-")
    for a, b in zip(ours, refs):
        a, b = depths_by_pair(a), depths_by_pair(b)
        for pair in sorted(set(a) | set(b)):
            if contact_kind(mjm, pair) == "hfield":
                continue
            da, db = a.get(pair, []), b.get(pair, [])
            count_err, depth_err, tol = compare_pair(mjm, pair, da, db)
            if count_err > ncon.error:
                ncon = Row("ncon", count_err, TOL_NCON, f"{pair_label(mjm, pair)} (taigym {len(da)}, mujoco {len(db)})")
            if da and db and (depth_err / tol > dist.error / dist.tol or dist.where == "-"):
                dist = Row("contact dist", depth_err, tol, pair_label(mjm, pair))
    return [ncon, dist]


def differs_by_design(mjm, a: list, b: list) -> bool:
    """Whether two contact sets differ where the engines differ by design (contact_kind):
    the constrained qacc of such a state is not comparable. That is a height-field pair, or
    a GJK/EPA pair with a different number of contacts or whose two EPA runs stopped at
    different depths (more than analytic rounding, TOL_DIST, apart; within
    TOL_DIST_CCD, which the dist row holds them to): their normals then differ as well, by
    1e-3 in a deep overlap, and the stiff contact force of a deep overlap magnifies that."""
    a, b = depths_by_pair(a), depths_by_pair(b)
    kinds = {pair: contact_kind(mjm, pair) for pair in set(a) | set(b)}

    def epa_differs(p) -> bool:
        da, db = sorted(a.get(p, [])), sorted(b.get(p, []))
        return len(da) != len(db) or any(abs(x - y) > TOL_DIST for x, y in zip(da, db))

    return any(k == "hfield" or (k == "ccd" and epa_differs(p)) for p, k in kinds.items())


# the sensors that read contacts, contact forces or constrained accelerations (mjtSensor codes:
# touch, accelerometer, force, torque, framelinacc, frameangacc, contact): like qacc, not
# comparable at a state whose contact set differs by design
CONTACT_SENSORS = (0, 1, 4, 5, 33, 34, 42)


def sensor_row(mjm, ours: list, refs: list, by_design: list) -> Row:
    """sensordata, each sensor held to TOL_SENSOR x max(1, its largest |MuJoCo value|) at a
    state; the contact-dependent ones left out at the states listed in ``by_design``."""
    from taigym.physics.compiler.sensors import CODES, where

    row = Row("sensordata", 0.0, TOL_SENSOR, "-")
    for s in range(mjm.nsensor):
        adr, dim, kind = int(mjm.sensor_adr[s]), int(mjm.sensor_dim[s]), int(mjm.sensor_type[s])
        states = [e for e in range(len(refs)) if not (kind in CONTACT_SENSORS and by_design[e])]
        name = where(CODES.get(kind, f"sensor type {kind}"), _name(mjm, "mjOBJ_SENSOR", s), s)
        new = worst_error("sensordata", [ours[e]["sensordata"][adr : adr + dim] for e in states],
                          [refs[e]["sensordata"][adr : adr + dim] for e in states], TOL_SENSOR,
                          lambda k, name=name, dim=dim: f"{name}[{k}]" if dim > 1 else name)
        if new.error / new.tol > row.error / row.tol or row.where == "-":
            row = new
    return row


def snapshot_rows(mjm, ours: list, refs: list) -> tuple[list[Row], str]:
    dofs = dof_names(mjm)
    rows = [worst_error("qM", [o["qM"] for o in ours], [r["qM"] for r in refs], TOL_QM, matrix_label(dofs))]
    for key, tol in (("qfrc_bias", TOL_BIAS), ("qacc_smooth", TOL_QACC_SMOOTH)):
        rows.append(worst_error(key, [o[key] for o in ours], [r[key] for r in refs], tol, dofs.__getitem__))
    by_design = [differs_by_design(mjm, o["contacts"], r["contacts"]) for o, r in zip(ours, refs)]
    keep = [e for e in range(len(refs)) if not by_design[e]]
    rows.append(worst_error("qacc", [ours[e]["qacc"] for e in keep], [refs[e]["qacc"] for e in keep], TOL_QACC,
                            dofs.__getitem__))
    rows += contact_rows(mjm, [o["contacts"] for o in ours], [r["contacts"] for r in refs])
    if mjm.nsensor:
        rows.append(sensor_row(mjm, ours, refs, by_design))
    skipped = len(refs) - len(keep)
    note = (f"{skipped} of {len(refs)} states have contacts that differ by design (height fields: MuJoCo collides "
            "prisms, taigym the surface; GJK/EPA pairs: EPA stopped at different depths, within the dist row's "
            "tolerance, or multi-CCD clipped a different number of contacts): their qacc is not compared, "
            "nor their contact-dependent sensors (touch, force, torque, accelerometer, framelinacc, frameangacc, contact), "
            "nor height-field contacts") if skipped else ""
    return rows, note


# --- the rollout ------------------------------------------------------------------------

def initial_state(mjm):
    """The first keyframe's (qpos, qvel, ctrl), or qpos0 at rest with zero controls."""
    if mjm.nkey:
        return np.array(mjm.key_qpos[0]), np.array(mjm.key_qvel[0]), np.array(mjm.key_ctrl[0])
    return np.array(mjm.qpos0), np.zeros(mjm.nv), np.zeros(mjm.nu)


def rk4_step(mjm, d) -> None:
    """One step of the classic RK4 scheme, composed of mujoco's own mj_forward and
    mj_integratePos, the scheme MuJoCo documents and taigym runs. mujoco 4.0's mj_step
    departs from it on free and ball joints by ~1e-7 per step, which a robot's chaotic
    motion amplifies to centimetres within 200 steps. Every stage's solver starts from the
    previous step's last qacc, as in mj_step."""
    import mujoco

    h, qpos0, qvel0 = mjm.opt.timestep, d.qpos.copy(), d.qvel.copy()
    vel, acc = [], []
    for a in (0.0, 0.5, 0.5, 1.0):
        d.qpos[:] = qpos0
        if vel:
            mujoco.mj_integratePos(mjm, d.qpos, a * vel[-1], h)
        d.qvel[:] = qvel0 + a * h * acc[-1] if acc else qvel0
        mujoco.mj_forward(mjm, d)
        vel.append(d.qvel.copy())
        acc.append(d.qacc.copy())
    weights = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
    d.qpos[:] = qpos0
    mujoco.mj_integratePos(mjm, d.qpos, sum(w * v for w, v in zip(weights, vel)), h)
    d.qvel[:] = qvel0 + h * sum(w * a for w, a in zip(weights, acc))
    d.qacc_warmstart[:] = acc[-1]
    d.time += h


def mujoco_step(mjm, d) -> None:
    import mujoco

    if mjm.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4:
        rk4_step(mjm, d)
    else:
        mujoco.mj_step(mjm, d)


def rollout_rows(model, mjm, steps: int, ctrl_mode: str, rng, device: str) -> tuple[list[Row], str]:
    """Both engines stepped side by side: the worst qpos and qvel difference on the way,
    and a note naming the pairs touched whose contacts are not MuJoCo's exactly (drift starts there)."""
    import mujoco

    from taigym import physics

    qpos, qvel, ctrl = initial_state(mjm)
    world = physics.World(model, num_envs=1, device=device, precision="float64", serial=False, name="fidelity")
    world.set_state(qpos=qpos[None], qvel=qvel[None])
    d = mujoco.MjData(mjm)
    d.qpos[:], d.qvel[:] = qpos, qvel
    names, tols = ("rollout qpos", "rollout qvel"), (TOL_ROLLOUT_QPOS, TOL_ROLLOUT_QVEL)
    labels = (qpos_names(mjm), [f"{n} ({b})" for n, b in zip(dof_names(mjm), dof_bodies(mjm))])
    rows = [Row(n, 0.0, t, "-") for n, t in zip(names, tols)]
    by_design = set()
    for step in range(1, steps + 1):
        u = random_ctrl(mjm, rng, 1)[0] if ctrl_mode == "random" else ctrl
        d.ctrl[:] = u
        if model.nu:
            world.set_ctrl(u[None])
        world.step(1)
        mujoco_step(mjm, d)
        by_design |= {p for p, _ in contact_list(d.contact.geom, d.contact.dist)
                      if contact_kind(mjm, p) != "exact"}
        for i, (key, ref) in enumerate((("qpos", d.qpos), ("qvel", d.qvel))):
            new = worst_error(names[i], [world.get(key)[0]], [ref], tols[i],
                              lambda k, i=i, step=step: f"{labels[i][k]} at step {step}")
            rows[i] = max(rows[i], new, key=lambda r: r.error / r.tol)
    touched = ", ".join(pair_label(mjm, p) for p in sorted(by_design))
    note = (f"the rollout touches GJK/EPA or height-field pairs, whose contact points and normals differ by design "
            f"(physics/collision/convex/, physics/collision/hfield/); drift can start there: {touched}") if touched else ""
    return rows, note


def dof_bodies(mjm) -> list[str]:
    return [_name(mjm, "mjOBJ_BODY", int(b)) or f"body{b}" for b in mjm.dof_bodyid]


# --- output -------------------------------------------------------------------------------

def format_table(rows: list[Row]) -> str:
    header = ("quantity", "worst abs error", "tolerance", "where", "")
    lines = [(r.quantity, f"{r.error:.2e}", f"{r.tol:.1e}", r.where, "ok" if r.ok else "FAIL") for r in rows]
    widths = [max(len(str(x[i])) for x in [header, *lines]) for i in range(4)]
    fmt = "  ".join(f"{{:{'<' if i in (0, 3) else '>'}{w}}}" for i, w in enumerate(widths)) + "  {}"
    return "\n".join(fmt.format(*x).rstrip() for x in [header, *lines])


EPILOG = """\
Several files, or directories (searched recursively for .xml and .urdf files): one line per
model as it is compared, then a summary table: each model, whether it loaded (yes,
refused-by-taigym, refused-by-mujoco, or "not a model": a file whose root element is not
<mujoco> or <robot>, or that MuJoCo compiles to an empty world, as include-only fragments
of assets, defaults or visual settings do), whether it matched (ok, or FAIL and the failing
quantities), and the first refusal or worst failing row. Files MuJoCo refuses and files that
are not models do not count against taigym. Run one file alone for its full table.

exit status: 0 when every model both engines load matches; 1 when one does not (a failing
row); 2 when taigym refuses a model MuJoCo loads, or a file or option is refused. With
several files a mismatch (1) takes precedence over a refusal (2)."""


def parse_args(argv):
    p = ArgumentParser(prog="taigym fidelity", description=__doc__.split("\n\n")[0], epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                   help="an MJCF (.xml) or URDF (.urdf) file, or a directory of them; several may be given")
    p.add_argument("--states", type=int, default=8, help="random states compared (default 8)")
    p.add_argument("--steps", type=int, default=200, help="rollout steps (default 200; 0 skips the rollout)")
    p.add_argument("--ctrl", choices=("zero", "random"), default="zero",
                   help="rollout controls: the keyframe's (zero without one), or random each step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default cpu)")
    args = p.parse_args(argv)
    if args.states < 1 or args.steps < 0:
        p.error("--states must be >= 1 and --steps >= 0")
    return args


def load_both(path: Path):
    """(taigym Model, MjModel, note); LoadError when either engine refuses the file."""
    from taigym.physics import ModelError

    try:
        model, note = load_taigym_model(path)
    except ModelError as e:
        raise LoadError(str(e).replace("\n", " ")) from None
    mjm = load_mujoco_model(path)
    return model, mjm, note


def compare(model, mjm, args) -> tuple[list[Row], list[str]]:
    rng = np.random.default_rng(args.seed)
    qpos, qvel, ctrl = random_states(mjm, args.states, rng)
    refs = mujoco_snapshot(mjm, qpos, qvel, ctrl)
    # room for every contact MuJoCo finds and more, so that a full buffer never reads as a miss
    room = max(64, 2 * max(len(r["contacts"]) for r in refs))
    rows, note = snapshot_rows(mjm, taigym_snapshot(model, qpos, qvel, ctrl, args.device, room), refs)
    notes = [note]
    if args.steps > 0:
        more, note = rollout_rows(model, mjm, args.steps, args.ctrl, rng, args.device)
        rows, notes = rows + more, notes + [note]
    return rows, [n for n in notes if n]


def check_one_file(path: Path, args) -> int:
    """The detailed table of one file; its exit status."""
    import mujoco
    from taigym.physics import WorldError

    try:
        model, mjm, load_note = load_both(path)
        mismatch = structure_mismatch(model, mjm)
        # a model whose compiled structure differs cannot be compared element by element
        rows, notes = ([Row("structure", 1.0, 0.0, mismatch)], []) if mismatch else compare(model, mjm, args)
    except (LoadError, WorldError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"taigym vs mujoco {mujoco.__version__}: {path} ({args.states} random states, "
          f"{args.steps}-step rollout with {args.ctrl} ctrl, float64, seed {args.seed})")
    print(format_table(rows))
    for note in ([load_note] if load_note else []) + notes:
        print(f"note: {note}")
    print("tolerances scale with the quantity: tol x max(1, max |mujoco value|) at the worst state")
    failed = [r.quantity for r in rows if not r.ok]
    print(f"FAIL: {', '.join(failed)}" if failed else "all within tolerance")
    return 1 if failed else 0


# --- several files ------------------------------------------------------------------------

LOADED, REFUSED_TAIGYM, REFUSED_MUJOCO, NOT_A_MODEL = "yes", "refused-by-taigym", "refused-by-mujoco", "not a model"
DETAIL_CHARS = 100  # a refusal's text in the summary table, shortened to this


@dataclass
class Outcome:
    """What became of one file in a several-file run."""

    label: str  # the file as the summary names it
    loaded: str  # LOADED, REFUSED_TAIGYM, REFUSED_MUJOCO or NOT_A_MODEL
    failed: list  # the failing rows of a loaded model ([] when it matches)
    detail: str  # the refusal, the worst failing row, or why it is not a model
    seconds: float = 0.0

    @property
    def matching(self) -> str:
        if self.loaded != LOADED:
            return "-"
        return "FAIL " + ", ".join(r.quantity for r in self.failed) if self.failed else "ok"


def model_files(paths: list[Path]) -> list[tuple[Path, str]]:
    """(file, label) of every file named and every .xml and .urdf file below every directory
    named, in order, each once. A directory's files are labelled by their path inside it
    (prefixed with the directory where several paths are given); FileNotFoundError names a
    path that does not exist."""
    out, seen = [], set()
    for arg in paths:
        if arg.is_dir():
            found = sorted(f for f in arg.rglob("*") if f.suffix.lower() in (".xml", ".urdf") and f.is_file())
            pairs = [(f, str(f.relative_to(arg) if len(paths) == 1 else f)) for f in found]
        elif arg.is_file():
            pairs = [(arg, str(arg))]
        else:
            raise FileNotFoundError(f"{arg}: no such file or directory")
        for f, label in pairs:
            if f.resolve() not in seen:
                seen.add(f.resolve())
                out.append((f, label))
    return out


def root_element(path: Path) -> str:
    """The file's root element's tag ('' when it is not XML)."""
    import xml.etree.ElementTree as ET

    try:
        for _, element in ET.iterparse(path, events=("start",)):
            return element.tag
    except (ET.ParseError, OSError, UnicodeError, LookupError):
        pass
    return ""


def shorten(text: str, path: Path, label: str) -> str:
    text = " ".join(text.split()).replace(str(path), label)
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


def check_model(path: Path, label: str, args) -> Outcome:
    """One file of a several-file run: is it a model, does each engine load it, do they agree."""
    from taigym.physics import ModelError, WorldError

    root = root_element(path)
    if root not in ("mujoco", "robot"):
        why = f"its root element is <{root}>, not <mujoco> or <robot>" if root else "not an XML file"
        return Outcome(label, NOT_A_MODEL, [], why)
    try:
        mjm = load_mujoco_model(path)
    except LoadError as e:
        return Outcome(label, REFUSED_MUJOCO, [], shorten(str(e), path, label))
    if mjm.nbody == 1 and mjm.ngeom == 0:
        return Outcome(label, NOT_A_MODEL, [], "no bodies or geoms (a fragment other files include?)")
    try:
        model, _ = load_taigym_model(path)
        mismatch = structure_mismatch(model, mjm)
        rows = [Row("structure", 1.0, 0.0, mismatch)] if mismatch else compare(model, mjm, args)[0]
    except (ModelError, LoadError, WorldError) as e:
        return Outcome(label, REFUSED_TAIGYM, [], shorten(str(e), path, label))
    failed = [r for r in rows if not r.ok]
    worst = max(failed, key=lambda r: r.error / r.tol if r.tol else np.inf, default=None)
    detail = f"{worst.quantity} {worst.error:.2e} > {worst.tol:.1e} at {worst.where}" if worst else ""
    return Outcome(label, LOADED, failed, detail)


def progress_line(o: Outcome) -> str:
    if o.loaded == LOADED:
        state = "loaded, " + ("matching" if not o.failed else f"FAIL: {o.detail}")
    elif o.loaded == NOT_A_MODEL:
        state = f"not a model: {o.detail}"
    else:
        state = f"{o.loaded}: {o.detail}"
    return f"{o.label}: {state}" + (f" ({o.seconds:.0f} s)" if o.loaded == LOADED else "")


def summary_table(outcomes: list[Outcome]) -> str:
    header = ("model", "loaded", "matching", "first refusal / worst failing row")
    lines = [(o.label, o.loaded, o.matching, o.detail if o.loaded != LOADED or o.failed else "")
             for o in outcomes]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(3)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    return "\n".join(fmt.format(*x).rstrip() for x in [header, *lines])


def summary_counts(outcomes: list[Outcome]) -> str:
    count = {k: sum(o.loaded == k for o in outcomes) for k in (LOADED, REFUSED_TAIGYM, REFUSED_MUJOCO, NOT_A_MODEL)}
    matching = sum(o.loaded == LOADED and not o.failed for o in outcomes)
    return (f"{len(outcomes)} files: {count[LOADED]} loaded by both engines, {matching} matching, "
            f"{count[LOADED] - matching} failing; {count[REFUSED_TAIGYM]} refused by taigym, "
            f"{count[REFUSED_MUJOCO]} refused by mujoco, {count[NOT_A_MODEL]} not models")


def check_many(args) -> int:
    """The one-line-per-model run over several files and directories; its exit status (EPILOG)."""
    import time

    import mujoco

    try:
        files = model_files(args.paths)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not files:
        print(f"error: no .xml or .urdf files in {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    print(f"taigym vs mujoco {mujoco.__version__}: {len(files)} files ({args.states} random states, "
          f"{args.steps}-step rollout with {args.ctrl} ctrl, float64, seed {args.seed})", flush=True)
    outcomes = []
    for path, label in files:
        start = time.perf_counter()
        outcome = check_model(path, label, args)
        outcome.seconds = time.perf_counter() - start
        outcomes.append(outcome)
        print(progress_line(outcome), flush=True)
    print()
    print(summary_table(outcomes))
    print(summary_counts(outcomes))
    if any(o.failed for o in outcomes):
        return 1
    return 2 if any(o.loaded == REFUSED_TAIGYM for o in outcomes) else 0


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("error: taigym fidelity compares with the mujoco package: pip install mujoco", file=sys.stderr)
        return 2
    if len(args.paths) == 1 and not args.paths[0].is_dir():
        return check_one_file(args.paths[0], args)
    return check_many(args)


if __name__ == "__main__":
    raise SystemExit(main())
