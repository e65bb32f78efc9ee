"""Frames of a World: a Taichi ray caster (raycast) giving RGB images headless, on CPU and
GPU, and a dependency-free PNG writer (png).

``from taigym.physics.render import Renderer`` (and the cameras, ``tile``) reach the ray
caster; it is imported on first use, so that writing a PNG does not start Taichi."""

_RAYCAST = ("FreeCamera", "Renderer", "TrackingCamera", "orbit_frame", "tile")


def __getattr__(name):
    if name in _RAYCAST:
        from . import raycast

        return getattr(raycast, name)
    raise AttributeError(f"module 'taigym.physics.render' has no attribute {name!r}")


__all__ = list(_RAYCAST)
