"""Conv1d, Conv2d and ConvTranspose2d over NCL / NCHW inputs (PyTorch's layouts).

The arithmetic lives in :func:`lamina.autograd.conv2d` (im2col, one GEMM,
col2im in the backward pass, using the backend's native im2col/col2im when it
has them) and :func:`lamina.autograd.conv_transpose2d` (one GEMM, then
col2im). Conv1d is conv2d over an added height axis of size 1. These layers
own the parameters, PyTorch's default initialisation, ``padding="same"`` and
the input checks that name the layer.
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

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d", "conv1d", "conv2d", "conv_transpose2d"]

Pair = tuple[int, int]


def same_padding(kernel_size: Pair, dilation: Pair) -> tuple[Pair, Pair]:
    """Per-side padding ((top, bottom), (left, right)) that keeps H and W at stride 1.

    An even effective kernel pads one more at the end, as PyTorch does.
    """
    total = [d * (k - 1) for k, d in zip(kernel_size, dilation)]
    return (total[0] // 2, total[0] - total[0] // 2), (total[1] // 2, total[1] - total[1] // 2)


def _single(value: Any, op: str, name: str, minimum: int) -> int:
    """``value`` (an int or a 1-tuple) as an int ``>= minimum``."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    if (len(items) != 1 or not isinstance(items[0], int) or isinstance(items[0], bool)
            or items[0] < minimum):
        raise ValueError(f"{op}: {name} must be an int >= {minimum} or a 1-tuple of one, "
                         f"got {value!r}")
    return int(items[0])


def _check_groups(op: str, groups: Any) -> int:
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    return groups


def _check_channels(name: str, in_channels: Any, out_channels: Any, groups: Any) -> None:
    """Positive int channel counts, both divisible by a positive int ``groups`` (as torch)."""
    _check_groups(name, groups)
    for arg, value in (("in_channels", in_channels), ("out_channels", out_channels)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}")
        if value % groups:
            raise ValueError(f"{name}: {arg}={value} must be divisible by groups={groups}; "
                             f"pick groups dividing both in_channels and out_channels")


def _groups_repr(text: str, groups: int, bias: Any) -> str:
    """torch's extra_repr tail: groups when not 1, then bias=False when there is none."""
    if groups != 1:
        text += f", groups={groups}"
    return text + (", bias=False" if bias is None else "")


def _reset_conv(weight: Parameter, bias: Parameter | None) -> None:
    """PyTorch's default: kaiming_uniform_(a=sqrt(5)) and U(-1/sqrt(fan_in), ...) for bias."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1.0 / math.sqrt(math.prod(weight.shape[1:]))
        init.uniform_(bias, -bound, bound)


def _padding_1d(op: str, padding: Any, stride: int, reach: int) -> Pair:
    """(left, right) zero padding of conv1d from an int, a 1-tuple, "same" or "valid"."""
    if padding == "valid":
        return (0, 0)
    if padding == "same":
        if stride != 1:
            raise ValueError(f"{op}: padding='same' needs stride 1, got stride={stride}")
        return ((reach - 1) // 2, reach - 1 - (reach - 1) // 2)
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be 'same', 'valid' or an int, got {padding!r}")
    p = _single(padding, op, "padding", 0)
    return (p, p)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``.

    Args:
        x: (N, C_in, H, W).
        weight: (C_out, C_in/groups, KH, KW).
        bias: (C_out,) or None.
        stride, dilation: an int or a pair.
        padding: an int, a pair, ``"valid"``, ``"same"`` (stride 1), or per-side
            pairs ``((top, bottom), (left, right))``.
        groups: split the channels into this many groups, each convolved with its
            own C_out/groups filters (groups=C_in: depthwise); divides C_in and C_out.

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
    return ag.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                     groups=groups)


class Conv2d(Module):
    """2-D cross-correlation: ``out[n, o] = bias[o] + sum_c weight[o, c] * x[n, c]``.

    Weight and bias start as PyTorch's defaults: ``kaiming_uniform_(a=sqrt(5))``
    for the weight, i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
    ``fan_in = C_in/groups * KH * KW``, and the same bound for the bias.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: an int or an (KH, KW) pair.
        stride: an int or a pair (>= 1).
        padding: an int or a pair of zero paddings, or ``"same"`` (stride 1 only)
            or ``"valid"`` (no padding).
        dilation: an int or a pair (>= 1).
        groups: split the channels into this many groups that do not see each other
            (C_in for a depthwise convolution); divides C_in and C_out.
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
        _check_channels(name, in_channels, out_channels, groups)
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
        self.weight = Parameter(nd.zeros(out_channels, in_channels // groups,
                                         *self.kernel_size, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(nd.zeros(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default initialisation."""
        _reset_conv(self.weight, self.bias)

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
        return conv2d(x, self.weight, self.bias, self.stride, pads, self.dilation,
                      self.groups)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):
            text += f", padding={self.padding!r}" if isinstance(self.padding, str) \
                else f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        return _groups_repr(text, self.groups, self.bias)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D cross-correlation, as ``torch.nn.functional.conv1d``.

    Runs as conv2d over an added height axis of size 1.

    Args:
        x: (N, C_in, L), or unbatched (C_in, L).
        weight: (C_out, C_in/groups, K).
        bias: (C_out,) or None.
        stride, dilation: an int (or a 1-tuple).
        padding: an int (or a 1-tuple), ``"valid"`` or ``"same"`` (stride 1).
        groups: channel groups that do not see each other; divides C_in and C_out.

    Returns:
        (N, C_out, OL) (or (C_out, OL)) with ``OL = (L + 2*padding - dilation*(K-1) - 1)
        // stride + 1``.
    """
    op = "conv1d"
    _check_groups(op, groups)
    unbatched = x.ndim == 2
    xb = x.unsqueeze(0) if unbatched else x
    if weight.ndim != 3 or xb.ndim != 3 or xb.shape[1] != weight.shape[1] * groups:
        per_group = "C_in" if groups == 1 else f"C_in/groups, with groups={groups},"
        raise ShapeError(f"{op}: input {tuple(x.shape)} (N, C_in, L) or (C_in, L) and weight "
                         f"{tuple(weight.shape)} (C_out, {per_group} K) must have the same "
                         f"C_in")
    if weight.shape[0] % groups:
        raise ShapeError(f"{op}: weight {tuple(weight.shape)} has C_out={weight.shape[0]}, "
                         f"not divisible by groups={groups}; use C_out a multiple of groups")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{op}: bias has shape {tuple(bias.shape)}, expected "
                         f"({weight.shape[0]},) for weight {tuple(weight.shape)}")
    s = _single(stride, op, "stride", 1)
    d = _single(dilation, op, "dilation", 1)
    reach = d * (weight.shape[2] - 1) + 1
    pads = _padding_1d(op, padding, s, reach)
    if reach > xb.shape[2] + sum(pads):
        raise ShapeError(f"{op}: kernel {weight.shape[2]} (dilation {d}, reach {reach}) is "
                         f"larger than the padded length {xb.shape[2] + sum(pads)} of input "
                         f"shape {tuple(x.shape)}; pad the input or use a smaller kernel")
    out = conv2d(xb.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), ((0, 0), pads),
                 (1, d), groups).squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """Transposed 2-D convolution, as ``torch.nn.functional.conv_transpose2d``.

    Args:
        x: (N, C_in, H, W), or unbatched (C_in, H, W).
        weight: (C_in, C_out/groups, KH, KW).
        bias: (C_out,) or None.
        stride, padding, output_padding, dilation: an int or a pair each.
        groups: channel groups that do not see each other; divides C_in and C_out.

    Returns:
        (N, C_out, OH, OW) with ``OH = (H-1)*stride - 2*padding + dilation*(KH-1)
        + output_padding + 1``.
    """
    unbatched = x.ndim == 3
    out = ag.conv_transpose2d(x.unsqueeze(0) if unbatched else x, weight, bias, stride,
                              padding, output_padding, groups, dilation)
    return out.squeeze(0) if unbatched else out


class Conv1d(Module):
    """1-D cross-correlation over (N, C, L) sequences, PyTorch's layout and init.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: K, an int.
        stride: an int (>= 1).
        padding: an int, ``"same"`` (stride 1 only) or ``"valid"``.
        dilation: an int (>= 1).
        groups: channel groups that do not see each other (C_in: depthwise); divides
            C_in and C_out.
        bias: learn an additive bias per output channel.
        device: where the parameters live (default device when None).
        dtype: parameter dtype (float32 when None).

    Shape:
        input (N, C_in, L) or (C_in, L) -> output (N, C_out, OL) or (C_out, OL) with
        ``OL = (L + 2*padding - dilation*(K-1) - 1) // stride + 1``.

    Example:
        >>> from lamina import autograd
        >>> Conv1d(3, 8, 5, padding=2)(autograd.ones(2, 3, 10)).shape
        (2, 8, 10)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        name = "Conv1d"
        _check_channels(name, in_channels, out_channels, groups)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = (_single(kernel_size, name, "kernel_size", 1),)
        self.stride = (_single(stride, name, "stride", 1),)
        self.dilation = (_single(dilation, name, "dilation", 1),)
        _padding_1d(name, padding, self.stride[0], 1)  # checks the value
        self.padding: tuple[int] | str = (
            padding if isinstance(padding, str) else (_single(padding, name, "padding", 0),))
        dtype = dtype or nd.float32
        self.weight = Parameter(nd.zeros(out_channels, in_channels // groups,
                                         self.kernel_size[0], dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(nd.zeros(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default initialisation."""
        _reset_conv(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if len(shape) not in (2, 3) or shape[-2] != self.in_channels:
            raise ShapeError(f"{self!r}: expected input of shape (N, {self.in_channels}, L) "
                             f"or ({self.in_channels}, L), got {shape}")
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return conv1d(x, self.weight, self.bias, self.stride[0], padding, self.dilation[0],
                      self.groups)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,):
            text += f", padding={self.padding!r}"
        if self.dilation != (1,):
            text += f", dilation={self.dilation}"
        return _groups_repr(text, self.groups, self.bias)


class ConvTranspose2d(Module):
    """Transposed 2-D convolution (the adjoint of Conv2d), PyTorch's layout and init.

    The weight is (C_in, C_out/groups, KH, KW), as in PyTorch; its default init is
    ``kaiming_uniform_(a=sqrt(5))``, whose fan_in is then ``C_out/groups * KH * KW``.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: an int or an (KH, KW) pair.
        stride: an int or a pair (>= 1).
        padding: an int or a pair: rows and columns cropped from each border.
        output_padding: an int or a pair added at the bottom and right, smaller
            than stride or dilation (to pick among the output sizes a stride allows).
        groups: channel groups that do not see each other; divides C_in and C_out.
        dilation: an int or a pair (>= 1).
        bias: learn an additive bias per output channel.
        device: where the parameters live (default device when None).
        dtype: parameter dtype (float32 when None).

    Shape:
        input (N, C_in, H, W) or (C_in, H, W) -> output (N, C_out, OH, OW) with
        ``OH = (H-1)*stride - 2*padding + dilation*(KH-1) + output_padding + 1``;
        ``forward(x, output_size)`` picks output_padding to reach ``output_size``.

    Example:
        >>> from lamina import autograd
        >>> up = ConvTranspose2d(8, 3, 4, stride=2, padding=1)
        >>> up(autograd.ones(2, 8, 5, 5)).shape
        (2, 3, 10, 10)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        name = "ConvTranspose2d"
        _check_channels(name, in_channels, out_channels, groups)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = pair(kernel_size, name, "kernel_size", 1)
        self.stride = pair(stride, name, "stride", 1)
        self.padding = pair(padding, name, "padding", 0)
        self.output_padding = pair(output_padding, name, "output_padding", 0)
        self.dilation = pair(dilation, name, "dilation", 1)
        if any(e >= max(s, d) for e, s, d in zip(self.output_padding, self.stride,
                                                 self.dilation)):
            raise ValueError(f"{name}: output_padding {self.output_padding} must be smaller "
                             f"than either stride {self.stride} or dilation {self.dilation}")
        dtype = dtype or nd.float32
        self.weight = Parameter(nd.zeros(in_channels, out_channels // groups,
                                         *self.kernel_size, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(nd.zeros(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default initialisation."""
        _reset_conv(self.weight, self.bias)

    def _output_padding(self, shape: tuple[int, ...], output_size: Any) -> Pair:
        """The output_padding that gives ``output_size`` ((OH, OW), optionally after N, C)."""
        if output_size is None:
            return self.output_padding
        size = tuple(output_size)[-2:]
        lows = [(n - 1) * s - 2 * p + d * (k - 1) + 1 for n, s, p, d, k in zip(
            shape[-2:], self.stride, self.padding, self.dilation, self.kernel_size)]
        highs = [low + s - 1 for low, s in zip(lows, self.stride)]
        if len(size) != 2 or any(not lo <= n <= hi for n, lo, hi in zip(size, lows, highs)):
            raise ValueError(f"{self!r}: requested output_size {tuple(output_size)} for input "
                             f"{shape}, but valid sizes range from {tuple(lows)} to "
                             f"{tuple(highs)}; pick one in that range")
        return (size[0] - lows[0], size[1] - lows[1])

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        shape = tuple(x.shape)
        if len(shape) not in (3, 4) or shape[-3] != self.in_channels:
            raise ShapeError(f"{self!r}: expected input of shape (N, {self.in_channels}, H, W) "
                             f"or ({self.in_channels}, H, W), got {shape}")
        return conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(shape, output_size), self.groups,
                                self.dilation)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0, 0):
            text += f", output_padding={self.output_padding}"
        return _groups_repr(text, self.groups, self.bias)
