"""Conv2d: 2-D convolution over NCHW images with OIHW weights.

The arithmetic lives in :func:`lamina.autograd.conv2d` (im2col, one GEMM,
col2im in the backward pass, using the backend's native im2col/col2im when it
has them). This layer owns the parameters, PyTorch's default initialisation,
``padding="same"`` and the input checks that name the layer.
"""

from __future__ import annotations

import math
from typing import Any

from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor
from lamina.ndarray import pair

from . import init
from ._errors import ShapeError
from ._module import Module
from ._parameter import Parameter

__all__ = ["Conv2d", "conv2d"]

Pair = tuple[int, int]



def same_padding(kernel_size: Pair, dilation: Pair) -> tuple[Pair, Pair]:
    """Per-side padding ((top, bottom), (left, right)) that keeps H and W at stride 1.

    An even effective kernel pads one more at the end, as PyTorch does.
    """
    total = [d * (k - 1) for k, d in zip(kernel_size, dilation)]
    return (total[0] // 2, total[0] - total[0] // 2), (total[1] // 2, total[1] - total[1] // 2)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1) -> Tensor:
    """2-D cross-correlation, as ``torch.nn.functional.conv2d`` with ``groups=1``.

    Args:
        x: (N, C_in, H, W).
        weight: (C_out, C_in, KH, KW).
        bias: (C_out,) or None.
        stride, dilation: an int or a pair.
        padding: an int, a pair, ``"valid"``, ``"same"`` (stride 1), or per-side
            pairs ``((top, bottom), (left, right))``.

    Returns:
        (N, C_out, OH, OW).
    """
    if padding == "valid":
        padding = 0
    elif padding == "same":
        k = tuple(weight.shape[2:])
        padding = same_padding((k[0], k[1]), pair(dilation, "conv2d", "dilation", 1))
    if not isinstance(padding, int) and isinstance(padding[0], tuple):
        (top, bottom), (left, right) = padding
        if top == bottom and left == right:
            padding = (top, left)
        else:
            # Uneven "same" padding: pad explicitly, then convolve without padding.
            x = ag.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
            padding = 0
    return ag.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation)


class Conv2d(Module):
    """2-D cross-correlation: ``out[n, o] = bias[o] + sum_c weight[o, c] * x[n, c]``.

    Weight and bias start as PyTorch's defaults: ``kaiming_uniform_(a=sqrt(5))``
    for the weight, i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
    ``fan_in = C_in * KH * KW``, and the same bound for the bias.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: an int or an (KH, KW) pair.
        stride: an int or a pair (>= 1).
        padding: an int or a pair of zero paddings, or ``"same"`` (stride 1 only)
            or ``"valid"`` (no padding).
        dilation: an int or a pair (>= 1).
        bias: learn an additive bias per output channel.
        device: where the parameters live (default device when None).
        dtype: parameter dtype (float32 when None).

    Shape:
        input (N, C_in, H, W) -> output (N, C_out, OH, OW) with
        ``OH = (H + 2*padding - dilation*(KH-1) - 1) // stride + 1``.

    Example:
        >>> from lamina import autograd
        >>> Conv2d(3, 16, 3, padding=1)(autograd.ones(2, 3, 8, 8)).shape
        (2, 16, 8, 8)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        name = "Conv2d"
        if groups != 1:
            raise ValueError(f"{name}: only groups=1 is supported, got groups={groups}")
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = pair(kernel_size, name, "kernel_size", 1)
        self.stride = pair(stride, name, "stride", 1)
        self.dilation = pair(dilation, name, "dilation", 1)
        self.groups = groups
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid', an int or a pair, "
                                 f"got {padding!r}")
            if padding == "same" and self.stride != (1, 1):
                raise ValueError(f"{name}: padding='same' needs stride 1, got {self.stride}")
            self.padding: Pair | str = padding
        else:
            self.padding = pair(padding, name, "padding", 0)
        dtype = dtype or nd.float32
        self.weight = Parameter(nd.zeros(out_channels, in_channels, *self.kernel_size,
                                         dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(nd.zeros(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default initialisation."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_channels * math.prod(self.kernel_size))
            init.uniform_(self.bias, -bound, bound)

    def _padding_pair(self) -> Pair | tuple[Pair, Pair]:
        if self.padding == "valid":
            return (0, 0)
        if self.padding == "same":
            return same_padding(self.kernel_size, self.dilation)
        return self.padding  # type: ignore[return-value]

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if len(shape) != 4 or shape[1] != self.in_channels:
            raise ShapeError(f"{self!r}: expected input of shape (N, {self.in_channels}, H, W), "
                             f"got {shape}")
        pads = self._padding_pair()
        if isinstance(pads[0], tuple):
            (top, bottom), (left, right) = pads
            padded = (shape[2] + top + bottom, shape[3] + left + right)
        else:
            padded = (shape[2] + 2 * pads[0], shape[3] + 2 * pads[1])
        reach = [d * (k - 1) + 1 for k, d in zip(self.kernel_size, self.dilation)]
        if reach[0] > padded[0] or reach[1] > padded[1]:
            raise ShapeError(f"{self!r}: kernel {self.kernel_size} (dilation {self.dilation}, "
                             f"reach {tuple(reach)}) is larger than the padded input "
                             f"{padded} of input shape {shape}")
        return conv2d(x, self.weight, self.bias, self.stride, pads, self.dilation)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):
            text += f", padding={self.padding!r}" if isinstance(self.padding, str) \
                else f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.bias is None:
            text += ", bias=False"
        return text
