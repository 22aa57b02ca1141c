"""Constructors: arrays from host data, filled, random and ranged arrays, one_hot."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _layout as L
from ._dtypes import as_dtype, float32, int64
from ._errors import DTypeError, ShapeError
from ._host import device_for
from ._ndarray import NDArray

Shape = tuple[int, ...]

_rng = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed the generator behind ``rand``, ``randn`` and everything built on them."""
    global _rng
    _rng = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The host random generator that ``manual_seed`` seeds."""
    return _rng


def array(obj: Any, dtype: Any = None, device: Any = None) -> NDArray:
    """An NDArray from nested lists, a numpy array, a scalar or another NDArray.

    Python floats become float32 and ints int64 (like PyTorch); numpy arrays
    keep float64 unless ``dtype`` says otherwise.

    Example:
        >>> array([[1, 2], [3, 4]], device="numpy").dtype
        lamina.int64
    """
    return NDArray._from_host(obj, dtype, device)


def empty(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    """An uninitialised compact array."""
    return _new(shape, dtype, device, "empty")


def _new(shape: Any, dtype: Any, device: Any, op: str) -> NDArray:
    dt = as_dtype(dtype, op)
    return NDArray._empty(L.normalize_shape(shape, op), dt, device_for(device, dt, op), op)


def full(shape: Any, value: float, dtype: Any = float32, device: Any = None) -> NDArray:
    """A compact array with every element ``value``."""
    return _full(shape, value, dtype, device, "full")


def _full(shape: Any, value: float, dtype: Any, device: Any, op: str) -> NDArray:
    out = _new(shape, dtype, device, op)
    if out.size:
        out._device.kernels.fill(out._buf, value)
    return out


def zeros(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    return _full(shape, 0, dtype, device, "zeros")


def ones(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    return _full(shape, 1, dtype, device, "ones")


def _host_shape(shape: Any, op: str) -> Shape:
    """A validated shape for host sampling (float64 on the host, whatever the dtype)."""
    dims = L.normalize_shape(shape, op)
    L.checked_size(dims, 8, op)
    return dims


def rand(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    """Uniform samples in [0, 1) from the seeded host generator."""
    return array(_rng.random(_host_shape(shape, "rand")), dtype=dtype, device=device)


def randn(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    """Standard normal samples from the seeded host generator."""
    return array(_rng.standard_normal(_host_shape(shape, "randn")), dtype=dtype,
                 device=device)


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           device: Any = None) -> NDArray:
    """Evenly spaced values in [start, stop); int64 when all arguments are ints."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError("arange: step must be nonzero")
    ints = all(isinstance(x, (int, np.integer)) for x in (start, stop, step))
    dt = as_dtype(dtype, "arange") if dtype is not None else (int64 if ints else float32)
    return array(np.arange(start, stop, step, dtype=np.float64 if not ints else np.int64),
                 dtype=dt, device=device)


def one_hot(indices: NDArray, num_classes: int, dtype: Any = float32) -> NDArray:
    """``out[..., c] = 1 if indices[...] == c``; shape ``indices.shape + (num_classes,)``."""
    if not isinstance(indices, NDArray) or indices.dtype is not int64:
        raise DTypeError("one_hot: indices must be an int64 NDArray")
    if indices.size:
        host = indices.numpy()
        lo, hi = int(host.min()), int(host.max())
        if lo < 0 or hi >= num_classes:
            bad = lo if lo < 0 else hi
            raise IndexError(f"one_hot: class index {bad} is out of range for "
                             f"{num_classes} classes")
    classes = arange(num_classes, device=indices.device)
    return (indices.expand_dims(-1) == classes).astype(dtype)
