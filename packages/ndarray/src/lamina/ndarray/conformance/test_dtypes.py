"""Interface v1.1: bool buffers, the int64 and bool kernels a backend declares, and
the kernels v1.1 added (``reduce_prod``, ``cumsum_last``) on each dtype they take.

Each case runs where the backend's ``kernel_dtypes`` (read as interface v1.0
for a backend that declares no minor version: arithmetic on its floats only)
say the kernel accepts the dtype, and skips with that reason otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import (
    BINARY_OPS,
    COMPARISON_OPS,
    OPTIONAL_BINARY_OPS,
    REVERSED_SCALAR_OPS,
    kernel_dtypes,
)
from lamina.ndarray._optable import OPS
from lamina.ndarray.conformance._harness import (
    LARGE,
    OUT,
    READ_LAYOUTS,
    call,
    compare,
    get,
    layout_of,
    put,
)

EXACT = ("int64", "bool")
SIZES = [0, 1, 7, 1000, LARGE]


def _need(backend, kernel: str, dtype: str) -> None:
    """Skip unless both the backend and the reference take ``dtype`` in ``kernel``."""
    if not hasattr(backend, kernel):
        pytest.skip(f"backend has no optional {kernel}")
    if dtype not in getattr(backend, "dtypes", ()):
        pytest.skip(f"backend lists no {dtype}")
    if dtype not in kernel_dtypes(backend)[kernel]:
        pytest.skip(f"backend's {kernel} does not accept {dtype}")


def _values(dtype: str, size: int, seed: int, low: int = -5, high: int = 6,
            nonzero: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size).astype(bool)
    v = rng.integers(low, high, size, dtype=np.int64)
    if nonzero:
        v[v == 0] = 3
    return v


def _out_dtype(op: str, dtype: str, backend) -> str:
    """A comparison writes bool; on a backend without bool (v1.0), 1/0 in ``dtype``."""
    return "bool" if op in COMPARISON_OPS and "bool" in backend.dtypes else dtype


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", BINARY_OPS + OPTIONAL_BINARY_OPS)
@pytest.mark.parametrize("dtype", EXACT)
def test_ewise_binary_exact(lamina_backend, lamina_reference, dtype, op, size):
    _need(lamina_backend, f"ewise_{op}", dtype)
    _need(lamina_reference, f"ewise_{op}", dtype)
    exponent = OPS[op].domain == "exponent"
    a = _values(dtype, size, 1, 0 if exponent else -5)
    b = _values(dtype, size, 2, 0 if exponent else -5, 4 if exponent else 6,
                nonzero=OPS[op].domain == "divisor")
    compare(lamina_backend, lamina_reference, f"ewise_{op}", [a, b, OUT],
            (size, _out_dtype(op, dtype, lamina_backend)), kind="exact")


@pytest.mark.parametrize("op", BINARY_OPS + REVERSED_SCALAR_OPS)
@pytest.mark.parametrize("dtype", EXACT)
def test_scalar_binary_exact(lamina_backend, lamina_reference, dtype, op):
    _need(lamina_backend, f"scalar_{op}", dtype)
    _need(lamina_reference, f"scalar_{op}", dtype)
    a = _values(dtype, 1001, 3, 0 if "power" in op else -5)
    value = True if dtype == "bool" else {"power": 3, "rpower": 2}.get(op, -2)
    compare(lamina_backend, lamina_reference, f"scalar_{op}", [a, value, OUT],
            (1001, _out_dtype(op, dtype, lamina_backend)), kind="exact")


@pytest.mark.parametrize("op", COMPARISON_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_comparisons_write_bool(lamina_backend, lamina_reference, dtype, op):
    _need(lamina_backend, "Array", "bool")
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, 1001).astype(dtype)
    b = rng.integers(-3, 4, 1001).astype(dtype)
    compare(lamina_backend, lamina_reference, f"ewise_{op}", [a, b, OUT], (1001, "bool"),
            kind="exact")
    compare(lamina_backend, lamina_reference, f"scalar_{op}", [a, 1, OUT], (1001, "bool"),
            kind="exact")


@pytest.mark.parametrize("op", ["neg", "abs", "sign", "bitwise_not"])
@pytest.mark.parametrize("dtype", EXACT)
def test_ewise_unary_exact(lamina_backend, lamina_reference, dtype, op):
    _need(lamina_backend, f"ewise_{op}", dtype)
    _need(lamina_reference, f"ewise_{op}", dtype)
    a = _values(dtype, 1001, 5)
    compare(lamina_backend, lamina_reference, f"ewise_{op}", [a, OUT], (1001, dtype),
            kind="exact")


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (64, 1000), (1, LARGE)], ids=str)
@pytest.mark.parametrize("dtype", EXACT)
def test_reduce_exact(lamina_backend, lamina_reference, dtype, op, shape):
    _need(lamina_backend, f"reduce_{op}", dtype)
    _need(lamina_reference, f"reduce_{op}", dtype)
    rows, size = shape
    a = _values(dtype, rows * size, 6).reshape(shape)
    out = "int64" if op == "argmax" else dtype
    compare(lamina_backend, lamina_reference, f"reduce_{op}", [a, OUT, size], (rows, out),
            kind="exact")


def test_bool_buffers_round_trip(lamina_backend):
    _need(lamina_backend, "Array", "bool")
    a = _values("bool", 1001, 7)
    buf = put(lamina_backend, a)
    assert get(lamina_backend, buf).dtype == np.bool_
    np.testing.assert_array_equal(get(lamina_backend, buf), a)
    lamina_backend.fill(buf, True)
    assert get(lamina_backend, buf).all()


@pytest.mark.parametrize("layout", list(READ_LAYOUTS), ids=str)
def test_bool_compact(lamina_backend, layout):
    _need(lamina_backend, "compact", "bool")
    n, make = READ_LAYOUTS[layout]
    base = _values("bool", n, 8)
    view = make(base)
    shape, strides, offset = layout_of(base, view)
    got = call(lamina_backend, "compact", [base, OUT, shape, strides, offset],
               (view.size, "bool"))
    np.testing.assert_array_equal(got, view.reshape(-1))


@pytest.mark.parametrize("to", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("src", ["float32", "float64", "int64", "bool"])
def test_cast_between_dtypes(lamina_backend, lamina_reference, src, to):
    for dtype in (src, to):
        _need(lamina_backend, "ewise_cast", dtype)
    rng = np.random.default_rng(9)
    a = (rng.integers(-3, 4, 1001) * (0.5 if src.startswith("float") else 1)).astype(src)
    compare(lamina_backend, lamina_reference, "ewise_cast", [a, OUT], (1001, to),
            kind="exact")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_where_with_a_bool_condition(lamina_backend, lamina_reference, dtype):
    _need(lamina_backend, "ewise_where", "bool")
    _need(lamina_backend, "ewise_where", dtype)
    cond = _values("bool", 1001, 10)
    a, b = (_values("int64", 1001, s).astype(dtype) for s in (11, 12))
    compare(lamina_backend, lamina_reference, "ewise_where", [cond, a, b, OUT],
            (1001, dtype), kind="exact")


@pytest.mark.parametrize("op", ["lt", "eq", "add"])
def test_ewise_strided_exact(lamina_backend, lamina_reference, op):
    _need(lamina_backend, f"ewise_strided_{op}", "int64")
    base = _values("int64", 60, 13)
    view = base.reshape(3, 4, 5).transpose(2, 0, 1)
    other = _values("int64", 60, 14).reshape(5, 3, 4)
    shape, strides, offset = layout_of(base, view)
    args = [base, other.reshape(-1), OUT, shape, strides, offset, (12, 4, 1), 0]
    compare(lamina_backend, lamina_reference, f"ewise_strided_{op}", args,
            (60, _out_dtype(op, "int64", lamina_backend)), kind="exact")


# ------------------------------------------------- v1.1 kernels: reduce_prod, cumsum_last
NUMBERS = ("float32", "float64", "int64")
ROWS = [(1, 1), (3, 7), (4, 0), (0, 5), (64, 1000), (1, LARGE), (LARGE, 1)]


def _factors(dtype: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    """Products that stay finite and meaningful however long the row: floats near 1
    (a row's log-product has a spread of about 1), integers of small magnitude with
    zeros in short rows only (int64 products wrap alike in any order)."""
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        choices = [-2, -1, 0, 1, 1, 2, 3] if shape[1] <= 7 else [-1, 1, 1, 1, 2]
        return rng.choice(np.array(choices, np.int64), size=shape)
    spread = 1 / np.sqrt(max(shape[1], 1))
    return np.exp(rng.normal(0, spread, shape) * rng.choice([-1, 1], shape)).astype(dtype)


@pytest.mark.parametrize("shape", ROWS, ids=str)
@pytest.mark.parametrize("dtype", NUMBERS)
def test_reduce_prod(lamina_backend, lamina_reference, dtype, shape):
    _need(lamina_backend, "reduce_prod", dtype)
    rows, size = shape
    a = _factors(dtype, shape, 21)
    a[:, :1] *= -1  # negative products too
    got = compare(lamina_backend, lamina_reference, "reduce_prod", [a, OUT, size],
                  (rows, dtype), kind="large" if size >= 10_000 else "reduce", extra=13)
    if size == 0:
        np.testing.assert_array_equal(got, np.ones(rows))  # the empty product


@pytest.mark.parametrize("shape", ROWS, ids=str)
@pytest.mark.parametrize("dtype", NUMBERS)
def test_cumsum_last(lamina_backend, lamina_reference, dtype, shape):
    _need(lamina_backend, "cumsum_last", dtype)
    rows, size = shape
    # positive floats, so that a relative error is meaningful all along the row
    a = _values(dtype, rows * size, 22) if dtype == "int64" else \
        np.random.default_rng(22).uniform(0, 1, rows * size).astype(dtype)
    compare(lamina_backend, lamina_reference, "cumsum_last", [a, OUT, size],
            (rows * size, dtype), kind="large" if size >= 10_000 else "reduce", extra=13)


@pytest.mark.parametrize("kernel", ["reduce_prod", "cumsum_last"])
def test_v11_kernels_reject_bad_sizes_and_dtypes(lamina_backend, kernel):
    _need(lamina_backend, kernel, "float32")
    out_size = 3 if kernel == "reduce_prod" else 12
    fn = getattr(lamina_backend, kernel)
    with pytest.raises(ValueError):  # 3 rows of 4 need 12 elements
        fn(put(lamina_backend, np.zeros(11, np.float32)), lamina_backend.Array(out_size,
                                                                             "float32"), 4)
    with pytest.raises(ValueError):  # 4 rows of 2**62: 2**64 elements wrap to 0 in int64_t
        fn(put(lamina_backend, np.zeros(12, np.float32)), lamina_backend.Array(4, "float32"),
           2**62)
    if "int64" in lamina_backend.dtypes:
        with pytest.raises(TypeError):
            fn(put(lamina_backend, np.zeros(12, np.float32)),
               lamina_backend.Array(out_size, "int64"), 4)
    if kernel == "cumsum_last":
        with pytest.raises(ValueError):  # 10 elements are not rows of 4
            fn(put(lamina_backend, np.zeros(12, np.float32)),
               lamina_backend.Array(10, "float32"), 4)
