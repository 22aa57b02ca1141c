"""Convolution and pooling over NCHW images, built on im2col.

``im2col`` copies every receptive field of ``x (N, C, H, W)`` into
``(N, OH, OW, C, KH, KW)``; its adjoint ``col2im`` sums such patches back
into an image (overlaps add up). With that pair of primitives, conv2d is a
matrix product, conv_transpose2d a matrix product then col2im, and the pools
are reductions: compositions whose gradients
the engine derives, with no loop over pixels in Python. Where the device has the
``conv2d`` kernels, conv2d over larger maps runs on them instead (``Conv2dGemm``: a
GEMM per image on that image's patches, and its two gradients). Max pooling runs on
the backend's ``max_pool2d`` kernels where the device has them (one node whose
gradient goes to the element each window chose) and is the composite elsewhere.
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray, ShapeError, conv_output_size, pair

from .._function import FREED_MESSAGE, Function
from .._tensor_base import Tensor, TensorBase, make
from .elementwise import where
from .index import Take
from .reduce import amax
from .shape import pad

Pair = tuple[int, int]


class Im2Col(Function):
    """``(N, C, H, W)`` -> ``(N, OH, OW, C, KH, KW)`` receptive fields."""

    name = "im2col"

    def forward(self, x: NDArray, kernel: Pair, stride: Pair, padding: Pair,
                dilation: Pair) -> NDArray:
        self.params = (kernel, stride, padding, dilation)
        return nd.im2col(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (Col2Im.apply(g, input_shape=self.shapes[0], params=self.params),)


class Col2Im(Function):
    """``(N, OH, OW, C, KH, KW)`` -> ``(N, C, H, W)``, summing overlapping patches."""

    name = "col2im"

    def forward(self, cols: NDArray, input_shape: tuple[int, ...],
                params: tuple[Pair, Pair, Pair, Pair]) -> NDArray:
        self.params = params
        kernel, stride, padding, dilation = params
        return nd.col2im(cols, input_shape=input_shape, kernel=kernel, stride=stride,
                         padding=padding, dilation=dilation)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        kernel, stride, padding, dilation = self.params
        return (Im2Col.apply(g, kernel=kernel, stride=stride, padding=padding,
                             dilation=dilation),)


def _out_size(op: str, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair,
              dilation: Pair) -> Pair:
    if len(shape) != 4:
        raise ShapeError(f"{op}: expected a 4-D (N, C, H, W) input, got shape {shape}")
    out = (conv_output_size(shape[2], kernel[0], stride[0], padding[0], dilation[0]),
           conv_output_size(shape[3], kernel[1], stride[1], padding[1], dilation[1]))
    if min(out) <= 0:
        raise ShapeError(f"{op}: input of shape {shape} is too small for kernel {kernel} "
                         f"with padding {padding} and dilation {dilation}")
    return out


def _taps_inside(size: int, k: int, s: int, p: int, d: int, out: int) -> tuple[int, int]:
    """The range [t0, t1) of kernel taps that read the input (not only padding)
    at some output position: for each tap t, the first output position o with
    ``o*s - p + t*d >= 0`` must exist and read an index below ``size``."""
    used = []
    for t in range(k):
        first = max(0, -(-(p - t * d) // s))  # ceil((p - t*d) / s), at least 0
        if first < out and first * s - p + t * d < size:
            used.append(t)
    return (used[0], used[-1] + 1) if used else (0, k)


def _crop_to_input(weight: Tensor, shape: tuple[int, ...], params: tuple[Pair, ...],
                   out: Pair) -> tuple[Tensor, tuple[Pair, ...]]:
    """Drops kernel rows and columns that only ever multiply padding.

    A 3x3 convolution with padding 1 over a 1x1 image reads only its centre
    tap: its im2col would be 9x wider than needed, eight ninths zeros. The
    cropped kernel with the padding reduced by the dropped leading taps gives
    the same output positions reading the same inputs (and zero gradient to
    the dropped taps, which only saw zeros). Kept only when the output size is
    unchanged and the padding stays >= 0.
    """
    (kh, kw), stride, (ph, pw), dilation = params
    (t0, t1), (u0, u1) = (_taps_inside(shape[2 + i], (kh, kw)[i], stride[i], (ph, pw)[i],
                                       dilation[i], out[i]) for i in range(2))
    if (t0, t1, u0, u1) == (0, kh, 0, kw):
        return weight, params
    cropped = ((t1 - t0, u1 - u0), stride, (ph - t0 * dilation[0], pw - u0 * dilation[1]),
               dilation)
    try:
        if min(cropped[2]) < 0 or _out_size("conv2d", shape, *cropped) != out:
            return weight, params
    except ShapeError:
        return weight, params
    return weight[:, :, t0:t1, u0:u1], cropped


def im2col(x: Tensor, kernel: Pair, stride: Pair = (1, 1), padding: Pair = (0, 0),
           dilation: Pair = (1, 1)) -> Tensor:
    """Receptive fields of an image. Shapes: ``(N, C, H, W)`` -> ``(N, OH, OW, C, KH, KW)``."""
    _out_size("im2col", x.shape, kernel, stride, padding, dilation)
    return Im2Col.apply(x, kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                        dilation=tuple(dilation))


def _check_groups(op: str, groups: Any) -> int:
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    return groups


def _check_conv_shapes(x: Tensor, weight: Tensor, groups: int) -> None:
    """x (N, C, H, W) and weight (O, C/groups, KH, KW) with O divisible by groups."""
    if weight.ndim != 4 or x.ndim != 4 or x.shape[1] != weight.shape[1] * groups:
        want = "the same C" if groups == 1 else f"C = groups * weight.shape[1] ({groups=})"
        raise ShapeError(f"conv2d: input {x.shape} (N, C, H, W) and weight {weight.shape} "
                         f"(O, C/groups, KH, KW) must be 4-D with {want}")
    if weight.shape[0] % groups:
        raise ShapeError(f"conv2d: weight {weight.shape} has O={weight.shape[0]} output "
                         f"channels, not divisible by groups={groups}; use O a multiple "
                         f"of groups")


def _grouped_matmul(rows: Tensor, blocks: Tensor) -> Tensor:
    """(M, G*K) rows times the block-diagonal matrix of ``blocks (G, K, P)``: (M, G*P).

    One batched GEMM over the groups, (G, M, K) @ (G, K, P), instead of G convolutions.
    """
    (m, _), (g, k, p) = rows.shape, blocks.shape
    if p == 1:
        # Depthwise (one output per group): G GEMMs of width 1 run ~3x slower than a
        # multiply-and-sum, whose product is no larger than the rows.
        return (rows.reshape(m, g, k) * blocks.reshape(g, k)).sum(-1)
    per_group = rows.reshape(m, g, k).permute(1, 0, 2) @ blocks  # (G, M, P)
    return per_group.permute(1, 0, 2).reshape(m, g * p)


class Conv2dGemm(Function):
    """``x (N, C, H, W)``, ``weight (O, C, KH, KW)`` -> ``(N, O, OH, OW)``, groups 1, on the
    backend's ``conv2d`` kernels: one GEMM per image on that image's patches, which never
    exist for the whole batch at once (9x the activation for 3x3 filters).

    The two gradients are nodes too, on the kernels' gradients: each of the three is
    linear in each input, so every one's gradient is a sum of the others (gradients of
    any order)."""

    name = "conv2d_gemm"
    save_inputs = True

    def forward(self, x: NDArray, weight: NDArray, params: tuple[Pair, Pair, Pair]) -> NDArray:
        self.params = params
        return nd.conv2d(x, weight, *params)

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        x, weight = self.inputs
        need_x, need_w = self.needs_input_grad
        return (Conv2dGemmInputGrad.apply(g, weight, input_shape=x.shape, params=self.params)
                if need_x else None,
                Conv2dGemmWeightGrad.apply(x, g, weight_shape=weight.shape, params=self.params)
                if need_w else None)


class Conv2dGemmInputGrad(Function):
    """``grad (N, O, OH, OW)``, ``weight`` -> the input's gradient ``(N, C, H, W)``."""

    name = "conv2d_gemm_input_grad"
    save_inputs = True

    def forward(self, g: NDArray, weight: NDArray, input_shape: tuple[int, ...],
                params: tuple[Pair, Pair, Pair]) -> NDArray:
        self.params = params
        return nd.conv2d_backward_input(g, weight, input_shape, *params)

    def backward(self, gg: TensorBase) -> tuple[TensorBase | None, ...]:
        g, weight = self.inputs
        need_g, need_w = self.needs_input_grad
        return (Conv2dGemm.apply(gg, weight, params=self.params) if need_g else None,
                Conv2dGemmWeightGrad.apply(gg, g, weight_shape=weight.shape, params=self.params)
                if need_w else None)


class Conv2dGemmWeightGrad(Function):
    """``x``, ``grad (N, O, OH, OW)`` -> the filters' gradient ``(O, C, KH, KW)``."""

    name = "conv2d_gemm_weight_grad"
    save_inputs = True

    def forward(self, x: NDArray, g: NDArray, weight_shape: tuple[int, ...],
                params: tuple[Pair, Pair, Pair]) -> NDArray:
        self.params = params
        return nd.conv2d_backward_weight(x, g, weight_shape, *params)

    def backward(self, gw: TensorBase) -> tuple[TensorBase | None, ...]:
        x, g = self.inputs
        need_x, need_g = self.needs_input_grad
        return (Conv2dGemmInputGrad.apply(g, gw, input_shape=x.shape, params=self.params)
                if need_x else None,
                Conv2dGemm.apply(x, gw, params=self.params) if need_g else None)


# conv2d's per-image GEMM runs where the output has at least this many pixels
# and each pixel this many taps (C * KH * KW); see conv2d.
_NCHW_MIN_PIXELS, _NCHW_MIN_TAPS = 128, 64
# Where the device has the conv2d kernels, outputs of at least this many pixels run on
# them (a GEMM per image, see Conv2dGemm); smaller maps make each image's GEMM too
# narrow, and the one tall GEMM over the batch's columns wins. Intel Xeon (AVX-512), 1 thread,
# fwd+bwd, kernels vs columns: MNIST's 32 -> 64 on 26 x 26 (batch 64) 48 -> 33 ms,
# 3 -> 16 on 32 x 32 (batch 32) 2.5 -> 2.0 ms, 64 -> 64 on 16 x 16 (batch 128)
# 88 -> 64 ms; but 128 -> 128 on 8 x 8 59 -> 61 ms and 32 -> 64 on 4 x 4 2.3 -> 4.7 ms.
_GEMM_MIN_PIXELS = 128


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``.

    With ``groups=G`` the C input and O output channels are split into G
    groups; output group g sees only input group g (G = C is a depthwise conv).

    Args:
        x: images, ``(N, C, H, W)``.
        weight: filters, ``(O, C/groups, KH, KW)``.
        bias: ``(O,)`` or ``None``.
        stride, padding, dilation: an int or an ``(h, w)`` pair each.
        groups: G, dividing C and O.

    Returns:
        ``(N, O, OH, OW)`` with ``OH = (H + 2*ph - dh*(KH-1) - 1) // sh + 1``.
    """
    _check_conv_shapes(x, weight, _check_groups("conv2d", groups))
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ShapeError(f"conv2d: bias has shape {bias.shape}, expected ({weight.shape[0]},)")
    params: tuple[Pair, ...] = (
        pair(weight.shape[2:], "conv2d", "kernel", 1), pair(stride, "conv2d", "stride", 1),
        pair(padding, "conv2d", "padding", 0), pair(dilation, "conv2d", "dilation", 1))
    oh, ow = _out_size("conv2d", x.shape, *params)
    weight, params = _crop_to_input(weight, tuple(x.shape), params, (oh, ow))
    n, o = x.shape[0], weight.shape[0]
    if groups == 1 and oh * ow >= _GEMM_MIN_PIXELS and nd.has_conv2d(x._data):
        out = Conv2dGemm.apply(x, weight, params=params[1:])
        return out if bias is None else out + bias.reshape(o, 1, 1)
    cols = Im2Col.apply(x, kernel=params[0], stride=params[1], padding=params[2],
                        dilation=params[3])
    taps = x.shape[1] * weight.shape[2] * weight.shape[3]  # not -1: N may be 0
    if groups == 1 and oh * ow >= _NCHW_MIN_PIXELS and taps >= _NCHW_MIN_TAPS:
        # Each image as (O, taps) @ (taps, OH*OW): the product is NCHW as it
        # stands, so neither pass transposes the output or its gradient (a
        # copy each way of the whole activation). Thinner per-image GEMMs run
        # slower than the one tall GEMM below. Zen 3, 1 thread, fwd+bwd:
        # 32 -> 64 channels on 26 x 26, batch 64, went from 104 to 96 ms this
        # way; 3 -> 16 on 32 x 32 (27 taps) would go from 4.3 to 5.6 ms.
        out = weight.reshape(o, taps) @ cols.reshape(n, oh * ow, taps).mT
        out = out.reshape(n, o, oh, ow)
        return out if bias is None else out + bias.reshape(o, 1, 1)
    cols = cols.reshape(n * oh * ow, taps)
    if groups == 1:
        rows = cols @ weight.reshape(o, taps).mT  # (N*OH*OW, O)
    else:
        # cols (N*OH*OW, C*KH*KW) holds each group's C/G channels side by side
        blocks = weight.reshape(groups, o // groups, taps // groups).mT  # (G, C/G*KH*KW, O/G)
        rows = _grouped_matmul(cols, blocks)
    if bias is None:
        return rows.reshape(n, oh, ow, o).permute(0, 3, 1, 2)
    # The bias joins the rows, where it is a contiguous broadcast (its gradient a
    # sum over rows), and one transposing copy then lays the output out NCHW: an
    # add reading the permuted rows ran at a third of that speed.
    rows = rows + bias
    return rows.reshape(n, oh, ow, o).permute(0, 3, 1, 2).contiguous()


def _transpose_params(x: Tensor, weight: Tensor, stride: Any, padding: Any,
                      output_padding: Any, dilation: Any, groups: int) -> tuple[Pair, ...]:
    """Checked (kernel, stride, padding, output_padding, dilation) of conv_transpose2d."""
    op = "conv_transpose2d"
    if weight.ndim != 4 or x.ndim != 4 or x.shape[1] != weight.shape[0]:
        raise ShapeError(f"{op}: input {x.shape} (N, C_in, H, W) and weight {weight.shape} "
                         "(C_in, C_out/groups, KH, KW) must be 4-D with the same C_in")
    if weight.shape[0] % groups:
        raise ShapeError(f"{op}: weight {weight.shape} has C_in={weight.shape[0]} input "
                         f"channels, not divisible by groups={groups}; use C_in a multiple "
                         f"of groups")
    params = (pair(weight.shape[2:], op, "kernel", 1), pair(stride, op, "stride", 1),
              pair(padding, op, "padding", 0), pair(output_padding, op, "output_padding", 0),
              pair(dilation, op, "dilation", 1))
    _, stride, _, extra, dilation = params
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise ValueError(f"{op}: output_padding {extra} must be smaller than either stride "
                         f"{stride} or dilation {dilation}; lower output_padding")
    return params


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """The adjoint of conv2d, as ``torch.nn.functional.conv_transpose2d``.

    Each input pixel scatters ``x[n, :, h, w] @ weight`` (a ``(C_out, KH, KW)``
    patch) into the output: a GEMM then ``col2im`` with no padding, cropped by
    ``padding`` and extended by ``output_padding`` at the bottom and right.
    With ``groups=G``, input channel group g scatters into output group g only.

    Args:
        x: images, ``(N, C_in, H, W)``.
        weight: ``(C_in, C_out/groups, KH, KW)`` (PyTorch's layout for transposed
            convolution).
        bias: ``(C_out,)`` or ``None``.
        stride, padding, output_padding, dilation: an int or an ``(h, w)`` pair each.
        groups: G, dividing C_in (and then C_out = G * weight.shape[1]).

    Returns:
        ``(N, C_out, OH, OW)`` with ``OH = (H-1)*sh - 2*ph + dh*(KH-1) + oph + 1``.
    """
    kernel, stride, padding, extra, dilation = _transpose_params(
        x, weight, stride, padding, output_padding, dilation,
        _check_groups("conv_transpose2d", groups))
    n, c_in, h, w = x.shape
    c_out = weight.shape[1] * groups
    full = [(size - 1) * s + d * (k - 1) + 1
            for size, s, d, k in zip((h, w), stride, dilation, kernel)]
    out = [f - 2 * p + e for f, p, e in zip(full, padding, extra)]
    if min(out) <= 0:
        raise ShapeError(f"conv_transpose2d: input of shape {x.shape} with kernel {kernel}, "
                         f"stride {stride}, padding {padding} and dilation {dilation} gives "
                         f"an empty output {tuple(out)}; lower the padding")
    rows = x.permute(0, 2, 3, 1).reshape(n * h * w, c_in)
    if groups == 1:
        rows = rows @ weight.reshape(c_in, -1)
    else:
        rows = _grouped_matmul(rows, weight.reshape(groups, c_in // groups, -1))
    cols = rows.reshape(n, h, w, c_out, kernel[0], kernel[1])
    img = Col2Im.apply(cols, input_shape=(n, c_out, full[0], full[1]),
                       params=(kernel, stride, (0, 0), dilation))
    if padding != (0, 0):
        img = img[:, :, padding[0]:padding[0] + out[0], padding[1]:padding[1] + out[1]]
    grow = (out[0] - img.shape[2], out[1] - img.shape[3])  # output_padding past the input
    if grow != (0, 0):
        img = pad(img, ((0, 0), (0, 0), (0, grow[0]), (0, grow[1])))
    if bias is not None:
        if bias.shape != (c_out,):
            raise ShapeError(f"conv_transpose2d: bias has shape {bias.shape}, "
                             f"expected ({c_out},)")
        img = img + bias.reshape(1, c_out, 1, 1)
    return img


def _pool_params(op: str, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any = 1) -> tuple[Pair, Pair, Pair, Pair]:
    """Checked (kernel, stride, padding, dilation); stride None means the kernel's."""
    kernel = pair(kernel_size, op, "kernel_size", 1)
    stride = kernel if stride is None else pair(stride, op, "stride", 1)
    pads = pair(padding, op, "padding", 0)
    if pads[0] * 2 > kernel[0] or pads[1] * 2 > kernel[1]:
        raise ValueError(f"{op}: padding {pads} should be at most half of kernel {kernel}")
    return kernel, stride, pads, pair(dilation, op, "dilation", 1)


def _pool_out_size(op: str, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair,
                   dilation: Pair, ceil_mode: bool) -> Pair:
    """(OH, OW) as PyTorch's pooling: with ceil_mode the last window may hang over the
    bottom or right edge, but must start inside the image or its left/top padding."""
    if len(shape) != 4:
        raise ShapeError(f"{op}: expected a 4-D (N, C, H, W) input, got shape {shape}")
    out = []
    for size, k, s, p, d in zip(shape[2:], kernel, stride, padding, dilation):
        n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (n - 1) * s >= size + p:
            n -= 1
        out.append(n)
    if min(out) <= 0:
        raise ShapeError(f"{op}: input of shape {shape} is too small for kernel {kernel} "
                         f"with padding {padding} and dilation {dilation}")
    return out[0], out[1]


class MaxPool2dWithIndices(Function):
    """``(N, C, H, W)`` -> ``(N, C, OH, OW)`` window maxima from the backend's kernel.

    One node. The caller runs the kernel (``nd.max_pool2d_with_indices``) and passes
    its ``pooled = (maxima, indices)``, so that max_pool2d can return the indices
    too; the node keeps the indices and routes each output's gradient to the one
    element its window chose (PyTorch's rule: the first maximum, or the last NaN).
    """

    name = "max_pool2d_with_indices"

    indices: NDArray | None

    def forward(self, x: NDArray, pooled: tuple[NDArray, NDArray],
                params: tuple[Pair, ...]) -> NDArray:
        self.indices, self.params = pooled[1], params
        return pooled[0]

    def release(self) -> None:
        super().release()
        self.indices = None  # the activations' worth of int64 a training step frees

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        if self.indices is None:
            raise RuntimeError(FREED_MESSAGE)
        return (MaxPool2dWithIndicesBackward.apply(g, indices=self.indices,
                                                   input_shape=self.shapes[0],
                                                   params=self.params),)


class MaxPool2dWithIndicesBackward(Function):
    """``(N, C, OH, OW)`` gradient -> ``(N, C, H, W)``: each value added at its saved
    index (the ``max_pool2d_backward`` kernel). Linear in the gradient, so its own
    gradient is the gather of the incoming one at the indices (gradients of any order)."""

    name = "max_pool2d_with_indices_backward"

    def forward(self, g: NDArray, indices: NDArray, input_shape: tuple[int, ...],
                params: tuple[Pair, ...]) -> NDArray:
        self.indices, self.padded = indices, params[2] != (0, 0)
        return nd.max_pool2d_backward(g, indices, input_shape, *params)

    def backward(self, gg: TensorBase) -> tuple[TensorBase]:
        n, c, h, w = gg.shape
        indices = self.indices
        if self.padded:  # -1 marks a window of padding only: read element 0, then zero it
            indices = nd.where(indices >= 0, indices, 0)
        base = nd.arange(0, n * c * h * w, h * w, device=indices.device).reshape(n, c, 1, 1)
        picked = Take.apply(gg.reshape(-1), indices=indices + base, axis=0)
        if self.padded:
            picked = where(make(self.indices >= 0), picked, 0.0)
        return (picked,)


def _max_pool2d_composite(x: Tensor, out: Pair, kernel: Pair, stride: Pair, pads: Pair,
                          dilation: Pair) -> Tensor:
    """max_pool2d from im2col and amax, for devices without the kernels: ties in a window
    share the gradient (amax's rule) where PyTorch gives it to the first maximum."""
    n, c, h, w = x.shape
    # rows and columns the last window reaches past the image (ceil_mode), beyond padding
    over = [(o - 1) * s + d * (k - 1) + 1 - p - size
            for o, s, d, k, p, size in zip(out, stride, dilation, kernel, pads, (h, w))]
    ends = (max(pads[0], over[0]), max(pads[1], over[1]))
    if pads != (0, 0) or ends != (0, 0):
        widths = ((0, 0), (0, 0), (pads[0], ends[0]), (pads[1], ends[1]))
        inside = nd.ones(x.shape, dtype=x._data.dtype, device=x._data.device).pad(widths)
        x = where(make(inside), pad(x, widths), float("-inf"))
    cols = Im2Col.apply(x, kernel=kernel, stride=stride, padding=(0, 0), dilation=dilation)
    if cols.shape[1:3] != out:  # a floor-mode window row that ceil_mode dropped
        cols = cols[:, :out[0], :out[1]]
    windows = cols.reshape(n, out[0], out[1], c, kernel[0] * kernel[1])
    return amax(windows, -1).permute(0, 3, 1, 2)


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over each window, as ``torch.nn.functional.max_pool2d``.

    Padding counts as -inf (never chosen). On a device with the backend's
    ``max_pool2d`` kernels for the dtype (the cpu and cuda backends, float32 and
    float64) the gradient goes to one element per window, as in PyTorch: the
    first maximum in the window's row-major order, or the last NaN (a NaN is
    the maximum). Elsewhere the op composes im2col and ``amax``, whose
    gradient is shared among tied maxima.

    Args:
        x: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size, stride, padding, dilation: an int or an ``(h, w)`` pair each;
            stride defaults to kernel_size, padding is at most half the kernel.
        ceil_mode: round the output size up (a last window may hang over the edge).
        return_indices: also return the int64 offsets ``y*W + x`` of the chosen
            elements in their planes (what ``max_unpool2d`` takes).

    Returns:
        ``(N, C, OH, OW)`` with ``OH = (H + 2*ph - dh*(KH-1) - 1) // sh + 1``
        (rounded up with ceil_mode), and the indices with return_indices.

    Example:
        >>> import lamina.autograd as ag
        >>> out, idx = ag.max_pool2d(ag.tensor([[[[1.0, 3.0], [3.0, 2.0]]]]), 2,
        ...                          return_indices=True)
        >>> out.tolist(), idx.tolist()
        ([[[[3.0]]]], [[[[1]]]])
    """
    params = _pool_params("max_pool2d", kernel_size, stride, padding, dilation)
    if x.ndim == 3:  # one (C, H, W) image, as PyTorch allows
        res = max_pool2d(x.unsqueeze(0), *params, ceil_mode, return_indices)
        return (res[0].squeeze(0), res[1].squeeze(0)) if return_indices else res.squeeze(0)
    size = _pool_out_size("max_pool2d", x.shape, *params, ceil_mode)
    if not (return_indices or nd.has_max_pool(x._data)):
        return _max_pool2d_composite(x, size, *params)
    # without the kernels (return_indices only) nd runs the numpy backend's on the host
    pooled = nd.max_pool2d_with_indices(x._data, size, *params)
    out = MaxPool2dWithIndices.apply(x, pooled=pooled, params=params)
    return (out, make(pooled[1])) if return_indices else out


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Mean over each window, zero padding included in the count (PyTorch's default).

    Shapes: ``(N, C, H, W)`` -> ``(N, C, OH, OW)``.
    """
    kernel, stride, pads, _ = _pool_params("avg_pool2d", kernel_size, stride, padding)
    _out_size("avg_pool2d", x.shape, kernel, stride, pads, (1, 1))
    cols = Im2Col.apply(x, kernel=kernel, stride=stride, padding=pads, dilation=(1, 1))
    return cols.mean(dim=(4, 5)).permute(0, 3, 1, 2)


PRIMITIVES = (Im2Col, Col2Im, Conv2dGemm, Conv2dGemmInputGrad, Conv2dGemmWeightGrad,
              MaxPool2dWithIndices, MaxPool2dWithIndicesBackward)
COMPOSITES = (conv2d, conv_transpose2d, max_pool2d, avg_pool2d)
