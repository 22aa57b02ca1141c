"""Sizes, strides and offsets whose products or sums overflow 64-bit integers.

Every value fits an ``int64`` argument, but a bounds check done in wrapping
``int64_t`` arithmetic lets the view through: ``2 * (2**63 - 1)`` wraps to
``-2``, so a view of three elements 2**63 - 1 apart "ends" before it starts
and a kernel reads or writes far outside the buffer (a crash, or heap garbage
returned as data). The interface requires ``ValueError`` for all of these
(``MemoryError`` is also accepted where a kernel would have to allocate the
result), and never a crash or a silently wrong result.
"""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray.conformance._harness import put

BIG = 2**62
MAX = 2**63 - 1
HALF = 2**32  # HALF * HALF == 2**64 wraps to 0


def _need(backend, kernel):
    if not hasattr(backend, kernel):
        pytest.skip(f"backend has no {kernel} (optional)")

# (id, shape, strides, offset) over a 12-element buffer.
VIEWS = [
    ("stride-product-wraps", (3,), (MAX,), 5),        # reach 2 * MAX wraps to -2
    ("stride-sum-wraps", (2, 2), (BIG, BIG), 0),      # reach 2**63 wraps to -2**63
    ("negative-stride-wraps", (3,), (-MAX,), 5),      # reach -2 * MAX wraps to 2
    ("offset-plus-reach-wraps", (2,), (1,), MAX),     # last element at MAX + 1
    ("element-count-wraps", (HALF, HALF), (0, 0), 0),  # 2**64 elements of stride 0
    ("huge-dimension", (MAX,), (0,), 0),
]


@pytest.mark.parametrize("case", VIEWS, ids=[c[0] for c in VIEWS])
@pytest.mark.parametrize("kernel", ["compact", "to_numpy", "ewise_setitem",
                                    "scalar_setitem"])
def test_strided_access_with_overflowing_layout_raises(lamina_backend, kernel, case):
    _, shape, strides, offset = case
    buf = put(lamina_backend, np.arange(12, dtype=np.float32))
    other = put(lamina_backend, np.zeros(12, np.float32))
    args = {
        "compact": (buf, other, shape, strides, offset),
        "to_numpy": (buf, shape, strides, offset),
        "ewise_setitem": (other, buf, shape, strides, offset),
        "scalar_setitem": (12, 1.0, buf, shape, strides, offset),
    }[kernel]
    errors = (ValueError, MemoryError) if kernel == "to_numpy" else ValueError
    with pytest.raises(errors):
        getattr(lamina_backend, kernel)(*args)


# (id, m, n, p, a_offset, a_rs, a_cs, b_offset, b_rs, b_cs), 12-element buffers.
MATMUL_STRIDED = [
    ("a-row-stride-product-wraps", 3, 2, 2, 0, MAX, 1, 0, 2, 1),
    ("a-strides-sum-wraps", 2, 2, 2, 0, BIG, BIG, 0, 2, 1),
    ("a-offset-plus-reach-wraps", 2, 2, 2, MAX, 1, 1, 0, 2, 1),
    ("b-col-stride-product-wraps", 2, 2, 3, 0, 2, 1, 0, 1, MAX),
    ("b-strides-sum-wraps", 2, 2, 2, 0, 2, 1, 0, BIG, BIG),
    ("b-offset-plus-reach-wraps", 2, 2, 2, 0, 2, 1, MAX, 1, 1),
    ("out-size-wraps", HALF, 0, HALF, 0, 0, 0, 0, 0, 0),
]


@pytest.mark.parametrize("case", MATMUL_STRIDED, ids=[c[0] for c in MATMUL_STRIDED])
def test_matmul_strided_with_overflowing_layout_raises(lamina_backend, case):
    _need(lamina_backend, "matmul_strided")
    m, n, p, *layout = case[1:]
    a, b, out = (put(lamina_backend, np.ones(12, np.float32)) for _ in range(3))
    with pytest.raises(ValueError):
        lamina_backend.matmul_strided(a, b, out, m, n, p, *layout)


# (id, batch, m, n, p): one of batch*m*n, batch*n*p, batch*m*p is 2**64.
MATMUL_SIZES = [
    ("m*n-wraps", 1, HALF, HALF, 0),
    ("n*p-wraps", 1, 0, HALF, HALF),
    ("m*p-wraps", 1, HALF, 0, HALF),
    ("batch*m*n-wraps", HALF, HALF, 1, 0),
]


MATMUL_CALLS = [("matmul", c) for c in MATMUL_SIZES if c[1] == 1] + [
    ("matmul_batched", c) for c in MATMUL_SIZES]


@pytest.mark.parametrize("kernel,case", MATMUL_CALLS,
                         ids=[f"{k}-{c[0]}" for k, c in MATMUL_CALLS])
def test_matmul_with_overflowing_sizes_raises(lamina_backend, kernel, case):
    batch, m, n, p = case[1:]
    a, b, out = (put(lamina_backend, np.ones(12, np.float32)) for _ in range(3))
    sizes = (m, n, p) if kernel == "matmul" else (batch, m, n, p)
    with pytest.raises(ValueError):
        getattr(lamina_backend, kernel)(a, b, out, *sizes)


@pytest.mark.parametrize("kernel", ["reduce_sum", "reduce_max", "reduce_min",
                                    "reduce_argmax"])
def test_reduce_with_overflowing_size_raises(lamina_backend, kernel):
    # 4 rows of 2**62: rows * size == 2**64 wraps to 0.
    a = put(lamina_backend, np.ones(12, np.float32))
    out = lamina_backend.Array(4, "int64" if kernel == "reduce_argmax" else "float32")
    with pytest.raises(ValueError):
        getattr(lamina_backend, kernel)(a, out, BIG)


def test_reduce_sum_axis_with_overflowing_size_raises(lamina_backend):
    _need(lamina_backend, "reduce_sum_axis")
    a = put(lamina_backend, np.ones(12, np.float32))
    out = put(lamina_backend, np.zeros(4, np.float32))
    with pytest.raises(ValueError):
        lamina_backend.reduce_sum_axis(a, out, 1, BIG, 4)  # 1 * 2**62 * 4 wraps to 0


@pytest.mark.parametrize("kernel", ["index_gather", "index_scatter_add"])
def test_index_with_overflowing_layout_raises(lamina_backend, kernel):
    # (outer, axis_size, inner) = (1, 2**62, 4): 2**64 elements wrap to 0, and
    # index 5 is in range for the axis but 20 elements into a 12-element buffer.
    buf = put(lamina_backend, np.ones(12, np.float32))
    idx = put(lamina_backend, np.array([5], np.int64))
    small = put(lamina_backend, np.zeros(4, np.float32))
    args = (buf, idx, small) if kernel == "index_gather" else (small, idx, buf)
    with pytest.raises(ValueError):
        getattr(lamina_backend, kernel)(*args, 1, BIG, 4)


@pytest.mark.parametrize("size", [BIG, MAX], ids=["2**62", "2**63-1"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_array_too_large_to_allocate_raises(lamina_backend, dtype, size):
    # size * itemsize wraps in 64-bit bytes: the buffer must not come out small.
    with pytest.raises((MemoryError, ValueError)):
        lamina_backend.Array(size, dtype)


@pytest.mark.parametrize("case", VIEWS, ids=[c[0] for c in VIEWS])
@pytest.mark.parametrize("operand", ["a", "b"])
def test_ewise_strided_with_overflowing_layout_raises(lamina_backend, operand, case):
    _need(lamina_backend, "ewise_strided_add")
    _, shape, strides, offset = case
    a, b, out = (put(lamina_backend, np.ones(12, np.float32)) for _ in range(3))
    plain = ((0,) * len(shape), 0)  # the other operand: one element, broadcast
    views = (strides, offset) + plain if operand == "a" else plain + (strides, offset)
    with pytest.raises(ValueError):
        lamina_backend.ewise_strided_add(a, b, out, shape, *views)


# (id, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw) over 12-element buffers.
CONV = [
    ("n*c-wraps", HALF, HALF, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1),
    ("padding-wraps", 1, 1, 1, 1, 1, 1, 1, 1, BIG, BIG, 1, 1),
    ("dilation-wraps", 1, 1, 3, 3, 3, 3, 1, 1, 0, 0, MAX, MAX),
]


@pytest.mark.parametrize("case", CONV, ids=[c[0] for c in CONV])
@pytest.mark.parametrize("kernel", ["im2col", "col2im"])
def test_im2col_col2im_with_overflowing_layout_raises(lamina_backend, kernel, case):
    _need(lamina_backend, kernel)
    a, out = (put(lamina_backend, np.ones(12, np.float32)) for _ in range(2))
    with pytest.raises(ValueError):
        getattr(lamina_backend, kernel)(a, out, *case[1:])


@pytest.mark.parametrize("kernel", ["softmax_last", "logsumexp_last", "layer_norm_last"])
def test_row_kernels_with_overflowing_size_raise(lamina_backend, kernel):
    _need(lamina_backend, kernel)
    a = put(lamina_backend, np.ones(12, np.float32))
    rows = [put(lamina_backend, np.zeros(4, np.float32)) for _ in range(2)]
    args = {"softmax_last": (a, put(lamina_backend, np.zeros(12, np.float32)), BIG),
            "logsumexp_last": (a, rows[0], BIG),
            "layer_norm_last": (a, a, a, put(lamina_backend, np.zeros(12, np.float32)),
                                rows[0], rows[1], BIG, 1e-5)}[kernel]
    with pytest.raises(ValueError):
        getattr(lamina_backend, kernel)(*args)


def test_scalar_setitem_with_a_huge_size_raises(lamina_backend):
    out = put(lamina_backend, np.zeros(12, np.float32))
    with pytest.raises(ValueError):
        lamina_backend.scalar_setitem(MAX, 1.0, out, (3,), (1,), 0)
