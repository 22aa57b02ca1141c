"""Pooling over NCHW images: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d.

Max and average pooling come from :mod:`lamina.autograd` (max pooling on the
backend's max_pool2d kernels, else windows through im2col and a reduction).
Adaptive average pooling averages PyTorch's bins
``[floor(i*H/OH), ceil((i+1)*H/OH))``; a rectangle's mean is the product of
two 1-D means, so it is two small matrix products ``A_h @ x @ A_w.T`` with
no loop over pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lamina import autograd as ag
from lamina.autograd import Tensor
from lamina.ndarray import pair

from ._errors import ShapeError
from ._module import Module

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "MaxPool2d", "adaptive_avg_pool2d", "avg_pool2d",
    "max_pool2d",
]



def _check_input(layer: str, x: Tensor, kernel: tuple[int, int], padding: tuple[int, int]
                 ) -> None:
    shape = tuple(x.shape)
    if len(shape) != 4:
        raise ShapeError(f"{layer}: expected a 4-D input of shape (N, C, H, W), got {shape}")
    padded = (shape[2] + 2 * padding[0], shape[3] + 2 * padding[1])
    if kernel[0] > padded[0] or kernel[1] > padded[1]:
        raise ShapeError(f"{layer}: kernel {kernel} is larger than the padded input {padded} "
                         f"of input shape {shape}")


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over each window (padding counts as -inf); (N, C, H, W) -> (N, C, OH, OW).

    PyTorch's signature; with ``return_indices`` also the int64 offsets ``y*W + x``
    of the chosen elements (see :func:`lamina.autograd.max_pool2d`).
    """
    return ag.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Mean over each window, zeros of the padding counted; (N, C, H, W) -> (N, C, OH, OW)."""
    return ag.avg_pool2d(x, kernel_size, stride, padding)


def _bin_matrix(size: int, out: int) -> np.ndarray:
    """(out, size) rows averaging PyTorch's adaptive bins along one axis."""
    matrix = np.zeros((out, size), dtype=np.float64)
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def adaptive_avg_pool2d(x: Tensor, output_size: Any) -> Tensor:
    """Average over PyTorch's adaptive bins; (N, C, H, W) -> (N, C, OH, OW).

    Args:
        x: (N, C, H, W).
        output_size: OH and OW, an int or a pair; None in the pair keeps that size.
    """
    if len(x.shape) != 4:
        raise ShapeError(f"adaptive_avg_pool2d: expected a 4-D input of shape (N, C, H, W), "
                         f"got {tuple(x.shape)}")
    h, w = x.shape[2:]
    size = (output_size, output_size) if not isinstance(output_size, (tuple, list)) \
        else tuple(output_size)
    oh, ow = (h if size[0] is None else size[0]), (w if size[1] is None else size[1])
    if not all(isinstance(v, int) and v >= 1 for v in (oh, ow)):
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive ints, "
                         f"got {output_size!r}")
    if (oh, ow) == (1, 1):
        return x.mean((2, 3), keepdim=True)
    if h % oh == 0 and w % ow == 0:
        return ag.avg_pool2d(x, (h // oh, w // ow))
    dtype, device = x._data.dtype, x._data.device
    rows = ag.tensor(_bin_matrix(h, oh), dtype=dtype, device=device)
    cols = ag.tensor(_bin_matrix(w, ow).T, dtype=dtype, device=device)
    return rows @ (x @ cols)


class _Pool2d(Module):
    """What MaxPool2d and AvgPool2d share: kernel_size, stride and padding, checked."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = pair(kernel_size, name, "kernel_size", 1)
        self.stride = self.kernel_size if stride is None else pair(stride, name, "stride", 1)
        self.padding = pair(padding, name, "padding", 0)
        if any(2 * p > k for p, k in zip(self.padding, self.kernel_size)):
            raise ValueError(f"{name}: padding {self.padding} should be at most half of "
                             f"kernel_size {self.kernel_size}")

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Maximum over ``kernel_size`` windows, as ``torch.nn.MaxPool2d``.

    Args:
        kernel_size: an int or a (KH, KW) pair.
        stride: an int or a pair; defaults to ``kernel_size``.
        padding: implicit -inf padding on each side, at most half the kernel.
        dilation: spacing between the window's elements, an int or a pair.
        return_indices: also return the int64 offsets ``y*W + x`` of the maxima.
        ceil_mode: round the output size up instead of down.

    Shape:
        (N, C, H, W) -> (N, C, OH, OW),
        ``OH = (H + 2*padding - dilation*(KH - 1) - 1) // stride + 1``.

    Example:
        >>> from lamina import autograd
        >>> MaxPool2d(2)(autograd.ones(1, 3, 8, 8)).shape
        (1, 3, 4, 4)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = pair(dilation, type(self).__name__, "dilation", 1)
        self.return_indices, self.ceil_mode = bool(return_indices), bool(ceil_mode)

    def forward(self, x: Tensor) -> Any:
        reach = tuple(d * (k - 1) + 1 for d, k in zip(self.dilation, self.kernel_size))
        _check_input(repr(self), x, reach, self.padding)
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"{super().extra_repr()}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class AvgPool2d(_Pool2d):
    """Mean over ``kernel_size`` windows, zero padding included in the count.

    Args:
        kernel_size: an int or a (KH, KW) pair.
        stride: an int or a pair; defaults to ``kernel_size``.
        padding: implicit zero padding on each side, at most half the kernel.

    Shape:
        (N, C, H, W) -> (N, C, OH, OW), ``OH = (H + 2*padding - KH) // stride + 1``.
    """

    def forward(self, x: Tensor) -> Tensor:
        _check_input(repr(self), x, self.kernel_size, self.padding)
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class AdaptiveAvgPool2d(Module):
    """Average into a fixed output size, whatever the input's H and W.

    Args:
        output_size: (OH, OW), or one int for both; ``1`` is global average pooling.

    Shape:
        (N, C, H, W) -> (N, C, OH, OW).
    """

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        if len(x.shape) != 4:
            raise ShapeError(f"{self!r}: expected a 4-D input of shape (N, C, H, W), "
                             f"got {tuple(x.shape)}")
        return adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size!r}"
