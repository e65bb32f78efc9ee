"""From a task config's ``robot`` and ``simulation`` sections to a physics Model.

Assets are a path relative to ``configs/``, ``package:file`` for a model shipped by an
installed package (``gymnasium:ant.xml`` is gymnasium's bundled MuJoCo model), or
``module:function(arguments)`` for a model a package builds in code: the function is called
with those literal arguments and returns MJCF text, or (text, {include file: contents}) as
dm_control's ``get_model_and_assets`` does (``dm_control.suite.swimmer:get_model_and_assets(6)``
is its six-link swimmer). A ``scene``
file, found the same way, adds what a bare robot file lacks (a floor, a target marker).
Overrides make an edited copy of the imported Model; the Model itself stays immutable.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import re
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
from taigym.physics.compiler.mjcf import load_mjcf_string
from taigym.physics.model import (GEOM_HFIELD, GEOM_MESH, INTEGRATORS, JNT_HINGE, JNT_NV, JNT_SLIDE, LIMIT_CUBIC,
                                  LIMIT_MODELS, TRN_JOINT)

from taigym import physics

from .errors import did_you_mean
from .loader import CONFIG_DIR, error_at
from .schema import TaskConfig

# where a package keeps its robot files, for packages whose assets are not at the top
_PACKAGE_ASSET_DIRS = {"gymnasium": ("envs", "mujoco", "assets")}


# how to install packages whose robots task files use, where plain ``pip install`` is not it
INSTALL_HINTS = {
    # its own requirements pin an older MuJoCo (and Warp); only its robot files are needed
    "mjlab": "pip install --no-deps mjlab==1.6.0",
    "dm_control": "pip install dm-control",  # the Control Suite's models
}


def resolve_asset(cfg: TaskConfig) -> Path:
    return _resolve(cfg, cfg.robot.asset, ("robot", "asset"))


def _resolve(cfg: TaskConfig, spec: str, key) -> Path:
    """A ``configs/``-relative path or ``package:file`` as a file on disk."""
    if ":" in spec:
        package, name = spec.split(":", 1)
        found = importlib.util.find_spec(package) if package.isidentifier() else None
        if found is None or not found.submodule_search_locations:
            hint = INSTALL_HINTS.get(package, f"pip install {package}")
            raise error_at(cfg, key, f"package {package!r} of {spec!r} is not installed; install it with: {hint}",
                           expected="an installed package name before ':'")
        folder = Path(found.submodule_search_locations[0]).joinpath(*_PACKAGE_ASSET_DIRS.get(package, ()))
    else:
        folder, name = CONFIG_DIR, spec
    path = folder / name
    if not path.is_file():
        siblings = [p.name for p in path.parent.glob("*") if p.suffix in (".xml", ".urdf")] if path.parent.is_dir() else []
        raise error_at(cfg, key, f"{key[-1]} file not found: {path}",
                       expected="an .xml (MJCF) or .urdf file", suggestion=did_you_mean(path.name, siblings))
    return path


# ``module:function(arguments)``; only names and literal arguments, never an expression
_GENERATOR = re.compile(r"([A-Za-z_][\w.]*):([A-Za-z_]\w*)\((.*)\)", re.DOTALL)
_GENERATOR_FORM = "module:function(literal arguments), e.g. dm_control.suite.swimmer:get_model_and_assets(6)"


def build_model(cfg: TaskConfig) -> physics.Model:
    """The robot's Model with the config's simulation options and overrides applied."""
    generator = _GENERATOR.fullmatch(cfg.robot.asset)
    model = _generated(cfg, *generator.groups()) if generator else _from_file(cfg)
    edits = {"opt": _options(cfg, model)}
    _joint_edits(cfg, model, edits)
    _body_edits(cfg, model, edits)
    _geom_edits(cfg, model, edits)
    _actuator_edits(cfg, model, edits)
    return dataclasses.replace(model, **edits).freeze()


def _from_file(cfg: TaskConfig) -> physics.Model:
    path = resolve_asset(cfg)
    try:
        return _load(cfg, path)
    except (physics.ModelError, OSError, ValueError) as e:  # the importer names the element; we add the key
        raise error_at(cfg, ("robot", "asset"), f"cannot load {path.name}: {e}") from None


def _literal_arguments(cfg, arguments: str) -> tuple[list, dict]:
    try:
        call = ast.parse(f"f({arguments})", mode="eval").body
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
        if len(kwargs) != len(call.keywords):
            raise ValueError
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise error_at(cfg, ("robot", "asset"), f"the arguments ({arguments}) are not literals",
                       expected=_GENERATOR_FORM) from None
    return args, kwargs


def _generator(cfg, module_name: str, function_name: str):
    key = ("robot", "asset")
    package = module_name.split(".")[0]
    if importlib.util.find_spec(package) is None:
        hint = INSTALL_HINTS.get(package, f"pip install {package}")
        raise error_at(cfg, key, f"package {package!r} is not installed; install it with: {hint}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise error_at(cfg, key, f"cannot import {module_name!r}: {e}", expected=_GENERATOR_FORM) from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise error_at(cfg, key, f"{module_name!r} has no function {function_name!r}", expected=_GENERATOR_FORM,
                       suggestion=did_you_mean(function_name, [n for n in dir(module) if not n.startswith("_")]))
    return module, function


def _generated(cfg: TaskConfig, module_name: str, function_name: str, arguments: str) -> physics.Model:
    """The model ``module.function(*arguments)`` builds, its includes from the assets it
    returns or else beside the module (where dm_control's lie)."""
    key = ("robot", "asset")
    args, kwargs = _literal_arguments(cfg, arguments)
    module, function = _generator(cfg, module_name, function_name)
    if cfg.robot.scene is not None:
        raise error_at(cfg, ("robot", "scene"), "a scene is included into a robot file, not a generated model")
    try:
        made = function(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (the generator's own error, whatever it is, named at the key)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise error_at(cfg, key, f"{cfg.robot.asset} failed: {type(e).__name__}: {first}") from None
    text, assets = made if isinstance(made, tuple) and len(made) == 2 else (made, None)
    if not isinstance(text, (str, bytes)):
        raise error_at(cfg, key, f"{cfg.robot.asset} returned {type(made).__name__}",
                       expected="MJCF text, or (text, {include file: contents})")
    try:
        folder = Path(module.__file__).parent if getattr(module, "__file__", None) else None
        return load_mjcf_string(text, base_dir=folder, assets=assets)
    except (physics.ModelError, OSError, ValueError) as e:
        raise error_at(cfg, key, f"cannot load the model of {cfg.robot.asset}: {e}") from None


def _load(cfg: TaskConfig, path: Path) -> physics.Model:
    """The robot file, with the scene file's elements included after its own.

    The two are included into one model whose folder is the robot's, so that the robot's
    relative mesh paths resolve as in its own package, wherever the scene file lies.
    """
    if cfg.robot.scene is None:
        return physics.load_model(path)
    if path.suffix.lower() != ".xml":
        raise error_at(cfg, ("robot", "scene"), "a scene is included into an MJCF robot", expected="an .xml asset")
    scene = _resolve(cfg, cfg.robot.scene, ("robot", "scene"))
    text = (f"<mujoco model={quoteattr(path.stem)}><include file={quoteattr(str(path.resolve()))}/>"
            f"<include file={quoteattr(str(scene.resolve()))}/></mujoco>")
    return load_mjcf_string(text, base_dir=path.parent)


def reset_pose(cfg: TaskConfig, model: physics.Model) -> np.ndarray:
    """The pose episodes start from before reset noise: ``robot.init_qpos``, or qpos0.

    It is not written into the Model's qpos0: hinge and slide joints measure their angle
    from qpos0 (MuJoCo's joint reference), so moving it would move the bodies' zero pose.
    """
    if cfg.robot.init_qpos is None:
        return np.array(model.qpos0, dtype=np.float64)
    if len(cfg.robot.init_qpos) != model.nq:
        raise error_at(cfg, ("robot", "init_qpos"), f"has {len(cfg.robot.init_qpos)} values",
                       expected=f"{model.nq} values (the model's nq)")
    return np.array(cfg.robot.init_qpos, dtype=np.float64)


def actuator_index(cfg, model, ref: str, path) -> int:
    """An actuator by its name, or by the name of the joint it drives (many assets leave
    actuators unnamed)."""
    if ref in model.actuator_name:
        return model.actuator_name.index(ref)
    for u in range(model.nu):
        if model.actuator_trntype[u] == TRN_JOINT and model.jnt_name[model.actuator_trnid[u]] == ref:
            return u
    known = [n for n in model.actuator_name if n] + [
        model.jnt_name[model.actuator_trnid[u]] for u in range(model.nu) if model.actuator_trntype[u] == TRN_JOINT]
    raise error_at(cfg, path, f"no actuator named {ref!r} and no actuated joint of that name",
                   expected=f"one of {known}", suggestion=did_you_mean(ref, known))


def _options(cfg, model):
    sim = cfg.simulation
    changes = {}
    if sim.timestep is not None:
        changes["timestep"] = sim.timestep
    if sim.integrator is not None:
        changes["integrator"] = INTEGRATORS[sim.integrator]
        if sim.integrator == "implicitfast" and (model.opt.density > 0 or model.opt.viscosity > 0):
            raise error_at(cfg, ("simulation", "integrator"),
                           "implicitfast is not supported with fluid forces (the robot's density or viscosity)")
    for key in ("solver", "cone"):
        if getattr(sim, key) is not None:
            changes[key] = getattr(sim, key)
    if sim.solver_iterations is not None:
        changes["iterations"] = sim.solver_iterations
    if sim.solver_tolerance is not None:
        changes["tolerance"] = sim.solver_tolerance
    return dataclasses.replace(model.opt, **changes).freeze()


def _named(cfg, names, name, kind, path):
    if name in names:
        return names.index(name)
    raise error_at(cfg, path, f"no {kind} named {name!r} in the robot", expected=f"one of {[n for n in names if n]}",
                   suggestion=did_you_mean(name, [n for n in names if n]))


def _copy(model, edits, field):
    if field not in edits:
        edits[field] = np.array(getattr(model, field))
    return edits[field]


def _joint_edits(cfg, model, edits):
    for name, o in cfg.robot.joints.items():
        j = _named(cfg, model.jnt_name, name, "joint", ("robot", "joints", name))
        dof = model.jnt_dofadr[j]
        if o.range is not None:
            _copy(model, edits, "jnt_range")[j] = o.range
            _copy(model, edits, "jnt_limited")[j] = 1 if o.limited is None else int(o.limited)
        elif o.limited is not None:
            _copy(model, edits, "jnt_limited")[j] = int(o.limited)
        if o.stiffness is not None:
            _copy(model, edits, "jnt_stiffness")[j] = o.stiffness
        for key in ("damping", "armature"):
            if getattr(o, key) is not None:
                _copy(model, edits, f"dof_{key}")[dof] = getattr(o, key)
        if o.limit is not None:
            _limit_edits(cfg, model, edits, name, j, o.limit, o.limited is not False)
        if o.drive is not None:
            dofs = slice(dof, dof + _JOINT_DOFS[int(model.jnt_type[j])])
            for key, field in (("stiffness", "stiffness"), ("damping", "damping"), ("force_limit", "forcelimit"),
                               ("acceleration", "acceleration")):
                value = getattr(o.drive, key)
                if value is not None:
                    _copy(model, edits, f"dof_drive_{field}")[dofs] = value


_JOINT_DOFS = JNT_NV


def _limit_edits(cfg, model, edits, name, j, limit, limited):
    path = ("robot", "joints", name, "limit")
    kind = LIMIT_MODELS[limit.model]
    if kind == LIMIT_CUBIC and model.jnt_type[j] not in (JNT_HINGE, JNT_SLIDE):
        raise error_at(cfg, path + ("model",), "the cubic limit is for hinge and slide joints")
    strength = limit.strength if limit.strength is not None else model.jnt_limit_strength[j]
    if kind == LIMIT_CUBIC and not strength > 0:
        raise error_at(cfg, path + ("strength",), "a cubic limit needs a strength > 0")
    _copy(model, edits, "jnt_limit_model")[j] = kind
    _copy(model, edits, "jnt_limited")[j] = int(limited)  # a limit model limits the joint
    for key in ("strength", "stiffness", "damping", "distance", "restitution", "bounce"):
        if getattr(limit, key) is not None:
            _copy(model, edits, f"jnt_limit_{key}")[j] = getattr(limit, key)


def _geom_edits(cfg, model, edits):
    for name, o in cfg.robot.geoms.items():
        g = _named(cfg, model.geom_name, name, "geom", ("robot", "geoms", name))
        if o.friction is not None:
            _copy(model, edits, "geom_friction")[g, 0] = o.friction
        if o.size is not None:
            if model.geom_type[g] in (GEOM_MESH, GEOM_HFIELD):
                raise error_at(cfg, ("robot", "geoms", name, "size"), "a mesh's or height field's size comes "
                               "from its asset, not from the geom")
            _copy(model, edits, "geom_size")[g, : len(o.size)] = o.size


def _body_edits(cfg, model, edits):
    for name, o in cfg.robot.bodies.items():
        b = _named(cfg, model.body_name, name, "body", ("robot", "bodies", name))
        if o.mass is not None:
            if model.body_mass[b] <= 0:
                raise error_at(cfg, ("robot", "bodies", name, "mass"), "the body has no mass to rescale")
            ratio = o.mass / model.body_mass[b]
            # scale inertia with mass: the body keeps its shape and density distribution
            _copy(model, edits, "body_mass")[b] = o.mass
            _copy(model, edits, "body_inertia")[b] *= ratio
    if "body_mass" in edits:
        subtree = np.array(edits["body_mass"])
        for b in range(model.nbody - 1, 0, -1):
            subtree[model.body_parentid[b]] += subtree[b]
        edits["body_subtreemass"] = subtree


def _actuator_edits(cfg, model, edits):
    for name, o in cfg.robot.actuators.items():
        u = actuator_index(cfg, model, name, ("robot", "actuators", name))
        if o.gear is not None:
            _copy(model, edits, "actuator_gear")[u, 0] = o.gear
        if o.ctrlrange is not None:
            _copy(model, edits, "actuator_ctrlrange")[u] = o.ctrlrange
            _copy(model, edits, "actuator_ctrllimited")[u] = 1
        for gain, column in (("kp", 1), ("kv", 2)):
            value = getattr(o, gain)
            if value is None:
                continue
            if model.actuator_biasprm[u, column] == 0:
                drive = "position" if gain == "kp" else "velocity"
                raise error_at(cfg, ("robot", "actuators", name, gain), f"actuator is not a {drive} drive")
            _copy(model, edits, "actuator_gainprm")[u, 0] = value
            _copy(model, edits, "actuator_biasprm")[u, column] = -value
