"""Max pooling with indices on the backend's ``max_pool2d`` kernels (interface v2.1).

:func:`max_pool2d_with_indices` pools an ``(N, C, H, W)`` image into
``(N, C, OH, OW)`` maxima and the int64 offsets ``y*W + x`` of the chosen
elements in their planes (PyTorch's ``return_indices``);
:func:`max_pool2d_backward` routes an output gradient back through those
indices. The kernels' layout and rule are ``_numpy_pool``'s. Autograd's
``max_pool2d`` calls these when :func:`has_max_pool` says the device has the
kernels for the dtype, and composes im2col and a max reduction otherwise; on a
device without them these functions run the numpy backend's kernels on a host copy
(how ``return_indices`` works there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._dtypes import int64
from ._errors import ShapeError
from ._ndarray import NDArray
from ._registry import get_device

Pair = tuple[int, int]


def has_max_pool(x: NDArray) -> bool:
    """Whether ``x``'s device has the ``max_pool2d`` kernels (both directions) for its dtype."""
    kernel_dtypes = x._device.kernel_dtypes
    return all(x._dtype.name in kernel_dtypes.get(name, ())
               for name in ("max_pool2d", "max_pool2d_backward"))


def _kernel(a: NDArray, name: str) -> Callable[..., Any]:
    """The device's kernel ``name`` (present: the caller checked :func:`has_max_pool`)."""
    kernel: Callable[..., Any] = getattr(a._device.kernels, name)
    return kernel


def _at_zero(a: NDArray) -> NDArray:
    """``a`` if it is compact from element 0 of its buffer (what the kernels index), else a
    compact copy."""
    return a if a._offset == 0 and (a._compact or a.is_compact()) else a.copy()


def _geometry(shape: tuple[int, ...], out: Pair, kernel: Pair, stride: Pair, padding: Pair,
              dilation: Pair) -> tuple[int, ...]:
    """The kernels' layout arguments ``planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw``."""
    if len(shape) != 4:
        raise ShapeError(f"max_pool2d: expected a 4-D (N, C, H, W) input, got shape {shape}")
    n, c, h, w = shape
    return (n * c, h, w, *out, *kernel, *stride, *padding, *dilation)


def max_pool2d_with_indices(x: NDArray, out_size: Pair, kernel: Pair, stride: Pair,
                            padding: Pair, dilation: Pair) -> tuple[NDArray, NDArray]:
    """Maxima of the windows of ``x`` and the offsets of the chosen elements.

    Args:
        x: ``(N, C, H, W)``, float32 or float64 (what the device's kernel takes).
        out_size: ``(OH, OW)``, as the caller computed it (floor or ceil mode).
        kernel, stride, padding, dilation: ``(h, w)`` pairs, checked by the caller.

    Returns:
        ``(N, C, OH, OW)`` maxima and int64 offsets ``y*W + x`` within each plane.
    """
    geometry = _geometry(x.shape, out_size, kernel, stride, padding, dilation)
    if not has_max_pool(x):
        host = get_device("numpy")  # its reference kernel: same answer, through the host
        out, indices = max_pool2d_with_indices(x.to(host), out_size, kernel, stride, padding,
                                               dilation)
        return out.to(x._device), indices.to(x._device)
    shape = (*x.shape[:2], *out_size)
    x = _at_zero(x)
    out = NDArray._empty(shape, x._dtype, x._device, "max_pool2d")
    indices = NDArray._empty(shape, int64, x._device, "max_pool2d")
    _kernel(x, "max_pool2d")(x._buf, out._buf, indices._buf, *geometry)
    return out, indices


def max_pool2d_backward(grad: NDArray, indices: NDArray, input_shape: tuple[int, ...],
                        kernel: Pair, stride: Pair, padding: Pair, dilation: Pair) -> NDArray:
    """The gradient of :func:`max_pool2d_with_indices`'s input for the output gradient.

    Args:
        grad: ``(N, C, OH, OW)`` output gradient. indices: what the forward returned.
        input_shape: ``(N, C, H, W)``. kernel, stride, padding, dilation: the forward's.

    Returns:
        ``(N, C, H, W)``: each output gradient added at its index (overlaps add up).
    """
    if grad.shape != indices.shape:
        raise ShapeError(f"max_pool2d_backward: gradient {grad.shape} and indices "
                         f"{indices.shape} must have the same shape")
    geometry = _geometry(tuple(input_shape), tuple(grad.shape[2:]),  # type: ignore[arg-type]
                         kernel, stride, padding, dilation)
    if not has_max_pool(grad):
        host = get_device("numpy")
        return max_pool2d_backward(grad.to(host), indices.to(host), input_shape, kernel, stride,
                                   padding, dilation).to(grad._device)
    grad, indices = _at_zero(grad), _at_zero(indices)
    out = NDArray._empty(tuple(input_shape), grad._dtype, grad._device, "max_pool2d_backward")
    _kernel(grad, "max_pool2d_backward")(grad._buf, indices._buf, out._buf, *geometry)
    return out
