"""The fused batch-norm kernels (batch_norm.cc) against the numpy reference, on every
instruction-set path this CPU has: (N, C, S) layouts with C = 1, S = 1, S around the
accumulator width and long channels, short ones over many channels (the row loops),
inputs around a large offset, both float dtypes;
several threads give the single-thread result bit for bit; and the argument errors."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from conftest import FLOATS, TOL, cpu, ref
from lamina.ndarray.conformance._batch_norm_cases import (
    SHAPES,
    bn_inputs,
    kernel_args,
    run_batch_norm,
)

ORDER = ("generic", "avx2", "avx512")
AVAILABLE = ORDER[: ORDER.index(cpu.cpu_isa()) + 1]


@pytest.fixture(params=ORDER)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param not in AVAILABLE:
        pytest.skip(f"this CPU (or build) runs up to {cpu.cpu_isa()}, not {request.param}")
    old = cpu.isa()
    cpu.set_isa(request.param)
    try:
        yield request.param
    finally:
        cpu.set_isa(old)


# with S around kShortBlock (32), where the row loops over many channels hand over to
# the channel loops, and a ResNet's last maps (1x1, 2x2, 5x5)
ROW_SHAPES = ((64, 128, 1), (32, 64, 4), (9, 5, 25), (4, 3, 31), (4, 3, 32))


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("shape", SHAPES + ((2, 3, 7), (2, 3, 8), (3, 2, 9), (128, 4, 1))
                         + ROW_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm_kernels_match_numpy(isa: str, dtype: str, shape: tuple[int, int, int],
                                        offset: float) -> None:
    inputs = bn_inputs(dtype, *shape, seed=sum(shape), offset=offset)
    want = run_batch_norm(ref, inputs)
    got = run_batch_norm(cpu, inputs)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else TOL[dtype]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], **tol, err_msg=f"{name} {shape} ({isa})")


@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm_variance_of_an_offset_float32_channel_is_exact(isa: str, dtype: str) -> None:
    # std 0.01 at 1e4: E[x^2] - E[x]^2 in float32 would be noise; double sums are not
    rng = np.random.default_rng(3)
    inputs = bn_inputs(dtype, 32, 3, 50)
    inputs["x"] = (1e4 + rng.standard_normal((32, 3, 50)) * 1e-2).astype(dtype)
    got = run_batch_norm(cpu, inputs)
    wide = inputs["x"].astype(np.float64)
    np.testing.assert_allclose(got["mean"][:3], wide.mean(axis=(0, 2)), rtol=1e-7)
    np.testing.assert_allclose(got["var"][:3], wide.var(axis=(0, 2)), rtol=1e-5)


@pytest.mark.parametrize("shape", [(8, 64, 1024), (256, 256, 1), (128, 128, 4), (64, 96, 25)],
                         ids=str)
def test_batch_norm_results_do_not_depend_on_the_thread_count(shape) -> None:
    inputs = bn_inputs("float32", *shape, seed=4, offset=5.0)
    old = cpu.num_threads()
    try:
        cpu.set_num_threads(1)
        one = run_batch_norm(cpu, inputs)
        cpu.set_num_threads(4)
        many = run_batch_norm(cpu, inputs)
    finally:
        cpu.set_num_threads(old)
    for name in one:
        np.testing.assert_array_equal(one[name], many[name], err_msg=name)


def test_batch_norm_kernels_are_listed_for_floats_only() -> None:
    for name in ("batch_norm_stats", "batch_norm_apply", "batch_norm_backward"):
        assert tuple(cpu.kernel_dtypes[name]) == FLOATS
    args = kernel_args(cpu, "batch_norm_stats", "float32", 2, 3, 4)
    args = [cpu.Array(a.size, "int64") for a in args]
    with pytest.raises(TypeError, match="batch_norm_stats"):
        cpu.batch_norm_stats(*args, 2, 3, 4)


def test_batch_norm_sizes_that_overflow_are_a_value_error() -> None:
    args = kernel_args(cpu, "batch_norm_apply", "float32", 1, 1, 1)
    with pytest.raises(ValueError, match="batch_norm_apply: size .* overflows int64"):
        cpu.batch_norm_apply(*args, 2**40, 2**20, 2**10)
