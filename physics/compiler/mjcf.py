"""MJCF importer: a MuJoCo XML model -> a Model, built through ModelBuilder.

What is read, with MuJoCo's semantics (so that the compiled Model matches ``mjModel``
field by field):

- ``<compiler>``: angle (degree by default), eulerseq, inertiafromgeom (auto, true,
  false), inertiagrouprange, autolimits, settotalmass, boundmass, boundinertia,
  balanceinertia, coordinate="local", discardvisual;
  ``<option>`` with its ``<flag>`` child; ``<size>``, ``<visual>``, ``<statistic>`` (no effect
  on dynamics).
- ``<default>`` classes, nested, selected by ``class`` and ``childclass``.
- ``<body>`` and ``<frame>`` poses (pos with quat, euler, axisangle, xyaxes or zaxis),
  ``<inertial>`` (diaginertia or fullinertia), ``<joint>``/``<freejoint>``, ``<geom>``
  (primitive shapes, fromto, mass or density; inertia derived from geoms where MuJoCo
  derives it), ``<site>``, ``<camera>``, ``<light>``; ``<asset>`` textures, materials,
  height fields (``<hfield>`` from nrow/ncol/elevation, a PNG or MuJoCo's binary file) and
  meshes (``<mesh>`` from STL, OBJ or MuJoCo's .msh, or inline; physics/compiler/mesh.py),
  with mesh geoms and primitives fitted to meshes.
- fixed and spatial ``<tendon>``s, ``<actuator>`` motor/position/velocity/intvelocity/general on
  joints and tendons, with activation dynamics (integrator, filter, filterexact), ``<equality>``
  connect, weld, joint and tendon, ``<sensor>`` (physics/compiler/mjcf_sensors.py), ``<keyframe>``,
  ``<include>``, ``<custom>`` numeric and text data.

Cameras, lights, materials, textures and custom data are kept in ``Model.visual``.
taigym's own attributes, in the namespace ``xmlns:taigym="urn:taigym"`` declared on
``<mujoco>``: on joints, a limit model and a PD drive (``taigym:limit="soft|cubic|hard|spring"``,
``taigym:limit_lower/upper/strength/stiffness/damping/distance/restitution/bounce/
acceleration``, ``taigym:cone``, ``taigym:twist``, ``taigym:drive_stiffness/damping/
forcelimit/acceleration``; see ``_Reader.taigym_joint``); on equalities, the force and torque
at which they break (``taigym:break_force``, ``taigym:break_torque``). They may sit in
defaults. MuJoCo itself rejects them, so a file that uses them is for this engine only.

Everything else (flex equalities, muscles, site and slider-crank transmissions, sdf geoms...)
raises a ModelError naming the file, line, element and attribute; ``strict=False`` skips it
(an attribute left at its default, an element left out) and issues one warning that lists
everything skipped. docs/engine.md tabulates what is read.

Limits, as MuJoCo's: integer attributes are 32-bit (-2**31 to 2**31 - 1), and elements nest
at most 500 deep (``xml_source.MAX_DEPTH``; a chain of ~500 bodies), read without a call
per level.
"""

from __future__ import annotations

import os
import re
from collections import deque
from pathlib import Path
from typing import Optional

import numpy as np

from .. import model as M
from ..compiler.xml_source import Node, XmlReader, parse_xml
from ..compiler.builder import ModelBuilder
from ..compiler.compile import RK4_ACTIVATION
from ..compiler.integers import INT32_MAX, INT32_MIN
from ..compiler.mjcf_sensors import read_sensors
from ..errors import ModelError
from ..model import Model
from ..compiler.transforms import axis_angle_to_quat, euler_to_quat, frame_to_quat, quat_mul, quat_normalize, quat_rotate
from ..compiler.transforms import quat_to_mat, zaxis_to_quat

_STRING_FILE = "<string>"
_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
_ORIENT = ("quat", "euler", "axisangle", "xyaxes", "zaxis")
_POSE = ("pos",) + _ORIENT
# taigym's joint attributes, in the namespace declared by xmlns:taigym="urn:taigym" on
# <mujoco>: limit models (physics/smooth/limits.py) and PD drives (physics/smooth/drives.py).
TAIGYM_NS = "urn:taigym"
_TAIGYM_LIMIT = {"taigym:limit", "taigym:limit_lower", "taigym:limit_upper", "taigym:limit_strength",
                 "taigym:limit_stiffness", "taigym:limit_damping", "taigym:limit_distance",
                 "taigym:limit_restitution", "taigym:limit_bounce", "taigym:limit_acceleration", "taigym:cone",
                 "taigym:twist"}
_TAIGYM_DRIVE = {"taigym:drive_stiffness", "taigym:drive_damping", "taigym:drive_forcelimit",
                 "taigym:drive_acceleration"}
_JOINT = {"name", "class", "type", "pos", "axis", "range", "limited", "ref", "springref", "stiffness", "damping",
          "armature", "frictionloss", "margin", "solreflimit", "solimplimit", "solreffriction", "solimpfriction",
          "group", "user", "springdamper", "actuatorfrcrange", "actuatorfrclimited", "actuatorgravcomp", *_TAIGYM_LIMIT,
          *_TAIGYM_DRIVE}
_GEOM = {"name", "class", "type", "mesh", "hfield", "size", "fromto", "mass", "density", "contype", "conaffinity", "condim",
         "friction", "margin", "gap", "solref", "solimp", "priority", "solmix", "rgba", "material", "group", "user",
         "fluidshape", "fitscale", *_POSE}
_SITE = {"name", "class", "type", "size", "fromto", "rgba", "material", "group", "user", *_POSE}
_CAMERA = {"name", "class", "mode", "target", "fovy", "ipd", "resolution", "focal", "focalpixel", "principal",
           "principalpixel", "sensorsize", "orthographic", "user", *_POSE}
_LIGHT = {"name", "class", "mode", "target", "directional", "type", "castshadow", "active", "pos", "dir",
          "attenuation", "cutoff", "exponent", "ambient", "diffuse", "specular", "bulbradius", "intensity", "range"}
_TENDON = {"name", "class", "limited", "range", "stiffness", "damping", "frictionloss", "springlength", "margin",
           "solreflimit", "solimplimit", "solreffriction", "solimpfriction", "rgba", "width", "material", "group",
           "user"}
# MuJoCo's transmissions other than a joint's or a tendon's: an actuator that names one is refused
_OTHER_TRANSMISSIONS = ("site", "refsite", "body", "jointinparent", "cranksite", "slidersite", "cranklength")
_ACTUATOR_COMMON = {"name", "class", "group", "ctrllimited", "forcelimited", "ctrlrange", "forcerange", "gear",
                    "joint", "tendon", "user", "lengthrange", "actlimited", "actrange", *_OTHER_TRANSMISSIONS}
_ACTUATORS = {
    "motor": _ACTUATOR_COMMON,
    "position": _ACTUATOR_COMMON | {"kp", "kv", "dampratio", "timeconst", "inheritrange"},
    "intvelocity": _ACTUATOR_COMMON | {"kp", "kv", "dampratio", "inheritrange"},
    "velocity": _ACTUATOR_COMMON | {"kv"},
    "general": _ACTUATOR_COMMON | {"gaintype", "gainprm", "biastype", "biasprm", "dyntype", "dynprm", "actearly"},
}
_MATERIAL = {"name", "class", "texture", "texrepeat", "texuniform", "emission", "specular", "shininess",
             "reflectance", "metallic", "roughness", "rgba"}
_TEXTURE = {"name", "type", "content_type", "file", "gridsize", "gridlayout", "fileright", "fileleft", "fileup",
            "filedown", "filefront", "fileback", "builtin", "rgb1", "rgb2", "mark", "markrgb", "random", "width",
            "height", "hflip", "vflip", "nchannel", "colorspace"}
_HFIELD = {"name", "file", "content_type", "nrow", "ncol", "size", "elevation"}
_SKIN = {"name", "file", "material", "rgba", "inflate", "vertex", "texcoord", "face", "group"}
# normals, texture coordinates and smoothnormal shape only what is drawn
_MESH = {"name", "class", "file", "content_type", "vertex", "face", "scale", "refpos", "refquat", "maxhullvert",
         "inertia", "smoothnormal", "normal", "texcoord", "material"}
_PAIR = {"name", "class", "geom1", "geom2", "condim", "friction", "solref", "solimp", "margin", "gap"}
_EQUALITY_COMMON = {"name", "class", "active", "solref", "solimp", "taigym:break_force", "taigym:break_torque"}
_EQUALITIES = {
    "connect": _EQUALITY_COMMON | {"body1", "body2", "anchor", "site1", "site2"},
    "weld": _EQUALITY_COMMON | {"body1", "body2", "anchor", "relpose", "torquescale", "site1", "site2"},
    "joint": _EQUALITY_COMMON | {"joint1", "joint2", "polycoef"},
    "tendon": _EQUALITY_COMMON | {"tendon1", "tendon2", "polycoef"},
}
# Default children and the element schemas their attributes are checked against.
_DEFAULTABLE = {"joint": _JOINT, "geom": _GEOM, "site": _SITE, "camera": _CAMERA, "light": _LIGHT,
                "tendon": _TENDON, "material": _MATERIAL, "equality": _EQUALITY_COMMON, "pair": _PAIR, "mesh": _MESH,
                **_ACTUATORS}
_COMPILER = {"angle", "eulerseq", "inertiafromgeom", "autolimits", "settotalmass", "coordinate", "meshdir",
             "texturedir", "assetdir", "discardvisual", "strippath", "usethread", "exactmeshinertia", "fitaabb",
             "saveinertial", "maxhullvert", "boundmass", "boundinertia", "balanceinertia", "fusestatic",
             "inertiagrouprange", "alignfree"}
# Compiler settings this importer implements only at MuJoCo's default value.
_COMPILER_DEFAULT_ONLY = {"fusestatic": "false",
                          "alignfree": "false", "fitaabb": "false", "exactmeshinertia": "false", "maxhullvert": -1}
_OPTION = {"timestep", "gravity", "wind", "density", "viscosity", "integrator", "iterations", "tolerance", "solver",
           "cone", "jacobian", "impratio", "ls_iterations", "ls_tolerance", "noslip_iterations",
           "noslip_tolerance", "magnetic", "o_margin", "o_solref", "o_solimp", "o_friction", "ccd_iterations",
           "ccd_tolerance", "sdf_iterations", "sdf_initpoints", "apirate"}
# The convex collider's bounds are compile-time constants (physics/collision/convex/common.py
# CCD_ITERATIONS, CCD_TOLERANCE: they size its polytope arrays), MuJoCo's defaults.
_OPTION_DEFAULT_ONLY = {"ccd_iterations": 35, "ccd_tolerance": 1e-6}
# <size>, <statistic> and <visual> as MuJoCo's schema has them. None changes what is computed
# here: memory and contact sizes are this engine's own, user data is not kept, statistic
# meaninertia is ignored by MuJoCo too; nkey reserves keyframes.
_SIZE = {"memory", "njmax", "nconmax", "nstack", "nuserdata", "nkey", "nuser_body", "nuser_jnt", "nuser_geom",
         "nuser_site", "nuser_cam", "nuser_tendon", "nuser_actuator", "nuser_sensor"}
_STATISTIC = {"meaninertia", "meanmass", "meansize", "extent", "center"}
_VISUAL = {
    "global": {"cameraid", "orthographic", "fovy", "ipd", "azimuth", "elevation", "linewidth", "glow", "offwidth",
               "offheight", "realtime", "ellipsoidinertia", "bvactive"},
    "quality": {"shadowsize", "offsamples", "numslices", "numstacks", "numquads"},
    "headlight": {"ambient", "diffuse", "specular", "active"},
    "map": {"stiffness", "stiffnessrot", "force", "torque", "alpha", "fogstart", "fogend", "znear", "zfar", "haze",
            "shadowclip", "shadowscale", "actuatortendon"},
    "scale": {"forcewidth", "contactwidth", "contactheight", "connect", "com", "camera", "light", "selectpoint",
              "jointlength", "jointwidth", "actuatorlength", "actuatorwidth", "framelength", "framewidth",
              "constraint", "slidercrank", "frustum"},
    "rgba": {"fog", "haze", "force", "inertia", "joint", "actuator", "actuatornegative", "actuatorpositive", "com",
             "camera", "light", "selectpoint", "connect", "contactpoint", "contactforce", "contactfriction",
             "contacttorque", "contactgap", "rangefinder", "constraint", "slidercrank", "crankbroken", "frustum",
             "bv", "bvactive"},
}
_DISABLE_FLAGS = {"constraint": M.DSBL_CONSTRAINT, "equality": M.DSBL_EQUALITY, "frictionloss": M.DSBL_FRICTIONLOSS,
                  "limit": M.DSBL_LIMIT, "contact": M.DSBL_CONTACT, "spring": M.DSBL_SPRING,
                  "damper": M.DSBL_DAMPER, "gravity": M.DSBL_GRAVITY, "clampctrl": M.DSBL_CLAMPCTRL,
                  "warmstart": 512, "filterparent": 1024, "actuation": M.DSBL_ACTUATION, "refsafe": 4096,
                  "sensor": 8192, "midphase": 16384, "eulerdamp": M.DSBL_EULERDAMP, "autoreset": 65536,
                  "nativeccd": 131072, "island": M.DSBL_ISLAND, "multiccd": 524288}
# Enable flags that change nothing this engine computes (energy is not reported yet).
_ENABLE_FLAGS = {"energy": 2, "fwdinv": 4, "invdiscrete": 8}
_INTEGRATORS = {"Euler": M.INT_EULER, "RK4": M.INT_RK4, "implicitspringdamper": M.INT_IMPLICIT_SPRING_DAMPER,
                "implicitfast": M.INT_IMPLICITFAST}
_TOP = {"compiler", "option", "size", "visual", "statistic", "default", "asset", "worldbody", "tendon", "actuator",
        "keyframe", "custom", "contact", "equality", "sensor", "extension", "deformable"}


class _Reader(XmlReader):
    format = "MJCF"

    def __init__(self, file: str, strict: bool, base_dir: Path):
        super().__init__(file, strict)
        self.base_dir = base_dir
        self.b = ModelBuilder()
        self.degree = True
        self.eulerseq = "xyz"
        self.inertiafromgeom = "auto"
        self.inertiagroups = (0, 5)  # geoms of these groups (inclusive) give their bodies mass
        self.autolimits = True
        self.total_mass: Optional[float] = None
        self.bounds = {"bound_mass": 0.0, "bound_inertia": 0.0, "balance_inertia": False}  # finalize()'s
        self.meshdir = ""  # where height-field and mesh files are, relative to the model's folder
        self.strippath = False  # file names lose their folders (MuJoCo's compiler strippath)
        self.classes: dict[str, dict[str, dict]] = {}
        self.nodes: dict[tuple[str, str], tuple[Node, str]] = {}  # (kind, name) -> where, for builder errors
        self.discardvisual = False
        self.geom_meshes: list[Optional[str]] = []  # per geom added, the mesh it names
        self.actuator_slots: list[tuple[bool, int]] = []  # per MJCF actuator: (added, MuJoCo's act count)
        self.b.visual.update(cameras=[], lights=[], materials={}, textures={}, sites=[], geom_material=[],
                             custom={}, settings={})

    # --- reading values -----------------------------------------------------------
    def floats(self, attrs: dict, key: str, node: Node, element, sizes, default=None) -> Optional[np.ndarray]:
        raw = attrs.get(key)
        if raw is None:
            return None if default is None else np.array(default, dtype=float)
        return self.parse_floats(raw, node, key, element, sizes if isinstance(sizes, tuple) else (sizes,))

    def vector(self, attrs, key, node, element, builtin, sizes) -> np.ndarray:
        """A vector attribute given in part: MuJoCo keeps the components left out at their
        default-class value, else at the built-in default."""
        out = np.array(builtin, dtype=float)
        for raw in (getattr(attrs, "inherited", {}).get(key), node.attrib.get(key)):
            if raw is not None:
                values = self.parse_floats(raw, node, key, element, sizes)
                out[: values.size] = values
        return out

    def number(self, attrs, key, node, element, default=None, minimum=None) -> Optional[float]:
        values = self.floats(attrs, key, node, element, 1, None if default is None else [default])
        if values is None:
            return None
        if minimum is not None and values[0] < minimum:
            raise self.error(f"{key} must be >= {minimum}, got {values[0]:g}", node, element, key)
        return float(values[0])

    def integer(self, attrs, key, node, element, default) -> int:
        """A decimal integer within MuJoCo's int range (32 bits), as MuJoCo reads it."""
        raw = attrs.get(key)
        if raw is None:
            return default
        if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", raw):
            raise self.error(f"expected an integer, got {raw!r}", node, element, key)
        value = int(raw)
        if not INT32_MIN <= value <= INT32_MAX:
            raise self.error(f"number is too large: {value} (an integer from {INT32_MIN} to {INT32_MAX})",
                             node, element, key)
        return value

    def keyword(self, attrs, key, node, element, choices, default):
        raw = attrs.get(key, default)
        if raw not in choices:
            raise self.error(f"expected one of {', '.join(choices)}, got {raw!r}", node, element, key)
        return raw

    def flag(self, attrs, key, node, element, default: bool) -> bool:
        return self.keyword(attrs, key, node, element, ("true", "false"), "true" if default else "false") == "true"

    def limited(self, attrs, key, node, element, range_key) -> bool:
        """MuJoCo's true/false/auto: auto means limited when a range is given."""
        value = self.keyword(attrs, key, node, element, ("true", "false", "auto"), "auto")
        if value == "auto":
            if range_key in attrs and not self.autolimits:
                raise self.error(f"'{range_key}' is given but '{key}' is not, and compiler autolimits is false",
                                 node, element, key)
            return range_key in attrs
        return value == "true"

    def angle(self, value):
        return np.deg2rad(value) if self.degree else value

    def pose(self, attrs, node, element):
        """(pos, quat) of an element's frame from pos and one orientation attribute."""
        pos = self.floats(attrs, "pos", node, element, 3, (0.0, 0.0, 0.0))
        given = [k for k in _ORIENT if k in attrs]
        if len(given) > 1:
            raise self.error(f"orientation given twice ({' and '.join(given)})", node, element, given[1])
        quat = np.array([1.0, 0.0, 0.0, 0.0])
        if given:
            key = given[0]
            v = self.floats(attrs, key, node, element, {"quat": 4, "euler": 3, "axisangle": 4, "xyaxes": 6,
                                                        "zaxis": 3}[key])
            if key == "quat":
                quat = v
            elif key == "euler":
                quat = euler_to_quat(self.angle(v), self.eulerseq)
            elif key == "axisangle":
                quat = axis_angle_to_quat(self._nonzero(v[:3], node, element, key), self.angle(v[3]))
            elif key == "xyaxes":
                quat = frame_to_quat(self._nonzero(v[:3], node, element, key), v[3:])
            else:
                quat = zaxis_to_quat(self._nonzero(v, node, element, key))
            if np.linalg.norm(quat) < 1e-12:
                raise self.error("quaternion has zero norm", node, element, key)
        return pos, quat_normalize(quat)

    def _nonzero(self, v, node, element, key):
        if np.linalg.norm(v) < 1e-12:
            raise self.error(f"axis has zero length: {v.tolist()}", node, element, key)
        return v / np.linalg.norm(v)

    # --- checking -----------------------------------------------------------------
    def check(self, node: Node, element, attrs, children=()) -> None:
        for a in node.attrib:
            if a not in attrs:
                self.unsupported(f"attribute '{a}' of <{node.tag}>", node, element, a)
        for c in node.children:
            if c.tag not in children:
                self.unsupported(f"element <{c.tag}> inside <{node.tag}>", c, element)

    def default_only(self, attrs, node, element, key, default, what=None) -> None:
        """Attributes implemented only at one value: any other value is unsupported."""
        if key in attrs and attrs[key] != str(default) and not _same_number(attrs[key], default):
            self.unsupported(what or f"{key}={attrs[key]!r}", node, element, key)

    def attrs(self, node: Node, kind: str, cls: str, element) -> dict:
        """The element's attributes over its default class's (MuJoCo's inheritance)."""
        cls = node.attrib.get("class", cls)
        if cls not in self.classes:
            raise self.error(f"unknown default class {cls!r}", node, element, "class")
        # an element's own schema where its defaults are its kind's (an actuator shortcut's);
        # the kind's where the tag names something else too (<equality><joint>, <tendon>)
        schema = _DEFAULTABLE[node.tag] if node.tag in _DEFAULTABLE and _default_kind(node.tag) == kind \
            else _DEFAULTABLE[kind]
        merged = _Attrs({k: v for k, v in self.classes[cls].get(kind, {}).items() if k in schema})
        merged.inherited = dict(merged)
        merged.update(node.attrib)
        return merged

    def remember(self, kind: str, name: str, node: Node, element: str) -> None:
        if name:
            self.nodes[(kind, name)] = (node, element)

    def guard(self, node: Node, element, fn, *args, **kwargs):
        """Call a builder method; its errors point at this element in the file."""
        try:
            return fn(*args, **kwargs)
        except ModelError as e:
            raise self.error(e.reason, node, element, e.attribute) from None

    # --- the model ----------------------------------------------------------------
    def read(self, root: Node) -> ModelBuilder:
        if root.tag != "mujoco":
            raise self.error(f"the top element must be <mujoco>, got <{root.tag}>", root, root.tag)
        self.check(root, "mujoco", ("model", "xmlns:taigym"), _TOP)
        self.taigym_ns = "xmlns:taigym" in root.attrib
        if self.taigym_ns and root.attrib["xmlns:taigym"] != TAIGYM_NS:
            raise self.error(f"the taigym namespace is {TAIGYM_NS!r}, got {root.attrib['xmlns:taigym']!r}", root,
                             "mujoco", "xmlns:taigym")
        self.b.name = root.attrib.get("model", "") or "model"
        sections = {tag: root.all(tag) for tag in _TOP}
        for node in sections["compiler"]:
            self.compiler(node)
        for node in sections["option"]:
            self.option(node)
        for tag in ("size", "visual", "statistic"):
            for node in sections[tag]:
                self.settings(node)
        self.classes["main"] = {}
        for node in sections["default"]:
            self.defaults(node, "main", {})
        for node in sections["asset"]:
            self.assets(node)
        for node in sections["worldbody"]:
            self.worldbody(node)
        for node in sections["tendon"]:
            self.tendons(node)
        for node in sections["actuator"]:
            self.actuators(node)
        for node in sections["keyframe"]:
            self.keyframes(node)
        self.reserve_keys(sections["size"])
        for node in sections["custom"]:
            self.custom(node)
        for node in sections["equality"]:
            self.equalities(node)
        for node in sections["contact"]:
            self.contact_filters(node)
        for node in sections["sensor"]:
            read_sensors(self, node)
        for tag in ("extension", "deformable"):
            for node in sections[tag]:
                self.unsupported(f"<{tag}>", node, tag)
        if self.discardvisual:
            self.discard_visual()
        return self.b

    def discard_visual(self) -> None:
        """MuJoCo's compiler discardvisual: geoms that collide with nothing (contype and
        conaffinity 0) and that nothing names are left out, with the meshes no remaining geom
        uses and all materials and textures; bodies keep the mass those geoms gave them."""
        b, named = self.b, self.named_geoms()
        drop = [not g.contype and not g.conaffinity and not (g.name and g.name in named) for g in b._geoms]
        for i, body in enumerate(b._bodies):
            if i and body.mass is None and any(d and g.body == i for g, d in zip(b._geoms, drop)):
                body.mass, body.com, body.iquat, body.inertia = b._body_mass_properties(i)
        b._geoms = [g for g, d in zip(b._geoms, drop) if not d]
        self.geom_meshes = [m for m, d in zip(self.geom_meshes, drop) if not d]
        used = sorted({b._mesh_index(m, "mesh") for m in self.geom_meshes if m is not None})
        new_id = {old: new for new, old in enumerate(used)}
        b._meshes = [b._meshes[i] for i in used]
        for g in b._geoms:
            if g.type == M.GEOM_MESH:
                g.dataid = new_id[g.dataid]
        b.visual.update(materials={}, textures={}, geom_material=[""] * len(b._geoms))

    def named_geoms(self) -> set:
        """Geoms that pairs, spatial tendons, sensors and custom tuples name: MuJoCo keeps them."""
        from ..compiler.sensors import OBJ_GEOM

        names = {g for pair in self.b._pairs for g in pair[:2]}
        names |= {entry[1] for t in self.b._tendons if t.spatial for entry in t.terms if entry[0] == "geom"}
        for s in self.b._sensors:
            names |= {n for kind, n in ((s.objtype, s.objname), (s.reftype, s.refname)) if kind == OBJ_GEOM}
        for value in self.b.visual["custom"].values():
            if isinstance(value, list):  # a tuple's elements
                names |= {e.get("objname") for e in value if e.get("objtype") == "geom"}
        return names

    def compiler(self, node: Node) -> None:
        a = node.attrib
        self.check(node, "compiler", _COMPILER)
        self.degree = self.keyword(a, "angle", node, "compiler", ("degree", "radian"),
                                   "degree" if self.degree else "radian") == "degree"
        seq = a.get("eulerseq", self.eulerseq)
        if not re.fullmatch(r"[xyzXYZ]{3}", seq) or (seq != seq.lower() and seq != seq.upper()):
            raise self.error(f"eulerseq must be 3 of x, y, z, all lower or all upper case; got {seq!r}",
                             node, "compiler", "eulerseq")
        self.eulerseq = seq
        self.inertiafromgeom = self.keyword(a, "inertiafromgeom", node, "compiler", ("auto", "true", "false"),
                                            self.inertiafromgeom)
        self.autolimits = self.flag(a, "autolimits", node, "compiler", self.autolimits)
        if "inertiagrouprange" in a:
            low, high = self.parse_floats(a["inertiagrouprange"], node, "inertiagrouprange", "compiler", (2,))
            if low != int(low) or high != int(high) or low > high:
                raise self.error(f"inertiagrouprange must be two integers, the first no larger, got "
                                 f"{a['inertiagrouprange']!r}", node, "compiler", "inertiagrouprange")
            self.inertiagroups = (int(low), int(high))
        mass = self.number(a, "settotalmass", node, "compiler")
        if mass is not None:
            self.total_mass = mass if mass > 0 else None
        if a.get("coordinate", "local") != "local":
            self.unsupported("coordinate='global' (MuJoCo removed it)", node, "compiler", "coordinate")
        for key, attribute in (("bound_mass", "boundmass"), ("bound_inertia", "boundinertia")):
            self.bounds[key] = self.number(a, attribute, node, "compiler", self.bounds[key], minimum=0.0)
        self.bounds["balance_inertia"] = self.flag(a, "balanceinertia", node, "compiler", self.bounds["balance_inertia"])
        for key, default in _COMPILER_DEFAULT_ONLY.items():
            self.default_only(a, node, "compiler", key, default)
        self.meshdir = a.get("meshdir", a.get("assetdir", self.meshdir))
        self.strippath = self.flag(a, "strippath", node, "compiler", self.strippath)
        self.discardvisual = self.flag(a, "discardvisual", node, "compiler", self.discardvisual)

    def settings(self, node: Node) -> None:
        """<size>, <visual> or <statistic>: checked against MuJoCo's schema, kept as written."""
        if node.tag == "visual":
            self.check(node, "visual", (), tuple(_VISUAL))
            for child in node.children:
                if child.tag in _VISUAL:
                    self.check(child, f"visual <{child.tag}>", _VISUAL[child.tag])
        else:
            self.check(node, node.tag, _SIZE if node.tag == "size" else _STATISTIC)
        self.b.visual["settings"].setdefault(node.tag, []).append(_raw(node))

    def option(self, node: Node) -> None:
        a, opt, where = node.attrib, self.b.opt, "option"
        self.check(node, where, _OPTION, ("flag",))
        opt.timestep = self.number(a, "timestep", node, where, opt.timestep, minimum=0.0)
        if opt.timestep <= 0:
            raise self.error("timestep must be > 0", node, where, "timestep")
        opt.gravity = self.floats(a, "gravity", node, where, 3, opt.gravity)
        opt.wind = self.floats(a, "wind", node, where, 3, opt.wind)
        opt.magnetic = self.floats(a, "magnetic", node, where, 3, opt.magnetic)
        opt.density = self.number(a, "density", node, where, opt.density, minimum=0.0)
        opt.viscosity = self.number(a, "viscosity", node, where, opt.viscosity, minimum=0.0)
        if "integrator" in a:
            if a["integrator"] in _INTEGRATORS:
                opt.integrator = _INTEGRATORS[a["integrator"]]
            elif a["integrator"] == "implicit":
                self.unsupported("integrator 'implicit' (use implicitfast, Euler, RK4 or implicitspringdamper)",
                                 node, where, "integrator")
            else:
                raise self.error(f"unknown integrator {a['integrator']!r}", node, where, "integrator")
        if opt.integrator == M.INT_IMPLICITFAST and (opt.density > 0 or opt.viscosity > 0):
            self.unsupported("integrator 'implicitfast' with fluid forces (density or viscosity above 0)",
                             node, where, "integrator")
            opt.integrator = M.INT_EULER  # ignored (strict=False): the default integrator
        opt.solver = self.keyword(a, "solver", node, where, ("PGS", "CG", "Newton"), opt.solver)
        opt.cone = self.keyword(a, "cone", node, where, ("pyramidal", "elliptic"), opt.cone)
        opt.jacobian = self.keyword(a, "jacobian", node, where, ("dense", "sparse", "auto"), opt.jacobian)
        for key in ("iterations", "ls_iterations", "noslip_iterations"):
            setattr(opt, key, self.integer(a, key, node, where, getattr(opt, key)))
        for key in ("tolerance", "ls_tolerance", "noslip_tolerance", "impratio"):
            setattr(opt, key, self.number(a, key, node, where, getattr(opt, key), minimum=0.0))
        for key, default in _OPTION_DEFAULT_ONLY.items():
            self.default_only(a, node, where, key, default)
        for flag in node.all("flag"):
            self.flags(flag)

    def flags(self, node: Node) -> None:
        opt, where = self.b.opt, "option/flag"
        for key, value in node.attrib.items():
            if value not in ("enable", "disable"):
                raise self.error(f"expected enable or disable, got {value!r}", node, where, key)
            # nativeccd="disable" asks MuJoCo for libccd; the collider here stays MuJoCo's native
            # one, whose contacts agree with libccd's to the solvers' tolerances (docs/engine.md)
            if key in _DISABLE_FLAGS:
                bit = _DISABLE_FLAGS[key]
                opt.disableflags = opt.disableflags | bit if value == "disable" else opt.disableflags & ~bit
            elif key in _ENABLE_FLAGS:
                bit = _ENABLE_FLAGS[key]
                opt.enableflags = opt.enableflags | bit if value == "enable" else opt.enableflags & ~bit
            else:
                self.unsupported(f"flag '{key}'", node, where, key)
        passive = opt.disableflags & M.DSBL_PASSIVE
        if passive and passive != M.DSBL_PASSIVE:
            self.unsupported("disabling only one of spring and damper (they are switched together)",
                             node, where, "spring" if passive == M.DSBL_SPRING else "damper")

    def defaults(self, node: Node, name: str, inherited: dict) -> None:
        """A ``<default>`` class and the classes nested in it, each over its parent's."""
        top = node
        pending = [(node, name, inherited)]
        while pending:
            node, name, inherited = pending.pop()
            if node is not top and name in self.classes:
                raise self.error(f"default class {name!r} is defined twice", node, f"default '{name}'", "class")
            own = self.default_class(node, name, inherited)
            for child in reversed(node.all("default")):
                cls = child.attrib.get("class")
                if not cls:
                    raise self.error("a nested <default> needs a class name", child, "default", "class")
                pending.append((child, cls, own))

    def default_class(self, node: Node, name: str, inherited: dict) -> dict:
        self.check(node, f"default '{name}'", ("class",), ("default", *_DEFAULTABLE))
        own = {kind: dict(values) for kind, values in inherited.items()}
        for child in node.children:
            if child.tag in _DEFAULTABLE:
                element = f"default '{name}' <{child.tag}>"
                self.check(child, element, _DEFAULTABLE[child.tag] - {"name", "class"})
                own.setdefault(_default_kind(child.tag), {}).update(child.attrib)
        self.classes[name] = own
        return own

    def assets(self, node: Node) -> None:
        self.check(node, "asset", (), ("texture", "material", "hfield", "mesh", "skin"))
        for child in node.children:
            if child.tag == "skin":  # a deforming visual surface: kept for viewers, not drawn
                self.check(child, _element(child), _SKIN, ("bone",))
                self.b.visual.setdefault("skins", []).append(dict(child.attrib))
            elif child.tag == "hfield":
                self.hfield(child)
            elif child.tag == "mesh":
                self.mesh(child)
            elif child.tag == "texture":
                self.check(child, "texture", _TEXTURE)
                name = child.attrib.get("name") or child.attrib.get("type", "texture")
                self.b.visual["textures"][name] = dict(child.attrib)
            elif child.tag == "material":
                element = _element(child)
                a = self.attrs(child, "material", "main", element)
                self.check(child, element, _MATERIAL)
                if not a.get("name"):
                    raise self.error("a material needs a name", child, element, "name")
                self.b.visual["materials"][a["name"]] = {k: v for k, v in a.items() if k != "class"}

    def hfield(self, node: Node) -> None:
        """A height field from ``nrow``/``ncol``/``elevation`` (rows listed from +y down, as
        MuJoCo reads them) or from ``file`` (a PNG, top row at +y, or MuJoCo's binary format)."""
        a = node.attrib
        self.check(node, "hfield", _HFIELD)
        file = a.get("file")
        name = a.get("name") or (Path(file).stem if file else "")
        element = f"hfield '{name}'" if name else "hfield"
        size = self.floats(a, "size", node, element, 4)
        if size is None:
            raise self.error("an hfield needs a size (radius_x radius_y elevation_z base_z)", node, element, "size")
        nrow = self.integer(a, "nrow", node, element, 0)
        ncol = self.integer(a, "ncol", node, element, 0)
        if file is not None:
            for key in ("nrow", "ncol", "elevation"):
                if key in a:
                    raise self.error("an hfield is given by a file or by nrow/ncol/elevation, not both", node,
                                     element, key)
            data = self.hfield_file(file, a.get("content_type"), node, element)
        else:
            for key, value in (("nrow", nrow), ("ncol", ncol)):
                if value < 2:
                    raise self.error(f"{key} must be >= 2 (or give a file), got {value}", node, element, key)
            data = np.zeros((nrow, ncol))
            if "elevation" in a:
                values = self.parse_floats(a["elevation"], node, "elevation", element, (nrow * ncol,))
                data = values.reshape(nrow, ncol)[::-1]  # the text lists the +y row first
        self.guard(node, element, self.b.add_hfield, name, data, size)

    def mesh(self, node: Node) -> None:
        """A mesh from ``file`` (STL, OBJ or MuJoCo's .msh, in meshdir) or from ``vertex``
        (and optionally ``face``) given inline; its defaults come from its class."""
        from ..compiler.mesh_files import MeshFileError, read_mesh

        file = node.attrib.get("file")
        if file is not None and self.strippath:
            file = Path(file.replace("\\", "/")).name
        name = node.attrib.get("name") or (Path(file).stem if file else "")
        element = f"mesh '{name}'" if name else "mesh"
        a = self.attrs(node, "mesh", "main", element)
        self.check(node, element, _MESH)
        if file is not None:
            if "vertex" in a or "face" in a:
                raise self.error("a mesh is given by a file or by vertex/face, not both", node, element,
                                 "vertex" if "vertex" in a else "face")
            try:
                vert, face = read_mesh(self.asset_path(file, node), a.get("content_type"))
            except MeshFileError as e:
                raise self.error(str(e), node, element, "file") from None
        elif "vertex" in a:
            vert = self.triples(a, "vertex", node, element, 4)
            face = None if "face" not in a else self.triples(a, "face", node, element, 1)
        else:
            raise self.error("a mesh needs a file or vertices", node, element, "file")
        kw = dict(scale=self.floats(a, "scale", node, element, 3, (1.0, 1.0, 1.0)),
                  refpos=self.floats(a, "refpos", node, element, 3, (0.0, 0.0, 0.0)),
                  refquat=self.floats(a, "refquat", node, element, 4, (1.0, 0.0, 0.0, 0.0)),
                  inertia=self.keyword(a, "inertia", node, element, ("convex", "exact", "legacy", "shell"), "legacy"),
                  maxhullvert=self.integer(a, "maxhullvert", node, element, -1))
        index = self.guard(node, element, self.b.add_mesh, name, np.asarray(vert).reshape(-1, 3),
                           None if face is None else np.asarray(face).reshape(-1, 3), **kw)
        self.remember("mesh", name or str(index), node, element)

    def triples(self, a, key, node, element, least: int) -> np.ndarray:
        """A list of at least ``least`` triples of numbers (vertices, triangles)."""
        count = len(a[key].split())
        if count % 3 or count < 3 * least:
            raise self.error(f"expected at least {least} triples of numbers, got {count} numbers", node, element,
                             key)
        return self.parse_floats(a[key], node, key, element, (count,)).reshape(-1, 3)

    def asset_path(self, file: str, node: Node) -> Path:
        """A mesh's or height field's file: in meshdir, relative to the model's folder; for
        an element of an included file that is not there, the first found of the file
        named from the model's folder, then from the included file's folder (in meshdir,
        then not), as MuJoCo 4 finds them (MuJoCo Menagerie's mjx_panda.xml names
        ``assets/link0.stl`` under ``meshdir="assets"``, and MuJoCo Playground's scenes
        include it from another folder)."""
        path = self.base_dir / self.meshdir / file
        if node.file is None or path.exists():
            return path
        beside = Path(node.file).parent
        return next((p for p in (self.base_dir / file, beside / self.meshdir / file, beside / file) if p.exists()), path)

    def hfield_file(self, file: str, content_type, node: Node, element) -> np.ndarray:
        """Samples (nrow, ncol), row 0 at -y, of a PNG or MuJoCo binary hfield file."""
        from ..render.png import PNGError, read_png_grey

        path = self.asset_path(file, node)
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise self.error(f"cannot read hfield file {str(path)!r}: {e.strerror}", node, element, "file") from None
        png = content_type == "image/png" or (content_type is None and path.suffix.lower() == ".png")
        if content_type not in (None, "image/png", "image/vnd.mujoco.hfield"):
            raise self.error(f"unsupported content_type {content_type!r}", node, element, "content_type")
        if png:
            try:
                return read_png_grey(raw)[::-1].astype(float)  # the image's top row is at +y
            except PNGError as e:
                raise self.error(f"{path}: {e}", node, element, "file") from None
        # MuJoCo's binary format: int32 nrow, int32 ncol, then nrow * ncol float32, row 0 at -y
        if len(raw) < 8:
            raise self.error(f"{path}: hfield file without a header", node, element, "file")
        nrow, ncol = np.frombuffer(raw[:8], dtype=np.int32)
        if nrow < 2 or ncol < 2 or len(raw) != 8 + 4 * int(nrow) * int(ncol):
            raise self.error(f"{path}: header says {nrow} x {ncol} samples, the file holds {(len(raw) - 8) // 4}",
                             node, element, "file")
        return np.frombuffer(raw[8:], dtype=np.float32).reshape(int(nrow), int(ncol)).astype(float)

    # --- bodies -------------------------------------------------------------------
    def worldbody(self, node: Node) -> None:
        """The kinematic tree, depth first with children in document order (MuJoCo's body
        order), from a stack rather than a call per level: a chain as deep as the XML
        allows (physics/compiler/xml_source.py, MAX_DEPTH) reads like a shallow one."""
        self.check(node, "worldbody", (), ("body", "geom", "site", "camera", "light", "frame"))
        pending = self.contents(node, 0, "main", np.zeros(3), np.array([1.0, 0, 0, 0]))[::-1]
        while pending:
            child, parent, cls, pos, quat = pending.pop()
            body, childclass = self.body(child, parent, cls, pos, quat)
            pending.extend(self.contents(child, body, childclass, np.zeros(3), np.array([1.0, 0, 0, 0]))[::-1])

    def body(self, node: Node, parent: int, childclass: str, fpos, fquat) -> tuple[int, str]:
        """Add the body; returns its id and the default class its contents take."""
        a = node.attrib
        element = _element(node)
        self.check(node, element, {"name", "childclass", "mocap", "gravcomp", "user", *_POSE},
                   ("inertial", "joint", "freejoint", "geom", "site", "camera", "light", "body", "frame"))
        mocap = self.flag(a, "mocap", node, element, False)
        childclass = a.get("childclass", childclass)
        if childclass not in self.classes:
            raise self.error(f"unknown default class {childclass!r}", node, element, "childclass")
        pos, quat = _compose(fpos, fquat, *self.pose(a, node, element))
        inertial = self.inertial_of(node, element)
        body = self.guard(node, element, self.b.add_body, parent, pos=pos, quat=quat, name=a.get("name", ""),
                          mocap=mocap, gravcomp=self.number(a, "gravcomp", node, element, 0.0), **inertial)
        self.remember("body", a.get("name", ""), node, element)
        return body, childclass

    def contents(self, node: Node, body: int, childclass: str, fpos, fquat) -> list:
        """Add the joints, geoms, sites, cameras and lights of a body, with ``<frame>``s
        folded into the poses of what they hold (MuJoCo's element order); returns its child
        bodies, in order, as (node, parent, class, pos, quat) for the caller to add."""
        items = self.flatten(node, childclass, fpos, fquat)
        for tag in ("joint", "freejoint", "geom", "site", "camera", "light"):
            for child, cls, pos, quat in items:
                if child.tag == tag:
                    getattr(self, "joint" if tag == "freejoint" else tag)(child, body, cls, pos, quat)
        return [(child, body, cls, pos, quat) for child, cls, pos, quat in items if child.tag == "body"]

    def flatten(self, node: Node, childclass: str, fpos, fquat) -> list:
        """The element's children with the ``<frame>``s among them opened, in document
        order: (child, default class, pos, quat in the element's frame)."""
        out = []
        pending = [(child, childclass, fpos, fquat) for child in reversed(node.children)]
        while pending:
            child, cls, pos, quat = pending.pop()
            if child.tag != "frame":
                out.append((child, cls, pos, quat))
                continue
            element = _element(child)
            self.check(child, element, {"name", "childclass", *_POSE},
                       ("body", "geom", "site", "camera", "light", "frame", "joint", "inertial"))
            cls = child.attrib.get("childclass", cls)
            if cls not in self.classes:
                raise self.error(f"unknown default class {cls!r}", child, element, "childclass")
            pos, quat = _compose(pos, quat, *self.pose(child.attrib, child, element))
            pending.extend((c, cls, pos, quat) for c in reversed(child.children))
        return out

    def inertial_of(self, node: Node, element: str) -> dict:
        """Builder mass arguments: explicit, or None to derive them from the geoms."""
        found = [(c, p, q) for c, _, p, q in self.flatten(node, "main", np.zeros(3), np.array([1.0, 0, 0, 0]))
                 if c.tag == "inertial"]
        if len(found) > 1:
            raise self.error("a body has at most one <inertial>", found[1][0], element, "inertial")
        if self.inertiafromgeom == "true" or (self.inertiafromgeom == "auto" and not found):
            return {}
        if not found:
            return dict(mass=0.0, inertia=np.zeros(3))
        node, fpos, fquat = found[0]
        a = node.attrib
        where = f"{element} <inertial>"
        self.check(node, where, {"mass", "diaginertia", "fullinertia", *_POSE})
        if "mass" not in a:
            raise self.error("<inertial> needs attribute 'mass'", node, where, "mass")
        mass = self.number(a, "mass", node, where, minimum=0.0)
        given = [k for k in ("diaginertia", "fullinertia") if k in a]
        if len(given) != 1:
            raise self.error("<inertial> needs exactly one of diaginertia and fullinertia", node, where,
                             given[1] if given else "diaginertia")
        if given[0] == "fullinertia" and any(k in a for k in _ORIENT):
            raise self.error("fullinertia cannot be combined with an orientation", node, where, "fullinertia")
        pos, quat = _compose(fpos, fquat, *self.pose(a, node, where))
        if given[0] == "diaginertia":
            moments = self.floats(a, "diaginertia", node, where, 3)
            if np.any(moments < 0):
                raise self.error(f"inertia must be >= 0, got {moments.tolist()}", node, where, "diaginertia")
            return dict(mass=mass, com=pos, inertia=moments, inertia_quat=quat)
        xx, yy, zz, xy, xz, yz = self.floats(a, "fullinertia", node, where, 6)
        full = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        eig = np.linalg.eigvalsh(full)
        if eig[0] < -1e-12 * max(1.0, eig[-1]) or eig[0] + eig[1] < eig[2] * (1 - 1e-9):
            raise self.error(f"fullinertia is not a valid inertia tensor (eigenvalues {eig.tolist()})",
                             node, where, "fullinertia")
        rot = quat_to_mat(quat)
        return dict(mass=mass, com=pos, inertia=rot @ full @ rot.T)

    def joint(self, node: Node, body: int, cls: str, fpos, fquat) -> None:
        element = _element(node)
        if node.tag == "freejoint":
            self.check(node, element, ("name", "group", "align"))
            self.default_only(node.attrib, node, element, "align", "false", "align='true'")
            if body == 0:
                raise self.error("the world body cannot have joints", node, element)
            self.free_on_world_child(node, element, body, None)
            self.guard(node, element, self.b.add_joint, body, "free", name=node.attrib.get("name", ""))
            self.remember("joint", node.attrib.get("name", ""), node, element)
            return
        if body == 0:
            raise self.error("the world body cannot have joints", node, element)
        a = self.attrs(node, "joint", cls, element)
        self.check(node, element, _JOINT)
        jtype = self.keyword(a, "type", node, element, ("hinge", "slide", "ball", "free"), "hinge")
        if jtype == "free":
            self.free_on_world_child(node, element, body, "type")
        pos = fpos + quat_rotate(fquat, self.floats(a, "pos", node, element, 3, (0.0, 0.0, 0.0)))
        axis = quat_rotate(fquat, self._nonzero(self.floats(a, "axis", node, element, 3, (0.0, 0.0, 1.0)),
                                                node, element, "axis"))
        angular = jtype in ("hinge", "ball")
        rng = self.floats(a, "range", node, element, 2)
        if rng is not None and angular:
            rng = self.angle(rng)
        to_q = self.angle if jtype == "hinge" else (lambda v: v)
        kw = dict(
            name=a.get("name", ""),
            limited=self.limited(a, "limited", node, element, "range") if jtype != "free" else False,
            range=rng,
            ref=to_q(self.number(a, "ref", node, element, 0.0)),
            springref=to_q(self.number(a, "springref", node, element, 0.0)),
            margin=self.number(a, "margin", node, element, 0.0),
        )
        for key in ("stiffness", "damping", "armature", "frictionloss"):
            kw[key] = self.number(a, key, node, element, 0.0, minimum=0.0)
        kw["solref"] = self.floats(a, "solreflimit", node, element, 2, (0.02, 1.0))
        kw["solimp"] = self.vector(a, "solimplimit", node, element, _SOLIMP, (3, 5))
        kw["solreffriction"] = self.floats(a, "solreffriction", node, element, 2, (0.02, 1.0))
        kw["solimpfriction"] = self.vector(a, "solimpfriction", node, element, _SOLIMP, (3, 5))
        kw["springdamper"] = self.floats(a, "springdamper", node, element, 2)
        kw["actuatorfrcrange"] = self.floats(a, "actuatorfrcrange", node, element, 2)
        kw["actuatorfrclimited"] = self.limited(a, "actuatorfrclimited", node, element, "actuatorfrcrange")
        kw["actuatorgravcomp"] = self.flag(a, "actuatorgravcomp", node, element, False)
        if jtype == "free" and (kw["stiffness"] or kw["ref"] or kw["springref"]):
            self.unsupported("free-joint springs", node, element, "stiffness")
        jid = self.guard(node, element, self.b.add_joint, body, jtype, axis=axis, pos=pos, **kw)
        self.remember("joint", kw["name"], node, element)
        self.taigym_joint(a, node, element, jtype, jid, kw["ref"])

    def free_on_world_child(self, node: Node, element: str, body: int, attribute) -> None:
        # the compiler refuses it too, but without the line of the joint
        if self.b._bodies[body].parent != 0:
            raise self.error("a free joint is allowed only on a child of the world", node, element, attribute)

    def taigym_joint(self, a, node: Node, element: str, jtype: str, jid: int, ref: float) -> None:
        """A joint's taigym: attributes: its limit model and its PD drive. Angles (bounds,
        contact distance, bounce speed, cone, twist) are in the compiler's angle unit;
        ``taigym:limit_lower``/``upper`` are measured from the joint's ref, as the cubic
        limit's x, and replace ``range``."""
        given = self.taigym_attributes(a, node, element)
        if not given:
            return
        conv = self.angle if jtype in ("hinge", "ball") else (lambda v: v)
        if any(k in _TAIGYM_LIMIT for k in given):
            self.taigym_limit(a, node, element, jtype, jid, ref, conv)
        if any(k in _TAIGYM_DRIVE for k in given):
            kw = dict(stiffness=self.number(a, "taigym:drive_stiffness", node, element, 0.0, minimum=0.0),
                      damping=self.number(a, "taigym:drive_damping", node, element, 0.0, minimum=0.0),
                      force_limit=self.number(a, "taigym:drive_forcelimit", node, element, float("inf")),
                      acceleration=self.flag(a, "taigym:drive_acceleration", node, element, False))
            self.guard(node, element, self.b.add_drive, jid, **kw)

    def taigym_attributes(self, a, node: Node, element: str) -> list:
        """The element's taigym: attributes, which need the namespace declared."""
        given = [k for k in a if k.startswith("taigym:")]
        if given and not getattr(self, "taigym_ns", False):
            raise self.error(f'taigym: attributes need xmlns:taigym="{TAIGYM_NS}" on <mujoco>', node, element,
                             given[0])
        return given

    def taigym_limit(self, a, node: Node, element: str, jtype: str, jid: int, ref: float, conv) -> None:
        from ..compiler.builder import JointLimit

        model = self.keyword(a, "taigym:limit", node, element, tuple(M.LIMIT_MODELS), "soft")
        bounds = [self.number(a, f"taigym:limit_{k}", node, element) for k in ("lower", "upper")]
        rng = None
        if bounds != [None, None]:
            if None in bounds:
                raise self.error("taigym:limit_lower and taigym:limit_upper go together", node, element,
                                 "taigym:limit_upper" if bounds[1] is None else "taigym:limit_lower")
            if "range" in a:
                raise self.error("give either range or taigym:limit_lower/upper", node, element, "taigym:limit_lower")
            rng = ref + conv(np.array(bounds))
        pair = {k: self.floats(a, f"taigym:{k}", node, element, 2) for k in ("cone", "twist")}
        distance = self.number(a, "taigym:limit_distance", node, element, minimum=0.0)
        limit = JointLimit(
            model=model, strength=self.number(a, "taigym:limit_strength", node, element, 0.0, minimum=0.0),
            stiffness=self.number(a, "taigym:limit_stiffness", node, element, 0.0, minimum=0.0),
            damping=self.number(a, "taigym:limit_damping", node, element, 0.0, minimum=0.0),
            distance=None if distance is None else float(conv(distance)),
            restitution=self.number(a, "taigym:limit_restitution", node, element, 0.0, minimum=0.0),
            bounce_threshold=float(conv(self.number(a, "taigym:limit_bounce", node, element, 0.0, minimum=0.0))),
            acceleration=self.flag(a, "taigym:limit_acceleration", node, element, False),
            cone=None if pair["cone"] is None else conv(pair["cone"]),
            twist=None if pair["twist"] is None else conv(pair["twist"]))
        self.guard(node, element, self.b.set_joint_limit, jid, limit, range=rng)

    def geom(self, node: Node, body: int, cls: str, fpos, fquat) -> None:
        element = _element(node)
        a = self.attrs(node, "geom", cls, element)
        self.check(node, element, _GEOM)
        gtype = self.keyword(a, "type", node, element,
                             ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"),
                             "sphere")
        if gtype == "sdf":
            self.unsupported(f"{gtype} geoms", node, element, "type")
            return
        mesh = a.get("mesh") if gtype == "mesh" or "mesh" in a else None
        if gtype == "mesh" and not mesh:
            raise self.error("a mesh geom needs the name of a <mesh> asset", node, element, "mesh")
        if mesh is not None and "fromto" in a:
            raise self.error("fromto cannot be used with a mesh", node, element, "fromto")
        self.default_only(a, node, element, "fluidshape", "none", "the ellipsoid fluid model")
        size, pos, quat = self.shape(a, node, element, gtype)
        hfield = a.get("hfield") if gtype == "hfield" else None
        if gtype == "hfield" and not hfield:
            raise self.error("an hfield geom needs the name of an <hfield> asset", node, element, "hfield")
        friction = self.vector(a, "friction", node, element, (1.0, 0.005, 0.0001), (1, 2, 3))
        mass = self.number(a, "mass", node, element, minimum=0.0)
        group = self.integer(a, "group", node, element, 0)
        if not self.inertiagroups[0] <= group <= self.inertiagroups[1]:
            mass = 0.0  # outside the compiler's inertiagrouprange: no part of its body's inertia
        kw = dict(
            name=a.get("name", ""), mass=mass, density=self.number(a, "density", node, element, 1000.0, minimum=0.0),
            contype=self.integer(a, "contype", node, element, 1),
            conaffinity=self.integer(a, "conaffinity", node, element, 1),
            condim=self.integer(a, "condim", node, element, 3), friction=friction,
            margin=self.number(a, "margin", node, element, 0.0), gap=self.number(a, "gap", node, element, 0.0),
            solref=self.floats(a, "solref", node, element, 2, (0.02, 1.0)),
            solimp=self.vector(a, "solimp", node, element, _SOLIMP, (3, 5)),
            priority=self.integer(a, "priority", node, element, 0), solmix=self.number(a, "solmix", node, element, 1.0),
            rgba=self.floats(a, "rgba", node, element, 4, (0.5, 0.5, 0.5, 1.0)),
        )
        if mesh is not None:
            kw.update(mesh=mesh, fitscale=self.number(a, "fitscale", node, element, 1.0))
        pos, quat = _compose(fpos, fquat, pos, quat)
        self.guard(node, element, self.b.add_geom, body, gtype, size=size, pos=pos, quat=quat, hfield=hfield, **kw)
        self.b.visual["geom_material"].append(a.get("material", ""))
        self.geom_meshes.append(mesh)

    def shape(self, a, node, element, gtype, builtin_size=(0.0, 0.0, 0.0)):
        """size, pos and quat of a geom or site, from ``fromto`` when it is given."""
        size = self.vector(a, "size", node, element, builtin_size, (1, 2, 3))
        pos, quat = self.pose(a, node, element)
        if "fromto" in a:
            if gtype not in ("capsule", "cylinder", "box", "ellipsoid"):
                raise self.error(f"fromto is for capsule, cylinder, box and ellipsoid, not {gtype}",
                                 node, element, "fromto")
            ends = self.floats(a, "fromto", node, element, 6)
            start, end = ends[:3], ends[3:]
            half = np.linalg.norm(end - start) / 2
            if half < 1e-12:
                raise self.error("fromto has zero length", node, element, "fromto")
            pos = (start + end) / 2
            # MuJoCo points the shape's z axis from the second point to the first
            quat = zaxis_to_quat(start - end)
            if gtype in ("capsule", "cylinder"):
                size[1] = half
            else:
                size[1], size[2] = size[0], half
        return size, pos, quat

    def site(self, node: Node, body: int, cls: str, fpos, fquat) -> None:
        element = _element(node)
        a = self.attrs(node, "site", cls, element)
        self.check(node, element, _SITE)
        stype = self.keyword(a, "type", node, element, ("sphere", "capsule", "ellipsoid", "cylinder", "box"), "sphere")
        size, pos, quat = self.shape(a, node, element, stype, (0.005, 0.005, 0.005))
        pos, quat = _compose(fpos, fquat, pos, quat)
        self.guard(node, element, self.b.add_site, body, pos=pos, quat=quat, size=size, name=a.get("name", ""),
                   type=stype)
        self.b.visual["sites"].append(dict(type=stype, rgba=a.get("rgba", "0.5 0.5 0.5 1"), group=a.get("group", "0")))

    def camera(self, node: Node, body: int, cls: str, fpos, fquat) -> None:
        element = _element(node)
        a = self.attrs(node, "camera", cls, element)
        self.check(node, element, _CAMERA)
        pos, quat = _compose(fpos, fquat, *self.pose(a, node, element))
        self.b.visual["cameras"].append(dict(
            name=a.get("name", ""), body=body, pos=pos, quat=quat, mode=a.get("mode", "fixed"),
            target=a.get("target", ""), fovy=self.number(a, "fovy", node, element, 45.0),
            attrs={k: v for k, v in a.items() if k not in _POSE and k != "class"}))

    def light(self, node: Node, body: int, cls: str, fpos, fquat) -> None:
        element = _element(node)
        a = self.attrs(node, "light", cls, element)
        self.check(node, element, _LIGHT)
        pos = fpos + quat_rotate(fquat, self.floats(a, "pos", node, element, 3, (0.0, 0.0, 0.0)))
        direction = quat_rotate(fquat, self.floats(a, "dir", node, element, 3, (0.0, 0.0, -1.0)))
        self.b.visual["lights"].append(dict(
            name=a.get("name", ""), body=body, pos=pos, dir=direction,
            directional=self.flag(a, "directional", node, element, False),
            attrs={k: v for k, v in a.items() if k not in ("pos", "dir", "class")}))

    # --- tendons, actuators, keyframes --------------------------------------------
    def tendons(self, node: Node) -> None:
        self.check(node, "tendon", (), ("fixed", "spatial"))
        for t in node.children:
            element = _element(t)
            a = self.attrs(t, "tendon", "main", element)
            if t.tag == "spatial":
                self.check(t, element, _TENDON, ("site", "geom", "pulley"))
                terms, add = self.spatial_path(t, element), self.b.add_tendon_spatial
            else:
                self.check(t, element, _TENDON, ("joint",))
                terms, add = self.fixed_terms(t, element), self.b.add_tendon_fixed
            spring = self.floats(a, "springlength", t, element, (1, 2))
            if spring is not None and spring[0] < 0:
                spring = None  # MuJoCo's -1: the length at qpos0
            kw = dict(name=a.get("name", ""), limited=self.limited(a, "limited", t, element, "range"),
                      range=self.floats(a, "range", t, element, 2), lengthspring=spring,
                      margin=self.number(a, "margin", t, element, 0.0),
                      solref=self.floats(a, "solreflimit", t, element, 2, (0.02, 1.0)),
                      solimp=self.vector(a, "solimplimit", t, element, _SOLIMP, (3, 5)),
                      solreffriction=self.floats(a, "solreffriction", t, element, 2, (0.02, 1.0)),
                      solimpfriction=self.vector(a, "solimpfriction", t, element, _SOLIMP, (3, 5)))
            for key in ("stiffness", "damping", "frictionloss"):
                kw[key] = self.number(a, key, t, element, 0.0, minimum=0.0)
            self.guard(t, element, add, terms, **kw)
            self.remember("tendon", kw["name"], t, element)

    def fixed_terms(self, t: Node, element: str) -> list:
        terms = []
        for j in t.all("joint"):
            self.check(j, f"{element} <joint>", ("joint", "coef"))
            if "joint" not in j.attrib:
                raise self.error("a tendon <joint> needs attribute 'joint'", j, element, "joint")
            terms.append((j.attrib["joint"], self.number(j.attrib, "coef", j, f"{element} <joint>", 1.0)))
        return terms

    def spatial_path(self, t: Node, element: str) -> list:
        """A <spatial>'s children in order, as add_tendon_spatial's path."""
        path = []
        for c in t.children:
            where = f"{element} <{c.tag}>"
            if c.tag == "pulley":
                self.check(c, where, ("divisor",))
                path.append(("pulley", self.number(c.attrib, "divisor", c, where, 0.0)))
                continue
            if c.tag not in ("site", "geom"):
                continue  # refused by check unless strict=False
            names = {"site": ("site",), "geom": ("geom", "sidesite")}[c.tag]
            self.check(c, where, names)
            if c.tag not in c.attrib:
                raise self.error(f"a tendon <{c.tag}> needs attribute '{c.tag}'", c, element, c.tag)
            path.append(("site", c.attrib["site"]) if c.tag == "site"
                        else ("geom", c.attrib["geom"], c.attrib.get("sidesite")))
        return path

    def actuators(self, node: Node) -> None:
        for child in node.children:
            self.actuator_slots.append(self.actuator(child))

    def actuator(self, child: Node) -> tuple[bool, int]:
        """Add one actuator; returns whether it was added and how many activations MuJoCo
        gives it (keyframes list ctrl and act for every actuator of MuJoCo's model)."""
        element = _element(child)
        if child.tag not in _ACTUATORS:
            self.unsupported(f"<{child.tag}> actuators", child, element)
            return False, _mujoco_actnum(child.tag, child.attrib)
        a = self.attrs(child, "actuator", "main", element)
        self.check(child, element, _ACTUATORS[child.tag])
        other = [k for k in _OTHER_TRANSMISSIONS if k in a]
        if other:
            self.unsupported(f"the '{other[0]}' transmission (an actuator drives a joint or a tendon)", child,
                             element, other[0])
            return False, _mujoco_actnum(child.tag, a)
        targets = [k for k in ("joint", "tendon") if k in a]
        if len(targets) != 1:
            raise self.error("an actuator needs exactly one of 'joint' and 'tendon'", child, element,
                             targets[1] if targets else "joint")
        kw = dict(
            kind=child.tag, name=a.get("name", ""), transmission=targets[0],
            gear=self.vector(a, "gear", child, element, (1.0, 0, 0, 0, 0, 0), tuple(range(1, 7))),
            ctrllimited=self.limited(a, "ctrllimited", child, element, "ctrlrange"),
            ctrlrange=self.floats(a, "ctrlrange", child, element, 2),
            forcelimited=self.limited(a, "forcelimited", child, element, "forcerange"),
            forcerange=self.floats(a, "forcerange", child, element, 2),
            actlimited=self.limited(a, "actlimited", child, element, "actrange"),
            actrange=self.floats(a, "actrange", child, element, 2),
        )
        if kw["gear"].size > 1 and np.any(kw["gear"][1:]):
            self.unsupported("gear components beyond the first (joint and tendon transmissions use one)",
                             child, element, "gear")
            return False, _mujoco_actnum(child.tag, a)
        if not self.actuator_kind(a, child, element, targets[0], kw):
            return False, _mujoco_actnum(child.tag, a)
        stateful = kw.get("dyntype", "none") != "none"
        if stateful and self.b.opt.integrator == M.INT_RK4:
            raise self.error(RK4_ACTIVATION, child, element,
                             {"position": "timeconst", "intvelocity": None}.get(child.tag, "dyntype"))
        self.guard(child, element, self.b.add_actuator, a[targets[0]], **kw)
        self.remember("actuator", kw["name"], child, element)
        return True, int(stateful)

    def actuator_kind(self, a, child: Node, element: str, target: str, kw) -> bool:
        """The shortcut's or <general>'s gain, bias and dynamics; False where unsupported."""
        if child.tag in ("position", "intvelocity"):
            kw.update(kp=self.number(a, "kp", child, element, 1.0, minimum=0.0),
                      kv=self.number(a, "kv", child, element, 0.0, minimum=0.0),
                      dampratio=self.number(a, "dampratio", child, element, 0.0, minimum=0.0))
            timeconst = self.number(a, "timeconst", child, element, 0.0, minimum=0.0)
            if timeconst > 0:  # MuJoCo's servo with a first-order lag
                kw.update(dyntype="filterexact", dynprm=[timeconst])
            self.inherit_range(a, child, element, target, kw)
            if child.tag == "intvelocity":  # MuJoCo's integrated-velocity servo
                if not kw["actlimited"]:
                    raise self.error("intvelocity needs actrange", child, element, "actrange")
                kw.update(kind="position", dyntype="integrator")
        elif child.tag == "velocity":
            kw.update(kv=self.number(a, "kv", child, element, 1.0, minimum=0.0))
        elif child.tag == "general":
            return self.general(a, child, element, kw)
        return True

    def inherit_range(self, a, node, element, target: str, kw) -> None:
        """MuJoCo's inheritrange: a servo's ctrlrange (intvelocity's actrange) is its joint's or
        tendon's range about its middle, scaled by the attribute."""
        scale = self.number(a, "inheritrange", node, element, 0.0, minimum=0.0)
        if scale <= 0:
            return
        key = "actrange" if node.tag == "intvelocity" else "ctrlrange"
        if key in a:
            raise self.error(f"{key} and inheritrange cannot both be defined", node, element, "inheritrange")
        items = self.b._joints if target == "joint" else self.b._tendons
        found = [x for x in items if x.name == a[target]]
        if target == "joint" and found and found[0].type not in (M.JNT_HINGE, M.JNT_SLIDE):
            raise self.error("inheritrange can only be used with hinge and slide joints", node, element, "inheritrange")
        if not found or found[0].range[0] == found[0].range[1]:
            raise self.error(f"inheritrange used but {target} {a[target]!r} has no range", node, element,
                             "inheritrange")
        lo, hi = (float(v) for v in found[0].range)
        mean, radius = 0.5 * (hi + lo), 0.5 * (hi - lo) * scale
        limited = key.replace("range", "limited")
        kw[key] = np.array([mean - radius, mean + radius])
        kw[limited] = a.get(limited, "auto") != "false"

    def general(self, a, node, element, kw) -> bool:
        """<general>'s types and parameters; False (the actuator left out) where a type is
        unsupported, since a fixed-gain stand-in would drive the joint differently."""
        for key, choices, default in (("dyntype", tuple(M.DYNAMICS), "none"), ("gaintype", ("fixed", "affine"), "fixed"),
                                      ("biastype", ("none", "affine"), "none")):
            value = a.get(key, default)
            if value not in choices:
                self.unsupported(f"{key}={value!r}", node, element, key)
                return False
            kw[key] = value
        kw.update(dynprm=self.vector(a, "dynprm", node, element, (1.0,) + (0.0,) * 9, tuple(range(1, 11))),
                  actearly=self.flag(a, "actearly", node, element, False))
        kw["gainprm"] = self.vector(a, "gainprm", node, element, (1.0,) + (0.0,) * 9, tuple(range(1, 11)))
        kw["biasprm"] = self.vector(a, "biasprm", node, element, (0.0,) * 10, tuple(range(1, 11)))
        return True

    def contact_filters(self, node: Node) -> None:
        """<pair> (geoms always tested, with their own parameters) and <exclude> (bodies
        never tested) of <contact>."""
        self.check(node, "contact", (), ("pair", "exclude"))
        for c in node.children:
            element = _element(c)
            if c.tag == "exclude":
                self.check(c, element, ("name", "body1", "body2"))
                for key in ("body1", "body2"):
                    if key not in c.attrib:
                        raise self.error(f"<exclude> needs attribute '{key}'", c, element, key)
                self.guard(c, element, self.b.add_contact_exclude, c.attrib["body1"], c.attrib["body2"])
                continue
            a = self.attrs(c, "pair", "main", element)
            self.check(c, element, _PAIR)
            for key in ("geom1", "geom2"):
                if key not in a:
                    raise self.error(f"<pair> needs attribute '{key}'", c, element, key)
            # what a <pair> leaves out takes MuJoCo's pair defaults, not the geoms' mix
            index = self.guard(
                c, element, self.b.add_contact_pair, a["geom1"], a["geom2"], name=a.get("name", ""),
                condim=self.integer(a, "condim", c, element, 3),
                friction=self.vector(a, "friction", c, element, (1.0, 1.0, 0.005, 0.0001, 0.0001), (1, 2, 3, 4, 5)),
                solref=self.floats(a, "solref", c, element, 2, (0.02, 1.0)),
                solimp=self.vector(a, "solimp", c, element, _SOLIMP, (3, 5)),
                margin=self.number(a, "margin", c, element, 0.0), gap=self.number(a, "gap", c, element, 0.0))
            self.remember("pair", a.get("name", "") or str(index), c, element)

    def equalities(self, node: Node) -> None:
        for e in node.children:
            element = _element(e)
            if e.tag not in _EQUALITIES:
                self.unsupported(f"<{e.tag}> equality constraints", e, element)
                continue
            a = self.attrs(e, "equality", "main", element)
            self.check(e, element, _EQUALITIES[e.tag])
            kw = dict(name=a.get("name", ""), active=self.flag(a, "active", e, element, True),
                      solref=self.floats(a, "solref", e, element, 2, (0.02, 1.0)),
                      solimp=self.vector(a, "solimp", e, element, _SOLIMP, (3, 5)))
            self.taigym_attributes(a, e, element)
            for key, attr in (("break_force", "taigym:break_force"), ("break_torque", "taigym:break_torque")):
                if attr in a:
                    if e.tag != "weld" and key == "break_torque":
                        raise self.error(f"only a weld transmits torque; {attr} is for <weld>", e, element, attr)
                    kw[key] = self.number(a, attr, e, element)
                    if not kw[key] > 0:
                        raise self.error(f"{attr} must be > 0, got {kw[key]:g}", e, element, attr)
            first, second = {"joint": ("joint1", "joint2"), "tendon": ("tendon1", "tendon2")}.get(
                e.tag, ("body1", "body2"))
            if e.tag in ("connect", "weld") and ("site1" in a or "site2" in a):
                self.site_equality(e, element, a, kw)
                continue
            if first not in a:
                raise self.error(f"<{e.tag}> needs attribute '{first}'", e, element, first)
            if e.tag == "connect":
                if "anchor" not in a:
                    raise self.error("<connect> needs attribute 'anchor'", e, element, "anchor")
                kw["anchor"] = self.floats(a, "anchor", e, element, 3)
                add = self.b.add_equality_connect
            elif e.tag == "weld":
                kw["anchor"] = self.floats(a, "anchor", e, element, 3, (0.0, 0.0, 0.0))
                relpose = self.floats(a, "relpose", e, element, 7, (0, 1, 0, 0, 0, 0, 0))
                # MuJoCo's default relpose (a zero quaternion) means: the pose at qpos0
                kw["relpose"] = relpose if np.any(relpose[3:]) else None
                kw["torquescale"] = self.number(a, "torquescale", e, element, 1.0, minimum=0.0)
                add = self.b.add_equality_weld
            else:
                kw["polycoef"] = self.floats(a, "polycoef", e, element, 5, (0, 1, 0, 0, 0))
                add = self.b.add_equality_joint if e.tag == "joint" else self.b.add_equality_tendon
            index = self.guard(e, element, add, a[first], a.get(second), **kw)
            self.remember("equality", kw["name"] or str(index), e, element)

    def site_equality(self, e: Node, element: str, a: dict, kw: dict) -> None:
        """A connect or weld between two sites (MuJoCo's site semantics): the sites'
        positions (and, for a weld, frames) are held together; bodies and anchors do not
        mix with them."""
        for key in ("site1", "site2"):
            if key not in a:
                raise self.error(f"<{e.tag}> with sites needs attribute '{key}'", e, element, key)
        for key in ("body1", "body2", "anchor", "relpose"):
            if key in a:
                raise self.error(f"<{e.tag}> gives sites or bodies: '{key}' does not go with site1/site2", e,
                                 element, key)
        if e.tag == "weld":
            kw["torquescale"] = self.number(a, "torquescale", e, element, 1.0, minimum=0.0)
            add = self.b.add_equality_weld
        else:
            add = self.b.add_equality_connect
        index = self.guard(e, element, add, site1=a["site1"], site2=a["site2"], **kw)
        self.remember("equality", kw["name"] or str(index), e, element)

    def keyframes(self, node: Node) -> None:
        self.check(node, "keyframe", (), ("key",))
        for index, key in enumerate(node.all("key")):
            element = _element(key)
            self.check(key, element, ("name", "time", "qpos", "qvel", "ctrl", "act", "mpos", "mquat"))
            self.default_only(key.attrib, key, element, "time", 0.0, "keyframe time")
            arrays = {k: self.floats(key.attrib, k, key, element, tuple(range(0, 100000)))
                      for k in ("qpos", "qvel", "ctrl", "act", "mpos", "mquat")}
            arrays["ctrl"], arrays["act"] = self.kept_actuators(arrays["ctrl"], arrays["act"])
            name = key.attrib.get("name", "")
            self.guard(key, element, self.b.add_key, name=name, **arrays)
            self.remember("key", name or str(index), key, element)

    def kept_actuators(self, ctrl, act):
        """A keyframe's ctrl and act without the entries of actuators left out (strict=False),
        where they are given for all of MuJoCo's actuators."""
        kept = [k for k, n in self.actuator_slots]
        if all(kept):
            return ctrl, act
        if ctrl is not None and ctrl.size == len(kept):
            ctrl = ctrl[np.array(kept)]
        act_kept = np.repeat(kept, [n for _, n in self.actuator_slots])
        if act is not None and act.size == act_kept.size:
            act = act[act_kept]
        return ctrl, act

    def reserve_keys(self, sizes) -> None:
        """``<size nkey>`` asks for at least that many keyframes; MuJoCo fills the extra
        ones with qpos0 and zero velocity and control."""
        for node in sizes:
            nkey = self.integer(node.attrib, "nkey", node, "size", 0)
            while len(self.b._keys) < nkey:
                self.b.add_key()

    def custom(self, node: Node) -> None:
        self.check(node, "custom", (), ("numeric", "text", "tuple"))
        for c in node.children:
            element = _element(c)
            self.check(c, element, {"numeric": ("name", "size", "data"), "text": ("name", "data"),
                                    "tuple": ("name",)}[c.tag], ("element",) if c.tag == "tuple" else ())
            name = c.attrib.get("name", "")
            if c.tag == "numeric":
                data = self.floats(c.attrib, "data", c, element, tuple(range(0, 100000)), ())
                size = self.integer(c.attrib, "size", c, element, data.size)
                value = np.concatenate([data, np.zeros(max(0, size - data.size))])
            elif c.tag == "text":
                value = c.attrib.get("data", "")
            else:
                value = [dict(e.attrib) for e in c.all("element")]
            self.b.visual["custom"][name] = value

    def finalize(self) -> Model:
        try:
            return self.b.finalize(total_mass=self.total_mass, **self.bounds)
        except ModelError as e:
            # The builder names elements by kind and name; point at them in the file.
            # named elements read "joint 'hip'", unnamed ones "equality 3" (the index)
            m = re.fullmatch(r"(\w+) (?:'(.*)'|(\d+))", e.element or "")
            found = self.nodes.get((m.group(1), m.group(2) if m.group(2) is not None else m.group(3))) if m else None
            if found is None:
                raise self.error(e.reason, None, e.element, e.attribute) from None
            raise self.error(e.reason, found[0], found[1], e.attribute) from None


# --- helpers --------------------------------------------------------------------------
def _default_kind(tag: str) -> str:
    # MuJoCo keeps one default actuator per class, which every actuator shortcut edits
    return "actuator" if tag in _ACTUATORS else tag


def _element(node: Node) -> str:
    name = node.attrib.get("name")
    return f"{node.tag} '{name}'" if name else node.tag


def _mujoco_actnum(tag: str, a) -> int:
    """The activations MuJoCo gives an actuator this importer leaves out."""
    try:
        if "actdim" in a:
            return max(0, int(a["actdim"]))
        if tag == "position":
            return int(float(a.get("timeconst", 0)) > 0)
    except ValueError:
        return 0
    return int(tag in ("muscle", "cylinder", "intvelocity") or (tag == "general" and a.get("dyntype", "none") != "none"))


def _raw(node: Node) -> dict:
    return {"attrib": dict(node.attrib), "children": [_raw(c) | {"tag": c.tag} for c in node.children]}


def _same_number(raw: str, default) -> bool:
    try:
        values = [float(t) for t in raw.split()]
        ref = [float(t) for t in str(default).split()]
    except ValueError:
        return False
    return values == ref


def _compose(fpos, fquat, pos, quat):
    """A pose given in a frame, expressed in the frame's parent."""
    return fpos + quat_rotate(fquat, pos), quat_normalize(quat_mul(fquat, quat))


class _Attrs(dict):
    """An element's attributes over its class defaults; ``inherited`` holds the latter."""

    inherited: dict = {}


def _expand_includes(root: Node, base_dir: Path, reader: _Reader, assets: dict) -> None:
    """Replace each ``<include file=...>`` by the children of that file's top element,
    level by level from a stack (no call per level of nesting). A file named in ``assets``
    is read from there, not from disk."""
    pending = [(root, ())]
    while pending:
        node, chain = pending.pop()
        queue, out = deque((child, chain) for child in node.children), []
        while queue:
            child, via = queue.popleft()
            if child.tag != "include":
                out.append(child)
                pending.append((child, via))
                continue
            path = _include_path(child, base_dir, reader, via)
            top = parse_xml(_read_include(child, path, reader, assets), str(path))
            for n in _walk(top):
                n.file = str(path)
            queue.extendleft((c, via + (path,)) for c in reversed(top.children))
        node.children = out


def _include_path(node: Node, base_dir: Path, reader: _Reader, via: tuple) -> Path:
    if "file" not in node.attrib:
        raise reader.error("<include> needs attribute 'file'", node, "include", "file")
    reader.check(node, "include", ("file",))
    path = (base_dir / node.attrib["file"]).resolve()
    if not path.exists() and node.file is not None:  # as MuJoCo 4: also beside the file that includes it
        beside = (Path(node.file).parent / node.attrib["file"]).resolve()
        path = beside if beside.exists() else path
    if path in via:
        raise reader.error(f"include cycle through {path}", node, "include", "file")
    return path


def _read_include(node: Node, path: Path, reader: _Reader, assets: dict) -> bytes:
    name = os.path.normpath(node.attrib["file"])
    if name in assets:
        return assets[name]
    try:
        return path.read_bytes()
    except OSError as e:
        raise reader.error(f"cannot read included file {path}: {e.strerror}", node, "include", "file") from None


def _walk(node: Node):
    """The element and all below it, in document order."""
    pending = [node]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(node.children))


def _load(text, file: str, strict: bool, base_dir: Path, assets=None) -> Model:
    reader = _Reader(file, strict, base_dir)
    root = parse_xml(text, file)
    _expand_includes(root, base_dir, reader, _asset_files(assets))
    reader.read(root)
    model = reader.finalize()
    reader.warn_ignored()
    return model


def load_mjcf(path, *, strict: bool = True) -> Model:
    """Load an MJCF file into a Model.

    Args:
        path: the ``.xml`` file; ``<include>`` files resolve relative to its folder.
        strict: if False, unsupported content is skipped with one warning that lists
            everything skipped, instead of raising a ModelError.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"cannot read the file: {e.strerror}", file=str(path)) from None
    return _load(data, str(path), strict, path.resolve().parent)


def load_mjcf_string(text, *, strict: bool = True, base_dir=None, assets=None) -> Model:
    """Load MJCF text into a Model (see :func:`load_mjcf`); ``<include>`` files resolve
    relative to ``base_dir`` (default: the working directory), or are taken from ``assets``,
    ``{file name as the model names it: contents}``, as MuJoCo's ``from_xml_string(xml,
    assets)`` takes them (dm_control's generated models come with their includes so)."""
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    file = str(base / _STRING_FILE) if base_dir is not None else _STRING_FILE
    return _load(text, file, strict, base.resolve(), assets)


def _asset_files(assets) -> dict:
    """``assets`` keyed by normalized name ("./common/a.xml" is "common/a.xml"), as bytes."""
    if assets is None:
        return {}
    if not isinstance(assets, dict):
        raise ModelError(f"assets must be a dict of file name to contents, got {type(assets).__name__}")
    out = {}
    for name, contents in assets.items():
        if not isinstance(name, str) or not isinstance(contents, (str, bytes)):
            raise ModelError(f"assets: {name!r} must be a file name with str or bytes contents")
        out[os.path.normpath(name)] = contents.encode() if isinstance(contents, str) else contents
    return out


__all__ = ["load_mjcf", "load_mjcf_string"]
