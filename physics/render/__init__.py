"""Frames of a World: a Taichi ray caster (raycast) giving RGB images headless, on CPU and
GPU, and a dependency-free PNG writer (png).

``from taigym.physics.render import Renderer`` (and the cameras, ``tile``) reach the ray
caster; it is imported on first use, so that writing a PNG does not start Taichi."""

_RAYCAST = ("Renderer", "orbit_frame", "tile")
_CAMERAS = ("FreeCamera", "TrackingCamera")  # plain values: no Taichi


def __getattr__(name):
    if name in _CAMERAS:
        from . import cameras

        return getattr(cameras, name)
    if name in _RAYCAST:
        from . import raycast

        return getattr(raycast, name)
    raise AttributeError(f"module 'taigym.physics.render' has no attribute {name!r}")


__all__ = ["FreeCamera", "Renderer", "TrackingCamera", "orbit_frame", "tile"]
