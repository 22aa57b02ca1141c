"""Argument helpers shared by the op modules: scalars to tensors, axes to tuples."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lamina.ndarray as nd

from .._tensor_base import TensorBase, make, new


def lift(value: Any, like: TensorBase) -> TensorBase:
    """``value`` as a Tensor on ``like``'s device. A Python scalar becomes a 0-d
    tensor of ``result_type(like, value)``: a 0-d operand promotes ``like`` only to
    a higher category, so ``int_tensor * 2.5`` is float32 and ``float64 * 2.0``
    stays float64, as in PyTorch."""
    if isinstance(value, TensorBase):
        return value
    if isinstance(value, (int, float, bool)):
        dtype = nd.result_type(like._data, value)
        return make(nd.full((), value, dtype=dtype, device=like._data.device))
    return new(value, dtype=like.dtype, device=like.device)


def operands(a: Any, b: Any, op: str) -> tuple[TensorBase, TensorBase]:
    """Both operands of a binary op as Tensors (at least one must be one)."""
    if isinstance(a, TensorBase):
        return a, lift(b, a)
    if isinstance(b, TensorBase):
        return lift(a, b), b
    raise TypeError(f"{op}: expected at least one Tensor, got {type(a).__name__} "
                    f"and {type(b).__name__}")


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """``axis`` in ``range(ndim)`` (:func:`lamina.ndarray.normalize_axis`) with PyTorch's
    conventions: the argument is called ``dim``, and a 0-d tensor takes dim 0 or -1."""
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, without a call
        return axis % ndim
    return nd.normalize_axis(axis, ndim or 1, op, "dim")


def normalize_axes(dim: int | Sequence[int] | None, ndim: int, op: str) -> tuple[int, ...]:
    """Sorted, non-negative, unique axes (:func:`lamina.ndarray.normalize_axes`, with
    ``normalize_axis``'s conventions); ``None`` means every axis."""
    if dim is None:
        return tuple(range(ndim))
    return nd.normalize_axes(dim, ndim or 1, op, "dim")


class _NotGiven:
    """The default of ``axis``: ``axis=None`` (all axes) must differ from no ``axis``."""

    def __repr__(self) -> str:
        return "<not given>"


NOT_GIVEN: Any = _NotGiven()


def reduction_args(op: str, dim: Any, keepdim: bool, axis: Any, keepdims: bool | None,
                   default: Any = None) -> tuple[Any, bool]:
    """PyTorch's ``dim``/``keepdim`` or numpy's ``axis``/``keepdims`` (torch takes both)."""
    if axis is not NOT_GIVEN:
        if dim is not default:
            raise TypeError(f"{op}: got both dim={dim!r} and axis={axis!r}; pass one of them")
        dim = axis
    if keepdims is not None:
        if keepdim and not keepdims:
            raise TypeError(f"{op}: got both keepdim=True and keepdims=False; pass one of them")
        keepdim = bool(keepdims)
    return dim, keepdim


def reduction_axes(dim: int | Sequence[int] | None, ndim: int, op: str) -> tuple[int, ...]:
    """The axes a reduction sums over: ``None`` and ``()`` mean all of them, as in PyTorch."""
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None
    axes = normalize_axes(dim, ndim, op)
    return axes if ndim else ()  # a 0-d tensor takes dim 0 or -1 and has nothing to reduce


def shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both mean the shape ``(2, 3)``."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        return tuple(shape[0])
    return tuple(shape)


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with each reduced axis kept as size 1 (``keepdim=True``)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def as_tensors(grads: Sequence[Any]) -> tuple[TensorBase | None, ...]:
    """A fused op's gradients as Tensors. Its one backward rule runs on NDArrays for a
    first-order backward (no graph, so no Tensor per step) and on Tensors with
    ``create_graph``: NDArrays are wrapped, Tensors and None pass through."""
    out = []
    for g in grads:  # a loop, not a generator: one Python call fewer per gradient
        out.append(g if g is None or isinstance(g, TensorBase) else make(g))
    return tuple(out)
