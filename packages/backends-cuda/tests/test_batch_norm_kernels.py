"""The fused batch-norm kernels (batch_norm.cu) against the numpy reference (marker
``cuda``: a GPU or the CPU emulation build): (N, C, S) layouts with C = 1, S = 1,
channels longer than a block and more channels than one grid-stride pass covers,
inputs around a large offset, both float dtypes, and the argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FLOATS, TOL, cuda, ref
from lamina.ndarray.conformance._batch_norm_cases import (
    SHAPES,
    bn_inputs,
    kernel_args,
    run_batch_norm,
)

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("shape", SHAPES + ((3, 300, 2), (2, 2, 700)), ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm_kernels_match_numpy(dtype: str, shape: tuple[int, int, int],
                                        offset: float) -> None:
    inputs = bn_inputs(dtype, *shape, seed=sum(shape), offset=offset)
    want = run_batch_norm(ref, inputs)
    got = run_batch_norm(cuda, inputs)
    # sums in a block-tree order, dx from the dtype-rounded sums
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else TOL[dtype]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], **tol, err_msg=f"{name} {shape}")


def test_batch_norm_variance_of_an_offset_float32_channel_is_exact() -> None:
    rng = np.random.default_rng(3)
    inputs = bn_inputs("float32", 32, 3, 50)
    inputs["x"] = (1e4 + rng.standard_normal((32, 3, 50)) * 1e-2).astype("float32")
    got = run_batch_norm(cuda, inputs)
    wide = inputs["x"].astype(np.float64)
    np.testing.assert_allclose(got["var"][:3], wide.var(axis=(0, 2)), rtol=1e-5)


@pytest.mark.parametrize("kernel", ["batch_norm_stats", "batch_norm_apply",
                                    "batch_norm_backward"])
def test_batch_norm_errors(kernel: str) -> None:
    extra = (True,) if kernel == "batch_norm_backward" else ()
    args = kernel_args(cuda, kernel, "float32", 2, 3, 4, sizes={"x": 5})
    with pytest.raises(ValueError, match=f"{kernel}: x has 5 elements, .* needs 24"):
        getattr(cuda, kernel)(*args, 2, 3, 4, *extra)
    args = [cuda.Array(a.size, "int64") for a in kernel_args(cuda, kernel, "float32", 2, 3, 4)]
    with pytest.raises(TypeError, match=kernel):
        getattr(cuda, kernel)(*args, 2, 3, 4, *extra)
