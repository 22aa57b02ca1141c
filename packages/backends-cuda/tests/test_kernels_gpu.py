"""Every kernel against the numpy reference backend, on a GPU (marker ``cuda``).

Sizes are chosen to cross each kernel's internal paths: vector packs and
their tails, warp-per-row / block-per-row / split-row reductions, the GEMM's
64- and 128-wide tiles with and without 16-byte loads, and the int32/int64
index paths of the strided kernels.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import FLOATS, SUM_TOL, TOL, check, cuda, get, put, rand, ref, run

pytestmark = pytest.mark.cuda

BINARY = ("add", "sub", "mul", "div", "power", "maximum", "minimum",
          "eq", "ne", "lt", "le", "gt", "ge")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
UNARY = ("neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos", "sign")
SIZES = (0, 1, 3, 4, 5, 1023, 100_003)


def _operands(op: str, dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = rand(n, dtype, 1), rand(n, dtype, 2)
    if op == "power":
        a = np.abs(a) + np.asarray(0.5, dtype)
    if op in COMPARISONS and n > 4:
        b[::3] = a[::3]  # equal pairs
    if op in ("maximum", "minimum") and n > 4 and dtype != "int64":
        a[1] = np.nan
    return a, b


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", BINARY)
def test_binary(op: str, n: int, dtype: str) -> None:
    a, b = _operands(op, dtype, n)
    check(f"ewise_{op}", [a, b, "OUT"], (n, dtype))
    check(f"scalar_{op}", [a, 1.25, "OUT"], (n, dtype))


@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_on_int64(op: str) -> None:
    a, b = _operands(op, "int64", 1001)
    check(f"ewise_{op}", [a, b, "OUT"], (1001, "int64"))
    check(f"scalar_{op}", [a, 2, "OUT"], (1001, "int64"))
    check(f"scalar_{op}", [a, 2**62 + 1, "OUT"], (1001, "int64"))  # exact, not via double


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ("rsub", "rdiv", "rpower"))
def test_reversed_scalar(op: str, dtype: str) -> None:
    a = rand(1027, dtype, 3, 0.5, 2)
    check(f"scalar_{op}", [a, 1.5, "OUT"], (1027, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", UNARY)
def test_unary(op: str, dtype: str) -> None:
    lo = 0.1 if op in ("log", "sqrt") else -3.0
    a = rand(100_003, dtype, 4, lo, 3.0)
    if op == "sign":
        a[:7] = 0
    check(f"ewise_{op}", [a, "OUT"], (a.size, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_erf(dtype: str) -> None:
    # numpy has no erf: compare with math.erf (float64) rounded to the dtype
    a = np.concatenate([rand(100_003, dtype, 25, -6, 6),
                        np.array([0, -0.0, 1e-30, 30, -30, np.inf, -np.inf, np.nan], dtype)])
    out = cuda.Array(a.size, dtype)
    cuda.ewise_erf(put(cuda, a), out)
    np.testing.assert_allclose(get(cuda, out), np.vectorize(math.erf)(a).astype(dtype),
                               **TOL[dtype], err_msg="ewise_erf differs from math.erf")


def test_in_place_update() -> None:
    a = rand(10_001, "float32", 5)
    buf, other = put(cuda, a), put(cuda, a)
    cuda.ewise_add(buf, other, buf)
    np.testing.assert_array_equal(get(cuda, buf), a + a)


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("cond_dtype", ("same", "int64"))
def test_where(dtype: str, cond_dtype: str) -> None:
    n = 4099
    cond = (rand(n, "int64", 6) > 0).astype(dtype if cond_dtype == "same" else "int64")
    check("ewise_where", [cond, rand(n, dtype, 7), rand(n, dtype, 8), "OUT"], (n, dtype))


@pytest.mark.parametrize("src", ("float32", "float64", "int64"))
@pytest.mark.parametrize("dst", ("float32", "float64", "int64"))
def test_cast(src: str, dst: str) -> None:
    a = rand(5003, src, 9, -1000, 1000)
    check("ewise_cast", [a, "OUT"], (a.size, dst))


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
def test_fill_and_buffers(dtype: str) -> None:
    for value in (0, 3, -2.5 if dtype != "int64" else -7):
        buf = cuda.Array(1001, dtype)
        cuda.fill(buf, value)
        np.testing.assert_array_equal(get(cuda, buf), np.full(1001, value, dtype))
    big = cuda.Array(5, "int64")
    cuda.fill(big, 2**62 + 3)
    assert int(get(cuda, big)[0]) == 2**62 + 3


VIEWS = [  # (buffer size, shape, strides, offset)
    (24, (2, 3, 4), (12, 4, 1), 0),
    (24, (4, 3, 2), (1, 4, 12), 0),       # transposed
    (24, (3, 4), (0, 1), 5),              # broadcast
    (24, (2, 3), (-12, -4), 23),          # flipped
    (100, (3, 3, 3), (30, 10, 3), 1),     # steps
    (10, (0, 4), (4, 1), 0),              # empty
    (1, (1, 1, 1), (7, 7, 7), 0),
    (2 ** 9, (2,) * 9, tuple(2 ** k for k in range(9)), 0),  # 9 dims, reversed strides
    (3 * 200_003, (200_003, 3), (1, 200_003), 0),
]


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("view", VIEWS, ids=str)
def test_strided(view: tuple, dtype: str) -> None:
    size, shape, strides, offset = view
    n = int(np.prod(shape))
    base = rand(size, dtype, 10)
    if len(shape) > 8:  # more than 8 dims after merging: a clear error, not a crash
        with pytest.raises(ValueError, match="at most 8"):
            cuda.compact(put(cuda, base), cuda.Array(n, dtype), shape, strides, offset)
        return
    check("compact", [base, "OUT", shape, strides, offset], (n, dtype), TOL["int64"])
    got = cuda.to_numpy(put(cuda, base), shape, strides, offset)
    np.testing.assert_array_equal(got, ref.to_numpy(put(ref, base), shape, strides, offset))
    if 0 not in strides:
        src = rand(n, dtype, 11)
        check("ewise_setitem", [src, "OUT", shape, strides, offset], base, TOL["int64"])
        check("scalar_setitem", [n, 4, "OUT", shape, strides, offset], base, TOL["int64"])


def test_strided_errors() -> None:
    buf = cuda.Array(10, "float32")
    with pytest.raises(ValueError, match="compact: view"):
        cuda.compact(buf, cuda.Array(20, "float32"), (5, 4), (4, 1), 0)
    with pytest.raises(ValueError, match="differ in length"):
        cuda.to_numpy(buf, (2, 5), (5,), 0)
    with pytest.raises(ValueError, match="scalar_setitem: size"):
        cuda.scalar_setitem(3, 1.0, buf, (2,), (1,), 0)
    with pytest.raises(TypeError, match="dtypes differ"):
        cuda.compact(buf, cuda.Array(10, "float64"), (10,), (1,), 0)


ROWS_SIZES = [(1, 1), (7, 3), (5, 32), (9, 33), (300, 511), (3, 513), (2, 5000),
              (1, 1_000_003), (2, 300_007), (4096, 1000), (0, 5)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", ROWS_SIZES)
@pytest.mark.parametrize("op", ("sum", "max", "min", "argmax"))
def test_reduce(op: str, rows: int, size: int, dtype: str) -> None:
    a = rand(rows * size, dtype, 12)
    out_dtype = "int64" if op == "argmax" else dtype
    tol = SUM_TOL[dtype] if op == "sum" else TOL["int64"]
    check(f"reduce_{op}", [a, "OUT", size], (rows, out_dtype), tol)


def test_reduce_special_values() -> None:
    a = np.array([1, 3, 3, 0, np.nan, 2, np.nan, -np.inf, -np.inf, -np.inf, 5, 5],
                 np.float32)
    for op in ("max", "min", "argmax"):
        out_dtype = "int64" if op == "argmax" else "float32"
        check(f"reduce_{op}", [a, "OUT", 3], (4, out_dtype), TOL["int64"])
    check("reduce_sum", [a, "OUT", 0], (4, "float32"))
    with pytest.raises(ValueError, match="empty axis"):
        cuda.reduce_max(cuda.Array(0, "float32"), cuda.Array(2, "float32"), 0)
    with pytest.raises(TypeError, match="reduce_sum: dtype bool is not supported"):
        cuda.reduce_sum(cuda.Array(4, "bool"), cuda.Array(2, "bool"), 2)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 1), (33, 10), (4, 512), (3, 513), (2, 40_000)])
def test_softmax_logsumexp(rows: int, size: int, dtype: str) -> None:
    a = rand(rows * size, dtype, 13, -20, 20)
    check("softmax_last", [a, "OUT", size], (rows * size, dtype), SUM_TOL[dtype])
    check("logsumexp_last", [a, "OUT", size], (rows, dtype), SUM_TOL[dtype])
    a[:size] = -np.inf  # an all -inf row: logsumexp -inf, like numpy
    check("logsumexp_last", [a, "OUT", size], (rows, dtype), SUM_TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 1), (33, 10), (4, 512), (3, 513), (2, 40_000)])
def test_log_softmax_backward(rows: int, size: int, dtype: str) -> None:
    x = rand((rows, size), dtype, 14, -20, 20).astype(np.float64)
    out = (x - x.max(1, keepdims=True))
    out = (out - np.log(np.exp(out).sum(1, keepdims=True))).astype(dtype).reshape(-1)
    g = rand(rows * size, dtype, 15)
    check("log_softmax_backward_last", [g, out, "OUT", size], (rows * size, dtype),
          SUM_TOL[dtype])


def test_log_softmax_backward_errors() -> None:
    f32 = lambda n: cuda.Array(n, "float32")  # noqa: E731
    with pytest.raises(ValueError, match="log_softmax_backward_last: grad_a has 7 elements"):
        cuda.log_softmax_backward_last(f32(6), f32(6), f32(7), 3)
    with pytest.raises(ValueError, match="log_softmax_backward_last: g and out have 5 and 6"):
        cuda.log_softmax_backward_last(f32(5), f32(6), f32(6), 3)
    with pytest.raises(TypeError, match="log_softmax_backward_last"):
        cuda.log_softmax_backward_last(*(cuda.Array(6, "int64") for _ in range(3)), 3)


def _layer_norm_ref(a: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """out, mean and rstd of a (rows, size) in float64, variance in a second pass."""
    x = a.astype(np.float64)
    mu = x.mean(axis=1)
    d = x - mu[:, None]
    rstd = 1 / np.sqrt((d * d).mean(axis=1) + eps)
    out = d * rstd[:, None] * w.astype(np.float64) + b.astype(np.float64)
    return out.reshape(-1), mu, rstd


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 10), (7, 17), (4, 512), (3, 513),
                                       (128, 1000), (2, 3001)])
def test_layer_norm(rows: int, size: int, dtype: str) -> None:
    # An offset mean (|mean| >> std) catches a one-pass E[x^2] - E[x]^2 variance.
    a = rand((rows, size), dtype, 26, 99, 101)
    w, b = rand(size, dtype, 27), rand(size, dtype, 28)
    bufs = [cuda.Array(n, dtype) for n in (rows * size, rows, rows)]
    cuda.layer_norm_last(put(cuda, a), put(cuda, w), put(cuda, b), *bufs, size, 1e-5)
    for name, buf, want in zip(("out", "mean", "rstd"), bufs, _layer_norm_ref(a, w, b, 1e-5)):
        np.testing.assert_allclose(get(cuda, buf), want.astype(dtype), **SUM_TOL[dtype],
                                   err_msg=f"layer_norm_last {name} differs from numpy")


def test_layer_norm_errors() -> None:
    def f32(n: int) -> object:
        return cuda.Array(n, "float32")

    cases = [  # (match, a, weight, bias, out, mean, rstd, size)
        ("layer_norm_last: rstd has 3", 6, 3, 3, 6, 2, 3, 3),
        ("layer_norm_last: weight and bias", 6, 2, 3, 6, 2, 2, 3),
        ("layer_norm_last: out has 5", 6, 3, 3, 5, 2, 2, 3),
        ("layer_norm_last: input has 5", 5, 3, 3, 6, 2, 2, 3),
        ("layer_norm_last: cannot reduce over an empty axis", 6, 3, 3, 6, 2, 2, 0),
        ("layer_norm_last: size must be >= 0", 6, 3, 3, 6, 2, 2, -1),
    ]
    for match, *sizes, size in cases:
        with pytest.raises(ValueError, match=match):
            cuda.layer_norm_last(*(f32(n) for n in sizes), size, 1e-5)
    with pytest.raises(TypeError, match="dtypes differ"):
        cuda.layer_norm_last(f32(6), cuda.Array(3, "float64"), f32(3), f32(6), f32(2), f32(2), 3,
                             1e-5)
    with pytest.raises(TypeError, match="int64"):
        cuda.layer_norm_last(*(cuda.Array(n, "int64") for n in (6, 3, 3, 6, 2, 2)), 3, 1e-5)
    cuda.layer_norm_last(*(f32(0) for _ in range(6)), 4, 1e-5)  # no rows: nothing to do


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("outer,size,inner", [(1, 5, 1), (3, 7, 2), (2, 1000, 33),
                                              (5, 0, 4), (64, 64, 64), (1, 3, 100_000)])
def test_reduce_sum_axis(outer: int, size: int, inner: int, dtype: str) -> None:
    a = rand(outer * size * inner, dtype, 14)
    check("reduce_sum_axis", [a, "OUT", outer, size, inner], (outer * inner, dtype),
          SUM_TOL[dtype])


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("outer,axis,inner,n", [(1, 10, 1, 7), (3, 5, 4, 9), (2, 1000, 64, 300),
                                                (4, 3, 1, 0)])
def test_index(outer: int, axis: int, inner: int, n: int, dtype: str) -> None:
    idx = np.random.default_rng(15).integers(0, axis, n).astype(np.int64)
    a = rand(outer * axis * inner, dtype, 16)
    check("index_gather", [a, idx, "OUT", outer, axis, inner], (outer * n * inner, dtype))
    if dtype != "int64":
        src = rand(outer * n * inner, dtype, 17)
        check("index_scatter_add", [src, idx, "OUT", outer, axis, inner], a)


def test_index_errors_leave_out_untouched() -> None:
    out = put(cuda, np.ones(5, np.float32))
    for bad in (5, -1):
        idx = put(cuda, np.array([0, 4, bad, 1], np.int64))
        with pytest.raises(IndexError, match=f"index {bad} .*axis of size 5"):
            cuda.index_scatter_add(put(cuda, np.ones(4, np.float32)), idx, out, 1, 5, 1)
    np.testing.assert_array_equal(get(cuda, out), np.ones(5, np.float32))
    with pytest.raises(TypeError, match="int64"):
        cuda.index_gather(out, out, cuda.Array(5, "float32"), 1, 5, 1)


MATMUL_SHAPES = [(1, 1, 1), (3, 5, 7), (4, 4, 4), (64, 64, 64), (129, 67, 131), (65, 3, 2),
                 (256, 256, 256), (512, 512, 512), (1000, 300, 1200), (2, 0, 3), (0, 4, 5),
                 (1, 4096, 1)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,n,p", MATMUL_SHAPES)
def test_matmul(m: int, n: int, p: int, dtype: str) -> None:
    a, b = rand(m * n, dtype, 18), rand(n * p, dtype, 19)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else TOL[dtype]
    check("matmul", [a, b, "OUT", m, n, p], (m * p, dtype), tol)


@pytest.mark.parametrize("batch,m,n,p", [(1, 2, 3, 4), (7, 33, 17, 9), (3, 128, 64, 256),
                                         (64, 64, 64, 64)])
def test_matmul_batched(batch: int, m: int, n: int, p: int) -> None:
    a, b = rand(batch * m * n, "float32", 20), rand(batch * n * p, "float32", 21)
    check("matmul_batched", [a, b, "OUT", batch, m, n, p], (batch * m * p, "float32"),
          dict(rtol=1e-4, atol=1e-4))


def test_matmul_errors() -> None:
    a = cuda.Array(6, "float32")
    with pytest.raises(ValueError, match="matmul: buffers"):
        cuda.matmul(a, a, cuda.Array(4, "float32"), 2, 3, 4)
    with pytest.raises(TypeError):
        cuda.matmul(cuda.Array(4, "int64"), cuda.Array(4, "int64"), cuda.Array(4, "int64"),
                    2, 2, 2)


def _strided_operand(kind: str, rows: int, cols: int, dtype: str, seed: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """A 1-D base buffer and a (rows, cols) numpy view of it of the given kind."""
    if kind == "compact":
        base = rand(rows * cols, dtype, seed)
        return base, base.reshape(rows, cols)
    if kind == "transposed":  # row stride 1, column stride rows
        base = rand(rows * cols, dtype, seed)
        return base, base.reshape(cols, rows).T
    if kind == "window":  # unit column stride, longer rows, an offset (aligned if cols % 4 == 0)
        base = rand((rows + 4) * (cols + 8), dtype, seed)
        return base, base.reshape(rows + 4, cols + 8)[4:, 4:4 + cols]
    if kind == "sliced":  # an offset and steps in both directions
        base = rand((3 * rows + 2) * (2 * cols + 3), dtype, seed)
        return base, base.reshape(3 * rows + 2, 2 * cols + 3)[2::3, 1::2][:, :cols]
    if kind == "broadcast_rows":  # row stride 0: every row is the same
        base = rand(cols + 3, dtype, seed)
        return base, np.broadcast_to(base[3:], (rows, cols))
    assert kind == "broadcast_cols"  # column stride 0
    base = rand(rows + 1, dtype, seed)
    return base, np.broadcast_to(base[1:, None], (rows, cols))


def _layout(base: np.ndarray, view: np.ndarray) -> tuple[int, int, int]:
    """(offset, row stride, column stride) in elements of a 2-D view of the 1-D base."""
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    item = base.itemsize
    return start // item, view.strides[0] // item, view.strides[1] // item


STRIDED_CASES = [("compact", "compact"), ("transposed", "compact"), ("compact", "transposed"),
                 ("transposed", "transposed"), ("window", "transposed"), ("sliced", "sliced"),
                 ("compact", "broadcast_rows"), ("transposed", "broadcast_cols")]
# 1, 7, 33, 130 cross the tile edges; (128, 64, 256) takes the 16-byte loads where the
# views allow them and (2304, 64, 2048) the 128x128 float32 tiles.
STRIDED_SHAPES = [(1, 1, 1), (7, 7, 7), (7, 33, 130), (130, 7, 33), (33, 130, 7),
                  (130, 130, 130), (128, 64, 256), (2304, 64, 2048)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,n,p", STRIDED_SHAPES)
@pytest.mark.parametrize("a_kind,b_kind", STRIDED_CASES)
def test_matmul_strided(a_kind: str, b_kind: str, m: int, n: int, p: int, dtype: str) -> None:
    a_base, a_view = _strided_operand(a_kind, m, n, dtype, 30)
    b_base, b_view = _strided_operand(b_kind, n, p, dtype, 31)
    out = put(cuda, np.full(m * p, np.nan, dtype))  # every element must be written
    cuda.matmul_strided(put(cuda, a_base), put(cuda, b_base), out, m, n, p,
                        *_layout(a_base, a_view), *_layout(b_base, b_view))
    want = (a_view.astype(np.float64) @ b_view.astype(np.float64)).reshape(-1).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else TOL[dtype]
    np.testing.assert_allclose(get(cuda, out), want, **tol,
                               err_msg=f"matmul_strided differs from numpy ({a_kind}, {b_kind})")


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_strided_empty(dtype: str) -> None:
    # n == 0: out is m*p zeros and the views are not read (nor checked)
    out = put(cuda, np.full(16, np.nan, dtype))
    tiny = cuda.Array(1, dtype)
    cuda.matmul_strided(tiny, tiny, out, 5, 0, 3, 10**15, 1, 5, 10**15, 3, 1)
    np.testing.assert_array_equal(get(cuda, out)[:15], np.zeros(15, dtype))
    assert np.isnan(get(cuda, out)[15])
    # m == 0 or p == 0: nothing to write
    a, b = put(cuda, rand(20, dtype, 32)), put(cuda, rand(12, dtype, 33))
    for m, p in ((0, 3), (5, 0)):
        keep = put(cuda, np.full(15, 7, dtype))
        cuda.matmul_strided(a, b, keep, m, 4, p, 0, 4, 1, 0, 3, 1)
        np.testing.assert_array_equal(get(cuda, keep), np.full(15, 7, dtype))


def test_matmul_strided_errors() -> None:
    a, b = put(cuda, rand(12, "float32", 34)), put(cuda, rand(12, "float32", 35))
    out = put(cuda, np.full(9, 5, np.float32))
    good = [3, 4, 3, 0, 4, 1, 0, 3, 1]  # m, n, p; a (3, 4) and b (4, 3), compact
    names = ("m", "n", "p", "a_offset", "a_rs", "a_cs", "b_offset", "b_rs", "b_cs")
    for i, name in enumerate(names):
        bad = list(good)
        bad[i] = -1
        with pytest.raises(ValueError, match=f"matmul_strided: {name} must be >= 0, got -1"):
            cuda.matmul_strided(a, b, out, *bad)
    with pytest.raises(ValueError, match="matmul_strided: out has 8 elements"):
        cuda.matmul_strided(a, b, cuda.Array(8, "float32"), *good)
    with pytest.raises(ValueError, match=r"matmul_strided: a view .* does not fit a buffer of 12"):
        cuda.matmul_strided(a, b, out, 3, 4, 3, 1, 4, 1, 0, 3, 1)  # last element at 12
    with pytest.raises(ValueError, match=r"matmul_strided: b view .* does not fit a buffer of 12"):
        cuda.matmul_strided(a, b, out, 3, 4, 3, 0, 4, 1, 0, 1, 5)  # transposed b, cs too big
    with pytest.raises(ValueError, match="matmul_strided: a view"):
        cuda.matmul_strided(a, b, out, 3, 4, 3, 2**63 - 1, 1, 1, 0, 3, 1)  # the reach overflows
    with pytest.raises(ValueError, match="matmul_strided: .*overflows"):
        cuda.matmul_strided(a, b, out, 3, 4, 3, 0, 2**62, 1, 0, 3, 1)  # (m-1)*a_rs overflows
    with pytest.raises(TypeError, match="matmul_strided"):
        cuda.matmul_strided(a, cuda.Array(12, "float64"), out, *good)
    i64 = cuda.Array(12, "int64")
    with pytest.raises(TypeError, match="matmul_strided"):
        cuda.matmul_strided(i64, i64, cuda.Array(9, "int64"), *good)
    # validation happens before anything is queued: out is untouched
    np.testing.assert_array_equal(get(cuda, out), np.full(9, 5, np.float32))


# Attention's batches: heads split out of a (B, T, H, D) projection, k transposed,
# a broadcast batch; (2, 64, 4, 32) x 4 heads take the 16-byte loads.
BATCHED_STRIDED_SHAPES = [(2, 5, 3, 4), (2, 64, 4, 32), (3, 33, 2, 7)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("b_, t, h, d", BATCHED_STRIDED_SHAPES)
@pytest.mark.parametrize("kind", ["q @ k^T", "p @ v", "broadcast"])
def test_matmul_batched_strided(kind: str, b_: int, t: int, h: int, d: int, dtype: str) -> None:
    qkv = rand(b_ * t * 3 * h * d, dtype, 36)
    heads = qkv.reshape(b_, t, 3, h, d)
    q, k, v = heads[:, :, 0].transpose(0, 2, 1, 3), heads[:, :, 1], heads[:, :, 2]
    if kind == "q @ k^T":
        a_view, b_view, a_base, b_base = q, k.transpose(0, 2, 3, 1), qkv, qkv
    elif kind == "p @ v":
        probs = rand(b_ * h * t * t, dtype, 37)
        a_view, a_base = probs.reshape(b_, h, t, t), probs
        b_view, b_base = v.transpose(0, 2, 1, 3), qkv
    else:  # one head's keys for every batch entry
        a_view, a_base = q, qkv
        b_view, b_base = np.broadcast_to(k[:1, :, :1].transpose(0, 2, 3, 1), (b_, h, d, t)), qkv
    batch, (m, n), p = a_view.shape[:2], a_view.shape[2:], b_view.shape[-1]
    layout = []
    for base, view in ((a_base, a_view), (b_base, b_view)):
        start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        layout += [start // base.itemsize, [s // base.itemsize for s in view.strides]]
    out = put(cuda, np.full(math.prod(batch) * m * p, np.nan, dtype))  # all written
    cuda.matmul_batched_strided(put(cuda, a_base), put(cuda, b_base), out, list(batch), m, n, p,
                                *layout)
    want = (a_view.astype(np.float64) @ b_view.astype(np.float64)).reshape(-1).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else TOL[dtype]
    np.testing.assert_allclose(get(cuda, out), want, **tol,
                               err_msg=f"matmul_batched_strided differs from numpy ({kind})")


def test_matmul_batched_strided_errors() -> None:
    a, b = put(cuda, rand(30, "float32", 38)), put(cuda, rand(12, "float32", 39))
    out = put(cuda, np.full(6, 5, np.float32))
    op = "matmul_batched_strided"
    good = ([2], 3, 5, 1, 0, [15, 5, 1], 0, [6, 1, 1])  # a: 2 of 3x5, b: 2 of 5x1
    cuda.matmul_batched_strided(a, b, out, *good)
    with pytest.raises(ValueError, match=f"{op}: a batch of 1 dims needs 3 strides"):
        cuda.matmul_batched_strided(a, b, out, [2], 3, 5, 1, 0, [15, 5], 0, [6, 1, 1])
    with pytest.raises(ValueError, match=f"{op}: batch dims and strides must be >= 0"):
        cuda.matmul_batched_strided(a, b, out, [2], 3, 5, 1, 0, [15, -5, 1], 0, [6, 1, 1])
    with pytest.raises(ValueError, match=f"{op}: sizes and offsets must be >= 0"):
        cuda.matmul_batched_strided(a, b, out, [2], 3, 5, 1, -1, [15, 5, 1], 0, [6, 1, 1])
    with pytest.raises(ValueError, match=f"{op}: out has 5 elements"):
        cuda.matmul_batched_strided(a, b, cuda.Array(5, "float32"), *good)
    with pytest.raises(ValueError, match=rf"{op}: a view .* does not fit a buffer of 30"):
        cuda.matmul_batched_strided(a, b, out, [2], 3, 5, 1, 0, [20, 5, 1], 0, [6, 1, 1])
    with pytest.raises(TypeError, match=op):
        cuda.matmul_batched_strided(put(cuda, np.zeros(30, np.int64)),
                                    put(cuda, np.zeros(12, np.int64)), cuda.Array(6, "int64"),
                                    *good)


CONVS = [  # n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw
    (1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1),
    (2, 3, 8, 7, 3, 2, 2, 1, 1, 0, 1, 1),
    (2, 4, 9, 9, 3, 3, 2, 2, 2, 1, 2, 1),
    (8, 16, 28, 28, 5, 5, 1, 1, 2, 2, 1, 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("conv", CONVS, ids=str)
def test_im2col_col2im(conv: tuple, dtype: str) -> None:
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw = conv
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    image, cols = rand(n * c * h * w, dtype, 22), rand(n * oh * ow * c * kh * kw, dtype, 23)
    check("im2col", [image, "OUT", *conv], (cols.size, dtype), TOL["int64"])
    check("col2im", [cols, "OUT", *conv], (image.size, dtype), SUM_TOL[dtype])


@pytest.mark.skipif(os.environ.get("LAMINA_CUDA_EXACT_ALLOC") == "1",
                    reason="LAMINA_CUDA_EXACT_ALLOC=1 turns the block cache off")
def test_allocator_reuses_blocks() -> None:
    a = put(cuda, rand(1 << 20, "float32", 24))
    cuda.synchronize()
    for _ in range(3):  # warm up: the sizes of one "step"
        t = cuda.Array(1 << 20, "float32")
        cuda.ewise_exp(a, t)
        s = cuda.Array(1024, "float32")
        cuda.reduce_sum(t, s, 1024)
        del t, s
    before = cuda.memory_stats()
    for _ in range(20):
        t = cuda.Array(1 << 20, "float32")
        cuda.ewise_exp(a, t)
        s = cuda.Array(1024, "float32")
        cuda.reduce_sum(t, s, 1024)
        del t, s
    after = cuda.memory_stats()
    assert after["cuda_malloc_calls"] == before["cuda_malloc_calls"]
    assert after["cache_hits"] >= before["cache_hits"] + 40
    assert after["peak"] >= after["allocated"] > 0
    cuda.empty_cache()
    assert cuda.memory_stats()["reserved"] == cuda.memory_stats()["allocated"]


EXACT_ALLOC_CHECK = """
import numpy as np
from lamina_backend_cuda import backend as cuda
start = cuda.memory_stats()
for n in (1, 3, 1000, 1):
    a = cuda.Array(n, "float32")
    cuda.from_numpy(np.arange(n, dtype=np.float32), a)
    np.testing.assert_array_equal(cuda.to_numpy(a, (n,), (1,), 0), np.arange(n))
    del a
end = cuda.memory_stats()
assert end["cuda_malloc_calls"] - start["cuda_malloc_calls"] == 4, (start, end)
assert end["cuda_free_calls"] - start["cuda_free_calls"] == 4, (start, end)
assert end["cache_hits"] == start["cache_hits"] and end["reserved"] == end["allocated"] == 0
assert end["peak"] == 4000, end  # exactly the bytes asked for, not a rounded block
"""


def test_exact_alloc_switch_allocates_exact_sizes_and_frees_at_once() -> None:
    env = dict(os.environ, LAMINA_CUDA_EXACT_ALLOC="1")
    subprocess.run([sys.executable, "-c", EXACT_ALLOC_CHECK], env=env, check=True)


def test_devices_and_errors() -> None:
    count = cuda.device_count()
    assert count >= 1
    with pytest.raises(ValueError, match=f"cuda:{count} does not exist"):
        cuda.Array(4, "float32", count)
    with pytest.raises(TypeError, match="unsupported dtype"):
        cuda.Array(4, "int8")
    with pytest.raises(ValueError, match="size must be >= 0"):
        cuda.Array(-1, "float32")
    with pytest.raises(ValueError, match="operand 1 has 3 elements"):
        cuda.ewise_add(cuda.Array(5, "float32"), cuda.Array(3, "float32"),
                       cuda.Array(5, "float32"))
    with pytest.raises(ValueError, match="from_numpy"):
        cuda.from_numpy(np.zeros(3, np.float32), cuda.Array(4, "float32"))
    if count > 1:
        with pytest.raises(ValueError, match="different devices"):
            cuda.ewise_add(cuda.Array(4, "float32", 0), cuda.Array(4, "float32", 1),
                           cuda.Array(4, "float32", 0))


def test_results_survive_a_reference_run() -> None:
    # run() builds buffers on both backends; make sure cuda did not hand back numpy's
    got, want = run("ewise_add", [np.ones(3, np.float32), np.ones(3, np.float32), "OUT"],
                    (3, "float32"))
    np.testing.assert_array_equal(got, want)
