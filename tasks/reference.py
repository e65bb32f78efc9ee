"""A task's terms evaluated on arrays: the reference for the one-launch env step.

A step term is written once, as World-program instructions (``Term.ops``); the env runs them
inside the World's step launch (tasks/term_program.py), and this module runs the same
instructions on the host with numpy (or on the World's device with torch) through
physics/step/program_host.py. Tests compare both against closed forms and Gymnasium.

``before`` and ``after`` map quantity names to arrays shaped as ``World.get`` gives them:
the state before a step (what differenced terms compare with, and where the action's
controls are written) and after it. ``quantities`` makes them from a World.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.step.program_host import run_segment, touches

from .term_program import POST, PRE, RESET, StepOutputs


def quantities(world, task, env_ids=None, tensors=False) -> dict:
    """Copies of the World quantities ``task``'s program reads or writes, of every env or rows
    ``env_ids``; numpy arrays, or torch tensors on the World's device with ``tensors``."""
    get = world.get_tensor if tensors else world.get
    out = {}
    for name in sorted(touches(task.program.program) | {"qpos", "qvel"}):
        value = get(name)
        out[name] = value if env_ids is None else value[env_ids]
    return out


def registers(task, num_envs: int, like=None):
    """Zeroed registers for ``num_envs`` envs in float64 (numpy, or ``like``'s torch device):
    commands and term memory start at zero, as after a reset that drew no command."""
    if like is None or isinstance(like, np.ndarray):
        return np.zeros((num_envs, task.program.program.nregisters))
    import torch

    return torch.zeros((num_envs, task.program.program.nregisters), dtype=torch.float64, device=like.device)


def step(task, before: dict, after: dict, action, regs=None) -> StepOutputs:
    """One env step's outputs for the envs of ``before``/``after`` given ``action``
    ((n, action_size)); ``regs`` carries commands and term memory in and out (updated in
    place), zero when not given. ``before`` receives the controls the action maps to."""
    p = task.program
    n = before["qpos"].shape[0]
    regs = registers(task, n, before["qpos"]) if regs is None else regs
    regs[:, p.action.start : p.action.stop] = action
    run_segment(p.program, PRE, regs, before)
    run_segment(p.program, POST, regs, after)
    host = regs if isinstance(regs, np.ndarray) else regs.detach().cpu().numpy()
    return p.outputs(host)


def observe(task, now: dict, regs=None) -> np.ndarray:
    """(n, obs_size) observations of the envs in ``now`` (the reset observation)."""
    p = task.program
    regs = registers(task, now["qpos"].shape[0], now["qpos"]) if regs is None else regs
    run_segment(p.program, RESET, regs, now)
    host = regs if isinstance(regs, np.ndarray) else regs.detach().cpu().numpy()
    return host[:, p.obs.start : p.obs.stop].astype(np.float64)


def term(task, bound, before: dict, after: dict, action=None, terminated=None, regs=None) -> np.ndarray:
    """One bound step term of ``task`` (e.g. ``task.rewards[0][2]``) evaluated alone:
    (n, width) values, from its instructions on the host, with the step's ``action`` and
    termination flags (zero when not given) and ``regs`` (commands and memory, see
    :func:`registers`; a term that updates memory updates it there)."""
    from taigym.physics.step.program import ProgramBuilder

    from .term_program import TermCompiler

    b = ProgramBuilder()
    action_regs, terminated_regs = b.alloc(task.action_size), b.alloc(1)
    c = TermCompiler(task, b, action_regs, terminated_regs)
    c.observing = bound in [o.term for o in task.observations]
    out = bound.ops(c)
    program = b.build()
    n = before["qpos"].shape[0]
    own = np.zeros((n, program.nregisters))
    if regs is not None:  # commands and memory at the task program's places
        p = task.program
        for mine, theirs in ((c.commands_now, p.commands_now), (c.commands_next, p.commands_next),
                             (c.memories, p.memories)):
            for name, at in mine.items():
                own[:, at.start : at.stop] = regs[:, theirs[name].start : theirs[name].stop]
    if action is not None:
        own[:, action_regs.start : action_regs.stop] = action
    if terminated is not None:
        own[:, terminated_regs.start] = terminated
    run_segment(program, PRE, own, before)
    run_segment(program, POST, own, after)
    if regs is not None:
        for name, at in c.memories.items():
            regs[:, p.memories[name].start : p.memories[name].stop] = own[:, at.start : at.stop]
    return own[:, out.start : out.stop]
