"""Writes at indices: index_put, scatter, scatter_add, and their reading twin gather.

Each reduces its indices to *positions* (flat row-major indices into the
input, shaped like the written block; :func:`lamina.ndarray.index_positions`)
and then to one primitive, :class:`IndexPut`, whose gradient is PyTorch's:
the written values receive the output's gradient at their positions, and the
input receives it where it survived (everywhere with ``accumulate``, as a
``scatter_add``; zero where overwritten, as an ``index_put``/``scatter``).
Reading at positions is a ``take`` of the flattened input, whose gradient
is a scatter-add, as ``gather``'s is in PyTorch.
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import DTypeError, NDArray

from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from .index import read, unwrap
from .shape import Slice, to


class IndexPut(Function):
    """``a`` with ``values`` written (or added) at row-major ``positions``.

    Shapes: ``a (*A)``, ``values`` broadcastable to ``positions.shape`` ->
    ``(*A)``. The last of repeated positions wins unless ``accumulate``.
    """

    name = "put"

    def forward(self, a: NDArray, values: NDArray, positions: np.ndarray,
                accumulate: bool) -> NDArray:
        self.positions, self.accumulate = positions, accumulate
        out = a.copy()
        nd.put(out, positions, values, accumulate, "index_put")
        return out

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, TensorBase | None]:
        need_a, need_values = self.needs_input_grad
        ga = gv = None
        if need_a:
            ga = g if self.accumulate else IndexPut.apply(
                g, _zero(g), positions=self.positions, accumulate=False)
        if need_values:
            gv = read(g, self.positions)
        return ga, gv


def _zero(like: Tensor) -> Tensor:
    return make(nd.full((), 0, dtype=like.dtype, device=like._data.device))


def value_tensor(x: TensorBase, value: Any, op: str) -> TensorBase:
    """``value`` (a Tensor, number or array-like) as a Tensor of ``x``'s dtype and device;
    a floating point Tensor is not silently truncated into an integer ``x``."""
    if not isinstance(value, TensorBase):
        return make(nd.array(value.data if isinstance(value, NDArray) else value,
                                     dtype=x.dtype, device=x._data.device))
    if value.dtype != x.dtype and value.dtype.is_floating and not x.dtype.is_floating:
        raise DTypeError(f"{op}: cannot write {value.dtype.name} values into a "
                         f"{x.dtype.name} tensor; convert them with .long() first")
    return to(value, device=x.device, dtype=x.dtype)


def put(x: Tensor, positions: np.ndarray, value: Any, accumulate: bool, op: str) -> Tensor:
    """``x`` with ``value`` written at ``positions``, recorded as one :class:`IndexPut`."""
    v = value_tensor(x, value, op)
    while v.ndim > positions.ndim and v.shape[0] == 1:  # PyTorch drops leading ones
        v = v.reshape(v.shape[1:])
    return IndexPut.apply(x, v, positions=positions, accumulate=accumulate)


def _index_tuple(indices: Any, op: str) -> tuple[Any, ...]:
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}: indices must be a tuple of index tensors, got "
                        f"{type(indices).__name__}")
    return tuple(indices)


def index_put(x: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``x`` with ``x[indices] = values`` (``+=`` with ``accumulate``), out of place,
    as ``torch.index_put``.

    Args:
        indices: a tuple of int64 (or bool mask) tensors, one per leading dim,
            broadcast together.
        values: a tensor of ``x``'s dtype broadcastable to ``x[indices]``'s shape.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.zeros(3)
        >>> x.index_put((ag.tensor([0, 2, 0]),), ag.tensor([1.0, 2.0, 3.0]),
        ...             accumulate=True).tolist()
        [4.0, 0.0, 2.0]
    """
    key = _index_tuple(indices, "index_put")
    if isinstance(values, TensorBase) and values.dtype != x.dtype:
        raise DTypeError(f"index_put: values are {values.dtype.name}, the tensor "
                         f"{x.dtype.name}; index_put needs one dtype (convert with .to())")
    positions = nd.index_positions(x._data, unwrap(key), "index_put")
    return put(x, positions, values, accumulate, "index_put")


def gather(x: Tensor, dim: int, index: Any) -> Tensor:
    """Values of ``x`` along ``dim`` at ``index``, as ``torch.gather``:
    ``out[i][j] = x[index[i][j]][j]`` for ``dim=0``.

    Shapes: ``index`` (int64) has ``x``'s number of dims and is no larger than
    ``x`` outside ``dim``; the result has ``index``'s shape. The gradient is
    the scatter-add of the output's gradient.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> ag.gather(x, 1, ag.tensor([[0, 0], [1, 0]])).tolist()
        [[1.0, 1.0], [4.0, 3.0]]
    """
    return read(x, nd.along_positions(x._data, dim, unwrap(index), "gather"))


def _scatter(x: Tensor, dim: int, index: Any, src: Any, value: Any, accumulate: bool
             ) -> Tensor:
    op = "scatter_add" if accumulate else "scatter"
    if src is None:
        if value is None or accumulate:
            raise TypeError(f"{op}: give a source tensor (src)" +
                            ("" if accumulate else " or a scalar value"))
        src = value
    if isinstance(src, TensorBase):
        if src.dtype != x.dtype:
            raise DTypeError(f"{op}: the source is {src.dtype.name}, the tensor "
                             f"{x.dtype.name}; {op} needs one dtype (convert with .to())")
        positions = nd.along_positions(x._data, dim, unwrap(index), op, src._data)
        if positions.ndim:
            src = Slice.apply(src, key=tuple(slice(0, n) for n in positions.shape))
    elif isinstance(src, (int, float, bool)) and not accumulate:
        positions = nd.along_positions(x._data, dim, unwrap(index), op)
    else:
        raise TypeError(f"{op}: the source must be a Tensor, got {type(src).__name__}")
    return put(x, positions, src, accumulate, op)


def scatter(x: Tensor, dim: int, index: Any, src: Any = None, *, value: Any = None
            ) -> Tensor:
    """``x`` with ``src`` written along ``dim`` at ``index``, as ``torch.scatter``:
    ``out[index[i][j]][j] = src[i][j]`` for ``dim=0``; ``src`` may be a number.

    Shapes: ``index`` (int64) and ``src`` have ``x``'s number of dims; ``index``
    is no larger than ``src``, nor than ``x`` outside ``dim``. Gradients:
    ``x`` gets the output's gradient but where written, ``src`` the gather of it.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.scatter(ag.zeros(2, 3), 1, ag.tensor([[2], [0]]), 5.0).tolist()
        [[0.0, 0.0, 5.0], [5.0, 0.0, 0.0]]
    """
    return _scatter(x, dim, index, src, value, False)


def scatter_add(x: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    """``x`` plus ``src`` summed along ``dim`` at ``index``, as ``torch.scatter_add``:
    ``out[index[i][j]][j] += src[i][j]`` for ``dim=0`` (shapes as :func:`scatter`).

    Example:
        >>> import lamina.autograd as ag
        >>> ag.scatter_add(ag.zeros(3), 0, ag.tensor([0, 2, 0]), ag.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    return _scatter(x, dim, index, src, None, True)


PRIMITIVES = (IndexPut,)
COMPOSITES = (index_put, gather, scatter, scatter_add)
