"""URDF importer: a robot's links and joints -> a Model, built through ModelBuilder.

Mapping (URDF 1.0):

- Each link becomes a body. The root link is a child of the world, welded to it unless
  ``floating=True`` gives it a free joint; a root link named ``world`` *is* the world
  (its children attach to body 0), the usual way URDFs pin a robot down.
- A child link's body frame is its joint's ``<origin>`` in the parent link frame; the
  joint axis is given in that frame, so joint anchors are at the body origin.
- Mass properties come from ``<inertial>`` only (a link without one is massless);
  the inertia tensor is rotated from the inertial frame into the link frame.
- ``<collision>`` shapes collide (contype = conaffinity = 1); ``<visual>`` shapes do
  not (0 / 0) and carry no mass. Box sizes are full lengths, cylinder lengths full
  heights along z; both become MuJoCo half sizes.
- Joints: revolute -> limited hinge, continuous -> hinge, prismatic -> limited slide,
  fixed -> welded body, floating -> free joint (only below the world).
  ``<dynamics damping friction>`` -> damping and frictionloss. Effort and velocity
  limits are read and checked but make no actuators.

- ``<mesh filename scale>``: an STL or OBJ file (physics/compiler/mesh_files.py) becomes a
  mesh asset, named after the file, and a mesh geom, compiled as MuJoCo compiles meshes
  (physics/compiler/mesh.py). ``package://name/path`` resolves under the ``package_dirs``
  the loader is given (``dir/name/path``, or ``dir/path`` when ``dir`` is the package
  ``name`` itself), ``file://`` and plain names against the URDF's folder.

Unsupported content (mesh formats other than STL and OBJ, such as COLLADA, meshes whose
package is not found, textures, ``<transmission>``, ``<gazebo>``, unknown elements and
attributes) is an error under ``strict=True`` and, under ``strict=False``, skipped with
one warning that lists everything ignored. Planar and mimic joints are
errors in both modes, since dropping them would change the robot's motion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..compiler.xml_source import Node as _Node
from ..compiler.xml_source import XmlReader, parse_xml
from ..compiler.builder import ModelBuilder
from ..errors import ModelError
from ..model import Model
from ..compiler.transforms import euler_to_quat, quat_to_mat

_STRING_FILE = "<string>"
_WORLD = "world"
_ROOT_JOINT = "root_joint"

# Elements that do not change the simulation (encoder calibration, soft limits for a
# controller); accepted and dropped without a warning.
_NO_EFFECT = {"calibration": {"rising", "falling", "reference_position"},
              "safety_controller": {"soft_lower_limit", "soft_upper_limit", "k_position", "k_velocity"}}


@dataclass
class _Link:
    name: str
    node: _Node


@dataclass
class _Joint:
    name: str
    type: str
    node: _Node
    parent: str
    child: str
    parent_line: int
    child_line: int
    pos: np.ndarray
    quat: np.ndarray
    axis: np.ndarray
    lower: Optional[float] = None
    upper: Optional[float] = None
    damping: float = 0.0
    friction: float = 0.0


class _Reader(XmlReader):
    format = "URDF"

    def __init__(self, file: str, strict: bool, base_dir: Path = Path("."), package_dirs=()):
        super().__init__(file, strict)
        self.base_dir = base_dir
        self.package_dirs = [Path(d) for d in package_dirs]
        self.meshes: dict[tuple, int] = {}  # (file, scale) -> mesh id: each file compiled once
        self.robot = "robot"
        self.materials: dict[str, Optional[np.ndarray]] = {}
        self.links: dict[str, _Link] = {}
        self.joints: dict[str, _Joint] = {}

    def check(self, node: _Node, element: str, attrs=(), children=()) -> None:
        """Flag attributes and child elements this importer does not know."""
        for a in node.attrib:
            if a not in attrs and not a.startswith("xmlns"):
                self.unsupported(f"attribute '{a}' of <{node.tag}>", node, element, a)
        for c in node.children:
            if c.tag in _NO_EFFECT and c.tag in children:
                self.check(c, element, _NO_EFFECT[c.tag])
            elif c.tag not in children:
                self.unsupported(f"element <{c.tag}> inside <{node.tag}>", c, element)

    def one(self, node: _Node, tag: str, element: str, required=False) -> Optional[_Node]:
        found = node.all(tag)
        if len(found) > 1:
            raise self.error(f"<{node.tag}> has {len(found)} <{tag}> elements; expected at most one",
                             found[1], element, tag)
        if not found and required:
            raise self.error(f"<{node.tag}> needs a <{tag}> element", node, element, tag)
        return found[0] if found else None

    # --- numbers ------------------------------------------------------------------
    def floats(self, node: _Node, attr: str, n: int, element: str, default=None) -> Optional[np.ndarray]:
        raw = node.attrib.get(attr)
        if raw is None:
            if default is None:
                raise self.error(f"<{node.tag}> needs attribute '{attr}'", node, element, attr)
            return np.array(default, dtype=float)
        return self.parse_floats(raw, node, attr, element, (n,))

    def number(self, node: _Node, attr: str, element: str, default=None, minimum=None) -> float:
        value = float(self.floats(node, attr, 1, element, None if default is None else [default])[0])
        if minimum is not None and value < minimum:
            raise self.error(f"{attr} must be >= {minimum}, got {value}", node, element, attr)
        return value

    def origin(self, node: _Node, element: str):
        """(pos, quat) of an optional <origin>; rpy is roll, pitch, yaw about fixed x, y, z."""
        o = self.one(node, "origin", element)
        if o is None:
            return np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        self.check(o, element, ("xyz", "rpy"))
        xyz = self.floats(o, "xyz", 3, element, (0.0, 0.0, 0.0))
        rpy = self.floats(o, "rpy", 3, element, (0.0, 0.0, 0.0))
        return xyz, euler_to_quat(rpy, "XYZ")

    def name(self, node: _Node, kind: str) -> str:
        name = node.attrib.get("name", "")
        if not name:
            raise self.error(f"<{kind}> needs a non-empty name", node, kind, "name")
        return name

    # --- robot --------------------------------------------------------------------
    def read(self, root: _Node, floating: Optional[bool]) -> ModelBuilder:
        if root.tag != "robot":
            raise self.error(f"the top element must be <robot>, got <{root.tag}>", root, root.tag)
        robot_name = root.attrib.get("name", "") or "robot"
        self.robot = f"robot '{root.attrib['name']}'" if root.attrib.get("name") else "robot"
        self.check(root, self.robot, ("name", "version"),
                   ("link", "joint", "material", "transmission", "gazebo"))

        for m in root.all("material"):
            name = self.name(m, "material")
            self.materials[name] = self.material_rgba(m, f"material '{name}'")

        links: dict[str, _Link] = {}
        for node in root.all("link"):
            name = self.name(node, "link")
            if name in links:
                raise self.error(f"duplicate link name (first on line {links[name].node.line})", node,
                                 f"link '{name}'", "name")
            links[name] = _Link(name, node)
        if not links:
            raise self.error("the robot has no links", root, self.robot)

        joints: list[_Joint] = []
        for node in root.all("joint"):
            name = self.name(node, "joint")
            if any(j.name == name for j in joints):
                raise self.error("duplicate joint name", node, f"joint '{name}'", "name")
            joints.append(self.joint(node, name, links))

        for tag in ("transmission", "gazebo"):
            for node in root.all(tag):
                label = f"<{tag}>" + (f" '{node.attrib['name']}'" if node.attrib.get("name") else "")
                self.unsupported(label, node, self.robot)

        self.links, self.joints = links, {j.name: j for j in joints}
        parent_joint = self.tree(links, joints)
        return self.build(robot_name, links, joints, parent_joint, floating)

    def tree(self, links: dict, joints: list) -> dict:
        """Check that links and joints form one tree; returns child link -> joint."""
        parent_joint: dict[str, _Joint] = {}
        for j in joints:
            if j.child in parent_joint:
                first = parent_joint[j.child]
                raise self.error(f"link '{j.child}' already has parent '{first.parent}' through joint '{first.name}' "
                                 f"(line {first.node.line}); a link has one parent", None, f"joint '{j.name}'",
                                 "child", j.child_line)
            if j.child == j.parent:
                raise self.error(f"link '{j.child}' is its own parent", None, f"joint '{j.name}'", "child",
                                 j.child_line)
            parent_joint[j.child] = j
        roots = [name for name in links if name not in parent_joint]
        if len(roots) > 1:
            raise self.error(f"the links form {len(roots)} separate trees with roots {roots}; a URDF must be "
                             "one tree (connect them with joints)", links[roots[1]].node, f"link '{roots[1]}'")
        # With one parent per link, a link that does not reach the root by parent steps
        # lies on a cycle or below one; walk up from it to name a joint of the cycle.
        for name in links:
            seen = []
            at = name
            while at in parent_joint and at not in seen:
                seen.append(at)
                at = parent_joint[at].parent
            if at in parent_joint:
                cycle = seen[seen.index(at):] + [at]
                j = parent_joint[at]
                raise self.error("the joints form a cycle: " + " -> ".join(f"'{c}'" for c in cycle)
                                 + " (each link followed by its parent)", None,
                                 f"joint '{j.name}'", "parent", j.parent_line)
        return parent_joint

    # --- joints -------------------------------------------------------------------
    def joint(self, node: _Node, name: str, links: dict) -> _Joint:
        where = f"joint '{name}'"
        jtype = node.attrib.get("type")
        if jtype is None:
            raise self.error("<joint> needs attribute 'type'", node, where, "type")
        if jtype == "planar":
            raise self.error("planar joints are not supported", node, where, "type")
        if jtype not in ("revolute", "continuous", "prismatic", "fixed", "floating"):
            raise self.error(f"unknown joint type {jtype!r}; expected revolute, continuous, prismatic, fixed, "
                             "floating or planar", node, where, "type")
        mimic = node.all("mimic")
        if mimic:
            raise self.error(f"mimic joints are not supported yet (joint '{name}' mimics "
                             f"'{mimic[0].attrib.get('joint', '?')}')", mimic[0], where, "mimic")
        self.check(node, where, ("name", "type"), ("origin", "parent", "child", "axis", "limit", "dynamics",
                                                   "calibration", "safety_controller"))
        ends = {}
        for role in ("parent", "child"):
            e = self.one(node, role, where, required=True)
            self.check(e, where, ("link",))
            link = e.attrib.get("link", "")
            if not link:
                raise self.error(f"<{role}> needs attribute 'link'", e, where, role)
            if link not in links:
                raise self.error(f"<{role}> references unknown link '{link}'", e, where, role)
            ends[role] = (link, e.line)
        pos, quat = self.origin(node, where)
        j = _Joint(name, jtype, node, ends["parent"][0], ends["child"][0], ends["parent"][1], ends["child"][1],
                   pos, quat, np.array([1.0, 0.0, 0.0]))

        axis = self.one(node, "axis", where)
        if axis is not None and jtype in ("revolute", "continuous", "prismatic"):
            self.check(axis, where, ("xyz",))
            xyz = self.floats(axis, "xyz", 3, where, (1.0, 0.0, 0.0))
            norm = np.linalg.norm(xyz)
            if norm < 1e-12:
                raise self.error(f"axis must not be zero, got {axis.attrib.get('xyz')!r}", axis, where, "xyz")
            j.axis = xyz / norm

        limit = self.one(node, "limit", where)
        if limit is not None:
            self.check(limit, where, ("lower", "upper", "effort", "velocity"))
            for attr in ("effort", "velocity"):
                if attr in limit.attrib:
                    self.number(limit, attr, where, minimum=0.0)
        if jtype in ("revolute", "prismatic"):
            if limit is None:
                raise self.error(f"a {jtype} joint needs a <limit> with lower and upper", node, where, "limit")
            j.lower = self.number(limit, "lower", where)
            j.upper = self.number(limit, "upper", where)
            if j.lower > j.upper:
                raise self.error(f"lower limit {j.lower} > upper limit {j.upper}", limit, where, "lower")

        dyn = self.one(node, "dynamics", where)
        if dyn is not None:
            self.check(dyn, where, ("damping", "friction"))
            j.damping = self.number(dyn, "damping", where, default=0.0, minimum=0.0)
            j.friction = self.number(dyn, "friction", where, default=0.0, minimum=0.0)
        return j

    # --- links --------------------------------------------------------------------
    def inertial(self, link: _Link):
        """(mass, com, 3x3 inertia about the com in the link frame) from <inertial>."""
        where = f"link '{link.name}'"
        node = self.one(link.node, "inertial", where)
        if node is None:
            return 0.0, np.zeros(3), np.zeros((3, 3))
        self.check(node, where, (), ("origin", "mass", "inertia"))
        pos, quat = self.origin(node, where)
        m = self.one(node, "mass", where, required=True)
        self.check(m, where, ("value",))
        mass = self.number(m, "value", where)
        if mass < 0:
            raise self.error(f"<mass> must be >= 0, got {mass}", m, where, "value")
        t = self.one(node, "inertia", where, required=True)
        names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        self.check(t, where, names)
        ixx, ixy, ixz, iyy, iyz, izz = (self.number(t, n, where) for n in names)
        tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        for n, v in (("ixx", ixx), ("iyy", iyy), ("izz", izz)):
            if v < 0:
                raise self.error(f"<inertia> {n} must be >= 0, got {v}", t, where, n)
        moments = np.linalg.eigvalsh(tensor)
        tol = 1e-12 * max(np.abs(moments).max(), 1e-300)
        if moments.min() < -tol:
            # Name the off-diagonal term that is largest relative to its diagonal pair.
            pairs = {"ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}

            def coupling(n):
                r, c = pairs[n]
                return abs(tensor[r, c]) / max(np.sqrt(tensor[r, r] * tensor[c, c]), 1e-300)

            worst = max(pairs, key=coupling)
            raise self.error(f"<inertia> is not positive definite (principal moments {moments.tolist()})",
                             t, where, worst)
        a, b, c = moments
        if a + b < c - tol:
            worst = ("ixx", "iyy", "izz")[int(np.argmax(np.diag(tensor)))]
            raise self.error(f"<inertia> principal moments {moments.tolist()} violate the triangle inequality "
                             "(no rigid body has them)", t, where, worst)
        rot = quat_to_mat(quat)
        return mass, pos, rot @ tensor @ rot.T

    def material_rgba(self, node: _Node, where: str) -> Optional[np.ndarray]:
        self.check(node, where, ("name",), ("color", "texture"))
        rgba = None
        color = self.one(node, "color", where)
        if color is not None:
            self.check(color, where, ("rgba",))
            rgba = self.floats(color, "rgba", 4, where)
            if np.any(rgba < 0) or np.any(rgba > 1):
                raise self.error(f"rgba values must lie in [0, 1], got {color.attrib['rgba']!r}", color, where, "rgba")
        for tex in node.all("texture"):
            self.unsupported(f"<texture filename='{tex.attrib.get('filename', '')}'>", tex, where)
        return rgba

    def shapes(self, b: ModelBuilder, body: int, link: _Link) -> None:
        where = f"link '{link.name}'"
        self.check(link.node, where, ("name",), ("inertial", "visual", "collision"))
        # URDF lists visual and collision shapes separately; keep document order.
        for node in link.node.children:
            if node.tag not in ("visual", "collision"):
                continue
            visual = node.tag == "visual"
            self.check(node, where, ("name",), ("origin", "geometry", "material") if visual else ("origin", "geometry"))
            pos, quat = self.origin(node, where)
            kw = dict(pos=pos, quat=quat, name=node.attrib.get("name", ""))
            if visual:
                kw.update(contype=0, conaffinity=0, density=0.0, mass=0.0)
                rgba = self.visual_rgba(node, where)
                if rgba is not None:
                    kw["rgba"] = rgba
            else:
                kw.update(contype=1, conaffinity=1)
            geometry = self.one(node, "geometry", where, required=True)
            self.check(geometry, where, (), ("box", "sphere", "cylinder", "mesh"))
            if len(geometry.children) != 1:
                raise self.error(f"<geometry> must hold exactly one shape, found {len(geometry.children)}",
                                 geometry, where, "geometry")
            shape = geometry.children[0]
            if shape.tag == "mesh":
                self.add_mesh(b, body, shape, where, kw, node.tag)
                continue
            if shape.tag not in ("box", "sphere", "cylinder"):
                continue  # already reported by check()
            self.add_shape(b, body, shape, where, kw)

    def add_shape(self, b: ModelBuilder, body: int, shape: _Node, where: str, kw: dict) -> None:
        if shape.tag == "box":
            self.check(shape, where, ("size",))
            size = self.floats(shape, "size", 3, where)
            if np.any(size <= 0):
                raise self.error(f"box sizes must be > 0, got {shape.attrib['size']!r}", shape, where, "size")
            hx, hy, hz = size / 2.0  # URDF gives full edge lengths
            self.guard(shape, where, b.add_shape_box, body, hx=hx, hy=hy, hz=hz, **kw)
        elif shape.tag == "sphere":
            self.check(shape, where, ("radius",))
            radius = self.number(shape, "radius", where)
            if radius <= 0:
                raise self.error(f"radius must be > 0, got {radius}", shape, where, "radius")
            self.guard(shape, where, b.add_shape_sphere, body, radius=radius, **kw)
        else:
            self.check(shape, where, ("radius", "length"))
            radius = self.number(shape, "radius", where)
            length = self.number(shape, "length", where)
            for attr, v in (("radius", radius), ("length", length)):
                if v <= 0:
                    raise self.error(f"{attr} must be > 0, got {v}", shape, where, attr)
            self.guard(shape, where, b.add_shape_cylinder, body, radius=radius, half_height=length / 2.0, **kw)

    def skip_shape(self, reason: str, shape: _Node, where: str, kind: str) -> None:
        """A mesh that cannot be read: an error when strict, else its shape is left out."""
        if self.strict:
            raise self.error(f"{reason}; pass strict=False to leave this {kind} shape out", shape, where, "filename")
        self.unsupported(f"{reason} ({kind} shape skipped)", shape, where, "filename")

    def add_mesh(self, b: ModelBuilder, body: int, shape: _Node, where: str, kw: dict, kind: str) -> None:
        """A mesh geom on a mesh asset read from the file (each file and scale once)."""
        from ..compiler.mesh_files import MeshFileError, mesh_format, read_mesh

        self.check(shape, where, ("filename", "scale"))
        filename = shape.attrib.get("filename", "")
        if not filename:
            raise self.error("<mesh> needs a filename", shape, where, "filename")
        scale = self.floats(shape, "scale", 3, where) if "scale" in shape.attrib else np.ones(3)
        path = self.mesh_path(filename)
        if path is None:
            tried = ", ".join(str(d) for d in self.package_dirs) or "none given"
            self.skip_shape(f"<mesh filename='{filename}'>: package not found under package_dirs ({tried})", shape,
                            where, kind)
            return
        try:
            mesh_format(path)
        except MeshFileError as e:
            self.skip_shape(f"<mesh filename='{filename}'>: {e}", shape, where, kind)
            return
        key = (str(path.resolve()), tuple(scale))
        if key not in self.meshes:
            try:
                vert, face = read_mesh(path)
            except MeshFileError as e:
                raise self.error(str(e), shape, where, "filename") from None
            # named after the file; the same file at another scale is another asset
            taken = {m.name for m in b._meshes}
            name = path.stem if path.stem not in taken else f"{path.stem}_{len(self.meshes)}"
            self.meshes[key] = self.guard(shape, where, b.add_mesh, name, vert, face, scale=scale)
        self.guard(shape, where, b.add_geom, body, "mesh", mesh=self.meshes[key], **kw)

    def mesh_path(self, filename: str) -> Optional[Path]:
        """The file a URDF mesh names; None for a package not under package_dirs."""
        if filename.startswith("package://"):
            package, _, rest = filename[len("package://"):].partition("/")
            for root in self.package_dirs:
                for candidate in (root / package / rest, root / rest if root.name == package else None):
                    if candidate is not None and candidate.exists():
                        return candidate
            return None
        if filename.startswith("file://"):
            filename = filename[len("file://"):]
        return self.base_dir / filename

    def visual_rgba(self, node: _Node, where: str) -> Optional[np.ndarray]:
        m = self.one(node, "material", where)
        if m is None:
            return None
        rgba = self.material_rgba(m, where)
        if rgba is not None:
            return rgba
        name = m.attrib.get("name", "")
        if name in self.materials:
            return self.materials[name]
        if not m.all("texture"):
            self.unsupported(f"reference to undefined material '{name}'", m, where, "name")
        return None

    def guard(self, node: _Node, where: str, fn, *args, **kwargs):
        """Call the builder, giving its errors this file's line and element."""
        try:
            return fn(*args, **kwargs)
        except ModelError as e:
            raise self.error(e.reason, node, where, e.attribute) from None

    # --- assembly -----------------------------------------------------------------
    def build(self, robot_name, links, joints, parent_joint, floating) -> ModelBuilder:
        b = ModelBuilder(robot_name)
        root = next(name for name in links if name not in parent_joint)
        children: dict[str, list[_Joint]] = {name: [] for name in links}
        for j in joints:
            children[j.parent].append(j)
        for name, link in links.items():
            if name == _WORLD and name != root:
                raise self.error(f"only the root link may be named '{_WORLD}'", link.node, f"link '{name}'", "name")

        root_is_world = root == _WORLD
        if floating and root_is_world:
            raise self.error(f"floating=True needs a movable root link, but the root link is '{_WORLD}'",
                             links[root].node, f"link '{root}'")
        for j in joints:
            if j.type == "floating" and not (root_is_world and j.parent == root):
                raise self.error(f"a floating joint must connect the root link '{_WORLD}' to a child "
                                 "(or pass floating=True to make the root link free)", j.node, f"joint '{j.name}'",
                                 "type")

        body_of: dict[str, int] = {}
        # Depth-first preorder, children in document order: the body order MuJoCo gives
        # the same tree written as nested MJCF bodies.
        stack = [root]
        while stack:
            name = stack.pop()
            link = links[name]
            if name == root and root_is_world:
                body = 0  # the world is immovable: an inertial here has no effect
                self.inertial(link)
            else:
                mass, com, inertia = self.inertial(link)
                j = parent_joint.get(name)
                parent = body_of[j.parent] if j else 0
                pos, quat = (j.pos, j.quat) if j else (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
                body = self.guard(link.node, f"link '{name}'", b.add_body, parent, pos=pos, quat=quat, name=name,
                                  mass=mass, com=com, inertia=inertia)
                if j is None:
                    if floating:
                        names = {jj.name for jj in joints}
                        free = _ROOT_JOINT
                        while free in names:
                            free = "_" + free
                        b.add_joint_free(body, name=free)
                else:
                    self.add_joint(b, body, j)
            body_of[name] = body
            self.shapes(b, body, link)
            stack.extend(reversed([j.child for j in children[name]]))
        return b

    def add_joint(self, b: ModelBuilder, body: int, j: _Joint) -> None:
        where = f"joint '{j.name}'"
        common = dict(name=j.name, damping=j.damping, frictionloss=j.friction)
        if j.type == "fixed":
            self.guard(j.node, where, b.add_joint_fixed, body, name=j.name)
        elif j.type == "floating":
            self.guard(j.node, where, b.add_joint_free, body, **common)
        elif j.type == "continuous":
            self.guard(j.node, where, b.add_joint, body, "hinge", axis=j.axis, **common)
        else:
            kind = "hinge" if j.type == "revolute" else "slide"
            self.guard(j.node, where, b.add_joint, body, kind, axis=j.axis, range=(j.lower, j.upper), **common)

    def finalize(self, b: ModelBuilder) -> Model:
        try:
            return b.finalize()
        except ModelError as e:
            # The builder names bodies and joints; point at the link or joint in the file.
            m = re.fullmatch(r"(body|joint) '(.*)'", e.element or "")
            node, element = None, e.element
            if m and m.group(1) == "body" and m.group(2) in self.links:
                node, element = self.links[m.group(2)].node, f"link '{m.group(2)}'"
            elif m and m.group(1) == "joint" and m.group(2) in self.joints:
                node = self.joints[m.group(2)].node
            raise self.error(e.reason, node, element, e.attribute) from None


def _load(text, file: str, strict: bool, floating: Optional[bool], base_dir: Path = Path("."),
          package_dirs=()) -> Model:
    reader = _Reader(file, strict, base_dir, package_dirs)
    root = parse_xml(text, file)
    model = reader.finalize(reader.read(root, floating))
    reader.warn_ignored()
    return model


def load_urdf(path, *, strict: bool = True, floating: Optional[bool] = None, package_dirs=()) -> Model:
    """Load a URDF file into a Model.

    Args:
        path: the ``.urdf`` file; mesh file names resolve relative to its folder.
        strict: if False, unsupported content (COLLADA and other mesh formats,
            transmissions, gazebo tags, unknown elements) is skipped with one warning
            instead of raising.
        floating: True gives the root link a free joint (named ``root_joint``);
            None or False weld it to the world.
        package_dirs: folders ``package://name/...`` mesh names resolve under: each holds
            the package ``name`` as a subfolder, or is that package's folder.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"cannot read the file: {e.strerror}", file=str(path)) from None
    return _load(data, str(path), strict, floating, path.resolve().parent, package_dirs)


def load_urdf_string(text, *, strict: bool = True, base_dir=None, floating: Optional[bool] = None,
                     package_dirs=()) -> Model:
    """Load URDF text into a Model (see :func:`load_urdf`); relative mesh file names
    resolve against ``base_dir`` (default: the working directory)."""
    file = str(Path(base_dir) / _STRING_FILE) if base_dir is not None else _STRING_FILE
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return _load(text, file, strict, floating, base, package_dirs)


__all__ = ["load_urdf", "load_urdf_string"]
