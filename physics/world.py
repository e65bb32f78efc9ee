"""World: a Model's constants on the device plus the batched state of ``num_envs`` worlds.

MuJoCo's mjData with a leading env axis: ``get("qpos")`` is (num_envs, nq), ``get("xpos")``
(num_envs, nbody, 3), ``get("qM")`` (num_envs, nv, nv). Inputs are numpy arrays or torch
tensors; ``get`` returns numpy copies and ``get_tensor`` torch tensors on the World's device.
A torch tensor given on the World's device is written there directly, and ``get_tensor``
copies device to device, so a CUDA World exchanges data with torch without the host.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .layout import tree_depth
from . import params as P
from . import quantities as Q
from . import settings as _settings
from .collision import broadphase as B
from .data import PRECISIONS, Tables
from .errors import WorldError
from .features import choose_features
from .runtime.lanes import device_rows, env_rows
from .model import DSBL_CONSTRAINT, DSBL_CONTACT, INT_RK4, Model
from .readback import Copies
from .runtime import device_io, kernel_cache, source_cache
from .runtime.backend import current_cfg, ensure_runtime
from .runtime.taichi_adapter import ReusedLaunch, machine_code, scalar_loops
from .step.integrate import FORWARD, REFRESH, STEP, STEP_REFRESH
from .step.env_tables import model_constants
from .step.outline import outlining
from .step.pipeline import env_tasks, make_kernels
from .step.program import NSEGMENTS, Program, ProgramBuilder
from .constraint.primal.lane_group import lane_solve_supported
from .step.schedule import SCHEDULES
from .step.staged import StagedLaunch, make_staged_kernel
from .torch_bridge import TorchBridge, ids_beside, is_tensor, to_numpy
from .writes import TableWriter


# each device's fastest schedule, measured at every batch size (docs/performance.md): on an
# H200 the staged one stepped Ant 3.4-5.8x and Humanoid 2.3-4.1x the fused kernel's rate
DEFAULT_SCHEDULE = {"cpu": "fused", "cuda": "staged"}


def _choose_solve(schedule: str, model) -> str:
    """The staged schedule's constraint solve (``TAIGYM_SOLVE``): "group" where a lane
    group solves the model's solver and cone, else a thread per env ("thread")."""
    if schedule == "staged" and _settings.current().solve == "group" and lane_solve_supported(model.opt.solver,
                                                                                               model.opt.cone):
        return "group"
    return "thread"


def _choose_schedule(schedule, device: str) -> str:
    """The World's schedule (physics/step/schedule.py): as asked, else ``TAIGYM_SCHEDULE``,
    else the device's fastest."""
    if schedule is None:
        return _settings.current().schedule or DEFAULT_SCHEDULE[device]
    if schedule not in SCHEDULES:
        raise WorldError(f"schedule must be one of {list(SCHEDULES)}, got {schedule!r}")
    return schedule


def _check_solver_options(opt) -> None:
    if opt.solver not in L.SOLVERS:
        raise WorldError(f"option solver must be one of {list(L.SOLVERS)}, got {opt.solver!r}")
    if opt.cone not in L.CONES:
        raise WorldError(f"option cone must be one of {list(L.CONES)}, got {opt.cone!r}")
    if opt.ls_iterations < 1 or opt.ls_tolerance < 0:
        raise WorldError(f"option ls_iterations must be >= 1 and ls_tolerance >= 0, got {opt.ls_iterations}, "
                         f"{opt.ls_tolerance}")
    if opt.noslip_iterations < 0 or opt.noslip_tolerance < 0:
        raise WorldError(f"option noslip_iterations and noslip_tolerance must be >= 0, got {opt.noslip_iterations}, "
                         f"{opt.noslip_tolerance}")


_INT32_MAX = 2**31 - 1  # the largest count a kernel's 32-bit integer argument holds
_SERIAL_WORK_US = 200.0  # below this estimated work per step, a CPU World steps serially
_LAUNCHED: set = set()  # step kernel variants (their cache keys) launched in this process


class World:
    """Batched simulation state and the pipeline that advances it.

    Args:
        model: the Model to simulate.
        num_envs: number of independent worlds (environments).
        device: "cpu", "cuda" or "auto" (cuda when available). One per process.
        precision: "float32" (fast) or "float64" (what oracle tests use). float32
            raises the solver's ``tolerance`` to at least 1e-6, which its round-off
            allows it to reach.
        max_contacts: contacts each env can hold; by default every contact the
            candidate geom pairs can make, capped at 64. Contacts past it are counted in
            ``contacts()["overflow"]``, never dropped silently.
        serial: step the envs in the calling thread, without waking Taichi's thread pool
            (which costs some 60 µs per launch on a small VM, more than one env's physics
            step); by default on a CPU World whose step is little work (one env, or a
            few envs of a small model; not with ``TAIGYM_KERNELS=shared`` in the
            environment). A World with another setting compiles its
            own kernels, so an env made beside a batch (an evaluation or video env) passes
            ``serial=False`` to share the batch's.
        name: what the World simulates (a task id), named in the line printed to stderr
            when its kernels compile for the first time on this machine.
        features: the parts of the engine compiled into the step kernel
            (physics/features.py): by default only what the model has (its pairs'
            narrow-phase routines, its integrator, equality, tendon, friction-loss and
            limit-model code where it has such elements), so a model compiles and loads
            a smaller kernel; ``features.ALL`` compiles everything, and
            ``TAIGYM_KERNELS=shared`` in the environment gives every model of a precision
            and solver one kernel (``features.COMMON``, or ALL beyond it).
        schedule: ``"fused"``, one parallel loop over envs walking each env's whole step
            (one launch per env step: the CPU's shape), or ``"staged"``, each phase of the
            step a parallel loop over env x element, launched back to back
            (physics/step/schedule.py); by default ``TAIGYM_SCHEDULE``, else the
            device's fastest: fused on the CPU, staged on CUDA. Both give the same
            trajectories to round-off.
    """

    def __init__(self, model: Model, num_envs: int = 1, *, device: str = "cpu", precision: str = "float32",
                 max_contacts=None, serial=None, name=None, features=None, schedule=None):
        if not isinstance(model, Model):
            raise WorldError(f"model must be a physics.Model, got {type(model).__name__}")
        if not 1 <= int(num_envs) <= _INT32_MAX:
            raise WorldError(f"num_envs must be in 1..{_INT32_MAX:,} (kernels count envs in 32 bits), got {num_envs}")
        if precision not in PRECISIONS:
            raise WorldError(f"precision must be 'float32' or 'float64', got {precision!r}")
        self.model = model
        self.name = name
        self.num_envs = int(num_envs)
        self.precision = precision
        self.device = ensure_runtime(device)
        self._fp, self.dtype = PRECISIONS[precision]
        _check_solver_options(model.opt)
        contacts_off = model.opt.disableflags & (DSBL_CONTACT | DSBL_CONSTRAINT)
        self._pairs = B.no_pairs() if contacts_off else B.candidate_pairs(model)
        if serial is None:
            serial = self._small_batch(model) and not _settings.current().shared_kernels
        self.serial = bool(serial) and self.device == "cpu"
        self.features = choose_features(model, self._pairs, features)
        # scalar loops only with the constraint stage outlined: inlined, they stepped slower
        outline = outlining()
        self._variant = (precision, model.opt.solver, model.opt.cone, self.features, self.serial, outline,
                         outline and scalar_loops())
        self.schedule = _choose_schedule(schedule, self.device)
        self.solve = _choose_solve(self.schedule, model)
        group = ("block" if self.device == "cuda" else "loop") if self.solve == "group" else ""
        self._tables = Tables(model, self.num_envs, self._fp, self.dtype, self._pairs, max_contacts,
                              staged=self.schedule == "staged", group=bool(group))
        # a kernel of the model's own is traced with its sizes (physics/step/env_tables.py)
        own = features is None and not _settings.current().shared_kernels and self.schedule == "fused"
        baked = model_constants(self._tables.packed["sizes"], model) if own else None
        self._kernels = make_kernels(self._fp, *self._variant[1:], baked=baked)
        self._ntask = 1 if self.serial else env_tasks(num_envs, self.device, current_cfg().cpu_max_num_threads)
        # two kept step launches: every env (ids bound once), and a subset staged in some_ids
        self._step_kernel, self._step_some = ReusedLaunch(self._kernels.step), ReusedLaunch(self._kernels.step)
        depth = tree_depth(model)  # the staged kernel's loops per pass over the tree
        self._kernel_key = kernel_cache.variant_key(*self._variant[:3], self.features.label(), *self._variant[4:],
                                                    *(("staged", depth, *((group,) if group else ()))
                                                      if self.schedule == "staged" else ()),
                                                    *(("sizes", *baked.sizes, "tree", *(baked.tree or ()))
                                                      if baked else ()))
        self._staged = (StagedLaunch(make_staged_kernel(self._fp, *self._variant[1:], depth=depth, group=group),
                                     rk4=model.opt.integrator == INT_RK4, kept=ReusedLaunch)
                        if self.schedule == "staged" else None)
        fused_machine_code = machine_code.available(self.serial) and self._staged is None
        self._machine_key = machine_code.key(self._kernel_key) if fused_machine_code else None
        self.machine_code = self._launch_machine_code()
        self._post_kernel = ReusedLaunch(self._kernels.post)
        self.max_contacts, self.nefc_capacity = self._tables.max_contacts, self._tables.nefc_capacity
        self._d = self._tables.data  # the per-env tables, by name
        self._bridge = TorchBridge(self.device, self.dtype)
        self._copies = Copies(self._tables, self._bridge, self._kernels.post_arrays)
        self._writer = TableWriter(self._tables, self.dtype)
        self._params = P.PerEnvParams(model, self._tables, self._pairs)
        self.time = np.zeros(self.num_envs)
        self.set_program(ProgramBuilder().build())
        self.reset()

    def _small_batch(self, model) -> bool:
        """Whether a physics step of all envs is too little work to share between threads:
        waking Taichi's pool costs ~65 µs a launch, and two threads beat one only past
        ~200 µs of work a step (measured: 32 inverted pendulums, 10 hoppers, 4 ants). A
        step costs an env about 2.5 µs per dof plus 0.5 µs per candidate contact pair."""
        return self.num_envs * (2.5 * model.nv + 0.5 * self._pairs.npair) <= _SERIAL_WORK_US

    # --- state ------------------------------------------------------------------------
    def reset(self, env_ids=None, *, key=None) -> None:
        """Put worlds at the reference configuration qpos0 with zero velocity and control
        (MuJoCo's mj_resetData), or at keyframe ``key``, its name or index: its qpos, qvel,
        ctrl, activations and mocap poses (mj_resetDataKeyframe)."""
        m = self.model
        k = None if key is None else self._key_index(key)
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids)
        some = None if env_ids is None else ids

        def rows(default, keyed):
            return np.tile(default if k is None else keyed[k], (len(ids), 1))

        self.set_state(qpos=rows(m.qpos0, m.key_qpos), qvel=rows(np.zeros(m.nv), m.key_qvel), env_ids=some)
        self.set_ctrl(rows(np.zeros(m.nu), m.key_ctrl), env_ids=some)
        if env_ids is None:
            self._write("qfrc_applied", np.zeros((self.num_envs, m.nv)))
        self.time[ids] = 0
        if m.nmocap:  # the mocap bodies where the model (or the keyframe) puts them
            bodies = Q.mocap_bodies(m)
            pos = m.body_pos[bodies] if k is None else m.key_mpos[k].reshape(-1, 3)
            quat = m.body_quat[bodies] if k is None else m.key_mquat[k].reshape(-1, 4)
            self.set_mocap(pos=pos, quat=quat, env_ids=env_ids)
        if m.na:  # and its actuators' activations
            self._write_activations(rows(np.zeros(m.na), m.key_act), some)
        # a reset world starts its constraint solver cold, as MuJoCo's mj_resetData
        if m.nv:
            self._write_dof_column("qacc_warmstart", np.zeros((len(ids), m.nv), dtype=self.dtype), ids)
        # and with its equality constraints as the model declares them, none broken
        if m.neq:
            self._reset_equalities(ids)

    def _key_index(self, key) -> int:
        names = self.model.key_name
        if isinstance(key, str):
            if key not in names:
                raise WorldError(f"key: no keyframe named {key!r}; the model's: {[n for n in names if n]}")
            return names.index(key)
        if not isinstance(key, (int, np.integer)) or not 0 <= key < self.model.nkey:
            raise WorldError(f"key must be a keyframe's name or an index in 0..{self.model.nkey - 1}, got {key!r}")
        return int(key)

    def _reset_equalities(self, ids) -> None:
        m = self.model
        eq_d = self._equalities()
        eq_d[ids, : m.neq, L.EQ_D_ACTIVE] = m.eq_active0
        eq_d[ids, :, L.EQ_D_BROKEN] = 0
        self._write_equalities(eq_d)

    def set_equality_active(self, active, *, env_ids=None) -> None:
        """Switch equality constraints on or off per env: ``active`` (num_envs, neq) or (neq,)."""
        rows = self._rows(np.asarray(active, dtype=float), self.model.neq, "active", env_ids)
        eq_d = self._equalities()
        eq_d[slice(None) if env_ids is None else np.asarray(env_ids), : self.model.neq, L.EQ_D_ACTIVE] = rows != 0
        self._write_equalities(eq_d)

    def broken_equalities(self, clear: bool = True) -> np.ndarray:
        """(num_envs, neq) bool: the equality constraints that broke (their force or torque
        passed the model's break limits) since the last call (or reset) when ``clear``."""
        eq_d = self._equalities()
        out = eq_d[:, : self.model.neq, L.EQ_D_BROKEN] != 0
        if clear and out.any():
            eq_d[:, :, L.EQ_D_BROKEN] = 0
            self._write_equalities(eq_d)
        return out

    def _equalities(self) -> np.ndarray:
        """(num_envs, neq, 2): every env's equality state, a host copy in env-major order."""
        return np.array(env_rows(self._d["eq_d"].to_numpy(), self.num_envs, self._tables.lanes))

    def _write_equalities(self, eq_d: np.ndarray) -> None:
        # the equality state is small and written rarely: a whole-table round trip
        self._copies.changed("eq_d")
        self._d["eq_d"].from_numpy(device_rows(eq_d, self._tables.lanes))

    def set_state(self, qpos=None, qvel=None, *, act=None, env_ids=None) -> None:
        """Set generalized positions (num_envs, nq), velocities (num_envs, nv) and/or the
        stateful actuators' activations (num_envs, na).

        A single row (nq,) is broadcast to every env. With ``env_ids`` only those envs
        change and the arrays have one row per id.
        """
        if qpos is not None:
            self._write("qpos", self._rows(qpos, self.model.nq, "qpos", env_ids), env_ids)
        if qvel is not None:
            self._write("qvel", self._rows(qvel, self.model.nv, "qvel", env_ids), env_ids)
        if act is not None:
            self._write_activations(np.asarray(self._rows(np.asarray(act, dtype=float), self.model.na, "act",
                                                          env_ids)), env_ids)

    def _write_activations(self, act: np.ndarray, env_ids) -> None:
        # activations are written at resets only: a whole-table round trip
        self._copies.changed("act_d")
        act_d = np.array(env_rows(self._d["act_d"].to_numpy(), self.num_envs, self._tables.lanes))
        rows = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        stateful = np.flatnonzero(self.model.actuator_actadr >= 0)
        act_d[rows[:, None], stateful[None, :], L.ACT_D.start("act")] = act
        self._d["act_d"].from_numpy(device_rows(act_d, self._tables.lanes))

    def set_ctrl(self, ctrl, *, env_ids=None) -> None:
        """Set actuator controls (num_envs, nu); non-finite values are refused."""
        rows = self._rows(ctrl, self.model.nu, "ctrl", env_ids)
        self._write("ctrl", rows, env_ids)

    def set_mocap(self, pos=None, quat=None, *, env_ids=None) -> None:
        """Set the mocap bodies' poses in the world frame (MuJoCo's mocap_pos and
        mocap_quat): ``pos`` (num_envs, nmocap, 3), ``quat`` (num_envs, nmocap, 4), or one
        (nmocap, 3) / (nmocap, 4) for every env; with ``env_ids``, one per id. The next
        forward pass moves the bodies there (a quaternion is normalized where it is read,
        as MuJoCo's, and kept as given). reset() puts them back at the model's poses; read
        them with get("mocap_pos") and get("mocap_quat"), mocap id order (model.body_mocapid)."""
        m = self.model
        ids = self._env_ids(env_ids)
        for value, width, name in ((pos, 3, "mocap_pos"), (quat, 4, "mocap_quat")):
            if value is None:
                continue
            value = value if is_tensor(value) else to_numpy(value, name)
            shape = tuple(value.shape)
            if shape not in ((len(ids), m.nmocap, width), (m.nmocap, width)):
                raise WorldError(f"{name} must have shape ({len(ids)}, {m.nmocap}, {width}) or ({m.nmocap}, {width}), "
                                 f"got {shape}")
            rows = self._rows(value.reshape(*shape[:-2], m.nmocap * width), m.nmocap * width, name, env_ids)
            if m.nmocap and len(ids):
                self._copies.changed("body_d")
                self._writer.mocap(name, rows.reshape(len(ids), m.nmocap, width), Q.mocap_bodies(m), ids)

    def set_qfrc_applied(self, qfrc, *, env_ids=None) -> None:
        """Set user-applied generalized forces (num_envs, nv)."""
        self._write("qfrc_applied", self._rows(qfrc, self.model.nv, "qfrc_applied", env_ids), env_ids)

    # --- drives ---------------------------------------------------------------------------
    def set_drive_target(self, q=None, qd=None, *, env_ids=None) -> None:
        """Set the PD drives' targets (physics/smooth/drives.py): ``q`` the target qpos value and
        ``qd`` the target velocity of each dof, arrays (num_envs, nv) (or one row (nv,)
        for all envs; with ``env_ids``, one row per id). Columns of dofs without a drive
        are ignored. Targets persist until set again (reset() keeps them); both start at 0.
        Read them back with get("drive_qpos_target") and get("drive_qvel_target")."""
        ids = self._env_ids(env_ids)
        for value, name in ((q, "drive_qpos_target"), (qd, "drive_qvel_target")):
            if value is not None and self.model.nv:
                self._write_dof_column(name, self._rows(value, self.model.nv, name, env_ids), ids)

    # --- per-env parameters (domain randomization) -------------------------------------------
    def set_param(self, name: str, values, *, env_ids=None) -> None:
        """Give envs their own value of a model parameter, without recompiling.

        ``name``: "body_mass" (num_envs, nbody) [kg], each body's inertia scaled with it
        (a uniform change of density); "dof_damping" (num_envs, nv); "actuator_gear"
        (num_envs, nu) (the first gear component); "gravity" (num_envs, 3); "jnt_range"
        (num_envs, njnt, 2) (the limits of MuJoCo's soft-limit rows); "geom_friction"
        (num_envs, ngeom), each geom's sliding friction, which a contact between two geoms
        mixes by max as MuJoCo does (explicit ``<pair>`` contacts keep their own);
        "geom_pos" (num_envs, ngeom, 3), each geom's position in its body's frame, which
        contacts, rays, geom_xpos and render() all use; "site_pos" (num_envs, nsite, 3),
        each site's position in its body's frame, which the sensors that read it and the
        spatial tendons through it use (refused for a site of an equality constraint);
        "body_pos" (num_envs, nbody, 3) and "body_quat" (num_envs, nbody, 4), each body's
        frame in its parent's, which the forward kinematics and all that follows it use.
        With ``env_ids`` one row per id. Envs not named keep their values; reset() keeps them.
        """
        P.lookup(name)  # an unknown name is refused before its values are read
        rows = self._rows(self._params.flat(name, values), self._params.width(name), name, env_ids)
        ids = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        tables = self._params.set(name, rows, ids)
        if tables is not None:
            self._copies.changed(*((tables,) if isinstance(tables, str) else tables))

    def get_param(self, name: str) -> np.ndarray:
        """(num_envs, n) values of a per-env parameter (see :meth:`set_param`)."""
        return self._params.get(name)

    # --- pipeline ------------------------------------------------------------------------
    def forward(self, env_ids=None, *, segments=(0, 0)) -> None:
        """Compute every derived quantity of the current state, without advancing time, of
        every env or of envs ``env_ids`` (the others keep theirs); ``segments`` as step()."""
        if env_ids is None:
            self._launch(1, advance=FORWARD, segments=segments)
            return
        self._launch(1, advance=FORWARD, ids=self._staged_ids(self._env_ids(env_ids)), segments=segments)

    def step(self, n: int = 1, *, env_ids=None, segments=(0, 0), refresh: bool = False) -> None:
        """Advance every world, or envs ``env_ids`` (the others keep their state and time), by
        ``n`` time steps (one kernel launch). ``segments``: the program segments each env runs
        before and after its steps (set_program).

        After mj_step, as after this step by default, the frames, the sensors and every other
        derived quantity are those of the state the last step started from. ``refresh``
        recomputes them at the state the steps end in, keeping the acceleration-stage
        sensors of the last step, as dm_control's Physics.step (mj_step1 after mj_step)
        leaves them; the program's segment after the steps reads those."""
        n = int(n)
        if n < 1:
            return
        if n > _INT32_MAX:
            # the kernel's 32-bit step count would wrap: 2**32 + 4 would step 4 times
            raise WorldError(f"n must be at most {_INT32_MAX:,} steps per call (a 32-bit kernel argument), got {n}")
        advance = STEP_REFRESH if refresh else STEP
        if env_ids is None:
            self._launch(n, advance=advance, segments=segments)
            self.time += n * self.model.opt.timestep
            return
        ids = self._env_ids(env_ids)
        if np.unique(ids).size != ids.size:  # two threads would step one env at once
            raise WorldError(f"env_ids must name each env once, got {ids.tolist()[:10]}")
        if ids.size:
            self._launch(n, advance=advance, ids=self._staged_ids(ids), segments=segments)
            self.time[ids] += n * self.model.opt.timestep

    # --- programs -------------------------------------------------------------------------
    def set_program(self, program: Program) -> None:
        """Carry ``program`` (physics/step/program.py), with fresh zeroed registers; step() and
        forward() run its segments inside their launch."""
        if not isinstance(program, Program):
            raise WorldError(f"program must be a physics.program.Program, got {type(program).__name__}")
        self.program = program
        self._tables.set_program(program)

    def registers(self) -> np.ndarray:
        """(num_envs, nregisters): on a CPU World the registers' own memory (writes reach the
        next launch), elsewhere a copy (write it back with set_registers)."""
        reg = self._tables.program["reg"]
        view = self._view_of(reg)
        return view if view is not None else reg.to_numpy()

    def registers_shared(self) -> bool:
        """Whether registers() is the registers' own memory (a CPU World) rather than a copy."""
        return self._view_of(self._tables.program["reg"]) is not None

    def set_registers(self, values) -> None:
        """Write every register of every env."""
        values = np.ascontiguousarray(values, dtype=self.dtype)
        reg = self._tables.program["reg"]
        view = self._view_of(reg)
        if view is not None:
            view[...] = values
        else:
            reg.from_numpy(values)

    def register_tensor(self, columns):
        """Registers ``columns`` (a sequence of register indices) of every env, as a new
        (num_envs, len(columns)) torch tensor on the World's device: gathered there by one
        kernel, never through host memory."""
        columns = np.asarray(columns, dtype=np.int32)
        self._check_registers(columns)
        return device_io.gather_columns(self._tables.program["reg"], columns, self.device)

    def set_register_rows(self, start: int, values, env_ids=None) -> None:
        """registers[env_ids, start : start + w] = values: (n, w) rows, a numpy array or a torch
        tensor (on the World's device, it is read there), for every env or ``env_ids``; the
        other registers are left as they are."""
        ids = self._env_ids(env_ids)
        width = values.shape[1] if is_tensor(values) else np.shape(values)[-1]
        rows = self._bridge.rows(values, width, "register values", len(ids))
        self._check_registers(np.arange(start, start + width))
        device_io.write_columns(self._tables.program["reg"], start, rows,
                                self._tables.all_ids if env_ids is None else ids_beside(rows, ids))

    def _check_registers(self, columns: np.ndarray) -> None:
        n = self._tables.program["reg"].shape[1]
        if columns.size and (columns.min() < 0 or columns.max() >= n):
            raise WorldError(f"registers must be in [0, {n}), got {columns.tolist()[:10]}")

    # --- reading --------------------------------------------------------------------------
    def get(self, name: str) -> np.ndarray:
        """A numpy copy of a state or computed quantity, with a leading env axis.

        Names follow mjData: qpos, qvel, qacc, ctrl, qfrc_applied, qM, xpos, xquat, xmat,
        xipos, ximat, subtree_com, cinert, crb, cvel, cdof, cdof_dot, xanchor, xaxis,
        qfrc_bias, qfrc_passive, qfrc_actuator, qfrc_smooth, actuator_force, cacc,
        cfrc_ext (contact wrenches), cfrc_int (joint reaction wrenches),
        actuator_length, actuator_velocity, ten_length, ten_velocity, ten_J (the
        tendons' Jacobians, num_envs x ntendon x nv), time; the
        constraint quantities qacc_smooth, qfrc_constraint, nefc (active rows per env),
        efc_overflow (rows that did not fit), efc_force, efc_pos, efc_type, efc_id...
        (num_envs, capacity; rows past nefc are zero); and the articulation view
        joint_q, joint_qd, body_q (position and quaternion per body); the mocap bodies'
        poses mocap_pos (num_envs, nmocap, 3) and mocap_quat (num_envs, nmocap, 4); the
        geoms' centres geom_xpos (num_envs, ngeom, 3), from the body frames and each env's
        geom_pos.
        """
        host = self._copies.host
        if name == "time":
            return self.time.copy()
        if name == "qM":
            return Q.dense_mass_matrix(self.model, host("qM"), self.num_envs)
        if name == "body_q":
            return np.concatenate([self.get("xpos"), self.get("xquat")], axis=-1)
        if name == "geom_xpos":
            return Q.geom_xpos(self.model, self.get("xpos"), self.get("xmat"), self.get_param("geom_pos"))
        if name in ("act", "act_dot"):  # the stateful actuators' column, as mjData's (num_envs, na)
            return self.get("actuator_" + name)[:, self.model.actuator_actadr >= 0]
        if name in L.MOCAP_COLUMNS:  # (num_envs, nmocap, 3 or 4), by mocap id
            return Q.mocap_rows(name, host("body_d"), self.model)
        if name == "eq_active":
            return host("eq_d")[:, : self.model.neq, L.EQ_D_ACTIVE] != 0
        if name in Q.EFC_COUNTS:
            return host("efc_n")[:, Q.EFC_COUNTS[name]].copy()
        if name.startswith("efc_") and name[4:] in L.EFC_F:
            return Q.efc_rows(name, host("efc_f"), host("efc_n"), self.nefc_capacity)
        return self._view(name, host).copy()

    def sensor(self, name: str) -> np.ndarray:
        """Sensor ``name``'s values, (num_envs, its dim): its slice of ``get("sensordata")``,
        the sensors of the last forward pass (after a step, of the state it started from,
        as MuJoCo's mjData after mj_step)."""
        s = self.model.sensor(name)
        adr, dim = int(self.model.sensor_adr[s]), int(self.model.sensor_dim[s])
        return self.get("sensordata")[:, adr : adr + dim]

    def get_tensor(self, name: str):
        """``get(name)`` as a torch tensor on the World's device (a new tensor each call).
        State and mjData quantities are copied device to device; the others (qM, time,
        body_q, the constraint rows) are made on the host and uploaded."""
        import torch

        if Q.is_table_view(name):
            return self._view(name, self._copies.tensor).clone()
        return torch.as_tensor(self.get(name), device=device_io.torch_device(self.device))

    def _view(self, name: str, table_of):
        """Quantity ``name`` within its table's copy from ``table_of`` (quantities.table_view),
        the contact wrenches first brought up to date when it is one of them."""
        if name in L.POST_CONSTRAINT:
            self._post_constraint()
        return Q.table_view(name, table_of, self.model, self.num_envs)

    def render(self, env_ids=None, **kwargs) -> np.ndarray:
        """RGB frames (n, H, W, 3) uint8 of the envs, ray cast in Taichi; keyword
        arguments (width, height, camera, shadows) as physics.render.render_world."""
        from .render.raycast import render_world

        return render_world(self, env_ids, **kwargs)

    def contacts(self) -> dict:
        """The contacts of the last forward pass (MuJoCo's mjContact fields, leading env axis).

        ``ncon`` (num_envs,) counts each env's valid rows; ``overflow`` (num_envs,) counts
        contacts that did not fit in ``max_contacts``. Per row: ``dist``, ``pos`` (3),
        ``frame`` (3, 3; row 0 is the normal from geom1 to geom2), ``friction`` (5),
        ``solref``, ``solimp``, ``margin``, ``gap``, ``includemargin``, ``geom`` (2), ``dim``,
        ``exclude``, ``efc_address`` (the contact's first row in the constraint table, -1
        where it makes none: excluded, constraints or contacts disabled, or past the rows'
        capacity; MuJoCo's ``efc_address``). Rows at or past ``ncon`` are zero.
        """
        host = self._copies.host
        return Q.contact_fields(host("con_f"), host("con_i"), host("con_n"))

    # --- helpers ------------------------------------------------------------------------
    def _staged_ids(self, ids: np.ndarray) -> tuple:
        """(the subset table, its count): ``ids`` written where a subset launch reads its envs."""
        some_ids = self._tables.some_ids
        view = self._view_of(some_ids)
        if view is not None:
            view[: ids.size] = ids
        else:
            staged = np.zeros(self.num_envs, dtype=np.int32)
            staged[: ids.size] = ids
            some_ids.from_numpy(staged)
        return some_ids, ids.size

    def _launch(self, n: int, advance: int, ids=None, segments=(0, 0)) -> None:
        self._copies.launched()
        pre, post = (int(s) for s in segments)
        if not (0 <= pre < NSEGMENTS and 0 <= post < NSEGMENTS):
            raise WorldError(f"segments must be two program segments in 0..{NSEGMENTS - 1}, got {segments}")
        nids = self.num_envs if ids is None else ids[1]
        if self.machine_code or self._kernel_key in _LAUNCHED:
            self._launch_kernel(n, advance, ids, nids, pre | post << 8)
        else:
            label = (", ".join(map(str, self._variant[:2])) + (", serial" if self.serial else "")
                     + (", staged" if self._staged else ""))
            with kernel_cache.FirstLaunch(self._kernel_key, label, self.name):
                self._launch_kernel(n, advance, ids, nids, pre | post << 8)
            source_cache.keep()  # the sources the tracing read, for the next process
            _LAUNCHED.add(self._kernel_key)
        if self._machine_key and not self.machine_code:  # for later Worlds and processes, once
            machine_code.build_later(self._machine_key, self._kernels.step)
            self._machine_key = None
        # a segment that computed every env's contact wrenches leaves cfrc_ext current (unless
        # envs may have run other segments instead: the override register)
        self._copies.post_current = (ids is None and post in self.program.rne_segments
                                     and self.program.override is None)

    def _launch_kernel(self, n: int, advance: int, ids, nids: int, segments: int) -> None:
        # the same tuple each launch (until a table is replaced) lets the kept launch skip its checks
        if self._staged:
            arrays = self._tables.arguments(self._staged.arrays, every_env=ids is None)
            if advance == STEP_REFRESH:  # the steps, then the refresh and the segment after them
                self._staged.launch(arrays, ids is None, nids, n, STEP, segments & 255)
                self._staged.launch(arrays, ids is None, nids, 1, REFRESH, segments & ~255)
                return
            self._staged.launch(arrays, ids is None, nids, n, advance, segments)
            return
        step_kernel = self._step_kernel if ids is None else self._step_some
        arrays = self._tables.arguments(self._kernels.step_arrays, every_env=ids is None)
        step_kernel.with_arrays(arrays, nids, n, advance, self._ntask, segments)

    def _launch_machine_code(self) -> bool:
        """Step from the machine code a process before kept for this kernel, where there is
        some (runtime/taichi_adapter/machine_code.py): no tracing, no code generation."""
        kept = machine_code.load(self._machine_key) if self._machine_key else None
        launches = kept and (kept.launcher(self._kernels.step), kept.launcher(self._kernels.step))
        if not launches or None in launches:
            return False
        self._step_kernel, self._step_some = launches
        return True

    def _post_constraint(self) -> None:
        if self._copies.post_current:  # already run on this state
            return
        self._post_kernel(*self._tables.arguments(self._kernels.post_arrays), self._ntask)
        self._copies.post_ran()

    def _view_of(self, table):
        """A numpy array over ``table``'s memory on a CPU World, or None (data.Tables.view_of)."""
        return self._tables.view_of(table)

    def _env_ids(self, env_ids) -> np.ndarray:
        """``env_ids`` as an array (every env for None), each checked to be an env of this World."""
        ids = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise WorldError(f"env_ids must be in [0, {self.num_envs}), got {ids.tolist()[:10]}")
        return ids

    def _rows(self, value, n, what, env_ids):
        """``value`` checked as one row per env (or per id), broadcast from one row: a numpy
        array, or a torch tensor left where it is when it is on the World's device."""
        count = self.num_envs if env_ids is None else len(np.atleast_1d(env_ids))
        return self._bridge.rows(value, n, what, count)

    @property
    def _device_tensors(self) -> bool:
        """Whether torch tensors move by device kernels (a CUDA World); set on a CPU World, it
        takes that path there (torch_bridge.TorchBridge)."""
        return self._bridge.device_tensors

    @_device_tensors.setter
    def _device_tensors(self, value: bool) -> None:
        self._bridge.device_tensors = bool(value)

    def _write(self, key, rows, env_ids=None):
        """Rows of a data table (all envs, or ``env_ids``), by a kernel on the device."""
        self._copies.changed(key)
        self._writer.rows(key, rows, env_ids)

    def _write_dof_column(self, name: str, rows, ids) -> None:
        """dof_d[ids, :nv, column name] = rows, by a small kernel: no whole-table round trip."""
        self._copies.changed("dof_d")
        self._writer.dof_column(name, rows, ids)
