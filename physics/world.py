"""World: a Model's constants on the device plus the batched state of ``num_envs`` worlds.

MuJoCo's mjData with a leading env axis: ``get("qpos")`` is (num_envs, nq), ``get("xpos")``
(num_envs, nbody, 3), ``get("qM")`` (num_envs, nv, nv). Inputs are numpy arrays or torch
tensors; outputs are numpy copies.
"""

from __future__ import annotations

import numpy as np
import taichi as ti

from . import layout as L
from ._taichi import ensure_runtime
from .errors import WorldError
from .model import Model
from .pipeline import make_kernels

_PRECISIONS = {"float32": (ti.f32, np.float32), "float64": (ti.f64, np.float64)}
_MODEL_INT = ("sizes", "body_i", "jnt_i", "dof_i", "act_i", "ten_i", "wrap_i")
_MODEL_FLOAT = ("body_f", "jnt_f", "dof_f", "q_f", "act_f", "ten_f", "wrap_f", "opt_f")
# width of each get() quantity when it is a matrix
_MATRICES = {"xmat": (3, 3), "ximat": (3, 3)}


class World:
    """Batched simulation state and the pipeline that advances it.

    Args:
        model: the Model to simulate.
        num_envs: number of independent worlds (environments).
        device: "cpu", "cuda" or "auto" (cuda when available). One per process.
        precision: "float32" (fast) or "float64" (what oracle tests use).
    """

    def __init__(self, model: Model, num_envs: int = 1, *, device: str = "cpu", precision: str = "float32"):
        if not isinstance(model, Model):
            raise WorldError(f"model must be a physics.Model, got {type(model).__name__}")
        if int(num_envs) < 1:
            raise WorldError(f"num_envs must be >= 1, got {num_envs}")
        if precision not in _PRECISIONS:
            raise WorldError(f"precision must be 'float32' or 'float64', got {precision!r}")
        self.model = model
        self.num_envs = int(num_envs)
        self.precision = precision
        self.device = ensure_runtime(device)
        self._fp, self.dtype = _PRECISIONS[precision]
        self._kernels = make_kernels(self._fp)

        self.nefc_capacity = L.limit_rows(model)
        packed = L.pack_model(model, self.dtype, self.nefc_capacity)
        self._m = {}
        for name in _MODEL_INT:
            self._m[name] = _upload(packed[name], ti.i32)
        for name in _MODEL_FLOAT:
            self._m[name] = _upload(packed[name], self._fp)
        shapes = L.data_shapes(model, self.num_envs, self.nefc_capacity)
        self._d = {name: ti.ndarray(self._fp, shape) for name, shape in shapes.items()}
        self._efc_n = ti.ndarray(ti.i32, (self.num_envs, 2))
        self.time = np.zeros(self.num_envs)
        self.reset()

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
        dof_d = self._d["dof_d"].to_numpy()
        dof_d[ids, :, L.DOF_D["qacc_warmstart"][0]] = 0
        self._d["dof_d"].from_numpy(dof_d)

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

    # --- pipeline ------------------------------------------------------------------------
    def forward(self) -> None:
        """Compute every derived quantity of the current state, without advancing time."""
        d, mm = self._d, self._m
        self._kernels.forward(
            *(mm[k] for k in _MODEL_INT), *(mm[k] for k in _MODEL_FLOAT),
            d["qpos"], d["qvel"], d["ctrl"], d["qfrc_applied"],
            d["qacc"], d["body_d"], d["jnt_d"], d["dof_d"], d["qM"], d["qLD"], d["act_d"], d["ten_d"],
            d["efc_J"], d["efc_Y"], d["efc_f"], self._efc_n,
        )

    def step(self, n: int = 1) -> None:
        """Advance every world by ``n`` time steps (one kernel launch)."""
        n = int(n)
        if n < 1:
            return
        d, mm = self._d, self._m
        self._kernels.step(
            *(mm[k] for k in _MODEL_INT), *(mm[k] for k in _MODEL_FLOAT),
            d["ctrl"], d["qfrc_applied"], d["qpos"], d["qvel"],
            d["qacc"], d["qpos_start"], d["body_d"], d["jnt_d"], d["dof_d"], d["qM"], d["qLD"], d["act_d"],
            d["ten_d"], d["efc_J"], d["efc_Y"], d["efc_f"], self._efc_n, n,
        )
        self.time += n * self.model.opt.timestep

    # --- reading --------------------------------------------------------------------------
    def get(self, name: str) -> np.ndarray:
        """A numpy copy of a state or computed quantity, with a leading env axis.

        Names follow mjData: qpos, qvel, qacc, ctrl, qfrc_applied, qM, xpos, xquat, xmat,
        xipos, ximat, subtree_com, cinert, crb, cvel, cdof, cdof_dot, xanchor, xaxis,
        qfrc_bias, qfrc_passive, qfrc_actuator, qfrc_smooth, actuator_force,
        actuator_length, actuator_velocity, ten_length, ten_velocity, time; the
        constraint quantities qacc_smooth, qfrc_constraint, nefc (active rows per env),
        efc_overflow (rows that did not fit), efc_force, efc_pos, efc_type, efc_id...
        (num_envs, capacity; rows past nefc are zero); and the articulation view
        joint_q, joint_qd, body_q (position and quaternion per body).
        """
        m = self.model
        n = {"qpos": m.nq, "joint_q": m.nq, "qvel": m.nv, "joint_qd": m.nv, "qacc": m.nv, "ctrl": m.nu,
             "qfrc_applied": m.nv}
        if name == "time":
            return self.time.copy()
        if name in n:
            key = {"joint_q": "qpos", "joint_qd": "qvel"}.get(name, name)
            return self._d[key].to_numpy()[:, : n[name]].copy()
        if name == "qM":
            return self._dense_mass_matrix()
        if name == "body_q":
            return np.concatenate([self.get("xpos"), self.get("xquat")], axis=-1)
        if name in ("nefc", "efc_overflow"):
            return self._efc_n.to_numpy()[:, 0 if name == "nefc" else 1].copy()
        if name.startswith("efc_") and name[4:] in L.EFC_F:
            # rows past each env's nefc are stale; they are zeroed here
            out = self._d["efc_f"].to_numpy()[:, : self.nefc_capacity, L.EFC_F[name[4:]][0]].copy()
            out[np.arange(self.nefc_capacity)[None, :] >= self._efc_n.to_numpy()[:, :1]] = 0
            return out
        if name not in L.DATA_VIEWS:
            known = sorted([*n, "qM", "time", "body_q", "nefc", "efc_overflow", *L.DATA_VIEWS,
                            *(f"efc_{k}" for k in L.EFC_F)])
            raise WorldError(f"unknown quantity {name!r}; known: {known}")
        table, start, width = L.DATA_VIEWS[name]
        rows = {"body_d": m.nbody, "jnt_d": m.njnt, "dof_d": m.nv, "act_d": m.nu, "ten_d": m.ntendon}[table]
        out = self._d[table].to_numpy()[:, :rows, start : start + width]
        if width == 1:
            out = out[..., 0]
        elif name in _MATRICES:
            out = out.reshape(self.num_envs, rows, *_MATRICES[name])
        return out.copy()

    # --- helpers ------------------------------------------------------------------------
    def _dense_mass_matrix(self) -> np.ndarray:
        m = self.model
        rows, cols = [], []
        for i in range(m.nv):
            j = i
            while j >= 0:
                rows.append(i)
                cols.append(j)
                j = m.dof_parentid[j]
        sparse = self._d["qM"].to_numpy()[:, : m.nM]
        dense = np.zeros((self.num_envs, m.nv, m.nv), dtype=sparse.dtype)
        dense[:, rows, cols] = sparse
        dense[:, cols, rows] = sparse
        return dense

    def _rows(self, value, n, what, env_ids):
        arr = _to_numpy(value, what)
        count = self.num_envs if env_ids is None else len(np.atleast_1d(env_ids))
        if arr.ndim == 1:
            arr = np.broadcast_to(arr, (count, arr.shape[0]))
        if arr.shape != (count, n):
            raise WorldError(f"{what} must have shape ({count}, {n}) or ({n},), got {tuple(arr.shape)}")
        if not np.all(np.isfinite(arr)):
            bad = np.unique(np.nonzero(~np.isfinite(arr))[0])
            raise WorldError(f"{what} has non-finite values in rows {bad.tolist()[:10]}")
        return arr

    def _write(self, key, rows, env_ids=None):
        nd = self._d[key]
        width = rows.shape[1]
        if env_ids is None and width == nd.shape[1]:
            nd.from_numpy(np.ascontiguousarray(rows, dtype=self.dtype))
            return
        full = nd.to_numpy()
        if env_ids is None:
            full[:, :width] = rows
        else:
            full[np.asarray(env_ids), :width] = rows
        nd.from_numpy(full)


def _upload(arr: np.ndarray, dtype) -> ti.Ndarray:
    nd = ti.ndarray(dtype, arr.shape)
    nd.from_numpy(arr)
    return nd


def _to_numpy(value, what) -> np.ndarray:
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise WorldError(f"{what} must be a numeric array: {e}") from None
