"""matmul and matmul_batched on compact operands."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray.conformance._harness import OUT, call, compare, sample

SHAPES = [(1, 1, 1), (3, 4, 5), (33, 65, 17), (1, 257, 1), (0, 3, 4), (3, 0, 4),
          (3, 4, 0), (128, 64, 96), (257, 129, 311)]


@pytest.mark.parametrize("mnp", SHAPES, ids=str)
def test_matmul(lamina_backend, lamina_reference, lamina_float, mnp):
    m, n, p = mnp
    a, b = sample(lamina_float, m * n, 1, -1, 1), sample(lamina_float, n * p, 2, -1, 1)
    got = compare(lamina_backend, lamina_reference, "matmul", [a, b, OUT, m, n, p],
                  (m * p, lamina_float), kind="matmul")
    if n == 0:
        np.testing.assert_array_equal(got, np.zeros(m * p))


@pytest.mark.parametrize("bmnp", [(1, 3, 4, 5), (4, 7, 9, 2), (0, 3, 3, 3),
                                  (5, 0, 2, 3), (3, 2, 0, 4), (16, 33, 31, 35)], ids=str)
def test_matmul_batched(lamina_backend, lamina_reference, lamina_float, bmnp):
    batch, m, n, p = bmnp
    a = sample(lamina_float, batch * m * n, 3, -1, 1)
    b = sample(lamina_float, batch * n * p, 4, -1, 1)
    compare(lamina_backend, lamina_reference, "matmul_batched",
            [a, b, OUT, batch, m, n, p], (batch * m * p, lamina_float), kind="matmul")


def test_matmul_known_values(lamina_backend, lamina_float):
    a = np.arange(6, dtype=lamina_float)           # (2, 3)
    b = np.arange(12, dtype=lamina_float)          # (3, 4)
    got = call(lamina_backend, "matmul", [a, b, OUT, 2, 3, 4], (8, lamina_float))
    np.testing.assert_array_equal(got.reshape(2, 4), a.reshape(2, 3) @ b.reshape(3, 4))


@pytest.mark.parametrize("which", ["a", "b", "out"])
def test_matmul_sizes_that_do_not_fit_raise_value_error(lamina_backend, which):
    a = np.zeros(6 - (which == "a"), np.float32)
    b = np.zeros(12 - (which == "b"), np.float32)
    with pytest.raises(ValueError):
        call(lamina_backend, "matmul", [a, b, OUT, 2, 3, 4], (8 - (which == "out"),
                                                               "float32"))
    with pytest.raises(ValueError):
        call(lamina_backend, "matmul_batched", [np.tile(a, 2), np.tile(b, 2), OUT,
                                                2, 2, 3, 4], (16 - (which == "out") * 9,
                                                              "float32"))
