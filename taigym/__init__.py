"""taigym: batched rigid-body physics in Taichi, with Gymnasium, PettingZoo and
stable-baselines3 environments on top.

    import gymnasium as gym
    import taigym                                # registers TaiGym/<Task>-v0
    env = gym.make("TaiGym/Hopper-v0")

The subpackages: ``taigym.physics`` (the engine; knows nothing of RL), ``taigym.tasks``
(task configs and their terms), ``taigym.envs`` (Gymnasium, PettingZoo and SB3 faces),
``taigym.scripts`` (the ``taigym`` command) and ``taigym.configs`` (task YAML and robot
assets, as package data).
"""

from pathlib import Path as _Path

# An installed taigym holds its subpackages in this folder (pyproject.toml maps the
# repository's top-level folders in); a source checkout keeps them beside it.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "physics" / "__init__.py").is_file():
    __path__.append(str(_checkout))

from .envs import list_parallel, make_aec, make_parallel, register_task  # noqa: E402  (registers the ids)

__version__ = "0.1.0"
__all__ = ["list_parallel", "make_aec", "make_parallel", "register_task"]
