"""The numpy reference backend's batch-norm kernels (interface v2.1).

Three optional kernels over a compact ``(N, C, S)`` input, ``S`` the product
of the trailing dims (1 for an ``(N, C)`` input); every statistic is per
channel ``c`` over the ``N * S`` values of that channel. ``_numpy_backend``
sets them on its backend class; they are the specification the compiled
backends follow (docs/backend-interface.md):

- ``batch_norm_stats(x, mean, var, n, c, s)``: the mean and the biased
  variance (C,), two-pass (the variance sums ``(x - mean)**2``), accumulated
  in float64 so that float32 channels whose ``|mean| >> std`` keep their digits.
- ``batch_norm_apply(x, mean, rstd, weight, bias, out, n, c, s)``:
  ``out = (x - mean) * (rstd * weight) + bias``, in the dtype, the product
  ``rstd * weight`` rounded first (as the composite NDArray path computes it).
- ``batch_norm_backward(g, x, mean, rstd, weight, dx, dweight, dbias, n, c, s,
  training)``: with ``xhat = (x - mean) * rstd``, ``dbias = sum(g)`` and
  ``dweight = sum(g * xhat)`` (float64 sums), and ``dx = weight * rstd * (g -
  dbias / m - xhat * dweight / m)`` (``m = N * S``) with ``training`` (batch
  statistics), else ``dx = g * weight * rstd`` (fixed statistics).

Buffers are read from element 0 and may be larger than the layout needs;
``n``, ``c`` and ``s`` count elements; the kernels write only their outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOATS = ("float32", "float64")
KERNEL_DTYPES = dict.fromkeys(
    ("batch_norm_stats", "batch_norm_apply", "batch_norm_backward"), _FLOATS)
"""The dtypes of the batch-norm kernels."""


def _check(op: str, n: int, c: int, s: int, full: dict[str, Any],
           channel: dict[str, Any]) -> None:
    """The checks the compiled backends make (lamina/kernel_checks.h's
    ``check_batch_norm``): one float dtype; n, c, s >= 0; each buffer of ``full``
    holds n*c*s elements and each of ``channel`` c."""
    buffers = {**full, **channel}
    dtypes = {b.data.dtype.name for b in buffers.values()}
    if len(dtypes) != 1 or not dtypes <= set(_FLOATS):
        raise TypeError(f"{op}: every buffer must have one dtype, float32 or float64, got "
                        f"{', '.join(b.data.dtype.name for b in buffers.values())}")
    for name, value in (("n", n), ("c", c), ("s", s)):
        if value < 0:
            raise ValueError(f"{op}: {name} must be >= 0, got {value}")
    for names, need in ((full, n * c * s), (channel, c)):
        for name, buf in names.items():
            if buf.data.size < need:
                raise ValueError(f"{op}: {name} has {buf.data.size} elements, ({n}, {c}, {s}) "
                                 f"needs {need}")


def _view(buf: Any, n: int, c: int, s: int) -> np.ndarray:
    return buf.data[:n * c * s].reshape(n, c, s)


def _col(buf: Any, c: int, wide: bool = False) -> np.ndarray:
    """Channel values (C,) as (1, C, 1), broadcasting over (N, C, S)."""
    col = buf.data[:c].reshape(1, c, 1)
    return col.astype(np.float64) if wide else col


def batch_norm_stats(x: Any, mean: Any, var: Any, n: int, c: int, s: int) -> None:
    """Per-channel mean and biased variance (C,) of x (N, C, S)."""
    op = "batch_norm_stats"
    _check(op, n, c, s, {"x": x}, {"mean": mean, "var": var})
    if c and not n * s:
        raise ValueError(f"{op}: no values per channel in ({n}, {c}, {s}); a mean needs "
                         f"n * s >= 1")
    if not c:
        return
    wide = _view(x, n, c, s).astype(np.float64)
    mu = wide.mean(axis=(0, 2), keepdims=True)
    centred = wide - mu
    mean.data[:c] = mu.reshape(c)
    var.data[:c] = (centred * centred).mean(axis=(0, 2))


def batch_norm_apply(x: Any, mean: Any, rstd: Any, weight: Any, bias: Any, out: Any,
                     n: int, c: int, s: int) -> None:
    """``out = (x - mean) * (rstd * weight) + bias`` over (N, C, S), per channel."""
    _check("batch_norm_apply", n, c, s, {"x": x, "out": out},
           {"mean": mean, "rstd": rstd, "weight": weight, "bias": bias})
    if not n * c * s:
        return
    scale = _col(rstd, c) * _col(weight, c)
    y = (_view(x, n, c, s) - _col(mean, c)) * scale + _col(bias, c)
    out.data[:n * c * s] = y.reshape(-1)


def batch_norm_backward(g: Any, x: Any, mean: Any, rstd: Any, weight: Any, dx: Any,
                        dweight: Any, dbias: Any, n: int, c: int, s: int,
                        training: bool) -> None:
    """Gradients of x (N, C, S), weight and bias (C,) from the output's g (N, C, S)."""
    _check("batch_norm_backward", n, c, s, {"g": g, "x": x, "dx": dx},
           {"mean": mean, "rstd": rstd, "weight": weight, "dweight": dweight, "dbias": dbias})
    if not c:
        return
    gw = _view(g, n, c, s).astype(np.float64)
    r = _col(rstd, c, wide=True)
    xhat = (_view(x, n, c, s) - _col(mean, c, wide=True)) * r
    g_sum = gw.sum(axis=(0, 2), keepdims=True)
    gx_sum = (gw * xhat).sum(axis=(0, 2), keepdims=True)
    dbias.data[:c] = g_sum.reshape(c)
    dweight.data[:c] = gx_sum.reshape(c)
    if not n * s:
        return
    if training:
        gw = gw - g_sum / (n * s) - xhat * (gx_sum / (n * s))
    dx.data[:n * c * s] = (gw * (_col(weight, c, wide=True) * r)).reshape(-1)
