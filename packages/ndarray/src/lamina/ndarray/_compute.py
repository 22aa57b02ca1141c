"""Compute ops of A: elementwise, reductions, matmul, indexing, fused.

Each op checks devices, dtypes and shapes, broadcasts with NumPy's rules,
compacts its operands only when the kernel needs it, allocates the output and
calls one backend kernel (or composes a few when a fast path is absent).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from numbers import Number
from typing import Any, TypeVar

import numpy as np

from . import _layout as L
from ._base import ArrayBase
from ._checks import (
    check_same_device_dtype,
    normalize_axes,
    normalize_axis,
)
from ._dtypes import DEFAULT_FLOAT, DType, bool_, can_cast, int64, promote_types, scalar_dtype
from ._errors import DeviceError, DTypeError, ShapeError
from ._interface import KernelTable
from ._narrow import kernels_for, kernels_of, optional_kernel
from ._optable import OPS, ops
from ._select import _scalar, where

A = TypeVar("A", bound=ArrayBase)
B = TypeVar("B", bound=ArrayBase)

# The op table's rules as sets, built once: a set test per call is what an
# elementwise op can afford (each attribute lookup costs a tenth of a small op).
_ARITHMETIC = frozenset(ops(fast=True))
_COMPARISONS = frozenset(ops(result="bool"))
_FLOAT_RESULT = frozenset(ops(arity=2, result="float"))  # true division
_NO_SCALAR_KERNEL = frozenset(ops(arity=2, scalar=False))  # a scalar becomes a 0-d array
_INTEGRAL = frozenset(ops(dtypes="integral"))
_FLOAT_UNARY = frozenset(ops(arity=1, result="float"))
_BOOL_ERRORS = {op.name: op.bool_error for op in OPS.values() if op.bool_error}
_SCALARS = (Number, np.number, np.bool_)
# Kernel names by op, built once: an f-string per call costs a tenth of a small op.
_KERNEL = {(family, op): f"{family}_{op}" for family in ("ewise", "scalar", "ewise_strided")
           for op in ops(arity=2)}


def _check_floating(dtype: DType, op: str) -> None:
    if not dtype.is_floating:
        raise DTypeError(f"{op}: needs a floating point array, got {dtype.name}; convert "
                         f"with .astype(float32)")


def _promote(a: ArrayBase, b: ArrayBase) -> DType:
    """``result_type(a, b)`` for two arrays of different dtypes: a 0-d array does not
    raise an array with dims within its category."""
    x, y = a._dtype, b._dtype
    if bool(a._shape) == bool(b._shape):
        return promote_types(x, y)
    dims, zero = (x, y) if a._shape else (y, x)
    return promote_types(dims, zero) if zero.category > dims.category else dims


def _scalar_promote(dtype: DType, value: Any) -> DType:
    """``result_type(array, value)`` for a Python or numpy scalar ``value``."""
    found = scalar_dtype(value)
    if found is None or found.category <= dtype.category:
        return dtype
    return promote_types(dtype, found)


def _operand_dtype(dtype: DType, op: str) -> DType:
    """The dtype ``op`` computes in, given its operands' promoted dtype (as PyTorch:
    true division of integers is in the default float dtype)."""
    if op in _FLOAT_RESULT:
        return dtype if dtype.is_floating else DEFAULT_FLOAT
    if op in _INTEGRAL and dtype.is_floating:
        raise DTypeError(f"{op}: needs integer or bool arrays, got {dtype.name}")
    return dtype


def _check_bool(a: ArrayBase, b: Any, op: str) -> None:
    """As PyTorch, no ``op`` with a bool operand (array or Python bool) for the ops
    whose table entry says why (subtraction)."""
    if a._dtype is bool_ or isinstance(b, (bool, np.bool_)) or \
            (isinstance(b, ArrayBase) and b._dtype is bool_):
        raise DTypeError(f"{op}: {_BOOL_ERRORS[op]}")


def _result_dtype(dtype: DType, op: str, device: Any) -> DType:
    """A comparison gives bool; on a v1.0 backend without bool, 1/0 in ``dtype``."""
    if op in _COMPARISONS and "bool" in device.dtypes:
        return bool_
    return dtype


def binary(a: A, b: Any, op: str) -> A:
    """``a OP b`` for an array or Python scalar ``b``, with broadcasting and PyTorch's
    type promotion (:func:`lamina.ndarray.result_type`).

    This is the path of every elementwise operator, so its common case (same
    device, dtype and shape, compact operands) makes no call it can avoid.
    """
    if isinstance(b, ArrayBase):
        if a._device is not b._device:
            check_same_device_dtype((a, b), op)
        dtype = a._dtype if a._dtype is b._dtype else _promote(a, b)
        family = "ewise"
    elif type(b) is float or (isinstance(b, _SCALARS) and not isinstance(b, complex)):
        # a float scalar with a float array, the common case, promotes nothing
        dtype = a._dtype if type(b) is float and a._dtype.is_floating \
            else _scalar_promote(a._dtype, b)
        family = "ewise" if op in _NO_SCALAR_KERNEL else "scalar"
    else:
        return NotImplemented
    if op not in _ARITHMETIC or not dtype.is_floating:
        dtype = _operand_dtype(dtype, op)
    if op in _BOOL_ERRORS:
        _check_bool(a, b, op)
    device = a._device
    out_dtype = _result_dtype(dtype, op, device) if op in _COMPARISONS else dtype
    kernel = _KERNEL[family, op]
    kernels = device.kernels
    if dtype.name not in device.kernel_dtypes[kernel]:
        kernels = kernels_for(device, kernel, dtype, op)
    if a._dtype is not dtype:
        a = a.astype(dtype)
    if family == "scalar":
        a = a if a._compact else a.compact()
        out = a._like() if out_dtype is dtype else a._empty(a._shape, out_dtype, device)
        kernels.scalar[op](a._buf, b, out._buf)
        return out
    if not isinstance(b, ArrayBase):
        b = _scalar(a, b, dtype)
    elif b._dtype is not dtype:
        b = b.astype(dtype)
    if a._shape == b._shape and (a._compact or a.is_compact()) and \
            (b._compact or b.is_compact()):
        out = a._like() if out_dtype is dtype else a._empty(a._shape, out_dtype, device)
        kernels.ewise[op](a._buf, b._buf, out._buf)  # zero-size buffers too
        return out
    return _binary_views(a, b, op, out_dtype, kernels)


# The operators' fast paths (see _fast_path).
_SAME, _VIEWS, _SCALAR = 1, 2, 3


def _fast_path(a: A, b: Any) -> int:
    """Which kernel call an arithmetic operator on float ``a`` and ``b`` can make
    without ``binary``'s checks (each of them passes by identity tests here):

    * ``_SAME``: ``b`` of ``a``'s class, device, dtype and shape, both compact:
      one elementwise kernel over the two buffers;
    * ``_VIEWS``: ``b`` of ``a``'s class, device and dtype otherwise (a
      broadcast bias or mask, strided views): ``_binary_views``;
    * ``_SCALAR``: a compact ``a`` and a Python float or int, which keeps
      ``a``'s dtype (every backend's arithmetic kernels take its float dtypes);
    * 0: anything else, for ``binary``.
    """
    if not a._dtype.is_wide_float:
        return 0
    if type(b) is type(a):
        if a._device is not b._device or a._dtype is not b._dtype:
            return 0
        if a._shape == b._shape and (a._compact or a.is_compact()) \
                and (b._compact or b.is_compact()):
            return _SAME
        return _VIEWS
    if (type(b) is float or type(b) is int) and (a._compact or a.is_compact()):
        return _SCALAR
    return 0


def binary_operator(op: str) -> Callable[[A, Any], A]:
    """The method behind the operator of ``op`` (``A.__add__`` for "add").

    Float arithmetic takes ``_fast_path``'s kernel call and anything else
    goes to ``binary``: an operator on compact operands of one shape costs
    two Python frames, one allocation and one kernel call.
    """
    fast = op in _ARITHMETIC

    def method(a: A, b: Any) -> A:
        path = _fast_path(a, b) if fast else 0
        if path == _SAME:
            out = a._like()
            a._device.kernels.ewise[op](a._buf, b._buf, out._buf)
            return out
        if path == _SCALAR:
            out = a._like()
            a._device.kernels.scalar[op](a._buf, b, out._buf)
            return out
        if path == _VIEWS:
            return _binary_views(a, b, op, a._dtype)
        return binary(a, b, op)

    method.__name__ = method.__qualname__ = op
    return method


def inplace_operator(op: str) -> Callable[[A, Any], A]:
    """The in-place method of ``op`` (``A.__isub__`` for "sub"): ``a -= b`` writes
    ``a - b`` into ``a``'s own storage, as numpy does, so views of ``a`` see it.

    ``b`` broadcasts to ``a``'s shape, and the result keeps ``a``'s dtype: a
    result that :func:`can_cast` cannot convert to it (``int_array += 0.5``)
    raises DTypeError, one that broadcasts ``a`` up raises ShapeError, both
    before anything is written. Where ``_fast_path`` finds one kernel call
    over compact buffers, the kernel writes over ``a``'s buffer (the backend
    interface lets an elementwise kernel's output be its input): an
    optimizer's ``p -= lr * g`` makes no temporary for ``p - lr * g`` and no
    copy of it into ``p``.
    """
    fast = op in _ARITHMETIC

    def method(a: A, b: Any) -> A:
        path = _fast_path(a, b) if fast else 0
        # The kernel writes its output buffer whole: only where a is all of its buffer
        # (not the leading rows of a longer one) can that buffer be the output.
        if path and path != _VIEWS and a._buf.size == a.size:
            if path == _SAME:  # both compact, one shape: sharing a buffer, the same elements
                a._device.kernels.ewise[op](a._buf, b._buf, a._buf)
            else:
                a._device.kernels.scalar[op](a._buf, b, a._buf)
            return a
        result = binary(a, b, op)
        if result is NotImplemented:
            return NotImplemented
        if result._shape != a._shape:
            raise ShapeError(f"{op} in place: the result has shape {result._shape} (broadcast), "
                             f"which does not fit into an array of shape {a._shape}")
        if result._dtype is not a._dtype and not can_cast(result._dtype, a._dtype):
            raise DTypeError(f"{op} in place: the result is {result._dtype.name}, which cannot "
                             f"be cast to the array's {a._dtype.name}")
        a[...] = result
        return a

    method.__name__ = method.__qualname__ = "i" + op
    return method


def reversed_operator(op: str) -> Callable[[A, Any], A]:
    """The reflected method of a non-commutative ``op`` (``__rsub__`` for "sub")."""

    def method(a: A, b: Any) -> A:
        return reversed_scalar(a, b, op)

    method.__name__ = method.__qualname__ = "r" + op
    return method


def _binary_views(a: A, b: ArrayBase, op: str, out_dtype: DType,
                  kernels: KernelTable | None = None) -> A:
    """``binary`` for operands of one dtype that differ in shape or are not compact,
    with ``kernels`` (the device's own by default)."""
    shape = a._shape
    if shape != b._shape:
        shape = L.broadcast_pair(shape, b._shape, op)
        if a._shape != shape:
            a = _broadcast_view(a, shape, op)
        if b._shape != shape:
            b = _broadcast_view(b, shape, op)
    out = a._empty(shape, out_dtype, a._device, op=op)
    device = a._device
    kernels = kernels or device.kernels
    if not out._buf.size:
        return out
    if not ((a._compact or a.is_compact()) and (b._compact or b.is_compact())) \
            and op in kernels.ewise_strided \
            and a._dtype.name in device.kernel_dtypes[_KERNEL["ewise_strided", op]]:
        # A broadcast or permuted operand is read where it lies, not copied first.
        kernels.ewise_strided[op](a._buf, b._buf, out._buf, shape, a._strides, a._offset,
                                  b._strides, b._offset)
    else:
        # is_compact() above cached _compact: compact() is called only where it copies
        a = a if a._compact else a.compact()
        b = b if b._compact else b.compact()
        kernels.ewise[op](a._buf, b._buf, out._buf)
    return out


def _broadcast_view(a: A, shape: tuple[int, ...], op: str) -> A:
    """``a.broadcast_to(shape)`` for a shape already checked and normalised."""
    if a._shape == shape:
        return a
    return a._view(a._buf, shape, L.broadcast_strides(a._shape, a._strides, shape, op),
                   a._offset, a._dtype, a._device)


def reversed_scalar(a: A, value: Any, op: str) -> A:
    """``value OP a`` for a Python scalar ``value``, promoted as ``a OP value``."""
    if not isinstance(value, _SCALARS) or isinstance(value, complex):
        return NotImplemented
    dtype = _operand_dtype(_scalar_promote(a._dtype, value), op)
    if op in _BOOL_ERRORS:
        _check_bool(a, value, op)
    if op in _NO_SCALAR_KERNEL:
        return binary(_scalar(a, value, dtype), a.astype(dtype), op)
    kernels = kernels_for(a._device, "scalar_r" + op, dtype, op)
    a = a.astype(dtype).compact()
    out = a._like()
    kernels.scalar["r" + op](a._buf, value, out._buf)
    return out


def unary(a: A, op: str) -> A:
    """An elementwise op of one array: float functions of integers are computed in
    the default float dtype, as PyTorch."""
    dtype = a._dtype
    if not dtype.is_floating:
        if op in _FLOAT_UNARY:
            a = a.astype(DEFAULT_FLOAT)
            dtype = DEFAULT_FLOAT
        elif dtype is bool_:
            if op == "sign":
                return a.copy()  # sign(True) is True
            if op in _BOOL_ERRORS:
                raise DTypeError(f"{op}: {_BOOL_ERRORS[op]}")
    elif op in _INTEGRAL:
        raise DTypeError(f"{op}: needs integer or bool arrays, got {dtype.name}")
    device = a._device
    kernels = device.kernels
    if dtype.name not in device.kernel_dtypes["ewise_" + op]:
        if op in _COMPOSED and op not in device.kernels.ewise:
            return _COMPOSED[op](a)
        kernels = kernels_for(device, "ewise_" + op, dtype, op)
    a = a.compact()
    out = a._like()
    kernels.ewise[op](a._buf, out._buf)
    return out


def logical_not(a: A) -> A:
    """``a == 0`` as bool (as ``torch.logical_not``)."""
    return binary(a, False if a._dtype is bool_ else 0, "eq")


def _logical(bitwise: str, name: str) -> Callable[[A, Any], A]:
    """``logical_X``: the bitwise op on the operands' truth values, as bool."""

    def logical(a: A, b: Any) -> A:
        return binary(_truth(a), _truth(b), bitwise)

    logical.__name__ = logical.__qualname__ = name
    logical.__doc__ = f"``(a != 0) {bitwise} (b != 0)`` as bool (as ``torch.{name}``)."
    return logical


LOGICAL = {op.logical: _logical(op.name, op.logical) for op in OPS.values() if op.logical}
"""``logical_and``, ``logical_or`` and ``logical_xor``, from the bitwise ops of the op table."""
logical_and = LOGICAL["logical_and"]
logical_or = LOGICAL["logical_or"]
logical_xor = LOGICAL["logical_xor"]


def _truth(a: Any) -> Any:
    if isinstance(a, ArrayBase):
        return a if a._dtype is bool_ else binary(a, 0, "ne")
    return bool(a)


# ---------------------------------------------------------------------- reductions
_WHOLE_REDUCTIONS = frozenset(("sum", "max", "min"))


def reduce(a: A, axis: Any, keepdims: bool, op: str) -> A:
    """Reduce ``a`` over ``axis`` (None = all) with the backend's ``reduce_OP``.

    As PyTorch: a sum or product of bools or integers is int64; max and min
    keep the dtype; argmax of bools is an error. A product over no elements
    is 1, a sum 0; ``prod`` needs the backend's optional ``reduce_prod``.
    """
    if axis is None and not keepdims and op in _WHOLE_REDUCTIONS and a._dtype.is_wide_float \
            and a._shape and not a._offset and (a._compact or a.is_compact()) \
            and a._dtype.name in a._device.kernel_dtypes["reduce_" + op] and a.size:
        # All of a compact float array (a loss's sum): one kernel call, no permute.
        out = a._empty((), a._dtype, a._device)
        a._device.kernels.reduce[op](a._buf, out._buf, a.size)
        return out
    if type(axis) is int and (axis == -1 or axis == len(a._shape) - 1):
        last = _reduce_last(a, keepdims, op)
        if last is not None:
            return last
    if a._dtype is bool_:
        if op in ("sum", "prod"):
            a = a.astype(int64)
        elif op == "argmax":
            raise DTypeError("argmax: not supported for bool arrays; convert with "
                             ".astype(int64)")
    if a._dtype.name not in a._device.kernel_dtypes["reduce_" + op]:
        kernels_for(a._device, "reduce_" + op, a._dtype, op)  # raises unless it can run
    return _reduce_axes(a, normalize_axes(axis, a.ndim, op), keepdims, op)


def _reduce_last(a: A, keepdims: bool, op: str) -> A | None:
    """The sum, max or min over the last axis of a compact float array in one kernel
    call, reading the rows in place as ``_reduce`` does after an identity permute,
    without its axis bookkeeping (a row sum in a softmax's, a loss's or a norm's
    backward: 22 -> 3 us for 128 x 10); None where that does not apply."""
    shape = a._shape
    if op not in _WHOLE_REDUCTIONS or not a._dtype.is_wide_float or not shape or not shape[-1] \
            or a._offset or not (a._compact or a.is_compact()) \
            or a._dtype.name not in a._device.kernel_dtypes["reduce_" + op]:
        return None
    out = a._empty(shape[:-1] + (1,) if keepdims else shape[:-1], a._dtype, a._device)
    if out.size:
        a._device.kernels.reduce[op](a._buf, out._buf, shape[-1])
    return out


def _reduce_axes(a: A, axes: tuple[int, ...], keepdims: bool, op: str) -> A:
    """``reduce`` over axes already normalised, of a dtype already checked."""
    kept = tuple(n for i, n in enumerate(a._shape) if i not in axes)
    size = prod(a._shape[i] for i in axes)
    if size == 0 and op not in ("sum", "prod") and all(kept):
        where = f"axis {axes[0]}" if len(axes) == 1 else f"axes {axes}"
        raise ShapeError(f"{op}: cannot reduce an empty axis (shape {a._shape}, {where})")
    # a product over a broadcast dim needs scalar_power (a v1.0 backend's is float-only)
    if prod(a._shape) and any(s == 0 and n > 1 for n, s in zip(a._shape, a._strides)) \
            and (op != "prod" or a._dtype.name in a._device.kernel_dtypes["scalar_power"]):
        out = _reduce_broadcast(a, axes, op)
    else:
        out = _reduce(a, axes, kept, size, op)
    if keepdims:
        shape = tuple(1 if i in axes else n for i, n in enumerate(a._shape))
        return out.reshape(shape)
    return out


def _reduce_broadcast(a: A, axes: tuple[int, ...], op: str) -> A:
    """Reduce a view with stride-0 (broadcast) dims without materialising them.

    Such a dim repeats one value: reduce the view with those dims at size 1,
    multiply a sum by the repeat count (raise a product to that power), and
    broadcast the (output-sized) result back over the kept ones (an argmax
    over a repeated dim is 0, the first of equal values, as over a dim of
    size 1). Memory stays that of the un-broadcast input plus the output,
    however large the broadcast.
    """
    repeated = [i for i, (n, s) in enumerate(zip(a._shape, a._strides)) if s == 0 and n > 1]
    kept = tuple(n for i, n in enumerate(a._shape) if i not in axes)
    base = a._as_strided(tuple(1 if i in repeated else n for i, n in enumerate(a._shape)),
                         a._strides, a._offset)
    base_kept = tuple(n for i, n in enumerate(base._shape) if i not in axes)
    out = _reduce(base, axes, base_kept, prod(base._shape[i] for i in axes), op)
    repeat = prod(a._shape[i] for i in repeated if i in axes)
    if op in ("sum", "prod") and repeat > 1:
        out = binary(out, repeat, "mul" if op == "sum" else "power")
    return out if base_kept == kept else out.broadcast_to(kept).compact()


def _reduce(a: A, axes: tuple[int, ...], kept: tuple[int, ...], size: int,
            op: str) -> A:
    out_dtype = int64 if op == "argmax" else a._dtype
    out = a._empty(kept, out_dtype, a._device)
    kernels = a._device.kernels if not a._dtype.is_narrow else \
        kernels_for(a._device, "reduce_" + op, a._dtype, op)
    if out.size:
        first = axes[0] if axes else a.ndim
        contiguous_block = axes == tuple(range(first, first + len(axes)))
        inner = prod(a._shape[first + len(axes):]) if contiguous_block else 1
        if op == "sum" and contiguous_block and inner > 1 and a.is_compact() \
                and kernels.reduce_sum_axis is not None \
                and a._dtype.name in a._device.kernel_dtypes["reduce_sum_axis"]:
            kernels.reduce_sum_axis(a._buf, out._buf, prod(a._shape[:first]), size, inner)
        else:
            rest = tuple(i for i in range(a.ndim) if i not in axes)
            src = a.permute(rest + axes).compact()
            kernels.reduce[op](src._buf, out._buf, size)
    return out


def mean(a: A, axis: Any = None, keepdims: bool = False) -> A:
    _check_floating(a._dtype, "mean")
    if type(axis) is int and (axis == -1 or axis == len(a._shape) - 1):
        total = _reduce_last(a, keepdims, "sum")
        if total is not None:
            return binary(total, 1.0 / a._shape[-1], "mul")
    axes = normalize_axes(axis, a.ndim, "mean")
    count = prod(a._shape[i] for i in axes)
    total = _reduce_axes(a, axes, keepdims, "sum")
    return binary(total, 1.0 / count if count else float("nan"), "mul")


def argmax(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """Index of the first maximum over one axis, or over the flattened array."""
    if axis is None:
        flat = a.reshape(-1)
        out = reduce(flat, 0, False, "argmax")
        return out.reshape((1,) * a.ndim) if keepdims else out
    return reduce(a, axis, keepdims, "argmax")


# ---------------------------------------------------------------------- matmul
def matmul(a: A, b: A) -> A:
    """NumPy's matmul: 1-D, 2-D, and batched operands with broadcast batch dims."""
    if not isinstance(b, ArrayBase):
        return NotImplemented
    if a._device is not b._device or a._dtype is not b._dtype:
        check_same_device_dtype((a, b), "matmul")
    if not a._dtype.is_floating:
        _check_floating(a._dtype, "matmul")
    nda, ndb = len(a._shape), len(b._shape)
    if nda == 0 or ndb == 0:
        raise ShapeError(f"matmul: operands must have at least 1 dim, got shapes {a._shape} "
                         f"and {b._shape}")
    a2 = a.reshape(1, a._shape[0]) if nda == 1 else a
    b2 = b.reshape(b._shape[0], 1) if ndb == 1 else b
    m, n = a2._shape[-2:]
    n2, p = b2._shape[-2:]
    if n != n2:
        raise ShapeError(f"matmul: shapes {a._shape} and {b._shape} are not aligned: {n} "
                         f"(dim {nda - 1} of arg 0) != {n2} (dim {max(ndb - 2, 0)} "
                         f"of arg 1)")
    kernels = a._device.kernels if not a._dtype.is_narrow else \
        kernels_for(a._device, "matmul", a._dtype, "matmul")
    if len(a2._shape) == 2 and len(b2._shape) == 2:  # the common case: no batch dims
        out = a._empty((m, p), a._dtype, a._device, op="matmul")
        if m and p:
            _gemm(kernels, a2, b2, out, m, n, p)
        return _matmul_squeeze(out, nda, ndb) if nda == 1 or ndb == 1 else out
    if len(b2._shape) == 2 and (a2._compact or a2.is_compact()):
        # (..., m, n) @ (n, p): one GEMM over all rows of a (compact, so a (rows, n)
        # matrix as it lies) into the rows of out, no copy of b
        batch = a2._shape[:-2]
        rows = prod(batch) * m
        out = a._empty(batch + (m, p), a._dtype, a._device, op="matmul")
        if rows and p:
            _gemm(kernels, a2._as_strided((rows, n), (n, 1), 0), b2, out, rows, n, p)
    else:
        batch = L.broadcast_shapes(a2._shape[:-2], b2._shape[:-2], op="matmul")
        a3 = _broadcast_view(a2, batch + (m, n), "matmul")
        b3 = _broadcast_view(b2, batch + (n, p), "matmul")
        out = a._empty(batch + (m, p), a._dtype, a._device, op="matmul")
        if out._buf.size:
            if n == 0:
                kernels.fill(out._buf, 0)
            elif (a3.is_compact() and b3.is_compact()) \
                    or kernels.matmul_batched_strided is None \
                    or min(a3._strides + b3._strides) < 0:
                a3, b3 = a3.compact(), b3.compact()
                kernels.matmul_batched(a3._buf, b3._buf, out._buf, prod(batch), m, n, p)
            else:  # transposed, sliced or broadcast batches, read where they lie
                kernels.matmul_batched_strided(a3._buf, b3._buf, out._buf, batch, m, n, p,
                                               a3._offset, a3._strides, b3._offset,
                                               b3._strides)
    return _matmul_squeeze(out, nda, ndb) if nda == 1 or ndb == 1 else out


def _matmul_squeeze(out: A, nda: int, ndb: int) -> A:
    """Drops the dims matmul added for 1-D operands."""
    if nda == 1:
        out = out.squeeze(-2)
    if ndb == 1:
        out = out.squeeze(-1)
    return out


def _gemm(kernels: KernelTable, a: A, b: A, out: A, m: int, n: int,
          p: int) -> None:
    """out (m, p) = a (m, n) @ b (n, p) for 2-D views: a view with non-negative
    strides (a transpose, a slice) goes to the backend's ``matmul_strided`` as
    it is, where the backend has that kernel; otherwise it is compacted."""
    if n == 0:
        kernels.fill(out._buf, 0)
    elif ((a._compact or a.is_compact()) and (b._compact or b.is_compact())) \
            or kernels.matmul_strided is None \
            or min(a._strides + b._strides) < 0:
        a = a if a._compact else a.compact()  # compact() only where it may copy
        b = b if b._compact else b.compact()
        kernels.matmul(a._buf, b._buf, out._buf, m, n, p)
    else:
        kernels.matmul_strided(a._buf, b._buf, out._buf, m, n, p, a._offset, *a._strides,
                               b._offset, *b._strides)


# ---------------------------------------------------------------------- indexing
def take(a: A, indices: Any, axis: int = 0) -> A:
    """Gather along ``axis``: shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``."""
    index = _as_index_array(indices, a, "take")
    ax = normalize_axis(axis, a.ndim, "take")
    src = a if a._compact else a.compact()
    idx = _exact_index(index)
    outer, axis_size, inner = prod(a._shape[:ax]), a._shape[ax], prod(a._shape[ax + 1:])
    shape = a._shape[:ax] + index._shape + a._shape[ax + 1:]
    out = a._empty(shape, a._dtype, a._device)
    if out._buf.size:
        kernels_of(a, "index_gather", "take").index_gather(src._buf, idx._buf, out._buf, outer,
                                                           axis_size, inner)
    elif idx.size and axis_size == 0:
        raise IndexError(f"take: index out of range for an axis of size 0 (axis {ax})")
    return out


def scatter_add(src: A, indices: Any, axis: int, size: int) -> A:
    """The adjoint of ``take``: sums slices of ``src`` into a new axis of length ``size``.

    Result shape: ``src.shape[:axis] + (size,) + src.shape[axis + index.ndim:]``.
    Repeated indices accumulate.
    """
    index = _as_index_array(indices, src, "scatter_add")
    ax = normalize_axis(axis, src.ndim - index.ndim + 1, "scatter_add")
    if src._shape[ax:ax + index.ndim] != index._shape:
        raise ShapeError(f"scatter_add: source dims {src._shape[ax:ax + index.ndim]} at "
                         f"axis {ax} do not match indices of shape {index._shape}")
    shape = src._shape[:ax] + (size,) + src._shape[ax + index.ndim:]
    out = src._empty(shape, src._dtype, src._device)
    kernels = kernels_of(src, "index_scatter_add", "scatter_add")
    if out.size:
        kernels.fill(out._buf, 0)
        if index.size:
            kernels.index_scatter_add(_exact_index(src)._buf, _exact_index(index)._buf, out._buf,
                                      prod(shape[:ax]), size, prod(shape[ax + 1:]))
    return out


def _exact_index(index: B) -> B:
    """``index`` compact in a buffer of exactly its size: the index kernels count
    their operands by the buffers, so a compact prefix view (``idx[0:2]`` of a
    longer array) is copied out rather than passed with the rest of its buffer."""
    if (index._compact or index.is_compact()) and index._buf.size == index.size:
        return index
    return index.copy()


def _as_index_array(indices: Any, like: A, op: str) -> ArrayBase:
    if not isinstance(indices, ArrayBase):
        raw = np.asarray(indices)
        if raw.dtype.kind not in "iu" and raw.size:
            raise DTypeError(f"{op}: indices must be integers, got {raw.dtype}")
        return like._from_host(raw.astype(np.int64), int64, like._device)
    if indices._dtype is not int64:
        raise DTypeError(f"{op}: indices must be int64, got {indices._dtype.name}")
    if indices._device is not like._device:
        raise DeviceError(f"{op}: indices are on {indices._device.name}, the array on "
                          f"{like._device.name}; move one with .to(device)")
    return indices


# ---------------------------------------------------------------------- fused
def softmax(a: A, axis: int = -1) -> A:
    """exp(a) / sum(exp(a)) along ``axis``, shifted by the max for stability."""
    _check_floating(a._dtype, "softmax")
    ax = normalize_axis(axis, len(a._shape), "softmax")
    if 0 in a._shape:  # nothing to normalise (an empty axis too), as in PyTorch
        return a._empty(a._shape, a._dtype, a._device)
    fused = optional_kernel(a, "softmax_last", "softmax") if ax == len(a._shape) - 1 else None
    if fused is not None:
        src = a if a._compact else a.compact()
        out = src._like()
        fused(src._buf, out._buf, a._shape[-1])
        return out
    e = unary(binary(a, reduce(a, ax, True, "max"), "sub"), "exp")
    return binary(e, reduce(e, ax, True, "sum"), "div")


def layer_norm(a: A, weight: A, bias: A, eps: float = 1e-5
               ) -> tuple[A, A, A]:
    """LayerNorm over the last axis with the biased variance, as PyTorch.

    Shapes: a (*, D), weight (D,), bias (D,) -> out (*, D), mean (*, 1),
    rstd (*, 1), where ``rstd = 1 / sqrt(var + eps)``; mean and rstd are what
    the backward needs. Runs the backend's fused ``layer_norm_last`` when it
    has one (a LayerNorm is otherwise eight elementwise and reduction kernels).

    Raises:
        ShapeError: a has no last axis or an empty one, or weight or bias is not (D,).
    """
    if not a._shape or a._shape[-1] == 0:
        raise ShapeError(f"layer_norm: input must have a non-empty last axis, got shape "
                         f"{a._shape}")
    if weight._shape != a._shape[-1:] or bias._shape != a._shape[-1:]:
        raise ShapeError(f"layer_norm: weight {weight._shape} and bias {bias._shape} must "
                         f"both have shape ({a._shape[-1]},) for input {a._shape} "
                         "(normalised over the last axis)")
    if not (a._device is weight._device is bias._device
            and a._dtype is weight._dtype is bias._dtype):
        check_same_device_dtype((a, weight, bias), "layer_norm")
    if not a._dtype.is_floating:
        _check_floating(a._dtype, "layer_norm")
    size = a._shape[-1]
    stats = a._shape[:-1] + (1,)
    fused = optional_kernel(a, "layer_norm_last", "layer_norm")
    if fused is not None:
        # the frame of compact() only for an operand not known to be compact
        src = a if a._compact else a.compact()
        w = weight if weight._compact else weight.compact()
        b = bias if bias._compact else bias.compact()
        out = src._like()
        mu = a._empty(stats, a._dtype, a._device)
        rstd = a._empty(stats, a._dtype, a._device)
        if out._buf.size:
            fused(src._buf, w._buf, b._buf, out._buf, mu._buf, rstd._buf, size, float(eps))
        return out, mu, rstd
    x: Any = a  # NDArray's operators and methods (ArrayBase declares none)
    mu = x.sum(axis=-1, keepdims=True) * (1.0 / size)
    centred = x - mu
    rstd = ((centred * centred).sum(axis=-1, keepdims=True) * (1.0 / size) + eps) ** -0.5
    return centred * rstd * weight + bias, mu, rstd


def layer_norm_backward(g: A, a: A, weight: A, mean: A, rstd: A) -> tuple[A, A, A]:
    """The gradients of :func:`layer_norm` from the output's gradient ``g``.

    Shapes: g and a (*, D), weight (D,), mean and rstd (*, 1) as layer_norm
    returned them -> grad_a (*, D), grad_weight (D,), grad_bias (D,). With
    ``xhat = (a - mean) * rstd`` and ``gw = g * weight``::

        grad_a = (gw - mean(gw) - xhat * mean(gw * xhat)) * rstd   (means over D)
        grad_weight = sum(g * xhat), grad_bias = sum(g)            (sums over rows)

    One pass of the backend's ``layer_norm_backward_last`` where it has one (the
    composite is a dozen elementwise and reduction kernels).
    """
    size = a._shape[-1]
    fused = optional_kernel(a, "layer_norm_backward_last", "layer_norm_backward") \
        if a._shape and size and g._shape == a._shape and g._dtype is a._dtype else None
    if fused is not None:
        ops = [x if x._compact or x.is_compact() else x.compact()
               for x in (g, a, weight, mean, rstd)]
        grad_a = ops[1]._like()
        grad_weight = a._empty((size,), a._dtype, a._device)
        grad_bias = a._empty((size,), a._dtype, a._device)
        if grad_a.size:
            fused(*(x._buf for x in ops), grad_a._buf, grad_weight._buf, grad_bias._buf, size)
        else:
            for out in (grad_weight, grad_bias):
                kernels_of(a, "fill", "layer_norm_backward").fill(out._buf, 0.0)
        return grad_a, grad_weight, grad_bias
    x: Any = a  # NDArray's operators and methods (ArrayBase declares none)
    dy: Any = g
    xhat = (x - mean) * rstd
    gw = dy * weight
    grad_a = (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True)) * rstd
    rows = tuple(range(len(a._shape) - 1))
    return grad_a, (dy * xhat).sum(axis=rows), dy.sum(axis=rows)


def log_softmax_backward(g: A, out: A, axis: int = -1) -> A:
    """The gradient of a log-softmax along ``axis`` from the output's gradient ``g``.

    Shapes: g and out (the log-softmax's output) alike -> the same shape::

        grad = g - exp(out) * sum(g, axis)

    Over the last axis, one pass of the backend's ``log_softmax_backward_last``
    where it has one: a row of g is summed, then read again from cache with its
    row of out. The composite makes seven passes over memory and three arrays
    (640 x 10000, a language model's logits, on Zen 3: 13.7 ms composite, 8.4 ms
    fused, PyTorch's 9.7 ms).
    """
    if g._shape != out._shape:
        raise ShapeError(f"log_softmax_backward: gradient {g._shape} and output {out._shape} "
                         "differ in shape")
    if g._dtype is not out._dtype:
        raise DTypeError(f"log_softmax_backward: gradient {g._dtype.name} and output "
                         f"{out._dtype.name} differ in dtype")
    ax = normalize_axis(axis, len(out._shape), "log_softmax_backward") if out._shape else 0
    fused = optional_kernel(out, "log_softmax_backward_last", "log_softmax_backward") \
        if out._shape and ax == len(out._shape) - 1 and out._shape[-1] else None
    if fused is not None:
        ops = [x if x._compact or x.is_compact() else x.compact() for x in (g, out)]
        grad = ops[1]._like()
        if grad.size:
            fused(ops[0]._buf, ops[1]._buf, grad._buf, out._shape[-1])
        return grad
    dy: Any = g  # NDArray's operators and methods (ArrayBase declares none)
    y: Any = out
    return dy - y.exp() * dy.sum(axis=ax, keepdims=True)


# Abramowitz & Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ...)) exp(-x^2),
# t = 1 / (1 + p |x|), odd in x; absolute error below 1.5e-7.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(a: A) -> A:
    """The error function, elementwise.

    Exact (libm) where the backend has the optional ``ewise_erf``; otherwise
    the Abramowitz & Stegun 7.1.26 rational approximation from interface-v1
    kernels, with absolute error below 1.5e-7 (float32 round-off, not float64
    precision).
    """
    return unary(a, "erf")


def _erf_composed(a: A) -> A:
    x: Any = a  # NDArray's operators and methods (ArrayBase declares none)
    t = 1 / (1 + _ERF_P * x.abs())
    poly = t * (_ERF_A[0] + t * (_ERF_A[1] + t * (_ERF_A[2] + t * (_ERF_A[3] + t * _ERF_A[4]))))
    out: A = x.sign() * (1 - poly * (-(x * x)).exp())
    return out


# Optional unary ops composed of required kernels where a backend lacks them.
_COMPOSED: dict[str, Callable[[A], A]] = {"erf": _erf_composed}


def logsumexp(a: A, axis: Any = -1, keepdims: bool = False) -> A:
    """log(sum(exp(a))) over ``axis``, stable for large and -inf entries."""
    _check_floating(a._dtype, "logsumexp")
    axes = normalize_axes(axis, a.ndim, "logsumexp")
    if a.ndim and not prod(a._shape[i] for i in axes):  # log(0), as in PyTorch
        shape = tuple(1 if i in axes else n for i, n in enumerate(a._shape))
        out = a._empty(shape, a._dtype, a._device)
        if out.size:
            kernels_of(a, "fill", "logsumexp").fill(out._buf, float("-inf"))
        return out if keepdims else out.squeeze(axes)
    fused = optional_kernel(a, "logsumexp_last", "logsumexp") \
        if axes == (a.ndim - 1,) and a.size else None
    if fused is not None:
        src = a.compact()
        out = a._empty(a._shape[:-1] + (1,) if keepdims else a._shape[:-1], a._dtype, a._device)
        fused(src._buf, out._buf, a._shape[-1])
        return out
    peak = reduce(a, axes, True, "max")
    finite = binary(binary(peak, float("inf"), "lt"), binary(peak, float("-inf"), "gt"), "mul")
    peak = where(finite, peak, 0.0)
    total = reduce(unary(binary(a, peak, "sub"), "exp"), axes, True, "sum")
    out = binary(unary(total, "log"), peak, "add")
    return out if keepdims else out.squeeze(axes)


def pad(a: A, pad_width: Any, value: float = 0.0) -> A:
    """Pad with ``value``; ``pad_width`` is one ``(before, after)`` pair per axis."""
    widths = [tuple(int(x) for x in w) for w in pad_width]
    if len(widths) != a.ndim or any(len(w) != 2 or min(w) < 0 for w in widths):
        raise ShapeError(f"pad: need one non-negative (before, after) pair per axis of shape "
                         f"{a._shape}, got {pad_width}")
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(a._shape, widths))
    out = a._empty(shape, a._dtype, a._device)
    if out.size:
        kernels_of(a, "fill", "pad").fill(out._buf, value)
        out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(a._shape, widths))] = a
    return out


def maximum(a: A, b: Any) -> A:
    """Elementwise maximum with broadcasting (NaN propagates)."""
    return binary(a, b, "maximum")


def minimum(a: A, b: Any) -> A:
    """Elementwise minimum with broadcasting (NaN propagates)."""
    return binary(a, b, "minimum")


# ---------------------------------------------------------------------- masks
def _as_mask(mask: Any, like: ArrayBase, op: str) -> np.ndarray:
    """A bool mask (array, numpy array or nested list) as host booleans."""
    host = mask.numpy() if isinstance(mask, ArrayBase) else np.asarray(mask)
    if host.dtype != np.bool_:
        raise DTypeError(f"{op}: a mask must be bool, got {host.dtype}")
    if isinstance(mask, ArrayBase) and mask._device is not like._device:
        raise DeviceError(f"{op}: the mask is on {mask._device.name}, the array on "
                          f"{like._device.name}; move one with .to(device)")
    return host


def mask_indices(mask: Any, shape: tuple[int, ...], like: A, op: str = "getitem") -> A:
    """The flat positions (int64, on ``like``'s device) of the True entries of a bool
    ``mask`` covering the leading dims of ``shape``: ``x[mask]`` is
    ``x.reshape(-1, *shape[mask.ndim:]).take(mask_indices(...), 0)``.

    Raises:
        DTypeError: the mask is not bool.
        IndexError: its shape is not a prefix of ``shape`` (as PyTorch).
    """
    host = _as_mask(mask, like, op)
    if host.ndim == 0 or host.shape != shape[:host.ndim]:
        raise IndexError(f"{op}: the shape of the mask {host.shape} does not match the "
                         f"leading dims of the indexed array's shape {shape}")
    flat = np.flatnonzero(host).astype(np.int64)
    return like._from_host(flat, int64, like._device)


def boolean_mask(a: A, mask: Any) -> A:
    """``a[mask]``: the elements (or trailing sub-arrays) where a bool mask of
    ``a``'s leading dims is True, in row-major order. Shapes: ``a (*M, *R)``,
    ``mask (*M)`` -> ``(count, *R)``."""
    index = mask_indices(mask, a._shape, a, "getitem")
    lead = mask.ndim if isinstance(mask, ArrayBase) else np.ndim(mask)
    return take(a.reshape((prod(a._shape[:lead]),) + a._shape[lead:]), index, 0)


def index_read(a: A, key: Any) -> A:
    """``a[key]`` for an array key, as PyTorch: a bool mask selects (``boolean_mask``),
    an integer array gathers along axis 0 (``take``)."""
    kind = key._dtype.np.kind if isinstance(key, ArrayBase) else np.asarray(key).dtype.kind
    if kind == "b":
        return boolean_mask(a, key)
    if kind in "iu":
        return take(a, key, 0)
    raise DTypeError(f"getitem: an array index must be integer (gather) or bool (mask), "
                     f"got {key._dtype.name if isinstance(key, ArrayBase) else kind}")


def nonzero(a: A) -> A:
    """The indices of the non-zero entries, as ``torch.nonzero``: int64 of shape
    ``(count, a.ndim)``, in row-major order."""
    return a._from_host(np.argwhere(a.numpy()).astype(np.int64), int64, a._device)


def masked_fill(a: A, mask: Any, value: Any) -> A:
    """``a`` with ``value`` where the bool ``mask`` (broadcast to ``a``'s shape) is
    True; the result keeps ``a``'s dtype, as ``torch.Tensor.masked_fill``."""
    host = _as_mask(mask, a, "masked_fill")
    if not isinstance(mask, ArrayBase):
        # a device without bool (interface v1.0) takes an int64 condition
        dtype = bool_ if "bool" in a._device.dtypes else int64
        mask = a._from_host(host.astype(dtype.np), dtype, a._device)
    if L.broadcast_shapes(mask._shape, a._shape, op="masked_fill") != a._shape:
        raise ShapeError(f"masked_fill: mask of shape {mask._shape} does not broadcast to "
                         f"the array's shape {a._shape}")
    fill = value.astype(a._dtype) if isinstance(value, ArrayBase) else _scalar(a, value,
                                                                              a._dtype)
    return where(mask, fill, a)
