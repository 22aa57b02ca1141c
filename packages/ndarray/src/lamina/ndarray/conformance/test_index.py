"""index_gather and index_scatter_add with int64 index buffers."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray.conformance._harness import OUT, call, compare, sample

# (outer, axis_size, inner, n): embedding rows, class picks, zero sizes, large.
LAYOUTS = [(1, 10, 4, 6), (3, 5, 1, 8), (2, 7, 3, 0), (0, 4, 2, 3), (1, 1, 1, 1),
           (4, 3, 5, 2), (1, 50_000, 21, 1003)]


def _indices(axis_size, n, seed=0):
    idx = sample("int64", n, seed, 0, axis_size)
    if n >= 2:
        idx[1] = idx[0]  # repeated indices must accumulate in scatter_add
    return idx


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_index_gather(lamina_backend, lamina_reference, lamina_float, layout):
    outer, axis_size, inner, n = layout
    a = sample(lamina_float, outer * axis_size * inner, 1)
    idx = _indices(axis_size, n)
    compare(lamina_backend, lamina_reference, "index_gather",
            [a, idx, OUT, outer, axis_size, inner], (outer * n * inner, lamina_float),
            kind="exact")


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_index_scatter_add(lamina_backend, lamina_reference, lamina_float, layout):
    outer, axis_size, inner, n = layout
    a = sample(lamina_float, outer * n * inner, 2)
    idx = _indices(axis_size, n)
    initial = sample(lamina_float, outer * axis_size * inner, 3)  # not cleared first
    compare(lamina_backend, lamina_reference, "index_scatter_add",
            [a, idx, OUT, outer, axis_size, inner], initial, kind="reduce")


def test_scatter_add_accumulates_repeats(lamina_backend, lamina_float):
    idx = np.array([2, 0, 2, 2], np.int64)
    got = call(lamina_backend, "index_scatter_add",
               [np.ones(4, lamina_float), idx, OUT, 1, 3, 1], np.zeros(3, lamina_float))
    np.testing.assert_array_equal(got, [1, 0, 3])


@pytest.mark.parametrize("bad", [-1, 5, 1 << 40])
@pytest.mark.parametrize("kernel", ["index_gather", "index_scatter_add"])
def test_index_out_of_range_raises_index_error(lamina_backend, kernel, bad):
    idx = np.array([0, bad, 1], np.int64)
    a = np.zeros(15 if kernel == "index_gather" else 9, np.float32)
    out_size = 9 if kernel == "index_gather" else 15
    with pytest.raises(IndexError):
        call(lamina_backend, kernel, [a, idx, OUT, 3, 5, 1], (out_size, "float32"))


@pytest.mark.parametrize("kernel", ["index_gather", "index_scatter_add"])
def test_float_indices_raise_type_error(lamina_backend, kernel):
    idx = np.array([0, 1, 2], np.float32)
    with pytest.raises(TypeError):
        call(lamina_backend, kernel, [np.zeros(9, np.float32), idx, OUT, 3, 3, 1],
             (9, "float32"))


@pytest.mark.parametrize("kernel", ["index_gather", "index_scatter_add"])
def test_sizes_that_do_not_fit_raise_value_error(lamina_backend, kernel):
    idx = np.array([0, 1], np.int64)
    with pytest.raises(ValueError):
        # layout (outer 3, axis 5, inner 2) needs 30 elements; give 10
        call(lamina_backend, kernel, [np.zeros(10, np.float32), idx, OUT, 3, 5, 2],
             (10, "float32"))
