"""Inputs for the batch-norm kernels, shared by the kit and the backends' own tests.

:func:`bn_inputs` makes an ``(N, C, S)`` input (around ``offset``, where a
one-pass variance would lose its digits), an output gradient, weight and bias,
and the statistics the apply and backward kernels take (computed here in
float64, so that each kernel is checked on the same inputs on every backend).
:func:`run_batch_norm` calls every kernel on a backend, each buffer with
trailing elements the kernels must ignore, and returns their outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._harness import get, put

BN_KERNELS = ("batch_norm_stats", "batch_norm_apply", "batch_norm_backward")

SHAPES = ((2, 3, 5), (2, 1, 1), (7, 1, 33), (5, 4, 1), (3, 2, 1031), (16, 8, 64))
"""(N, C, S) layouts: tiny, C = 1, S = 1 (an (N, C) input), a long S, many blocks."""

EXTRA = 3  # trailing elements on every buffer


def bn_inputs(dtype: str, n: int, c: int, s: int, seed: int = 0,
              offset: float = 0.0) -> dict[str, np.ndarray]:
    """x, g (N, C, S); weight, bias, mean, rstd (C,) of ``dtype``."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c, s)) * 2 + offset).astype(dtype)
    wide = x.astype(np.float64)
    mean = wide.mean(axis=(0, 2))
    var = ((wide - mean[None, :, None]) ** 2).mean(axis=(0, 2))
    return {"x": x, "g": rng.standard_normal((n, c, s)).astype(dtype),
            "weight": rng.standard_normal(c).astype(dtype),
            "bias": rng.standard_normal(c).astype(dtype), "mean": mean.astype(dtype),
            "rstd": ((var + 1e-5) ** -0.5).astype(dtype)}


def _out(backend: Any, dtype: str, size: int) -> Any:
    return put(backend, np.full(size + EXTRA, 7, dtype))


def run_batch_norm(backend: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every kernel's outputs on ``backend``: mean, var; out; dx, dweight, dbias
    (training) and dx_fixed, dweight_fixed, dbias_fixed (fixed statistics)."""
    n, c, s = inputs["x"].shape
    dtype = inputs["x"].dtype.name
    bufs = {k: put(backend, v, EXTRA) for k, v in inputs.items()}
    total = n * c * s
    res: dict[str, Any] = {"mean": _out(backend, dtype, c), "var": _out(backend, dtype, c),
                           "out": _out(backend, dtype, total)}
    backend.batch_norm_stats(bufs["x"], res["mean"], res["var"], n, c, s)
    backend.batch_norm_apply(bufs["x"], bufs["mean"], bufs["rstd"], bufs["weight"],
                             bufs["bias"], res["out"], n, c, s)
    for suffix, training in (("", True), ("_fixed", False)):
        grads = [_out(backend, dtype, size) for size in (total, c, c)]
        backend.batch_norm_backward(bufs["g"], bufs["x"], bufs["mean"], bufs["rstd"],
                                    bufs["weight"], *grads, n, c, s, training)
        res.update(zip((f"dx{suffix}", f"dweight{suffix}", f"dbias{suffix}"), grads))
    return {k: get(backend, v) for k, v in res.items()}


def kernel_args(backend: Any, kernel: str, dtype: str, n: int, c: int, s: int,
                sizes: dict[str, int] | None = None) -> list[Any]:
    """The buffer arguments of ``kernel`` for (n, c, s), of the sizes the layout needs
    unless ``sizes`` says otherwise (by argument name), for the error cases."""
    names = {"batch_norm_stats": ("x", "mean", "var"),
             "batch_norm_apply": ("x", "mean", "rstd", "weight", "bias", "out"),
             "batch_norm_backward": ("g", "x", "mean", "rstd", "weight", "dx", "dweight",
                                     "dbias")}[kernel]
    full = {"x", "g", "out", "dx"}
    sizes = sizes or {}
    return [put(backend, np.ones(sizes.get(k, n * c * s if k in full else c), dtype))
            for k in names]
