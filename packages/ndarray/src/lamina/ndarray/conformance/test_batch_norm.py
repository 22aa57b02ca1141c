"""The batch-norm kernels (optional, v2.1) against the numpy reference.

Every kernel on (N, C, S) layouts with C = 1, S = 1 and long channels, inputs
around 0 and around a large offset (where a one-pass variance in the dtype
loses every digit), trailing buffer elements that must stay untouched, empty
layouts, and the documented errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._batch_norm_cases import (
    BN_KERNELS,
    SHAPES,
    bn_inputs,
    kernel_args,
    run_batch_norm,
)
from lamina.ndarray.conformance._harness import assert_close, get


def _need(backend):
    for kernel in BN_KERNELS:
        assert kernel in OPTIONAL
        if not hasattr(backend, kernel):
            pytest.skip(f"backend has no {kernel} (optional)")


@pytest.mark.parametrize("offset", [0.0, 1000.0], ids=["centred", "offset"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_batch_norm_kernels(lamina_backend, lamina_reference, lamina_float, shape, offset):
    _need(lamina_backend)
    inputs = bn_inputs(lamina_float, *shape, seed=sum(shape), offset=offset)
    want = run_batch_norm(lamina_reference, inputs)
    got = run_batch_norm(lamina_backend, inputs)
    for name in want:  # sums in another order: "reduce"'s tolerance
        assert_close(got[name], want[name], "reduce", f"batch_norm {name} {shape}")


def test_batch_norm_stats_keeps_the_digits_of_an_offset_channel(lamina_backend, lamina_float):
    _need(lamina_backend)
    inputs = bn_inputs(lamina_float, 64, 2, 100, seed=5, offset=1e4)
    inputs["x"] = (inputs["x"].astype(np.float64) - 1e4) * 1e-2 + 1e4  # std 0.02 at 1e4
    inputs["x"] = inputs["x"].astype(lamina_float)
    got = run_batch_norm(lamina_backend, inputs)
    wide = inputs["x"].astype(np.float64)
    np.testing.assert_allclose(got["var"][:2], wide.var(axis=(0, 2)), rtol=1e-3)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 0, 4), (2, 3, 0)], ids=str)
def test_batch_norm_empty_layouts(lamina_backend, lamina_reference, lamina_float, shape):
    _need(lamina_backend)
    n, c, s = shape
    for backend in (lamina_backend, lamina_reference):
        args = kernel_args(backend, "batch_norm_apply", lamina_float, n, c, s)
        backend.batch_norm_apply(*args, n, c, s)
        args = kernel_args(backend, "batch_norm_backward", lamina_float, n, c, s)
        backend.batch_norm_backward(*args, n, c, s, True)
        assert (get(backend, args[-1]) == 0).all()  # dbias: a sum of nothing
    if c:
        args = kernel_args(lamina_backend, "batch_norm_stats", lamina_float, n, c, s)
        with pytest.raises(ValueError, match="batch_norm_stats: no values per channel"):
            lamina_backend.batch_norm_stats(*args, n, c, s)


@pytest.mark.parametrize("kernel,arg", [("batch_norm_stats", "x"), ("batch_norm_stats", "var"),
                                        ("batch_norm_apply", "out"),
                                        ("batch_norm_apply", "weight"),
                                        ("batch_norm_backward", "g"),
                                        ("batch_norm_backward", "dbias")])
def test_batch_norm_rejects_a_buffer_too_small(lamina_backend, lamina_float, kernel, arg):
    _need(lamina_backend)
    args = kernel_args(lamina_backend, kernel, lamina_float, 2, 3, 4, sizes={arg: 2})
    extra = (True,) if kernel == "batch_norm_backward" else ()
    with pytest.raises(ValueError, match=f"{kernel}: {arg} has 2 elements, .* needs"):
        getattr(lamina_backend, kernel)(*args, 2, 3, 4, *extra)
    with pytest.raises(ValueError, match=f"{kernel}: n must be >= 0"):
        getattr(lamina_backend, kernel)(*args, -1, 3, 4, *extra)


@pytest.mark.parametrize("kernel", BN_KERNELS)
def test_batch_norm_rejects_mixed_dtypes(lamina_backend, kernel):
    _need(lamina_backend)
    if "float64" not in lamina_backend.dtypes:
        pytest.skip("backend lists no float64")
    args = kernel_args(lamina_backend, kernel, "float32", 2, 3, 4)
    args[1:2] = kernel_args(lamina_backend, kernel, "float64", 2, 3, 4)[1:2]
    extra = (True,) if kernel == "batch_norm_backward" else ()
    with pytest.raises(TypeError, match=kernel):
        getattr(lamina_backend, kernel)(*args, 2, 3, 4, *extra)
