"""The cameras a Renderer takes: plain values, apart from the ray caster so that a task
config's camera is checked when an env is made without importing (and decorating) the
ray caster's Taichi functions."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class FreeCamera:
    """A camera orbiting a fixed point, as MuJoCo's free ``mjvCamera``.

    Attributes:
        lookat: the point looked at [m] (3,).
        distance: from ``lookat`` to the camera [m].
        azimuth: heading of the view direction [deg]; 90 looks along +y, so +x is to the right.
        elevation: pitch of the view direction [deg]; negative looks down.
        fovy: vertical field of view [deg].
    """

    lookat: tuple = (0.0, 0.0, 0.0)
    distance: float = 3.0
    azimuth: float = 90.0
    elevation: float = -20.0
    fovy: float = 45.0


@dataclasses.dataclass(frozen=True)
class TrackingCamera:
    """A free camera whose look-at point follows a body in each env (MuJoCo's tracking camera).

    Attributes:
        body: body name or id; None: the root of the first body that can translate freely,
            or the model's centre when no body can.
        distance: [m]; None: from the model's size.
        azimuth: [deg], as :class:`FreeCamera`.
        elevation: [deg], as :class:`FreeCamera`.
        fovy: vertical field of view [deg].
    """

    body: int | str | None = None
    distance: float | None = None
    azimuth: float = 90.0
    elevation: float = -20.0
    fovy: float = 45.0


Camera = FreeCamera | TrackingCamera | int | str | None
