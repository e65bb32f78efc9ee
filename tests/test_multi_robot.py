"""Scenes of several robots as PettingZoo envs: SumoAnts and BoxPush.

Each agent is a whole robot in one shared World, so the tests check what only a shared
scene has: robots move one another through contacts, each agent's own reward terms score
it (zero-sum in Sumo, shared in BoxPush), and a terminal condition of either robot ends the
episode of both. States are set by hand in the env's World, then one env step runs.
"""

import numpy as np
import pytest
from taigym.tasks import ConfigError, Task, load_task_config
from taigym.tasks import reference as R
from taigym.tasks.compose import read_config_file
from taigym.tasks.loader import TASK_DIR

from taigym import envs

# SumoAnts coordinates: each ant is a free joint (7 qpos, 6 qvel) and eight hinges
RED_Q, BLUE_Q, RED_V, BLUE_V = 0, 15, 0, 14
# BoxPush coordinates: goal x, y; box x, y, yaw; left x, y; right x, y
GOAL, BOX, LEFT, RIGHT = slice(0, 2), slice(2, 5), slice(5, 7), slice(7, 9)


@pytest.fixture(scope="module")
def sumo():
    return envs.make_parallel("SumoAnts")


@pytest.fixture(scope="module")
def box_push():
    return envs.make_parallel("BoxPush")


def set_scene(env, qpos, qvel=None):
    """Reset ``env``, then put its World at (qpos, qvel) as if the episode started there."""
    env.reset(seed=0)
    world, model = env._batch.world, env.task.model
    qvel = np.zeros(model.nv) if qvel is None else qvel
    world.set_state(qpos=qpos[None], qvel=qvel[None])
    world.forward()


def step_idle(env, steps=1, actions=None):
    out = None
    for _ in range(steps):
        acts = {a: np.zeros(env.action_space(a).shape) for a in env.agents}
        acts.update(actions or {})
        out = env.step(acts)
    return out


def qpos_of(env, env_world=0):
    return env._batch.world.get("qpos")[env_world]


# --- PettingZoo API --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["SumoAnts", "BoxPush"])
def test_parallel_api(name, request):
    parallel_test = pytest.importorskip("pettingzoo.test")
    env = request.getfixturevalue({"SumoAnts": "sumo", "BoxPush": "box_push"}[name])
    assert f"TaiGym/{name}-v0" in envs.list_parallel()
    parallel_test.parallel_api_test(env, num_cycles=15)
    env.reset(seed=1)
    assert env.state().shape == env.state_space.shape


def test_sumo_agents_are_whole_robots(sumo):
    assert sumo.possible_agents == ["red", "blue"]
    names = sumo.task.model.actuator_name
    for agent in sumo.possible_agents:
        assert sumo.action_space(agent).shape == (8,)
        assert all(names[u].startswith(agent) for u in sumo.task.agents[agent]["actuators"])
    obs, _ = sumo.reset(seed=0)
    assert obs["red"].shape == obs["blue"].shape == sumo.observation_space("red").shape


# --- SumoAnts ---------------------------------------------------------------------------------
def test_sumo_a_charging_ant_pushes_the_other(sumo):
    q0 = np.array(sumo.task.model.qpos0)
    set_scene(sumo, q0)
    step_idle(sumo, 10)
    blue_alone = qpos_of(sumo)[BLUE_Q]
    v = np.zeros(sumo.task.model.nv)
    v[RED_V] = 4.0  # red's torso thrown at blue along +x
    set_scene(sumo, q0, v)
    step_idle(sumo, 10)
    blue_pushed = qpos_of(sumo)[BLUE_Q]
    assert abs(blue_alone - 1.0) < 0.02
    assert blue_pushed > blue_alone + 0.1


def test_sumo_in_the_ring_nobody_scores(sumo):
    set_scene(sumo, np.array(sumo.task.model.qpos0))
    _, _, terms, truncs, infos = step_idle(sumo)
    assert not any(terms.values()) and not any(truncs.values())
    for agent in ("red", "blue"):
        assert infos[agent]["reward_body_outside_disc"] == 0.0
        assert infos[agent]["reward_body_tilt_above"] == 0.0


def test_sumo_pushed_out_of_the_ring_ends_the_bout_for_both(sumo):
    q = np.array(sumo.task.model.qpos0)
    q[BLUE_Q] = 3.5  # blue's torso beyond the 3 m ring
    set_scene(sumo, q)
    _, rewards, terms, _, infos = step_idle(sumo)
    assert terms == {"red": True, "blue": True} and sumo.agents == []
    assert infos["red"]["reward_body_outside_disc"] == 10.0
    assert infos["blue"]["reward_body_outside_disc"] == -10.0
    assert rewards["red"] > rewards["blue"] + 19.0


def test_sumo_an_ant_on_its_back_loses(sumo):
    q = np.array(sumo.task.model.qpos0)
    q[RED_Q + 2 : RED_Q + 7] = [0.5, 0.0, 1.0, 0.0, 0.0]  # red upside down (pi about x)
    set_scene(sumo, q)
    _, rewards, terms, _, infos = step_idle(sumo)
    assert terms["red"] and terms["blue"]
    assert infos["red"]["reward_body_tilt_above"] == -10.0
    assert infos["blue"]["reward_body_tilt_above"] == 10.0
    assert infos["red"]["reward_body_upright"] < 0 < infos["blue"]["reward_body_upright"]
    assert rewards["blue"] > rewards["red"]


def test_sumo_sees_the_opponent_in_its_own_frame(sumo):
    """Offset and relative velocity in red's torso frame against the free joints' own
    numbers: a free joint's linear qvel is the world velocity of its body's origin."""
    rng = np.random.default_rng(3)
    q = np.array(sumo.task.model.qpos0)
    yaw = 0.7
    q[RED_Q + 3 : RED_Q + 7] = [np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)]
    q[BLUE_Q : BLUE_Q + 3] = [1.3, 0.4, 0.6]
    v = rng.normal(size=sumo.task.model.nv)
    set_scene(sumo, q, v)
    world, task = sumo._batch.world, sumo.task
    now = R.quantities(world, task)
    terms = {o.name: o.term for o in task.agents["red"]["observations"]}
    qpos, qvel = world.get("qpos")[0], world.get("qvel")[0]
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])  # red's torso frame in the world
    offset = rot.T @ (qpos[BLUE_Q : BLUE_Q + 3] - qpos[RED_Q : RED_Q + 3])
    velocity = rot.T @ (qvel[BLUE_V : BLUE_V + 3] - qvel[RED_V : RED_V + 3])
    np.testing.assert_allclose(R.term(task, terms["body_offset"], now, now)[0], offset, atol=1e-9)
    np.testing.assert_allclose(R.term(task, terms["body_relative_velocity"], now, now)[0], velocity, atol=1e-9)


# --- BoxPush -----------------------------------------------------------------------------------
def test_box_push_starts_from_init_qpos(box_push):
    # init_qpos is where episodes start; the slides' zero (the Model's qpos0) stays the MJCF's
    box_push.reset(seed=0)
    model = box_push.task.model
    np.testing.assert_array_equal(model.qpos0, np.zeros(model.nq))
    xpos = box_push._batch.world.get("xpos")[0]
    for body, start in (("left_pusher", [-0.8, 0.4]), ("right_pusher", [-0.8, -0.4]), ("box", [0.0, 0.0])):
        np.testing.assert_allclose(xpos[model.body_name.index(body), :2], start, atol=0.1)


def box_scene(env, goal=(2.0, 2.0)):
    q = np.zeros(env.task.model.nq)
    q[GOAL] = goal
    q[LEFT] = [-0.41, 0.16]  # both pushers just behind the box (half size 0.25, radius 0.15)
    q[RIGHT] = [-0.41, -0.16]
    set_scene(env, q)


def test_box_push_moves_only_when_both_push(box_push):
    box_scene(box_push)
    step_idle(box_push, 20, {"left": np.array([1.0, 0.0])})
    alone = qpos_of(box_push)[BOX].copy()
    box_scene(box_push)
    step_idle(box_push, 20, {"left": np.array([1.0, 0.0]), "right": np.array([1.0, 0.0])})
    together = qpos_of(box_push)[BOX].copy()
    assert abs(alone[0]) < 0.02 and abs(alone[2]) < 0.05
    assert together[0] > 0.3 and abs(together[1]) < 0.05


def test_box_push_reward_is_shared_and_arriving_ends_it(box_push):
    box_scene(box_push, goal=(1.0, 0.5))
    _, rewards, terms, _, infos = step_idle(box_push)
    assert not any(terms.values())
    model, xpos = box_push.task.model, box_push._batch.world.get("xpos")[0]
    box = xpos[model.body_name.index("box")]
    shared = -np.linalg.norm(box - xpos[model.body_name.index("goal")])
    np.testing.assert_allclose(shared, -np.hypot(1.0, 0.5), rtol=1e-3)
    for agent in ("left", "right"):
        # the team's distance to the goal, plus the agent's own distance to the box
        own = -0.1 * np.linalg.norm(xpos[model.body_name.index(f"{agent}_pusher")] - box)
        np.testing.assert_allclose(rewards[agent], shared + own, rtol=1e-9)
        parts = sum(v for k, v in infos[agent].items() if k.startswith("reward_"))
        np.testing.assert_allclose(parts, rewards[agent], rtol=1e-9)
    box_scene(box_push, goal=(0.05, 0.0))  # the box is on its goal
    _, rewards, terms, _, infos = step_idle(box_push)
    assert terms == {"left": True, "right": True}
    assert infos["left"]["reward_body_within"] == infos["right"]["reward_body_within"] == 10.0


# --- schema --------------------------------------------------------------------------------------
def sumo_data():
    return read_config_file(TASK_DIR / "sumo_ants.yaml")


def test_agent_reward_terms_are_validated_with_their_key_path():
    data = sumo_data()
    data["agents"][1]["rewards"][0]["term"] = "body_outside_disk"
    with pytest.raises(ConfigError, match=r"sumo_ants.yaml, line \d+: key 'agents\[1\]\.rewards\[0\]\.term'.*did you mean 'body_outside_disc'"):
        load_task_config(data)
    data = sumo_data()
    data["agents"][0]["rewrds"] = []
    with pytest.raises(ConfigError, match=r"key 'agents\[0\]\.rewrds'.*did you mean 'rewards'"):
        load_task_config(data)
    data = sumo_data()
    data["agents"][0]["rewards"][2]["params"]["body"] = "green_torso"
    with pytest.raises(ConfigError, match=r"key 'agents\[0\]\.rewards\[2\]\.params\.body'.*no body named 'green_torso'"):
        Task(load_task_config(data))


def test_agent_terms_reach_the_program():
    # a term only an agent uses is compiled into the step's program, reading its quantities
    from taigym.physics.step.program_host import touches

    task = Task(load_task_config(sumo_data()))
    assert {"ctrl", "xmat", "cvel", "subtree_com"} <= touches(task.program.program)
