"""Every kernel of interface v2 and every optional fast path, compared with
the numpy reference backend over dtypes and odd sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ALL, FLOATS, ODD_SIZES, TOL, buffer, compare, cpu, host, rand, ref
from lamina.ndarray._interface import (
    BINARY_OPS,
    COMPARISON_OPS,
    OPTIONAL,
    REQUIRED,
    REVERSED_SCALAR_OPS,
    STRIDED_OPS,
    UNARY_OPS,
    V11_KERNELS,
    kernel_dtypes,
)

ARITH = [op for op in BINARY_OPS if op not in COMPARISON_OPS]
POSITIVE = {"log", "sqrt"}


def test_every_name_is_exported() -> None:
    missing = [n for n in REQUIRED if not hasattr(cpu, n)]
    assert missing == []
    # a single device: no device_count, so the registry names it "cpu", not "cpu:0"
    assert [n for n in OPTIONAL if not hasattr(cpu, n)] == ["device_count"]
    assert set(V11_KERNELS) <= set(dir(cpu))
    assert hasattr(cpu, "reduce_prod") and hasattr(cpu, "cumsum_last")
    assert memoryview(cpu.Array(3, "float32")).shape == (3,)  # zero-copy host memory


def test_metadata() -> None:
    assert cpu.name == "cpu" and cpu.api_version == 2 and cpu.api_minor_version == 2
    assert cpu.dtypes == ("float32", "float64", "int64", "bool", "float16", "bfloat16")
    # kernel_dtypes (since v1.1) names the kernels that take fewer dtypes
    assert cpu.kernel_dtypes["ewise_div"] == ("float32", "float64", "float16", "bfloat16")
    assert cpu.kernel_dtypes["ewise_bitwise_and"] == ("int64", "bool")
    assert cpu.kernel_dtypes["reduce_sum"] == ("float32", "float64", "int64", "float16", "bfloat16")
    # v2.2: the elementwise kernels, fill and the matmuls also take the 16-bit floats
    assert cpu.kernel_dtypes["ewise_add"] == cpu.dtypes == cpu.kernel_dtypes["ewise_eq"]
    assert cpu.kernel_dtypes["matmul"] == ("float32", "float64", "float16", "bfloat16")
    assert cpu.is_available() is True and cpu.unavailable_reason() == ""


@pytest.mark.parametrize("op", STRIDED_OPS)
def test_every_binary_op_has_its_strided_kernel(op: str) -> None:
    # interface v2: v1.1's ewise_strided(op, ...) became one kernel per op,
    # declared in kernel_dtypes with its ewise_OP's dtypes
    assert not hasattr(cpu, "ewise_strided") and "ewise_strided" not in cpu.kernel_dtypes
    name = f"ewise_strided_{op}"
    assert cpu.kernel_dtypes.get(name) == cpu.kernel_dtypes.get(f"ewise_{op}")
    # and the kernel computes its own op (b broadcast along rows, a transposed)
    dtype = cpu.kernel_dtypes.get(name, cpu.dtypes)[0]
    a, b = rand(6, dtype, 40), rand(3, dtype, 41)
    if dtype == "int64":
        b = np.where(b == 0, 3, np.abs(b))  # a divisor or exponent every op takes
    out = "bool" if op in COMPARISON_OPS else dtype
    compare(name, [a, b], [(6, out)], (2, 3), (1, 2), 0, (0, 1), 0)


def test_kernel_dtypes_are_the_reference_backends() -> None:
    # cpu takes exactly the wide dtypes the numpy reference takes, kernel by kernel (the
    # reference runs every kernel on the 16-bit floats through the float32 fallback;
    # cpu runs some natively: the conformance kit's test_narrow_native checks them)
    wide = lambda names: sorted(set(names) - {"float16", "bfloat16"})  # noqa: E731
    theirs = kernel_dtypes(ref)
    mine = kernel_dtypes(cpu)
    shared = [k for k in theirs if theirs[k] and mine[k]]
    assert {k: wide(mine[k]) for k in shared} == {k: wide(theirs[k]) for k in shared}
    for name, dtypes in cpu.kernel_dtypes.items():
        # only what says more than the default (the wide dtypes) is declared
        assert hasattr(cpu, name) and set(dtypes) <= set(cpu.dtypes), name
        assert set(dtypes) != {"float32", "float64", "int64", "bool"}, name


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("size", ODD_SIZES)
def test_buffers_roundtrip_and_fill(dtype: str, size: int) -> None:
    x = rand(size, dtype)
    compare("fill", [], [(size, dtype)], 3)
    compare("ewise_cast", [x], [(size, dtype)])
    a = cpu.Array(size, dtype)
    cpu.from_numpy(x, a)
    assert a.size == size and a.dtype == dtype
    np.testing.assert_array_equal(cpu.to_numpy(a, (size,), (1,), 0), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ARITH)
@pytest.mark.parametrize("size", ODD_SIZES)
def test_binary(dtype: str, op: str, size: int) -> None:
    lo = 0.5 if op == "power" else -2.0
    a, b = rand(size, dtype, 1, lo), rand(size, dtype, 2, lo)
    compare(f"ewise_{op}", [a, b], [(size, dtype)])
    compare(f"scalar_{op}", [a, 1.5], [(size, dtype)])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", COMPARISON_OPS)
@pytest.mark.parametrize("size", (0, 1, 17, 1031, 65537))
def test_comparisons(dtype: str, op: str, size: int) -> None:
    a, b = rand(size, dtype, 1), rand(size, dtype, 2)
    if size > 3:
        b[:3] = a[:3]  # some ties
    compare(f"ewise_{op}", [a, b], [(size, dtype)])
    compare(f"scalar_{op}", [a, 1.0], [(size, dtype)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", REVERSED_SCALAR_OPS)
@pytest.mark.parametrize("size", (0, 1, 17, 65537))
def test_reversed_scalar(dtype: str, op: str, size: int) -> None:
    a = rand(size, dtype, 3, 0.5 if op != "rsub" else -2.0)
    compare(f"scalar_{op}", [a, 2.5], [(size, dtype)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", UNARY_OPS)
@pytest.mark.parametrize("size", ODD_SIZES)
def test_unary(dtype: str, op: str, size: int) -> None:
    a = rand(size, dtype, 4, 0.01 if op in POSITIVE else -3.0, 3.0)
    compare(f"ewise_{op}", [a], [(size, dtype)])


@pytest.mark.parametrize("dtype", FLOATS)
def test_exp_edges(dtype: str) -> None:
    a = np.array([0, -0.0, 1e-30, 88.7, 89, 709, 710, -87.5, -100, -104, -750, np.inf,
                  -np.inf, np.nan] * 3 + list(np.linspace(-90, 90, 37)), dtype=dtype)
    compare("ewise_exp", [a], [(a.size, dtype)])


def test_nan_propagation() -> None:
    a = np.array([1, np.nan, 3, -1, np.nan, 0] * 5, dtype=np.float32)
    b = np.array([np.nan, 2, 1, -2, np.nan, 0] * 5, dtype=np.float32)
    for op in ("maximum", "minimum"):
        compare(f"ewise_{op}", [a, b], [(a.size, "float32")])
    for op in ("sum", "max", "min", "argmax"):
        out = "int64" if op == "argmax" else "float32"
        compare(f"reduce_{op}", [a], [(5, out)], 6)
        long = np.arange(1000, dtype=np.float32)
        long[517] = np.nan
        compare(f"reduce_{op}", [long], [(1, out)], 1000)


@pytest.mark.parametrize("cond_dtype", ("same", "int64"))
@pytest.mark.parametrize("dtype", ALL)
def test_where(dtype: str, cond_dtype: str) -> None:
    size = 1031
    cond = rand(size, dtype if cond_dtype == "same" else "int64", 5)
    compare("ewise_where", [cond, rand(size, dtype, 6), rand(size, dtype, 7)], [(size, dtype)])


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_cast(src: str, dst: str) -> None:
    a = rand(1031, src, 8, -50, 50)
    if src != "int64":
        a[:4] = [2.7, -2.7, 0.5, -0.5]
    compare("ewise_cast", [a], [(a.size, dst)])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ("sum", "max", "min", "argmax"))
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 7), (5, 17), (2, 1031), (1, 200003),
                                       (64, 1000), (0, 5), (4, 0)])
def test_reduce(dtype: str, op: str, rows: int, size: int) -> None:
    if size == 0 and op != "sum":
        return
    out = "int64" if op == "argmax" else dtype
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" and op == "sum" else None
    compare(f"reduce_{op}", [rand(rows * size, dtype, 9)], [(rows, out)], size, tol=tol)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("outer,size,inner", [(1, 1, 1), (3, 5, 7), (1, 1000, 33),
                                              (2, 17, 1), (4, 0, 3), (0, 4, 3),
                                              (1, 300, 2049), (2, 64, 4096)])
def test_reduce_sum_axis(dtype: str, outer: int, size: int, inner: int) -> None:
    a = rand(outer * size * inner, dtype, 10)
    compare("reduce_sum_axis", [a], [(outer * inner, dtype)], outer, size, inner,
            tol=dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 10), (7, 17), (128, 1000), (2, 3001),
                                       (300, 10), (40, 63)])  # short rows, several blocks
def test_softmax_logsumexp(dtype: str, rows: int, size: int) -> None:
    a = rand(rows * size, dtype, 11, -20, 20)
    compare("softmax_last", [a], [(rows * size, dtype)], size)
    compare("logsumexp_last", [a], [(rows, dtype)], size)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 10), (7, 17), (128, 1000), (2, 3001)])
def test_layer_norm(dtype: str, rows: int, size: int) -> None:
    a = rand(rows * size, dtype, 13, 9, 11)
    w, b = rand(size, dtype, 14), rand(size, dtype, 15)
    compare("layer_norm_last", [a, w, b], [(rows * size, dtype), (rows, dtype), (rows, dtype)],
            size, 1e-5, tol=dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 2), (3, 10), (70, 17), (130, 128), (2, 3001)])
def test_layer_norm_backward(dtype: str, rows: int, size: int) -> None:
    # Several 64-row blocks (70, 130 rows), rows shorter and longer than the 16 lanes.
    a = rand(rows * size, dtype, 13, 9, 11)
    w, g = rand(size, dtype, 14), rand(rows * size, dtype, 17)
    mean = a.reshape(rows, size).mean(1).astype(dtype)
    rstd = (1 / np.sqrt(a.reshape(rows, size).var(1) + 1e-5)).astype(dtype)
    compare("layer_norm_backward_last", [g, a, w, mean, rstd],
            [(rows * size, dtype), (size, dtype), (size, dtype)], size,
            tol=dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 10), (70, 17), (2, 3001)])
def test_log_softmax_backward(dtype: str, rows: int, size: int) -> None:
    # Rows shorter and longer than the 4 accumulators and the exp loop's lanes.
    x = rand(rows * size, dtype, 18, -5, 5).reshape(rows, size).astype(np.float64)
    out = (x - np.log(np.exp(x).sum(1, keepdims=True))).reshape(-1).astype(dtype)
    g = rand(rows * size, dtype, 19)
    compare("log_softmax_backward_last", [g, out], [(rows * size, dtype)], size,
            tol=dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", ODD_SIZES)
def test_erf(dtype: str, size: int) -> None:
    # The numpy reference has no erf kernel: compare with libm through math.erf.
    a = rand(size, dtype, 16, -5, 5)
    out = cpu.Array(size, dtype)
    cpu.ewise_erf(buffer(cpu, a), out)
    want = np.array([math.erf(v) for v in a.tolist()], dtype=dtype)
    np.testing.assert_allclose(host(cpu, out), want, **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [1, 7, 8, 9, 33, 70_001])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_its_program_bit_for_bit(dtype: str, size: int, approximate: str) -> None:
    # gelu and gelu_backward run the steps of ewise_program's GELU listings in one
    # pass: the same bits, on the vector path, its scalar lanes (NaN, exp's range
    # ending near |x| = 13.2, erf's clamp at 4, tanh's branch at 0.625) and the tail.
    from lamina import ndarray as nd
    from lamina.ndarray import _fused

    edges = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, 0.624, 0.626, 0.999, 1.0, 3.9, 4.0,
             5.66, -5.66, 13.19, 13.2, -13.2, 20.0, -100.0, 1e30, -1e30]
    a = np.concatenate([edges, rand(size, dtype, 20, -6, 6)]).astype(dtype)[:size]
    g = rand(a.size, dtype, 21)
    x, dy = nd.array(a, device="cpu"), nd.array(g, device="cpu")
    for name, operands, listing in (
            ("gelu", [x], _fused._GELU_PROGRAM), ("gelu_backward", [x, dy],
                                                  _fused._GELU_GRAD_PROGRAM)):
        fused = cpu.Array(a.size, dtype)
        getattr(cpu, name)(*[o._buf for o in operands], fused, approximate == "tanh")
        steps = x._like()
        assert _fused._run_program([*operands, steps], listing[approximate])
        np.testing.assert_array_equal(host(cpu, fused).view(np.uint8),
                                      steps.numpy().view(np.uint8), err_msg=name)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [1, 7, 9, 33, 300_001])
def test_relu_backward_is_the_select_bit_for_bit(dtype: str, size: int) -> None:
    # one pass of g where x > 0 or is NaN, +0 elsewhere, on both sides of the
    # threading threshold: the bits of where(x <= 0, 0.0, g)
    from lamina import ndarray as nd

    edges = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1.0, -1.0]
    a = np.concatenate([edges, rand(size, dtype, 22)]).astype(dtype)[:size]
    g = rand(a.size, dtype, 23)
    g[: min(4, size)] = [np.nan, np.inf, -0.0, -np.inf][: min(4, size)]
    x, dy = nd.array(a, device="cpu"), nd.array(g, device="cpu")
    out = cpu.Array(a.size, dtype)
    cpu.relu_backward(x._buf, dy._buf, out)
    want = nd.where(x <= 0, 0.0, dy).numpy()
    np.testing.assert_array_equal(host(cpu, out).view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_logsumexp_infinite_rows(dtype: str) -> None:
    a = np.array([-np.inf, -np.inf, -np.inf, 1, np.inf, 2, -np.inf, 0, 1, np.nan, 1, 2],
                 dtype=dtype)
    compare("logsumexp_last", [a], [(4, dtype)], 3)
    compare("softmax_last", [a[3:]], [(9, dtype)], 3)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("outer,axis,inner,n", [(1, 5, 1, 7), (3, 4, 5, 6), (2, 10, 300, 9),
                                                (1, 1000, 64, 513), (4, 3, 2, 0)])
def test_index(dtype: str, outer: int, axis: int, inner: int, n: int) -> None:
    a = rand(outer * axis * inner, dtype, 12)
    idx = np.random.default_rng(13).integers(0, axis, size=n).astype(np.int64)
    compare("index_gather", [a, idx], [(outer * n * inner, dtype)], outer, axis, inner)
    src = rand(outer * n * inner, dtype, 14)
    init = lambda i, size: rand(size, dtype, 15)  # noqa: E731 (scatter-add accumulates)
    compare("index_scatter_add", [src, idx], [(outer * axis * inner, dtype)], outer, axis, inner,
            init=init)


def _tol(dtype: str, k: int) -> dict[str, float]:
    return dict(rtol=1e-4, atol=1e-4 * max(k, 1) ** 0.5) if dtype == "float32" else None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,n,p", [(1, 1, 1), (0, 3, 4), (3, 0, 4), (3, 4, 0), (2, 3, 4),
                                   (6, 16, 16), (7, 17, 19), (13, 1, 31), (1, 300, 257),
                                   (97, 101, 103), (150, 257, 129), (300, 300, 3100)])
def test_matmul(dtype: str, m: int, n: int, p: int) -> None:
    compare("matmul", [rand(m * n, dtype, 16), rand(n * p, dtype, 17)], [(m * p, dtype)],
            m, n, p, tol=_tol(dtype, n))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch,m,n,p", [(0, 2, 3, 4), (1, 5, 6, 7), (3, 7, 17, 19),
                                         (16, 8, 9, 10), (5, 64, 65, 66), (2, 200, 100, 150)])
def test_matmul_batched(dtype: str, batch: int, m: int, n: int, p: int) -> None:
    compare("matmul_batched", [rand(batch * m * n, dtype, 18), rand(batch * n * p, dtype, 19)],
            [(batch * m * p, dtype)], batch, m, n, p, tol=_tol(dtype, n))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,n,p", [(1, 1, 1), (2, 3, 4), (7, 17, 19), (64, 65, 66),
                                   (200, 100, 150), (3, 0, 5)])
@pytest.mark.parametrize("trans", ["a", "b", "ab"])
def test_matmul_strided_transposes(dtype: str, m: int, n: int, p: int, trans: str) -> None:
    a, b = rand(m * n, dtype, 20), rand(n * p, dtype, 21)
    a_layout = (0, 1, m) if "a" in trans else (0, n, 1)  # a holds A or A^T compactly
    b_layout = (0, 1, n) if "b" in trans else (0, p, 1)
    got = compare("matmul_strided", [a, b], [(m * p, dtype)], m, n, p, *a_layout, *b_layout,
                  tol=_tol(dtype, n))[0]
    want_a = a.reshape(n, m).T if "a" in trans else a.reshape(m, n)
    want_b = b.reshape(p, n).T if "b" in trans else b.reshape(n, p)
    np.testing.assert_allclose(got.reshape(m, p), want_a @ want_b, **(_tol(dtype, n) or TOL[dtype]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_b_rows_with_a_gap(dtype: str) -> None:
    # B's rows 5 elements apart more than its width, 9 full 16-wide panels and a
    # part one: packing goes a row at a time across the panels, 8 at a time.
    m, n, p, gap = 20, 70, 16 * 9 + 5, 5
    a, buf = rand(m * n, dtype, 28), rand(n * (p + gap), dtype, 29)
    got = compare("matmul_strided", [a, buf], [(m * p, dtype)], m, n, p, 0, n, 1, 0, p + gap, 1,
                  tol=_tol(dtype, n))[0]
    want_b = buf.reshape(n, p + gap)[:, :p]
    np.testing.assert_allclose(got.reshape(m, p), a.reshape(m, n) @ want_b,
                               **(_tol(dtype, n) or TOL[dtype]))


@pytest.mark.parametrize("m,n,p", [(13, 600, 16), (301, 257, 32), (6, 5, 1), (97, 1000, 17),
                                   (50, 300, 48), (37, 301, 64)])
@pytest.mark.parametrize("a_view", ["compact", "transposed", "every-other-column"])
def test_matmul_narrow_reads_a_in_place(m: int, n: int, p: int, a_view: str) -> None:
    # Products at most 64 floats wide (four AVX2 panels) read A through its strides
    # instead of packing it: odd row counts (partial tiles), several K blocks, any A layout.
    buf = rand(2 * m * n + 1, "float32", 24)
    a_layout = {"compact": (1, n, 1), "transposed": (1, 1, m),
                "every-other-column": (1, 2 * n, 2)}[a_view]
    off, rs, cs = a_layout
    want_a = np.lib.stride_tricks.as_strided(buf[off:], (m, n), (rs * 4, cs * 4))
    b = rand(n * p, "float32", 25)
    got = compare("matmul_strided", [buf, b], [(m * p, "float32")], m, n, p, *a_layout,
                  0, p, 1, tol=_tol("float32", n))[0]
    np.testing.assert_allclose(got.reshape(m, p),
                               np.asarray(want_a, np.float64) @ b.reshape(n, p),
                               rtol=1e-4, atol=1e-3)


def test_matmul_narrow_same_bits_for_any_thread_count() -> None:
    # Two threads split a 32-wide product into two 16-wide halves, each a narrow
    # product of its own: the sums must still run in the same order.
    a, b = rand(300 * 700, "float32", 26), rand(700 * 32, "float32", 27)
    old, outs = cpu.num_threads(), []
    try:
        for threads in (1, 2):
            cpu.set_num_threads(threads)
            outs.append(compare("matmul", [a, b], [(300 * 32, "float32")], 300, 700, 32,
                                tol=_tol("float32", 700))[0])
    finally:
        cpu.set_num_threads(old)
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("threads", [1, 2])
def test_matmul_strided_same_for_any_thread_count(threads: int) -> None:
    a, b = rand(300 * 200, "float32", 22), rand(200 * 250, "float32", 23)
    old = cpu.num_threads()
    cpu.set_num_threads(threads)
    try:
        got = compare("matmul_strided", [a, b], [(300 * 250, "float32")], 300, 200, 250,
                      0, 1, 300, 0, 1, 200, tol=_tol("float32", 200))[0]
    finally:
        cpu.set_num_threads(old)
    ref = np.asarray(a.reshape(200, 300).T, np.float64) @ b.reshape(250, 200).T
    np.testing.assert_allclose(got.reshape(300, 250), ref, rtol=1e-4, atol=1e-3)


CONV = [  # n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw
    (1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1),
    (2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 1, 1),
    (2, 2, 9, 9, 3, 3, 2, 2, 2, 1, 2, 1),
    (1, 4, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1),
    (3, 2, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1),
    (4, 3, 6, 5, 3, 3, 2, 1, 1, 1, 1, 1),   # whole images staged with padding
    (5, 3, 32, 32, 7, 7, 4, 4, 3, 3, 1, 1),  # the dlsys ResNet9 stem
    (4, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1),   # 4x4 planes: most patches touch the padding
    (3, 3, 10, 9, 3, 3, 1, 1, 1, 1, 1, 1),  # 3 channels, stride 1: pieces as 4-lane moves/adds
    (3, 1, 12, 11, 3, 3, 1, 1, 0, 0, 1, 1),  # 1 channel, unpadded: scalar col2im adds
    (2, 3, 11, 8, 3, 3, 1, 1, 1, 1, 2, 1),  # row dilation between the 4-lane pieces
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("geom", CONV)
def test_im2col_col2im(dtype: str, geom: tuple[int, ...]) -> None:
    n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw = geom
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    cols = n * oh * ow * c * kh * kw
    compare("im2col", [rand(n * c * h * w, dtype, 20)], [(cols, dtype)], *geom)
    compare("col2im", [rand(cols, dtype, 21)], [(n * c * h * w, dtype)], *geom)


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # inf + -inf in the reference
def test_col2im_special_values_stay_in_their_pixels() -> None:
    """An inf or NaN in the columns reaches only the pixels its patch entry maps
    to (the 4-lane adds mask their 4th lane, which reads the next entry), and
    -0 entries sum to +0 as the scalar adds do."""
    geom = (3, 3, 10, 9, 3, 3, 1, 1, 1, 1, 1, 1)
    cols = 3 * 10 * 9 * 27
    values = rand(cols, "float32", 22)
    values[5::37] = np.inf
    values[11::53] = -np.inf
    values[17::71] = np.nan
    values[3::29] = -0.0
    got = compare("col2im", [values], [(3 * 3 * 10 * 9, "float32")], *geom)[0]
    want = host(ref, _col2im_ref(values, geom))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


def _col2im_ref(values: np.ndarray, geom: tuple[int, ...]) -> object:
    n, c, h, w = geom[:4]
    out = buffer(ref, np.zeros(n * c * h * w, np.float32))
    ref.col2im(buffer(ref, values), out, *geom)
    return out


# (shape, a strides, b strides) over compact bases of `rows * 3` elements: a
# transposed a (strided loop), b broadcast along rows (contiguous loop) and
# along columns (scalar loop), and a scalar a broadcast everywhere.
STRIDED_LAYOUTS = {
    "a transposed": lambda rows: ((rows, 3), (1, rows), (3, 1)),
    "b row broadcast": lambda rows: ((rows, 3), (3, 1), (0, 1)),
    "b column broadcast": lambda rows: ((rows, 3), (3, 1), (1, 0)),
    "a scalar": lambda rows: ((rows, 3), (0, 0), (3, 1)),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows", ODD_SIZES)
@pytest.mark.parametrize("layout", sorted(STRIDED_LAYOUTS))
@pytest.mark.parametrize("op", ["sub", "div", "maximum", "lt"])
def test_ewise_strided_odd_sizes(dtype: str, rows: int, layout: str, op: str) -> None:
    shape, sa, sb = STRIDED_LAYOUTS[layout](rows)
    a, b = rand(rows * 3, dtype, 30), rand(rows * 3, dtype, 31) + 4  # b > 0 for div
    a_offset = 1 if layout == "a scalar" and rows else 0
    got = compare(f"ewise_strided_{op}", [a, b], [(rows * 3, dtype)], shape, sa, a_offset,
                  sb, 0)[0]
    a_view = np.lib.stride_tricks.as_strided(a[a_offset:], shape,
                                             tuple(s * a.itemsize for s in sa))
    b_view = np.lib.stride_tricks.as_strided(b, shape, tuple(s * b.itemsize for s in sb))
    want = {"sub": np.subtract, "div": np.divide, "maximum": np.maximum, "lt": np.less}[op](
        a_view, b_view).astype(dtype).reshape(-1)
    np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("threads", [1, 2])
def test_ewise_strided_same_for_any_thread_count(threads: int) -> None:
    # BatchNorm's layout: a per-channel vector against NCHW activations.
    x, scale = rand(64 * 32 * 16 * 16, "float32", 32), rand(32, "float32", 33)
    old = cpu.num_threads()
    cpu.set_num_threads(threads)
    try:
        got = compare("ewise_strided_mul", [x, scale], [(x.size, "float32")],
                      (64, 32, 16, 16), (8192, 256, 16, 1), 0, (0, 1, 0, 0), 0)[0]
    finally:
        cpu.set_num_threads(old)
    want = x.reshape(64, 32, 16, 16) * scale[:, None, None]
    np.testing.assert_array_equal(got, want.reshape(-1))


@pytest.mark.parametrize("kernel", ["ewise_add", "ewise_sub", "ewise_mul", "ewise_maximum",
                                    "ewise_minimum", "ewise_lt", "ewise_eq"])
def test_int64_arithmetic_matches_numpy(kernel) -> None:
    # the kernels the backend declares for int64 (interface v1.1), on odd sizes
    from lamina.ndarray._numpy_backend import backend as reference

    rng = np.random.default_rng(1)
    for n in (1, 7, 1001, 100_003):
        a, b = (rng.integers(-2**40, 2**40, n) for _ in range(2))
        outs = []
        for be in (cpu, reference):
            bufs = []
            for x in (a, b):
                buf = be.Array(n, "int64")
                be.from_numpy(x, buf)
                bufs.append(buf)
            out = be.Array(n, "int64")
            getattr(be, kernel)(*bufs, out)
            outs.append(be.to_numpy(out, (n,), (1,), 0))
        np.testing.assert_array_equal(outs[0], outs[1])
