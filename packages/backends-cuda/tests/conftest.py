"""Shared helpers: the cuda backend, the numpy reference, and `run`, which
executes one kernel on both with the same inputs and returns both outputs.

Tests marked ``cuda`` need a GPU, or the CPU emulation build (LAMINA_CUDA_EMULATE),
and skip (with the CUDA error text) without one; with LAMINA_CUDA_REQUIRE=1 (set by
``nox -s backend_cuda_emulated``) they fail instead, so a broken build cannot pass
by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import lamina_backend_cuda
import numpy as np
import pytest

cuda = lamina_backend_cuda.backend
ref = pytest.importorskip("lamina.ndarray._numpy_backend").backend

FLOATS = ("float32", "float64")
TOL = {"float32": dict(rtol=2e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12),
       "int64": dict(rtol=0, atol=0)}
SUM_TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda.is_available():
        return
    if os.environ.get("LAMINA_CUDA_REQUIRE") == "1":
        raise pytest.UsageError(f"LAMINA_CUDA_REQUIRE=1 but the cuda backend is unavailable: "
                                f"{cuda.unavailable_reason()}")
    skip = pytest.mark.skip(reason=f"no usable GPU: {cuda.unavailable_reason()}")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def rand(shape: int | Sequence[int], dtype: str, seed: int = 0, lo: float = -2.0,
         hi: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(-5, 6, size=shape).astype(np.int64)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def put(backend: Any, array: np.ndarray) -> Any:
    flat = np.ascontiguousarray(array).reshape(-1)
    buf = backend.Array(flat.size, flat.dtype.name)
    backend.from_numpy(flat, buf)
    return buf


def get(backend: Any, buf: Any) -> np.ndarray:
    return backend.to_numpy(buf, (buf.size,), (1,), 0)


def run(kernel: str, args: Sequence[Any], out: np.ndarray | tuple[int, str]
        ) -> tuple[np.ndarray, np.ndarray]:
    """(cuda result, numpy result) of ``kernel``; numpy arrays in args become
    buffers, the string "OUT" the output buffer (initialised from ``out``)."""
    results = []
    for backend in (cuda, ref):
        out_buf = put(backend, out) if isinstance(out, np.ndarray) else backend.Array(*out)
        bufs = [out_buf if isinstance(a, str) and a == "OUT" else
                put(backend, a) if isinstance(a, np.ndarray) else a for a in args]
        getattr(backend, kernel)(*bufs)
        results.append(get(backend, out_buf))
    return results[0], results[1]


def check(kernel: str, args: Sequence[Any], out: np.ndarray | tuple[int, str],
          tol: dict[str, float] | None = None) -> None:
    got, want = run(kernel, args, out)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **(tol or TOL[want.dtype.name]),
                               err_msg=f"{kernel} differs from the numpy backend")
