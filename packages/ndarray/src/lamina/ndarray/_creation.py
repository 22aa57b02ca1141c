"""Constructors: arrays from host data (``from_dlpack`` too), filled, random and ranged
arrays, one_hot."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import _layout as L
from ._dlpack import DEVICE_NAMES, KDLCPU, BFloat16Bits
from ._dtypes import as_dtype, bfloat16, float32, int64
from ._errors import DTypeError, ShapeError
from ._host import device_for
from ._hoststep import host_step
from ._narrow import kernels_of
from ._ndarray import NDArray
from ._registry import Device, get_device

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
        kernels_of(out, "fill", op).fill(out._buf, value)
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


@host_step
def rand(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    """Uniform samples in [0, 1) from the seeded host generator."""
    return array(_rng.random(_host_shape(shape, "rand")), dtype=dtype, device=device)


@host_step
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


def from_dlpack(x: Any, *, device: Any = None, copy: bool | None = None) -> NDArray:
    """An NDArray from any object with ``__dlpack__`` (numpy, PyTorch, JAX, ...).

    The memory is shared when ``device`` keeps its buffers in host memory
    (``numpy``, ``cpu``: its backend has ``wrap_numpy``) and the producer's
    data is writable; on any other device, or from read-only memory, the
    values are copied into a new buffer. Strides (non-contiguous views) are
    kept when sharing.

    Args:
        x: an object implementing the DLPack protocol (``__dlpack__`` and
            ``__dlpack_device__``), in host (CPU) memory.
        device: where the result lives; the default device when ``None``.
        copy: ``True`` always copies; ``False`` never copies and raises
            ``BufferError`` when sharing is impossible; ``None`` shares when
            it can and copies otherwise.

    Returns:
        An NDArray of ``x``'s shape and dtype (any Lamina dtype; a bfloat16
            producer's values are always copied).

    Raises:
        TypeError: ``x`` does not implement DLPack.
        DTypeError: ``x``'s dtype is not one Lamina supports.
        BufferError: ``x`` is not in host memory, or ``copy=False`` cannot be met.

    Example:
        >>> import numpy as np
        >>> src = np.zeros(3, np.float32)
        >>> a = from_dlpack(src, device="numpy")
        >>> src[0] = 7.0
        >>> a.tolist()
        [7.0, 0.0, 0.0]
    """
    dev = get_device(device)
    if isinstance(x, NDArray):
        if copy is False and x.device is not dev:
            raise BufferError(f"from_dlpack: copy=False, but the array is on {x.device} "
                              f"and device {dev} was asked for")
        return x.copy() if copy and x.device is dev else x.to(dev)
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(f"from_dlpack: expected an object implementing the DLPack protocol "
                        f"(__dlpack__ and __dlpack_device__), got {type(x).__name__}")
    kind, index = x.__dlpack_device__()
    if kind != KDLCPU:
        raise BufferError(
            f"from_dlpack: the {type(x).__name__} lives on DLPack device "
            f"{DEVICE_NAMES.get(kind, kind)}:{index}; Lamina imports host (CPU) memory "
            f"only: move it to the CPU first (e.g. tensor.cpu())")
    wrap = dev.kernels.wrap_numpy
    share = wrap is not None and copy is not True
    if copy is False and not share:
        raise BufferError(f"from_dlpack: device {dev} cannot share memory with the "
                          f"producer (its backend has no wrap_numpy), and copy=False "
                          f"forbids a copy")
    producer = BFloat16Bits(x)  # numpy reads a bfloat16 capsule as its uint16 bits
    host = np.from_dlpack(producer, copy=False if copy is False else None)  # array() copies
    if producer.found:
        if copy is False:
            raise BufferError("from_dlpack: bfloat16 memory cannot be shared (numpy, "
                              "through which Lamina reads it, has no bfloat16), and "
                              "copy=False forbids a copy")
        # the bits widened to float32 are the exact values: the cast back is exact
        values = (host.astype(np.uint32) << 16).view(np.float32)
        return array(values, dtype=bfloat16, device=dev)
    dtype = as_dtype(host.dtype, "from_dlpack")
    if share and not host.flags.writeable:
        if copy is False:
            raise BufferError("from_dlpack: the producer's memory is read-only and Lamina "
                              "arrays are writable, so copy=False cannot be met")
        share = False
    if dtype.name not in dev.kernel_dtypes["wrap_numpy"] and dtype.name in dev.dtypes:
        # a dtype the device stores but cannot share (float16: interface v2.2)
        if copy is False:
            raise BufferError(f"from_dlpack: device {dev} cannot share {dtype.name} memory, "
                              f"and copy=False forbids a copy")
        share = False
    if not share or host.size == 0 or dtype.name not in dev.dtypes:  # array() says why
        return array(host, dtype=dtype, device=dev)
    return _wrap(host, dev, wrap)


def _wrap(host: np.ndarray, dev: Device, wrap_numpy: Any) -> NDArray:
    """An NDArray on ``dev`` (a host device) viewing ``host``'s memory, strides included;
    ``wrap_numpy`` is the device's kernel of that name."""
    item = host.itemsize
    strides = tuple(s // item for s in host.strides)
    lo = sum(st * (n - 1) for n, st in zip(host.shape, strides) if st < 0)
    hi = sum(st * (n - 1) for n, st in zip(host.shape, strides) if st > 0)
    # The lowest-addressed element starts the flat buffer the view walks.
    first = host[tuple(slice(n - 1, n) if st < 0 else slice(0, 1)
                       for n, st in zip(host.shape, strides))] if host.ndim else host[...]
    flat = as_strided(first.reshape(1), shape=(hi - lo + 1,), strides=(item,))
    # The buffer holds flat, whose base chain keeps the producer's memory alive.
    buf = wrap_numpy(flat)
    return NDArray._view(buf, host.shape, strides, -lo, as_dtype(host.dtype), dev)
