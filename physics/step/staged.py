"""The staged schedule's kernels: each phase of a step one parallel loop over env x element.

physics/step/schedule.py says why there are two schedules. Its kernels take the fused step
kernel's arrays, in its order, plus each env's ``plan`` for the launch and two count-downs.
A launch has four parts, in this order:

- BEGIN: each env's plan (its program segments, steps and whether they advance time: the
  launch's, or its override register's forward pass) and the program segment before its
  steps;
- STAGE ``stage`` of step ``s``, for every forward() pass of a step (RK4 makes four): the
  integrator's preparation of the stage, each forward() phase, and the stage's record;
- FINISH step ``s``: the integration of the step's passes into the next state;
- END: the program segment after the steps.

Each part's loops are one function, written once. Where the Taichi in use compiles graph
kernels (quadrants; runtime/taichi_adapter/graphs.py), one kernel (LAUNCH) runs them all:
the steps and the passes are device-side do-while loops over the count-downs, and a launch
is one call (a CUDA graph replayed, on a GPU). Elsewhere (taichi 1.7.4) each part is a
kernel of its own, its loops launched back to back from C++: one Python call per part.
Iteration i of a phase over n envs takes env ``env_ids[i % n]`` and element ``i // n``:
consecutive envs on consecutive lanes. An env that the plan leaves out of a step or stage
(a forward pass beside stepping envs) skips it.
"""

import functools
import types

from .. import layout as L
from ..layout import GROUP_LANES, TREE_LEVELS
from ..constraint.reaction import make_reaction
from ..access import make_access
from ..features import ALL, Features
from ..runtime.backend import ti
from ..runtime.taichi_adapter import expanded_math_in, graph_kernel, graph_kernels, scalar_loops_in, vector_loops
from .integrate import STEP, make_integrate
from .pipeline import array_parameters
from .program import make_program
from .schedule import DEEPER, DOWN, staged_loops, tree_loop_names, tree_levels
from .tables import TABLES, step_tables, with_tables

BEGIN, STAGE, FINISH, END, LAUNCH = range(5)
# the kernels' own tables, after the step kernel's: each env's plan, and the whole-launch
# kernel's counts of the steps and forward() passes left
_OWN_ARRAYS = ("plan", "steps_left", "stages_left")
PLAN_CODE, PLAN_STEPS, PLAN_ADVANCE = range(L.NPLAN)  # the columns of the plan table


def make_staged_kernel(fp, solver: str = "Newton", cone: str = "pyramidal", features: Features = ALL,
                       serial: bool = False, outline: bool = False, scalar: bool = False,
                       depth: int = TREE_LEVELS + 1, group: str = ""):
    """The staged step kernel of one variant (the arguments as physics/step/pipeline.py's
    make_kernels, the model's tree ``depth``, layout.tree_depth: a loop per level of a
    tree pass, none for levels the model lacks, and ``group``, make_forward's: how the
    constraint solve runs): ``kernels``, the whole-launch kernel alone
    where ``whole_launch`` (graph kernels) or else one per part, their array parameters
    ``arrays`` by name, and ``loops``, the names of the STAGE part's top-level loops in
    order (each the names of its phases joined by "+": consecutive per-env phases share a
    loop, schedule.py's staged_loops; a tree phase's named by level). The kernels take the
    tables layout.KERNEL_TABLES declares now, then their own."""
    return _make_staged_kernel(fp, solver, cone, features, serial, outline, scalar, depth, group, step_tables(fp))


@functools.lru_cache(maxsize=None)
def _make_staged_kernel(fp, solver, cone, features, serial, outline, scalar, depth, group_kind, StepTables):
    integration = make_integrate(fp, solver, cone, features, outline, group_kind)
    program = make_program(fp, make_reaction(fp).rne_post)
    loops = staged_loops(integration.phases)
    A = make_access(fp)
    i0, i2 = ti.types.ndarray(dtype=ti.i32, ndim=0), ti.types.ndarray(dtype=ti.i32, ndim=2)

    def kernel_of(part):
        return graph_kernel if part == LAUNCH else ti.kernel

    @ti.func
    def in_stage(w, plan: ti.template(), t: ti.template(), s, stage):
        """Whether env w runs forward() pass ``stage`` of step ``s`` of this launch."""
        return s < plan[w, PLAN_STEPS] and stage < integration.stages(t, plan[w, PLAN_ADVANCE])

    # Each part's loops, in a function called at a kernel's top level, where its loops stay
    # parallel ones: the parts' kernels and the whole-launch kernel share them. Marked as
    # vector loops so that scalar_loops_in leaves these outermost loops alone.
    @ti.func
    @vector_loops
    def begin_loops(t: ti.template(), plan: ti.template(), nids, nstep, advance, segments):
        ti.loop_config(serialize=serial)
        for k in range(nids):
            w = t.env_ids[k]
            code, steps, adv = program.launch_of(w, segments, nstep, advance, t.prog_i, t.reg)
            plan[w, PLAN_CODE] = code
            plan[w, PLAN_STEPS] = steps
            plan[w, PLAN_ADVANCE] = adv
            program.run(w, code & 255, t)

    @ti.func
    @vector_loops
    def tree_loop(phase: ti.template(), level: ti.template(), t: ti.template(), plan: ti.template(), nids, s,
                  stage):
        """One level of a pass over the tree: its bodies in every env side by side, each
        from its parent (DOWN) or children (UP), which an earlier loop did; or, for the
        levels past the first TREE_LEVELS, one thread per env walking them in order."""
        if ti.static(level == DEEPER):
            ti.loop_config(serialize=serial)
            for k in range(nids):
                w = t.env_ids[k]
                if in_stage(w, plan, t, s, stage):
                    deeper = t.sizes[L.SIZE_LEVEL_START + TREE_LEVELS]
                    n = t.sizes[L.SIZE_NBODY] - deeper
                    for j in range(n):
                        at = deeper + j
                        if ti.static(phase.tree != DOWN):
                            at = deeper + n - 1 - j
                        phase.run(w, A.body_treeorder(t.body_i, at), t)
        else:
            start = t.sizes[L.SIZE_LEVEL_START + level]
            ti.loop_config(serialize=serial)
            for i in range(nids * (t.sizes[L.SIZE_LEVEL_START + level + 1] - start)):
                w = t.env_ids[i % nids]
                if in_stage(w, plan, t, s, stage):
                    phase.run(w, A.body_treeorder(t.body_i, start + i // nids), t)

    @ti.func
    @vector_loops
    def group_loop(phase: ti.template(), t: ti.template(), plan: ti.template(), nids, s, stage):
        """A phase by a lane group per env: a GPU block of GROUP_LANES threads per env (env
        ``i // GROUP_LANES``, lane ``i % GROUP_LANES``), or one thread per env running the
        lanes in turn."""
        if ti.static(group_kind == "block"):
            ti.loop_config(block_dim=GROUP_LANES)
            for i in range(nids * GROUP_LANES):
                w = t.env_ids[i // GROUP_LANES]
                if in_stage(w, plan, t, s, stage):
                    phase.run(w, i % GROUP_LANES, t)
        else:
            ti.loop_config(serialize=serial)
            for k in range(nids):
                w = t.env_ids[k]
                if in_stage(w, plan, t, s, stage):
                    phase.run(w, 0, t)

    @ti.func
    @vector_loops
    def stage_loops(t: ti.template(), plan: ti.template(), nids, s, stage):
        ti.loop_config(serialize=serial)
        for k in range(nids):
            w = t.env_ids[k]
            if in_stage(w, plan, t, s, stage):
                integration.stage_begin(w, t, stage, integration.stages(t, plan[w, PLAN_ADVANCE]))
        for group in ti.static(loops):
            if ti.static(bool(group[0].tree)):
                for level in ti.static(tree_levels(group[0], depth)):
                    tree_loop(group[0], level, t, plan, nids, s, stage)
            elif ti.static(group[0].group):
                group_loop(group[0], t, plan, nids, s, stage)
            else:
                per_env = 1
                if ti.static(not group[0].per_env):
                    per_env = group[0].count(t)
                ti.loop_config(serialize=serial)
                for i in range(nids * per_env):
                    w = t.env_ids[i % nids]
                    if in_stage(w, plan, t, s, stage):
                        for p in ti.static(group):
                            if ti.static(p.per_env):
                                p.run(w, t)
                            else:
                                p.run(w, i // nids, t)
        ti.loop_config(serialize=serial)
        for k in range(nids):
            w = t.env_ids[k]
            if in_stage(w, plan, t, s, stage):
                integration.stage_end(w, t, stage, integration.stages(t, plan[w, PLAN_ADVANCE]),
                                      plan[w, PLAN_ADVANCE])

    @ti.func
    @vector_loops
    def finish_loops(t: ti.template(), plan: ti.template(), nids, s):
        ti.loop_config(serialize=serial)
        for k in range(nids):
            w = t.env_ids[k]
            if s < plan[w, PLAN_STEPS] and plan[w, PLAN_ADVANCE] == STEP:
                integration.finish(w, t)

    @ti.func
    @vector_loops
    def end_loops(t: ti.template(), plan: ti.template(), nids):
        ti.loop_config(serialize=serial)
        for k in range(nids):
            w = t.env_ids[k]
            program.run(w, (plan[w, PLAN_CODE] >> 8) & 255, t)

    def build(part):
        """The kernel of one part: the source is written once, each part compiles its own loops."""

        @kernel_of(part)
        @scalar_loops_in(scalar)
        @expanded_math_in
        @with_tables(StepTables)
        def staged_kernel(
            tables: TABLES, plan: i2, steps_left: i0, stages_left: i0,
            nids: ti.i32, nstep: ti.i32, advance: ti.i32, segments: ti.i32, s: ti.i32, stage: ti.i32,
        ):
            if ti.static(part in (BEGIN, LAUNCH)):
                begin_loops(tables, plan, nids, nstep, advance, segments)
            if ti.static(part == STAGE):
                stage_loops(tables, plan, nids, s, stage)
            if ti.static(part == FINISH):
                finish_loops(tables, plan, nids, s)
            if ti.static(part == LAUNCH):
                # the launch's steps and each step's forward() passes as loops the device
                # runs (the host, where graphs are not captured): the step and the pass
                # are counted down in two one-entry tables
                steps_left[()] = nstep
                while ti.graph.do_while(steps_left):
                    stages_left[()] = integration.stages(tables, advance)
                    while ti.graph.do_while(stages_left):
                        stage_loops(tables, plan, nids, nstep - steps_left[()],
                                    integration.stages(tables, advance) - stages_left[()])
                        stages_left[()] -= 1
                    finish_loops(tables, plan, nids, nstep - steps_left[()])
                    steps_left[()] -= 1
            if ti.static(part in (END, LAUNCH)):
                end_loops(tables, plan, nids)

        return staged_kernel

    whole = graph_kernels()
    kernels = tuple(build(part) for part in ((LAUNCH,) if whole else (BEGIN, STAGE, FINISH, END)))
    arrays = array_parameters(kernels[0])
    if arrays != StepTables._fields + _OWN_ARRAYS:
        raise AssertionError(f"the staged kernel takes {arrays}, the step kernel's tables are {StepTables._fields}")
    names = ("stage_begin", *(name for group in loops for name in (
        tree_loop_names(group[0], depth) if group[0].tree else ("+".join(p.name for p in group),))), "stage_end")
    return types.SimpleNamespace(kernels=kernels, arrays=arrays, loops=names, whole_launch=whole)


class StagedLaunch:
    """Launches a World's staged kernels: one whole-launch kernel where the Taichi in use
    captures graphs, else the parts of one launch of ``n`` steps in order; each through kept
    launches (each part's scalars written into the kept context)."""

    def __init__(self, staged, rk4: bool, kept):
        self.arrays = staged.arrays  # the kernels' array parameters, by name
        self.loops = staged.loops  # the names of the STAGE part's top-level loops, in order
        self.whole_launch = staged.whole_launch  # one kernel call a launch
        self._rk4 = rk4  # the model's integrator: four forward() passes a step
        # each part's kept launches: every env (ids bound once), and a subset
        self._every = tuple(kept(k) for k in staged.kernels)
        self._some = tuple(kept(k) for k in staged.kernels)

    def launch(self, arrays: tuple, every_env: bool, nids: int, n: int, advance: int, segments: int) -> None:
        kernels = self._every if every_env else self._some
        launch = (nids, n, advance, segments)
        if self.whole_launch:
            kernels[0].with_arrays(arrays, *launch, 0, 0)
            return
        begin, stage_kernel, finish, end = kernels
        begin.with_arrays(arrays, *launch, 0, 0)
        nstage = 4 if self._rk4 and advance == STEP else 1
        for s in range(n):
            for stage in range(nstage):
                stage_kernel.with_arrays(arrays, *launch, s, stage)
            if advance == STEP:
                finish.with_arrays(arrays, *launch, s, 0)
        end.with_arrays(arrays, *launch, 0, 0)
