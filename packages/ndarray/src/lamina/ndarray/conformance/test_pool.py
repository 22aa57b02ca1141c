"""The max-pool kernels (optional, v2.1) against the numpy reference.

``max_pool2d`` must give the reference's maxima and indices exactly (a
selection, no arithmetic) on every geometry of ``_pool_cases.CASES``, with
ties, NaN and infinities in the windows; ``max_pool2d_backward`` the same
input gradient, every element written. Then the documented errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._harness import assert_close, put
from lamina.ndarray.conformance._pool_cases import (
    CASES,
    geometry,
    pool_input,
    run_max_pool,
    run_max_pool_backward,
)

KERNELS = ("max_pool2d", "max_pool2d_backward")


def _need(backend):
    for kernel in KERNELS:
        assert kernel in OPTIONAL
        if not hasattr(backend, kernel):
            pytest.skip(f"backend has no {kernel} (optional)")


@pytest.mark.parametrize("kind", ["random", "ties", "special", "neg-inf"])
@pytest.mark.parametrize("name", list(CASES))
def test_max_pool2d(lamina_backend, lamina_reference, lamina_float, name, kind):
    _need(lamina_backend)
    case = CASES[name]
    x = pool_input(case.shape, lamina_float, kind, seed=len(name))
    want, want_idx = run_max_pool(lamina_reference, x, case)
    got, got_idx = run_max_pool(lamina_backend, x, case)
    np.testing.assert_array_equal(got_idx, want_idx, err_msg=f"{name} indices")
    assert_close(got, want, "ewise", f"{name} maxima")

    grad = pool_input(want.shape, lamina_float, "random", seed=1)
    want_in = run_max_pool_backward(lamina_reference, grad, want_idx, case)
    got_in = run_max_pool_backward(lamina_backend, grad, want_idx, case)
    assert_close(got_in, want_in, "reduce", f"{name} input gradient")


def test_max_pool2d_zero_planes(lamina_backend, lamina_float):
    _need(lamina_backend)
    case = CASES["2x2"]._replace(shape=(0, 3, 8, 8))
    out, idx = run_max_pool(lamina_backend, np.zeros(case.shape, lamina_float), case)
    assert out.shape == idx.shape == (0, 3, 4, 4)


def test_max_pool2d_rejects_a_buffer_too_small(lamina_backend, lamina_float):
    _need(lamina_backend)
    case = CASES["2x2"]
    x = put(lamina_backend, np.zeros(10, lamina_float))
    out, idx = lamina_backend.Array(96, lamina_float), lamina_backend.Array(96, "int64")
    with pytest.raises(ValueError, match="max_pool2d: input has 10 elements"):
        lamina_backend.max_pool2d(x, out, idx, *geometry(case))


@pytest.mark.parametrize("position,value,what", [(5, 0, "kh"), (7, 0, "sh"), (12, -1, "dw"),
                                                 (9, -1, "ph")])
def test_max_pool2d_rejects_bad_geometry(lamina_backend, lamina_float, position, value, what):
    _need(lamina_backend)
    args = list(geometry(CASES["2x2"]))
    args[position] = value
    x = put(lamina_backend, np.zeros(384, lamina_float))
    out, idx = lamina_backend.Array(96, lamina_float), lamina_backend.Array(96, "int64")
    with pytest.raises(ValueError, match=f"max_pool2d: {what} must be"):
        lamina_backend.max_pool2d(x, out, idx, *args)


def test_max_pool2d_rejects_float_indices_and_mixed_dtypes(lamina_backend, lamina_float):
    _need(lamina_backend)
    args = geometry(CASES["2x2"])
    x = put(lamina_backend, np.zeros(384, lamina_float))
    out = lamina_backend.Array(96, lamina_float)
    with pytest.raises(TypeError, match="max_pool2d: indices must be int64"):
        lamina_backend.max_pool2d(x, out, lamina_backend.Array(96, lamina_float), *args)
    other = "float32" if lamina_float == "float64" else "float64"
    if other in lamina_backend.dtypes:
        with pytest.raises(TypeError, match="max_pool2d_backward"):
            lamina_backend.max_pool2d_backward(
                lamina_backend.Array(96, other), lamina_backend.Array(96, "int64"),
                lamina_backend.Array(384, lamina_float), *args)
