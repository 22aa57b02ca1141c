"""Integer-array indexing: take (gather) and scatter_add, each the other's adjoint.

Embedding lookups, ``x[idx]`` with an index array and cross-entropy targets
all reduce to ``take``; its gradient is ``scatter_add``, which accumulates
repeated indices, instead of a one-hot matrix product.
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import DTypeError, NDArray

from .._function import Function
from .._tensor import Tensor
from ._util import normalize_axis
from .shape import Slice


class Take(Function):
    """``a.take(indices, axis)``: shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``."""

    name = "take"

    def forward(self, a: NDArray, indices: NDArray, axis: int) -> NDArray:
        self.indices, self.axis = indices, axis
        return a.take(indices, axis=axis)

    def backward(self, g: Tensor) -> tuple[Tensor]:
        size = self.shapes[0][self.axis]
        return (ScatterAdd.apply(g, indices=self.indices, axis=self.axis, size=size),)


class ScatterAdd(Function):
    """Sums slices of ``src`` into ``size`` rows along ``axis`` at ``indices``."""

    name = "scatter_add"

    def forward(self, src: NDArray, indices: NDArray, axis: int, size: int) -> NDArray:
        self.indices, self.axis = indices, axis
        return nd.scatter_add(src, indices, axis, size)

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (Take.apply(g, indices=self.indices, axis=self.axis),)


class OneHot(Function):
    name = "one_hot"
    differentiable = False

    def forward(self, indices: NDArray, num_classes: int, dtype: Any) -> NDArray:
        return nd.one_hot(indices, num_classes, dtype=dtype)


def _index_array(indices: Any, like: Tensor, op: str) -> NDArray:
    """``indices`` as an int64 NDArray on ``like``'s device."""
    data = indices.data if isinstance(indices, Tensor) else indices
    if not isinstance(data, NDArray):
        data = np.asarray(data)
        if data.dtype.kind not in "iu":
            raise DTypeError(f"{op}: indices must be integers, got {data.dtype}")
        return nd.array(data.astype(np.int64), dtype=nd.int64, device=like.data.device)
    if data.dtype != nd.int64:
        raise DTypeError(f"{op}: indices must be int64, got {data.dtype}; use .long()")
    return data


def take(x: Tensor, indices: Any, dim: int = 0) -> Tensor:
    """Gathers slices of ``x`` along ``dim`` at integer ``indices``.

    Shapes: ``x (A, D, B)``, ``indices (*I)`` -> ``(A, *I, B)`` for ``dim=1``.
    """
    axis = normalize_axis(dim, x.ndim, "take")
    return Take.apply(x, indices=_index_array(indices, x, "take"), axis=axis)


def scatter_add(src: Tensor, indices: Any, dim: int, size: int) -> Tensor:
    """The adjoint of ``take``: ``(A, *I, B)`` -> ``(A, size, B)``, summing repeats."""
    axis = normalize_axis(dim, src.ndim, "scatter_add")
    return ScatterAdd.apply(src, indices=_index_array(indices, src, "scatter_add"), axis=axis,
                            size=size)


def embedding(indices: Any, weight: Tensor) -> Tensor:
    """Rows of ``weight`` at ``indices``. Shapes: ``(*I)``, ``(V, D)`` -> ``(*I, D)``."""
    return take(weight, indices, 0)


def one_hot(indices: Tensor, num_classes: int, dtype: Any = "float32") -> Tensor:
    """One-hot rows (not differentiable). Shapes: ``(*I)`` int64 -> ``(*I, num_classes)``."""
    return OneHot.apply(indices, num_classes=num_classes, dtype=nd.as_dtype(dtype))


def _is_index_array(k: Any) -> bool:
    return isinstance(k, (Tensor, NDArray, list, np.ndarray))


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: ints, slices (any step), None, Ellipsis, and one integer array.

    An integer array (Tensor, list or numpy array) gathers along its axis with
    ``take``; it may follow only full slices (``x[:, idx]``), and later
    entries index what remains.
    """
    if type(key) is int or type(key) is slice:  # the common cases: a view, nothing to sort out
        return Slice.apply(x, key=key)
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [i for i, k in enumerate(parts) if _is_index_array(k)]
    if not arrays:
        return Slice.apply(x, key=key)
    p = arrays[0]
    if len(arrays) > 1 or any(k != slice(None) for k in parts[:p]):
        raise IndexError(f"getitem: key {key!r} is not supported: use at most one integer "
                         "array, after full slices only (x[idx], x[:, idx]); or use take()")
    out = take(x, parts[p], p)
    rest = parts[p + 1:]
    if not rest:
        return out
    return Slice.apply(out, key=(slice(None),) * (out.ndim - x.ndim + p + 1) + rest)


PRIMITIVES = (Take, ScatterAdd, OneHot)
COMPOSITES = (embedding, getitem)
