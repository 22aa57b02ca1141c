"""Zero-copy host memory (optional): ``wrap_numpy`` and the buffer protocol on ``Array``.

Each test skips for a backend without the feature: ``wrap_numpy`` is listed
in ``OPTIONAL``; the buffer protocol is tried with ``memoryview``.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._harness import LARGE, get, put, sample


def _need_wrap(backend):
    assert "wrap_numpy" in OPTIONAL
    if not hasattr(backend, "wrap_numpy"):
        pytest.skip("backend has no wrap_numpy (optional)")


def _memory(backend, buf) -> memoryview:
    try:
        return memoryview(buf)
    except TypeError:
        pytest.skip("backend's Array has no buffer protocol (optional)")
        raise  # not reached: skip raises (said for type checkers without pytest)


def _churn(backend, dtype: str, size: int) -> None:
    """Allocate, fill and free buffers, so a recycled block would be overwritten."""
    for value in (-1, 7):
        bufs = [backend.Array(size, dtype) for _ in range(4)]
        for b in bufs:
            backend.fill(b, value)
        del bufs
        gc.collect()


@pytest.mark.parametrize("size", [0, 1, 7, LARGE])
def test_wrap_numpy_shares_memory_both_ways(lamina_backend, lamina_dtype, size):
    _need_wrap(lamina_backend)
    src = sample(lamina_dtype, size, seed=size, low=-50, high=50)
    buf = lamina_backend.wrap_numpy(src)
    assert buf.size == size and buf.dtype == lamina_dtype
    np.testing.assert_array_equal(get(lamina_backend, buf), src)
    if size == 0:
        return
    src[0] = 3
    assert get(lamina_backend, buf, 1)[0] == 3  # a numpy write shows in the buffer
    lamina_backend.fill(buf, 5)
    assert (src == 5).all()  # a kernel's write shows in numpy


def test_wrap_numpy_works_as_kernel_operand(lamina_backend, lamina_float):
    _need_wrap(lamina_backend)
    a = sample(lamina_float, 1000, seed=1)
    b = sample(lamina_float, 1000, seed=2)
    out = np.zeros(1000, lamina_float)
    lamina_backend.ewise_add(lamina_backend.wrap_numpy(a), put(lamina_backend, b),
                             lamina_backend.wrap_numpy(out))
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_wrap_numpy_keeps_its_source_alive(lamina_backend, lamina_dtype):
    _need_wrap(lamina_backend)
    src = np.arange(1000).astype(lamina_dtype)
    buf = lamina_backend.wrap_numpy(src[100:900])
    del src
    gc.collect()
    _churn(lamina_backend, lamina_dtype, 1000)
    junk = [np.full(1000, -1, lamina_dtype) for _ in range(8)]
    np.testing.assert_array_equal(get(lamina_backend, buf),
                                  np.arange(100, 900).astype(lamina_dtype))
    del junk


@pytest.mark.parametrize("bad, error", [
    (np.zeros((2, 3), np.float32), ValueError),
    (np.zeros(8, np.float32)[::2], ValueError),
    (np.broadcast_to(np.zeros(1, np.float32), (4,)), ValueError),
    (np.zeros(9, np.uint8)[1:].view(np.float32), ValueError),
    (np.zeros(3, ">f4"), TypeError),
    (np.zeros(3, np.int32), TypeError),
    (np.zeros(3, np.float16), TypeError),
    ([1.0, 2.0], TypeError),
], ids=["2-d", "strided", "read-only", "misaligned", "big-endian", "int32", "float16",
        "list"])
def test_wrap_numpy_rejects_what_it_cannot_share(lamina_backend, bad, error):
    _need_wrap(lamina_backend)
    with pytest.raises(error, match="wrap_numpy"):
        lamina_backend.wrap_numpy(bad)


@pytest.mark.parametrize("size", [0, 1, 7, LARGE])
def test_buffer_protocol_is_a_writable_1d_view(lamina_backend, lamina_dtype, size):
    values = sample(lamina_dtype, size, seed=size, low=-50, high=50)
    buf = put(lamina_backend, values)
    memory = _memory(lamina_backend, buf)
    assert memory.ndim == 1 and memory.shape == (size,) and not memory.readonly
    assert memory.itemsize == np.dtype(lamina_dtype).itemsize and memory.c_contiguous
    view = np.frombuffer(memory, dtype=lamina_dtype)
    np.testing.assert_array_equal(view, values)
    if size:
        view[-1] = 9
        assert get(lamina_backend, buf)[-1] == 9  # numpy's write shows in the buffer
        lamina_backend.fill(buf, 4)
        assert (view == 4).all()  # and a kernel's write shows in numpy


def test_buffer_view_keeps_the_array_alive(lamina_backend, lamina_dtype):
    buf = put(lamina_backend, np.arange(4096).astype(lamina_dtype))
    view = np.frombuffer(_memory(lamina_backend, buf), dtype=lamina_dtype)
    del buf
    gc.collect()
    _churn(lamina_backend, lamina_dtype, 4096)  # same size: the block a cache would recycle
    np.testing.assert_array_equal(view, np.arange(4096).astype(lamina_dtype))
