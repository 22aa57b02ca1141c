"""NDArray: the strided array of :mod:`lamina.ndarray`, with its operators.

The layout, views and indexing are :class:`~lamina.ndarray._base.ArrayBase`'s;
the operators and compute methods here delegate to ``_compute``, which holds
the broadcasting, dtype and device rules once for all of them. The in-place
operators (``a += b``, ``a *= 2``) write into the array's own storage, as
numpy's do: views of it see the change.

Example:
    >>> from lamina.ndarray import array
    >>> a = array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device="numpy")
    >>> a.T.shape, a.T.strides
    ((3, 2), (1, 3))
    >>> (a.T + 1).tolist()
    [[2.0, 5.0], [3.0, 6.0], [4.0, 7.0]]
    >>> row = a[0]
    >>> a -= 1
    >>> row.tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _compute
from . import _indexing as _ix
from ._base import ArrayBase
from ._cumulative import cumsum as _cumsum
from ._optable import OPS

Axes = int | tuple[int, ...] | None


class NDArray(ArrayBase):
    """A strided N-dimensional array on one device (see the module docstring)."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> NDArray:
        """Views for ints, slices, None and ``...``; as PyTorch, a bool array masks
        (a copy of the selected elements), an integer array gathers rows and a
        bool adds a dim of size 1 (``True``) or 0 (``False``)."""
        if isinstance(key, (ArrayBase, list, np.ndarray)):
            return _ix.read_array(self, key)
        if isinstance(key, (tuple, bool, np.bool_)) and _ix.is_advanced(key):
            return _ix.getitem(self, key)
        return ArrayBase.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Writes through views for ints, slices, None and ``...``; with integer arrays
        or bool masks in the key, as PyTorch's ``x[key] = value`` (the value
        broadcasts to ``x[key]``'s shape; the last of repeated indices wins)."""
        if _ix.is_advanced(key):
            _ix.setitem(self, key, value)
        else:
            ArrayBase.__setitem__(self, key, value)

    # The elementwise operators and methods (__add__, __mod__, exp, maximum,
    # logical_xor, ...) are set from the op table below the class; declared
    # here for type checkers only.
    if TYPE_CHECKING:
        def __add__(self, other: Any) -> NDArray: ...
        def __radd__(self, other: Any) -> NDArray: ...
        def __sub__(self, other: Any) -> NDArray: ...
        def __rsub__(self, other: Any) -> NDArray: ...
        def __mul__(self, other: Any) -> NDArray: ...
        def __rmul__(self, other: Any) -> NDArray: ...
        def __truediv__(self, other: Any) -> NDArray: ...
        def __rtruediv__(self, other: Any) -> NDArray: ...
        def __floordiv__(self, other: Any) -> NDArray: ...
        def __rfloordiv__(self, other: Any) -> NDArray: ...
        def __mod__(self, other: Any) -> NDArray: ...
        def __rmod__(self, other: Any) -> NDArray: ...
        def __pow__(self, other: Any) -> NDArray: ...
        def __rpow__(self, other: Any) -> NDArray: ...
        def __and__(self, other: Any) -> NDArray: ...
        def __rand__(self, other: Any) -> NDArray: ...
        def __or__(self, other: Any) -> NDArray: ...
        def __ror__(self, other: Any) -> NDArray: ...
        def __xor__(self, other: Any) -> NDArray: ...
        def __rxor__(self, other: Any) -> NDArray: ...
        def __eq__(self, other: Any) -> NDArray: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> NDArray: ...  # type: ignore[override]
        def __lt__(self, other: Any) -> NDArray: ...
        def __le__(self, other: Any) -> NDArray: ...
        def __gt__(self, other: Any) -> NDArray: ...
        def __ge__(self, other: Any) -> NDArray: ...
        def __neg__(self) -> NDArray: ...
        def __abs__(self) -> NDArray: ...
        def __invert__(self) -> NDArray: ...

        def __getattr__(self, name: str) -> Callable[..., NDArray]:
            """The op table's methods (``a.exp()``, ``a.maximum(b)``, ...)."""

    def __matmul__(self, other: Any) -> NDArray:
        return _compute.matmul(self, other)

    def __rmatmul__(self, other: Any) -> NDArray:
        return _compute.matmul(other, self)

    def logical_not(self) -> NDArray:
        return _compute.logical_not(self)

    def sum(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.reduce(self, axis, keepdims, "sum")

    def max(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.reduce(self, axis, keepdims, "max")

    def min(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.reduce(self, axis, keepdims, "min")

    def prod(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        """The product over ``axis`` (an int, a tuple, or None for all axes).

        Shapes: ``(N, C, L)`` with ``axis=1`` -> ``(N, L)``, ``(N, 1, L)`` with
        ``keepdims``. As PyTorch, bool and int64 give int64 and floats keep
        their dtype; an empty product is 1. Needs the backend's optional
        ``reduce_prod`` (``DTypeError`` naming the device otherwise).

        Example:
            >>> from lamina.ndarray import array
            >>> array([[1, 2, 3], [4, 5, 6]], device="numpy").prod(axis=1).tolist()
            [6, 120]
        """
        return _compute.reduce(self, axis, keepdims, "prod")

    def cumsum(self, axis: int) -> NDArray:
        """Running sums along ``axis`` (see :func:`lamina.ndarray.cumsum`)."""
        return _cumsum(self, axis)

    def mean(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.mean(self, axis, keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> NDArray:
        return _compute.argmax(self, axis, keepdims)

    def nonzero(self) -> NDArray:
        return _compute.nonzero(self)

    def masked_fill(self, mask: Any, value: Any) -> NDArray:
        return _compute.masked_fill(self, mask, value)

    def take(self, indices: Any, axis: int = 0) -> NDArray:
        return _compute.take(self, indices, axis)

    def softmax(self, axis: int = -1) -> NDArray:
        return _compute.softmax(self, axis)

    def logsumexp(self, axis: Axes = -1, keepdims: bool = False) -> NDArray:
        return _compute.logsumexp(self, axis, keepdims)

    def pad(self, pad_width: Any, value: float = 0.0) -> NDArray:
        return _compute.pad(self, pad_width, value)


def _unary_method(op: str) -> Callable[[NDArray], NDArray]:
    def method(a: NDArray) -> NDArray:
        return _compute.unary(a, op)

    method.__name__ = method.__qualname__ = op
    return method


def _install_ops(cls: type[NDArray]) -> None:
    """Sets the operators and methods of every op of the op table on ``cls``."""
    for op in OPS.values():
        method: Callable[..., NDArray]
        if op.arity == 1:
            method = _unary_method(op.name)
            reflected = None
        else:
            method = _compute.binary_operator(op.name)
            reflected = (method if op.reflected == "same" else
                         _compute.reversed_operator(op.name) if op.reflected == "reversed"
                         else None)
        if op.operator:
            setattr(cls, f"__{op.operator}__", method)
            if op.arity == 2 and op.name not in _compute._COMPARISONS:  # a -= b
                setattr(cls, f"__i{op.operator}__", _compute.inplace_operator(op.name))
        if reflected is not None:
            setattr(cls, f"__r{op.operator}__", reflected)
        if op.method:
            setattr(cls, op.name, method)
        if op.logical:
            setattr(cls, op.logical, _compute.LOGICAL[op.logical])


_install_ops(NDArray)
