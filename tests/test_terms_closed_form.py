"""Every observation, reward and termination term of the shipped task files against its
closed form, written here from World quantities (``World.get``): a term is defined once, as
World-program instructions, and both of its evaluations are checked against these formulas:
the host reference (tasks.reference.term, the term alone) and the step kernel (the env's
registers after a step). States are those of real Worlds: a random-action trajectory, and
states set so that each termination fires or not. float64, 1e-12.
"""

import functools

import numpy as np
import pytest
from conftest import missing_task_packages
from taigym.envs.vector import TaiGymVectorEnv
from taigym.physics import World
from taigym.tasks import reference as R
from taigym.tasks import registry
from taigym.tasks.loader import CONFIG_DIR
from taigym.tasks.task import Task
from taigym.tasks.terms._select import body_indices, coordinate_indices, lookup
from taigym.tasks.terms.locomotion import _free_base, _joint_dofs
from taigym.tasks.terms.manipulation import _driven_dofs
from taigym.tasks.terms.scene import _actuator

TASK_DIR = CONFIG_DIR / "tasks"
SHIPPED = sorted(p.name for p in TASK_DIR.glob("*.yaml") if not p.name.startswith("_"))
QUANTITIES = ("qpos", "qvel", "ctrl", "xpos", "xmat", "cvel", "cinert", "subtree_com", "cfrc_ext", "qfrc_actuator",
              "qfrc_constraint", "drive_qpos_target", "sensordata")
EXTRA = {name: ["commands.0.params.resampling_time=0.2"]
         for name in ("quadruped_flat.yaml", "quadruped_rough.yaml", "go1_flat.yaml", "g1_flat.yaml")}
TOL = 1e-12


class State:
    """What a closed form reads: quantities ``before`` and ``after`` a step (World.get shapes),
    the step's ``action`` and termination flags, the control period, the command each env's
    step was judged by (``commands``) and the one drawn for after it (``commands_next``), and
    term memory (updated in place by a term that keeps some)."""

    def __init__(self, before, after, dt, action=None, terminated=None, commands=None, commands_next=None, memory=None):
        n = after["qpos"].shape[0]
        self.before, self.after, self.dt, self.n = before, after, dt, n
        self.action = action
        self.terminated = np.zeros(n, bool) if terminated is None else terminated
        self.commands, self.commands_next = commands or {}, commands_next or {}
        self.memory = memory or {}


# --- the closed forms ------------------------------------------------------------------------
CLOSED = {}


def closed(*names):
    def wrap(fn):
        for name in names:
            CLOSED[name] = fn
        return fn

    return wrap


def rot_t(rot, v):
    """R^T v for (n, 3, 3) rotations and (n, 3) or (3,) vectors: world vectors in body axes."""
    return np.einsum("nji,nj->ni", rot, np.broadcast_to(v, (rot.shape[0], 3)))


def point_velocity(m, q, b):
    """World velocity of body b's origin: cvel is (angular; linear) at the subtree com of b's root."""
    cvel, root = q["cvel"][:, b], m.body_rootid[b]
    return cvel[:, 3:] + np.cross(cvel[:, :3], q["xpos"][:, b] - q["subtree_com"][:, root])


def site_position(m, q, s):
    """xpos + R p of a site on its body."""
    b = m.site_bodyid[s]
    return q["xpos"][:, b] + np.einsum("nij,j->ni", q["xmat"][:, b], m.site_pos[s])


def body(m, name):
    return lookup(m.body_name, name, "body", "body")


def in_frame(m, q, p, vectors):
    """``vectors`` along world axes, or (``frame: relative_to``) along relative_to's axes."""
    if p["frame"] == "relative_to":
        vectors = rot_t(q["xmat"][:, body(m, p["relative_to"])], vectors)
    return vectors[:, list(p["axes"])]


def outside(x, low, high, inclusive=True):
    """Not provably inside the range: NaN is outside."""
    inside = (x >= low) & (x <= high) if inclusive else (x > low) & (x < high)
    return ~inside


@closed("qpos", "qvel", "qfrc_constraint", "qfrc_actuator", "qpos_sin", "qpos_cos")
def _coordinates(m, p, s, name):
    which = "qpos" if name.startswith("qpos") else "qvel"
    key = which if name in ("qpos_sin", "qpos_cos") else name
    x = s.after[key][:, coordinate_indices(m, which, p["joints"], p["start"], p["stop"])]
    return {"qpos_sin": np.sin, "qpos_cos": np.cos}.get(name, lambda v: v)(x)


@closed("sensor")
def _sensor(m, p, s, name):
    """The named sensors' slices of sensordata, one after another."""
    idx = []
    for sensor in p["names"]:
        k = lookup(m.sensor_name, sensor, "sensor", "names")
        idx.extend(range(m.sensor_adr[k], m.sensor_adr[k] + m.sensor_dim[k]))
    return s.after["sensordata"][:, idx]


@closed("cinert", "cvel", "cfrc_ext")
def _per_body(m, p, s, name):
    return s.after[name][:, body_indices(m, p["bodies"], p["start"], p["stop"])].reshape(s.n, -1)


@closed("body_offset")
def _body_offset(m, p, s, name):
    q = s.after
    return in_frame(m, q, p, q["xpos"][:, body(m, p["body"])] - q["xpos"][:, body(m, p["relative_to"])])


@closed("body_relative_velocity")
def _body_relative_velocity(m, p, s, name):
    q = s.after
    return in_frame(m, q, p, point_velocity(m, q, body(m, p["body"])) - point_velocity(m, q, body(m, p["relative_to"])))


@closed("body_position")
def _body_position(m, p, s, name):
    return s.after["xpos"][:, body(m, p["body"])][:, list(p["axes"])]


@closed("base_lin_vel", "base_ang_vel", "projected_gravity", "lin_vel_z_l2", "ang_vel_xy_l2", "flat_orientation_l2")
def _base(m, p, s, name):
    b, dof = _free_base(m, p["body"])
    q = s.after
    rot = q["xmat"][:, b]
    lin, ang, gravity = rot_t(rot, q["qvel"][:, dof : dof + 3]), q["qvel"][:, dof + 3 : dof + 6], rot_t(rot, [0, 0, -1])
    return {"base_lin_vel": lin, "base_ang_vel": ang, "projected_gravity": gravity, "lin_vel_z_l2": lin[:, 2] ** 2,
            "ang_vel_xy_l2": (ang[:, :2] ** 2).sum(1), "flat_orientation_l2": (gravity[:, :2] ** 2).sum(1)}[name]


@closed("velocity_command")
def _velocity_command(m, p, s, name):
    return s.commands_next[p["command"]]


@closed("joint_pos_rel")
def _joint_pos_rel(m, p, s, name):
    qadr, _ = _joint_dofs(m, p["joints"])
    return s.after["qpos"][:, qadr] - np.asarray(m.qpos0)[qadr]


@closed("actuator_ctrl")
def _actuator_ctrl(m, p, s, name):
    return s.after["ctrl"]


@closed("drive_target")
def _drive_target(m, p, s, name):
    return s.after["drive_qpos_target"][:, _driven_dofs(m, p["joints"])]


@closed("alive")
def _alive(m, p, s, name):
    return 1.0 - s.terminated


@closed("action_l2")
def _action_l2(m, p, s, name):
    return (s.action**2).sum(1)


def rate(s, key, *index):
    return (s.after[key][(slice(None), *index)] - s.before[key][(slice(None), *index)]) / s.dt


@closed("forward_velocity")
def _forward_velocity(m, p, s, name):
    return rate(s, "qpos", p["coordinate"])


@closed("body_forward_velocity")
def _body_forward_velocity(m, p, s, name):
    return rate(s, "xpos", body(m, p["body"]), p["axis"])


@closed("com_forward_velocity")
def _com_forward_velocity(m, p, s, name):
    return rate(s, "subtree_com", body(m, p["body"]), p["axis"])


@closed("body_distance")
def _body_distance(m, p, s, name):
    x = s.after["xpos"]
    return np.linalg.norm(x[:, body(m, p["body"])] - x[:, body(m, p["target"])], axis=1)


@closed("site_weighted_sq_error")
def _site_weighted_sq_error(m, p, s, name):
    error = site_position(m, s.after, lookup(m.site_name, p["site"], "site", "site")) - np.broadcast_to(p["target"], 3)
    return (np.broadcast_to(p["weights"], 3) * error**2).sum(1)


@closed("qvel_weighted_l2")
def _qvel_weighted_l2(m, p, s, name):
    idx = coordinate_indices(m, "qvel", p["joints"], p["start"], p["stop"])
    return (np.broadcast_to(p["weights"], len(idx)) * s.after["qvel"][:, idx] ** 2).sum(1)


@closed("contact_force_l2")
def _contact_force_l2(m, p, s, name):
    wrench = s.after["cfrc_ext"][:, body_indices(m, p["bodies"], p["start"], p["stop"])]
    if p["clip"] is not None:
        wrench = np.clip(wrench, *p["clip"])
    total = (wrench**2).sum((1, 2))
    return total if p["max_value"] is None else np.minimum(total, p["max_value"])


@closed("track_lin_vel_xy_exp", "track_ang_vel_z_exp")
def _track(m, p, s, name):
    b, dof = _free_base(m, p["body"])
    command = s.commands[p["command"]]
    if name == "track_lin_vel_xy_exp":
        error = ((command[:, :2] - rot_t(s.after["xmat"][:, b], s.after["qvel"][:, dof : dof + 3])[:, :2]) ** 2).sum(1)
    else:
        error = (command[:, 2] - s.after["qvel"][:, dof + 5]) ** 2
    return np.exp(-error / p["std"] ** 2)


@closed("joint_acc_l2")
def _joint_acc_l2(m, p, s, name):
    _, dofs = _joint_dofs(m, p["joints"])
    return (rate(s, "qvel", dofs) ** 2).sum(1)


@closed("action_rate_l2")
def _action_rate_l2(m, p, s, name):
    return ((s.after["ctrl"] - s.before["ctrl"]) ** 2).sum(1)


@closed("joint_torques_l2")
def _joint_torques_l2(m, p, s, name):
    return (s.after["qfrc_actuator"][:, _joint_dofs(m, p["joints"])[1]] ** 2).sum(1)


@closed("drive_target_rate_l2")
def _drive_target_rate_l2(m, p, s, name):
    dofs = _driven_dofs(m, p["joints"])
    return ((s.after["drive_qpos_target"][:, dofs] - s.before["drive_qpos_target"][:, dofs]) ** 2).sum(1)


def contact(m, s, bodies, force):
    """(n, len(bodies)): the net contact force on each body (cfrc_ext[3:]) above ``force``."""
    return np.linalg.norm(s.after["cfrc_ext"][:, bodies, 3:], axis=2) > force


@closed("feet_air_time")
def _feet_air_time(m, p, s, name):
    feet = [body(m, f) for f in p["feet"]]
    air = s.memory["feet_air_time"]
    down = contact(m, s, feet, p["contact_force"])
    value = np.where(down & (air > 0), air - p["threshold"], 0.0).sum(1)
    moving = np.linalg.norm(s.commands[p["command"]][:, :2], axis=1) > p["min_command"]
    air[:] = np.where(down, 0.0, air + s.dt)
    return value * moving


@closed("body_within")
def _body_within(m, p, s, name):
    return _body_distance(m, p, s, name) < p["radius"]


@closed("body_outside_disc", "body_distance_from")
def _disc(m, p, s, name):
    distance = np.linalg.norm(s.after["xpos"][:, body(m, p["body"]), :2] - np.asarray(p["center"]), axis=1)
    return distance if name == "body_distance_from" else outside(distance, -np.inf, p["radius"])


@closed("body_tilt_above", "base_tilt_above", "body_upright")
def _tilt(m, p, s, name):
    cos_tilt = s.after["xmat"][:, body(m, p["body"]), 2, 2]  # the body's z axis' world z
    return cos_tilt if name == "body_upright" else outside(cos_tilt, np.cos(p["max_angle"]), np.inf)


@closed("ctrl_l2")
def _ctrl_l2(m, p, s, name):
    idx = np.arange(m.nu) if p["actuators"] is None else [_actuator(m, a) for a in p["actuators"]]
    return (s.after["ctrl"][:, idx] ** 2).sum(1)


@closed("nonfinite_state")
def _nonfinite_state(m, p, s, name):
    return ~(np.isfinite(s.after["qpos"]).all(1) & np.isfinite(s.after["qvel"]).all(1))


@closed("qpos_out_of_range", "qvel_out_of_range")
def _out_of_range(m, p, s, name):
    which = name.split("_")[0]
    x = s.after[which][:, coordinate_indices(m, which, p["joints"], p["start"], p["stop"])]
    return outside(x, p["low"], p["high"], p["inclusive"]).any(1)


@closed("site_height_below")
def _site_height_below(m, p, s, name):
    z = site_position(m, s.after, lookup(m.site_name, p["site"], "site", "site"))[:, 2]
    return outside(z, p["min_height"], np.inf, inclusive=False)


@closed("body_height_out_of_range")
def _body_height_out_of_range(m, p, s, name):
    return outside(s.after["xpos"][:, body(m, p["body"]), 2], p["low"], p["high"])


@closed("body_contact")
def _body_contact(m, p, s, name):
    return contact(m, s, body_indices(m, p["bodies"], 0, None), p["force"]).any(1)


def closed_form(task, kind, cfg, s):
    """(n, width) float64: the config entry ``cfg``'s term's closed form on ``s``."""
    params = registry.validate_params(registry.get(kind, cfg.term), cfg.params or {})
    value = CLOSED[cfg.term](task.model, params, s, cfg.term)
    return np.asarray(value, np.float64).reshape(s.n, -1)


# --- states ------------------------------------------------------------------------------------
def world_quantities(world) -> dict:
    return {name: world.get(name) for name in QUANTITIES}


@functools.cache
def trajectory_step(config):
    """A real step of 4 envs after 12 random-action steps: (task, State, registers before the
    step with the next commands in place, the kernel's registers after it, the envs not
    reset by the step)."""
    env = TaiGymVectorEnv(str(TASK_DIR / config), 4, overrides=["simulation.precision=float64", *EXTRA.get(config, [])])
    env.reset(seed=7)
    rng = np.random.default_rng(7)
    for _ in range(12):
        env.step(rng.uniform(-1, 1, env.action_space.shape))
    p, world = env.program, env.world
    resetting = env._needs_reset.copy()
    before, regs = world_quantities(world), world.registers().copy()
    action = rng.uniform(-1, 1, env.action_space.shape)
    env.step(action)
    after, now = world_quantities(world), world.registers().copy()
    for at in p.commands_next.values():
        regs[:, at.start : at.stop] = now[:, at.start : at.stop]
    s = State(before, after, env.task.dt, action,
              commands={k: regs[:, at.start : at.stop] for k, at in p.commands_now.items()},
              commands_next={k: regs[:, at.start : at.stop] for k, at in p.commands_next.items()})
    return env.task, s, regs, now, ~resetting


def memory_of(task, regs) -> dict:
    return {name: regs[:, at.start : at.stop].copy() for name, at in task.program.memories.items()}


def groups(task, now):
    """(config entries, bound terms, their result registers, the flags their rewards see) of the
    task's own terms and of each agent's."""
    p = task.program
    out = [(task.config, task.observations, task.rewards, task.terminations, p.obs, p.parts, p.terminated,
            now[:, p.terminated.start] != 0)]
    for i, (name, spec) in enumerate(task.agents.items()):
        a = p.agents[name]
        out.append((task.config.agents[i], spec["observations"], spec["rewards"], spec["terminations"], a.obs, a.parts,
                    a.own_terminated, now[:, a.ended.start] != 0))
    return out


@pytest.mark.parametrize("config", SHIPPED)
def test_each_step_term_equals_its_closed_form(config):
    """Each term alone (tasks.reference.term) and, in the kernel's registers after the step,
    each observation slice, weighted reward term and termination flag of the envs the step
    did not reset, against the closed forms."""
    task, s, regs, now, kept = trajectory_step(config)
    for cfg, observations, rewards, terminations, obs_at, part_ats, ended_at, flags in groups(task, now):
        s.terminated = flags
        at = obs_at.start
        for i, o in enumerate(observations):
            want = closed_form(task, "observation", cfg.observations[i], s)
            close(R.term(task, o.term, s.before, s.after, s.action, flags, regs), want, f"observations[{i}]")
            kernel = now[kept, at : at + o.term.size]
            close(kernel, want[kept] if o.clip is None else np.clip(want[kept], *o.clip), f"kernel observations[{i}]")
            at += o.term.size
        for i, ((_, weight, term), (_, part)) in enumerate(zip(rewards, part_ats, strict=True)):
            mine, s.memory = regs.copy(), memory_of(task, regs)
            want = closed_form(task, "reward", cfg.rewards[i], s)
            close(R.term(task, term, s.before, s.after, s.action, flags, mine), want, f"rewards[{i}]")
            close(now[kept, part.start], weight * want[kept, 0], f"kernel rewards[{i}]")
            for name in term.memory:  # updated as the closed form says
                mem = task.program.memories[name]
                close(mine[:, mem.start : mem.stop], s.memory[name], f"rewards[{i}] memory {name}")
                close(now[kept, mem.start : mem.stop], s.memory[name][kept], f"kernel rewards[{i}] memory {name}")
        fired = np.zeros(s.n, bool)
        for i, term in enumerate(terminations):
            want = closed_form(task, "termination", cfg.terminations[i], s)
            close(R.term(task, term, s.before, s.after, s.action, flags, regs), want, f"terminations[{i}]")
            fired |= want[:, 0] != 0
        np.testing.assert_array_equal(now[kept, ended_at.start] != 0, fired[kept])


def test_every_step_term_of_the_shipped_tasks_has_a_closed_form_here():
    used = set()
    for config in SHIPPED:
        if config in missing_task_packages():
            continue
        t = Task.from_source(str(TASK_DIR / config))
        for path, _ in t._step_terms():
            node = t.config
            for key in path:
                node = node[key] if isinstance(key, int) else getattr(node, key)
            used.add(node.term)
    assert used <= set(CLOSED), sorted(used - set(CLOSED))


def close(actual, expected, what):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), rtol=TOL, atol=TOL,
                               err_msg=what)


# --- terms at states chosen around their thresholds ------------------------------------------
def bound(task, kind, name, **params):
    return registry.get(kind, name).factory(task.model, **params)


def evaluate(task, kind, name, s, **params):
    """The term built from ``params`` on ``s`` by the reference, and its closed form."""
    from types import SimpleNamespace

    term = bound(task, kind, name, **params)
    got = R.term(task, term, s.before, s.after, s.action, s.terminated)
    want = closed_form(task, kind, SimpleNamespace(term=name, params=params), s)
    close(got, want, f"{name} {params}")
    return want[:, 0]


def states(task, qpos, qvel=None):
    """A State of a float64 World set to ``qpos``/``qvel`` (one row per env), after a forward pass;
    the same state before and after."""
    m = task.model
    world = World(m, num_envs=len(qpos), precision="float64")
    world.set_state(qpos=np.asarray(qpos, np.float64),
                    qvel=np.zeros((len(qpos), m.nv)) if qvel is None else np.asarray(qvel, np.float64))
    world.forward()
    q = world_quantities(world)
    return State(q, q, task.dt)


def poisoned(s, key, index):
    """``s`` with one element of quantity ``key`` made NaN after the fact (a World refuses a
    non-finite state)."""
    value = s.after[key].copy()
    value[index] = np.nan
    s.after = {**s.after, key: value}
    return s


@functools.cache
def task_of(name):
    return Task.from_source(f"TaiGym/{name}-v0", ["simulation.precision=float64"])


def test_coordinate_ranges_fire_outside_and_at_open_bounds():
    t = task_of("Hopper")
    qpos = np.tile(t.init_qpos, (5, 1))
    qpos[:, 2] = [0.0, 0.2, 0.2000001, -0.2, 0.0]  # rooty
    s = poisoned(states(t, qpos), "qpos", (4, 2))
    closed_range = evaluate(t, "termination", "qpos_out_of_range", s, low=-0.2, high=0.2, joints=["rooty"])
    open_range = evaluate(t, "termination", "qpos_out_of_range", s, low=-0.2, high=0.2, inclusive=False,
                          joints=["rooty"])
    np.testing.assert_array_equal(closed_range, [0, 0, 1, 0, 1])
    np.testing.assert_array_equal(open_range, [0, 1, 1, 1, 1])
    qvel = np.zeros((3, t.model.nv))
    qvel[:, 3] = [9.9, 10.0, -10.5]
    fast = evaluate(t, "termination", "qvel_out_of_range", states(t, qpos[:3], qvel), low=-10.0, high=10.0, start=3)
    np.testing.assert_array_equal(fast, [0, 0, 1])


def test_heights_fire_below_their_bounds_and_a_nonfinite_state_ends():
    t = task_of("Hopper")
    qpos = np.tile(t.init_qpos, (4, 1))
    qpos[:, 1] = [1.25, 0.6, 2.5, 0.0]  # rootz
    s = states(t, qpos)
    z = s.after["xpos"][:, body(t.model, "torso"), 2]
    height = evaluate(t, "termination", "body_height_out_of_range", s, body="torso", low=0.7 + z[0] - 1.25,
                      high=2.0 + z[0] - 1.25)
    np.testing.assert_array_equal(height, [0, 1, 1, 1])
    poisoned(s, "qpos", (1, 3))
    s.after["qvel"] = s.after["qvel"].copy()
    s.after["qvel"][2, 0] = np.inf
    np.testing.assert_array_equal(evaluate(t, "termination", "nonfinite_state", s), [0, 1, 1, 0])
    p = task_of("InvertedDoublePendulum")
    tips = states(p, [[0.0, 0.0, 0.0], [0.0, 0.3, 0.3], [0.0, 1.2, 0.5], [0.0, np.pi, 0.0]])
    tip = site_position(p.model, tips.after, lookup(p.model.site_name, "tip", "site", "site"))[:, 2]
    fallen = evaluate(p, "termination", "site_height_below", tips, site="tip", min_height=1.0)
    np.testing.assert_array_equal(fallen, tip <= 1.0)
    assert 0 < fallen.sum() < 4
    evaluate(p, "reward", "site_weighted_sq_error", tips, site="tip", target=[0.0, 0.0, 2.0], weights=[0.01, 0.0, 1.0])


def _tilted(t, angles, height=0.5):
    """Free-base poses rotated by ``angles`` about the x axis, at ``height``."""
    qpos = np.tile(t.init_qpos, (len(angles), 1))
    qpos[:, 2] = height
    qpos[:, 3:7] = [[np.cos(a / 2), np.sin(a / 2), 0.0, 0.0] for a in angles]
    return qpos


def test_tilt_terms_fire_past_their_angle():
    t = task_of("QuadrupedFlat")
    s = states(t, _tilted(t, [0.0, 0.9, 1.1, np.pi]))
    np.testing.assert_array_equal(evaluate(t, "termination", "base_tilt_above", s, max_angle=1.0), [0, 0, 1, 1])
    np.testing.assert_allclose(evaluate(t, "reward", "flat_orientation_l2", s), np.sin([0.0, 0.9, 1.1, np.pi]) ** 2,
                               atol=1e-15)
    a = task_of("SumoAnts")
    torso = "red_torso"  # on the free joint whose quaternion is qpos[3:7]
    qpos = np.tile(a.init_qpos, (3, 1))
    qpos[:, 3:7] = [[1, 0, 0, 0], [np.cos(0.8), np.sin(0.8), 0, 0], [0, 1, 0, 0]]  # 0, 1.6 rad, upside down
    s = states(a, qpos)
    np.testing.assert_array_equal(evaluate(a, "termination", "body_tilt_above", s, body=torso, max_angle=np.pi / 2),
                                  [0, 1, 1])
    np.testing.assert_allclose(evaluate(a, "reward", "body_upright", s, body=torso), [1.0, np.cos(1.6), -1.0],
                               atol=1e-15)


def test_scene_terms_at_a_ring_and_a_goal():
    a = task_of("SumoAnts")
    torso, other = "red_torso", "blue_torso"
    qpos = np.tile(a.init_qpos, (4, 1))
    qpos[:, :2] = [[0.0, 0.0], [1.0, 1.0], [2.5, 0.0], [0.0, 0.0]]
    s = poisoned(states(a, qpos), "xpos", (3, body(a.model, torso), 0))
    xy = s.after["xpos"][:, body(a.model, torso), :2]
    evaluate(a, "reward", "body_distance_from", s, body=torso, center=[0.5, -0.5])
    radius = float(np.linalg.norm(xy[1]))
    out = evaluate(a, "termination", "body_outside_disc", s, body=torso, radius=radius + 1e-9)
    np.testing.assert_array_equal(out, [0, 0, 1, 1])
    near = evaluate(a, "termination", "body_within", s, body=torso, target=other, radius=2.0)
    assert near[3] == 0  # not provably near
    evaluate(a, "reward", "body_within", s, body=torso, target=other, radius=2.0)
    for frame in ("world", "relative_to"):
        evaluate(a, "observation", "body_offset", s, body=other, relative_to=torso, axes=[0, 1, 2], frame=frame)


def test_contact_terms_with_clip_and_cap():
    t = task_of("Ant")
    env = TaiGymVectorEnv("TaiGym/Ant-v0", 4, overrides=["simulation.precision=float64"])
    env.reset(seed=1)
    for _ in range(20):  # the legs on the ground
        env.step(np.zeros((4, 8)))
    q = world_quantities(env.world)
    s = State(q, q, t.dt)
    assert np.abs(q["cfrc_ext"]).max() > 1.0
    full = evaluate(t, "reward", "contact_force_l2", s)
    clipped = evaluate(t, "reward", "contact_force_l2", s, clip=(-1.0, 1.0))
    capped = evaluate(t, "reward", "contact_force_l2", s, max_value=float(np.median(full)))
    assert (clipped <= full).all() and (capped == np.minimum(full, np.median(full))).all()


def test_body_contact_fires_above_its_force():
    t = task_of("QuadrupedFlat")
    env = TaiGymVectorEnv("TaiGym/QuadrupedFlat-v0", 4, overrides=["simulation.precision=float64"])
    env.reset(seed=1)
    for _ in range(20):  # standing: the feet carry the weight, the base touches nothing
        env.step(np.zeros((4, t.action_size)))
    q = world_quantities(env.world)
    s = State(q, q, t.dt)
    feet = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    assert evaluate(t, "termination", "body_contact", s, bodies=feet, force=1.0).all()
    assert not evaluate(t, "termination", "body_contact", s, bodies=feet, force=1e6).any()
    assert not evaluate(t, "termination", "body_contact", s, bodies=["base"], force=1.0).any()
