"""Built-in terms; importing this package registers them (see :mod:`tasks.registry`)."""

from . import (  # noqa: F401
    camera,
    locomotion,
    manipulation,
    observations,
    randomization,
    resets,
    rewards,
    scene,
    terminations,
    control_suite,
)
