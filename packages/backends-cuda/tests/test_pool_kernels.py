"""The max-pool kernels (pool.cu) against the numpy reference (marker ``cuda``: a GPU or
the CPU emulation build): maxima and indices exactly (ties, NaN, infinities, padding,
dilation, ceil-mode windows, overlapping windows, batch 1, odd sizes, a grid of many
blocks); the backward's gather gives the reference's scatter, every element written,
and the same bits on every run (no atomics); and the argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FLOATS, TOL, cuda, ref
from lamina.ndarray.conformance._pool_cases import (
    CASES,
    PoolCase,
    geometry,
    pool_input,
    run_max_pool,
    run_max_pool_backward,
)

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("kind", ("random", "ties", "special", "neg-inf"))
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool2d_matches_numpy(dtype: str, name: str, kind: str) -> None:
    case = CASES[name]
    x = pool_input(case.shape, dtype, kind, seed=3)
    want, want_idx = run_max_pool(ref, x, case)
    got, got_idx = run_max_pool(cuda, x, case)
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(got, want)
    grad = pool_input(want.shape, dtype, "random", seed=4)
    np.testing.assert_allclose(run_max_pool_backward(cuda, grad, got_idx, case),
                               run_max_pool_backward(ref, grad, want_idx, case), **TOL[dtype])


def test_backward_sums_overlapping_windows_in_output_order() -> None:
    # Stride 1, 3x3 windows on tied values: an element is chosen by up to 9 windows; the
    # gather adds them in the order the cpu backend's scatter does, so the bits repeat.
    case = PoolCase((3, 4, 11, 13), (3, 3), (1, 1), (1, 1))
    x = pool_input(case.shape, "float32", "ties", seed=9)
    _, idx = run_max_pool(cuda, x, case)
    grad = pool_input(idx.shape, "float32", "random", seed=10)
    first = run_max_pool_backward(cuda, grad, idx, case)
    np.testing.assert_array_equal(run_max_pool_backward(cuda, grad, idx, case), first)
    np.testing.assert_allclose(first, run_max_pool_backward(ref, grad, idx, case),
                               **TOL["float32"])


def test_max_pool2d_errors_name_the_kernel() -> None:
    args = geometry(CASES["2x2"])
    x = cuda.Array(384, "float32")
    with pytest.raises(ValueError, match=r"max_pool2d: indices has 10 elements"):
        cuda.max_pool2d(x, cuda.Array(96, "float32"), cuda.Array(10, "int64"), *args)
    with pytest.raises(ValueError, match="max_pool2d_backward: dh must be >= 1, got 0"):
        cuda.max_pool2d_backward(cuda.Array(96, "float32"), cuda.Array(96, "int64"), x,
                                 *args[:11], 0, args[12])
    with pytest.raises(TypeError, match="max_pool2d: indices must be int64, got float32"):
        cuda.max_pool2d(x, cuda.Array(96, "float32"), cuda.Array(96, "float32"), *args)


def test_max_pool_kernel_dtypes_are_declared() -> None:
    for kernel in ("max_pool2d", "max_pool2d_backward"):
        assert tuple(cuda.kernel_dtypes[kernel]) == FLOATS
