"""``F.pad`` and the padding modules, as in ``torch.nn`` / ``torch.nn.functional``.

``pad`` lists (before, after) pairs last dim first, as PyTorch does; negative
entries crop. Every mode is a composition of differentiable ops: constant
padding is :func:`lamina.autograd.pad` (zeros, after cropping by slicing) plus
the fill value outside the input; reflect, replicate and circular padding
gather each padded dim with ``index_select`` at indices computed here, so the
gradient of a repeated element is the sum over its copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError
from ._module import Module

__all__ = [
    "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d", "pad",
]

_MODES = ("constant", "reflect", "replicate", "circular")
_Pairs = list[tuple[int, int, int]]  # (dim, before, after), one per padded dim


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pads (or, with negative entries, crops) the last ``len(pad) // 2`` dims.

    Args:
        input: (*, D_k, ..., D_1): any shape for ``"constant"``; for the other
            modes (C, D_1) or (N, C, D_1) with 2 entries, (C, D_2, D_1) or
            (N, C, D_2, D_1) with 4, (C, D_3, D_2, D_1) or (N, ...) with 6.
        pad: ``(before_1, after_1, before_2, after_2, ...)`` for the last dim,
            then the one before it, and so on (PyTorch's order).
        mode: ``"constant"`` (fill with ``value``), ``"reflect"`` (mirror
            without repeating the edge), ``"replicate"`` (repeat the edge) or
            ``"circular"`` (wrap around).
        value: the fill of ``"constant"`` mode (default 0).

    Returns:
        D_i + before_i + after_i along each padded dim; the other dims unchanged.

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([[1.0, 2.0, 3.0]])
        >>> pad(x, (2, 1), mode="reflect").tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    pairs = _pairs(input, pad, mode)
    if mode == "constant":
        return _constant(input, pairs, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise ValueError(f"F.pad: padding mode {mode!r} doesn't take a value argument (got "
                         f"{value}); drop it or use mode='constant'")
    _check_non_constant(tuple(input.shape), pad, mode)
    if mode == "circular":
        return _circular(input, pairs)
    shape = tuple(input.shape)
    for dim, before, after in pairs:
        n = shape[dim]
        if mode == "reflect" and (before >= n or after >= n):
            raise ShapeError(f"F.pad: reflect pad ({before}, {after}) must be less than the "
                             f"size {n} of dim {dim} of input {shape}")
        _check_size(shape, dim, before, after, 1)
        index = np.arange(-before, n + after)
        index = np.abs(index) if mode == "reflect" else np.clip(index, 0, n - 1)
        if mode == "reflect":  # mirror the far end too: n - 1 + k -> n - 1 - k
            index = np.where(index > n - 1, 2 * (n - 1) - index, index)
        input = _take(input, dim, index)
    return input


def _pairs(x: Tensor, pad: Sequence[int], mode: str) -> _Pairs:
    """``pad`` as (dim, before, after) triples, after checking its type and length."""
    if not isinstance(mode, str):
        raise TypeError(f"F.pad: mode must be a str, one of {_MODES}, got {mode!r}")
    if mode not in _MODES:
        raise ValueError(f"F.pad: unknown padding mode {mode!r}; use one of {_MODES}")
    values = tuple(pad)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"F.pad: pad must be a tuple of ints, got {type(v).__name__} "
                            f"{v!r} at position {i} of {values}")
    if len(values) % 2:
        raise ValueError(f"F.pad: pad {values} has odd length {len(values)}; it needs one "
                         f"(before, after) pair per padded dim")
    if len(values) > 2 * x.ndim:
        raise ValueError(f"F.pad: pad {values} pads {len(values) // 2} dims but the input "
                         f"{tuple(x.shape)} has only {x.ndim}; pass at most {2 * x.ndim} "
                         f"values")
    return [(x.ndim - 1 - i, int(values[2 * i]), int(values[2 * i + 1]))
            for i in range(len(values) // 2)]


def _check_non_constant(shape: tuple[int, ...], pad: Sequence[int], mode: str) -> None:
    """PyTorch's rules for reflect / replicate / circular padding."""
    k = len(pad) // 2
    if k not in (1, 2, 3) or len(shape) not in (k + 1, k + 2):
        raise ValueError(f"F.pad: mode {mode!r} with {len(pad)} pad values needs a "
                         f"{k + 1}-D or {k + 2}-D (batched) input, got shape {shape}; "
                         f"pad 1, 2 or 3 trailing dims of (C, *) or (N, C, *)")
    if mode != "circular" and 0 in shape[len(shape) - k - 1:]:
        raise ShapeError(f"F.pad: mode {mode!r} needs non-empty dims apart from the batch, "
                         f"got input of shape {shape}")


def _check_size(shape: tuple[int, ...], dim: int, before: int, after: int,
                least: int) -> None:
    if shape[dim] + before + after < least:
        raise ShapeError(f"F.pad: pad ({before}, {after}) leaves "
                         f"{shape[dim] + before + after} elements of dim {dim} of input "
                         f"{shape}; it must keep at least {least}")


def _crop(x: Tensor, pairs: _Pairs) -> Tensor:
    """``x`` without the elements that negative pads remove."""
    key = [slice(None)] * x.ndim
    for dim, before, after in pairs:
        key[dim] = slice(max(-before, 0), x.shape[dim] - max(-after, 0))
    return x[tuple(key)]


def _constant(x: Tensor, pairs: _Pairs, value: float) -> Tensor:
    shape = tuple(x.shape)
    for dim, before, after in pairs:
        _check_size(shape, dim, before, after, 0)
    x = _crop(x, pairs)
    width = [(0, 0)] * x.ndim
    for dim, before, after in pairs:
        width[dim] = (max(before, 0), max(after, 0))
    out = ag.pad(x, width)
    if value == 0:
        return out
    # The fill is a constant added outside the input (inside it adds exactly 0).
    fill = np.full(out.shape, value, dtype=x.dtype.np)
    fill[tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, width))] = 0
    return out + Tensor(nd.array(fill, dtype=x.dtype, device=x.device))


def _circular(x: Tensor, pairs: _Pairs) -> Tensor:
    # PyTorch crops first, then wraps around what is left.
    shape = tuple(x.shape)
    for dim, before, after in pairs:
        if before > shape[dim] or after > shape[dim]:
            raise ShapeError(f"F.pad: circular pad ({before}, {after}) wraps around dim "
                             f"{dim} of input {shape} more than once; pad at most "
                             f"{shape[dim]}")
        _check_size(shape, dim, before, after, 0)
    x = _crop(x, pairs)
    for dim, before, after in pairs:
        n = x.shape[dim]
        before, after = max(before, 0), max(after, 0)
        if before > n or after > n:
            raise ShapeError(f"F.pad: circular pad ({before}, {after}) wraps around dim {dim} "
                             f"more than once: only {n} elements are left after cropping "
                             f"input {shape}")
        x = _take(x, dim, np.arange(-before, n + after) % max(n, 1))
    return x


def _take(x: Tensor, dim: int, index: np.ndarray) -> Tensor:
    return ag.index_select(x, dim, Tensor(nd.array(index.astype(np.int64), dtype=nd.int64,
                                                   device=x.device)))


# ----- modules -----------------------------------------------------------------------------

class _Pad(Module):
    """Pads with ``F.pad(x, self.padding, mode)``; ``padding`` an int (every side) or tuple."""

    mode = "constant"
    sides = 2

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding: tuple[Any, ...] = ((padding,) * self.sides if isinstance(padding, int)
                                         else tuple(padding))

    def forward(self, x: Tensor) -> Tensor:
        return pad(x, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_Pad):
    """Pads with ``value``; the base of ConstantPad1d/2d and ZeroPad1d/2d."""

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        return pad(x, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad):
    """Pads the last dim with ``value``: (*, W) -> (*, W + left + right).

    Args:
        padding: an int (both sides) or ``(left, right)``; negative crops.
        value: the fill.
    """


class ConstantPad2d(_ConstantPad):
    """Pads the last two dims with ``value``: (*, H, W) -> (*, H + top + bottom, W + ...).

    Args:
        padding: an int (every side) or ``(left, right, top, bottom)``.
        value: the fill.
    """

    sides = 4


class _ZeroPad(_ConstantPad):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad):
    """Pads the last dim with zeros; ``padding`` an int or ``(left, right)``."""


class ZeroPad2d(_ZeroPad):
    """Pads the last two dims with zeros; ``padding`` an int or ``(left, right, top, bottom)``."""

    sides = 4


class ReflectionPad1d(_Pad):
    """Mirrors (C, W) or (N, C, W) at both ends, the edge not repeated; pads < W."""

    mode = "reflect"


class ReflectionPad2d(_Pad):
    """Mirrors the last two dims of (C, H, W) or (N, C, H, W); ``(left, right, top, bottom)``."""

    mode = "reflect"
    sides = 4


class ReplicationPad1d(_Pad):
    """Repeats the edge values of (C, W) or (N, C, W); ``padding`` an int or ``(left, right)``."""

    mode = "replicate"


class ReplicationPad2d(_Pad):
    """Repeats the edges of (C, H, W) or (N, C, H, W); ``(left, right, top, bottom)``."""

    mode = "replicate"
    sides = 4


class CircularPad1d(_Pad):
    """Wraps (C, W) or (N, C, W) around: the left pad is the end of the input, and so on."""

    mode = "circular"


class CircularPad2d(_Pad):
    """Wraps the last two dims of (C, H, W) or (N, C, H, W) around."""

    mode = "circular"
    sides = 4
