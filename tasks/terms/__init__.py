"""Built-in terms; importing this package registers them (see :mod:`tasks.registry`)."""

from . import locomotion, manipulation, observations, randomization, resets, rewards, terminations  # noqa: F401
