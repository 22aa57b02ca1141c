"""NDArray: the strided array of :mod:`lamina.ndarray`, with its operators.

The layout, views and indexing are :class:`~lamina.ndarray._base.ArrayBase`'s;
the operators and compute methods here delegate to ``_compute``, which holds
the broadcasting, dtype and device rules once for all of them.

Example:
    >>> from lamina.ndarray import array
    >>> a = array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device="numpy")
    >>> a.T.shape, a.T.strides
    ((3, 2), (1, 3))
    >>> (a.T + 1).tolist()
    [[2.0, 5.0], [3.0, 6.0], [4.0, 7.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _compute
from . import _indexing as _ix
from ._base import ArrayBase
from ._compute import binary as _binary
from ._compute import binary_operator as _operator
from ._compute import reversed_operator as _reversed
from ._compute import unary as _unary
from ._cumulative import cumsum as _cumsum

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

    # Operators with an array or scalar operand: binary_operator's methods.
    __add__ = __radd__ = _operator("add")
    __sub__ = _operator("sub")

    def __rsub__(self, other: Any) -> NDArray:
        return _compute.reversed_scalar(self, other, "sub")

    __mul__ = __rmul__ = _operator("mul")
    __truediv__ = _operator("div")

    def __rtruediv__(self, other: Any) -> NDArray:
        return _compute.reversed_scalar(self, other, "div")

    __pow__ = _operator("power")

    def __rpow__(self, other: Any) -> NDArray:
        return _compute.reversed_scalar(self, other, "power")

    def __matmul__(self, other: Any) -> NDArray:
        return _compute.matmul(self, other)

    def __rmatmul__(self, other: Any) -> NDArray:
        return _compute.matmul(other, self)

    def __neg__(self) -> NDArray:
        return _unary(self, "neg")

    def __abs__(self) -> NDArray:
        return _unary(self, "abs")

    __floordiv__ = _operator("floordiv")
    __rfloordiv__ = _reversed("floordiv")
    __mod__ = _operator("remainder")
    __rmod__ = _reversed("remainder")
    __and__ = __rand__ = _operator("bitwise_and")
    __or__ = __ror__ = _operator("bitwise_or")
    __xor__ = __rxor__ = _operator("bitwise_xor")

    def __invert__(self) -> NDArray:
        return _unary(self, "bitwise_not")

    # comparisons return bool (1/0 in the operands' dtype on a v1.0 backend without bool)
    __eq__ = _operator("eq")  # type: ignore[assignment]
    __ne__ = _operator("ne")  # type: ignore[assignment]
    __lt__ = _operator("lt")
    __le__ = _operator("le")
    __gt__ = _operator("gt")
    __ge__ = _operator("ge")

    def maximum(self, other: Any) -> NDArray:
        return _binary(self, other, "maximum")

    def minimum(self, other: Any) -> NDArray:
        return _binary(self, other, "minimum")

    def logical_not(self) -> NDArray:
        return _compute.logical_not(self)

    def logical_and(self, other: Any) -> NDArray:
        return _compute.logical_and(self, other)

    def logical_or(self, other: Any) -> NDArray:
        return _compute.logical_or(self, other)

    def logical_xor(self, other: Any) -> NDArray:
        return _compute.logical_xor(self, other)

    def abs(self) -> NDArray:
        return _unary(self, "abs")

    def exp(self) -> NDArray:
        return _unary(self, "exp")

    def log(self) -> NDArray:
        return _unary(self, "log")

    def sqrt(self) -> NDArray:
        return _unary(self, "sqrt")

    def tanh(self) -> NDArray:
        return _unary(self, "tanh")

    def sin(self) -> NDArray:
        return _unary(self, "sin")

    def cos(self) -> NDArray:
        return _unary(self, "cos")

    def sign(self) -> NDArray:
        return _unary(self, "sign")

    def erf(self) -> NDArray:
        return _compute.erf(self)

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
