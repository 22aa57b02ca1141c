"""reduce_sum/max/min/argmax over the contiguous last axis."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray.conformance._harness import LARGE, OUT, call, compare, sample

SHAPES = [(1, 1), (3, 7), (0, 5), (64, 1000), (1, LARGE), (LARGE, 1)]


def _kind(rows, size):
    return "large" if size >= 10_000 else "reduce"


@pytest.mark.parametrize("shape", SHAPES + [(4, 0)], ids=str)
def test_reduce_sum(lamina_backend, lamina_reference, lamina_float, shape):
    rows, size = shape
    a = sample(lamina_float, shape, 5, 0, 1)  # positive: relative error is meaningful
    got = compare(lamina_backend, lamina_reference, "reduce_sum", [a, OUT, size],
                  (rows, lamina_float), kind=_kind(rows, size))
    if size == 0:
        np.testing.assert_array_equal(got, np.zeros(rows))


@pytest.mark.parametrize("op", ["max", "min", "argmax"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reduce_extrema(lamina_backend, lamina_reference, lamina_float, op, shape):
    rows, size = shape
    # Few distinct values, so rows hold ties: argmax must pick the first.
    a = np.round(sample(lamina_float, shape, 6, -4, 4)).astype(lamina_float)
    out_dtype = "int64" if op == "argmax" else lamina_float
    compare(lamina_backend, lamina_reference, f"reduce_{op}", [a, OUT, size],
            (rows, out_dtype), kind="exact")


def test_reduce_max_propagates_nan(lamina_backend, lamina_float):
    a = np.array([[1, np.nan, 3], [4, 5, 6]], lamina_float)
    got = call(lamina_backend, "reduce_max", [a, OUT, 3], (2, lamina_float))
    assert np.isnan(got[0]) and got[1] == 6


def test_reduce_ignores_input_beyond_the_layout(lamina_backend, lamina_reference,
                                                lamina_float):
    a = sample(lamina_float, (5, 9), 7)
    compare(lamina_backend, lamina_reference, "reduce_sum", [a, OUT, 9],
            (5, lamina_float), kind="reduce", extra=13)


@pytest.mark.parametrize("op", ["max", "min", "argmax"])
def test_reduce_over_empty_axis_raises_value_error(lamina_backend, op):
    out_dtype = "int64" if op == "argmax" else "float32"
    with pytest.raises(ValueError):
        call(lamina_backend, f"reduce_{op}", [np.zeros(0, np.float32), OUT, 0],
             (3, out_dtype))


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax"])
def test_reduce_short_input_raises_value_error(lamina_backend, op):
    out_dtype = "int64" if op == "argmax" else "float32"
    with pytest.raises(ValueError):
        call(lamina_backend, f"reduce_{op}", [np.zeros(11, np.float32), OUT, 4],
             (3, out_dtype))
