"""The optional sorting and sampling kernels of interface v2.1 (sort_last,
multinomial_last), each tested only when the backend provides it; every output
must equal the numpy reference backend's exactly."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._harness import LARGE, get, put, sample


def _need(backend, kernel):
    assert kernel in OPTIONAL
    if not hasattr(backend, kernel):
        pytest.skip(f"backend has no {kernel} (optional)")


def _sort(backend, x, size, k, descending, extra=0):
    rows = x.size // size if size else 0
    values, indices = backend.Array(rows * k, x.dtype.name), backend.Array(rows * k, "int64")
    backend.sort_last(put(backend, x, extra), values, indices, size, k, descending)
    return get(backend, values), get(backend, indices)


SPECIAL = [np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 1.0, np.nan, 0.0]


def _rows(dtype, shape, seed):
    if dtype == "bool":
        return np.random.default_rng(seed).integers(0, 2, shape).astype(bool)
    x = sample(dtype, shape, seed, -4, 4)
    if dtype == "int64":
        x.reshape(-1)[:4] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -1][:x.size]
        return x
    x = np.round(x)  # ties
    flat = x.reshape(-1)
    flat[:min(flat.size, len(SPECIAL))] = SPECIAL[:flat.size]
    return x


@pytest.mark.parametrize("shape", [(1, 1), (4, 10), (3, 1000), (0, 5), (2, 3000),
                                   (1, LARGE // 10)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_last(lamina_backend, lamina_reference, shape, dtype, descending):
    _need(lamina_backend, "sort_last")
    if dtype not in lamina_backend.dtypes:
        pytest.skip(f"backend lists no {dtype}")
    x = _rows(dtype, shape, 7)
    size = shape[1]
    for k in sorted({0, 1, min(5, size), size}):
        got = _sort(lamina_backend, x, size, k, descending, extra=3)
        want = _sort(lamina_reference, x, size, k, descending)
        for g, w, what in zip(got, want, ("values", "indices")):
            assert g.dtype == w.dtype, f"sort_last {what}: dtype {g.dtype}, expected {w.dtype}"
            np.testing.assert_array_equal(g, w, err_msg=f"sort_last {what} (k={k})")


def test_sort_last_k_out_of_range_raises_value_error(lamina_backend):
    _need(lamina_backend, "sort_last")
    x = put(lamina_backend, np.zeros(6, np.float32))
    with pytest.raises(ValueError):
        lamina_backend.sort_last(x, lamina_backend.Array(8, "float32"),
                                 lamina_backend.Array(8, "int64"), 3, 4, False)


@pytest.mark.parametrize("shape,samples", [((1, 1), 3), ((5, 17), 40), ((2, 5000), 7),
                                           ((0, 4), 2)], ids=str)
def test_multinomial_last(lamina_backend, lamina_reference, lamina_float, shape, samples):
    _need(lamina_backend, "multinomial_last")
    rows, size = shape
    p = sample(lamina_float, shape, 8, 0, 1)
    p[:, ::3] = 0
    p[:, -1] += 0.5  # every row has weight
    u = np.random.default_rng(9).random((rows, samples))
    if u.size:
        u.reshape(-1)[0] = 0.0
    outs = []
    for backend in (lamina_backend, lamina_reference):
        out = backend.Array(rows * samples, "int64")
        backend.multinomial_last(put(backend, p), put(backend, u), out, size, samples)
        outs.append(get(backend, out))
    np.testing.assert_array_equal(outs[0], outs[1], err_msg="multinomial_last")
