"""Frames for ``render_mode="rgb_array"``: a task config's ``render`` section as a Renderer.

The camera names in the config are checked against the robot model when the env is made,
so a misspelt camera is refused before any simulation; the Renderer itself (and its
kernel compilation) waits for the first frame.
"""

from __future__ import annotations

import numpy as np
from taigym.tasks.errors import did_you_mean
from taigym.tasks.loader import error_at

RENDER_MODES = ["rgb_array"]


def check_render_mode(render_mode) -> None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode must be None or one of {RENDER_MODES}, got {render_mode!r}")


def camera_from_config(task):
    """The camera of the task's ``render`` section: a model camera's name or a TrackingCamera."""
    from taigym.physics.render import TrackingCamera

    cfg, model = task.config, task.model
    settings = cfg.render
    if settings.camera is not None:
        names = [c.get("name", "") for c in (model.visual or {}).get("cameras", [])]
        if settings.camera not in names:
            known = [n for n in names if n]
            raise error_at(cfg, ("render", "camera"), f"the robot model has no camera {settings.camera!r}",
                           expected=f"one of {known}" if known else "no camera (the model has none)",
                           suggestion=did_you_mean(settings.camera, known))
        return settings.camera
    if settings.track_body is not None and settings.track_body not in model.body_name:
        known = [n for n in model.body_name if n]
        raise error_at(cfg, ("render", "track_body"), f"the robot model has no body {settings.track_body!r}",
                       expected="a body name of the model", suggestion=did_you_mean(settings.track_body, known))
    return TrackingCamera(body=settings.track_body, distance=settings.distance, azimuth=settings.azimuth,
                          elevation=settings.elevation, fovy=settings.fovy)


class FrameSource:
    """Renders a World's envs with the task's render settings; built on the first frame."""

    def __init__(self, task):
        self.task = task
        self.camera = camera_from_config(task)
        self._renderer = None

    def frames(self, world, env_ids=None) -> np.ndarray:
        """uint8 (n, height, width, 3) frames of ``world``'s envs (all, or ``env_ids``)."""
        if self._renderer is None:
            from taigym.physics.render import Renderer

            settings = self.task.config.render
            self._renderer = Renderer(self.task.model, width=settings.width, height=settings.height,
                                      device=world.device, camera=self.camera, shadows=settings.shadows)
        return self._renderer.render(world, env_ids)
