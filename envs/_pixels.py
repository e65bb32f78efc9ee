"""Observations from pixels: the frames of a task's ``camera`` terms (tasks/terms/camera.py).

Every env's frames are ray cast by ``World.render`` (the call ``taigym play`` and
``render_mode="rgb_array"`` make, on the World's device) after the step's launch, so they
show the state the step's observation is of: a reset env's, its reset state.

The observation space, as Gymnasium's PixelObservationWrapper and dm_control's pixels
wrapper key them:

- camera terms only: one camera, a uint8 Box (height, width, 3); several, a Dict keyed by
  the cameras' names;
- state terms beside them: a Dict of ``"state"`` (the flat float Box of the other terms) and
  ``"pixels"`` (one camera) or the cameras' names (several).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

STATE_KEY, PIXELS_KEY = "state", "pixels"


class Pixels:
    """The latest frames of a World's envs, one uint8 (num_envs, H, W, 3) array per camera term."""

    def __init__(self, task, world):
        self.world = world
        self.views = [o.term.view for o in task.cameras]
        self.keys = [PIXELS_KEY] if len(self.views) == 1 else [v.key for v in self.views]
        self.with_state = task.obs_size > 0
        self.frames = [np.zeros((world.num_envs, *v.shape), dtype=np.uint8) for v in self.views]

    def space(self, state_space: spaces.Box) -> spaces.Space:
        """One env's observation space (module docstring)."""
        boxes = {k: spaces.Box(0, 255, v.shape, dtype=np.uint8) for k, v in zip(self.keys, self.views)}
        if not self.with_state and len(boxes) == 1:
            return boxes[PIXELS_KEY]
        return spaces.Dict({STATE_KEY: state_space, **boxes} if self.with_state else boxes)

    def render(self, env_ids=None) -> None:
        """The frames of all envs (or ``env_ids``) at the World's state now."""
        for k, view in enumerate(self.views):
            image = self.world.render(env_ids, width=view.width, height=view.height, camera=view.camera,
                                      shadows=view.shadows)
            if env_ids is None:
                self.frames[k] = image
            else:
                self.frames[k][env_ids] = image

    def observation(self, state: np.ndarray, rows=slice(None)):
        """The observation of envs ``rows`` (all; one env for an int), ``state`` theirs: copies."""
        pixels = {k: np.array(f[rows]) for k, f in zip(self.keys, self.frames)}
        if not self.with_state and len(pixels) == 1:
            return pixels[PIXELS_KEY]
        return {STATE_KEY: state, **pixels} if self.with_state else pixels
