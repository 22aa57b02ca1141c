"""Creating arrays, and functions over several arrays (stack, where, im2col, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number
from typing import Any

import numpy as np

from . import _layout as L
from ._compute import binary
from ._dtypes import DType, as_dtype, float32, int64
from ._errors import DeviceError, DTypeError, ShapeError
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


def _device_for(device: Any, dtype: DType, op: str) -> Device:
    dev = get_device(device)
    if dtype.name not in dev.dtypes:
        raise DTypeError(f"{op}: device {dev.name} does not support {dtype.name} "
                         f"(it lists {', '.join(dev.dtypes)})")
    return dev


def _infer_dtype(raw: np.ndarray, from_numpy: bool) -> DType:
    kind = raw.dtype.kind
    if kind == "f":
        return as_dtype(raw.dtype) if from_numpy and raw.dtype.itemsize >= 4 else float32
    if kind in "iu":
        return int64
    if kind == "b":
        return float32
    raise DTypeError(f"array: cannot make an array from data of dtype {raw.dtype}; "
                     f"Lamina supports float32, float64 and int64")


_INT64 = np.iinfo(np.int64)


def _big_ints(raw: np.ndarray) -> np.ndarray:
    """An object array of Python ints (numpy's result for ints beyond 64 bits): raise
    OverflowError naming the first one that int64 cannot hold."""
    flat = raw.reshape(-1)
    if flat.size and all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
        bad = next((v for v in flat if not _INT64.min <= v <= _INT64.max), None)
        if bad is not None:
            raise OverflowError(f"array: {bad} does not fit int64 (range {_INT64.min}.."
                                f"{_INT64.max})")
    return raw


def _check_int64_range(raw: np.ndarray) -> None:
    """OverflowError where a conversion to int64 would wrap (uint64 above 2**63 - 1,
    floats that are not finite or out of range) instead of a silent wrong value."""
    if not raw.size or raw.dtype.kind not in "uf":
        return
    if raw.dtype.kind == "u":
        bad = raw[raw > _INT64.max]
    else:
        # 2**63 is exact in every float dtype; the largest float below it fits.
        bad = raw[~(np.isfinite(raw) & (raw >= -(2.0**63)) & (raw < 2.0**63))]
    if bad.size:
        raise OverflowError(f"array: {bad.reshape(-1)[0].item()!r} does not fit int64 (range "
                            f"{_INT64.min}..{_INT64.max})")


def array(obj: Any, dtype: Any = None, device: Any = None) -> NDArray:
    """An NDArray from nested lists, a numpy array, a scalar or another NDArray.

    Python floats become float32 and ints int64 (like PyTorch); numpy arrays
    keep float64 unless ``dtype`` says otherwise.

    Example:
        >>> array([[1, 2], [3, 4]], device="numpy").dtype
        lamina.int64
    """
    if isinstance(obj, NDArray):
        out = obj.astype(dtype) if dtype is not None else obj
        return out.to(device) if device is not None else out
    from_numpy = isinstance(obj, (np.ndarray, np.generic))
    raw = np.asarray(obj)
    if raw.dtype.kind == "O" and dtype in (None, int64, "int64"):
        raw = _big_ints(raw)
    dt = as_dtype(dtype, "array") if dtype is not None else _infer_dtype(raw, from_numpy)
    dev = _device_for(device, dt, "array")
    if dt is int64:
        _check_int64_range(raw)
    host = np.asarray(raw, dtype=dt.np, order="C")
    out = NDArray._empty(host.shape, dt, dev)
    if host.size:
        dev.kernels.from_numpy(host.reshape(-1), out._buf)
    return out


def empty(*shape: Any, dtype: Any = float32, device: Any = None) -> NDArray:
    """An uninitialised compact array."""
    return _new(shape, dtype, device, "empty")


def _new(shape: Any, dtype: Any, device: Any, op: str) -> NDArray:
    dt = as_dtype(dtype, op)
    return NDArray._empty(L.normalize_shape(shape, op), dt, _device_for(device, dt, op), op)


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


def _same_device_dtype(arrays: Sequence[NDArray], op: str) -> tuple[Device, DType]:
    if not arrays:
        raise ShapeError(f"{op}: expected a non-empty sequence of arrays")
    first = arrays[0]
    for i, a in enumerate(arrays[1:], 1):
        if a.device is not first.device:
            raise DeviceError(f"{op}: arrays are on different devices, {first.device.name} "
                              f"(arg 0) and {a.device.name} (arg {i})")
        if a.dtype is not first.dtype:
            raise DTypeError(f"{op}: dtypes differ, {first.dtype.name} (arg 0) and "
                             f"{a.dtype.name} (arg {i})")
    return first.device, first.dtype


def concatenate(arrays: Sequence[NDArray], axis: int = 0) -> NDArray:
    """Join arrays along an existing axis."""
    device, dtype = _same_device_dtype(arrays, "concatenate")
    first = arrays[0]
    ax = L.normalize_axis(axis, first.ndim, "concatenate")
    for i, a in enumerate(arrays):
        if a.ndim != first.ndim or any(a.shape[d] != first.shape[d]
                                       for d in range(first.ndim) if d != ax):
            raise ShapeError(f"concatenate: shape {a.shape} (arg {i}) does not match "
                             f"{first.shape} (arg 0) outside axis {ax}")
    total = sum(a.shape[ax] for a in arrays)
    out = NDArray._empty(first.shape[:ax] + (total,) + first.shape[ax + 1:], dtype, device)
    start = 0
    for a in arrays:
        stop = start + a.shape[ax]
        out[(slice(None),) * ax + (slice(start, stop),)] = a
        start = stop
    return out


def stack(arrays: Sequence[NDArray], axis: int = 0) -> NDArray:
    """Join arrays of one shape along a new axis."""
    _same_device_dtype(arrays, "stack")
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise ShapeError(f"stack: shape {a.shape} (arg {i}) differs from "
                             f"{arrays[0].shape} (arg 0)")
    ax = L.normalize_axis(axis, arrays[0].ndim + 1, "stack")
    return concatenate([a.expand_dims(ax) for a in arrays], axis=ax)


def where(cond: NDArray, a: Any, b: Any) -> NDArray:
    """Elementwise ``a if cond != 0 else b``, broadcasting all three; a or b may be scalars."""
    ref = a if isinstance(a, NDArray) else b
    if not isinstance(ref, NDArray):
        ref = cond
        dtype = float32 if not cond.dtype.is_floating else cond.dtype
    else:
        dtype = ref.dtype
    device = cond.device
    ops = [x if isinstance(x, NDArray) else full((), x, dtype=dtype, device=device)
           for x in (a, b)]
    for i, x in enumerate(ops, 1):
        if x.device is not device:
            raise DeviceError(f"where: arg {i} is on {x.device.name}, the condition on "
                              f"{device.name}")
        if x.dtype is not dtype:
            raise DTypeError(f"where: dtypes differ, {ops[0].dtype.name} and "
                             f"{ops[1].dtype.name}")
    shape = L.broadcast_shapes(cond.shape, ops[0].shape, ops[1].shape, op="where")
    c = cond if cond.dtype in (dtype, int64) else cond.astype(dtype)
    c, x, y = (t.broadcast_to(shape).compact() for t in (c, ops[0], ops[1]))
    out = NDArray._empty(shape, dtype, device)
    if out.size:
        device.kernels.ewise_where(c._buf, x._buf, y._buf, out._buf)
    return out


def maximum(a: NDArray, b: Any) -> NDArray:
    """Elementwise maximum with broadcasting (NaN propagates)."""
    return binary(a, b, "maximum")


def minimum(a: NDArray, b: Any) -> NDArray:
    """Elementwise minimum with broadcasting (NaN propagates)."""
    return binary(a, b, "minimum")


def _conv_geometry(shape: tuple[int, ...], kernel: Any, stride: Any, padding: Any,
                   dilation: Any, op: str) -> tuple[int, ...]:
    if len(shape) != 4:
        raise ShapeError(f"{op}: expected an NCHW input of 4 dims, got shape {shape}")
    n, c, h, w = shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (_pair(x) for x in (kernel, stride, padding,
                                                                 dilation))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1 if sh > 0 else 0
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1 if sw > 0 else 0
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0 or oh < 1 or ow < 1:
        raise ShapeError(f"{op}: kernel ({kh}, {kw}) with stride ({sh}, {sw}), padding "
                         f"({ph}, {pw}) and dilation ({dh}, {dw}) does not fit an input of "
                         f"shape {shape}")
    return n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow


def _pair(x: Any) -> tuple[int, int]:
    if isinstance(x, (int, Number)):
        return int(x), int(x)  # type: ignore[arg-type]
    return int(x[0]), int(x[1])


def im2col(x: NDArray, kernel: Any, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1) -> NDArray:
    """Patches of an NCHW array: shape ``(N, OH, OW, C, KH, KW)``, zero outside the input."""
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow = _conv_geometry(
        x.shape, kernel, stride, padding, dilation, "im2col")
    kernels = x.device.kernels
    out = NDArray._empty((n, oh, ow, c, kh, kw), x.dtype, x.device)
    if not out.size:
        return out
    if kernels.im2col is not None:
        kernels.im2col(x.compact()._buf, out._buf, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw)
        return out
    # composite: one strided view of the padded input, then one compact
    xp = x.pad(((0, 0), (0, 0), (ph, ph), (pw, pw)))
    s = xp.strides
    view = xp._as_strided((n, oh, ow, c, kh, kw),
                          (s[0], s[2] * sh, s[3] * sw, s[1], s[2] * dh, s[3] * dw), 0)
    return view.compact()


def col2im(cols: NDArray, input_shape: Any, kernel: Any, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1) -> NDArray:
    """The adjoint of ``im2col``: sums patches ``(N, OH, OW, C, KH, KW)`` into NCHW."""
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow = _conv_geometry(
        tuple(input_shape), kernel, stride, padding, dilation, "col2im")
    if cols.shape != (n, oh, ow, c, kh, kw):
        raise ShapeError(f"col2im: columns of shape {cols.shape} do not match "
                         f"{(n, oh, ow, c, kh, kw)} for input {tuple(input_shape)}")
    kernels = cols.device.kernels
    if kernels.col2im is not None:
        out = NDArray._empty((n, c, h, w), cols.dtype, cols.device)
        kernels.col2im(cols.compact()._buf, out._buf, n, c, h, w, kh, kw, sh, sw, ph, pw,
                       dh, dw)
        return out
    padded = zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype, device=cols.device)
    for i in range(kh):  # kh*kw strided adds, each over the whole batch
        for j in range(kw):
            key = (slice(None), slice(None), slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                   slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
            padded[key] = padded[key] + cols[:, :, :, :, i, j].permute(0, 3, 1, 2)
    return padded[:, :, ph:ph + h, pw:pw + w].compact()


