"""Sensors as MJCF declares them: each kind's mjtSensor code, the object it reads, its size,
data type and stage (MuJoCo's), read from ``<sensor>`` and resolved to compiled ids as
mjModel's ``sensor_*`` arrays. physics/sensors.py computes them while stepping."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import model as M
from ..errors import ModelError

# mjtObj, mjtDataType and mjtStage, numbered as MuJoCo's
OBJ_UNKNOWN, OBJ_BODY, OBJ_XBODY, OBJ_JOINT, OBJ_GEOM, OBJ_SITE, OBJ_CAMERA = 0, 1, 2, 3, 5, 6, 7
OBJ_TENDON, OBJ_ACTUATOR = 18, 19
REAL, POSITIVE, AXIS, QUATERNION = 0, 1, 2, 3
STAGE_POS, STAGE_VEL, STAGE_ACC = 1, 2, 3
# the frame sensors' objtype keywords
FRAME_OBJECTS = {"body": OBJ_BODY, "xbody": OBJ_XBODY, "geom": OBJ_GEOM, "site": OBJ_SITE, "camera": OBJ_CAMERA}


class Kind(NamedTuple):
    code: int  # mjtSensor
    attribute: str  # the MJCF attribute naming the object ("objname": a frame sensor's objtype/objname)
    objtype: int
    dim: int
    datatype: int
    stage: int


KINDS = {
    "touch": Kind(0, "site", OBJ_SITE, 1, POSITIVE, STAGE_ACC),
    "accelerometer": Kind(1, "site", OBJ_SITE, 3, REAL, STAGE_ACC),
    "velocimeter": Kind(2, "site", OBJ_SITE, 3, REAL, STAGE_VEL),
    "gyro": Kind(3, "site", OBJ_SITE, 3, REAL, STAGE_VEL),
    "force": Kind(4, "site", OBJ_SITE, 3, REAL, STAGE_ACC),
    "torque": Kind(5, "site", OBJ_SITE, 3, REAL, STAGE_ACC),
    "magnetometer": Kind(6, "site", OBJ_SITE, 3, REAL, STAGE_POS),
    "rangefinder": Kind(7, "site", OBJ_SITE, 1, REAL, STAGE_POS),
    "jointpos": Kind(9, "joint", OBJ_JOINT, 1, REAL, STAGE_POS),
    "jointvel": Kind(10, "joint", OBJ_JOINT, 1, REAL, STAGE_VEL),
    "tendonpos": Kind(11, "tendon", OBJ_TENDON, 1, REAL, STAGE_POS),
    "tendonvel": Kind(12, "tendon", OBJ_TENDON, 1, REAL, STAGE_VEL),
    "actuatorpos": Kind(13, "actuator", OBJ_ACTUATOR, 1, REAL, STAGE_POS),
    "actuatorvel": Kind(14, "actuator", OBJ_ACTUATOR, 1, REAL, STAGE_VEL),
    "actuatorfrc": Kind(15, "actuator", OBJ_ACTUATOR, 1, REAL, STAGE_ACC),
    "jointactuatorfrc": Kind(16, "joint", OBJ_JOINT, 1, REAL, STAGE_ACC),
    "tendonactuatorfrc": Kind(17, "tendon", OBJ_TENDON, 1, REAL, STAGE_ACC),
    "ballquat": Kind(18, "joint", OBJ_JOINT, 4, QUATERNION, STAGE_POS),
    "ballangvel": Kind(19, "joint", OBJ_JOINT, 3, REAL, STAGE_VEL),
    "framepos": Kind(26, "objname", OBJ_UNKNOWN, 3, REAL, STAGE_POS),
    "framequat": Kind(27, "objname", OBJ_UNKNOWN, 4, QUATERNION, STAGE_POS),
    "framexaxis": Kind(28, "objname", OBJ_UNKNOWN, 3, AXIS, STAGE_POS),
    "frameyaxis": Kind(29, "objname", OBJ_UNKNOWN, 3, AXIS, STAGE_POS),
    "framezaxis": Kind(30, "objname", OBJ_UNKNOWN, 3, AXIS, STAGE_POS),
    "framelinvel": Kind(31, "objname", OBJ_UNKNOWN, 3, REAL, STAGE_VEL),
    "frameangvel": Kind(32, "objname", OBJ_UNKNOWN, 3, REAL, STAGE_VEL),
    "framelinacc": Kind(33, "objname", OBJ_UNKNOWN, 3, REAL, STAGE_ACC),
    "frameangacc": Kind(34, "objname", OBJ_UNKNOWN, 3, REAL, STAGE_ACC),
    "subtreecom": Kind(35, "body", OBJ_BODY, 3, REAL, STAGE_POS),
    "subtreelinvel": Kind(36, "body", OBJ_BODY, 3, REAL, STAGE_VEL),
    "subtreeangmom": Kind(37, "body", OBJ_BODY, 3, REAL, STAGE_VEL),
    # its objects, size and stage follow from its attributes (contact_sensor)
    "contact": Kind(42, "", OBJ_UNKNOWN, 0, REAL, STAGE_POS),
}
# a contact sensor's data fields, in the order a slot holds them, with their sizes, and its
# reductions (MuJoCo's mjtConDataField and sensor_intprm[1])
CONTACT_DATA = {"found": 1, "force": 3, "torque": 3, "dist": 1, "pos": 3, "normal": 3, "tangent": 3, "linvel": 3,
                "angvel": 3}
CONTACT_REDUCE = ("none", "mindist", "maxforce", "netforce")
# what a contact sensor's first and second object may be: mjtObj by attribute
CONTACT_FIRST = {"geom1": OBJ_GEOM, "body1": OBJ_BODY, "subtree1": OBJ_XBODY, "site": OBJ_SITE}
CONTACT_SECOND = {"geom2": OBJ_GEOM, "body2": OBJ_BODY, "subtree2": OBJ_XBODY}
CODES = {k.code: name for name, k in KINDS.items()}
BALL_JOINT_KINDS = ("ballquat", "ballangvel")
FRAME_VELOCITY = ("framelinvel", "frameangvel")  # the frame sensors a reference frame moves


class SensorSpec(NamedTuple):
    """One sensor as declared, its objects by name (resolved when the model compiles)."""

    kind: str
    name: str
    objtype: int
    objname: str
    reftype: int
    refname: str
    cutoff: float
    noise: float
    intprm: tuple = (0, 0, 0)  # a contact sensor's (data bits, reduction, slots)


def contact_sensor(data: str, reduce: str, num: int, at: str) -> tuple:
    """A contact sensor's (data bits, reduction, slots) from its MJCF attributes, checked as
    MuJoCo's compiler checks them."""
    fields = data.split()
    if not fields or any(f not in CONTACT_DATA for f in fields):
        raise ModelError(f"data must name fields among {list(CONTACT_DATA)}, got {data!r}", element=at,
                         attribute="data")
    order = [list(CONTACT_DATA).index(f) for f in fields]
    if order != sorted(set(order)):
        raise ModelError(f"data fields must appear once each, in the order {list(CONTACT_DATA)}", element=at,
                         attribute="data")
    if reduce not in CONTACT_REDUCE:
        raise ModelError(f"reduce must be one of {list(CONTACT_REDUCE)}, got {reduce!r}", element=at,
                         attribute="reduce")
    if reduce == "netforce" and {"linvel", "angvel"} & set(fields):
        raise ModelError("linvel and angvel cannot be combined with reduce='netforce'", element=at,
                         attribute="data")
    if num < 1:
        raise ModelError(f"num must be at least 1, got {num}", element=at, attribute="num")
    return sum(1 << k for k in order), CONTACT_REDUCE.index(reduce), int(num)


def _contact_shape(intprm) -> tuple:
    """(dim, stage) of a contact sensor: num slots of its fields; the acceleration stage
    where it reads forces, the velocity stage where it reads velocities."""
    bits, reduce, num = intprm
    fields = [f for k, f in enumerate(CONTACT_DATA) if bits & (1 << k)]
    dim = num * sum(CONTACT_DATA[f] for f in fields)
    if {"force", "torque"} & set(fields) or CONTACT_REDUCE[reduce] in ("maxforce", "netforce"):
        return dim, STAGE_ACC
    return dim, STAGE_VEL if {"linvel", "angvel"} & set(fields) else STAGE_POS


def where(kind: str, name: str, index: int) -> str:
    """How errors name a sensor: "touch 'foot'", or "touch 3" (its index) when unnamed."""
    return f"{kind} '{name}'" if name else f"{kind} {index}"


def _lookup(model: M.Model, objtype: int, name: str, at: str, attribute: str) -> int:
    names = {OBJ_BODY: model.body_name, OBJ_XBODY: model.body_name, OBJ_JOINT: model.jnt_name,
             OBJ_GEOM: model.geom_name, OBJ_SITE: model.site_name, OBJ_TENDON: model.tendon_name,
             OBJ_ACTUATOR: model.actuator_name}[objtype]
    if name not in names:
        raise ModelError(f"no such object {name!r}", element=at, attribute=attribute)
    return names.index(name)


def _check_kind(model: M.Model, spec: SensorSpec, objid: int, at: str) -> None:
    if spec.kind in BALL_JOINT_KINDS and model.jnt_type[objid] != M.JNT_BALL:
        raise ModelError("the joint must be a ball joint", element=at, attribute="joint")
    if spec.kind in ("jointpos", "jointvel", "jointactuatorfrc") and model.jnt_type[objid] not in (M.JNT_HINGE,
                                                                                                    M.JNT_SLIDE):
        raise ModelError("the joint must be a hinge or a slide", element=at, attribute="joint")


def ray_visible(model: M.Model) -> np.ndarray:
    """(ngeom,) whether rangefinder rays see each geom: not when it is invisible, its
    material's alpha (or, without a material, its own) zero, as MuJoCo's mj_ray."""
    visual = model.visual or {}
    materials, names = visual.get("materials", {}), visual.get("geom_material", [])
    out = np.ones(model.ngeom, dtype=bool)
    for g in range(model.ngeom):
        material = materials.get(names[g] if g < len(names) else "")
        alpha = float(model.geom_rgba[g][3]) if material is None else \
            float(str(material.get("rgba", "1 1 1 1")).split()[3])
        out[g] = alpha != 0
    return out


def rangefinders_see_meshes(model: M.Model) -> bool:
    """Whether a rangefinder's ray can meet a mesh geom: the model has a rangefinder and a
    mesh geom that rays see (its step then walks the meshes' triangles, physics/rays.py)."""
    types = np.asarray(model.sensor_type)
    if not np.any(types == KINDS["rangefinder"].code) or not model.ngeom:
        return False
    return bool(np.any((np.asarray(model.geom_type) == M.GEOM_MESH) & ray_visible(model)))


def sensor_arrays(model: M.Model, specs: list) -> dict:
    """mjModel's sensor_* arrays for the sensors ``specs`` (SensorSpec), in declared order."""
    cols = {k: [] for k in ("type", "objtype", "objid", "reftype", "refid", "needstage", "datatype", "dim", "adr",
                            "cutoff", "noise", "name", "intprm")}
    adr = 0
    for i, spec in enumerate(specs):
        kind, at = KINDS[spec.kind], where(spec.kind, spec.name, i)
        objid = -1 if spec.objtype == OBJ_UNKNOWN else _lookup(model, spec.objtype, spec.objname, at, kind.attribute)
        if spec.objtype != OBJ_UNKNOWN:
            _check_kind(model, spec, objid, at)
        refid = -1 if spec.reftype == OBJ_UNKNOWN else _lookup(model, spec.reftype, spec.refname, at, "refname")
        row = dict(type=kind.code, objtype=spec.objtype, objid=objid, reftype=spec.reftype, refid=refid,
                   needstage=kind.stage, datatype=kind.datatype, dim=kind.dim, adr=adr, cutoff=spec.cutoff,
                   noise=spec.noise, name=spec.name, intprm=spec.intprm)
        if spec.kind == "contact":
            row["dim"], row["needstage"] = _contact_shape(spec.intprm)
        for key, value in row.items():
            cols[key].append(value)
        adr += row["dim"]
    out = {f"sensor_{k}": np.array(v, dtype=np.int32) for k, v in cols.items()
           if k not in ("cutoff", "noise", "name", "intprm")}
    out["sensor_intprm"] = np.array(cols["intprm"], dtype=np.int32).reshape(len(specs), 3)
    out.update(sensor_cutoff=np.array(cols["cutoff"], dtype=float), sensor_noise=np.array(cols["noise"], dtype=float),
               sensor_name=cols["name"], nsensor=len(specs), nsensordata=adr)
    return out
