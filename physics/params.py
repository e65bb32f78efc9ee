"""Per-env values of model parameters (domain randomization), without recompiling.

Each parameter is a column of a packed model table (physics/layout.py). Setting one gives
that table a row set per env on first use (physics/data.py, Tables.per_env); the kernels
read a float model table's rows of env w when it has them. Friction is the exception: it is
a geom's, and contacts read their pair's, mixed from both geoms' by max as MuJoCo does. A
geom's position moves it for contacts, rays, geom_xpos and rendering alike (MuJoCo ignores a
new geom_pos of a geom it compiled as on its body's frame; here it always moves). geom_f's
rows past the geoms (height-field samples, mesh hulls) are copied per env with it. A site
has no table of its own: its position lives in the rows of the sensors that read it and of
the spatial tendons that pass it, which site_pos sets together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import layout as L
from .collision.driver import P_FRICTION
from .errors import WorldError
from .model import OBJ_SITE, WRAP_CYLINDER, WRAP_SITE, WRAP_SPHERE
from .torch_bridge import to_numpy

_COLUMNS = {"body_f": L.BODY_F, "dof_f": L.DOF_F, "act_f": L.ACT_F, "jnt_f": L.JNT_F, "opt_f": L.OPT_F,
            "geom_f": L.GEOM_F}


@dataclass(frozen=True)
class Param:
    """Where a parameter lives: ``table``'s ``column``, ``per`` values wide, in the rows that
    Model size ``count`` names (None: the table's one row, as gravity). ``check`` returns why
    values are refused (or None); ``write`` puts checked rows of envs ``ids`` in place and
    names the model table it changed; ``read`` gives every env's values."""

    table: str
    column: str
    count: str | None
    per: int = 1
    check: Callable | None = None
    write: Callable | None = None
    read: Callable | None = None

    def rows(self, model) -> int:
        return 1 if self.count is None else getattr(model, self.count)

    def block(self, model) -> tuple:
        """The index of the parameter's values within one env's row set of the host table."""
        start = _COLUMNS[self.table][self.column][0]
        rows = 0 if self.count is None else slice(None, self.rows(model))
        return rows, slice(start, start + self.per) if self.per > 1 else start


# --- checks ------------------------------------------------------------------------------------
def _masses(rows, model):
    if np.any(rows[:, 1:] <= 0) and model.nbody > 1:
        return "body_mass must be > 0 for every body but the world"


def _non_negative(name):
    return lambda rows, model: f"{name} must be >= 0" if np.any(rows < 0) else None


def _ordered(rows, model):
    if np.any(rows[:, 0::2] > rows[:, 1::2]):
        return "jnt_range lower bounds must be <= upper bounds"


def _unit_quaternions(rows, model):
    # kinematics composes body_quat as given, as MuJoCo does, so a scaled one would scale frames
    if np.any(np.abs(np.linalg.norm(rows.reshape(len(rows), -1, 4), axis=-1) - 1) > 1e-9):
        return "body_quat must be unit quaternions (w, x, y, z)"


# --- writers and readers ---------------------------------------------------------------------
def _write_block(params, param, rows, ids):
    host = params.tables.per_env(param.table)
    index = (ids, *param.block(params.model))
    host[index] = rows.reshape(host[index].shape)
    params.tables.upload_per_env(param.table)
    return param.table


def _write_mass(params, param, rows, ids):
    # each body's inertia scales with its mass: a uniform change of density
    model, tables = params.model, params.tables
    host = tables.per_env(param.table)
    moments = L.BODY_F["inertia"][0]
    nominal = tables.packed["body_f"][0, : model.nbody, moments : moments + 3]
    scale = rows / np.maximum(model.body_mass, 1e-15)
    host[ids, : model.nbody, moments : moments + 3] = nominal * scale[..., None]
    return _write_block(params, param, rows, ids)


def _write_friction(params, param, rows, ids):
    # a geom's own value; contacts read their pair's: the higher-priority geom's, the max of
    # the two at equal priority (explicit <pair>s keep their own)
    frictions = params.geom_friction()
    frictions[ids] = rows
    pairs = params.pairs
    auto = np.nonzero(pairs.explicit[: pairs.npair] < 0)[0]
    if not len(auto):
        return None
    host = params.tables.per_env(param.table)
    g1, g2 = pairs.geom1[auto], pairs.geom2[auto]
    f1, f2 = frictions[ids][:, g1], frictions[ids][:, g2]
    p1, p2 = params.model.geom_priority[g1], params.model.geom_priority[g2]
    mixed = np.where(p1 > p2, f1, np.where(p1 < p2, f2, np.maximum(f1, f2)))
    for k in range(2):  # both tangent directions slide with the mixed coefficient
        host[ids[:, None], auto[None, :], P_FRICTION + k] = mixed
    params.tables.upload_per_env(param.table)
    return param.table


def _site_rows(model):
    """(table, row, column, site): each place a site's position is packed, a sensor's object
    or reference frame, a spatial tendon's site or a wrapping geom's side site."""
    out = []
    for s in range(model.nsensor):
        if model.sensor_objtype[s] == OBJ_SITE:
            out.append(("sensor_f", s, "pos", int(model.sensor_objid[s])))
        if model.sensor_reftype[s] == OBJ_SITE:
            out.append(("sensor_f", s, "refpos", int(model.sensor_refid[s])))
    for k in range(model.nwrap):
        if model.wrap_type[k] == WRAP_SITE:
            out.append(("wrap_f", k, "pos", int(model.wrap_objid[k])))
        elif model.wrap_type[k] in (WRAP_SPHERE, WRAP_CYLINDER) and model.wrap_prm[k] >= 0:
            out.append(("wrap_f", k, "sidepos", round(model.wrap_prm[k])))
    return out


def _equality_sites(model) -> set:
    site = np.asarray(model.eq_objtype) == OBJ_SITE
    return {int(i) for i in np.concatenate([np.asarray(model.eq_obj1id)[site], np.asarray(model.eq_obj2id)[site]])}


def _write_site_pos(params, param, rows, ids):
    model = params.model
    pos = rows.reshape(len(ids), model.nsite, 3)
    moved = np.flatnonzero(np.any(pos != model.site_pos[None], axis=(0, 2)))
    fixed = sorted(_equality_sites(model).intersection(moved.tolist()))
    if fixed:  # the equality rows hold the compiled position
        raise WorldError(f"site_pos: site {model.site_name[fixed[0]]!r} holds an equality constraint, "
                         "whose anchor keeps the model's position")
    params.site_pos()[ids] = pos
    tables = {}
    for table, row, column, site in _site_rows(model):
        host = tables.setdefault(table, params.tables.per_env(table))
        start = {"sensor_f": L.SENSOR_F, "wrap_f": L.WRAP_F}[table][column][0]
        host[ids, row, start : start + 3] = pos[:, site]
    for table in tables:
        params.tables.upload_per_env(table)
    return tuple(tables)


def _read_site_pos(params, param):
    return params.site_pos(made=False).copy()


def _read_block(params, param):
    host = params.tables.model_rows(param.table)
    return host[(slice(None), *param.block(params.model))].astype(np.float64)


def _read_friction(params, param):
    return params.geom_friction(made=False).copy()


PARAMS = {
    "body_mass": Param("body_f", "mass", "nbody", check=_masses, write=_write_mass),
    "dof_damping": Param("dof_f", "damping", "nv", check=_non_negative("dof_damping")),
    "actuator_gear": Param("act_f", "gear", "nu"),
    "gravity": Param("opt_f", "gravity", None, per=3),
    "jnt_range": Param("jnt_f", "range", "njnt", per=2, check=_ordered),
    "geom_pos": Param("geom_f", "pos", "ngeom", per=3),
    "body_pos": Param("body_f", "pos", "nbody", per=3),
    "body_quat": Param("body_f", "quat", "nbody", per=4, check=_unit_quaternions),
    "geom_friction": Param("pair_f", "friction", "ngeom", check=_non_negative("geom_friction"),
                           write=_write_friction, read=_read_friction),
    "site_pos": Param(None, "pos", "nsite", per=3, write=_write_site_pos, read=_read_site_pos),
}


def lookup(name: str) -> Param:
    if name not in PARAMS:
        raise WorldError(f"unknown parameter {name!r}; per-env parameters are {sorted(PARAMS)}")
    return PARAMS[name]


class PerEnvParams:
    """The per-env parameters of a World's ``tables`` (physics/data.py) for ``model``, whose
    candidate contact ``pairs`` mix geom frictions."""

    def __init__(self, model, tables, pairs):
        self.model, self.tables, self.pairs = model, tables, pairs
        self._geom_friction = None  # (num_envs, ngeom) float64, once set
        self._site_pos = None  # (num_envs, nsite, 3) float64, once set

    def width(self, name: str) -> int:
        """Values per env row, as set() takes them."""
        param = PARAMS[name]
        return param.rows(self.model) * param.per

    def flat(self, name: str, values):
        """Values of a parameter given as (rows, per) per env (jnt_range) made one flat row per
        env, as World checks its inputs; one env's (rows, per) values become one row."""
        param = PARAMS[name]
        if param.per == 1 or param.count is None:
            return values
        arr = to_numpy(values, name)
        return arr.reshape(-1) if arr.shape == (param.rows(self.model), param.per) else arr.reshape(arr.shape[0], -1)

    def set(self, name: str, rows, ids) -> str | tuple | None:
        """Give envs ``ids`` the checked ``rows``; returns the model tables changed, if any."""
        param = PARAMS[name]
        message = param.check(rows, self.model) if param.check else None
        if message:
            raise WorldError(message)
        return (param.write or _write_block)(self, param, rows, ids)

    def get(self, name: str) -> np.ndarray:
        """(num_envs, n) values of parameter ``name``; (num_envs, n, per) for ranges."""
        param = lookup(name)
        return (param.read or _read_block)(self, param)

    def geom_friction(self, made: bool = True) -> np.ndarray:
        """(num_envs, ngeom) geom frictions: the model's until set (kept from then on when ``made``)."""
        if self._geom_friction is not None:
            return self._geom_friction
        frictions = np.tile(self.model.geom_friction[:, 0], (self.tables.num_envs, 1))
        if made:
            self._geom_friction = frictions = frictions.astype(np.float64)
        return frictions

    def site_pos(self, made: bool = True) -> np.ndarray:
        """(num_envs, nsite, 3) site positions in their bodies: the model's until set (kept
        from then on when ``made``)."""
        if self._site_pos is not None:
            return self._site_pos
        pos = np.tile(np.asarray(self.model.site_pos, dtype=np.float64), (self.tables.num_envs, 1, 1))
        if made:
            self._site_pos = pos
        return pos
