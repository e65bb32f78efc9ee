"""World: a Model's constants on the device plus the batched state of ``num_envs`` worlds.

MuJoCo's mjData with a leading env axis: ``get("qpos")`` is (num_envs, nq), ``get("xpos")``
(num_envs, nbody, 3), ``get("qM")`` (num_envs, nv, nv). Inputs are numpy arrays or torch
tensors; ``get`` returns numpy copies and ``get_tensor`` torch tensors on the World's device.
A torch tensor given on the World's device is written there directly, and ``get_tensor``
copies device to device, so a CUDA World exchanges data with torch without the host.
"""

from __future__ import annotations

import os

import numpy as np

from . import layout as L
from .collision import broadphase as B
from .collision.driver import NGEOM_X, P_FRICTION, pack_collision_model
from .collision.narrowphase import CON_DIM, CON_EXCLUDE, CON_GEOM1, CON_GEOM2, CONTACT_F, NCON_F, NCON_I
from .errors import WorldError
from .model import DSBL_CONSTRAINT, DSBL_CONTACT, Model
from .runtime import device_io, kernel_cache
from .runtime.backend import current_cfg, ensure_runtime, ti
from .runtime.launch import ReusedLaunch, host_view
from .step.pipeline import env_tasks, make_kernels
from .step.program import NSEGMENTS, Program, ProgramBuilder

_PRECISIONS = {"float32": (ti.f32, np.float32), "float64": (ti.f64, np.float64)}
_MODEL_INT = ("sizes", "body_i", "jnt_i", "dof_i", "act_i", "ten_i", "wrap_i")
_MODEL_FLOAT = ("body_f", "jnt_f", "dof_f", "q_f", "act_f", "ten_f", "wrap_f", "opt_f")
# tables passed after the data, each with its dtype (None: the World's precision)
_EXTRA_MODEL = (("pair_i", ti.i32), ("geom_i", ti.i32), ("pair_f", None), ("geom_f", None), ("eq_i", ti.i32),
                ("eq_f", None))
_DEFAULT_MAX_CONTACTS = 64
# per-env parameters: name -> (model table, column, model size naming the rows)
_PARAMS = {"body_mass": ("body_f", "mass", "nbody"), "dof_damping": ("dof_f", "damping", "nv"),
           "actuator_gear": ("act_f", "gear", "nu"), "gravity": ("opt_f", "gravity", None),
           "jnt_range": ("jnt_f", "range", "njnt"), "geom_friction": ("pair_f", "friction", "ngeom")}
# quantities that are a data table's leading columns: table, and the model size naming them
_DIRECT = {"qpos": "qpos", "joint_q": "qpos", "qvel": "qvel", "joint_qd": "qvel", "qacc": "qacc", "ctrl": "ctrl",
           "qfrc_applied": "qfrc_applied"}
_DIRECT_SIZE = {"qpos": "nq", "joint_q": "nq", "qvel": "nv", "joint_qd": "nv", "qacc": "nv", "ctrl": "nu",
                "qfrc_applied": "nv"}
# width of each get() quantity when it is a matrix
_MATRICES = {"xmat": (3, 3), "ximat": (3, 3)}


# per-env counts of the last constraint solve: rows, rows that did not fit, iterations
_EFC_COUNTS = {"nefc": L.EFC_N, "efc_overflow": L.EFC_OVERFLOW, "solver_niter": L.EFC_NITER}


def _check_solver_options(opt) -> None:
    if opt.solver not in L.SOLVERS:
        raise WorldError(f"option solver must be one of {list(L.SOLVERS)}, got {opt.solver!r}")
    if opt.cone not in L.CONES:
        raise WorldError(f"option cone must be one of {list(L.CONES)}, got {opt.cone!r}")
    if opt.ls_iterations < 1 or opt.ls_tolerance < 0:
        raise WorldError(f"option ls_iterations must be >= 1 and ls_tolerance >= 0, got {opt.ls_iterations}, "
                         f"{opt.ls_tolerance}")


_SERIAL_WORK_US = 200.0  # below this estimated work per step, a CPU World steps serially
_LAUNCHED: set = set()  # step kernel variants launched in this process


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
            few envs of a small model; ``TAIGYM_SERIAL=0`` in the environment turns the
            default off). A World with another setting compiles its
            own kernels, so an env made beside a batch (an evaluation or video env) passes
            ``serial=False`` to share the batch's.
        name: what the World simulates (a task id), named in the line printed to stderr
            when its kernels compile for the first time on this machine.
    """

    def __init__(self, model: Model, num_envs: int = 1, *, device: str = "cpu", precision: str = "float32",
                 max_contacts=None, serial=None, name=None):
        if not isinstance(model, Model):
            raise WorldError(f"model must be a physics.Model, got {type(model).__name__}")
        if int(num_envs) < 1:
            raise WorldError(f"num_envs must be >= 1, got {num_envs}")
        if precision not in _PRECISIONS:
            raise WorldError(f"precision must be 'float32' or 'float64', got {precision!r}")
        self.model = model
        self.name = name
        self.num_envs = int(num_envs)
        self.precision = precision
        self.device = ensure_runtime(device)
        self._fp, self.dtype = _PRECISIONS[precision]
        _check_solver_options(model.opt)
        contacts_off = model.opt.disableflags & (DSBL_CONTACT | DSBL_CONSTRAINT)
        self._pairs = B.no_pairs() if contacts_off else B.candidate_pairs(model)
        if serial is None:
            serial = self._small_batch(model) and os.environ.get("TAIGYM_SERIAL", "1") != "0"
        self.serial = bool(serial) and self.device == "cpu"
        self._variant = (precision, model.opt.solver, model.opt.cone, self._pairs.convex, self.serial)
        self._kernels = make_kernels(self._fp, *self._variant[1:])
        self._ntask = 1 if self.serial else env_tasks(num_envs, self.device, current_cfg().cpu_max_num_threads)
        self._step_kernel, self._post_kernel = ReusedLaunch(self._kernels.step), ReusedLaunch(self._kernels.post)
        self._step_some = ReusedLaunch(self._kernels.step)
        self._all_ids = _upload(np.arange(self.num_envs, dtype=np.int32), ti.i32)
        self._some_ids = ti.ndarray(ti.i32, (self.num_envs,))  # a subset's ids, staged for a launch
        self._arrays_cache: dict = {}  # "all" / "some" -> the step kernel's array arguments
        self._readers: dict = {}  # table -> (host buffer, its copy launch), made on first read
        self._views: dict = {}  # id(table) -> (table, numpy array over its memory or None)
        self._writers: dict = {}  # (table, width) -> (staging buffer, env ids, its launch)
        self._post_fresh = False
        npair = self._pairs.npair
        possible = int(self._pairs.maxcon[:npair].sum())
        self.max_contacts = max(1, min(possible, _DEFAULT_MAX_CONTACTS) if max_contacts is None else int(max_contacts))
        rows_per_contact = max([1] + [2 * (int(c) - 1) for c in self._pairs.condim[:npair]])
        self.nefc_capacity = (L.equality_rows(model) + L.friction_rows(model) + L.limit_rows(model)
                              + (self.max_contacts * rows_per_contact if npair else 0))
        packed = L.pack_model(model, self.dtype, self.nefc_capacity, npair)
        packed.update(pack_collision_model(model, self._pairs, self.dtype))
        self._packed = packed  # host copies of the model tables, for per-env parameters
        self._m = {}
        for name in _MODEL_INT:
            self._m[name] = _upload(_device_layout(name, packed[name]), ti.i32)
        for name in _MODEL_FLOAT:
            self._m[name] = _upload(_device_layout(name, packed[name]), self._fp)
        for name, dtype in _EXTRA_MODEL:
            self._m[name] = _upload(packed[name], dtype or self._fp)
        self._shapes = L.data_shapes(model, self.num_envs, self.nefc_capacity)
        self._d = {name: ti.ndarray(self._fp, (int(np.prod(shape)),) if name in L.FLAT_TABLES else shape)
                   for name, shape in self._shapes.items()}
        self._efc_n = ti.ndarray(ti.i32, (self.num_envs, L.NEFC_N))
        self._host_cache: dict = {}
        self._tensor_cache: dict = {}
        # torch tensors move by device kernels (CUDA); on CPU they share the host path
        self._device_tensors = self.device != "cpu"
        self._eq_d = ti.ndarray(ti.i32, (self.num_envs, max(model.neq, 1), 2))
        n = self.num_envs
        self._c = dict(geom_x=ti.ndarray(self._fp, (n, max(model.ngeom, 1), NGEOM_X)),
                       con_f=ti.ndarray(self._fp, (n, self.max_contacts, NCON_F)),
                       con_i=ti.ndarray(ti.i32, (n, self.max_contacts, NCON_I)),
                       con_n=ti.ndarray(ti.i32, (n, 2)))
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
    def reset(self, env_ids=None) -> None:
        """Put worlds at the reference configuration qpos0 with zero velocity and control."""
        m = self.model
        qpos = np.tile(m.qpos0, (self.num_envs, 1))
        zeros_v = np.zeros((self.num_envs, m.nv))
        if env_ids is None:
            self.set_state(qpos=qpos, qvel=zeros_v)
            self.set_ctrl(np.zeros((self.num_envs, m.nu)))
            self._write("qfrc_applied", zeros_v)
            self.time[:] = 0
            ids = np.arange(self.num_envs)
        else:
            ids = np.asarray(env_ids)
            self.set_state(qpos=qpos[ids], qvel=zeros_v[ids], env_ids=ids)
            self.set_ctrl(np.zeros((len(ids), m.nu)), env_ids=ids)
            self.time[ids] = 0
        # a reset world starts its constraint solver cold, as MuJoCo's mj_resetData
        if m.nv:
            self._write_dof_column("qacc_warmstart", np.zeros((len(ids), m.nv), dtype=self.dtype), ids)
        # and with its equality constraints as the model declares them, none broken
        if m.neq:
            self._reset_equalities(ids)
        self._stale()

    def _reset_equalities(self, ids) -> None:
        m = self.model
        eq_d = self._eq_d.to_numpy()
        eq_d[ids, : m.neq, L.EQ_D_ACTIVE] = m.eq_active0
        eq_d[ids, :, L.EQ_D_BROKEN] = 0
        self._eq_d.from_numpy(eq_d)

    def set_equality_active(self, active, *, env_ids=None) -> None:
        """Switch equality constraints on or off per env: ``active`` (num_envs, neq) or (neq,)."""
        rows = self._rows(np.asarray(active, dtype=float), self.model.neq, "active", env_ids)
        eq_d = self._eq_d.to_numpy()
        eq_d[slice(None) if env_ids is None else np.asarray(env_ids), : self.model.neq, L.EQ_D_ACTIVE] = rows != 0
        self._eq_d.from_numpy(eq_d)
        self._stale()

    def broken_equalities(self, clear: bool = True) -> np.ndarray:
        """(num_envs, neq) bool: the equality constraints that broke (their force or torque
        passed the model's break limits) since the last call (or reset) when ``clear``."""
        eq_d = self._eq_d.to_numpy()
        out = eq_d[:, : self.model.neq, L.EQ_D_BROKEN] != 0
        if clear and out.any():
            eq_d[:, :, L.EQ_D_BROKEN] = 0
            self._eq_d.from_numpy(eq_d)
        self._stale()
        return out

    def set_state(self, qpos=None, qvel=None, *, env_ids=None) -> None:
        """Set generalized positions (num_envs, nq) and/or velocities (num_envs, nv).

        A single row (nq,) is broadcast to every env. With ``env_ids`` only those envs
        change and the arrays have one row per id.
        """
        if qpos is not None:
            self._write("qpos", self._rows(qpos, self.model.nq, "qpos", env_ids), env_ids)
        if qvel is not None:
            self._write("qvel", self._rows(qvel, self.model.nv, "qvel", env_ids), env_ids)

    def set_ctrl(self, ctrl, *, env_ids=None) -> None:
        """Set actuator controls (num_envs, nu); non-finite values are refused."""
        rows = self._rows(ctrl, self.model.nu, "ctrl", env_ids)
        self._write("ctrl", rows, env_ids)

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
        ids = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise WorldError(f"env_ids must be in [0, {self.num_envs}), got {ids.tolist()[:10]}")
        for value, name in ((q, "drive_qpos_target"), (qd, "drive_qvel_target")):
            if value is not None and self.model.nv:
                self._write_dof_column(name, self._rows(value, self.model.nv, name, env_ids), ids)

    def _write_dof_column(self, name: str, rows, ids) -> None:
        """dof_d[ids, :nv, column name] = rows, by a small kernel: no whole-table round trip."""
        from .smooth.drives import make_dof_column_kernel

        self._stale()
        if hasattr(rows, "detach"):  # a tensor on the World's device (_rows): ids go there too
            import torch

            ids = torch.as_tensor(np.asarray(ids, dtype=np.int32), device=rows.device)
        else:
            rows, ids = np.ascontiguousarray(rows, dtype=self.dtype), np.asarray(ids, dtype=np.int32)
            view = self._view_of(self._d["dof_d"])
            if view is not None:  # a CPU World's table, written in place
                table = view.reshape(self.num_envs, self._shapes["dof_d"][1], L.NDOF_D)
                table[ids[:, None], np.arange(rows.shape[1])[None, :], L.DOF_D[name][0]] = rows
                return
        make_dof_column_kernel(self._fp)(self._d["dof_d"], rows, ids, L.DOF_D[name][0],
                                         self._shapes["dof_d"][1] * L.NDOF_D)

    # --- per-env parameters (domain randomization) -------------------------------------------
    def set_param(self, name: str, values, *, env_ids=None) -> None:
        """Give envs their own value of a model parameter, without recompiling.

        ``name``: "body_mass" (num_envs, nbody) [kg], each body's inertia scaled with it
        (a uniform change of density); "dof_damping" (num_envs, nv); "actuator_gear"
        (num_envs, nu) (the first gear component); "gravity" (num_envs, 3); "jnt_range"
        (num_envs, njnt, 2) (the limits of MuJoCo's soft-limit rows); "geom_friction"
        (num_envs, ngeom), each geom's sliding friction, which a contact between two geoms
        mixes by max as MuJoCo does (explicit ``<pair>`` contacts keep their own). With
        ``env_ids`` one row per id. Envs not named keep their values; reset() keeps them.
        """
        if name not in _PARAMS:
            raise WorldError(f"unknown parameter {name!r}; per-env parameters are {sorted(_PARAMS)}")
        table, column, count = _PARAMS[name]
        width = 3 if name == "gravity" else getattr(self.model, count)
        if name == "jnt_range":
            arr = _to_numpy(values, name)
            values = arr.reshape(-1) if arr.shape == (width, 2) else arr.reshape(arr.shape[0], -1)
            width *= 2
        rows = self._rows(values, width, name, env_ids)
        if name == "jnt_range" and np.any(rows[:, 0::2] > rows[:, 1::2]):
            raise WorldError("jnt_range lower bounds must be <= upper bounds")
        if name == "geom_friction":
            if np.any(rows < 0):
                raise WorldError("geom_friction must be >= 0")
            self._set_geom_friction(rows, env_ids)
            return
        if name == "body_mass" and np.any(rows[:, 1:] <= 0) and self.model.nbody > 1:
            raise WorldError("body_mass must be > 0 for every body but the world")
        if name == "dof_damping" and np.any(rows < 0):
            raise WorldError("dof_damping must be >= 0")
        host = self._per_env_table(table)
        ids = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        start = L.OPT_F[column][0] if table == "opt_f" else {"body_f": L.BODY_F, "dof_f": L.DOF_F,
                                                              "act_f": L.ACT_F, "jnt_f": L.JNT_F}[table][column][0]
        if name == "gravity":
            host[ids, 0, start : start + 3] = rows
        elif name == "body_mass":
            nominal = np.maximum(self.model.body_mass, 1e-15)
            scale = rows / nominal
            moments = L.BODY_F["inertia"][0]
            host[ids, : self.model.nbody, start] = rows
            host[ids, : self.model.nbody, moments : moments + 3] = (
                self._packed["body_f"][0, : self.model.nbody, moments : moments + 3] * scale[..., None])
        elif name == "jnt_range":
            host[ids, : width // 2, start : start + 2] = rows.reshape(len(ids), -1, 2)
        else:
            host[ids, :width, start] = rows
        self._m[table].from_numpy(_device_layout(table, host))
        self._stale()

    def _set_geom_friction(self, rows, env_ids) -> None:
        ids = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        if not hasattr(self, "_geom_friction"):
            self._geom_friction = np.tile(self.model.geom_friction[:, 0], (self.num_envs, 1)).astype(np.float64)
        self._geom_friction[ids] = rows
        pairs = self._pairs
        auto = np.nonzero(pairs.explicit[: pairs.npair] < 0)[0]
        if not len(auto):
            return
        host = self._per_env_table("pair_f")
        mixed = np.maximum(self._geom_friction[ids][:, pairs.geom1[auto]], self._geom_friction[ids][:, pairs.geom2[auto]])
        for k in range(2):  # both tangent directions slide with the mixed coefficient
            host[ids[:, None], auto[None, :], P_FRICTION + k] = mixed
        self._m["pair_f"].from_numpy(host)
        self._stale()

    def get_param(self, name: str) -> np.ndarray:
        """(num_envs, n) values of a per-env parameter (see :meth:`set_param`)."""
        if name not in _PARAMS:
            raise WorldError(f"unknown parameter {name!r}; per-env parameters are {sorted(_PARAMS)}")
        table, column, count = _PARAMS[name]
        host = self._packed.get(table + "/per_env")
        if host is None:
            host = np.repeat(self._packed[table][:1], self.num_envs, axis=0)
        if name == "gravity":
            start = L.OPT_F["gravity"][0]
            return host[:, 0, start : start + 3].astype(np.float64)
        if name == "geom_friction":
            return getattr(self, "_geom_friction", np.tile(self.model.geom_friction[:, 0], (self.num_envs, 1))).copy()
        if name == "jnt_range":
            start = L.JNT_F["range"][0]
            return host[:, : self.model.njnt, start : start + 2].astype(np.float64)
        start = {"body_f": L.BODY_F, "dof_f": L.DOF_F, "act_f": L.ACT_F}[table][column][0]
        return host[:, : getattr(self.model, count), start].astype(np.float64)

    def _per_env_table(self, table: str) -> np.ndarray:
        """The host copy of a model table with one row per env, made so on first use."""
        key = table + "/per_env"
        if key not in self._packed:
            self._packed[key] = np.repeat(self._packed[table][:1], self.num_envs, axis=0).copy()
            self._m[table] = _upload(_device_layout(table, self._packed[key]), self._fp)
            self._arrays_cache.clear()
        return self._packed[key]

    # --- pipeline ------------------------------------------------------------------------
    def forward(self, env_ids=None, *, segments=(0, 0)) -> None:
        """Compute every derived quantity of the current state, without advancing time, of
        every env or of envs ``env_ids`` (the others keep theirs); ``segments`` as step()."""
        if env_ids is None:
            self._launch(1, advance=0, segments=segments)
            return
        ids = np.atleast_1d(np.asarray(env_ids))
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise WorldError(f"env_ids must be in [0, {self.num_envs}), got {ids.tolist()[:10]}")
        view = self._view_of(self._some_ids)
        if view is not None:
            view[: ids.size] = ids
        else:
            staged = np.zeros(self.num_envs, dtype=np.int32)
            staged[: ids.size] = ids
            self._some_ids.from_numpy(staged)
        self._launch(1, advance=0, ids=(self._some_ids, ids.size), segments=segments)

    def step(self, n: int = 1, *, segments=(0, 0)) -> None:
        """Advance every world by ``n`` time steps (one kernel launch). ``segments``: the
        program segments each env runs before and after its steps (set_program)."""
        n = int(n)
        if n < 1:
            return
        self._launch(n, advance=1, segments=segments)
        self.time += n * self.model.opt.timestep

    # --- programs -------------------------------------------------------------------------
    def set_program(self, program: Program) -> None:
        """Carry ``program`` (physics/step/program.py), with fresh zeroed registers; step() and
        forward() run its segments inside their launch."""
        if not isinstance(program, Program):
            raise WorldError(f"program must be a physics.program.Program, got {type(program).__name__}")
        self.program = program
        self._prog = dict(ints=_upload(program.ints, ti.i32), floats=_upload(program.floats, self._fp),
                          reg=ti.ndarray(self._fp, (self.num_envs, program.nregisters)))
        self._prog["reg"].fill(0)
        self._arrays_cache.clear()

    def registers(self) -> np.ndarray:
        """(num_envs, nregisters): on a CPU World the registers' own memory (writes reach the
        next launch), elsewhere a copy (write it back with set_registers)."""
        view = self._view_of(self._prog["reg"])
        return view if view is not None else self._prog["reg"].to_numpy()

    def registers_shared(self) -> bool:
        """Whether registers() is the registers' own memory (a CPU World) rather than a copy."""
        return self._view_of(self._prog["reg"]) is not None

    def set_registers(self, values) -> None:
        """Write every register of every env."""
        values = np.ascontiguousarray(values, dtype=self.dtype)
        view = self._view_of(self._prog["reg"])
        if view is not None:
            view[...] = values
        else:
            self._prog["reg"].from_numpy(values)

    # --- reading --------------------------------------------------------------------------
    def get(self, name: str) -> np.ndarray:
        """A numpy copy of a state or computed quantity, with a leading env axis.

        Names follow mjData: qpos, qvel, qacc, ctrl, qfrc_applied, qM, xpos, xquat, xmat,
        xipos, ximat, subtree_com, cinert, crb, cvel, cdof, cdof_dot, xanchor, xaxis,
        qfrc_bias, qfrc_passive, qfrc_actuator, qfrc_smooth, actuator_force, cacc,
        cfrc_ext (contact wrenches), cfrc_int (joint reaction wrenches),
        actuator_length, actuator_velocity, ten_length, ten_velocity, time; the
        constraint quantities qacc_smooth, qfrc_constraint, nefc (active rows per env),
        efc_overflow (rows that did not fit), efc_force, efc_pos, efc_type, efc_id...
        (num_envs, capacity; rows past nefc are zero); and the articulation view
        joint_q, joint_qd, body_q (position and quaternion per body).
        """
        m = self.model
        if name == "time":
            return self.time.copy()
        if name == "qM":
            return self._dense_mass_matrix()
        if name == "body_q":
            return np.concatenate([self.get("xpos"), self.get("xquat")], axis=-1)
        if name == "eq_active":
            return self._host("eq_d")[:, : m.neq, L.EQ_D_ACTIVE] != 0
        if name in _EFC_COUNTS:
            return self._host("efc_n")[:, _EFC_COUNTS[name]].copy()
        if name.startswith("efc_") and name[4:] in L.EFC_F:
            # rows past each env's nefc are stale; they are zeroed here
            out = self._host("efc_f")[:, : self.nefc_capacity, L.EFC_F[name[4:]][0]].copy()
            out[np.arange(self.nefc_capacity)[None, :] >= self._host("efc_n")[:, :1]] = 0
            return out
        return self._view(name, self._host).copy()

    def get_tensor(self, name: str):
        """``get(name)`` as a torch tensor on the World's device (a new tensor each call).
        State and mjData quantities are copied device to device; the others (qM, time,
        body_q, the constraint rows) are made on the host and uploaded."""
        import torch

        if name in _DIRECT or name in L.DATA_VIEWS:
            return self._view(name, self._table_tensor).clone()
        return torch.as_tensor(self.get(name), device=device_io.torch_device(self.device))

    def _view(self, name: str, table_of):
        """The slice of a table (numpy or torch, from ``table_of(table name)``) that holds
        quantity ``name``; a view into the cached copy."""
        m = self.model
        if name in _DIRECT:
            return table_of(_DIRECT[name])[:, : getattr(m, _DIRECT_SIZE[name])]
        if name not in L.DATA_VIEWS:
            known = sorted([*_DIRECT, "qM", "time", "body_q", "eq_active", *_EFC_COUNTS, *L.DATA_VIEWS,
                            *(f"efc_{k}" for k in L.EFC_F)])
            raise WorldError(f"unknown quantity {name!r}; known: {known}")
        if name in L.POST_CONSTRAINT:
            self._post_constraint()
        table, start, width = L.DATA_VIEWS[name]
        rows = {"body_d": m.nbody, "jnt_d": m.njnt, "dof_d": m.nv, "act_d": m.nu, "ten_d": m.ntendon}[table]
        out = table_of(table)[:, :rows, start : start + width]
        if width == 1:
            out = out[..., 0]
        elif name in _MATRICES:
            out = out.reshape(self.num_envs, rows, *_MATRICES[name])
        return out

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
        ``exclude``. Rows at or past ``ncon`` are zero.
        """
        f = self._host("con_f").copy()
        i = self._host("con_i").copy()
        n = self._host("con_n")
        stale = np.arange(self.max_contacts)[None, :] >= n[:, :1]
        f[stale] = 0
        i[stale] = 0
        out = {name: f[..., a : a + w].copy() if w > 1 else f[..., a].copy() for name, (a, w) in CONTACT_F.items()}
        out["frame"] = out["frame"].reshape(self.num_envs, self.max_contacts, 3, 3)
        out.update(geom=i[..., [CON_GEOM1, CON_GEOM2]], dim=i[..., CON_DIM].copy(),
                   exclude=i[..., CON_EXCLUDE].copy(), ncon=n[:, 0].copy(), overflow=n[:, 1].copy())
        return out

    # --- helpers ------------------------------------------------------------------------
    def _launch(self, n: int, advance: int, ids=None, segments=(0, 0)) -> None:
        self._stale()
        pre, post = (int(s) for s in segments)
        if not (0 <= pre < NSEGMENTS and 0 <= post < NSEGMENTS):
            raise WorldError(f"segments must be two program segments in 0..{NSEGMENTS - 1}, got {segments}")
        # two kept launches: every env (ids bound once), and a subset staged in _some_ids
        nids = self.num_envs if ids is None else ids[1]
        step_kernel = self._step_kernel if ids is None else self._step_some
        arrays = self._step_arrays(ids is None)
        scalars = (nids, n, advance, self._ntask, pre | post << 8)
        if self._variant in _LAUNCHED:
            step_kernel.with_arrays(arrays, *scalars)
        else:
            label = ", ".join(map(str, self._variant[:2])) + (", serial" if self.serial else "")
            with kernel_cache.FirstLaunch(kernel_cache.variant_key(*self._variant), label, self.name):
                step_kernel.with_arrays(arrays, *scalars)
            _LAUNCHED.add(self._variant)
        # a segment that computed every env's contact wrenches leaves cfrc_ext current (unless
        # envs may have run other segments instead: the override register)
        self._post_fresh = ids is None and post in self.program.rne_segments and self.program.override is None

    def _step_arrays(self, every_env: bool) -> tuple:
        """The step kernel's array arguments, made once (the same tuple object each launch
        lets the kept launch skip its check of them) until a table is replaced."""
        key = "all" if every_env else "some"
        if key not in self._arrays_cache:
            d, mm = self._d, self._m
            self._arrays_cache[key] = (
                *(mm[k] for k in _MODEL_INT), *(mm[k] for k in _MODEL_FLOAT),
                d["ctrl"], d["qfrc_applied"], d["qpos"], d["qvel"],
                d["qacc"], d["qpos_start"], d["body_d"], d["jnt_d"], d["dof_d"], d["qM"], d["qLD"], d["act_d"],
                d["ten_d"], d["efc_J"], d["efc_Y"], d["efc_f"], self._efc_n, *self._collision_args(),
                mm["eq_i"], mm["eq_f"], self._eq_d, self._prog["ints"], self._prog["floats"], self._prog["reg"],
                self._all_ids if every_env else self._some_ids,
            )
        return self._arrays_cache[key]

    def _stale(self) -> None:
        # the tables changed on the device: cached copies of them are out of date
        self._host_cache.clear()
        self._tensor_cache.clear()
        self._post_fresh = False

    def _table_tensor(self, name: str):
        """A torch copy of a device table on the World's device, made once until the next
        write or launch, as ``_host``."""
        if name not in self._tensor_cache:
            if not self._device_tensors:  # host memory is the device's: share the host copy
                import torch

                self._tensor_cache[name] = torch.from_numpy(self._host(name))
            else:
                tensor = device_io.table_to_tensor(self._tables()[name], self.device)
                self._tensor_cache[name] = tensor.reshape(self._shapes.get(name, tensor.shape))
        return self._tensor_cache[name]

    def _tables(self) -> dict:
        return {**self._d, **self._c, "efc_n": self._efc_n, "eq_d": self._eq_d}

    def _host(self, name: str) -> np.ndarray:
        """A host copy of a device table, made once until the next write or launch: the
        terms of an env step read several quantities of the same table."""
        if name not in self._host_cache:
            table = self._tables()[name]
            view = self._view_of(table)
            if view is not None:  # the table's own memory: nothing to copy
                self._host_cache[name] = view.reshape(self._shapes.get(name, view.shape))
                return self._host_cache[name]
            buffer, copy = self._readers.get(name, (None, None))
            if buffer is None or buffer.shape != tuple(table.shape):
                buffer = np.empty(tuple(table.shape), dtype=device_io.numpy_dtype(table))
                copy = ReusedLaunch(device_io.copy_kernel)
                self._readers[name] = buffer, copy
            copy(table, buffer)
            self._host_cache[name] = buffer.reshape(self._shapes.get(name, buffer.shape))
        return self._host_cache[name]

    def _view_of(self, table):
        """A numpy array over ``table``'s memory on a CPU World (made once per table), or None."""
        key = id(table)
        hit = self._views.get(key)
        if hit is None or hit[0] is not table:
            hit = (table, host_view(table))
            self._views[key] = hit
        return hit[1]

    def _post_constraint(self) -> None:
        if self._post_fresh:  # already run on this state
            return
        self._stale()
        d, mm, c = self._d, self._m, self._c
        self._post_fresh = True
        self._post_kernel(mm["sizes"], mm["body_i"], mm["opt_f"], d["qvel"], d["qacc"], d["body_d"], d["dof_d"],
                           mm["geom_i"], c["con_f"], c["con_i"], d["efc_f"], self._efc_n, self._ntask)

    def _collision_args(self):
        c, mm = self._c, self._m
        return (mm["pair_i"], mm["pair_f"], mm["geom_i"], mm["geom_f"], c["geom_x"], c["con_f"], c["con_i"],
                c["con_n"])

    def _dense_mass_matrix(self) -> np.ndarray:
        m = self.model
        cols = L.sparse_columns(m)[: m.nM]
        rows = np.repeat(np.arange(m.nv), np.diff(np.append(m.dof_Madr, m.nM)))
        sparse = self._host("qM")[:, : m.nM]
        dense = np.zeros((self.num_envs, m.nv, m.nv), dtype=sparse.dtype)
        dense[:, rows, cols] = sparse
        dense[:, cols, rows] = sparse
        return dense

    def _rows(self, value, n, what, env_ids):
        """``value`` checked as one row per env (or per id), broadcast from one row: a numpy
        array, or a torch tensor left where it is when it is on the World's device."""
        count = self.num_envs if env_ids is None else len(np.atleast_1d(env_ids))
        # on CPU a tensor is host memory: numpy's path, with its kept launches, takes it
        arr = self._on_device(value) if hasattr(value, "detach") and self._device_tensors else None
        if arr is None:
            arr = _to_numpy(value, what)
        if arr.ndim == 1:
            arr = (arr.expand(count, arr.shape[0]).contiguous() if hasattr(arr, "detach")
                   else np.broadcast_to(arr, (count, arr.shape[0])))
        if tuple(arr.shape) != (count, n):
            raise WorldError(f"{what} must have shape ({count}, {n}) or ({n},), got {tuple(arr.shape)}")
        finite = arr.isfinite() if hasattr(arr, "detach") else np.isfinite(arr)
        if not bool(finite.all()):
            bad = np.unique(np.nonzero(~_host_array(finite))[0])
            raise WorldError(f"{what} has non-finite values in rows {bad.tolist()[:10]}")
        return arr

    def _on_device(self, value):
        # a tensor on this World's device stays there, in the World's dtype; others go by host
        import torch

        if value.device.type != device_io.torch_device(self.device).type:
            return None
        return value.detach().to(getattr(torch, np.dtype(self.dtype).name)).contiguous()

    def _write(self, key, rows, env_ids=None):
        """Rows of a data table (all envs, or ``env_ids``), by a kernel on the device."""
        self._stale()
        view = None if hasattr(rows, "detach") else self._view_of(self._d[key])
        if view is not None:  # a CPU World's memory, written in place
            ids = slice(None) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
            view[ids, : rows.shape[1]] = rows
            return
        if env_ids is None and not hasattr(rows, "detach"):
            self._write_all(key, rows)
            return
        ids = np.arange(self.num_envs) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        if hasattr(rows, "detach"):
            import torch

            ids = torch.as_tensor(ids.astype(np.int32), device=rows.device)
        else:
            rows = np.ascontiguousarray(rows, dtype=self.dtype)
            ids = ids.astype(np.int32)
        device_io.write_rows(self._d[key], rows, ids)


    def _write_all(self, key, rows) -> None:
        # every env's rows (a control every step) go through a staging buffer kept per
        # quantity, so that the write's launch is set up once
        stage = self._writers.get((key, rows.shape[1]))
        if stage is None:
            stage = (np.empty((self.num_envs, rows.shape[1]), self.dtype), np.arange(self.num_envs, dtype=np.int32),
                     ReusedLaunch(device_io.write_rows_kernel))
            self._writers[(key, rows.shape[1])] = stage
        buffer, ids, launch = stage
        buffer[...] = rows
        if buffer.size:
            launch(self._d[key], buffer, ids)


def _device_layout(name: str, table: np.ndarray) -> np.ndarray:
    """A packed model table as the kernels index it: flat for layout.FLAT_MODEL_TABLES."""
    return np.ascontiguousarray(table).ravel() if name in L.FLAT_MODEL_TABLES else table


def _upload(arr: np.ndarray, dtype) -> ti.Ndarray:
    nd = ti.ndarray(dtype, arr.shape)
    nd.from_numpy(arr)
    return nd


def _host_array(x) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _to_numpy(value, what) -> np.ndarray:
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise WorldError(f"{what} must be a numeric array: {e}") from None
