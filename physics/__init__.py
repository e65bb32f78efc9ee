"""taigym's batched rigid-body engine: MuJoCo's computation model in Taichi.

    from taigym import physics
    model = physics.load_model("robot.xml")          # MJCF; ".urdf" -> URDF
    world = physics.World(model, num_envs=1024, device="cpu", precision="float32")
    world.set_state(qpos=Q, qvel=V)
    world.step(n=10)
    world.get("xpos")
"""

from .compiler.builder import D6Axis, JointLimit, ModelBuilder
from .errors import ModelError, WorldError
from .model import Model, Option


def load_model(path, *, strict: bool = True) -> Model:
    """Load an MJCF (``.xml``) or URDF (``.urdf``) file into a Model.

    ``strict=False`` turns unsupported elements and attributes from errors into one
    warning that lists everything ignored.
    """
    from pathlib import Path

    suffix = Path(path).suffix.lower()
    if suffix == ".urdf":
        from .compiler.urdf import load_urdf

        return load_urdf(path, strict=strict)
    from .compiler.mjcf import load_mjcf

    return load_mjcf(path, strict=strict)


def __getattr__(name):
    # The Taichi side is imported on first use so that building models stays cheap.
    if name == "World":
        from .world import World

        return World
    if name == "Renderer":
        from .render.raycast import Renderer

        return Renderer
    if name == "eval_fk":
        from .fk import eval_fk

        return eval_fk
    if name == "eval_ik":
        from .compiler.articulation import eval_ik

        return eval_ik
    raise AttributeError(f"module 'taigym.physics' has no attribute {name!r}")


__all__ = ["D6Axis", "JointLimit", "Model", "ModelBuilder", "ModelError", "Option", "Renderer", "World", "WorldError", "eval_fk", "eval_ik", "load_model"]
