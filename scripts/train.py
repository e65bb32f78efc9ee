"""Train a policy with stable-baselines3 on a taigym task, every env in one batched World.

    python scripts/train.py                                        # PPO on InvertedPendulum
    python scripts/train.py TaiGym/Reacher-v0 --algo SAC --seed 1
    python scripts/train.py TaiGym/InvertedPendulum-v0 n_steps=64 num_envs=16 total_timesteps=50000
    python scripts/train.py TaiGym/InvertedPendulum-v0 --resume     # continue from the last checkpoint
    python scripts/train.py InvertedPendulum-v5                    # Gymnasium's MuJoCo env, same settings
    taigym train ...                                               # the same, as a subcommand

Any stable-baselines3 algorithm (and sb3-contrib's, when installed) is chosen by name with
``--algo``. Hyperparameters come from ``configs/train/<task>_<algo>.yaml`` (``<task>`` is the
task config's file name, e.g. ``inverted_pendulum_ppo.yaml``) or ``--config``, and
``key=value`` arguments override them: a key of the config (``num_envs``,
``total_timesteps``...), a keyword of the algorithm (``learning_rate``, ``n_steps``...), a
keyword of its policy (``log_std_init``...) or a dotted path (``policy_kwargs.net_arch=[64,64]``).
Unknown keys are errors that name the key.

A Gymnasium id (neither ``TaiGym/...`` nor a task YAML, e.g. ``Hopper-v5``) trains on
``gym.make(id)`` envs in SB3's ``DummyVecEnv`` instead, with the training config of its taigym
port (``Hopper-v5`` uses ``hopper_ppo.yaml``), so that the two simulators train alike;
evaluation and video use ``gym.make(id)`` too.

The run writes ``results/<Task>-<algo>-<seed>/`` (layout in ``scripts/results.py``): the
config used, ``progress.csv``, ``metrics.json``, the learning curve PNG, TensorBoard logs,
checkpoints, the final model, the deterministic evaluation returns and a video.
"""

from __future__ import annotations

import argparse
import inspect
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, ValidationError
from taigym.scripts.arguments import ArgumentParser
from taigym.scripts.config_files import ConfigFileError

REPO_ROOT = Path(__file__).resolve().parents[1]
TRAIN_CONFIGS = REPO_ROOT / "configs" / "train"
DEFAULT_TASK = "TaiGym/InvertedPendulum-v0"
DEFAULT_ALGO = "PPO"


class TrainConfigError(ConfigFileError):
    """A training config that cannot be used; the message names the file and the key."""


# --- config --------------------------------------------------------------------------------
class TrainConfig(BaseModel):
    """One training run. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    task: str = DEFAULT_TASK  # registered id, task YAML path or Gymnasium id
    algo: str = DEFAULT_ALGO  # a stable-baselines3 (or sb3-contrib) class name
    seed: int = 0
    total_timesteps: PositiveInt = 100_000  # env steps, summed over the batch
    num_envs: PositiveInt = 1  # envs in the one World (SB3's n_envs)
    policy: str = "MlpPolicy"
    hyperparameters: dict[str, Any] = {}  # keyword arguments of the algorithm class
    policy_kwargs: dict[str, Any] = {}  # keyword arguments of its policy class
    normalize_obs: bool = False  # SB3's VecNormalize running mean/std of observations
    normalize_reward: bool = False  # ... and of the discounted return, for rewards
    task_overrides: list[str] = []  # task config overrides, "key.sub=value"
    eval_episodes: PositiveInt = 10  # deterministic episodes after training
    checkpoint_every: NonNegativeInt = 0  # env steps between checkpoints; 0: a tenth of the run
    log_every: PositiveInt = 1000  # env steps between rows of progress.csv
    video_steps: NonNegativeInt = 300  # env steps in the video; 0: no video
    solved_return: float | None = None  # eval return at which the task counts as solved
    torch_threads: PositiveInt = 1  # small MLPs gain nothing from more; the World uses the cores
    device: str = "cpu"  # torch device of the policy
    comment: str = ""  # free text kept with the run


# keys of the algorithm's __init__ that this script sets itself
_MANAGED_ARGS = {"self", "policy", "env", "seed", "verbose", "tensorboard_log", "device", "_init_setup_model",
                 "policy_kwargs"}
# keys of the policy's __init__ that SB3 passes itself
_MANAGED_POLICY_ARGS = {"self", "observation_space", "action_space", "lr_schedule", "use_sde"}
_RUN_KEYS = {"total_timesteps", "eval_episodes", "checkpoint_every", "log_every", "video_steps", "solved_return",
             "torch_threads", "comment"}  # may change when a run is resumed


def resolve_algorithm(name: str):
    """The stable-baselines3 (or sb3-contrib) class called ``name``, case-insensitively."""
    from stable_baselines3.common.base_class import BaseAlgorithm

    modules = []
    for module_name in ("stable_baselines3", "sb3_contrib"):
        try:
            modules.append(__import__(module_name))
        except ImportError:
            pass
    known = {}
    for module in modules:
        for attr in dir(module):
            obj = getattr(module, attr)
            if inspect.isclass(obj) and issubclass(obj, BaseAlgorithm):
                known.setdefault(attr.lower(), obj)
    if name.lower() in known:
        return known[name.lower()]
    from taigym.tasks.errors import did_you_mean

    names = sorted(c.__name__ for c in known.values())
    hint = did_you_mean(name, names)
    extra = "" if "sb3_contrib" in sys.modules else " (pip install sb3-contrib for more)"
    raise TrainConfigError(f"unknown algorithm {name!r}; available: {names}{extra}"
                           + (f"; did you mean {hint!r}?" if hint else ""))


def is_gymnasium_id(task: str) -> bool:
    """A Gymnasium id (``Hopper-v5``, ``dm_control/cartpole-swingup-v0``): neither a taigym id
    nor a task YAML path."""
    return not str(task).startswith("TaiGym/") and not str(task).endswith((".yaml", ".yml"))


def taigym_counterpart(gym_id: str) -> str | None:
    """``Hopper-v5`` -> ``TaiGym/Hopper-v0``, ``dm_control/cartpole-swingup-v0`` ->
    ``TaiGym/cartpole-swingup-v0``: the taigym port of a Gymnasium MuJoCo env or of a Control
    Suite task, if any."""
    from taigym.scripts.benchmark_envs import GYMNASIUM
    from taigym.scripts.gymnasium_envs import DM_CONTROL_PREFIX, is_dm_control_id

    if is_dm_control_id(gym_id):
        import gymnasium as gym

        from taigym import envs  # noqa: F401  registers the TaiGym ids

        port = f"TaiGym/{gym_id.removeprefix(DM_CONTROL_PREFIX)}"
        return port if port in gym.registry else None
    names = {env_id: name for name, env_id in GYMNASIUM.items()}
    return f"TaiGym/{names[gym_id]}-v0" if gym_id in names else None


def check_gymnasium_id(task: str) -> None:
    """Refuses an id that Gymnasium does not know, naming the closest known ids."""
    import gymnasium as gym
    from taigym.scripts.gymnasium_envs import is_dm_control_id, register
    from taigym.tasks.errors import did_you_mean

    from taigym import envs  # noqa: F401  registers the TaiGym ids, for the hint

    if is_dm_control_id(task):
        try:
            register(task)
        except ImportError as e:
            raise SystemExit(f"{task} is dm_control's task, and dm_control cannot be imported ({e}): "
                             "pip install dm_control") from None
    if task not in gym.registry:
        hint = did_you_mean(task, list(gym.registry))
        raise SystemExit(f"unknown task {task!r}: not a TaiGym/ id, a task YAML file nor a Gymnasium id"
                         + (f"; did you mean {hint!r}?" if hint else ""))


def default_config_path(task_id: str, algo: str) -> Path:
    """``configs/train/<task config stem>_<algo>.yaml``, next to the task configs.

    A Gymnasium id takes its taigym port's file, so both simulators train with one config.
    """
    from taigym.scripts.results import task_config_path, task_name

    if is_gymnasium_id(task_id):
        port = taigym_counterpart(task_id)
        if port is None:  # no port: a name that matches no file, so the algorithm's defaults
            return TRAIN_CONFIGS / f"{task_name(task_id)}_{algo.lower()}.yaml"
        task_id = port
    return TRAIN_CONFIGS / f"{task_config_path(task_id).stem}_{algo.lower()}.yaml"


def algorithm_keys(algo_cls) -> set[str]:
    return set(inspect.signature(algo_cls.__init__).parameters) - _MANAGED_ARGS


def policy_keys(algo_cls, policy: str) -> set[str]:
    policy_cls = algo_cls.policy_aliases.get(policy) if isinstance(policy, str) else policy
    if policy_cls is None:
        raise TrainConfigError(f"{algo_cls.__name__} has no policy {policy!r}; known: {sorted(algo_cls.policy_aliases)}")
    params = inspect.signature(policy_cls.__init__).parameters
    return set(params) - _MANAGED_POLICY_ARGS


def apply_overrides(data: dict, overrides: list[str], algo_cls) -> dict:
    """``data`` with ``key=value`` overrides applied (values parsed as YAML).

    A bare key goes where it is known: the config's own keys first, then the algorithm's
    keywords (``hyperparameters``), then the policy's (``policy_kwargs``).
    """
    from taigym.scripts.results import parse_value

    data = {**data, "hyperparameters": dict(data.get("hyperparameters") or {}),
            "policy_kwargs": dict(data.get("policy_kwargs") or {})}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise TrainConfigError(f"override {item!r} is not key=value")
        value = parse_value(text)
        path = key.split(".")
        if len(path) == 1:
            path = locate_bare_key(key, data, algo_cls)
        target = data
        for part in path[:-1]:
            if not isinstance(target.get(part), dict):
                raise TrainConfigError(f"override {item!r}: {part!r} is not a section of the config")
            target = target[part]
        target[path[-1]] = value
    return data


def locate_bare_key(key: str, data: dict, algo_cls) -> list[str]:
    if key in TrainConfig.model_fields:
        return [key]
    if key in algorithm_keys(algo_cls):
        return ["hyperparameters", key]
    if key in policy_keys(algo_cls, data.get("policy", "MlpPolicy")):
        return ["policy_kwargs", key]
    from taigym.tasks.errors import did_you_mean

    choices = [*TrainConfig.model_fields, *algorithm_keys(algo_cls)]
    hint = did_you_mean(key, choices)
    raise TrainConfigError(f"override: unknown key {key!r}: not a config key, nor a {algo_cls.__name__} "
                           "or policy keyword" + (f"; did you mean {hint!r}?" if hint else ""))


def validate(data: dict, source: str, raw=None) -> TrainConfig:
    """A :class:`TrainConfig` from ``data``, or an error naming ``source``, the line (from
    ``raw``, the file as read), the key and the value given."""
    from taigym.scripts.config_files import refuse_non_finite, schema_error

    refuse_non_finite(data, raw, source, error=TrainConfigError)
    try:
        cfg = TrainConfig(**data)
    except ValidationError as e:
        raise schema_error(e, raw, source, TrainConfig.model_fields, error=TrainConfigError) from None
    algo_cls = resolve_algorithm(cfg.algo)
    check_keys(cfg.hyperparameters, algorithm_keys(algo_cls), (raw, source, "hyperparameters"), algo_cls.__name__)
    check_keys(cfg.policy_kwargs, policy_keys(algo_cls, cfg.policy), (raw, source, "policy_kwargs"),
               f"{algo_cls.__name__}'s {cfg.policy}")
    return cfg


def check_keys(given: dict, known: set[str], place, owner: str) -> None:
    """Each key of ``given`` is one of ``known``; ``place`` is (raw file data, source, section)."""
    from taigym.scripts.config_files import error_at
    from taigym.tasks.errors import did_you_mean

    raw, source, section = place
    for key in given:
        if key not in known:
            raise error_at(raw, (section, key), source, f"unknown key {key!r} (not a keyword of {owner})",
                           suggestion=did_you_mean(key, known), error=TrainConfigError)


def load_config(task: str, algo: str, *, config_path: Path | None = None, overrides=(), seed: int | None = None):
    """The validated config for (task, algo) and where it came from.

    Without ``config_path``, ``configs/train/<task>_<algo>.yaml`` is used when it exists;
    otherwise the algorithm's stable-baselines3 defaults.
    """
    path = Path(config_path) if config_path else default_config_path(task, algo)
    if path.exists():
        from taigym.scripts.config_files import read_mapping
        from taigym.scripts.results import with_numbers

        raw = read_mapping(path, error=TrainConfigError)
        data, source = with_numbers(raw), str(path)
    elif config_path:
        raise TrainConfigError(f"config file {path} does not exist")
    else:
        raw, data, source = {}, {}, f"{algo} defaults (no {path.relative_to(REPO_ROOT)})"
    data = {**data, "task": task, "algo": data.get("algo", algo) if config_path else algo}
    if seed is not None:
        data["seed"] = seed
    algo_cls = resolve_algorithm(data["algo"])
    return validate(apply_overrides(data, list(overrides), algo_cls), source, raw), source


# --- building the algorithm ----------------------------------------------------------------
def schedule(value):
    """A number, or rl-zoo's ``"lin_<x>"``: a rate falling linearly from x to 0 over the run."""
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return lambda progress_remaining: progress_remaining * start
    return value


def torch_object(kind: str, name):
    """``"tanh"`` -> ``torch.nn.Tanh``; ``"adam"`` -> ``torch.optim.Adam`` (case-insensitive)."""
    import torch

    if not isinstance(name, str):
        return name
    module = torch.nn if kind == "activation_fn" else torch.optim
    for attr in dir(module):
        if attr.lower() == name.lower():
            return getattr(module, attr)
    raise TrainConfigError(f"policy_kwargs.{kind}: torch has no {name!r}")


def action_noise(spec: str, action_size: int):
    """``"normal:0.1"`` or ``"ornstein-uhlenbeck:0.1"``: exploration noise of that std."""
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    kind, _, sigma = str(spec).partition(":")
    kinds = {"normal": NormalActionNoise, "ornstein-uhlenbeck": OrnsteinUhlenbeckActionNoise}
    if kind not in kinds or not sigma:
        raise TrainConfigError(f"hyperparameters.action_noise: expected 'normal:<std>' or "
                               f"'ornstein-uhlenbeck:<std>', got {spec!r}")
    return kinds[kind](mean=np.zeros(action_size), sigma=float(sigma) * np.ones(action_size))


def algorithm_kwargs(cfg: TrainConfig, action_size: int) -> dict:
    """The config's hyperparameters as the algorithm takes them."""
    kwargs = dict(cfg.hyperparameters)
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        if key in kwargs:
            kwargs[key] = schedule(kwargs[key])
    if isinstance(kwargs.get("train_freq"), list):
        kwargs["train_freq"] = tuple(kwargs["train_freq"])
    if "action_noise" in kwargs and kwargs["action_noise"] is not None:
        kwargs["action_noise"] = action_noise(kwargs["action_noise"], action_size)
    policy_kwargs = dict(cfg.policy_kwargs)
    for key in ("activation_fn", "optimizer_class"):
        if key in policy_kwargs:
            policy_kwargs[key] = torch_object(key, policy_kwargs[key])
    if policy_kwargs:
        kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


def make_env(cfg: TrainConfig):
    """The SB3 VecEnv over one World (or Gymnasium envs), with episode statistics (and
    normalization if asked)."""
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    if is_gymnasium_id(cfg.task):
        env = gymnasium_vec_env(cfg)
    else:
        from taigym.envs.sb3 import TaiGymVecEnv

        env = VecMonitor(TaiGymVecEnv(cfg.task, num_envs=cfg.num_envs, overrides=list(cfg.task_overrides)))
    if cfg.normalize_obs or cfg.normalize_reward:
        gamma = cfg.hyperparameters.get("gamma", 0.99)
        env = VecNormalize(env, norm_obs=cfg.normalize_obs, norm_reward=cfg.normalize_reward, gamma=gamma)
    return env


def gymnasium_vec_env(cfg: TrainConfig):
    """SB3's DummyVecEnv of ``cfg.num_envs`` ``gym.make(cfg.task)`` envs, each with a Monitor,
    seeded from ``cfg.seed``."""
    import gymnasium as gym
    from stable_baselines3.common.env_util import make_vec_env

    if cfg.task_overrides:
        raise TrainConfigError(f"task_overrides {cfg.task_overrides} change taigym tasks; {cfg.task} is a "
                               "Gymnasium env")
    from taigym.scripts.gymnasium_envs import register

    register(cfg.task)  # dm_control's ids are known to Gymnasium once registered in this process
    try:
        return make_vec_env(cfg.task, n_envs=cfg.num_envs, seed=cfg.seed)
    except gym.error.Error as e:  # e.g. MuJoCo not installed
        raise TrainConfigError(f"Gymnasium env {cfg.task!r}: {e}") from None


def training_world(env):
    """The World under an SB3 VecEnv stack (VecNormalize, VecMonitor, TaiGymVecEnv)."""
    while not hasattr(env, "world"):
        env = env.venv
    return env.world


# --- training-time bookkeeping -------------------------------------------------------------
def make_monitor(run_dir: Path, cfg: TrainConfig, *, start_steps: int, wall_offset: float, quiet: bool):
    """An SB3 callback that logs progress rows, draws the progress bar and writes checkpoints."""
    from stable_baselines3.common.callbacks import BaseCallback
    from taigym.scripts.results import ProgressBar, ProgressLog, task_name

    every = cfg.checkpoint_every or max(cfg.total_timesteps // 10, 1)

    class TrainingMonitor(BaseCallback):
        def __init__(self):
            super().__init__()
            self.log = ProgressLog(run_dir / "progress.csv", window=max(20, cfg.num_envs), every=cfg.log_every)
            if start_steps:
                self.log.truncate_after(start_steps)
            self.bar = None if quiet else ProgressBar(cfg.total_timesteps, start=start_steps,
                                                      label=f"{cfg.algo} {task_name(cfg.task)}")
            self.t0 = time.perf_counter()
            self.last_checkpoint = start_steps

        def _on_training_start(self) -> None:
            # learn() has reset the envs by now, which compiled the step kernels: setup, not training
            self.t0 = time.perf_counter()
            if self.bar:
                self.bar.t0 = self.t0

        def wall_time(self) -> float:
            return wall_offset + time.perf_counter() - self.t0

        def _on_step(self) -> bool:
            ended = [info["episode"] for info in self.locals["infos"] if "episode" in info]
            if ended:
                self.log.add_episodes([e["r"] for e in ended], [e["l"] for e in ended])
            self.log.maybe_write(self.num_timesteps, self.wall_time())
            if self.bar:
                self.bar.update(self.num_timesteps, self.log.mean_return)
            return True

        def _on_rollout_end(self) -> None:
            # at a rollout's end nothing half-collected is lost by stopping here
            if self.num_timesteps - self.last_checkpoint >= every:
                save_checkpoint(run_dir, self.model, self.num_timesteps, self.wall_time())
                self.last_checkpoint = self.num_timesteps

        def _on_training_end(self) -> None:
            self.log.maybe_write(self.num_timesteps, self.wall_time(), force=True)
            if self.bar:
                self.bar.update(self.num_timesteps, self.log.mean_return, final=True)

    return TrainingMonitor()


def save_checkpoint(run_dir: Path, model, env_steps: int, wall_time_s: float) -> None:
    """Model (+ replay buffer, normalization stats) and a state file naming them, atomically enough.

    ``state.json`` is written last, so a checkpoint interrupted half-way is never resumed from.
    """
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
    from stable_baselines3.common.vec_env import VecNormalize
    from taigym.scripts.results import write_json

    ckpt = run_dir / "checkpoints"
    ckpt.mkdir(exist_ok=True)
    files = {"model": f"model_{env_steps}.zip"}
    model.save(ckpt / files["model"])
    if isinstance(model, OffPolicyAlgorithm):
        files["replay_buffer"] = f"replay_buffer_{env_steps}.pkl"
        model.save_replay_buffer(ckpt / files["replay_buffer"])
    if isinstance(model.get_env(), VecNormalize):
        files["vecnormalize"] = f"vecnormalize_{env_steps}.pkl"
        model.get_env().save(ckpt / files["vecnormalize"])
    write_json(ckpt / "state.json", {"env_steps": env_steps, "wall_time_s": wall_time_s, "files": files})
    for old in ckpt.iterdir():  # only the newest checkpoint is kept: replay buffers are large
        if old.name != "state.json" and old.name not in files.values():
            old.unlink()


def load_checkpoint_state(run_dir: Path) -> dict | None:
    import json

    path = run_dir / "checkpoints" / "state.json"
    return json.loads(path.read_text()) if path.exists() else None


# --- evaluation, video and settings on either simulator -----------------------------------
def evaluate(cfg: TrainConfig, policy, env) -> dict:
    """``results.evaluate_policy`` for a taigym task; the same measurement for a Gymnasium env."""
    from taigym.scripts import results as R

    if is_gymnasium_id(cfg.task):
        from taigym.scripts.gymnasium_envs import evaluate_gymnasium

        return evaluate_gymnasium(cfg.task, policy, cfg.eval_episodes, seed=cfg.seed)
    serial = training_world(env).serial  # the eval env shares the training kernels
    return R.evaluate_policy(cfg.task, policy, cfg.eval_episodes, seed=cfg.seed, serial=serial,
                             task_overrides=list(cfg.task_overrides))


def record_video(cfg: TrainConfig, policy, env, path: Path) -> dict:
    from taigym.scripts import results as R

    if is_gymnasium_id(cfg.task):
        from taigym.scripts.gymnasium_envs import record_gymnasium_video

        return record_gymnasium_video(cfg.task, policy, path, steps=cfg.video_steps, seed=cfg.seed)
    return R.record_video(cfg.task, policy, path, steps=cfg.video_steps, seed=cfg.seed,
                          serial=training_world(env).serial, task_overrides=list(cfg.task_overrides))


def simulation_settings(cfg: TrainConfig) -> dict:
    from taigym.scripts import results as R

    if is_gymnasium_id(cfg.task):
        from taigym.scripts.gymnasium_envs import gymnasium_simulation_settings

        return gymnasium_simulation_settings(cfg.task)
    return R.simulation_settings(cfg.task, list(cfg.task_overrides))


# --- one run -------------------------------------------------------------------------------
def build_model(cfg: TrainConfig, env, run_dir: Path, state: dict | None):
    """A new algorithm instance, or the one saved in the checkpoint ``state`` describes."""
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    algo_cls = resolve_algorithm(cfg.algo)
    if state is None:
        model = algo_cls(cfg.policy, env, seed=cfg.seed, device=cfg.device, verbose=0,
                         **algorithm_kwargs(cfg, env.action_space.shape[0]))
    else:
        ckpt = run_dir / "checkpoints"
        model = algo_cls.load(ckpt / state["files"]["model"], env=env, device=cfg.device)
        if isinstance(model, OffPolicyAlgorithm) and "replay_buffer" in state["files"]:
            model.load_replay_buffer(ckpt / state["files"]["replay_buffer"])
    model.set_logger(configure(str(run_dir / "tensorboard"), ["tensorboard"]))
    return model


def prepare_run_dir(run_dir: Path, *, resume: bool, overwrite: bool) -> None:
    if overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    if (run_dir / "config.yaml").exists() and not resume:
        raise TrainConfigError(f"{run_dir} already holds a run; pass --resume to continue it or --overwrite "
                               "to start again")
    run_dir.mkdir(parents=True, exist_ok=True)


def load_saved_config(run_dir: Path, overrides=()) -> TrainConfig:
    """The config a run was started with (its ``config.yaml``), with ``key=value`` overrides."""
    from taigym.scripts.config_files import read_mapping

    path = run_dir / "config.yaml"
    data = read_mapping(path, error=TrainConfigError)
    return validate(apply_overrides(data, list(overrides), resolve_algorithm(str(data.get("algo")))), str(path), data)


def resumed_config(run_dir: Path, cfg: TrainConfig) -> TrainConfig:
    """The saved config of the run, with only run-scope keys (budget, eval...) taken from ``cfg``.

    A model continues under the hyperparameters it was trained with; changing them on resume
    would make a run whose curve no config describes, so such a change is refused.
    """
    from taigym.scripts.config_files import read_mapping

    saved = TrainConfig(**read_mapping(run_dir / "config.yaml", error=TrainConfigError))
    changed = [k for k in changed_keys(saved.model_dump(), cfg.model_dump()) if k.split(".")[0] not in _RUN_KEYS]
    if changed:
        raise TrainConfigError(f"--resume continues {run_dir} with its saved config; these keys differ from it: "
                               f"{changed} (only {sorted(_RUN_KEYS)} may change on resume)")
    return saved.model_copy(update={k: getattr(cfg, k) for k in _RUN_KEYS})


def changed_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    """Dotted paths where two nested configs differ, e.g. ``hyperparameters.n_steps``."""
    out = []
    for key in sorted(set(a) | set(b), key=str):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            out += changed_keys(x, y, f"{prefix}{key}.")
        elif x != y:
            out.append(f"{prefix}{key}")
    return out


def sb3_policy(model, env):
    """``obs -> actions``: the model's deterministic action, on normalized obs when trained so."""
    from stable_baselines3.common.vec_env import VecNormalize

    norm = env if isinstance(env, VecNormalize) else None

    def act(obs):
        if norm is not None:
            obs = norm.normalize_obs(obs)
        return model.predict(obs, deterministic=True)[0]

    return act


def run(cfg: TrainConfig, run_dir: Path, *, resume: bool = False, overwrite: bool = False, quiet: bool = False,
        source: str = "") -> dict:
    """Train, evaluate and record one run into ``run_dir``; returns its metrics."""
    from taigym.scripts.results import no_folder_left_on_refusal

    with no_folder_left_on_refusal(run_dir, user_errors()):
        return _run(cfg, Path(run_dir), resume=resume, overwrite=overwrite, quiet=quiet, source=source)


def _run(cfg: TrainConfig, run_dir: Path, *, resume: bool, overwrite: bool, quiet: bool, source: str) -> dict:
    import torch
    from stable_baselines3.common.vec_env import VecNormalize
    from taigym.scripts import results as R

    prepare_run_dir(run_dir, resume=resume, overwrite=overwrite)
    state = load_checkpoint_state(run_dir) if resume else None
    if resume and (run_dir / "config.yaml").exists():
        cfg = resumed_config(run_dir, cfg)
    if resume and (run_dir / "metrics.json").exists():
        import json

        metrics = json.loads((run_dir / "metrics.json").read_text())
        if metrics.get("env_steps", 0) >= cfg.total_timesteps:
            if not quiet:
                print(f"{run_dir} is finished ({metrics['env_steps']} env steps); nothing to do")
            return metrics
    R.write_yaml(run_dir / "config.yaml", cfg.model_dump())
    torch.set_num_threads(cfg.torch_threads)

    setup_start = time.perf_counter()
    env = make_env(cfg)
    if state is not None and "vecnormalize" in state["files"]:
        env = VecNormalize.load(str(run_dir / "checkpoints" / state["files"]["vecnormalize"]), env.venv)
    model = build_model(cfg, env, run_dir, state)
    start_steps = state["env_steps"] if state else 0
    wall_offset = state["wall_time_s"] if state else 0.0
    if not quiet:
        what = f"resuming at {start_steps} env steps" if state else "starting"
        print(f"{cfg.algo} on {cfg.task}, seed {cfg.seed}, {cfg.num_envs} envs, {cfg.total_timesteps} env steps: "
              f"{what}; config from {source or run_dir / 'config.yaml'}; results in {run_dir}", flush=True)
    monitor = make_monitor(run_dir, cfg, start_steps=start_steps, wall_offset=wall_offset, quiet=quiet)
    model.learn(total_timesteps=max(cfg.total_timesteps - start_steps, 0), callback=monitor,
                reset_num_timesteps=state is None)
    session_s = time.perf_counter() - monitor.t0
    setup_s = monitor.t0 - setup_start
    wall_time_s = wall_offset + session_s
    model.save(run_dir / "model.zip")
    if isinstance(env, VecNormalize):
        env.save(str(run_dir / "vecnormalize.pkl"))
    save_checkpoint(run_dir, model, model.num_timesteps, wall_time_s)

    policy = sb3_policy(model, env)
    if not quiet:
        print(f"evaluating the policy over {cfg.eval_episodes} episodes...", flush=True)
    evaluation = evaluate(cfg, policy, env)
    R.write_eval_returns(run_dir / "eval_returns.csv", evaluation["returns"], evaluation["lengths"])
    video = {"video": None, "video_note": "video_steps is 0"}
    if cfg.video_steps:
        if not quiet:
            print(f"recording a video of {cfg.video_steps} steps...", flush=True)
        video = record_video(cfg, policy, env, run_dir / "video.mp4")
    metrics = {
        "task": cfg.task, "algo": cfg.algo, "seed": cfg.seed, "trainer": "stable-baselines3",
        "env_steps": int(model.num_timesteps), "num_envs": cfg.num_envs,
        "wall_time_s": wall_time_s,  # training only, summed over resumed sessions
        "env_steps_per_s": (model.num_timesteps - start_steps) / session_s if session_s > 0 else None,
        "setup_s": setup_s,  # this session: World build and kernel compilation
        "eval_return_mean": evaluation["return_mean"], "eval_return_std": evaluation["return_std"],
        "solved_return": cfg.solved_return,
        "solved": None if cfg.solved_return is None else evaluation["return_mean"] >= cfg.solved_return,
        "eval": evaluation, **video,
        "simulation": simulation_settings(cfg),
        "machine": R.machine_info(),
    }
    R.write_json(run_dir / "metrics.json", metrics)
    R.plot_learning_curve(run_dir / "progress.csv", run_dir / "learning_curve.png",
                          title=f"{cfg.algo} on {cfg.task}, seed {cfg.seed}", eval_return=evaluation["return_mean"])
    env.close()
    if not quiet:
        print(summary(metrics, run_dir))
    return metrics


def summary(metrics: dict, run_dir: Path) -> str:
    solved = "" if metrics["solved"] is None else (" (solved)" if metrics["solved"] else
                                                      f" (below the solved return {metrics['solved_return']:g})")
    lines = [(f"trained {metrics['env_steps']} env steps in {metrics['wall_time_s']:.1f} s "
              f"({metrics['env_steps_per_s'] or 0:.0f} env steps/s)"),
             (f"deterministic eval over {len(metrics['eval']['returns'])} episodes: "
              f"{metrics['eval_return_mean']:.1f} +- {metrics['eval_return_std']:.1f}{solved}")]
    if metrics.get("video"):
        lines.append(f"video: {run_dir / metrics['video']}")
    elif metrics.get("video_note"):
        lines.append(metrics["video_note"])
    lines.append(f"results: {run_dir}")
    return "\n".join(lines)


# --- command line --------------------------------------------------------------------------
@dataclass
class Args:
    task: str = DEFAULT_TASK
    algo: str = DEFAULT_ALGO
    seed: int = 0
    config: Path | None = None
    results: Path = Path("results")
    run_dir: Path | None = None
    resume: bool = False
    overwrite: bool = False
    no_video: bool = False
    quiet: bool = False
    overrides: list[str] = field(default_factory=list)


def parse_args(argv=None) -> Args:
    p = ArgumentParser(prog="taigym train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Overrides: KEY=VALUE after the task, e.g. learning_rate=1e-3 num_envs=16")
    p.add_argument("rest", nargs="*", metavar="[TASK] [KEY=VALUE ...]",
                   help=f"registered id or task YAML (default: {DEFAULT_TASK}), then config overrides")
    p.add_argument("--algo", default=DEFAULT_ALGO, help="stable-baselines3 algorithm (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--config", type=Path, help="training YAML (default: configs/train/<task>_<algo>.yaml)")
    p.add_argument("--results", type=Path, default=Path("results"), help="parent of the run folder (default: results)")
    p.add_argument("--run-dir", type=Path, help="the run folder itself (default: RESULTS/<Task>-<algo>-<seed>)")
    p.add_argument("--resume", action="store_true", help="continue the run in its folder from the last checkpoint")
    p.add_argument("--overwrite", action="store_true", help="delete an existing run folder and start again")
    p.add_argument("--no-video", action="store_true", help="skip the video of the trained policy")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    ns = p.parse_intermixed_args(argv)  # the task and overrides may come before or after options
    positional = [a for a in ns.rest if "=" not in a]
    if len(positional) > 1:
        p.error(f"one task at most, got {positional}")
    return Args(task=positional[0] if positional else DEFAULT_TASK, algo=ns.algo, seed=ns.seed, config=ns.config,
                results=ns.results, run_dir=ns.run_dir, resume=ns.resume, overwrite=ns.overwrite,
                no_video=ns.no_video, quiet=ns.quiet, overrides=[a for a in ns.rest if "=" in a])


def main(argv=None) -> int:
    args = parse_args(argv)
    from taigym.scripts.results import run_name, task_config_path

    # an unknown task fails here, before torch is imported
    if is_gymnasium_id(args.task):
        check_gymnasium_id(args.task)
    else:
        task_config_path(args.task)
    try:
        overrides = [*args.overrides, *(["video_steps=0"] if args.no_video else [])]
        algo = resolve_algorithm(args.algo).__name__
        run_dir = args.run_dir or args.results / run_name(args.task, algo, args.seed)
        if args.resume and (run_dir / "config.yaml").exists():
            cfg, source = load_saved_config(run_dir, overrides), str(run_dir / "config.yaml")
        else:
            cfg, source = load_config(args.task, algo, config_path=args.config, overrides=overrides, seed=args.seed)
        metrics = run(cfg, run_dir, resume=args.resume, overwrite=args.overwrite, quiet=args.quiet, source=source)
    except (TrainConfigError, *user_errors()) as e:
        raise SystemExit(str(e)) from None  # taigym's exit status and "error: " prefix are the CLI's
    return 0 if metrics else 1


def user_errors() -> tuple:
    """What a bad config or model raises: said in one line, without a traceback."""
    from taigym.scripts.cli import user_errors as refused

    return refused()


if __name__ == "__main__":
    # run as a file, the repository root is not on sys.path
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
