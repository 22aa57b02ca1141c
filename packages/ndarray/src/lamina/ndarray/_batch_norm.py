"""Batch normalisation on the backend's fused kernels (interface v2.1, optional).

An ``(N, C, *)`` input is read as its compact ``(N, C, S)`` view, ``S`` the
product of the trailing dims: ``batch_norm_stats`` gives each channel's mean
and biased variance, ``batch_norm_apply`` normalises, scales and shifts in one
pass, and ``batch_norm_backward`` runs the two per-channel sums and ``dx`` in
one kernel (layouts in ``_numpy_norm``). :func:`has_batch_norm_kernels` says
whether a device has them; autograd's ``batch_norm`` calls these functions
when it does and composes reductions and elementwise kernels otherwise.
"""

from __future__ import annotations

import math

from ._ndarray import NDArray
from ._rnn import _at_zero, _kernel

_KERNELS = ("batch_norm_stats", "batch_norm_apply", "batch_norm_backward")


def has_batch_norm_kernels(*arrays: NDArray) -> bool:
    """Whether ``arrays`` share one device and dtype that has the batch-norm kernels."""
    first = arrays[0]
    device, dtype = first._device, first._dtype
    if any(a._device is not device or a._dtype is not dtype for a in arrays):
        return False
    return all(dtype.name in device.kernel_dtypes.get(name, ()) for name in _KERNELS)


def _layout(x: NDArray) -> tuple[int, int, int]:
    """(N, C, S) of an (N, C, *) input."""
    return x.shape[0], x.shape[1], math.prod(x.shape[2:])


def _empty(like: NDArray, *shape: int) -> NDArray:
    return NDArray._empty(shape, like._dtype, like._device, "batch_norm")


def batch_norm_stats(x: NDArray) -> tuple[NDArray, NDArray]:
    """Per-channel mean and biased variance, each (C,), of ``x`` (N, C, *) (ShapeError from
    the caller's checks aside, ValueError from the kernel when a channel has no values)."""
    kernel = _kernel(x, "batch_norm_stats", "batch_norm")
    n, c, s = _layout(x)
    src = _at_zero(x)
    mean, var = _empty(x, c), _empty(x, c)
    kernel(src._buf, mean._buf, var._buf, n, c, s)
    return mean, var


def batch_norm_apply(x: NDArray, mean: NDArray, rstd: NDArray, weight: NDArray,
                     bias: NDArray) -> NDArray:
    """``(x - mean) * (rstd * weight) + bias`` per channel of ``x`` (N, C, *); the others
    are (C,)."""
    kernel = _kernel(x, "batch_norm_apply", "batch_norm")
    n, c, s = _layout(x)
    src = _at_zero(x)
    out = _empty(x, *x.shape)
    if out.size:
        kernel(src._buf, _at_zero(mean)._buf, _at_zero(rstd)._buf, _at_zero(weight)._buf,
               _at_zero(bias)._buf, out._buf, n, c, s)
    return out


def batch_norm_backward(g: NDArray, x: NDArray, mean: NDArray, rstd: NDArray,
                        weight: NDArray, training: bool) -> tuple[NDArray, NDArray, NDArray]:
    """Gradients of x (N, C, *), weight and bias (C,) of ``batch_norm_apply``'s output
    from its gradient ``g``; ``training``: mean and rstd are the batch's own statistics
    (functions of x), else constants."""
    kernel = _kernel(x, "batch_norm_backward", "batch_norm")
    n, c, s = _layout(x)
    dx, dweight, dbias = _empty(x, *x.shape), _empty(x, c), _empty(x, c)
    kernel(_at_zero(g)._buf, _at_zero(x)._buf, _at_zero(mean)._buf, _at_zero(rstd)._buf,
           _at_zero(weight)._buf, dx._buf, dweight._buf, dbias._buf, n, c, s, training)
    return dx, dweight, dbias
