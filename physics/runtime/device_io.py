"""Moving World tables to and from torch tensors on the World's own device.

Taichi kernels take torch tensors as ndarray arguments in place (on CPU and on CUDA), so
a table is copied device to device by one kernel launch: a CUDA World's state reaches a
torch policy, and its actions come back, without a trip through host memory. The kernels
are generic over dtype and rank, so a handful of variants serve every table.
"""


import numpy as np

from .lanes import LANES, lane_index
from ..runtime.backend import ti

_TORCH_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64", np.dtype(np.int32): "int32"}


@ti.kernel
def copy_kernel(src: ti.types.ndarray(), dst: ti.types.ndarray()):
    for i in ti.grouped(src):
        dst[i] = src[i]


@ti.kernel
def write_rows_kernel(dst: ti.types.ndarray(ndim=2), rows: ti.types.ndarray(ndim=2), env_ids: ti.types.ndarray(ndim=1)):
    # only the first rows.shape[1] columns: a table may be wider than the quantity
    for k, j in ti.ndrange(rows.shape[0], rows.shape[1]):
        dst[env_ids[k], j] = rows[k, j]


@ti.kernel
def write_lane_rows_kernel(dst: ti.types.ndarray(ndim=2), rows: ti.types.ndarray(ndim=2),
                           env_ids: ti.types.ndarray(ndim=1)):
    """write_rows_kernel into a table interleaved by LANES (physics/runtime/lanes.py). No template
    parameter picks the layout: a kept launch (ReusedLaunch) needs a kernel without one."""
    for k, j in ti.ndrange(rows.shape[0], rows.shape[1]):
        dst[lane_index(LANES, env_ids[k], j)] = rows[k, j]


@ti.kernel
def gather_columns_kernel(src: ti.types.ndarray(ndim=2), dst: ti.types.ndarray(ndim=2),
                          columns: ti.types.ndarray(ndim=1)):
    for k, j in ti.ndrange(dst.shape[0], dst.shape[1]):
        dst[k, j] = src[k, columns[j]]


@ti.kernel
def write_columns_kernel(dst: ti.types.ndarray(ndim=2), rows: ti.types.ndarray(ndim=2),
                         env_ids: ti.types.ndarray(ndim=1), start: ti.i32):
    for k, j in ti.ndrange(rows.shape[0], rows.shape[1]):
        dst[env_ids[k], start + j] = rows[k, j]


def gather_columns(table, columns: np.ndarray, device: str):
    """A new (rows, len(columns)) torch tensor on ``device`` holding those columns of a 2-D
    Taichi ndarray, gathered there by one kernel."""
    import torch

    dtype = getattr(torch, _TORCH_DTYPES[np.dtype(numpy_dtype(table))])
    out = torch.empty((table.shape[0], len(columns)), dtype=dtype, device=torch_device(device))
    if out.numel():
        gather_columns_kernel(table, out, columns)
    return out


def write_columns(table, start: int, rows, env_ids) -> None:
    """table[env_ids[k], start + j] = rows[k, j] for a 2-D Taichi ndarray; ``rows`` a numpy
    array or a torch tensor on the table's device, ``env_ids`` an int32 array or ndarray."""
    if rows.shape[0] and rows.shape[1]:
        write_columns_kernel(table, rows, env_ids, start)


def rows_kernel(lanes: int):
    """The kernel that writes rows into a table laid out for ``lanes`` (1 or LANES)."""
    return write_rows_kernel if lanes == 1 else write_lane_rows_kernel


def torch_device(device: str):
    """The torch device of a World on ``device``: on CUDA with its index, as torch gives
    tensors' devices (``cuda`` and ``cuda:0`` compare unequal), the device Taichi runs on."""
    import torch

    return torch.device("cuda", torch.cuda.current_device()) if device == "cuda" else torch.device("cpu")


def table_to_tensor(table, device: str):
    """A new torch tensor on ``device`` holding all of a Taichi ndarray."""
    import torch

    dtype = getattr(torch, _TORCH_DTYPES[np.dtype(numpy_dtype(table))])
    out = torch.empty(tuple(table.shape), dtype=dtype, device=torch_device(device))
    copy_kernel(table, out)
    return out


def write_rows(table, rows, env_ids, lanes: int = 1) -> None:
    """table[env_ids[k], :w] = rows[k] for a (num_envs, W) Taichi ndarray laid out for
    ``lanes`` (physics/runtime/lanes.py); ``rows`` a numpy array or a torch tensor on the table's
    device, (n, w) with w <= W."""
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        return
    rows_kernel(lanes)(table, rows, env_ids)


def numpy_dtype(table):
    return {ti.f32: np.float32, ti.f64: np.float64, ti.i32: np.int32}[table.dtype]
