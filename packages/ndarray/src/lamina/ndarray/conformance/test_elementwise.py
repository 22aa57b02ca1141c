"""ewise_*, scalar_*, ewise_where and ewise_cast on compact operands."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import (
    BINARY_OPS,
    COMPARISON_OPS,
    REVERSED_SCALAR_OPS,
    UNARY_OPS,
)
from lamina.ndarray.conformance._harness import (
    LARGE,
    OUT,
    call,
    compare,
    get,
    put,
    sample,
)

SIZES = [0, 1, 7, 1000, LARGE]


def _operands(op, dtype, size, seed=0):
    """Inputs inside the op's domain; comparisons get ties on purpose."""
    if op in COMPARISON_OPS or dtype == "int64":
        return (sample(dtype, size, seed, -3, 4).astype(dtype),
                sample(dtype, size, seed + 1, -3, 4).astype(dtype))
    if op in ("div", "rdiv"):
        b = sample(dtype, size, seed + 1, 0.5, 3) * np.where(np.arange(size) % 2, 1, -1)
        return sample(dtype, size, seed), b.astype(dtype)
    if op in ("power", "rpower"):
        return sample(dtype, size, seed, 0.5, 2), sample(dtype, size, seed + 1, -2, 2)
    return sample(dtype, size, seed), sample(dtype, size, seed + 1)


def _unary_operand(op, dtype, size):
    if op in ("log", "sqrt"):
        return sample(dtype, size, 3, 0.1, 5)
    a = sample(dtype, size, 3)
    if op == "sign":
        a[::5] = 0
    return a


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_ewise_binary(lamina_backend, lamina_reference, lamina_float, op, size):
    a, b = _operands(op, lamina_float, size)
    compare(lamina_backend, lamina_reference, f"ewise_{op}", [a, b, OUT],
            (size, lamina_float))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", BINARY_OPS + REVERSED_SCALAR_OPS)
def test_scalar_binary(lamina_backend, lamina_reference, lamina_float, op, size):
    a, _ = _operands(op, lamina_float, size)
    value = {"power": 2.0, "rpower": 1.7, "rdiv": -2.5, "div": 0.75}.get(op, 1.0)
    compare(lamina_backend, lamina_reference, f"scalar_{op}", [a, value, OUT],
            (size, lamina_float))


@pytest.mark.parametrize("op", COMPARISON_OPS)
def test_comparisons_on_int64(lamina_backend, lamina_reference, op):
    a, b = _operands(op, "int64", 1001)
    got = compare(lamina_backend, lamina_reference, f"ewise_{op}", [a, b, OUT],
                  (1001, "int64"), kind="exact")
    assert set(np.unique(got)) <= {0, 1}
    compare(lamina_backend, lamina_reference, f"scalar_{op}", [a, 1, OUT],
            (1001, "int64"), kind="exact")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", UNARY_OPS)
def test_ewise_unary(lamina_backend, lamina_reference, lamina_float, op, size):
    a = _unary_operand(op, lamina_float, size)
    compare(lamina_backend, lamina_reference, f"ewise_{op}", [a, OUT], (size, lamina_float))


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan(lamina_backend, lamina_float, op):
    a = np.array([np.nan, 1, np.nan, -np.inf], lamina_float)
    b = np.array([2, np.nan, np.nan, 0], lamina_float)
    got = call(lamina_backend, f"ewise_{op}", [a, b, OUT], (4, lamina_float))
    np.testing.assert_array_equal(got, getattr(np, op)(a, b))


@pytest.mark.parametrize("op", ["add", "mul", "maximum", "ge"])
def test_ewise_in_place(lamina_backend, lamina_reference, lamina_float, op):
    a, b = _operands(op, lamina_float, 1001)
    want = call(lamina_reference, f"ewise_{op}", [a, b, OUT], (1001, lamina_float))
    buf_a, buf_b = put(lamina_backend, a), put(lamina_backend, b)
    getattr(lamina_backend, f"ewise_{op}")(buf_a, buf_b, buf_a)
    np.testing.assert_allclose(get(lamina_backend, buf_a), want, rtol=1e-6)
    np.testing.assert_array_equal(get(lamina_backend, buf_b), b)


@pytest.mark.parametrize("kernel", ["ewise_add", "ewise_exp", "scalar_mul", "ewise_where",
                                    "ewise_cast"])
def test_inputs_longer_than_out_use_the_first_elements(lamina_backend, lamina_reference,
                                                        lamina_float, kernel):
    a, b = _operands("add", lamina_float, 37)
    args = {"ewise_add": [a, b, OUT], "ewise_exp": [a, OUT], "scalar_mul": [a, 3.0, OUT],
            "ewise_where": [a > 0, a, b, OUT], "ewise_cast": [a, OUT]}[kernel]
    args = [x.astype(lamina_float) if isinstance(x, np.ndarray) else x for x in args]
    compare(lamina_backend, lamina_reference, kernel, args, (37, lamina_float), extra=11)


@pytest.mark.parametrize("cond_dtype", ["same", "int64"])
@pytest.mark.parametrize("size", [0, 7, LARGE])
def test_ewise_where(lamina_backend, lamina_reference, lamina_dtype, cond_dtype, size):
    a, b = sample(lamina_dtype, size, 1), sample(lamina_dtype, size, 2)
    cond = (sample("int64", size, 3, 0, 3) - 1).astype(
        lamina_dtype if cond_dtype == "same" else "int64")
    compare(lamina_backend, lamina_reference, "ewise_where", [cond, a, b, OUT],
            (size, lamina_dtype), kind="exact")


@pytest.mark.parametrize("target", ["float32", "float64", "int64"])
@pytest.mark.parametrize("size", [0, 7, LARGE])
def test_ewise_cast(lamina_backend, lamina_reference, lamina_dtype, target, size):
    if target not in lamina_backend.dtypes:
        pytest.skip(f"backend lists no {target}")
    a = sample(lamina_dtype, size, 4, -1000, 1000)
    if lamina_dtype != "int64":
        a[:4] = np.array([-2.7, 2.7, -0.5, 0.5])[:size]  # truncation toward zero
    compare(lamina_backend, lamina_reference, "ewise_cast", [a, OUT], (size, target),
            kind="exact" if target == "int64" or lamina_dtype == target else "ewise")


@pytest.mark.parametrize("kernel,args", [
    ("ewise_add", lambda a, short: [a, short, OUT]),
    ("ewise_add", lambda a, short: [short, a, OUT]),
    ("scalar_add", lambda a, short: [short, 1.0, OUT]),
    ("ewise_neg", lambda a, short: [short, OUT]),
    ("ewise_where", lambda a, short: [short, a, a, OUT]),
    ("ewise_cast", lambda a, short: [short, OUT]),
], ids=["ewise-b", "ewise-a", "scalar", "unary", "where", "cast"])
def test_short_operand_raises_value_error(lamina_backend, kernel, args):
    a, short = np.ones(8, np.float32), np.ones(5, np.float32)
    with pytest.raises(ValueError):
        call(lamina_backend, kernel, args(a, short), (8, "float32"))
