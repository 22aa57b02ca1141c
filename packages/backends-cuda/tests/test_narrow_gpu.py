"""The native float16/bfloat16 reductions, row kernels and matmuls on a GPU
(marker ``cuda``) on the paths the conformance kit's small cases do not reach:
split rows (a row too long for one block, reduced in chunks and combined),
long rows of the fused kernels, the 128x128 matmul tiles, strided (``Any``)
and transposed operands, and batches.

Each is held to the float32 fallback bit for bit: the kernel on the 16-bit
buffers against the float32 kernel on their widened copies, rounded once
(the kit's ``_check``). The matmuls too: a 16-bit product runs the float32
kernel's tiles in the same k order, so it is that product rounded.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cuda
from lamina.ndarray.conformance.test_narrow import _to_narrow
from lamina.ndarray.conformance.test_narrow_native import _check

pytestmark = pytest.mark.cuda

NARROW = ("float16", "bfloat16")


def finite(n: int, seed: int) -> np.ndarray:
    """Values of mixed magnitudes, all finite in float16, so every sum is one."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n)
    return x.astype(np.float32)


def cancelling(rows: int, size: int, seed: int) -> np.ndarray:
    """Rows of large multiples of 256 that cancel exactly, shuffled among small
    values: a sum is the small values' sum only if it keeps them beside the
    large partial sums (in double, as float32's sums; float would lose them)."""
    rng = np.random.default_rng(seed)
    out = np.empty((rows, size), np.float32)
    for row in out:
        big = rng.integers(1, 200, size // 4) * 256.0 * rng.choice([-1.0, 1.0], size // 4)
        small = rng.uniform(-1.0, 1.0, size - 2 * big.size)
        row[:] = rng.permutation(np.concatenate([big, -big, small]))
    return out.reshape(-1)


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("rows, size", [(1, 100_003), (3, 40_000), (40, 600)])
def test_sums_keep_what_cancelling_terms_hide(rows: int, size: int, dtype: str) -> None:
    a = _to_narrow(cuda, cancelling(rows, size, 13), dtype)
    _check(cuda, "reduce_sum", dtype, [a], rows, layout=(size,))
    # the same values as (1, size, rows): a sum down the columns
    t = _to_narrow(cuda, cancelling(rows, size, 13).reshape(rows, size).T.copy(), dtype)
    _check(cuda, "reduce_sum_axis", dtype, [t], rows, layout=(1, size, rows))


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("rows, size", [(1, 100_003), (3, 40_000), (40, 600)])
@pytest.mark.parametrize("kernel", ["reduce_sum", "reduce_max", "reduce_min", "logsumexp_last"])
def test_long_rows(kernel: str, rows: int, size: int, dtype: str) -> None:
    a = _to_narrow(cuda, finite(rows * size, 1), dtype)
    _check(cuda, kernel, dtype, [a], rows, layout=(size,))


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("shape", [(2, 3000, 40), (1, 70, 1), (5, 9, 33)], ids=str)
def test_reduce_sum_axis(shape: tuple[int, int, int], dtype: str) -> None:
    outer, size, inner = shape
    a = _to_narrow(cuda, finite(outer * size * inner, 2), dtype)
    _check(cuda, "reduce_sum_axis", dtype, [a], outer * inner, layout=shape)


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("rows, size", [(2, 5000), (33, 64)])
def test_softmax_and_layer_norm(rows: int, size: int, dtype: str) -> None:
    a = _to_narrow(cuda, np.clip(finite(rows * size, 3), -60, 60), dtype)
    _check(cuda, "softmax_last", dtype, [a], rows * size, layout=(size,))
    weight, bias = (_to_narrow(cuda, finite(size, seed), dtype) for seed in (4, 5))
    a = _to_narrow(cuda, finite(rows * size, 6) + np.float32(100.0), dtype)  # |mean| >> std
    _check(cuda, "layer_norm_last", dtype, [a, weight, bias], 0, layout=(size, 1e-5),
           outputs=(rows * size, rows, rows))


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("m, n, p", [(256, 40, 264), (9, 17, 12), (64, 1, 64)])
def test_matmul(m: int, n: int, p: int, dtype: str) -> None:
    a, b = (_to_narrow(cuda, finite(size, seed), dtype) for size, seed in ((m * n, 7), (n * p, 8)))
    _check(cuda, "matmul", dtype, [a, b], m * p, layout=(m, n, p))


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("strides", [(1, 70, 33, 1), (33, 1, 1, 33), (66, 2, 33, 1),
                                     (66, 2, 66, 2)],
                         ids=["a-transposed", "b-transposed", "a-stepped", "both-stepped"])
def test_matmul_strided(strides: tuple[int, int, int, int], dtype: str) -> None:
    m, n, p = 70, 33, 33
    a_rs, a_cs, b_rs, b_cs = strides
    a = _to_narrow(cuda, finite(2 * m * n + 3, 9), dtype)
    b = _to_narrow(cuda, finite(2 * n * p + 3, 10), dtype)
    _check(cuda, "matmul_strided", dtype, [a, b], m * p,
           layout=(m, n, p, 1, a_rs, a_cs, 2, b_rs, b_cs))


@pytest.mark.parametrize("dtype", NARROW)
def test_matmul_batches(dtype: str) -> None:
    batch, m, n, p = 6, 40, 24, 36
    a = _to_narrow(cuda, finite(batch * m * n, 11), dtype)
    b = _to_narrow(cuda, finite(batch * n * p, 12), dtype)
    _check(cuda, "matmul_batched", dtype, [a, b], batch * m * p, layout=(batch, m, n, p))
    # b broadcast over the batch, a's matrices transposed
    _check(cuda, "matmul_batched_strided", dtype, [a, b], batch * m * p,
           layout=((batch,), m, n, p, 0, (m * n, 1, m), 0, (0, p, 1)))
