"""The DeepMind Control Suite's task terms, a module per domain, each reward written as
dm_control's own ``get_reward`` reads (operators and ``tolerance`` on the step's registers,
physics/step/program.py), so that it computes the same number on the same state."""

from . import (  # noqa: F401
    acrobot,
    ball_in_cup,
    cartpole,
    cheetah,
    finger,
    fish,
    hopper,
    humanoid,
    manipulator,
    pendulum,
    point_mass,
    reacher,
    swimmer,
    walker,
)
