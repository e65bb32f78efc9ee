"""The ``taigym`` command: one subcommand per script, each forwarded its own arguments.

    taigym benchmark --models humanoid ant

A subcommand is a ``"module:function"`` entry in COMMANDS; the function takes the
remaining arguments as a list and returns an exit status. Modules are imported only when
their subcommand runs, so ``taigym --help`` stays fast and one script's dependencies
(Taichi, MuJoCo, torch...) are never needed by another.

Every subcommand refuses input the same way: it raises one of ``user_errors()`` or
``SystemExit("message")``, and ``taigym`` prints ``error: message`` as one line on stderr
and exits with status 2 (argparse's own refusals exit 2 too). Any other exception keeps its
traceback: it is a bug, not an answer to bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> ("module:function", one-line help)
COMMANDS = {
    "benchmark": ("taigym.scripts.benchmark:main", "physics steps/s of our engine next to MuJoCo on the same models"),
    "benchmark-envs": ("taigym.scripts.benchmark_envs:main", "env steps/s of the native vector envs next to Gymnasium's"),
    "benchmark-variants": ("taigym.scripts.benchmark_variants:main",
                           "physics or env steps/s (and instructions) of builds, settings or source trees, in paired turns"),
    "benchmark-pixels": ("taigym.scripts.benchmark_pixels:main",
                         "frames/s of the camera observation (from pixels) next to dm_control's renderer"),
    "benchmark-training": ("taigym.scripts.benchmark_training:main",
                           "the main job's training speed next to the same training on Gymnasium's env"),
    "cross-eval": ("taigym.scripts.cross_eval:main",
                   "trained policies evaluated on both simulators: the taigym port and Gymnasium's MuJoCo env"),
    "fidelity": ("taigym.scripts.fidelity:main",
                 "your MJCF or URDF robot in taigym next to MuJoCo: qM, bias, qacc, contacts, a rollout"),
    "train": ("taigym.scripts.train:main", "train a policy with stable-baselines3 (PPO, SAC, ...) and record the results"),
    "train-ppo": ("taigym.scripts.train_ppo:main", "PPO in one file, directly on the native vector env"),
    "leaderboard": ("taigym.scripts.leaderboard:main", "run a versioned training protocol and render the leaderboard"),
    "gpu-probe": ("taigym.scripts.gpu_probe:main",
                  "what a short time on a GPU machine should measure, appended to OUTDIR/probe.jsonl as it comes"),
    "play": ("taigym.scripts.play:main", "run a saved policy (or random actions) and write a video"),
    "random-actions": ("taigym.scripts.random_actions:main",
                       "episode lengths and ending causes under random actions, next to Gymnasium's v5 envs"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="taigym",
        description="Batched rigid-body physics in Taichi with Gymnasium environments.",
        epilog="Run 'taigym COMMAND --help' for a command's own options.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, (_, help_text) in COMMANDS.items():
        # add_help=False: "--help" after a command belongs to that command's own parser
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def load_command(name: str):
    """The function behind a subcommand, imported now."""
    module_name, function_name = COMMANDS[name][0].split(":")
    return getattr(importlib.import_module(module_name), function_name)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # only the first word is ours; the rest, options included, goes to the subcommand
    args = parser.parse_args(argv[:1])
    if args.command is None:
        parser.print_help()
        return 2
    try:
        status = load_command(args.command)(argv[1:])
    except user_errors() as e:
        return refuse(e)
    except SystemExit as e:
        # a message is a script's refusal; a number is a status (argparse's 2 included)
        if isinstance(e.code, str):
            return refuse(e.code)
        raise
    return int(status or 0)


def refuse(reason) -> int:
    """A refused config, model, World or option is the user's to fix: one line, no traceback."""
    text = " ".join(line.strip() for line in str(reason).splitlines() if line.strip())
    print(f"error: {text}", file=sys.stderr)
    return 2


def user_errors() -> tuple:
    """What a bad task or training config, robot model or World setting raises."""
    from taigym.physics.errors import ModelError, WorldError
    from taigym.scripts.config_files import ConfigFileError
    from taigym.tasks.errors import ConfigError

    return ConfigError, ConfigFileError, ModelError, WorldError


if __name__ == "__main__":
    sys.exit(main())
