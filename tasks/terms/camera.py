"""The ``camera`` observation: uint8 RGB frames of a model camera, the "from pixels" setting.

Unlike the other observations it is no World-program instruction: the env renders it with
the Taichi ray caster (``World.render``, the call ``taigym play`` makes) after each step's
launch, on the World's device, for every env. envs/_pixels.py makes the spaces and frames.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import did_you_mean
from ..ranges import CameraIndex, ImageSide
from ..registry import Term, TermError, register


@dataclass(frozen=True)
class CameraView:
    """What a camera term renders: the model camera (its index), its key in a Dict
    observation (the camera's name, ``camera<index>`` for an unnamed one) and the size."""

    camera: int
    key: str
    width: int
    height: int
    shadows: bool

    @property
    def shape(self) -> tuple:
        return (self.height, self.width, 3)


def _camera_index(model, camera) -> int:
    cameras = (model.visual or {}).get("cameras", [])
    names = [c.get("name", "") for c in cameras]
    known = [n for n in names if n]
    if not cameras:
        raise TermError(f"the robot model has no camera (got {camera!r})", "camera")
    if isinstance(camera, bool) or not isinstance(camera, (int, str)):
        raise TermError(f"camera must be a camera name or index, got {camera!r}", "camera")
    if isinstance(camera, int):
        if not 0 <= camera < len(cameras):
            raise TermError(f"camera index {camera} is not in [0, {len(cameras)}); the model's cameras: {known}",
                            "camera")
        return camera
    if camera not in names:
        hint = did_you_mean(camera, known)
        raise TermError(f"the robot model has no camera {camera!r}; its cameras: {known}"
                        + (f"; did you mean {hint!r}?" if hint else ""), "camera")
    return names.index(camera)


@register("observation")
def camera(model, *, camera: CameraIndex | str, width: ImageSide = 84, height: ImageSide = 84, shadows: bool = True):
    """uint8 RGB frames (height, width, 3) of a model camera (name or index), ray cast each step."""
    index = _camera_index(model, camera)
    name = model.visual["cameras"][index].get("name", "")
    return Term(view=CameraView(index, name or f"camera{index}", int(width), int(height), bool(shadows)))
