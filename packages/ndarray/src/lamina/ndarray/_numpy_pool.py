"""The numpy reference backend's max-pool kernels (interface v2.1).

``max_pool2d`` and ``max_pool2d_backward``, optional kernels that
``_numpy_backend`` sets on its backend class; the specification the compiled
backends follow (``lamina/pool_checks.h`` holds their shared checks).

Layout (docs/backend-interface.md): ``x`` holds ``planes`` compact (H, W)
images, the N*C planes of an NCHW tensor; ``out`` and ``indices`` (int64)
hold ``planes`` compact (OH, OW) planes. Output ``(oy, ox)`` reads input rows
``oy*sh - ph + i*dh`` (i < kh) and columns ``ox*sw - pw + j*dw`` (j < kw);
those outside the image are padding and never chosen. The rule is PyTorch
CPU's: the window's taps are scanned in row-major order and a tap is taken
when it is greater than the maximum so far or NaN (so ties keep the first
maximum and the last NaN wins). ``indices`` hold the taken tap's offset
``y*W + x`` in its plane, -1 for a window that reads only padding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOATS = ("float32", "float64")
KERNEL_DTYPES = dict.fromkeys(("max_pool2d", "max_pool2d_backward"), _FLOATS)
"""The dtypes of the max-pool kernels (indices are int64)."""

Geometry = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int]


def _check(op: str, values: Any, out: Any, indices: Any, geometry: Geometry) -> None:
    """The checks of lamina/pool_checks.h's ``check_max_pool2d``: TypeError unless
    indices are int64 and values and out one float dtype; ValueError for negative
    sizes or padding, kernel, stride or dilation below 1, or buffers too small."""
    planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw = geometry
    if indices.data.dtype != np.int64:
        raise TypeError(f"{op}: indices must be int64, got {indices.data.dtype}")
    if values.data.dtype != out.data.dtype or values.data.dtype.name not in _FLOATS:
        raise TypeError(f"{op}: input and output must have one dtype, float32 or float64, "
                        f"got {values.data.dtype} and {out.data.dtype}")
    for name, v in (("planes", planes), ("h", h), ("w", w), ("oh", oh), ("ow", ow),
                    ("ph", ph), ("pw", pw)):
        if v < 0:
            raise ValueError(f"{op}: {name} must be >= 0, got {v}")
    for name, v in (("kh", kh), ("kw", kw), ("sh", sh), ("sw", sw), ("dh", dh), ("dw", dw)):
        if v < 1:
            raise ValueError(f"{op}: {name} must be >= 1, got {v}")
    for name, buf, need in (("input", values, planes * h * w), ("output", out, planes * oh * ow),
                            ("indices", indices, planes * oh * ow)):
        if buf.data.size < need:
            raise ValueError(f"{op}: {name} has {buf.data.size} elements, {planes} planes "
                             f"need {need}")


def _taps(out: int, k: int, s: int, p: int, d: int) -> np.ndarray:
    """(k, out) input positions ``o*s - p + t*d`` of each tap t of each window o."""
    return (np.arange(out) * s - p)[None, :] + (np.arange(k) * d)[:, None]


def max_pool2d(x: Any, out: Any, indices: Any, planes: int, h: int, w: int, oh: int, ow: int,
               kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, dh: int, dw: int) -> None:
    """``out`` the maximum of each window and ``indices`` its offset in the plane."""
    geometry = (planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
    _check("max_pool2d", x, out, indices, geometry)
    src = x.data[:planes * h * w].reshape(planes, h * w)
    rows, cols = _taps(oh, kh, sh, ph, dh), _taps(ow, kw, sw, pw, dw)
    best = np.full((planes, oh, ow), -np.inf, dtype=x.data.dtype)
    at = np.full((planes, oh, ow), -1, dtype=np.int64)
    for i in range(kh):  # the taps in row-major order, each over every window at once
        for j in range(kw):
            y, c = rows[i][:, None], cols[j][None, :]
            inside = (y >= 0) & (y < h) & (c >= 0) & (c < w)
            flat = np.where(inside, y * w + c, 0)
            v = src[:, flat]
            take = inside & ((at < 0) | (v > best) | np.isnan(v))
            best = np.where(take, v, best)
            at = np.where(take, flat, at)
    out.data[:best.size] = best.reshape(-1)
    indices.data[:at.size] = at.reshape(-1)


def max_pool2d_backward(grad_out: Any, indices: Any, grad_in: Any, planes: int, h: int, w: int,
                        oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
                        dh: int, dw: int) -> None:
    """``grad_in`` zeroed, then each output gradient added at its index (overlapping
    windows add up, in output order); indices of -1 add nothing."""
    geometry = (planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
    _check("max_pool2d_backward", grad_in, grad_out, indices, geometry)
    g = grad_out.data[:planes * oh * ow].reshape(planes, oh * ow)
    at = indices.data[:planes * oh * ow].reshape(planes, oh * ow)
    dst = np.zeros((planes, h * w), dtype=grad_in.data.dtype)
    keep = (at >= 0) & (at < h * w)
    plane = np.broadcast_to(np.arange(planes)[:, None], at.shape)
    np.add.at(dst, (plane[keep], at[keep]), g[keep])
    grad_in.data[:dst.size] = dst.reshape(-1)
