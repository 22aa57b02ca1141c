"""The numpy reference backend's per-image convolution kernels (interface v2.2).

``conv2d``, ``conv2d_backward_input`` and ``conv2d_backward_weight``,
optional kernels that ``_numpy_backend`` sets on its backend class: the
specification the compiled backends follow.

Layout (docs/backend-interface.md): ``x``/``dx`` compact ``(n, c, h, w)``,
``w``/``dw`` compact ``(o, c, kh, kw)``, ``out``/``grad`` compact
``(n, o, oh, ow)``; groups 1. Output pixel ``(oy, ox)`` reads input rows
``oy*sh - ph + ky*dh`` and columns ``ox*sw - pw + kx*dw``, zero outside the
image. Every kernel overwrites its output.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._checks import conv_output_size

_FLOATS = ("float32", "float64")
KERNEL_DTYPES = dict.fromkeys(("conv2d", "conv2d_backward_input", "conv2d_backward_weight"),
                              _FLOATS)
"""The dtypes of the convolution kernels."""


def _geometry(op: str, bufs: tuple[Any, Any, Any], sizes: tuple[int, ...]) -> tuple[int, int]:
    """(oh, ow) after the kernels' checks: TypeError unless the three buffers share a
    float dtype, ValueError for a bad geometry or buffers smaller than the layout
    (``bufs`` are the images, the filters and the output images, in that order)."""
    n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw = sizes
    dtypes = {b.data.dtype for b in bufs}
    if len(dtypes) != 1 or bufs[0].data.dtype.name not in _FLOATS:
        raise TypeError(f"{op}: buffers must have one dtype, float32 or float64, got "
                        f"{', '.join(str(b.data.dtype) for b in bufs)}")
    if min(n, c, h, w, o, ph, pw) < 0 or min(kh, kw, sh, sw, dh, dw) < 1:
        raise ValueError(f"{op}: n, c, h, w, o and padding must be >= 0 and kernel, stride "
                         f"and dilation >= 1, got {sizes}")
    oh, ow = conv_output_size(h, kh, sh, ph, dh), conv_output_size(w, kw, sw, pw, dw)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: kernel ({kh}, {kw}) with dilation ({dh}, {dw}) does not "
                         f"fit the padded input ({h + 2 * ph}, {w + 2 * pw})")
    for buf, need in zip(bufs, (n * c * h * w, o * c * kh * kw, n * o * oh * ow)):
        if buf.data.size < need:
            raise ValueError(f"{op}: buffers of {', '.join(str(b.data.size) for b in bufs)} "
                             f"elements are smaller than the layout")
    return oh, ow


def _rows(x: Any, sizes: tuple[int, ...], oh: int, ow: int) -> np.ndarray:
    """Each image's taps as rows: (n, c*kh*kw, oh*ow), zero in the padding."""
    n, c, h, w, _, kh, kw, sh, sw, ph, pw, dh, dw = sizes
    padded = np.pad(x.data[:n * c * h * w].reshape(n, c, h, w),
                    ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    s = padded.strides
    view = as_strided(padded, (n, c, kh, kw, oh, ow),
                      (s[0], s[1], s[2] * dh, s[3] * dw, s[2] * sh, s[3] * sw), writeable=False)
    return view.reshape(n, c * kh * kw, oh * ow)


def conv2d(x: Any, w: Any, out: Any, *sizes: int) -> None:
    """out (n, o, oh, ow) = per image W (o, c*kh*kw) @ its rows (c*kh*kw, oh*ow)."""
    oh, ow = _geometry("conv2d", (x, w, out), sizes)
    n, c, _, _, o, kh, kw = sizes[:7]
    filters = w.data[:o * c * kh * kw].reshape(o, c * kh * kw)
    out.data[:n * o * oh * ow].reshape(n, o, oh * ow)[...] = filters @ _rows(x, sizes, oh, ow)


def conv2d_backward_input(grad: Any, w: Any, dx: Any, *sizes: int) -> None:
    """dx (n, c, h, w): each image's W^T @ grad rows summed back at the pixels they read."""
    oh, ow = _geometry("conv2d_backward_input", (dx, w, grad), sizes)
    n, c, h, wd, o, kh, kw, sh, sw, ph, pw, dh, dw = sizes
    filters = w.data[:o * c * kh * kw].reshape(o, c * kh * kw)
    rows = (filters.T @ grad.data[:n * o * oh * ow].reshape(n, o, oh * ow)).reshape(
        n, c, kh, kw, oh, ow)
    padded = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=dx.data.dtype)
    for ky in range(kh):
        for kx in range(kw):
            padded[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                   kx * dw:kx * dw + sw * (ow - 1) + 1:sw] += rows[:, :, ky, kx]
    dx.data[:n * c * h * wd].reshape(n, c, h, wd)[...] = padded[:, :, ph:ph + h, pw:pw + wd]


def conv2d_backward_weight(x: Any, grad: Any, dw_out: Any, *sizes: int) -> None:
    """dw (o, c, kh, kw) = the sum over images of grad (o, oh*ow) @ rows^T."""
    oh, ow = _geometry("conv2d_backward_weight", (x, dw_out, grad), sizes)
    n, c, _, _, o, kh, kw = sizes[:7]
    g = grad.data[:n * o * oh * ow].reshape(n, o, oh * ow)
    total = np.einsum("nop,ntp->ot", g, _rows(x, sizes, oh, ow)) if n else 0
    dw_out.data[:o * c * kh * kw].reshape(o, c * kh * kw)[...] = total
