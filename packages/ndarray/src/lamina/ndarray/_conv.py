"""Convolution geometry and the patch kernels behind conv2d: im2col, col2im."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._checks import conv_output_size, pair
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
