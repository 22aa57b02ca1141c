"""Inputs for the max-pool kernels, shared by the kit and the backends' own tests.

:data:`CASES` are pooling geometries (batch 1, odd sizes, overlapping windows,
stride != kernel, padding, dilation, ceil-mode windows over the edge, a size
large enough for several threads or blocks); :func:`pool_input` makes an input
whose windows tie (small integers) or hold NaN and infinities;
:func:`run_max_pool` and :func:`run_max_pool_backward` call the kernels on a
backend. Output sizes follow PyTorch (:func:`output_size`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._harness import get, put


class PoolCase(NamedTuple):
    """An ``(N, C, H, W)`` input and PyTorch's max_pool2d arguments (pairs)."""

    shape: tuple[int, int, int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False


CASES = {
    "2x2": PoolCase((2, 3, 8, 8), (2, 2), (2, 2)),
    "2x2-odd": PoolCase((1, 2, 7, 9), (2, 2), (2, 2)),
    "3x3s2p1": PoolCase((2, 2, 7, 6), (3, 3), (2, 2), (1, 1)),
    "overlap-3x3s1": PoolCase((1, 3, 5, 6), (3, 3), (1, 1)),
    "rect-stride": PoolCase((2, 1, 5, 9), (2, 3), (1, 2)),
    "dilated": PoolCase((1, 2, 9, 8), (3, 2), (1, 2), (1, 1), (2, 3)),
    "ceil": PoolCase((2, 2, 5, 5), (2, 2), (2, 2), ceil_mode=True),
    "ceil-dilated-padded": PoolCase((1, 2, 9, 8), (3, 3), (2, 2), (1, 1), (2, 2), True),
    "1x1": PoolCase((1, 1, 3, 4), (1, 1), (1, 1)),
    "large": PoolCase((8, 16, 24, 24), (2, 2), (2, 2)),
}
"""Geometries by name."""


def output_size(case: PoolCase) -> tuple[int, int]:
    """PyTorch's (OH, OW): floor, or ceil with the last window starting inside the image
    or its leading padding."""
    out = []
    for size, k, s, p, d in zip(case.shape[2:], case.kernel, case.stride, case.padding,
                                case.dilation):
        n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if case.ceil_mode else 0)) // s + 1
        if case.ceil_mode and (n - 1) * s >= size + p:
            n -= 1
        out.append(n)
    return out[0], out[1]


def geometry(case: PoolCase) -> tuple[int, ...]:
    """The kernels' layout arguments ``planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw``."""
    n, c, h, w = case.shape
    return (n * c, h, w, *output_size(case), *case.kernel, *case.stride, *case.padding,
            *case.dilation)


def pool_input(shape: tuple[int, ...], dtype: str, kind: str = "ties",
               seed: int = 0) -> np.ndarray:
    """``kind``: "random" (distinct values), "ties" (integers 0..3: most windows tie),
    "special" (ties plus NaN, inf and -inf sprinkled in), "neg-inf" (all -inf)."""
    rng = np.random.default_rng(seed)
    if kind == "neg-inf":
        return np.full(shape, -np.inf, dtype=dtype)
    if kind == "random":
        return rng.standard_normal(shape).astype(dtype)
    x = rng.integers(0, 4, size=shape).astype(dtype)
    if kind == "special":
        flat = x.reshape(-1)
        for value, share in ((np.nan, 0.05), (np.inf, 0.03), (-np.inf, 0.3)):
            flat[rng.random(flat.size) < share] = value
    return x


def run_max_pool(backend: Any, x: np.ndarray, case: PoolCase) -> tuple[np.ndarray, np.ndarray]:
    """``backend.max_pool2d`` on ``x``: the (N, C, OH, OW) maxima and int64 indices."""
    shape = (*case.shape[:2], *output_size(case))
    size = int(np.prod(shape))
    out, indices = backend.Array(size, x.dtype.name), backend.Array(size, "int64")
    backend.max_pool2d(put(backend, x), out, indices, *geometry(case))
    return get(backend, out).reshape(shape), get(backend, indices).reshape(shape)


def run_max_pool_backward(backend: Any, grad: np.ndarray, indices: np.ndarray,
                          case: PoolCase) -> np.ndarray:
    """``backend.max_pool2d_backward``: the (N, C, H, W) input gradient, its buffer filled
    with NaN first (every element must be written)."""
    grad_in = put(backend, np.full(case.shape, np.nan, dtype=grad.dtype))
    backend.max_pool2d_backward(put(backend, grad), put(backend, indices), grad_in,
                                *geometry(case))
    return get(backend, grad_in).reshape(case.shape)
