"""Integer-array indexing: take (gather) and index_scatter_add, each the other's adjoint.

Embedding lookups, ``x[idx]`` with an index array and cross-entropy targets
all reduce to ``take``; its gradient is ``index_scatter_add``, which accumulates
repeated indices, instead of a one-hot matrix product.
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import DTypeError, NDArray

from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from ._util import normalize_axis
from .elementwise import Where
from .shape import Slice


class Take(Function):
    """``a.take(indices, axis)``: shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``."""

    name = "take"

    def forward(self, a: NDArray, indices: NDArray, axis: int) -> NDArray:
        self.indices, self.axis = indices, axis
        return a.take(indices, axis=axis)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        size = self.shapes[0][self.axis]
        return (ScatterAdd.apply(g, indices=self.indices, axis=self.axis, size=size),)


class ScatterAdd(Function):
    """Sums slices of ``src`` into ``size`` rows along ``axis`` at ``indices``."""

    name = "index_scatter_add"

    def forward(self, src: NDArray, indices: NDArray, axis: int, size: int) -> NDArray:
        self.indices, self.axis = indices, axis
        return nd.scatter_add(src, indices, axis, size)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (Take.apply(g, indices=self.indices, axis=self.axis),)


class OneHot(Function):
    name = "one_hot"
    differentiable = False

    def forward(self, indices: NDArray, num_classes: int, dtype: Any) -> NDArray:
        return nd.one_hot(indices, num_classes, dtype=dtype)


def _index_array(indices: Any, like: Tensor, op: str) -> NDArray:
    """``indices`` as an int64 NDArray on ``like``'s device."""
    data = indices._data if isinstance(indices, TensorBase) else indices
    if not isinstance(data, NDArray):
        data = np.asarray(data)
        if data.dtype.kind not in "iu" and data.size:  # [] is an empty integer index
            raise DTypeError(f"{op}: indices must be integers, got {data.dtype}")
        return nd.array(data.astype(np.int64), dtype=nd.int64, device=like._data.device)
    if data.dtype != nd.int64:
        raise DTypeError(f"{op}: indices must be int64, got {data.dtype}; use .long()")
    return data


def take(x: Tensor, indices: Any, dim: int = 0) -> Tensor:
    """Gathers slices of ``x`` along ``dim`` at integer ``indices``.

    Shapes: ``x (A, D, B)``, ``indices (*I)`` -> ``(A, *I, B)`` for ``dim=1``.
    """
    axis = normalize_axis(dim, x.ndim, "take")
    return Take.apply(x, indices=_index_array(indices, x, "take"), axis=axis)


def index_scatter_add(src: Tensor, indices: Any, dim: int, size: int) -> Tensor:
    """The adjoint of ``take``: ``(A, *I, B)`` -> ``(A, size, B)``, summing repeats
    (PyTorch's ``scatter_add`` is :func:`lamina.autograd.scatter_add`)."""
    axis = normalize_axis(dim, src.ndim, "index_scatter_add")
    return ScatterAdd.apply(src, indices=_index_array(indices, src, "index_scatter_add"),
                            axis=axis,
                            size=size)


def embedding(indices: Any, weight: Tensor) -> Tensor:
    """Rows of ``weight`` at ``indices``. Shapes: ``(*I)``, ``(V, D)`` -> ``(*I, D)``."""
    return take(weight, indices, 0)


def one_hot(indices: Tensor, num_classes: int, dtype: Any = "float32") -> Tensor:
    """One-hot rows (not differentiable). Shapes: ``(*I)`` int64 -> ``(*I, num_classes)``."""
    return OneHot.apply(indices, num_classes=num_classes, dtype=nd.as_dtype(dtype))


def _is_index_array(k: Any) -> bool:
    return isinstance(k, (TensorBase, NDArray, list, np.ndarray))


def _is_bool_scalar(k: Any) -> bool:
    """``True``, ``False`` or a 0-d bool array: a 0-d mask, not the int 0 or 1."""
    if isinstance(k, (bool, np.bool_)):
        return True
    data = k._data if isinstance(k, TensorBase) else k
    if isinstance(data, NDArray):
        return data.ndim == 0 and data.dtype == nd.bool_
    return isinstance(data, np.ndarray) and data.ndim == 0 and data.dtype == np.bool_


def _is_mask(k: Any) -> bool:
    data = k._data if isinstance(k, TensorBase) else k
    if isinstance(data, NDArray):
        return data.dtype == nd.bool_
    return isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype == np.bool_


def masked_select(x: Tensor, mask: Any) -> Tensor:
    """``x[mask]`` for a bool mask of ``x``'s leading dims: the selected elements
    (or trailing sub-tensors) in row-major order, differentiable as a ``take``.
    Shapes: ``x (*M, *R)``, ``mask (*M)`` -> ``(count, *R)``."""
    data = mask._data if isinstance(mask, TensorBase) else mask
    index = nd.mask_indices(data, x.shape, x._data, "getitem")
    lead = data.ndim if isinstance(data, NDArray) else np.ndim(data)
    return take(x.reshape((int(np.prod(x.shape[:lead])),) + x.shape[lead:]), index, 0)


def read(x: Tensor, positions: np.ndarray) -> Tensor:
    """The elements of ``x`` at row-major ``positions`` (see
    :func:`lamina.ndarray.index_positions`), shaped like them."""
    return take(x.reshape(-1), positions, 0)


def unwrap(key: Any) -> Any:
    """A key with its Tensors replaced by their NDArrays (what lamina.ndarray reads)."""
    if isinstance(key, tuple):
        return tuple(k._data if isinstance(k, TensorBase) else k for k in key)
    return key._data if isinstance(key, TensorBase) else key


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: ints, slices (any step), None, Ellipsis, integer arrays and bool
    masks, as PyTorch.

    An integer array (Tensor, list or numpy array) after full slices only
    gathers along its axis with ``take`` (``x[idx]``, ``x[:, idx]``); a bool
    mask of ``x``'s leading dims, alone, selects as ``x[mask]`` (see
    :func:`masked_select`). Any other key with arrays (several arrays,
    broadcast together; masks and ints among them) reads at the positions of
    :func:`lamina.ndarray.index_positions`: one ``take`` of the flattened
    tensor, whose gradient is a scatter-add. Negative entries of an integer
    array count from the end; a bool (``x[True]``, ``x[False]``) is a 0-d mask
    that adds a dim of size 1 or 0, as in PyTorch.
    """
    if type(key) is int or type(key) is slice:  # the common cases: a view, nothing to sort out
        return Slice.apply(x, key=key)
    parts = key if isinstance(key, tuple) else (key,)
    if any(_is_bool_scalar(k) for k in parts):
        return read(x, nd.index_positions(x._data, unwrap(key), "getitem"))
    if _is_mask(key):
        return masked_select(x, key)
    arrays = [i for i, k in enumerate(parts) if _is_index_array(k)]
    if not arrays:
        return Slice.apply(x, key=key)
    p = arrays[0]
    if len(arrays) > 1 or _is_mask(parts[p]) or p >= x.ndim or \
            any(not isinstance(k, slice) or k != slice(None) for k in parts[:p]):
        return read(x, nd.index_positions(x._data, unwrap(key), "getitem"))
    index = parts[p]._data if isinstance(parts[p], TensorBase) else parts[p]
    out = take(x, nd.wrap_index(index, x.shape[p], x._data, "getitem", p), p)
    rest = parts[p + 1:]
    if not rest:
        return out
    return Slice.apply(out, key=(slice(None),) * (out.ndim - x.ndim + p + 1) + rest)


def masked_fill(x: Tensor, mask: Any, value: Any) -> Tensor:
    """``x`` with ``value`` where the bool ``mask`` (broadcast to ``x``'s shape) is
    True, keeping ``x``'s dtype as PyTorch; differentiable in ``x`` (and in a
    0-d Tensor ``value``)."""
    if not isinstance(mask, TensorBase):
        host = np.asarray(mask)
        if host.dtype != np.bool_:
            raise DTypeError(f"masked_fill: the mask must be bool, got {host.dtype}")
        # a device without bool (interface v1.0) takes an int64 condition
        dtype = nd.bool_ if "bool" in x._data.device.dtypes else nd.int64
        mask = make(nd.array(host.astype(dtype.np), dtype=dtype, device=x._data.device))
    elif mask.dtype != nd.bool_:
        raise DTypeError(f"masked_fill: the mask must be bool, got {mask.dtype}")
    if nd.broadcast_shapes(mask.shape, x.shape, op="masked_fill") != x.shape:
        raise nd.ShapeError(f"masked_fill: mask of shape {mask.shape} does not broadcast to "
                            f"the tensor's shape {x.shape}")
    if isinstance(value, TensorBase):
        fill = value.to(dtype=x.dtype)
    else:
        fill = make(nd.full((), value, dtype=x.dtype, device=x._data.device))
    return Where.apply(mask, fill, x)


def nonzero(x: Tensor) -> Tensor:
    """Indices of the non-zero entries, ``(count, x.ndim)`` int64 (not differentiable)."""
    return make(nd.nonzero(x._data))


PRIMITIVES = (Take, ScatterAdd, OneHot)
COMPOSITES = (embedding, getitem, masked_select, masked_fill, nonzero)
