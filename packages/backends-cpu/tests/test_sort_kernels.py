"""sort_last and multinomial_last (interface v2.1) against numpy's stable argsort and
the numpy reference backend, over dtypes, special values, row shapes and k."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import buffer, cpu, host, ref

INT_MIN, INT_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
SPECIAL = [np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 1.0, np.nan, 0.0, -0.0, 5e-45]


def _sort(backend, x: np.ndarray, k: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    rows, size = x.shape
    values, indices = backend.Array(rows * k, x.dtype.name), backend.Array(rows * k, "int64")
    backend.sort_last(buffer(backend, x), values, indices, size, k, descending)
    return host(backend, values).reshape(rows, k), host(backend, indices).reshape(rows, k)


def _expected(x: np.ndarray, k: int, descending: bool) -> np.ndarray:
    """numpy's stable argsort with PyTorch's descending order (ties: first index first)."""
    if not descending:
        return np.argsort(x, axis=1, kind="stable")[:, :k]
    flipped = np.argsort(x[:, ::-1], axis=1, kind="stable")
    return (x.shape[1] - 1 - flipped[:, ::-1])[:, :k]


def _check(x: np.ndarray, k: int, descending: bool) -> None:
    values, indices = _sort(cpu, x, k, descending)
    want = _expected(x, k, descending)
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want, 1))
    for got, ref_out in zip((values, indices), _sort(ref, x, k, descending)):
        np.testing.assert_array_equal(got, ref_out)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_last_special_values_and_ties(dtype: str, descending: bool) -> None:
    rng = np.random.default_rng(0)
    x = np.stack([rng.permutation(np.array(SPECIAL, dtype)) for _ in range(6)])
    for k in (0, 1, 3, x.shape[1]):
        _check(x, k, descending)
    # -0.0 and 0.0 tie: the first index comes first, whatever the sign
    _, idx = _sort(cpu, np.array([[0.0, -0.0, 0.0, -0.0]], dtype), 4, descending)
    assert idx.tolist() == [[0, 1, 2, 3]]


@pytest.mark.parametrize("descending", [False, True])
def test_sort_last_int64_extremes_and_bool(descending: bool) -> None:
    ints = np.array([[5, INT_MIN, INT_MAX, -1, 0, INT_MIN, INT_MAX, 5]], np.int64)
    _check(ints, 8, descending)
    _check(ints, 2, descending)
    _check(np.array([[True, False, True, False, False]]), 5, descending)


@pytest.mark.parametrize("shape", [(3, 1), (4, 7), (2, 100), (1, 5000), (17, 333)], ids=str)
@pytest.mark.parametrize("k_of", [lambda n: 0, lambda n: 1, lambda n: min(5, n), lambda n: n])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_sort_last_matches_numpy(shape, k_of, dtype: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-20, 20, size=shape).astype(dtype)  # many ties
    for descending in (False, True):
        _check(x, k_of(shape[1]), descending)


def test_sort_last_empty_rows_and_padded_input() -> None:
    _check(np.zeros((0, 4), np.float32), 2, False)
    values = cpu.Array(0, "float32")
    cpu.sort_last(cpu.Array(0, "float32"), values, cpu.Array(0, "int64"), 0, 0, False)
    # the input may be longer than rows x size: only the first rows x size are read
    padded = buffer(cpu, np.array([3, 1, 2, -9, -9], np.float32))
    values, indices = cpu.Array(3, "float32"), cpu.Array(3, "int64")
    cpu.sort_last(padded, values, indices, 3, 3, False)
    assert host(cpu, indices).tolist() == [1, 2, 0]


def test_sort_last_errors() -> None:
    a = buffer(cpu, np.zeros(6, np.float32))
    with pytest.raises(ValueError, match=r"sort_last: k=4 is out of range for rows of size 3"):
        cpu.sort_last(a, cpu.Array(8, "float32"), cpu.Array(8, "int64"), 3, 4, False)
    with pytest.raises(TypeError, match=r"sort_last: expected values_out of the input's dtype"):
        cpu.sort_last(a, cpu.Array(4, "float64"), cpu.Array(4, "int64"), 3, 2, False)
    with pytest.raises(TypeError, match=r"int64 indices_out, got float32 and float32"):
        cpu.sort_last(a, cpu.Array(4, "float32"), cpu.Array(4, "float32"), 3, 2, False)
    with pytest.raises(ValueError, match=r"sort_last: input has 6 elements, expected 3x3"):
        cpu.sort_last(a, cpu.Array(6, "float32"), cpu.Array(6, "int64"), 3, 2, False)
    assert cpu.kernel_dtypes.get("sort_last", cpu.dtypes) == cpu.dtypes


def _multinomial(backend, p: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = backend.Array(u.size, "int64")
    backend.multinomial_last(buffer(backend, p), buffer(backend, u), out, p.shape[1],
                             u.shape[1])
    return host(backend, out).reshape(u.shape)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_last_matches_the_reference(dtype: str) -> None:
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, (9, 37)).astype(dtype)
    p[:, ::3] = 0  # zero-probability categories are never drawn
    p[4] = 0
    p[4, 36] = 2.0  # all the weight on the last category
    u = rng.random((9, 500))
    u[:, :3] = [0.0, np.nextafter(1.0, 0.0), 0.5]  # the ends of [0, 1)
    got = _multinomial(cpu, p, u)
    np.testing.assert_array_equal(got, _multinomial(ref, p, u))
    assert (np.take_along_axis(p, got, 1) > 0).all() and (got[4] == 36).all()
    # independent of the reference: searchsorted over a left-to-right float64 running sum
    cdf = np.cumsum(p.astype(np.float64), axis=1)
    want = [np.searchsorted(c, t * c[-1], side="right") for c, t in zip(cdf, u)]
    np.testing.assert_array_equal(got, np.minimum(want, p.shape[1] - 1))


def test_multinomial_last_target_at_the_total_takes_the_last_weight() -> None:
    # u == 1 (the closed end: a target of exactly the total) draws the last category
    # with weight, never a zero-weight one after it nor one past the end.
    p = np.array([[0.1, 0.2, 0.3, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]], np.float64)
    u = np.array([[1.0, 1.0], [0.5, 1.0]])
    assert _multinomial(cpu, p, u).tolist() == [[2, 2], [0, 0]]
    assert _multinomial(ref, p, u).tolist() == [[2, 2], [0, 0]]


def test_multinomial_last_errors() -> None:
    p = buffer(cpu, np.ones(6, np.float32))
    with pytest.raises(TypeError, match=r"multinomial_last: expected float64 uniforms"):
        cpu.multinomial_last(p, cpu.Array(4, "float32"), cpu.Array(4, "int64"), 3, 2)
    with pytest.raises(TypeError, match=r"multinomial_last: .*int64"):
        cpu.multinomial_last(buffer(cpu, np.ones(6, np.int64)), cpu.Array(4, "float64"),
                             cpu.Array(4, "int64"), 3, 2)
    with pytest.raises(ValueError, match=r"multinomial_last: uniforms has 2 elements, out has 4"):
        cpu.multinomial_last(p, cpu.Array(2, "float64"), cpu.Array(4, "int64"), 3, 2)
    with pytest.raises(ValueError, match=r"multinomial_last: size must be >= 1, got 0"):
        cpu.multinomial_last(p, cpu.Array(4, "float64"), cpu.Array(4, "int64"), 0, 2)
    assert cpu.kernel_dtypes["multinomial_last"] == ("float32", "float64")
