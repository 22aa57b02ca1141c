"""Functions that pick from or join several arrays: where, concatenate, stack.

They build on :class:`~lamina.ndarray._base.ArrayBase` only (copies and
strided writes), so ``_compute``'s composites can use them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from . import _layout as L
from ._base import ArrayBase
from ._checks import check_device_dtype, check_same_device_dtype, normalize_axis
from ._dtypes import DType, bool_, int64, result_type
from ._errors import DeviceError, ShapeError
from ._narrow import kernels_of

A = TypeVar("A", bound=ArrayBase)


def concatenate(arrays: Sequence[A], axis: int = 0) -> A:
    """Join arrays along an existing axis."""
    _check_nonempty(arrays, "concatenate")
    check_same_device_dtype(arrays, "concatenate")
    first = arrays[0]
    ax = normalize_axis(axis, len(first._shape), "concatenate")
    return _concatenate(arrays, ax)


def _concatenate(arrays: Sequence[A], ax: int) -> A:
    """concatenate() once the arrays and the axis are checked."""
    first = arrays[0]
    fs = first._shape
    total = 0
    for i, a in enumerate(arrays):
        s = a._shape
        if len(s) != len(fs) or s[:ax] != fs[:ax] or s[ax + 1:] != fs[ax + 1:]:
            raise ShapeError(f"concatenate: shape {a.shape} (arg {i}) does not match "
                             f"{first.shape} (arg 0) outside axis {ax}")
        total += s[ax]
    out = first._empty(first._shape[:ax] + (total,) + first._shape[ax + 1:], first._dtype,
                       first._device, "concatenate")
    # Each array is written straight into its slot of the new (so unshared) buffer:
    # the slot has the array's shape, out's strides, and starts `start` rows in.
    setitem = first._device.kernels.ewise_setitem
    strides, step = out._strides, out._strides[ax]
    start = 0
    for a in arrays:
        if a._shape[ax] and out._buf.size:
            setitem((a if a._compact else a.compact())._buf, out._buf, a._shape, strides,
                    start * step)
        start += a._shape[ax]
    return out


def stack(arrays: Sequence[A], axis: int = 0) -> A:
    """Join arrays of one shape along a new axis."""
    _check_nonempty(arrays, "stack")
    check_same_device_dtype(arrays, "stack")
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise ShapeError(f"stack: shape {a.shape} (arg {i}) differs from "
                             f"{arrays[0].shape} (arg 0)")
    ax = normalize_axis(axis, arrays[0].ndim + 1, "stack")
    return _concatenate([a.expand_dims(ax) for a in arrays], ax)


def _check_nonempty(arrays: Sequence[ArrayBase], op: str) -> None:
    if not arrays:
        raise ShapeError(f"{op}: expected a non-empty sequence of arrays")


def _scalar(like: A, value: Any, dtype: DType) -> A:
    """A 0-d array holding ``value`` on ``like``'s device."""
    out = like._empty((), dtype, like._device)
    kernels_of(out, "fill", "where").fill(out._buf, value)
    return out


def where(cond: A, a: Any, b: Any) -> A:
    """Elementwise ``a if cond else b`` (``cond != 0`` for a non-bool condition),
    broadcasting all three; a or b may be scalars. The result has the promoted
    dtype of a and b (:func:`lamina.ndarray.result_type`)."""
    fast = _where_same_shape(cond, a, b)
    if fast is not None:
        return fast
    dtype = result_type(a, b)
    device = cond.device
    ops = [x if isinstance(x, ArrayBase) else _scalar(cond, x, dtype) for x in (a, b)]
    for i, x in enumerate(ops, 1):
        if x.device is not device:
            raise DeviceError(f"where: arg {i} is on {x.device.name}, the condition on "
                              f"{device.name}")
    check_device_dtype(device, dtype, "where")
    shape = L.broadcast_shapes(cond.shape, ops[0].shape, ops[1].shape, op="where")
    mask = cond if cond.dtype in (dtype, int64, bool_) else cond.astype(dtype)
    c, x, y = (t.astype(dtype).broadcast_to(shape).compact() if t is not mask
               else t.broadcast_to(shape).compact() for t in (mask, ops[0], ops[1]))
    out = cond._empty(shape, dtype, device)
    if out.size:
        kernels_of(x, "ewise_where", "where").ewise_where(c._buf, x._buf, y._buf, out._buf)
    return out


def _where_same_shape(cond: A, a: Any, b: Any) -> A | None:
    """``where`` in one kernel call for its common case, else None: a compact bool
    condition, and two operands of one wide float dtype or int64, each a compact array
    of the condition's shape, a 0-d array, or a Python number that keeps the array's
    dtype (as ``result_type`` says: a float or int with floats, an int with int64). A
    masked fill or a ReLU backward costs one kernel, not broadcasting and result-type
    rules in Python."""
    like = a if isinstance(a, ArrayBase) else b
    if cond._dtype is not bool_ or not isinstance(like, ArrayBase) \
            or not (like._dtype.is_wide_float or like._dtype is int64) \
            or not (cond._compact or cond.is_compact()):
        return None
    shape, dtype, device = cond._shape, like._dtype, cond._device
    numbers = (float, int) if dtype is not int64 else (int,)  # a float makes ints float
    if dtype.name not in device.kernel_dtypes["ewise_where"]:
        return None
    operands = []
    for x in (a, b):
        if isinstance(x, ArrayBase):
            if x._dtype is not dtype or x._device is not device:
                return None
            if x._shape == shape and (x._compact or x.is_compact()):
                operands.append(x)
            elif not x._shape:  # a 0-d array, as Tensor-level where passes a number
                operands.append(x.broadcast_to(shape).compact())
            else:
                return None
        elif type(x) in numbers:
            filled = cond._empty(shape, dtype, device)
            device.kernels.fill(filled._buf, x)
            operands.append(filled)
        else:
            return None
    out = cond._empty(shape, dtype, device)
    if out._buf.size:
        device.kernels.ewise_where(cond._buf, operands[0]._buf, operands[1]._buf, out._buf)
    return out
