"""``F.interpolate`` and the upsampling modules, as in ``torch.nn``.

Each spatial axis is resampled on its own, with PyTorch's source coordinates:
``"nearest"`` gathers rows with ``index_select`` (the gradient of a repeated
row is the sum over its copies); ``"linear"``/``"bilinear"`` multiply by an
(out, in) matrix holding the two interpolation weights of each output, so
``bilinear`` is ``A_h @ x @ A_w.T`` and needs no backward code of its own.
The coordinates are computed in the input's precision (float32 for float32,
as PyTorch's kernels do), so the chosen neighbours match at the boundaries.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError
from ._module import Module

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "interpolate"]

_SPATIAL = {"nearest": (1, 2), "linear": (1,), "bilinear": (2,)}
_NOT_BUILT = ("bicubic", "trilinear", "area", "nearest-exact")


def _per_axis(value: Any, dims: int, name: str, shape: tuple[int, ...]) -> list[Any]:
    if not isinstance(value, (tuple, list)):
        return [value] * dims
    if len(value) != dims:
        raise ValueError(f"interpolate: input and {name} must have the same number of spatial "
                         f"dims, got input spatial dims {list(shape[2:])} and {name}={value!r}; "
                         f"pass one {name} per spatial dim")
    return list(value)


def _check_mode(x: Tensor, mode: str, align_corners: bool | None, antialias: bool) -> None:
    if mode in _NOT_BUILT:
        raise ValueError(f"interpolate: mode={mode!r} is not available in Lamina; use "
                         f"'nearest', 'linear' (3-D input) or 'bilinear' (4-D input)")
    if mode not in _SPATIAL:
        raise ValueError(f"interpolate: unknown mode {mode!r}; use 'nearest', 'linear' or "
                         f"'bilinear'")
    dims = len(x.shape) - 2
    if dims not in _SPATIAL[mode]:
        want = " or ".join(f"{d + 2}-D" for d in _SPATIAL[mode])
        raise ShapeError(f"interpolate: mode={mode!r} needs a {want} input (N, C, ...), got "
                         f"shape {tuple(x.shape)}")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("interpolate: align_corners can only be set with the interpolating "
                         "modes 'linear' and 'bilinear'; leave it None for 'nearest'")
    if antialias:
        raise ValueError(f"interpolate: antialias=True is not available in Lamina (mode "
                         f"{mode!r}); pass antialias=False")


def _sizes(x: Tensor, size: Any, scale_factor: Any, recompute: bool | None
           ) -> tuple[list[int], list[float | None]]:
    """Output sizes and the scales the kernels use (None: in/out) per spatial dim."""
    shape = tuple(x.shape)
    dims = len(shape) - 2
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    if size is not None:
        if recompute:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size; pass scale_factor instead")
        out = [int(s) for s in _per_axis(size, dims, "size", shape)]
        scales: list[float | None] = [None] * dims
    else:
        factors = [float(f) for f in _per_axis(scale_factor, dims, "scale_factor", shape)]
        out = [math.floor(float(n) * f) for n, f in zip(shape[2:], factors)]
        scales = [None] * dims if recompute else list(factors)
    if any(o <= 0 for o in out):
        raise ValueError(f"interpolate: output sizes must be positive, got {out} for input "
                         f"shape {shape}; use a larger size or scale_factor")
    return out, scales


def _scale(size: int, out: int, factor: float | None, real: type) -> Any:
    """PyTorch's ``compute_scales_value``: 1/scale_factor when given, else in/out."""
    if factor is not None and factor > 0:
        return real(1.0 / factor)
    return real(size) / real(out)


def _nearest_index(size: int, out: int, factor: float | None) -> np.ndarray:
    dst = np.arange(out, dtype=np.int64)
    if out == size:  # PyTorch special-cases these two to avoid float rounding
        return dst
    if out == 2 * size:
        return dst >> 1
    src = np.floor(dst.astype(np.float32) * _scale(size, out, factor, np.float32))
    return np.minimum(src.astype(np.int64), size - 1)


def _linear_matrix(size: int, out: int, factor: float | None, align_corners: bool,
                   real: type) -> np.ndarray:
    """(out, size) weights: each row holds the two linear interpolation weights."""
    dst: np.ndarray = np.arange(out).astype(real)
    if align_corners:
        scale = real(size - 1) / real(out - 1) if out > 1 else real(0)
        src = scale * dst
    else:
        scale = _scale(size, out, factor, real)
        src = np.maximum(scale * (dst + real(0.5)) - real(0.5), real(0))
    low = np.minimum(np.floor(src).astype(np.int64), size - 1)
    weight = np.clip(src - low.astype(real), 0, 1)
    high = np.where(low < size - 1, low + 1, low)
    matrix = np.zeros((out, size), dtype=np.float64)
    rows = np.arange(out)
    np.add.at(matrix, (rows, low), 1.0 - weight.astype(np.float64))
    np.add.at(matrix, (rows, high), weight.astype(np.float64))
    return matrix


def _nearest(x: Tensor, out: list[int], scales: list[float | None]) -> Tensor:
    for axis, (o, factor) in enumerate(zip(out, scales), start=2):
        index = _nearest_index(x.shape[axis], o, factor)
        x = ag.index_select(x, axis, Tensor(nd.array(index, dtype=nd.int64, device=x.device)))
    return x


def _linear(x: Tensor, out: list[int], scales: list[float | None], align_corners: bool
            ) -> Tensor:
    real = np.float32 if x.dtype.name == "float32" else np.float64
    last = len(x.shape) - 1
    for axis, (o, factor) in enumerate(zip(out, scales), start=2):
        matrix = _linear_matrix(x.shape[axis], o, factor, align_corners, real)
        if axis == last:
            x = x @ ag.tensor(matrix.T, dtype=x.dtype, device=x.device)
        else:
            x = ag.tensor(matrix, dtype=x.dtype, device=x.device) @ x
    return x


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resamples the spatial dims of (N, C, L) or (N, C, H, W), as ``torch``'s.

    Args:
        input: (N, C, L) for ``"nearest"``/``"linear"``, (N, C, H, W) for
            ``"nearest"``/``"bilinear"``.
        size: the output's spatial size, an int or one per spatial dim.
        scale_factor: multiplier of each spatial size (output ``floor(L * s)``);
            give exactly one of ``size`` and ``scale_factor``.
        mode: ``"nearest"`` (source index ``floor(dst * in / out)``),
            ``"linear"`` or ``"bilinear"``.
        align_corners: linear modes only: True maps the corner pixels' centres
            onto each other; False (the default) maps the corners' edges.
        recompute_scale_factor: with ``scale_factor``, True computes the source
            coordinates from the output size instead of ``1 / scale_factor``.
        antialias: must be False (PyTorch's antialiasing is not built).

    Returns:
        (N, C, OL) or (N, C, OH, OW), the input's dtype and device.

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([[[1.0, 2.0]]])
        >>> interpolate(x, scale_factor=2).tolist()
        [[[1.0, 1.0, 2.0, 2.0]]]
        >>> interpolate(x, size=3, mode="linear", align_corners=True).tolist()
        [[[1.0, 1.5, 2.0]]]
    """
    _check_mode(input, mode, align_corners, antialias)
    out, scales = _sizes(input, size, scale_factor, recompute_scale_factor)
    if mode == "nearest":
        return _nearest(input, out, scales)
    return _linear(input, out, scales, bool(align_corners))


class Upsample(Module):
    """Resamples (N, C, L) or (N, C, H, W) with :func:`interpolate`.

    Args:
        size: the output's spatial size, an int or one per spatial dim.
        scale_factor: multiplier of each spatial size (exclusive with ``size``).
        mode: ``"nearest"``, ``"linear"`` (3-D input) or ``"bilinear"`` (4-D input).
        align_corners: linear modes only; see :func:`interpolate`.
        recompute_scale_factor: see :func:`interpolate`.

    Shape:
        (N, C, L) -> (N, C, OL); (N, C, H, W) -> (N, C, OH, OW).

    Example:
        >>> from lamina import autograd
        >>> Upsample(scale_factor=2, mode="bilinear")(autograd.ones(1, 3, 4, 4)).shape
        (1, 3, 8, 8)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size = size
        # as torch: floats, and a factor of 0 or None means "not given"
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """:class:`Upsample` with ``mode="nearest"`` for (N, C, H, W) images.

    Args:
        size: (OH, OW), or one int for both.
        scale_factor: multiplier of H and W (exclusive with ``size``).
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """:class:`Upsample` with ``mode="bilinear"`` and ``align_corners=True``, as torch's.

    Args:
        size: (OH, OW), or one int for both.
        scale_factor: multiplier of H and W (exclusive with ``size``).
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
