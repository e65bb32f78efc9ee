"""The kernel a World launches: one parallel loop over worlds, every stage inside it.

forward() and step() share it (``advance``, physics/step/integrate.py: FORWARD, STEP or
STEP_REFRESH): the fused pipeline is large, and one kernel compiles in half the time of two.

On CPU a launch costs ~0.1 ms of thread-pool dispatch plus ~10 us per array argument,
so a whole step -- and every one of ``nstep`` steps -- runs in one launch.

Taichi's CPU range-for hands each thread blocks of at least 512 iterations, whatever the
loop asks for (taichi 1.7.4 and quadrants alike), so a plain loop over fewer than 1024 envs
ran on one thread. The env loops therefore run over ``ntask`` blocks of TASK iterations and
deal the envs out round-robin (iteration t of block k takes env ``(t % TASK) * ntask + k``,
then every ``ntask * TASK``-th after it): each block is a task a thread takes, so with
``ntask`` at least the thread count every core works from 2 envs up. On CUDA ``ntask`` is
``ceil(num_envs / TASK)`` and thread t steps env t: the 32 lanes of a warp step 32
consecutive envs, whose copies of a table entry lie side by side under the interleaved
layout (physics/runtime/lanes.py; on an H200 the CPU's dealing and this stepped Ant at the same
rate with env-major tables).
"""


import functools
import inspect
import types

from ..constraint.reaction import make_reaction
from ..features import ALL, Features
from ..runtime.backend import current_device, ti
from ..runtime.taichi_adapter import expanded_math_in, scalar_loops_in
from ..step.env_tables import env_sets, env_view, sizes_in_registers
from ..step.integrate import REFRESH, STEP, STEP_REFRESH, make_integrate
from ..step.outline import table_types
from ..step.program import make_program
from ..step.tables import TABLES, step_tables, with_tables

TASK = 512  # iterations per block of Taichi's CPU range-for
_NDARRAY_TYPE = type(ti.types.ndarray(ndim=1))


def env_tasks(num_envs: int, device: str, threads: int) -> int:
    """The ``ntask`` argument of the env loops: blocks of TASK iterations to deal envs into."""
    if device == "cuda":
        return max(1, -(-num_envs // TASK))
    return max(1, min(4 * threads, num_envs))  # a few blocks per thread balance unequal envs


def consecutive_lanes() -> bool:
    """Whether env loops give thread t env t (CUDA) rather than dealing envs round-robin
    into blocks of TASK (the CPU's thread pool)."""
    return current_device() == "cuda"


def array_parameters(kernel) -> tuple:
    """The names of a kernel's array parameters, in order: its signature is their one list."""
    return tuple(p.name for p in inspect.signature(kernel).parameters.values()
                 if isinstance(p.annotation, _NDARRAY_TYPE))


def make_kernels(fp, solver: str = "Newton", cone: str = "pyramidal", features: Features = ALL,
                 serial: bool = False, outline: bool = False, scalar: bool = False, baked: tuple | None = None):
    """The kernels for one precision and constraint solver configuration (a model's
    ``opt.solver`` and ``opt.cone``): each compiles only its own solver, and only the parts
    ``features`` names (physics/features.py). ``serial`` loops over the envs in the calling
    thread (CPU only); ``outline`` compiles the large stages as functions of their own
    (physics/step/outline.py); ``scalar`` keeps LLVM from vectorizing and unrolling their
    loops (physics/runtime/taichi_adapter/loops.py, ``scalar_loops``). The step kernel takes
    the tables layout.KERNEL_TABLES declares now. ``baked``: the one model's sizes the step
    kernel is traced with (physics/step/env_tables.py), or None for a kernel that reads them
    and serves any model."""
    return _make_kernels(fp, solver, cone, features, serial, outline, scalar, step_tables(fp), baked or ())


@functools.lru_cache(maxsize=None)
def _make_kernels(fp, solver, cone, features, serial, outline, scalar, StepTables, baked):
    integration = make_integrate(fp, solver, cone, features, outline)
    reaction = make_reaction(fp)
    program = make_program(fp, reaction.rne_post)
    consecutive = consecutive_lanes()
    i1, f1, i2, f2, f3, i3 = table_types(fp)

    # the step kernel's array parameters are the declared tables (physics/step/tables.py),
    # which it hands to the stages as one StepTables: a World looks its tables up by name
    @ti.kernel
    @scalar_loops_in(scalar)
    @expanded_math_in
    @with_tables(StepTables)
    def step_kernel(tables: TABLES, nids: ti.i32, nstep: ti.i32, advance: ti.i32, ntask: ti.i32, segments: ti.i32):
        # the envs stepped are env_ids[:nids]: all of them, or those a reset needs forward;
        # program segment ``segments & 255`` runs before an env's steps, ``segments >> 8`` after,
        # unless the env's override register asks for a forward pass (physics/step/program.py).
        ti.loop_config(serialize=serial)
        for t in range(ntask * TASK):
            k = t if ti.static(consecutive) else (t % TASK) * ntask + t // TASK
            while k < nids:
                w = tables.env_ids[k]
                sets = env_sets(w, tables)
                registers = sizes_in_registers(tables, baked)
                env = ti.static(env_view(tables, sets, registers, baked))  # physics/step/env_tables.py
                code, steps, adv = program.launch_of(w, segments, nstep, advance, tables.prog_i, tables.reg)
                # one call site each for the program and the step: each is inlined once
                for phase in range(2):
                    program.run(w, (code >> (8 * phase)) & 255, env)
                    if phase == 0:
                        # a refreshing launch ends with one more pass, in the same loop
                        passes = steps + (1 if adv == STEP_REFRESH else 0)
                        for i in range(passes):
                            kind = REFRESH
                            if i < steps:
                                kind = ti.min(adv, STEP)
                            integration.step(w, env, kind)
                k += ntask * TASK

    if StepTables._fields != array_parameters(step_kernel):
        raise AssertionError(f"the step kernel takes {array_parameters(step_kernel)}, "
                             f"the declared tables are {StepTables._fields}")

    @ti.kernel
    @scalar_loops_in(scalar)
    @expanded_math_in
    def post_kernel(sizes: i1, body_i: i1, opt_f: f3, qvel: f2, qacc: f2, body_d: f1, dof_d: f1, geom_i: i2,
                    con_f: f3, con_i: i3, efc_f: f3, efc_n: i2, env_ids: i1, ntask: ti.i32):
        ti.loop_config(serialize=serial)
        for t in range(ntask * TASK):
            w = t if ti.static(consecutive) else (t % TASK) * ntask + t // TASK
            while w < env_ids.shape[0]:  # every env's id, in order
                reaction.rne_post(w, sizes, body_i, opt_f, qvel, qacc, body_d, dof_d, geom_i, con_f, con_i, efc_f,
                                  efc_n)
                w += ntask * TASK

    return types.SimpleNamespace(step=step_kernel, post=post_kernel, step_arrays=StepTables._fields,
                                 post_arrays=array_parameters(post_kernel))
