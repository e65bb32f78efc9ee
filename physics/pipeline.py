"""The kernels a World launches: one parallel loop over worlds, every stage inside it.

On CPU a launch costs ~0.1 ms of thread-pool dispatch plus ~10 us per array argument,
so a whole step -- and every one of ``nstep`` steps -- runs in one launch.
"""


import functools
import types

import taichi as ti

from .forward import make_forward
from .integrate import make_integrate

nd = ti.types.ndarray()


@functools.lru_cache(maxsize=None)
def make_kernels(fp):
    forward = make_forward(fp)
    step = make_integrate(fp)

    @ti.kernel
    def forward_kernel(
        # Model:
        sizes: nd, body_i: nd, jnt_i: nd, dof_i: nd, act_i: nd, ten_i: nd, wrap_i: nd,
        body_f: nd, jnt_f: nd, dof_f: nd, q_f: nd, act_f: nd, ten_f: nd, wrap_f: nd, opt_f: nd,
        # Data in:
        qpos: nd, qvel: nd, ctrl: nd, qfrc_applied: nd,
        # Data out:
        qacc: nd, body_d: nd, jnt_d: nd, dof_d: nd, qM: nd, qLD: nd, act_d: nd, ten_d: nd,
    ):
        for w in range(qpos.shape[0]):
            forward(w, sizes, body_i, jnt_i, dof_i, act_i, ten_i, wrap_i, body_f, jnt_f, dof_f, q_f, act_f, ten_f,
                    wrap_f, opt_f, qpos, qvel, qacc, ctrl, qfrc_applied, body_d, jnt_d, dof_d, qM, qLD, act_d, ten_d)

    @ti.kernel
    def step_kernel(
        # Model:
        sizes: nd, body_i: nd, jnt_i: nd, dof_i: nd, act_i: nd, ten_i: nd, wrap_i: nd,
        body_f: nd, jnt_f: nd, dof_f: nd, q_f: nd, act_f: nd, ten_f: nd, wrap_f: nd, opt_f: nd,
        # Data in:
        ctrl: nd, qfrc_applied: nd,
        # Data in/out:
        qpos: nd, qvel: nd,
        # Data out:
        qacc: nd, qpos_start: nd, body_d: nd, jnt_d: nd, dof_d: nd, qM: nd, qLD: nd, act_d: nd, ten_d: nd,
        nstep: ti.i32,
    ):
        for w in range(qpos.shape[0]):
            for _ in range(nstep):
                step(w, sizes, body_i, jnt_i, dof_i, act_i, ten_i, wrap_i, body_f, jnt_f, dof_f, q_f, act_f, ten_f,
                     wrap_f, opt_f, qpos, qvel, qacc, ctrl, qfrc_applied, qpos_start, body_d, jnt_d, dof_d, qM, qLD,
                     act_d, ten_d)

    return types.SimpleNamespace(forward=forward_kernel, step=step_kernel)
