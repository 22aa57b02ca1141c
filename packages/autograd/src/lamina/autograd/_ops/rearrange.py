"""PyTorch's rearranging and testing ops: narrow, roll, repeat, tile, index_select, unbind,
all, any, numel, and the triangles and diagonals: tril, triu, diagonal, diag, trace.

Every one is a composition of registered ops (slices, cat, reshape, broadcast,
take, comparisons and sums), so none has backward code of its own: the
gradients are those of the ops they are made of. The errors follow PyTorch's
(an ``IndexError`` for a start or an index out of range), with Lamina's
``ShapeError``/``DTypeError`` where PyTorch raises a bare ``RuntimeError``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import DTypeError, ShapeError

from .. import _ops as F
from .._tensor_base import Tensor, TensorBase, make
from ._util import normalize_axis, reduction_axes, shape_arg

# The ops are reached through the package at call time (F.cat): Tensor imports
# this module for its methods while the op modules are still loading.


def _along(dim: int, key: Any) -> tuple[Any, ...]:
    """A basic-index key that applies ``key`` to ``dim`` and keeps every other dim."""
    return (slice(None),) * dim + (key,)


def narrow(x: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """``length`` elements of ``x`` along ``dim`` from ``start`` (negative counts from
    the end), as a view. Shapes: ``(A, D, B)`` -> ``(A, length, B)`` for ``dim=1``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.arange(5.0).narrow(0, -3, 2)
        tensor([2., 3.])
    """
    if x.ndim == 0:
        raise ShapeError("narrow: cannot be applied to a 0-d tensor; reshape it to (1,) first")
    d = normalize_axis(dim, x.ndim, "narrow")
    start, length, n = operator.index(start), operator.index(length), x.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"narrow: start {start} is out of range for dim {d} of size {n} "
                         f"(expected {-n} <= start <= {n})")
    if length < 0:
        raise ValueError(f"narrow: length must be non-negative, got {length}")
    start %= n or 1
    if start + length > n:
        raise ShapeError(f"narrow: start ({start}) + length ({length}) exceeds the size "
                         f"({n}) of dim {d} of shape {x.shape}; shorten length")
    return x[_along(d, slice(start, start + length))]


def _roll_one(x: Tensor, shift: int, dim: int) -> Tensor:
    d = normalize_axis(dim, x.ndim, "roll")
    n = x.shape[d]
    shift = shift % n if n else 0
    if not shift:
        return F.shape.to(x, copy=True)  # roll returns a new tensor, as PyTorch's
    return F.cat([x[_along(d, slice(n - shift, None))], x[_along(d, slice(0, n - shift))]], d)


def roll(x: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None
         ) -> Tensor:
    """``x`` with its elements shifted by ``shifts`` places along ``dims`` (wrapping
    around); without ``dims``, along the flattened tensor.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([1.0, 2.0, 3.0]).roll(1)
        tensor([3., 1., 2.])
    """
    shift_list = [shifts] if isinstance(shifts, int) else list(shifts)
    dim_list = [] if dims is None else [dims] if isinstance(dims, int) else list(dims)
    if not shift_list:
        raise ValueError("roll: shifts is required (an int or a sequence of ints)")
    if dims is None and len(shift_list) == 1:
        return F.reshape(_roll_one(F.reshape(x, (-1,)), shift_list[0], 0), x.shape)
    if len(shift_list) != len(dim_list):
        raise ValueError(f"roll: shifts and dims must align: {len(shift_list)} shifts, "
                         f"{len(dim_list)} dims; give one dim per shift")
    for s, d in zip(shift_list, dim_list):
        x = _roll_one(x, s, d)
    return x


def repeat(x: Tensor, *sizes: Any) -> Tensor:
    """``x`` tiled ``sizes[i]`` times along dim ``i`` (``torch.Tensor.repeat``); extra
    leading sizes add dims. Shapes: ``(A, B)`` with ``(r, s, t)`` -> ``(r, s*A, t*B)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([1.0, 2.0]).repeat(2)
        tensor([1., 2., 1., 2.])
    """
    reps = shape_arg(sizes)
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat: {len(reps)} repeat sizes {reps} for a tensor of shape "
                         f"{x.shape}; give at least one per dim ({x.ndim})")
    if reps and min(reps) < 0:
        raise ValueError(f"repeat: repeat sizes must be non-negative, got {reps}")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    # (1, n) pairs broadcast to (r, n) pairs: copy r outer, so the rows read as tiles
    pairs = F.reshape(x, tuple(v for n in shape for v in (1, n)))
    tiled = F.broadcast_to(pairs, tuple(v for r, n in zip(reps, shape) for v in (r, n)))
    return F.reshape(tiled, tuple(r * n for r, n in zip(reps, shape)))


def tile(x: Tensor, dims: Sequence[int]) -> Tensor:
    """``repeat`` where fewer sizes than dims repeat the trailing dims (``torch.tile``).

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tile(ag.tensor([[1.0], [2.0]]), (2,)).shape
        (2, 2)
    """
    reps = tuple(dims)
    return repeat(x, (1,) * (x.ndim - len(reps)) + reps)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``x`` at the int64 ``index`` (0-d or 1-d) along ``dim``.

    Shapes: ``x (A, D, B)``, ``index (K,)`` -> ``(A, K, B)`` for ``dim=1``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([10.0, 20.0, 30.0]).index_select(0, ag.tensor([2, 0]))
        tensor([30., 10.])
    """
    if not isinstance(index, TensorBase):
        raise TypeError(f"index_select: index must be a Tensor, not {type(index).__name__}; "
                        "wrap it with lamina.autograd.tensor(..., dtype='int64')")
    if index.ndim > 1:
        raise IndexError(f"index_select: index must be 0-d or 1-d, got shape {index.shape}")
    if index.dtype != nd.int64:
        raise DTypeError(f"index_select: index must be int64, got {index.dtype.name}; "
                         "use .long()")
    return F.take(x, F.reshape(index, (-1,)), normalize_axis(dim, x.ndim, "index_select"))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``dim``, each without that dim (views).

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, 2.0], [3.0, 4.0]]).unbind(1)
        (tensor([1., 3.]), tensor([2., 4.]))
    """
    if x.ndim == 0:
        raise ShapeError("unbind: a 0-d tensor has no dim to unbind")
    d = normalize_axis(dim, x.ndim, "unbind")
    return tuple(x[_along(d, i)] for i in range(x.shape[d]))


def _count(mask: Tensor, dim: Any, keepdim: bool, op: str) -> Tensor:
    """How many entries of the bool ``mask`` along ``dim`` are True, as float32: a sum
    of ones and zeros is positive exactly when one of them is a one, at any size."""
    return F.sum(F.shape.to(mask, dtype=nd.float32), reduction_axes(dim, mask.ndim, op), keepdim)


def all(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every entry (along ``dim``, an int or a tuple) is non-zero (NaN is), as
    bool; True for an empty tensor. Not differentiable.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, 0.0], [2.0, 3.0]]).all(dim=1)
        tensor([False,  True], dtype=lamina.bool)
    """
    return _count(x == 0, dim, keepdim, "all") == 0


def any(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether some entry (along ``dim``, an int or a tuple) is non-zero (NaN is), as
    bool; False for an empty tensor. Not differentiable.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, 0.0], [0.0, 0.0]]).any(dim=1)
        tensor([ True, False], dtype=lamina.bool)
    """
    return _count(x != 0, dim, keepdim, "any") > 0


def numel(x: Tensor) -> int:
    """The number of elements of ``x`` (``torch.numel``)."""
    return x._data.size


# ----- triangles and diagonals ---------------------------------------------------------

def _triangle(x: Tensor, keep: np.ndarray) -> Tensor:
    """``x`` with the entries of its last two dims outside the bool ``keep`` set to 0."""
    mask = make(nd.array(keep, dtype="bool", device=x._data.device))
    return F.where(mask, x, make(nd.zeros((), dtype=x.dtype, device=x._data.device)))


def _matrices(x: Tensor, op: str) -> tuple[int, int]:
    if x.ndim < 2:
        raise ShapeError(f"{op}: expects a tensor with at least 2 dims, got shape {x.shape}; "
                         f"reshape a vector to a matrix first")
    return x.shape[-2], x.shape[-1]


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims: ``x[..., i, j]`` where ``j <= i +
    diagonal``, else 0. Shapes: ``(*, N, M) -> (*, N, M)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.ones(2, 2).tril().tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    n, m = _matrices(x, "tril")
    return _triangle(x, np.tri(n, m, operator.index(diagonal), dtype=bool))


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims: ``x[..., i, j]`` where ``j >= i +
    diagonal``, else 0. Shapes: ``(*, N, M) -> (*, N, M)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.ones(2, 2).triu(1).tolist()
        [[0.0, 1.0], [0.0, 0.0]]
    """
    n, m = _matrices(x, "triu")
    return _triangle(x, ~np.tri(n, m, operator.index(diagonal) - 1, dtype=bool))


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``x[..., i, i + offset]`` of the dims ``dim1`` and ``dim2``, which are
    removed; the diagonal becomes the last dim (a copy, where PyTorch gives a view).

    Shapes: ``(A, N, M)`` with ``dim1=1, dim2=2`` -> ``(A, L)``, ``L`` the length of
    the diagonal.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, 2.0], [3.0, 4.0]]).diagonal(1).tolist()
        [2.0]
    """
    return _diagonal(x, offset, dim1, dim2)


def _diagonal(x: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    d1, d2 = normalize_axis(dim1, x.ndim, "diagonal"), normalize_axis(dim2, x.ndim, "diagonal")
    if d1 == d2 or x.ndim < 2:
        raise ShapeError(f"diagonal: dim1 and dim2 must be two different dims of shape "
                         f"{x.shape}, got {dim1} and {dim2}")
    rest = tuple(k for k in range(x.ndim) if k not in (d1, d2))
    y = F.permute(x, rest + (d1, d2))
    k, keep = operator.index(offset), (slice(None),) * len(rest)
    y = y[keep + (slice(None), slice(k, None))] if k >= 0 else y[keep + (slice(-k, None),)]
    n = min(y.shape[-2:])
    y = F.reshape(y[keep + (slice(0, n), slice(0, n))], y.shape[:-2] + (n * n,))
    return y[keep + (slice(None, None, n + 1),)]  # (i, i) sits at i * (n + 1)


def diag(x: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.diag``: a vector ``(N,)`` becomes the matrix with it on the ``diagonal``-th
    diagonal, ``(N + |d|, N + |d|)``; a matrix gives its ``diagonal``-th diagonal.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.diag(ag.tensor([1.0, 2.0])).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    k = operator.index(diagonal)
    if x.ndim == 2:
        return _diagonal(x, k, 0, 1)
    if x.ndim != 1:
        raise ShapeError(f"diag: expects a 1-D or 2-D tensor, got shape {x.shape}; use "
                         f"diagonal(x, offset, dim1, dim2) for more dims")
    n = x.shape[0]
    square = _triangle(F.unsqueeze(x, 1), np.eye(n, dtype=bool))
    return F.pad(square, ((0, k), (k, 0)) if k >= 0 else ((-k, 0), (0, -k)))


def trace(x: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal, a 0-d tensor.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, 2.0], [3.0, 4.0]]).trace().item()
        5.0
    """
    if x.ndim != 2:
        raise ShapeError(f"trace: expects a matrix, got shape {x.shape}")
    return F.sum(_diagonal(x, 0, 0, 1))


COMPOSITES = (narrow, roll, repeat, tile, index_select, unbind, all, any, numel, tril, triu,
              diagonal, diag, trace)
