"""Cumulative ops: running sums along one axis, on the backend's ``cumsum_last``.

The kernel scans the contiguous last axis of a compact array; any other axis
is swapped to the end first (a view), compacted, scanned and swapped back, so
the result is a view of a new buffer.
"""

from __future__ import annotations

from typing import TypeVar

from ._base import ArrayBase
from ._checks import normalize_axis
from ._dtypes import bool_, int64
from ._narrow import kernels_for

A = TypeVar("A", bound=ArrayBase)


def cumsum(a: A, axis: int) -> A:
    """Running sums along ``axis``: ``out[..., k, ...] = sum(a[..., :k+1, ...])``.

    Shapes: unchanged, ``(N, L)`` -> ``(N, L)``; an empty axis gives an empty
    result. As PyTorch, bool and int64 give int64 and floats keep their dtype
    (a float sum is accumulated in that dtype, left to right); a 0-d array
    takes ``axis`` 0 or -1. Needs the backend's optional ``cumsum_last``.

    Raises:
        TypeError: ``axis`` is not an int.
        ShapeError: ``axis`` is out of range.
        DTypeError: the device has no ``cumsum_last`` for the dtype.

    Example:
        >>> from lamina.ndarray import array
        >>> cumsum(array([[1, 2, 3], [4, 5, 6]], device="numpy"), axis=1).tolist()
        [[1, 3, 6], [4, 9, 15]]
    """
    ax = normalize_axis(axis, max(a.ndim, 1), "cumsum")
    if a._dtype is bool_:
        a = a.astype(int64)
    device = a._device
    kernels = kernels_for(device, "cumsum_last", a._dtype, "cumsum")
    if a.ndim == 0:
        return a.copy()
    last = a.ndim - 1
    src = (a if ax == last else a.transpose(ax, last)).compact()
    out = src._like()
    scan = kernels.cumsum_last  # not None: kernels_for checked it through kernel_dtypes
    if out.size and scan is not None:
        scan(src._buf, out._buf, src._shape[-1])
    return out if ax == last else out.transpose(ax, last)
