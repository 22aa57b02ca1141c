"""Pooling over (N, C, L) sequences: MaxPool1d, AvgPool1d and AdaptiveAvgPool1d.

The window arithmetic (padding, dilation, ``ceil_mode``, the divisor of
``count_include_pad``) is PyTorch's, done on indices in numpy. Average
pooling is then linear, ``x @ W.T`` with an (L, OL) matrix of window weights;
max pooling gathers every window with ``index_select`` and takes ``amax``.
A window position outside the input points at another element of the same
window instead, which leaves the maximum and its gradient unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError
from ._module import Module
from ._pooling import _bin_matrix

__all__ = [
    "AdaptiveAvgPool1d", "AvgPool1d", "MaxPool1d", "adaptive_avg_pool1d", "avg_pool1d",
    "max_pool1d",
]


def _single(value: Any, op: str, name: str, minimum: int) -> int:
    """An int, or a 1-tuple of one, that is at least ``minimum``."""
    item = value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value
    if not isinstance(item, int) or isinstance(item, bool) or item < minimum:
        raise ValueError(f"{op}: {name} must be an int >= {minimum} or a 1-tuple of one, "
                         f"got {value!r}")
    return item


def _check_input(op: str, x: Tensor) -> int:
    if len(x.shape) not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape "
                         f"{tuple(x.shape)}")
    return int(x.shape[-1])


def _output_length(op: str, length: int, span: int, stride: int, padding: int,
                   ceil_mode: bool) -> int:
    """PyTorch's ``pooling_output_shape``: a last window must start inside the input."""
    extra = stride - 1 if ceil_mode else 0
    out = (length + 2 * padding - span + extra) // stride + 1
    if ceil_mode and (out - 1) * stride >= length + padding:
        out -= 1
    if out < 1:
        raise ShapeError(f"{op}: input length {length} with padding {padding} is shorter "
                         f"than the kernel span {span}; use a smaller kernel or more padding")
    return out


def _args(op: str, kernel_size: Any, stride: Any, padding: Any) -> tuple[int, int, int]:
    kernel = _single(kernel_size, op, "kernel_size", 1)
    step = kernel if stride is None or stride == () else _single(stride, op, "stride", 1)
    pad = _single(padding, op, "padding", 0)
    if 2 * pad > kernel:
        raise ValueError(f"{op}: padding {pad} should be at most half of kernel_size "
                         f"{kernel}; lower the padding")
    return kernel, step, pad


def _index(x: Tensor, index: np.ndarray) -> Tensor:
    return Tensor(nd.array(index.astype(np.int64), dtype=nd.int64, device=x.device))


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False
               ) -> Any:
    """Maximum over each window of (C, L) or (N, C, L); padding never wins.

    Args:
        input: (N, C, L) or (C, L).
        kernel_size: window length K.
        stride: step between windows; defaults to ``kernel_size``.
        padding: implicit -inf on each side, at most ``K // 2``.
        dilation: step between a window's elements.
        ceil_mode: round the output length up (a last, partial window).
        return_indices: also return each maximum's position in L (int64).

    Returns:
        (N, C, OL), or (values, indices) with ``return_indices``.

    Example:
        >>> from lamina import autograd
        >>> max_pool1d(autograd.tensor([[1.0, 3.0, 2.0, 5.0, 4.0]]), 2).tolist()
        [[3.0, 5.0]]
    """
    kernel, step, pad = _args("max_pool1d", kernel_size, stride, padding)
    dil = _single(dilation, "max_pool1d", "dilation", 1)
    length = _check_input("max_pool1d", input)
    out = _output_length("max_pool1d", length, dil * (kernel - 1) + 1, step, pad, ceil_mode)
    table = (np.arange(out) * step - pad)[:, None] + np.arange(kernel)[None, :] * dil
    valid = (table >= 0) & (table < length)
    first = table[np.arange(out), valid.argmax(axis=1)]
    table = np.where(valid, table, first[:, None])
    windows = ag.index_select(input, -1, _index(input, table.reshape(-1)))
    windows = windows.reshape(*input.shape[:-1], out, kernel)
    values = windows.amax(-1)
    if not return_indices:
        return values
    where = windows.argmax(-1, keepdim=True)
    positions = _index(input, table).expand(*windows.shape)
    return values, positions.gather(-1, where).squeeze(-1)


def _avg_matrix(length: int, out: int, kernel: int, step: int, pad: int,
                count_include_pad: bool) -> np.ndarray:
    """(out, length) window weights with PyTorch's divisor per window."""
    matrix = np.zeros((out, length), dtype=np.float64)
    for o in range(out):
        start = o * step - pad
        end = min(start + kernel, length + pad)
        size = end - start  # the window clipped to the padded input
        start, end = max(start, 0), min(end, length)
        matrix[o, start:end] = 1.0 / (size if count_include_pad else end - start)
    return matrix


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over each window of (C, L) or (N, C, L).

    Args:
        input: (N, C, L) or (C, L).
        kernel_size: window length K.
        stride: step between windows; defaults to ``kernel_size``.
        padding: implicit zeros on each side, at most ``K // 2``.
        ceil_mode: round the output length up (a last, partial window).
        count_include_pad: divide by the window length including the zero
            padding (True) or by the number of input elements only (False).

    Returns:
        (N, C, OL), ``OL = (L + 2*padding - K) // stride + 1`` (rounded up with
        ``ceil_mode``).

    Example:
        >>> from lamina import autograd
        >>> avg_pool1d(autograd.tensor([[1.0, 3.0, 2.0, 6.0]]), 2).tolist()
        [[2.0, 4.0]]
    """
    kernel, step, pad = _args("avg_pool1d", kernel_size, stride, padding)
    length = _check_input("avg_pool1d", input)
    out = _output_length("avg_pool1d", length, kernel, step, pad, ceil_mode)
    matrix = _avg_matrix(length, out, kernel, step, pad, count_include_pad)
    return input @ ag.tensor(matrix.T, dtype=input.dtype, device=input.device)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average over PyTorch's adaptive bins ``[floor(i*L/OL), ceil((i+1)*L/OL))``.

    Args:
        input: (N, C, L) or (C, L).
        output_size: OL, an int or a 1-tuple.

    Returns:
        (N, C, OL).

    Example:
        >>> from lamina import autograd
        >>> adaptive_avg_pool1d(autograd.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2).tolist()
        [[2.0, 4.0]]
    """
    size = _single(output_size, "adaptive_avg_pool1d", "output_size", 1)
    length = _check_input("adaptive_avg_pool1d", input)
    matrix = _bin_matrix(length, size).T
    return input @ ag.tensor(matrix, dtype=input.dtype, device=input.device)


class MaxPool1d(Module):
    """Maximum over windows of (N, C, L); arguments as :func:`max_pool1d`.

    Shape:
        (N, C, L) -> (N, C, OL), ``OL = (L + 2*padding - dilation*(K-1) - 1) // stride + 1``.

    Example:
        >>> from lamina import autograd
        >>> MaxPool1d(2)(autograd.ones(1, 3, 8)).shape
        (1, 3, 4)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool1d(Module):
    """Mean over windows of (N, C, L); arguments as :func:`avg_pool1d`.

    Shape:
        (N, C, L) -> (N, C, OL), ``OL = (L + 2*padding - K) // stride + 1``.
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        # stored as 1-tuples, as torch's AvgPool1d does (and shows in its repr)
        self.kernel_size = (kernel_size,) if isinstance(kernel_size, int) else kernel_size
        stride = kernel_size if stride is None else stride
        self.stride = (stride,) if isinstance(stride, int) else stride
        self.padding = (padding,) if isinstance(padding, int) else padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """Average (N, C, L) into ``output_size`` bins, whatever L is.

    Args:
        output_size: OL; ``1`` is global average pooling.

    Shape:
        (N, C, L) -> (N, C, OL).
    """

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size!r}"
