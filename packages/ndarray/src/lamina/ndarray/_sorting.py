"""Sorting and selection along one axis: sort, argsort, topk, and max/min with indices.

Every backend runs these the same way, through the host: the array is read
to numpy, ordered there with a stable sort (``np.argsort(kind="stable")``),
and the results are copied back to the array's device. No backend kernel is
needed; the cost is two transfers and an O(n log n) host sort, which a device
kernel could replace later without changing any result.

Ordering is PyTorch's: NaN is the largest value (last ascending, first
descending), and equal values keep their order (the first index first), in
either direction, whether or not ``stable`` is asked for.
"""

from __future__ import annotations

import numpy as np

from ._checks import normalize_axis
from ._creation import array
from ._dtypes import int64
from ._errors import ShapeError
from ._ndarray import NDArray


def _host(a: NDArray, axis: int, op: str) -> tuple[np.ndarray, int]:
    """``a`` on the host (a 0-d array as 1-d) and ``axis`` made non-negative."""
    if not isinstance(a, NDArray):
        raise TypeError(f"{op}: expected an NDArray, got {type(a).__name__}")
    ax = normalize_axis(axis, max(a.ndim, 1), op)
    host = a.numpy()
    return (host.reshape(1) if host.ndim == 0 else host), ax


def _device(host: np.ndarray, like: NDArray, index: bool = False) -> NDArray:
    """Host results back on ``like``'s device: its dtype, or int64 for indices."""
    if like.ndim == 0:
        host = host.reshape(())
    return array(host, dtype=int64 if index else like.dtype, device=like.device)


def _order(host: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable sorting indices along ``axis``. Descending sorts the reversed array
    ascending and reverses the result, so that ties still keep the first index
    first and NaN (numpy's largest) comes first."""
    if not descending:
        return np.argsort(host, axis=axis, kind="stable")
    rev = np.argsort(np.flip(host, axis), axis=axis, kind="stable")
    return host.shape[axis] - 1 - np.flip(rev, axis)


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
    del stable  # the host sort is always stable
    host, ax = _host(a, axis, "sort")
    order = _order(host, ax, descending)
    return (_device(np.take_along_axis(host, order, ax), a),
            _device(order, a, index=True))


def argsort(a: NDArray, axis: int = -1, descending: bool = False, stable: bool = False
            ) -> NDArray:
    """The int64 indices that sort ``a`` along ``axis`` (``sort(...)[1]``)."""
    del stable
    host, ax = _host(a, axis, "argsort")
    return _device(_order(host, ax, descending), a, index=True)


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
    host, ax = _host(a, axis, "topk")
    n = host.shape[ax]
    if not 0 <= k <= n:
        raise ShapeError(f"topk: k={k} is out of range for dim {ax} of size {n} "
                         f"(shape {a.shape}); pick 0 <= k <= {n}")
    order = np.take(_order(host, ax, largest), np.arange(k), axis=ax)
    return (_device(np.take_along_axis(host, order, ax), a),
            _device(order, a, index=True))


def _extremum(a: NDArray, axis: int, keepdims: bool, op: str) -> tuple[NDArray, NDArray]:
    host, ax = _host(a, axis, op)
    if host.shape[ax] == 0:
        raise ShapeError(f"{op}: cannot reduce dim {ax} of size 0 (shape {a.shape}); "
                         f"reduce over a non-empty dim")
    # numpy's argmax/argmin return the first NaN where there is one: PyTorch's answer.
    pick = np.argmax if op == "max" else np.argmin
    index = np.expand_dims(pick(host, axis=ax), ax)
    values = np.take_along_axis(host, index, ax)
    if not keepdims or a.ndim == 0:
        index, values = index.squeeze(ax), values.squeeze(ax)
    return _device(values, a), _device(index, a, index=True)


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

