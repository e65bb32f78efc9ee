"""A task file of one's own, outside the package, through every constructor the README shows."""

import shutil

import gymnasium as gym
import numpy as np
import pytest
from taigym.envs.vector import TaiGymVectorEnv
from taigym.tasks.loader import config_dir

import taigym


def _copy(tmp_path, *names):
    for name in names:
        shutil.copy(config_dir() / "tasks" / name, tmp_path / name)
    return str(tmp_path / names[0])


def test_single_and_vector_envs_load_a_task_file_from_anywhere(tmp_path):
    path = _copy(tmp_path, "inverted_pendulum.yaml", "_gymnasium_v5.yaml")
    single = gym.make("TaiGym/InvertedPendulum-v0", config=path)
    obs, _ = single.reset(seed=0)
    assert obs.shape == (4,) and single.step(np.zeros(1))[0].shape == (4,)
    vec = gym.make_vec("TaiGym/InvertedPendulum-v0", num_envs=3, config=path)
    assert vec.reset(seed=0)[0].shape == (3, 4)
    assert TaiGymVectorEnv(path, 2).reset(seed=0)[0].shape == (2, 4)


def test_make_parallel_takes_a_task_file_path(tmp_path):
    path = _copy(tmp_path, "box_push.yaml")
    env = taigym.make_parallel(path, render_mode=None)
    obs, _ = env.reset(seed=0)
    assert set(obs) == set(env.possible_agents)
    aec = taigym.make_aec(path)
    aec.reset(seed=0)
    assert aec.agent_selection in env.possible_agents


def _shipped_task_files():
    return sorted(p.name for p in (config_dir() / "tasks").glob("*.yaml") if not p.name.startswith("_"))


@pytest.mark.parametrize("name", _shipped_task_files())
def test_a_copy_of_any_shipped_task_config_loads_alone_and_steps(tmp_path, name):
    # its extends: parents are not copied: they are found among the shipped configs
    from taigym.tasks.loader import load_task_config

    path = _copy(tmp_path, name)
    cfg = load_task_config(path)
    if cfg.agents:
        env = taigym.make_parallel(path)
        env.reset(seed=0)
        env.step({agent: env.action_space(agent).sample() for agent in env.agents})
    else:
        env = TaiGymVectorEnv(path, 1)
        env.reset(seed=0)
        env.step(env.action_space.sample())


def test_a_missing_parent_names_both_places_searched(tmp_path):
    from taigym.tasks.errors import ConfigError
    from taigym.tasks.loader import load_task_config

    path = tmp_path / "orphan.yaml"
    path.write_text("extends: _no_such_parent.yaml\nid: TaiGym/Orphan-v0\n")
    with pytest.raises(ConfigError, match=r"orphan\.yaml, line 1: key 'extends': parent config '_no_such_parent\.yaml' "
                                          r"not found next to this file \(.*\) or among the shipped configs"):
        load_task_config(path)
