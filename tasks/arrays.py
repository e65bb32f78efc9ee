"""The array operations task terms compute with, over numpy arrays or torch tensors.

A term reads its quantities from a :class:`tasks.context.StepContext` and computes with
``ctx.xp``: numpy on the host, or torch on the World's device when the vector env runs with
``tensor_backend="torch"``. So observations, rewards and terminations of a CUDA World are
computed where the World's data already is, and never pass through the host.

Both namespaces offer the same functions with numpy's argument names (``axis``). Model
constants a term closes over (index arrays, default poses, centres) become arrays of the
context's kind through :meth:`const`, which the torch namespace uploads once and caches.
"""

from __future__ import annotations

import numpy as np


class NumpyOps:
    """numpy, as the terms use it."""

    name = "numpy"
    device = "cpu"

    def const(self, value):
        return value

    def asarray(self, x):
        return np.asarray(x)

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)

    def float64(self, x):
        return np.asarray(x, dtype=np.float64)

    def bool(self, x):
        return np.asarray(x, dtype=bool)

    def zeros(self, shape, dtype=float):
        return np.zeros(shape, dtype=dtype)

    def copy(self, x):
        return x.copy()

    @staticmethod
    def put(dst, ids, values):
        """dst[ids] = values, cast to dst's dtype."""
        dst[ids] = values

    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    exp = staticmethod(np.exp)
    abs = staticmethod(np.abs)
    square = staticmethod(np.square)
    sqrt = staticmethod(np.sqrt)
    isfinite = staticmethod(np.isfinite)
    where = staticmethod(np.where)
    clip = staticmethod(np.clip)
    minimum = staticmethod(np.minimum)
    maximum = staticmethod(np.maximum)
    einsum = staticmethod(np.einsum)

    @staticmethod
    def cross(a, b):
        return np.cross(a, b)

    @staticmethod
    def norm(x, axis=-1):
        return np.linalg.norm(x, axis=axis)

    @staticmethod
    def concatenate(xs, axis=0):
        return np.concatenate(xs, axis=axis)

    @staticmethod
    def stack(xs, axis=0):
        return np.stack(xs, axis=axis)


class TorchOps:
    """torch on one device, with numpy's names; constants are uploaded once."""

    name = "torch"

    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self._consts: dict[int, tuple] = {}

    def const(self, value):
        """A model constant as a tensor on the device (floats as float64), made once: the
        cache holds ``value`` itself so that its id stays its own. Pass long-lived arrays
        (a model table, an array a term made when it was bound), not temporaries."""
        if not isinstance(value, np.ndarray):
            return value  # python scalars broadcast as they are
        hit = self._consts.get(id(value))
        if hit is None or hit[0] is not value:
            arr = value.astype(np.float64) if value.dtype.kind == "f" else value
            hit = (value, self.torch.as_tensor(arr, device=self.device))
            self._consts[id(value)] = hit
        return hit[1]

    def asarray(self, x):
        """numpy data (per-env draws made on the host) as a tensor on the device."""
        if isinstance(x, self.torch.Tensor):
            return x.to(self.device)
        arr = np.asarray(x)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        return self.torch.as_tensor(arr, device=self.device)

    def to_numpy(self, x) -> np.ndarray:
        return x.detach().cpu().numpy() if isinstance(x, self.torch.Tensor) else np.asarray(x)

    def float64(self, x):
        x = x if isinstance(x, self.torch.Tensor) else self.asarray(x)
        return x.to(self.device, self.torch.float64)

    def bool(self, x):
        x = x if isinstance(x, self.torch.Tensor) else self.asarray(x)
        return x.to(self.device, self.torch.bool)

    def zeros(self, shape, dtype=float):
        t = {float: self.torch.float64, bool: self.torch.bool, int: self.torch.int64}[dtype]
        return self.torch.zeros(shape, dtype=t, device=self.device)

    def copy(self, x):
        return x.clone()

    def put(self, dst, ids, values):
        """dst[ids] = values, cast to dst's dtype (torch's index_put will not cast)."""
        dst[ids] = values.to(dst.dtype) if isinstance(values, self.torch.Tensor) else values

    def sin(self, x):
        return self.torch.sin(x)

    def cos(self, x):
        return self.torch.cos(x)

    def exp(self, x):
        return self.torch.exp(x)

    def abs(self, x):
        return self.torch.abs(x)

    def square(self, x):
        return self.torch.square(x)

    def sqrt(self, x):
        return self.torch.sqrt(x)

    def isfinite(self, x):
        return self.torch.isfinite(x)

    def where(self, cond, a, b):
        return self.torch.where(cond, a, b)

    def clip(self, x, low, high):
        return self.torch.clamp(x, self.const(low), self.const(high))

    def minimum(self, a, b):
        if isinstance(b, (int, float)):  # a python scalar takes the array's dtype, as in numpy
            return self.torch.clamp(a, max=b)
        return self.torch.minimum(self._tensor(a), self._tensor(b))

    def maximum(self, a, b):
        if isinstance(b, (int, float)):
            return self.torch.clamp(a, min=b)
        return self.torch.maximum(self._tensor(a), self._tensor(b))

    def einsum(self, spec, *xs):
        # torch.einsum wants one dtype: promote as numpy would
        dtype = xs[0].dtype
        for x in xs[1:]:
            dtype = self.torch.promote_types(dtype, x.dtype)
        return self.torch.einsum(spec, *(x.to(dtype) for x in xs))

    def cross(self, a, b):
        dtype = self.torch.promote_types(a.dtype, b.dtype)
        return self.torch.linalg.cross(a.to(dtype), b.to(dtype), dim=-1)

    def norm(self, x, axis=-1):
        return self.torch.linalg.vector_norm(x, dim=axis)

    def concatenate(self, xs, axis=0):
        return self.torch.cat(list(xs), dim=axis)

    def stack(self, xs, axis=0):
        return self.torch.stack(list(xs), dim=axis)

    def _tensor(self, x):
        if isinstance(x, self.torch.Tensor):
            return x
        return self.torch.as_tensor(self.const(x) if isinstance(x, np.ndarray) else x, device=self.device)


NUMPY = NumpyOps()
