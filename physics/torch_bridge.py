"""What a World is given, as the arrays its writes take: numpy arrays, or torch tensors left
on the World's device when they are there already (a CUDA World then takes actions from a
policy without a trip through host memory; physics/runtime/device_io.py moves them).

On a CPU World a tensor is host memory: it takes numpy's path, whose writes land in place,
and a torch copy of a table shares the host copy (physics/readback.py).
"""

from __future__ import annotations

import numpy as np

from .errors import WorldError
from .runtime import device_io


def is_tensor(x) -> bool:
    return hasattr(x, "detach")


class TorchBridge:
    """How a World on ``device`` takes rows and gives copies in its ``dtype``: by device
    kernels where torch tensors live apart from host memory (``device_tensors``: CUDA)."""

    def __init__(self, device: str, dtype):
        self.device, self.dtype = device, dtype
        # torch tensors move by device kernels (CUDA); on CPU they share the host path
        self.device_tensors = device != "cpu"

    def rows(self, value, n: int, what: str, count: int):
        """``value`` checked as ``count`` rows of ``n`` finite values, broadcast from one row: a
        numpy array, or a torch tensor in the World's dtype left where it is when it is on the
        World's device."""
        # on CPU a tensor is host memory: numpy's path, with its kept launches, takes it
        arr = on_device(value, self.device, self.dtype) if is_tensor(value) and self.device_tensors else None
        if arr is None:
            arr = to_numpy(value, what)
        if arr.ndim == 1:
            arr = (arr.expand(count, arr.shape[0]).contiguous() if is_tensor(arr)
                   else np.broadcast_to(arr, (count, arr.shape[0])))
        if tuple(arr.shape) != (count, n):
            raise WorldError(f"{what} must have shape ({count}, {n}) or ({n},), got {tuple(arr.shape)}")
        finite = arr.isfinite() if is_tensor(arr) else np.isfinite(arr)
        if not bool(finite.all()):
            bad = np.unique(np.nonzero(~_host_array(finite))[0])
            raise WorldError(f"{what} has non-finite values in rows {bad.tolist()[:10]}")
        return arr


def on_device(value, device: str, dtype):
    """A tensor on the World's device, in the World's ``dtype``; None for one elsewhere."""
    import torch

    if value.device.type != device_io.torch_device(device).type:
        return None
    return value.detach().to(getattr(torch, np.dtype(dtype).name)).contiguous()


def ids_beside(rows, ids):
    """Env ids as int32 where ``rows`` are: on a tensor's device, or a numpy array."""
    if is_tensor(rows):
        import torch

        return torch.as_tensor(np.asarray(ids, dtype=np.int32), device=rows.device)
    return np.asarray(ids, dtype=np.int32)


def to_numpy(value, what: str) -> np.ndarray:
    if is_tensor(value):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise WorldError(f"{what} must be a numeric array: {e}") from None


def _host_array(x) -> np.ndarray:
    return x.detach().cpu().numpy() if is_tensor(x) else np.asarray(x)
