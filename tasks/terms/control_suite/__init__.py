"""The DeepMind Control Suite's task terms, a module per domain, each reward written as
dm_control's own ``get_reward`` reads (operators and ``tolerance`` on the step's registers,
physics/step/program.py), so that it computes the same number on the same state."""

from . import cartpole  # noqa: F401
from . import fish  # noqa: F401
from . import acrobot  # noqa: F401
from . import pendulum  # noqa: F401
from . import point_mass  # noqa: F401
from . import reacher  # noqa: F401
from . import cheetah  # noqa: F401
from . import hopper  # noqa: F401
from . import walker  # noqa: F401
from . import swimmer  # noqa: F401
from . import ball_in_cup  # noqa: F401
from . import humanoid  # noqa: F401
from . import finger  # noqa: F401
from . import manipulator  # noqa: F401
