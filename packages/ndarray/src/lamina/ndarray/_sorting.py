"""Sorting and selection along one axis: sort, argsort, topk, and max/min with indices.

All of them are the backend's optional ``sort_last`` kernel (interface v2.1):
the first ``k`` of a stable sort of each row of a compact array along its
contiguous last axis. Another axis is swapped to the end first (a view),
compacted, sorted and swapped back, as ``cumsum`` does. A backend without the
kernel (or without it for the dtype) runs the numpy backend's on a host copy,
so every device gives the same answer.

Ordering is PyTorch's: NaN is the largest value (last ascending, first
descending), and equal values keep their order (the first index first), in
either direction, whether or not ``stable`` is asked for.
"""

from __future__ import annotations

import numpy as np

from ._checks import normalize_axis
from ._dtypes import int64
from ._errors import ShapeError
from ._narrow import kernels_of
from ._ndarray import NDArray
from ._registry import get_device


def _axis(a: NDArray, axis: int, op: str) -> int:
    """``axis`` made non-negative (a 0-d array has one axis, of size 1)."""
    if not isinstance(a, NDArray):
        raise TypeError(f"{op}: expected an NDArray, got {type(a).__name__}")
    return normalize_axis(axis, max(a.ndim, 1), op)


def _sorted(a: NDArray, ax: int, k: int, descending: bool) -> tuple[NDArray, NDArray]:
    """The first ``k`` of ``a``'s stable sort along ``ax``: values, int64 indices."""
    device = a.device
    kernels = device.kernels
    if kernels.sort_last is not None and a.dtype.is_narrow:
        kernels = kernels_of(a, "sort_last", "sort")  # on float32 copies
    elif kernels.sort_last is None or a.dtype.name not in device.kernel_dtypes["sort_last"]:
        host = get_device("numpy")  # its reference kernel: same answer, through the host
        values, indices = _sorted(a.to(host), ax, k, descending)
        return values.to(device), indices.to(device)
    if a.ndim == 0:
        values, indices = _sorted(a.reshape(1), 0, k, descending)
        return values.reshape(()), indices.reshape(())
    last = a.ndim - 1
    src = (a if ax == last else a.transpose(ax, last)).compact()
    shape = src.shape[:-1] + (k,)
    values = NDArray._empty(shape, a.dtype, device, "sort")
    indices = NDArray._empty(shape, int64, device, "sort")
    sort_last = kernels.sort_last
    if values.size and sort_last is not None:
        sort_last(src.buffer, values.buffer, indices.buffer, src.shape[-1], k, descending)
    if ax == last:
        return values, indices
    return values.transpose(ax, last), indices.transpose(ax, last)


def sort(a: NDArray, axis: int = -1, descending: bool = False, stable: bool = False
         ) -> tuple[NDArray, NDArray]:
    """``a`` sorted along ``axis``, and where each sorted value came from.

    Shapes: ``a`` -> ``(values, indices)``, both of ``a``'s shape; indices
    are int64, ``values == take_along_axis(a, indices, axis)``. NaN sorts as
    the largest value; ties keep their order (``stable`` is always honoured).

    Example:
        >>> from lamina.ndarray import array
        >>> values, indices = sort(array([3.0, 1.0, 2.0], device="numpy"))
        >>> values.tolist(), indices.tolist()
        ([1.0, 2.0, 3.0], [1, 2, 0])
    """
    del stable  # the sort is always stable
    ax = _axis(a, axis, "sort")
    return _sorted(a, ax, a.shape[ax] if a.ndim else 1, descending)


def argsort(a: NDArray, axis: int = -1, descending: bool = False, stable: bool = False
            ) -> NDArray:
    """The int64 indices that sort ``a`` along ``axis`` (``sort(...)[1]``)."""
    del stable
    ax = _axis(a, axis, "argsort")
    return _sorted(a, ax, a.shape[ax] if a.ndim else 1, descending)[1]


def topk(a: NDArray, k: int, axis: int = -1, largest: bool = True, sorted: bool = True
         ) -> tuple[NDArray, NDArray]:
    """The ``k`` largest (or smallest) values along ``axis`` and their int64 indices.

    Shapes: ``(..., n, ...)`` -> two arrays of ``(..., k, ...)``. The values
    always come sorted (largest first, or smallest first when ``largest`` is
    False), which ``sorted=False`` allows too.

    Raises:
        ShapeError: ``k`` is negative or larger than the axis.

    Example:
        >>> from lamina.ndarray import array
        >>> values, indices = topk(array([1.0, 5.0, 3.0], device="numpy"), 2)
        >>> values.tolist(), indices.tolist()
        ([5.0, 3.0], [1, 2])
    """
    del sorted  # always sorted: a valid order for sorted=False too
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"topk: k must be an int, got {type(k).__name__}")
    ax = _axis(a, axis, "topk")
    n = a.shape[ax] if a.ndim else 1
    if not 0 <= k <= n:
        raise ShapeError(f"topk: k={k} is out of range for dim {ax} of size {n} "
                         f"(shape {a.shape}); pick 0 <= k <= {n}")
    return _sorted(a, ax, int(k), largest)


def _extremum(a: NDArray, axis: int, keepdims: bool, op: str) -> tuple[NDArray, NDArray]:
    ax = _axis(a, axis, op)
    if a.ndim and a.shape[ax] == 0:
        raise ShapeError(f"{op}: cannot reduce dim {ax} of size 0 (shape {a.shape}); "
                         f"reduce over a non-empty dim")
    # The first of a descending sort is the maximum at its first index, or the
    # first NaN: PyTorch's answer. The minimum is the maximum of an
    # order-reversing involution (-x; ~x for int64 and bool, where -x wraps).
    flip = (lambda x: x) if op == "max" else \
        (lambda x: -x) if a.dtype.is_floating else (lambda x: ~x)
    values, index = _sorted(flip(a), ax, 1, True)
    values = flip(values)
    if not keepdims and a.ndim:
        index, values = index.squeeze(ax), values.squeeze(ax)
    return values, index


def max_with_indices(a: NDArray, axis: int, keepdims: bool = False
                     ) -> tuple[NDArray, NDArray]:
    """The maximum along ``axis`` and the int64 index of its first occurrence.

    As ``torch.max(x, dim)``: a NaN is the maximum (the first NaN's index).
    Shapes: ``(N, C)`` with ``axis=1`` -> two arrays of ``(N,)`` (``(N, 1)``
    with ``keepdims``).

    Raises:
        ShapeError: the axis is empty.
    """
    return _extremum(a, axis, keepdims, "max")


def min_with_indices(a: NDArray, axis: int, keepdims: bool = False
                     ) -> tuple[NDArray, NDArray]:
    """The minimum along ``axis`` and the int64 index of its first occurrence
    (a NaN, when there is one, as ``torch.min(x, dim)``)."""
    return _extremum(a, axis, keepdims, "min")

