"""Shared helpers: run one kernel on the cpu backend and on the numpy
reference backend with the same inputs and compare every output buffer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lamina_backend_cpu
import numpy as np
import pytest

ref = pytest.importorskip("lamina.ndarray._numpy_backend").backend
cpu = lamina_backend_cpu.backend

FLOATS = ("float32", "float64")
ALL = ("float32", "float64", "int64")
TOL = {"float32": dict(rtol=2e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12),
       "int64": dict(rtol=0, atol=0), "bool": dict(rtol=0, atol=0)}
# Sizes around the SIMD widths (8/16 lanes), the GEMM tiles (6x16) and primes.
ODD_SIZES = (0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 97, 1031, 65537)


def rand(size: int | Sequence[int], dtype: str, seed: int = 0, lo: float = -2.0,
         hi: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(-5, 6, size=size).astype(np.int64)
    return rng.uniform(lo, hi, size=size).astype(dtype)


def buffer(backend: Any, data: np.ndarray) -> Any:
    flat = np.ascontiguousarray(data).reshape(-1)
    out = backend.Array(flat.size, flat.dtype.name)
    backend.from_numpy(flat, out)
    return out


def host(backend: Any, buf: Any) -> np.ndarray:
    return backend.to_numpy(buf, (buf.size,), (1,), 0)


def compare(kernel: str, inputs: Sequence[Any], outputs: Sequence[tuple[int, str]],
            *layout: Any, init: Callable[[int, int], np.ndarray] | None = None,
            tol: dict[str, float] | None = None) -> list[np.ndarray]:
    """Runs `kernel(*inputs, *outs, *layout)` on both backends and compares.

    inputs are numpy arrays (turned into buffers) or plain values; outputs are
    (size, dtype) pairs, initialised with `init(i, size)` when given (else NaN
    / a sentinel, so unwritten elements show up).
    """
    results = []
    for backend in (ref, cpu):
        args = [buffer(backend, x) if isinstance(x, np.ndarray) else x for x in inputs]
        outs = []
        for i, (size, dtype) in enumerate(outputs):
            start = init(i, size) if init else np.full(size, -7, dtype=dtype)
            outs.append(buffer(backend, start.astype(dtype)))
        getattr(backend, kernel)(*args, *outs, *layout)
        results.append([host(backend, o) for o in outs])
    for (_size, dtype), want, got in zip(outputs, results[0], results[1]):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, equal_nan=True, **(tol or TOL[dtype]),
                                   err_msg=f"{kernel} ({dtype})")
    return results[1]
