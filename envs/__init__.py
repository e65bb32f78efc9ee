"""Gymnasium and PettingZoo faces of taigym's tasks.

Importing this package registers ``TaiGym/<Task>-v0`` for every single-agent task config in
``configs/tasks``, each with a single env (``gym.make``) and the native vector env
(``gym.make_vec``, all envs in one World):

    import gymnasium as gym, taigym
    env = gym.make("TaiGym/Reacher-v0")
    vec = gym.make_vec("TaiGym/Reacher-v0", num_envs=1024, autoreset_mode="SameStep")

Multi-agent tasks are PettingZoo envs: ``taigym.make_parallel(name)``, ``taigym.make_aec(name)``,
``taigym.list_parallel()``. A task file of one's own (its own terms included) is registered by
``taigym.register_task("my_task.yaml")``. ``taigym.envs.sb3.TaiGymVecEnv`` drives stable-baselines3 on one World.
"""

from __future__ import annotations

import gymnasium as gym
from taigym.tasks.compose import read_config_file
from taigym.tasks.loader import task_files

_PARALLEL: dict[str, str] = {}  # multi-agent id -> config path


def _register_all():
    for path in task_files():
        data = read_config_file(path)
        if isinstance(data.get("id"), str) and data["id"] not in gym.registry:
            _register(path, data)  # a config without a proper id is refused when someone makes it


def _register(path, data):
    task_id = data["id"]
    if data.get("agents"):
        _PARALLEL[task_id] = str(path)
        return
    gym.register(id=task_id, entry_point="taigym.envs.single:TaiGymEnv",
                 vector_entry_point="taigym.envs.vector:TaiGymVectorEnv",
                 max_episode_steps=data.get("episode_length"), kwargs={"config": str(path)})


def register_task(path) -> str:
    """Register a task file of one's own under its ``id`` (``gym.make``/``gym.make_vec``, or
    ``make_parallel`` for a multi-agent task) and return the id. The file is validated in
    full, its own terms included, before anything is registered; registering the same id
    again points it at the new file."""
    from pathlib import Path

    from taigym.tasks.task import Task

    path = str(Path(path).resolve())
    task = Task.from_source(path)
    task_id = task.config.id
    if task_id in gym.registry:
        del gym.registry[task_id]
    _register(path, {"id": task_id, "agents": bool(task.agents), "episode_length": task.episode_length})
    return task_id


def list_parallel() -> list[str]:
    """Ids of the multi-agent tasks."""
    return sorted(_PARALLEL)


def make_parallel(name: str, render_mode=None, **overrides):
    """A PettingZoo ParallelEnv of a multi-agent task (id or its short name, e.g. "Swimmer2x1",
    or the path of a task YAML file).

    ``render_mode`` is None or "rgb_array", as PettingZoo's constructors take it. Other
    keywords override config keys, with ``__`` for dots: ``simulation__frame_skip=2``.
    """
    from .multiagent import TaiGymParallelEnv

    return TaiGymParallelEnv(_parallel_config(name), render_mode=render_mode,
                             overrides={k.replace("__", "."): v for k, v in overrides.items()})


def make_aec(name: str, render_mode=None, **overrides):
    """The AEC (turn-based) view of :func:`make_parallel`, through PettingZoo's converter."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(make_parallel(name, render_mode=render_mode, **overrides))


def _parallel_config(name: str) -> str:
    if name.endswith((".yaml", ".yml")):  # a task file of one's own, anywhere
        return name
    for task_id, path in _PARALLEL.items():
        if name in (task_id, task_id.split("/")[-1].rsplit("-v", 1)[0]):
            return path
    from taigym.tasks.errors import did_you_mean

    hint = did_you_mean(name, list(_PARALLEL))
    raise KeyError(f"no multi-agent task {name!r}; known: {list_parallel()}" + (f"; did you mean {hint!r}?" if hint else ""))


_register_all()

__all__ = ["list_parallel", "make_aec", "make_parallel", "register_task"]
