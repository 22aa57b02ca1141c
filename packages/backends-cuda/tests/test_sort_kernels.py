"""sort_last and multinomial_last (interface v2.1) against numpy's stable argsort and
the numpy reference backend, on a GPU or the emulated build (marker ``cuda``): both
the shared-memory path (rows of up to 2048) and the global-scratch path."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cuda, ref

pytestmark = pytest.mark.cuda

SPECIAL = [np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 1.0, np.nan, 0.0, -0.0, 5e-45]
INT_MIN, INT_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _buffer(backend, x: np.ndarray):
    flat = np.ascontiguousarray(x).reshape(-1)
    buf = backend.Array(flat.size, flat.dtype.name)
    backend.from_numpy(flat, buf)
    return buf


def _host(backend, buf) -> np.ndarray:
    return backend.to_numpy(buf, (buf.size,), (1,), 0)


def _sort(backend, x: np.ndarray, k: int, descending: bool):
    rows, size = x.shape
    values, indices = backend.Array(rows * k, x.dtype.name), backend.Array(rows * k, "int64")
    backend.sort_last(_buffer(backend, x), values, indices, size, k, descending)
    return _host(backend, values).reshape(rows, k), _host(backend, indices).reshape(rows, k)


def _check(x: np.ndarray, k: int, descending: bool) -> None:
    values, indices = _sort(cuda, x, k, descending)
    if descending:
        flipped = np.argsort(x[:, ::-1], axis=1, kind="stable")
        want = (x.shape[1] - 1 - flipped[:, ::-1])[:, :k]
    else:
        want = np.argsort(x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want, 1))
    for got, theirs in zip((values, indices), _sort(ref, x, k, descending)):
        np.testing.assert_array_equal(got, theirs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_last_special_values_and_ties(dtype: str, descending: bool) -> None:
    rng = np.random.default_rng(0)
    x = np.stack([rng.permutation(np.array(SPECIAL, dtype)) for _ in range(5)])
    for k in (0, 1, 4, x.shape[1]):
        _check(x, k, descending)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_last_int64_extremes_and_bool(descending: bool) -> None:
    _check(np.array([[5, INT_MIN, INT_MAX, -1, 0, INT_MIN, INT_MAX, 5]], np.int64), 8,
           descending)
    _check(np.array([[True, False, True, False, False]]), 3, descending)


# (3, 1): one element; (5, 64) and (2, 2048): shared memory; (1, 2049), (3, 3000): global
@pytest.mark.parametrize("shape", [(3, 1), (5, 64), (2, 2048), (1, 2049), (3, 3000)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_sort_last_matches_numpy(shape, dtype: str) -> None:
    x = np.random.default_rng(1).integers(-30, 30, size=shape).astype(dtype)  # ties
    for descending in (False, True):
        for k in sorted({0, 1, min(5, shape[1]), shape[1]}):
            _check(x, k, descending)


def test_sort_last_empty_and_errors() -> None:
    _check(np.zeros((0, 4), np.float32), 2, False)
    a = _buffer(cuda, np.zeros(6, np.float32))
    with pytest.raises(ValueError, match=r"sort_last: k=4 is out of range for rows of size 3"):
        cuda.sort_last(a, cuda.Array(8, "float32"), cuda.Array(8, "int64"), 3, 4, False)
    with pytest.raises(TypeError, match=r"int64 indices_out, got float32 and float32"):
        cuda.sort_last(a, cuda.Array(4, "float32"), cuda.Array(4, "float32"), 3, 2, False)
    with pytest.raises(ValueError, match=r"sort_last: input has 6 elements, expected 3x3"):
        cuda.sort_last(a, cuda.Array(6, "float32"), cuda.Array(6, "int64"), 3, 2, False)


def _multinomial(backend, p: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = backend.Array(u.size, "int64")
    backend.multinomial_last(_buffer(backend, p), _buffer(backend, u), out, p.shape[1],
                             u.shape[1])
    return _host(backend, out).reshape(u.shape)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_last_matches_the_reference(dtype: str) -> None:
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, (5, 37)).astype(dtype)
    p[:, ::3] = 0
    p[4] = 0
    p[4, 20] = 2.0
    u = rng.random((5, 200))
    u[:, :3] = [0.0, 1.0, 0.5]  # the ends: 1.0 takes the last category with weight
    got = _multinomial(cuda, p, u)
    np.testing.assert_array_equal(got, _multinomial(ref, p, u))
    assert (np.take_along_axis(p, got, 1) > 0).all() and (got[4] == 20).all()


def test_multinomial_last_errors() -> None:
    p = _buffer(cuda, np.ones(6, np.float32))
    with pytest.raises(TypeError, match=r"multinomial_last: expected float64 uniforms"):
        cuda.multinomial_last(p, cuda.Array(4, "float32"), cuda.Array(4, "int64"), 3, 2)
    with pytest.raises(ValueError, match=r"multinomial_last: uniforms has 2 elements, out has 4"):
        cuda.multinomial_last(p, cuda.Array(2, "float64"), cuda.Array(4, "int64"), 3, 2)
    assert cuda.kernel_dtypes["multinomial_last"] == ("float32", "float64")
