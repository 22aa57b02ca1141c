"""Convolution geometry, the patch kernels im2col and col2im, and conv2d as a GEMM per image.

:func:`conv2d`, :func:`conv2d_backward_input` and :func:`conv2d_backward_weight`
run on the device's kernels of those names where :func:`has_conv2d` says it has
them for the dtype (one image's patches at a time, never the batch's columns),
and compose im2col, matmul and col2im elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._checks import check_same_device_dtype, conv_output_size, pair
from ._compute import pad
from ._errors import ShapeError
from ._narrow import kernels_of, optional_kernel

if TYPE_CHECKING:
    from ._ndarray import NDArray


def _conv_geometry(shape: tuple[int, ...], kernel: Any, stride: Any, padding: Any,
                   dilation: Any, op: str) -> tuple[int, ...]:
    if len(shape) != 4:
        raise ShapeError(f"{op}: expected an NCHW input of 4 dims, got shape {shape}")
    n, c, h, w = shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (pair(x, op, name) for x, name in (
        (kernel, "kernel"), (stride, "stride"), (padding, "padding"), (dilation, "dilation")))
    oh = conv_output_size(h, kh, sh, ph, dh) if sh > 0 else 0
    ow = conv_output_size(w, kw, sw, pw, dw) if sw > 0 else 0
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0 or oh < 1 or ow < 1:
        raise ShapeError(f"{op}: kernel ({kh}, {kw}) with stride ({sh}, {sw}), padding "
                         f"({ph}, {pw}) and dilation ({dh}, {dw}) does not fit an input of "
                         f"shape {shape}")
    return n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow


def im2col(x: NDArray, kernel: Any, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1) -> NDArray:
    """Patches of an NCHW array: shape ``(N, OH, OW, C, KH, KW)``, zero outside the input."""
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow = _conv_geometry(
        x.shape, kernel, stride, padding, dilation, "im2col")
    out = x._empty((n, oh, ow, c, kh, kw), x.dtype, x.device)
    if not out.size:
        return out
    fused = optional_kernel(x, "im2col", "im2col")
    if fused is not None:
        fused(x.compact()._buf, out._buf, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw)
        return out
    # composite: one strided view of the padded input, then one compact
    xp = pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    s = xp.strides
    view = xp._as_strided((n, oh, ow, c, kh, kw),
                          (s[0], s[2] * sh, s[3] * sw, s[1], s[2] * dh, s[3] * dw), 0)
    return view.compact()


def col2im(cols: NDArray, input_shape: Any, kernel: Any, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1) -> NDArray:
    """The adjoint of ``im2col``: sums patches ``(N, OH, OW, C, KH, KW)`` into NCHW."""
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow = _conv_geometry(
        tuple(input_shape), kernel, stride, padding, dilation, "col2im")
    if cols.shape != (n, oh, ow, c, kh, kw):
        raise ShapeError(f"col2im: columns of shape {cols.shape} do not match "
                         f"{(n, oh, ow, c, kh, kw)} for input {tuple(input_shape)}")
    fused = optional_kernel(cols, "col2im", "col2im")
    if fused is not None:
        out = cols._empty((n, c, h, w), cols.dtype, cols.device)
        fused(cols.compact()._buf, out._buf, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw)
        return out
    padded = cols._empty((n, c, h + 2 * ph, w + 2 * pw), cols.dtype, cols.device)
    kernels_of(cols, "fill", "col2im").fill(padded._buf, 0)
    for i in range(kh):  # kh*kw strided adds, each over the whole batch
        for j in range(kw):
            key = (slice(None), slice(None), slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                   slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
            padded[key] = padded[key] + cols[:, :, :, :, i, j].permute(0, 3, 1, 2)
    return padded[:, :, ph:ph + h, pw:pw + w].compact()


_CONV_KERNELS = ("conv2d", "conv2d_backward_input", "conv2d_backward_weight")


def has_conv2d(x: NDArray) -> bool:
    """Whether ``x``'s device has the per-image convolution kernels (all three) for its dtype."""
    kernel_dtypes = x._device.kernel_dtypes
    return all(x._dtype.name in kernel_dtypes.get(name, ()) for name in _CONV_KERNELS)


def _on_kernel(name: str, a: NDArray, b: NDArray, shape: tuple[int, ...],
               geometry: tuple[int, ...]) -> NDArray:
    """A new ``shape`` array from the device's kernel ``name`` over compact ``a`` and ``b``
    (present: the caller checked :func:`has_conv2d`)."""
    out = a._empty(shape, a.dtype, a.device)
    kernel: Callable[..., Any] = getattr(a._device.kernels, name)
    kernel(a.compact()._buf, b.compact()._buf, out._buf, *geometry[:13])
    return out


def _filter_geometry(op: str, input_shape: tuple[int, ...], weight_shape: tuple[int, ...],
                     stride: Any, padding: Any, dilation: Any) -> tuple[int, ...]:
    """(n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow) of an ``(N, C, H, W)``
    input and ``(O, C, KH, KW)`` filters."""
    if len(weight_shape) != 4 or len(input_shape) != 4 or weight_shape[1] != input_shape[1]:
        raise ShapeError(f"{op}: input {input_shape} (N, C, H, W) and weight {weight_shape} "
                         "(O, C, KH, KW) must be 4-D with the same C")
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow = _conv_geometry(
        input_shape, weight_shape[2:], stride, padding, dilation, op)
    return n, c, h, w, weight_shape[0], kh, kw, sh, sw, ph, pw, dh, dw, oh, ow


def _check_grad(op: str, grad: NDArray, geometry: tuple[int, ...]) -> None:
    n, o, oh, ow = geometry[0], geometry[4], geometry[13], geometry[14]
    if grad.shape != (n, o, oh, ow):
        raise ShapeError(f"{op}: grad of shape {grad.shape} does not match the output "
                         f"{(n, o, oh, ow)}")


def conv2d(x: NDArray, weight: NDArray, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1) -> NDArray:
    """NCHW cross-correlation with one group: ``x (N, C, H, W)`` and filters
    ``weight (O, C, KH, KW)`` give ``(N, O, OH, OW)``; stride, padding and dilation an
    int or an ``(h, w)`` pair each."""
    check_same_device_dtype([x, weight], "conv2d")
    geometry = _filter_geometry("conv2d", x.shape, weight.shape, stride, padding, dilation)
    n, c, _, _, o, kh, kw = geometry[:7]
    oh, ow = geometry[13:]
    if has_conv2d(x):
        return _on_kernel("conv2d", x, weight, (n, o, oh, ow), geometry)
    taps = c * kh * kw
    cols = im2col(x, weight.shape[2:], stride, padding, dilation).reshape(n, oh * ow, taps)
    return (weight.reshape(o, taps) @ cols.permute(0, 2, 1)).reshape(n, o, oh, ow)


def conv2d_backward_input(grad: NDArray, weight: NDArray, input_shape: Any, stride: Any = 1,
                          padding: Any = 0, dilation: Any = 1) -> NDArray:
    """The gradient of :func:`conv2d` for its input: ``grad (N, O, OH, OW)`` and
    ``weight (O, C, KH, KW)`` give ``(N, C, H, W)`` (``input_shape``)."""
    op = "conv2d_backward_input"
    check_same_device_dtype([grad, weight], op)
    geometry = _filter_geometry(op, tuple(input_shape), weight.shape, stride, padding, dilation)
    _check_grad(op, grad, geometry)
    n, c, h, w, o, kh, kw = geometry[:7]
    oh, ow = geometry[13:]
    if has_conv2d(grad):
        return _on_kernel(op, grad, weight, (n, c, h, w), geometry)
    rows = grad.reshape(n, o, oh * ow).permute(0, 2, 1) @ weight.reshape(o, c * kh * kw)
    return col2im(rows.reshape(n, oh, ow, c, kh, kw), (n, c, h, w), (kh, kw), stride, padding,
                  dilation)


def conv2d_backward_weight(x: NDArray, grad: NDArray, weight_shape: Any, stride: Any = 1,
                           padding: Any = 0, dilation: Any = 1) -> NDArray:
    """The gradient of :func:`conv2d` for its filters: ``x (N, C, H, W)`` and
    ``grad (N, O, OH, OW)`` give ``(O, C, KH, KW)`` (``weight_shape``)."""
    op = "conv2d_backward_weight"
    check_same_device_dtype([x, grad], op)
    geometry = _filter_geometry(op, x.shape, tuple(weight_shape), stride, padding, dilation)
    _check_grad(op, grad, geometry)
    n, c, _, _, o, kh, kw = geometry[:7]
    oh, ow = geometry[13:]
    if has_conv2d(x):
        return _on_kernel(op, x, grad, (o, c, kh, kw), geometry)
    cols = im2col(x, (kh, kw), stride, padding, dilation).reshape(n, oh * ow, c * kh * kw)
    return (grad.reshape(n, o, oh * ow) @ cols).sum(axis=0).reshape(o, c, kh, kw)
