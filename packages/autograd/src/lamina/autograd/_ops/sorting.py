"""Sorting and selection: sort, argsort, topk, and max/min over a dim with indices.

The indices come from :mod:`lamina.ndarray`'s host sort (every backend, see
``lamina.ndarray._sorting``); the values are ``gather(x, dim, indices)``, so
gradients reach exactly the selected positions through gather's rule and
these ops need no backward code of their own. Indices are int64 and never
require grad.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import lamina.ndarray as nd
from lamina.ndarray import NDArray

from .. import _grad_mode as grad_mode
from .._tensor_base import Tensor, TensorBase, make
from ._util import NOT_GIVEN, normalize_axis, reduction_args
from .reduce import amax, amin
from .scattering import gather


class ValuesIndices(NamedTuple):
    """``(values, indices)``, as ``torch.return_types``: unpack it, or read
    ``.values`` and ``.indices``."""

    values: TensorBase
    indices: TensorBase


def _selected(x: Tensor, dim: int, values: NDArray, indices: NDArray) -> ValuesIndices:
    """The result pair; when ``x`` needs a gradient the values are re-read from ``x``
    with gather (equal to ``values``, and differentiable)."""
    index = make(indices)
    if not (x.requires_grad and grad_mode.is_grad_enabled()):
        return ValuesIndices(make(values), index)
    if x.ndim == 0:  # gather wants at least one dim
        return ValuesIndices(gather(x.reshape(1), 0, index.reshape(1)).reshape(()), index)
    return ValuesIndices(gather(x, dim, index), index)


def sort(x: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False
         ) -> ValuesIndices:
    """``x`` sorted along ``dim`` and the int64 indices of the sorted values, as ``torch.sort``.

    NaN sorts as the largest value. Ties keep their order (the first index
    first), in both directions and whatever ``stable`` says. Gradients flow
    to the positions the values came from. Shapes: both results have ``x``'s.

    Example:
        >>> import lamina.autograd as ag
        >>> values, indices = ag.sort(ag.tensor([3.0, 1.0, 2.0]), descending=True)
        >>> values.tolist(), indices.tolist()
        ([3.0, 2.0, 1.0], [0, 2, 1])
    """
    axis = normalize_axis(dim, x.ndim, "sort")
    values, indices = nd.sort(x._data, axis, descending, stable)
    return _selected(x, axis, values, indices)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False
            ) -> Tensor:
    """The int64 indices that sort ``x`` along ``dim`` (``sort(...).indices``)."""
    axis = normalize_axis(dim, x.ndim, "argsort")
    return make(nd.argsort(x._data, axis, descending, stable))


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
         ) -> ValuesIndices:
    """The ``k`` largest (smallest with ``largest=False``) values along ``dim`` and
    their int64 indices, as ``torch.topk``.

    The values always come sorted, which ``sorted=False`` also allows. Shapes:
    ``(..., n, ...)`` -> ``(..., k, ...)``. Raises ``ShapeError`` when ``k``
    is not in ``[0, n]``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.topk(ag.tensor([1.0, 5.0, 3.0]), 2).indices.tolist()
        [1, 2]
    """
    axis = normalize_axis(dim, x.ndim, "topk")
    values, indices = nd.topk(x._data, k, axis, largest, sorted)
    return _selected(x, axis, values, indices)


def _extremum(x: Tensor, dim: Any, keepdim: bool, axis: Any, keepdims: bool | None,
              op: str) -> Tensor | ValuesIndices:
    if isinstance(dim, TensorBase):  # max(x, other): the elementwise form
        return x.maximum(dim) if op == "max" else x.minimum(dim)
    dim, keepdim = reduction_args(op, dim, keepdim, axis, keepdims)
    if dim is None:
        return (amax if op == "max" else amin)(x, None, keepdim)
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {dim!r}; use a{op}(x, dim={dim!r}) "
                        f"for the {op}imum over several dims")
    ax = normalize_axis(int(dim), x.ndim, op)
    pick = nd.max_with_indices if op == "max" else nd.min_with_indices
    values, indices = pick(x._data, ax, True)
    out = _selected(x, ax, values, indices)
    if keepdim or x.ndim == 0:
        return out
    return ValuesIndices(out.values.squeeze(ax), out.indices.squeeze(ax))


def max(x: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        axis: Any = NOT_GIVEN, keepdims: bool | None = None) -> Any:
    """``torch.max``'s three forms.

    - ``max(x)``: the maximum of all elements (a 0-d tensor; ``amax``).
    - ``max(x, dim, keepdim=False)``: ``(values, indices)`` along the int
      ``dim``; the index is the first maximum's, or the first NaN's (NaN
      propagates). The gradient goes to that one position.
    - ``max(x, other)``: the elementwise maximum (``maximum``).

    ``axis``/``keepdims`` are accepted for ``dim``/``keepdim``. A tuple of
    dims raises ``TypeError``, as in PyTorch: use ``amax``.

    Example:
        >>> import lamina.autograd as ag
        >>> values, indices = ag.max(ag.tensor([[1.0, 4.0], [3.0, 2.0]]), 1)
        >>> values.tolist(), indices.tolist()
        ([4.0, 3.0], [1, 0])
    """
    return _extremum(x, dim, keepdim, axis, keepdims, "max")


def min(x: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        axis: Any = NOT_GIVEN, keepdims: bool | None = None) -> Any:
    """``torch.min``'s three forms: ``min(x)``, ``min(x, dim, keepdim)`` ->
    ``(values, indices)``, and the elementwise ``min(x, other)``; see :func:`max`."""
    return _extremum(x, dim, keepdim, axis, keepdims, "min")
