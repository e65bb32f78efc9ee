"""What a task is: the YAML schema, strict loading, and the terms a task is made of.

    from taigym.tasks import load_task_config, Task
    cfg = load_task_config("TaiGym/Reacher-v0", ["simulation.precision=float32"])
    task = Task(cfg)          # the robot Model with terms bound to it

Terms are registered by name in :mod:`tasks.terms` (see :mod:`tasks.registry`). A term's
``ops`` may shape rewards with ``tolerance`` (dm_control's ``rewards.tolerance`` on registers):

    from taigym.tasks import tolerance
"""

from .errors import ConfigError
from .loader import load_task_config, task_files
from .registry import Term, TermError, register
from .schema import TaskConfig


def __getattr__(name):
    # Task pulls in the physics package; configs can be validated without it.
    if name == "Task":
        from .task import Task

        return Task
    if name == "tolerance":
        from taigym.physics.step.program import tolerance

        return tolerance
    raise AttributeError(f"module 'tasks' has no attribute {name!r}")


__all__ = ["ConfigError", "Task", "TaskConfig", "Term", "TermError", "load_task_config", "register", "task_files",
           "tolerance"]
