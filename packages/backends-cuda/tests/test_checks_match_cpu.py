"""The argument checks the cuda and cpu backends share (lamina/kernel_checks.h,
from lamina-ndarray): the same bad call raises the same exception type with
the same message on both. Marker ``cuda``: buffers need a GPU or the emulation;
skips where the cpu backend is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import cuda, put

pytestmark = pytest.mark.cuda

cpu = pytest.importorskip("lamina_backend_cpu").backend

BIG = 2**63 - 1


def arr(backend: Any, n: int, dtype: str = "float32") -> Any:
    return put(backend, np.zeros(n, dtype))


def idx(backend: Any, values: list[int]) -> Any:
    return put(backend, np.array(values, np.int64))


# Each case takes a backend and makes one bad call on it.
CASES: dict[str, Callable[[Any], None]] = {
    "index: float indices": lambda m: m.index_gather(arr(m, 6), arr(m, 2), arr(m, 4), 2, 3, 1),
    "index: negative axis_size": lambda m: m.index_gather(arr(m, 6), idx(m, [0]), arr(m, 2), 2,
                                                          -3, 1),
    "index: layout outside the buffer": lambda m: m.index_scatter_add(
        arr(m, 2), idx(m, [0]), arr(m, 5), 2, 3, 1),
    "index: layout size overflows": lambda m: m.index_copy(arr(m, 2), idx(m, [0]), arr(m, 5),
                                                           2**40, 2**40, 1),
    "batched: stride count": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, 5, 1, 0, [15, 5], 0, [6, 1, 1]),
    "batched: negative size": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, -5, 1, 0, [15, 5, 1], 0, [6, 1, 1]),
    "batched: negative stride": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, 5, 1, 0, [15, -5, 1], 0, [6, 1, 1]),
    "batched: out too small": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 5), [2], 3, 5, 1, 0, [15, 5, 1], 0, [6, 1, 1]),
    "batched: a outside its buffer": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, 5, 1, 0, [20, 5, 1], 0, [6, 1, 1]),
    "batched: b outside its buffer": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, 5, 1, 0, [15, 5, 1], 2, [6, 1, 1]),
    "batched: batch reach overflows": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, 5, 1, 0, [BIG, 5, 1], 0, [6, 1, 1]),
    "batched: offset reach overflows": lambda m: m.matmul_batched_strided(
        arr(m, 30), arr(m, 12), arr(m, 6), [2], 3, 5, 1, BIG - 2, [15, 5, 1], 0, [6, 1, 1]),
}


def raised(backend: Any, call: Callable[[Any], None]) -> Exception:
    with pytest.raises((ValueError, TypeError, IndexError)) as info:
        call(backend)
    return info.value


@pytest.mark.parametrize("case", list(CASES))
def test_bad_call_raises_as_on_cpu(case: str) -> None:
    got, want = raised(cuda, CASES[case]), raised(cpu, CASES[case])
    assert (type(got), str(got)) == (type(want), str(want))
    op = "index" if case.startswith("index") else "matmul_batched_strided"
    assert str(got).startswith(op), str(got)
