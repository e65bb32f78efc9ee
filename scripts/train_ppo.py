"""PPO on taigym's native vector env, in one readable file (in the manner of CleanRL's ppo_continuous_action.py).

    python scripts/train_ppo.py                                    # InvertedPendulum, 100k env steps
    python scripts/train_ppo.py TaiGym/Reacher-v0 --num-envs 64 --total-timesteps 500000
    python scripts/train_ppo.py --num-envs 4096 --num-steps 16     # thousands of envs, one World
    taigym train-ppo ...                                           # the same, as a subcommand

The whole batch lives in one World (``gym.make_vec(..., autoreset_mode="SameStep",
tensor_backend="torch")``): no per-env Python objects, no DummyVecEnv copies, and the env
hands the policy torch tensors on the World's device and takes its actions as tensors. Observations are normalized by running mean and variance; advantages come from
GAE with bootstrapping through time-limit truncations (the value of the episode's last
observation, from ``info["final_obs"]``); the policy loss is PPO's clipped surrogate,
the value loss optionally clipped too.

The run writes the same results folder as ``scripts/train.py``
(``results/<Task>-NativePPO-<seed>/``, layout in ``scripts/results.py``), with the policy
and normalizer in ``model.pt``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

REPO_ROOT = Path(__file__).resolve().parents[1]
ALGO_NAME = "NativePPO"
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@dataclass
class Args:
    task: str = "TaiGym/InvertedPendulum-v0"  # registered id or task YAML
    seed: int = 0
    total_timesteps: int = 100_000  # env steps, summed over the batch
    num_envs: int = 32  # envs in the one World: more envs per step cost less per env step
    num_steps: int = 64  # steps per env per rollout (32 x 64 = 2048 per update)
    learning_rate: float = 1e-3
    anneal_lr: bool = False  # decay the learning rate linearly to 0
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 8
    update_epochs: int = 10
    clip_coef: float = 0.2  # policy ratio clipping
    clip_vloss: bool = False  # clip the value update as the policy's (PPO2's value clipping)
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None  # stop an update's epochs early past this KL
    norm_obs: bool = True  # running mean/std normalization of observations
    norm_reward: bool = False  # scale rewards by the running std of the discounted return
    hidden_sizes: tuple[int, ...] = (64, 64)
    log_std_init: float = 0.0
    eval_episodes: int = 10  # deterministic episodes after training
    video_steps: int = 300  # 0: no video
    checkpoint_every: int = 0  # env steps between checkpoints; 0: a tenth of the run
    log_every: int = 1000  # env steps between rows of progress.csv
    solved_return: float | None = None  # eval return counted as solved (reported only)
    torch_threads: int = 1
    device: str = "cpu"  # torch device of the networks
    task_overrides: tuple[str, ...] = ()  # task config overrides, "key.sub=value"


# --- networks ------------------------------------------------------------------------------
def make_networks(obs_size: int, action_size: int, args: Args):
    """Actor (Gaussian, state-independent log std) and critic MLPs with CleanRL's init."""
    import torch
    from torch import nn

    def layer(n_in, n_out, std=2**0.5):
        lin = nn.Linear(n_in, n_out)
        nn.init.orthogonal_(lin.weight, std)
        nn.init.constant_(lin.bias, 0.0)
        return lin

    def mlp(n_out, out_std):
        layers, n_in = [], obs_size
        for h in args.hidden_sizes:
            layers += [layer(n_in, h), nn.Tanh()]
            n_in = h
        return nn.Sequential(*layers, layer(n_in, n_out, out_std))

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.critic = mlp(1, 1.0)
            self.actor_mean = mlp(action_size, 0.01)  # small: the first actions stay near 0
            self.actor_logstd = nn.Parameter(torch.full((1, action_size), float(args.log_std_init)))

        def value(self, obs):
            return self.critic(obs).squeeze(-1)

        def action_and_value(self, obs, action=None):
            # the diagonal Gaussian's sample, log-density and entropy in closed form: a
            # torch.distributions object costs more than the small networks it wraps
            mean = self.actor_mean(obs)
            log_std = self.actor_logstd.expand_as(mean)
            std = log_std.exp()
            if action is None:
                with torch.no_grad():
                    action = mean + std * torch.randn_like(mean)
            log_prob = (-0.5 * ((action - mean) / std) ** 2 - log_std - HALF_LOG_2PI).sum(-1)
            entropy = (0.5 + HALF_LOG_2PI + log_std).sum(-1)
            return action, log_prob, entropy, self.value(obs)

    return Agent()


class RunningMeanStd:
    """Running mean and variance of a batch stream (Chan et al.'s parallel update), in torch."""

    def __init__(self, shape, device):
        import torch

        self.mean = torch.zeros(shape, dtype=torch.float64, device=device)
        self.var = torch.ones(shape, dtype=torch.float64, device=device)
        self.count = 1e-4

    def update(self, x) -> None:
        x = x.double()
        batch_mean, batch_var, n = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + n
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x, clip: float = 10.0):
        import torch

        return torch.clamp((x - self.mean) / torch.sqrt(self.var + 1e-8), -clip, clip).float()

    def state_dict(self) -> dict:
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, d: dict) -> None:
        self.mean, self.var, self.count = d["mean"], d["var"], d["count"]


class RewardScaler:
    """Divides rewards by the running std of each env's discounted return (Gymnasium's NormalizeReward)."""

    def __init__(self, num_envs: int, gamma: float, device):
        import torch

        self.gamma, self.rms = gamma, RunningMeanStd((), device)
        self.returns = torch.zeros(num_envs, dtype=torch.float64, device=device)

    def scale(self, reward, done):
        import torch

        self.returns = self.returns * self.gamma + reward.double()
        self.rms.update(self.returns)
        self.returns = torch.where(done, torch.zeros_like(self.returns), self.returns)
        return (reward / torch.sqrt(self.rms.var + 1e-8)).float()


# --- rollout and update --------------------------------------------------------------------
def collect_rollout(env, agent, obs_rms, reward_scaler, state, buf, args: Args, episodes):
    """Fill ``buf`` with ``num_steps`` batched steps; returns the observation after the last.

    Truncated episodes are bootstrapped: their reward gets gamma * V(last obs of the
    episode), since the time limit, not the task, ended them.
    """
    import torch

    obs = state["obs"]  # torch, on the env's device: the env returns tensors (tensor_backend="torch")
    low = torch.as_tensor(env.single_action_space.low, device=args.device)
    high = torch.as_tensor(env.single_action_space.high, device=args.device)
    for step in range(args.num_steps):
        raw = obs.to(args.device)
        if args.norm_obs:
            obs_rms.update(raw)
        x = obs_rms.normalize(raw) if args.norm_obs else raw.float()
        with torch.no_grad():
            action, logprob, _, value = agent.action_and_value(x)
        obs, reward, terminated, truncated, info = env.step(torch.clamp(action, low, high))
        done = (terminated | truncated).to(args.device)
        episodes.record(reward, done)
        reward_t = reward.to(args.device, torch.float32)
        if args.norm_reward:
            reward_t = reward_scaler.scale(reward_t, done)
        cut = torch.nonzero(truncated & ~terminated).flatten().to(args.device)
        if len(cut):
            final = info["final_obs"].to(args.device)[cut]
            final = obs_rms.normalize(final) if args.norm_obs else final.float()
            with torch.no_grad():
                reward_t[cut] += args.gamma * agent.value(final)
        buf["obs"][step], buf["actions"][step], buf["logprobs"][step] = x, action, logprob
        buf["values"][step], buf["rewards"][step], buf["dones"][step] = value, reward_t, done.float()
    state["obs"] = obs
    return obs


def compute_gae(agent, next_obs_x, buf, args: Args):
    """Advantages and returns by GAE(lambda); ``dones[t]`` ends the episode after step t."""
    import torch

    with torch.no_grad():
        next_value = agent.value(next_obs_x)
    advantages = torch.zeros_like(buf["rewards"])
    last = torch.zeros_like(next_value)
    for t in reversed(range(args.num_steps)):
        value_next = next_value if t == args.num_steps - 1 else buf["values"][t + 1]
        not_done = 1.0 - buf["dones"][t]
        delta = buf["rewards"][t] + args.gamma * value_next * not_done - buf["values"][t]
        last = delta + args.gamma * args.gae_lambda * not_done * last
        advantages[t] = last
    return advantages, advantages + buf["values"]


def update_policy(agent, optimizer, buf, advantages, returns, args: Args, generator) -> dict:
    """PPO's clipped-surrogate epochs over shuffled minibatches; returns the last losses."""
    import torch
    from torch import nn

    b = {k: v.reshape(-1, *v.shape[2:]) for k, v in buf.items()}
    b_adv, b_ret = advantages.reshape(-1), returns.reshape(-1)
    batch_size = b_adv.shape[0]
    minibatch = max(1, batch_size // args.num_minibatches)
    stats = {}
    for _ in range(args.update_epochs):
        order = torch.randperm(batch_size, generator=generator, device="cpu").to(args.device)
        for start in range(0, batch_size, minibatch):
            idx = order[start:start + minibatch]
            _, logprob, entropy, value = agent.action_and_value(b["obs"][idx], b["actions"][idx])
            log_ratio = logprob - b["logprobs"][idx]
            ratio = log_ratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()  # Schulman's low-variance estimator
            adv = b_adv[idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
            if args.clip_vloss:
                v_clipped = b["values"][idx] + (value - b["values"][idx]).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((value - b_ret[idx]) ** 2, (v_clipped - b_ret[idx]) ** 2).mean()
            else:
                v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
            loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm, foreach=True)
            optimizer.step()
        stats = {"policy_loss": pg_loss.item(), "value_loss": v_loss.item(), "entropy": entropy.mean().item(),
                 "approx_kl": approx_kl.item()}
        if args.target_kl is not None and approx_kl > args.target_kl:
            break
    return stats


class EpisodeStats:
    """Running return and length of every env; finished episodes go to the progress log."""

    def __init__(self, num_envs: int, log, device="cpu"):
        import torch

        self.returns = torch.zeros(num_envs, dtype=torch.float64, device=device)
        self.lengths = torch.zeros(num_envs, dtype=torch.int64, device=device)
        self.log = log

    def record(self, reward, done) -> None:
        self.returns += reward.to(self.returns.device)
        self.lengths += 1
        done = done.to(self.returns.device)
        if done.any():
            self.log.add_episodes(self.returns[done].cpu().numpy(), self.lengths[done].cpu().numpy())
            self.returns[done], self.lengths[done] = 0.0, 0


# --- checkpoints ---------------------------------------------------------------------------
def save_checkpoint(path: Path, agent, optimizer, obs_rms, reward_scaler, global_step: int, wall_time_s: float):
    import torch

    tmp = path.with_suffix(".tmp")  # renamed into place: an interrupted save leaves the old one
    torch.save({"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), "obs_rms": obs_rms.state_dict(),
                "reward_rms": reward_scaler.rms.state_dict(), "global_step": global_step,
                "wall_time_s": wall_time_s}, tmp)
    tmp.replace(path)


# --- main loop -----------------------------------------------------------------------------
def train(args: Args, run_dir: Path, *, resume: bool = False, quiet: bool = False) -> dict:
    """Train, evaluate and record one run into ``run_dir``; returns its metrics."""
    from taigym.scripts.cli import user_errors
    from taigym.scripts.results import no_folder_left_on_refusal

    with no_folder_left_on_refusal(run_dir, user_errors()):
        return _train(args, Path(run_dir), resume=resume, quiet=quiet)


def make_batch(args: Args, num_envs: int):
    """The native vector env of ``args.task`` (a registered id or a task YAML path), torch
    tensors in and out: the batch never goes through numpy in this script."""
    from gymnasium.vector import AutoresetMode
    from taigym.envs.vector import TaiGymVectorEnv
    from taigym.scripts.results import task_config_path

    return TaiGymVectorEnv(str(task_config_path(args.task)), num_envs, autoreset_mode=AutoresetMode.SAME_STEP,
                           overrides=list(args.task_overrides), tensor_backend="torch")


def _train(args: Args, run_dir: Path, *, resume: bool, quiet: bool) -> dict:
    import torch
    from taigym.scripts import results as R
    from torch.utils.tensorboard import SummaryWriter

    from taigym import envs  # noqa: F401  registers the task ids

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = run_dir / "checkpoints" / "checkpoint.pt"
    if (run_dir / "metrics.json").exists() and resume:
        import json

        metrics = json.loads((run_dir / "metrics.json").read_text())
        if metrics["env_steps"] >= args.total_timesteps:
            return metrics
    if resume:
        check_resumable(run_dir, args)
    R.write_yaml(run_dir / "config.yaml", {"algo": ALGO_NAME, **args_to_dict(args)})
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    # --- env and agent ---
    setup_start = time.perf_counter()
    env = make_batch(args, args.num_envs)
    obs, _ = env.reset(seed=args.seed)  # compiles the step kernels: counted as setup
    obs_size, action_size = env.single_observation_space.shape[0], env.single_action_space.shape[0]
    agent = make_networks(obs_size, action_size, args).to(args.device)
    # one fused kernel per step instead of a loop over parameters
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    obs_rms = RunningMeanStd((obs_size,), args.device)
    reward_scaler = RewardScaler(args.num_envs, args.gamma, args.device)
    global_step, wall_offset = 0, 0.0
    if resume and ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location=args.device, weights_only=False)
        agent.load_state_dict(ckpt["agent"])
        optimizer.load_state_dict(ckpt["optimizer"])
        obs_rms.load_state_dict(ckpt["obs_rms"])
        reward_scaler.rms.load_state_dict(ckpt["reward_rms"])
        global_step, wall_offset = ckpt["global_step"], ckpt["wall_time_s"]
    ckpt_path.parent.mkdir(exist_ok=True)

    log = R.ProgressLog(run_dir / "progress.csv", window=max(20, args.num_envs), every=args.log_every)
    log.truncate_after(global_step)
    episodes = EpisodeStats(args.num_envs, log, device=env.unwrapped.device)
    writer = SummaryWriter(str(run_dir / "tensorboard"))
    bar = None if quiet else R.ProgressBar(args.total_timesteps, start=global_step,
                                           label=f"{ALGO_NAME} {R.task_name(args.task)}")
    if not quiet:
        print(f"{ALGO_NAME} on {args.task}, seed {args.seed}, {args.num_envs} envs, {args.total_timesteps} env steps"
              f"{f', resuming at {global_step}' if global_step else ''}; results in {run_dir}", flush=True)

    # rollout storage: (num_steps, num_envs, ...) tensors on the training device
    shape = (args.num_steps, args.num_envs)
    buf = {"obs": torch.zeros(*shape, obs_size, device=args.device),
           "actions": torch.zeros(*shape, action_size, device=args.device),
           **{k: torch.zeros(shape, device=args.device) for k in ("logprobs", "rewards", "dones", "values")}}
    state = {"obs": obs}
    generator = torch.Generator().manual_seed(args.seed)
    batch = args.num_envs * args.num_steps
    num_updates = max(1, -(-(args.total_timesteps - global_step) // batch))
    every = args.checkpoint_every or max(args.total_timesteps // 10, 1)
    last_ckpt, start_step = global_step, global_step
    setup_s = time.perf_counter() - setup_start
    t0 = time.perf_counter()

    for update in range(num_updates):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - global_step / args.total_timesteps)
        next_obs = collect_rollout(env, agent, obs_rms, reward_scaler, state, buf, args, episodes)
        global_step += batch
        raw = next_obs.to(args.device)
        advantages, returns = compute_gae(agent, obs_rms.normalize(raw) if args.norm_obs else raw.float(), buf, args)
        stats = update_policy(agent, optimizer, buf, advantages, returns, args, generator)

        wall = wall_offset + time.perf_counter() - t0
        log.maybe_write(global_step, wall)
        for k, v in stats.items():
            writer.add_scalar(f"losses/{k}", v, global_step)
        writer.add_scalar("charts/mean_return", log.mean_return, global_step)
        writer.add_scalar("charts/steps_per_s", (global_step - start_step) / max(wall - wall_offset, 1e-9), global_step)
        if bar:
            bar.update(global_step, log.mean_return)
        if global_step - last_ckpt >= every:
            save_checkpoint(ckpt_path, agent, optimizer, obs_rms, reward_scaler, global_step, wall)
            last_ckpt = global_step

    session_s = time.perf_counter() - t0
    wall_time_s = wall_offset + session_s
    log.maybe_write(global_step, wall_time_s, force=True)
    if bar:
        bar.update(global_step, log.mean_return, final=True)
    save_checkpoint(ckpt_path, agent, optimizer, obs_rms, reward_scaler, global_step, wall_time_s)
    torch.save({"agent": agent.state_dict(), "obs_rms": obs_rms.state_dict(), "args": args_to_dict(args)},
               run_dir / "model.pt")
    writer.close()
    serial = env.unwrapped.world.serial  # the eval and video envs share the training kernels
    env.close()
    return finish(args, run_dir, agent, obs_rms, serial=serial, global_step=global_step, start_step=start_step,
                  wall_time_s=wall_time_s, session_s=session_s, setup_s=setup_s, quiet=quiet)


RUN_KEYS = {"total_timesteps", "eval_episodes", "video_steps", "checkpoint_every", "log_every", "solved_return",
            "torch_threads"}  # may change when a run is resumed


def check_resumable(run_dir: Path, args: Args) -> None:
    """Refuse to resume a run under other hyperparameters than it was trained with."""
    from taigym.scripts.config_files import read_mapping

    path = run_dir / "config.yaml"
    if not path.exists():
        return
    saved = read_mapping(path)
    current = {"algo": ALGO_NAME, **args_to_dict(args)}
    changed = sorted(k for k in set(saved) | set(current) if k not in RUN_KEYS and saved.get(k) != current.get(k))
    if changed:
        raise SystemExit(f"--resume continues {run_dir} with its saved config; these keys differ from it: {changed} "
                         f"(only {sorted(RUN_KEYS)} may change on resume)")


def deterministic_policy(agent, obs_rms, args: Args):
    """``obs -> actions``: the actor's mean action on normalized observations, clipped by the env."""
    import torch

    def act(obs):
        x = torch.as_tensor(obs, device=args.device)
        x = obs_rms.normalize(x) if args.norm_obs else x.float()
        with torch.no_grad():
            return agent.actor_mean(x).cpu().numpy()

    return act


def finish(args: Args, run_dir: Path, agent, obs_rms, *, serial=None, global_step, start_step, wall_time_s, session_s, setup_s,
           quiet) -> dict:
    """Deterministic evaluation, video, metrics and plot: the end every run shares with train.py."""
    from taigym.scripts import results as R
    from taigym.scripts.train import summary

    overrides = list(args.task_overrides)
    policy = deterministic_policy(agent, obs_rms, args)
    evaluation = R.evaluate_policy(args.task, policy, args.eval_episodes, seed=args.seed, task_overrides=overrides,
                                   serial=serial)
    R.write_eval_returns(run_dir / "eval_returns.csv", evaluation["returns"], evaluation["lengths"])
    video = {"video": None, "video_note": "video_steps is 0"}
    if args.video_steps:
        video = R.record_video(args.task, policy, run_dir / "video.mp4", steps=args.video_steps, seed=args.seed,
                               task_overrides=overrides, serial=serial)
    metrics = {
        "task": args.task, "algo": ALGO_NAME, "seed": args.seed, "trainer": "scripts/train_ppo.py",
        "env_steps": int(global_step), "num_envs": args.num_envs,
        "wall_time_s": wall_time_s,  # training only, summed over resumed sessions
        "env_steps_per_s": (global_step - start_step) / session_s if session_s > 0 else None,
        "setup_s": setup_s,
        "eval_return_mean": evaluation["return_mean"], "eval_return_std": evaluation["return_std"],
        "solved_return": args.solved_return,
        "solved": None if args.solved_return is None else evaluation["return_mean"] >= args.solved_return,
        "eval": evaluation, **video,
        "simulation": R.simulation_settings(args.task, overrides),
        "machine": R.machine_info(),
    }
    R.write_json(run_dir / "metrics.json", metrics)
    R.plot_learning_curve(run_dir / "progress.csv", run_dir / "learning_curve.png",
                          title=f"{ALGO_NAME} on {args.task}, seed {args.seed}", eval_return=evaluation["return_mean"])
    if not quiet:
        print(summary(metrics, run_dir))
    return metrics


# --- command line --------------------------------------------------------------------------
def args_to_dict(args: Args) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(args).items()}


def args_from_dict(data: dict, *, source: str = "config") -> Args:
    """An :class:`Args` from a mapping; unknown keys are errors naming the key."""
    from taigym.tasks.errors import did_you_mean

    names = {f.name for f in dataclasses.fields(Args)}
    for key in data:
        if key not in names:
            hint = did_you_mean(key, names)
            raise ValueError(f"{source}: unknown key {key!r}" + (f"; did you mean {hint!r}?" if hint else ""))
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return Args(**values)


def parse_args(argv=None):
    """Every field of :class:`Args` as ``--field-name``; returns (args, run_dir, resume, quiet)."""
    from taigym.scripts.config_files import ConfigFileError, read_mapping
    from taigym.scripts.results import parse_value, with_numbers

    p = ArgumentParser(prog="taigym train-ppo", description=__doc__.split("\n\n")[0])
    p.add_argument("task", nargs="?", default=Args.task, help="registered id or task YAML (default: %(default)s)")
    p.add_argument("--config", type=Path, help="YAML of Args fields; command-line options override it")
    p.add_argument("--results", type=Path, default=Path("results"), help="parent of the run folder")
    p.add_argument("--run-dir", type=Path, help="the run folder (default: RESULTS/<Task>-NativePPO-<seed>)")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    p.add_argument("--no-video", action="store_true")
    p.add_argument("--quiet", action="store_true")
    for f in dataclasses.fields(Args):
        if f.name == "task":
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            p.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), metavar="BOOL")
        elif f.name in ("hidden_sizes", "task_overrides"):
            p.add_argument(flag, nargs="*", type=int if f.name == "hidden_sizes" else str)
        else:
            p.add_argument(flag, type=parse_value, metavar=f.name.upper())
    ns = p.parse_args(argv)
    data = with_numbers(read_mapping(ns.config)) if ns.config else {}
    data = {**data, "task": ns.task}
    for f in dataclasses.fields(Args):
        value = getattr(ns, f.name)
        if f.name != "task" and value is not None:
            data[f.name] = value
    if ns.no_video:
        data["video_steps"] = 0
    try:
        args = args_from_dict(data, source=str(ns.config or "options"))
    except ValueError as e:
        raise ConfigFileError(str(e)) from None
    from taigym.scripts.results import run_name

    return args, ns.run_dir or ns.results / run_name(args.task, ALGO_NAME, args.seed), ns.resume, ns.quiet


def main(argv=None) -> int:
    args, run_dir, resume, quiet = parse_args(argv)
    from taigym.scripts.results import task_config_path

    task_config_path(args.task)  # an unknown task fails before anything is built
    train(args, run_dir, resume=resume, quiet=quiet)
    return 0


if __name__ == "__main__":
    # run as a file, the repository root is not on sys.path
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
