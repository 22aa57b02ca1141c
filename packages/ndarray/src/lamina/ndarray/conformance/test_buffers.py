"""Metadata, buffers (Array, from_numpy, to_numpy, fill) and dtype errors."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import API_VERSION, NARROW_DTYPES, missing_kernels
from lamina.ndarray.conformance._harness import LARGE, get, put, sample

KNOWN_DTYPES = ("float32", "float64", "int64", "bool")


def test_metadata(lamina_backend):
    assert isinstance(lamina_backend.name, str) and lamina_backend.name
    assert lamina_backend.api_version == API_VERSION
    assert missing_kernels(lamina_backend) == []
    dtypes = tuple(lamina_backend.dtypes)
    assert "float32" in dtypes and "int64" in dtypes, dtypes
    assert set(dtypes) <= set(KNOWN_DTYPES + NARROW_DTYPES), dtypes
    assert lamina_backend.is_available() is True
    assert lamina_backend.unavailable_reason() == ""


@pytest.mark.parametrize("size", [0, 1, 7, LARGE])
def test_array_has_size_and_dtype(lamina_backend, lamina_dtype, size):
    buf = lamina_backend.Array(size, lamina_dtype)
    assert buf.size == size
    assert buf.dtype == lamina_dtype


@pytest.mark.parametrize("size", [0, 1, 7, 1000, LARGE])
def test_round_trip(lamina_backend, lamina_dtype, size):
    values = sample(lamina_dtype, size, seed=size, low=-1000, high=1000)
    got = get(lamina_backend, put(lamina_backend, values))
    assert got.dtype == values.dtype and got.shape == values.shape
    np.testing.assert_array_equal(got, values)


def test_to_numpy_returns_a_copy(lamina_backend, lamina_dtype):
    buf = put(lamina_backend, np.arange(6).astype(lamina_dtype))
    first = get(lamina_backend, buf)
    first[:] = 0
    np.testing.assert_array_equal(get(lamina_backend, buf), np.arange(6))


def test_to_numpy_is_c_contiguous_with_shape(lamina_backend, lamina_dtype):
    buf = put(lamina_backend, np.arange(12).astype(lamina_dtype))
    got = lamina_backend.to_numpy(buf, (3, 4), (1, 3), 0)
    assert got.flags.c_contiguous and got.shape == (3, 4)
    np.testing.assert_array_equal(got, np.arange(12).reshape(4, 3).T)


@pytest.mark.parametrize("value", [0, 1, -2.5, 7])
@pytest.mark.parametrize("size", [0, 5, LARGE])
def test_fill(lamina_backend, lamina_dtype, size, value):
    buf = lamina_backend.Array(size, lamina_dtype)
    lamina_backend.fill(buf, value)
    want = np.full(size, value).astype(lamina_dtype)
    np.testing.assert_array_equal(get(lamina_backend, buf), want)


def test_float_special_values_survive(lamina_backend, lamina_float):
    values = np.array([np.inf, -np.inf, np.nan, -0.0, np.finfo(lamina_float).tiny,
                       np.finfo(lamina_float).max], dtype=lamina_float)
    got = get(lamina_backend, put(lamina_backend, values))
    np.testing.assert_array_equal(got, values)
    assert np.signbit(got[3])


def test_from_numpy_wrong_size_raises_value_error(lamina_backend, lamina_dtype):
    buf = lamina_backend.Array(4, lamina_dtype)
    with pytest.raises(ValueError, match="from_numpy"):
        lamina_backend.from_numpy(np.zeros(5, lamina_dtype), buf)


def test_negative_size_raises_value_error(lamina_backend):
    with pytest.raises(ValueError):
        lamina_backend.Array(-1, "float32")


@pytest.mark.parametrize("dtype", ["complex64", "int8", "float128", "nonsense"])
def test_unsupported_dtype_raises_type_error(lamina_backend, dtype):
    with pytest.raises(TypeError):
        lamina_backend.Array(4, dtype)


@pytest.mark.parametrize("dtype", KNOWN_DTYPES + NARROW_DTYPES)
def test_unlisted_dtype_raises_type_error(lamina_backend, dtype):
    if dtype in lamina_backend.dtypes:
        pytest.skip(f"backend lists {dtype}")
    with pytest.raises(TypeError):
        lamina_backend.Array(4, dtype)
