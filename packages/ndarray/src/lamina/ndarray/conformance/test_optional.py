"""The optional fast paths, each tested only when the backend provides it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lamina.ndarray._interface import BINARY_OPS, NARROW_DTYPES, OPTIONAL, STRIDED_OPS
from lamina.ndarray._optable import OPS, ops
from lamina.ndarray.conformance._harness import (
    LARGE,
    OUT,
    assert_close,
    call,
    compare,
    get,
    layout_of,
    put,
    sample,
)


def _need(backend, kernel):
    assert kernel in OPTIONAL
    if not hasattr(backend, kernel):
        pytest.skip(f"backend has no {kernel} (optional)")


@pytest.mark.parametrize("shape", [(1, 1), (4, 7), (0, 3), (3, 1000), (1, LARGE)], ids=str)
@pytest.mark.parametrize("kernel", ["softmax_last", "logsumexp_last"])
def test_row_kernels(lamina_backend, lamina_reference, lamina_float, kernel, shape):
    _need(lamina_backend, kernel)
    rows, size = shape
    a = sample(lamina_float, shape, 1, -20, 20)  # exp overflows without the shift
    out = rows * size if kernel == "softmax_last" else rows
    compare(lamina_backend, lamina_reference, kernel, [a, OUT, size], (out, lamina_float),
            kind="large" if size >= 10_000 else "reduce")


@pytest.mark.parametrize("shape", [(1, 1), (4, 7), (0, 3), (3, 1000), (2, LARGE)], ids=str)
def test_log_softmax_backward_last(lamina_backend, lamina_float, shape):
    # Against the float64 formula g - exp(out) * sum(g), out a log-softmax's rows.
    _need(lamina_backend, "log_softmax_backward_last")
    rows, size = shape
    x = sample(lamina_float, shape, 10, -20, 20).astype(np.float64).reshape(rows, size)
    out = (x - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True))
           - x.max(1, keepdims=True)) if rows else x
    out = out.astype(lamina_float).reshape(-1)
    g = sample(lamina_float, shape, 11)
    got = call(lamina_backend, "log_softmax_backward_last", [g, out, OUT, size],
               (rows * size, lamina_float))
    wide = g.astype(np.float64).reshape(rows, size)
    want = wide - np.exp(out.astype(np.float64).reshape(rows, size)) * wide.sum(1, keepdims=True)
    assert_close(got, want.reshape(-1).astype(lamina_float),
                 "large" if size >= 10_000 else "reduce", "log_softmax_backward_last")


def _gelu_want(x: np.ndarray, g: np.ndarray | None, tanh: bool) -> np.ndarray:
    """GELU (or g * GELU') of ``x`` in float64, libm's erf and tanh."""
    w = x.astype(np.float64)
    if tanh:
        u = math.sqrt(2 / math.pi) * (w + 0.044715 * w ** 3)
        t = np.tanh(u)
        value, slope = 0.5 * w * (1 + t), 0.5 * (1 + t) + 0.5 * w * (1 - t * t) * math.sqrt(
            2 / math.pi) * (1 + 3 * 0.044715 * w * w)
    else:
        cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in w.tolist()]))
        value, slope = w * cdf, cdf + w * np.exp(-0.5 * w * w) / math.sqrt(2 * math.pi)
    return (value if g is None else g.astype(np.float64) * slope).astype(x.dtype)


@pytest.mark.parametrize("size", [1, 9, 1000, LARGE], ids=str)
@pytest.mark.parametrize("tanh", [False, True], ids=["erf", "tanh"])
def test_gelu(lamina_backend, lamina_float, size, tanh):
    _need(lamina_backend, "gelu")
    _need(lamina_backend, "gelu_backward")
    x = sample(lamina_float, size, 12, -8, 8)
    g = sample(lamina_float, size, 13)
    kind = "large" if size >= 10_000 else "ewise"
    got = call(lamina_backend, "gelu", [x, OUT, tanh], (size, lamina_float))
    assert_close(got, _gelu_want(x, None, tanh), kind, "gelu")
    got = call(lamina_backend, "gelu_backward", [x, g, OUT, tanh], (size, lamina_float))
    assert_close(got, _gelu_want(x, g, tanh), kind, "gelu_backward")


@pytest.mark.parametrize("size", [1, 9, 1000, LARGE], ids=str)
def test_relu_backward(lamina_backend, lamina_float, size):
    # g where x > 0 or is NaN (PyTorch's threshold rule), +0 where x <= 0, also
    # where g is inf or NaN
    _need(lamina_backend, "relu_backward")
    x = sample(lamina_float, size, 14, -3, 3)
    g = sample(lamina_float, size, 15)
    x[:4], g[:4] = [np.nan, -0.0, 0.0, -np.inf][:size], [1.0, np.inf, np.nan, np.nan][:size]
    got = call(lamina_backend, "relu_backward", [x, g, OUT], (size, lamina_float))
    want = np.where(x <= 0, np.zeros_like(g), g)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_softmax_rows_sum_to_one(lamina_backend, lamina_float):
    _need(lamina_backend, "softmax_last")
    a = sample(lamina_float, (5, 9), 2, -80, 80)
    got = call(lamina_backend, "softmax_last", [a, OUT, 9], (45, lamina_float))
    np.testing.assert_allclose(got.reshape(5, 9).sum(axis=1), 1, rtol=1e-5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # log(0) of an all -inf row
def test_logsumexp_handles_infinities(lamina_backend, lamina_float):
    _need(lamina_backend, "logsumexp_last")
    a = np.array([[-np.inf, -np.inf], [0, -np.inf], [1000, 1000]], lamina_float)
    got = call(lamina_backend, "logsumexp_last", [a, OUT, 2], (3, lamina_float))
    np.testing.assert_allclose(got, [-np.inf, 0, 1000 + np.log(2)], rtol=1e-6)


def _layer_norm(backend, a, w, b, rows, size, eps):
    """out, mean and rstd of ``layer_norm_last`` on ``backend``, as numpy arrays."""
    dtype = a.dtype.name
    out, mean, rstd = (backend.Array(n, dtype) for n in (rows * size, rows, rows))
    backend.layer_norm_last(put(backend, a), put(backend, w), put(backend, b), out, mean, rstd,
                            size, eps)
    return [get(backend, buf) for buf in (out, mean, rstd)]


@pytest.mark.parametrize("shape", [(1, 1), (4, 7), (0, 3), (3, 1000), (2, 3001)], ids=str)
def test_layer_norm_last(lamina_backend, lamina_reference, lamina_float, shape):
    _need(lamina_backend, "layer_norm_last")
    rows, size = shape
    # An offset mean (|mean| >> std) catches a one-pass E[x^2] - E[x]^2 variance.
    a = sample(lamina_float, shape, 4, 99, 101)
    w, b = sample(lamina_float, size, 5), sample(lamina_float, size, 6)
    got = _layer_norm(lamina_backend, a, w, b, rows, size, 1e-5)
    want = _layer_norm(lamina_reference, a, w, b, rows, size, 1e-5)
    for name, g, r in zip(("out", "mean", "rstd"), got, want):
        assert_close(g, r, "reduce" if name != "rstd" else "large", f"layer_norm_last {name}")


def _layer_norm_backward(backend, g, a, w, mean, rstd, rows, size):
    """grad_a, grad_weight and grad_bias of ``layer_norm_backward_last`` on ``backend``."""
    dtype = a.dtype.name
    outs = [backend.Array(n, dtype) for n in (rows * size, size, size)]
    backend.layer_norm_backward_last(*(put(backend, x) for x in (g, a, w, mean, rstd)), *outs,
                                     size)
    return [get(backend, buf) for buf in outs]


@pytest.mark.parametrize("shape", [(1, 2), (4, 7), (3, 1000), (70, 33), (130, 16)], ids=str)
def test_layer_norm_backward_last(lamina_backend, lamina_reference, lamina_float, shape):
    # Against the float64 formula: dx from the row means of g * w and g * w * xhat,
    # the weight and bias gradients summed over rows (70 and 130 rows: several blocks).
    _need(lamina_backend, "layer_norm_backward_last")
    rows, size = shape
    a = sample(lamina_float, shape, 7, 99, 101)
    w, g = sample(lamina_float, size, 8), sample(lamina_float, shape, 9)
    _, mean, rstd = _layer_norm(lamina_reference, a, w, w, rows, size, 1e-5)
    got = _layer_norm_backward(lamina_backend, g, a, w, mean, rstd, rows, size)
    xhat = (a.astype(np.float64).reshape(rows, size) - mean[:, None]) * rstd[:, None]
    gw = g.astype(np.float64).reshape(rows, size) * w
    dx = (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True)) \
        * rstd[:, None]
    want = [dx.reshape(-1), (g.reshape(rows, size) * xhat).sum(0), g.reshape(rows, size).sum(0)]
    for name, have, ref in zip(("grad_a", "grad_weight", "grad_bias"), got, want):
        assert_close(have, ref.astype(lamina_float), "reduce",
                     f"layer_norm_backward_last {name}")


def test_ewise_erf(lamina_backend, lamina_float):
    _need(lamina_backend, "ewise_erf")
    a = np.concatenate([sample(lamina_float, 1001, 7, -6, 6),
                        np.array([0, -0.0, 1e-30, 30, -30, np.inf, -np.inf, np.nan], lamina_float)])
    got = call(lamina_backend, "ewise_erf", [a, OUT], (a.size, lamina_float))
    assert_close(got, np.vectorize(math.erf)(a).astype(lamina_float), "ewise", "ewise_erf")


@pytest.mark.parametrize("layout", [(1, 5, 1), (3, 4, 5), (2, 0, 3), (0, 3, 2),
                                    (7, 1, 9), (3, 1001, 333)], ids=str)
def test_reduce_sum_axis(lamina_backend, lamina_reference, lamina_float, layout):
    _need(lamina_backend, "reduce_sum_axis")
    outer, size, inner = layout
    a = sample(lamina_float, outer * size * inner, 3, 0, 1)
    compare(lamina_backend, lamina_reference, "reduce_sum_axis",
            [a, OUT, outer, size, inner], (outer * inner, lamina_float), kind="reduce")


# (n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw)
CONV = [(1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1), (2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 1, 1),
        (1, 2, 9, 9, 3, 3, 2, 2, 2, 2, 2, 2), (3, 4, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1),
        (8, 16, 28, 28, 5, 5, 1, 1, 2, 2, 1, 1)]


def _conv_sizes(n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw):
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return n * c * h * w, n * oh * ow * c * kh * kw


@pytest.mark.parametrize("conv", CONV, ids=str)
def test_im2col(lamina_backend, lamina_reference, lamina_float, conv):
    _need(lamina_backend, "im2col")
    image, cols = _conv_sizes(*conv)
    a = sample(lamina_float, image, 4)
    compare(lamina_backend, lamina_reference, "im2col", [a, OUT, *conv],
            (cols, lamina_float), kind="exact")


@pytest.mark.parametrize("conv", CONV, ids=str)
def test_col2im(lamina_backend, lamina_reference, lamina_float, conv):
    _need(lamina_backend, "col2im")
    image, cols = _conv_sizes(*conv)
    a = sample(lamina_float, cols, 5)
    garbage = np.full(image, 99, lamina_float)  # col2im overwrites its output
    compare(lamina_backend, lamina_reference, "col2im", [a, OUT, *conv], garbage,
            kind="reduce")


@pytest.mark.parametrize("kernel", ["im2col", "col2im"])
def test_conv_kernel_that_does_not_fit_raises_value_error(lamina_backend, kernel):
    _need(lamina_backend, kernel)
    with pytest.raises(ValueError):  # a 5x5 kernel on a 3x3 image without padding
        call(lamina_backend, kernel, [np.zeros(9, np.float32), OUT,
                                      1, 1, 3, 3, 5, 5, 1, 1, 0, 0, 1, 1], (25, "float32"))


def test_device_count(lamina_backend):
    _need(lamina_backend, "device_count")
    count = lamina_backend.device_count()
    assert isinstance(count, int) and count >= 1


def test_synchronize(lamina_backend, lamina_float):
    _need(lamina_backend, "synchronize")
    buf = lamina_backend.Array(1000, lamina_float)
    lamina_backend.fill(buf, 2)
    assert lamina_backend.synchronize() is None


# name -> (m, n, p, a view maker, b view maker); a view maker turns a base array
# into an (m, n) numpy view whose layout the kernel receives as offset/strides.
def _t(rows, cols):
    return lambda base: base[:rows * cols].reshape(cols, rows).T


def _c(rows, cols):
    return lambda base: base[:rows * cols].reshape(rows, cols)


STRIDED = {
    "a transposed": (7, 5, 3, _t(7, 5), _c(5, 3)),
    "b transposed": (33, 17, 130, _c(33, 17), _t(17, 130)),
    "both transposed": (130, 33, 7, _t(130, 33), _t(33, 7)),
    "sliced with steps": (4, 6, 5, lambda base: base[3:3 + 8 * 12].reshape(8, 12)[::2, 1::2],
                          lambda base: base[:30].reshape(6, 5)),
    "broadcast b": (5, 9, 4, _c(5, 9), lambda base: np.broadcast_to(base[2:6], (9, 4))),
    "small": (2, 3, 2, _t(2, 3), _t(3, 2)),
    "one row": (1, 40, 20, _c(1, 40), _t(40, 20)),
    "empty inner": (3, 0, 4, lambda base: base[:0].reshape(3, 0),
                    lambda base: base[:0].reshape(0, 4)),
}


@pytest.mark.parametrize("case", sorted(STRIDED))
def test_matmul_strided(lamina_backend, lamina_reference, lamina_float, case):
    _need(lamina_backend, "matmul_strided")
    m, n, p, make_a, make_b = STRIDED[case]
    base_a, base_b = sample(lamina_float, 5000, 8, -1, 1), sample(lamina_float, 5000, 9, -1, 1)
    va, vb = make_a(base_a), make_b(base_b)
    layout = []
    for base, view in ((base_a, va), (base_b, vb)):
        shape, strides, offset = layout_of(base, view) if view.size else ((0, 0), (0, 0), 0)
        layout += [offset, strides[0], strides[1]]
    args = [base_a, base_b, OUT, m, n, p, *layout]
    got = compare(lamina_backend, lamina_reference, "matmul_strided", args,
                  (m * p, lamina_float), kind="matmul")
    assert_close(got.reshape(m, p), (va @ vb).astype(lamina_float), "matmul", case)


# STRIDED, and products of the tiled path: two k blocks and an edge tile, rows past the
# few-row paths, a single column
BIAS = {**STRIDED, "k blocks and edges": (130, 300, 70, _c(130, 300), _t(300, 70)),
        "many rows": (200, 64, 33, _t(200, 64), _c(64, 33)),
        "one column": (90, 20, 1, _c(90, 20), _c(20, 1))}


@pytest.mark.parametrize("case", sorted(BIAS))
def test_matmul_bias(lamina_backend, lamina_reference, lamina_float, case):
    # A @ B + bias, the bias (p,) on every row, against the float64 product
    _need(lamina_backend, "matmul_bias")
    m, n, p, make_a, make_b = BIAS[case]
    base_a, base_b = sample(lamina_float, 40000, 8, -1, 1), sample(lamina_float, 40000, 9, -1, 1)
    bias = sample(lamina_float, p, 10, -2, 2)
    va, vb = make_a(base_a), make_b(base_b)
    layout = []
    for base, view in ((base_a, va), (base_b, vb)):
        shape, strides, offset = layout_of(base, view) if view.size else ((0, 0), (0, 0), 0)
        layout += [offset, strides[0], strides[1]]
    args = [base_a, base_b, bias, OUT, m, n, p, *layout]
    got = compare(lamina_backend, lamina_reference, "matmul_bias", args, (m * p, lamina_float),
                  kind="matmul")
    want = va.astype(np.float64) @ vb.astype(np.float64) + bias
    assert_close(got.reshape(m, p), want.astype(lamina_float), "matmul", case)


def test_matmul_bias_rejects_a_short_bias(lamina_backend):
    _need(lamina_backend, "matmul_bias")
    a, b, bias = sample("float32", 30, 1), sample("float32", 15, 2), sample("float32", 2, 3)
    with pytest.raises(ValueError, match="matmul_bias: bias has 2 elements"):
        call(lamina_backend, "matmul_bias", [a, b, bias, OUT, 6, 5, 3, 0, 5, 1, 0, 3, 1],
             (18, "float32"))


@pytest.mark.parametrize("layout", [(0, 5, 1, 0, 3, 1), (0, 1, 7, 0, 1, 50), (-1, 5, 1, 0, 3, 1),
                                    (0, -5, 1, 0, 3, 1)], ids=str)
def test_matmul_strided_views_outside_the_buffer_raise(lamina_backend, layout):
    _need(lamina_backend, "matmul_strided")
    a, b = sample("float32", 30, 1), sample("float32", 15, 2)  # a: 6x5 fits, 7 rows do not
    with pytest.raises(ValueError, match="matmul_strided"):
        call(lamina_backend, "matmul_strided", [a, b, OUT, 7, 5, 3, *layout], (21, "float32"))


# name -> (batch, m, n, p, a view maker, b view maker): each maker turns a base array
# into a (*batch, m, n) (or (*batch, n, p)) numpy view with non-negative strides.
def _heads(base):  # (2, 3, 5, 4): a (2, 5, 3, 4) projection split into heads
    return base[:120].reshape(2, 5, 3, 4).transpose(0, 2, 1, 3)


def _keys_t(base):  # (2, 3, 4, 6): split into heads and transposed
    return base[:144].reshape(2, 6, 3, 4).transpose(0, 2, 3, 1)


BATCHED_STRIDED = {
    "heads split, k transposed": ((2, 3), 5, 4, 6, _heads, _keys_t),
    "broadcast batch": ((3,), 4, 5, 2, lambda base: base[:60].reshape(3, 4, 5),
                        lambda base: np.broadcast_to(base[:10].reshape(5, 2), (3, 5, 2))),
    "a transposed": ((4,), 7, 3, 2, lambda base: base[:84].reshape(4, 3, 7).transpose(0, 2, 1),
                     lambda base: base[:24].reshape(4, 3, 2)),
    "sliced with offsets": ((3,), 4, 4, 5,
                            lambda base: base[:480].reshape(6, 8, 10)[::2, 1::2, ::3],
                            lambda base: base[7:67].reshape(3, 4, 5)),
    "three batch dims, one broadcast": ((2, 1, 3), 2, 3, 2,
                                        lambda base: base[:36].reshape(2, 1, 3, 2, 3),
                                        lambda base: np.broadcast_to(
                                            base[:18].reshape(1, 1, 3, 3, 2), (2, 1, 3, 3, 2))),
    "many small": ((40,), 3, 2, 3, lambda base: base[:240].reshape(40, 2, 3).transpose(0, 2, 1),
                   lambda base: base[:240].reshape(40, 2, 3)),
    "empty inner": ((2,), 3, 0, 4, lambda base: base[:0].reshape(2, 3, 0),
                    lambda base: base[:0].reshape(2, 0, 4)),
    "empty batch": ((0,), 3, 2, 4, lambda base: base[:0].reshape(0, 3, 2),
                    lambda base: base[:0].reshape(0, 2, 4)),
}


@pytest.mark.parametrize("case", sorted(BATCHED_STRIDED))
def test_matmul_batched_strided(lamina_backend, lamina_reference, lamina_float, case):
    _need(lamina_backend, "matmul_batched_strided")
    batch, m, n, p, make_a, make_b = BATCHED_STRIDED[case]
    base_a, base_b = sample(lamina_float, 5000, 8, -1, 1), sample(lamina_float, 5000, 9, -1, 1)
    va, vb = make_a(base_a), make_b(base_b)
    layout = []
    for base, view in ((base_a, va), (base_b, vb)):
        _, strides, offset = layout_of(base, view)
        layout += [offset, strides]
    count = math.prod(batch)
    args = [base_a, base_b, OUT, batch, m, n, p, *layout]
    got = compare(lamina_backend, lamina_reference, "matmul_batched_strided", args,
                  (count * m * p, lamina_float), kind="matmul")
    assert_close(got.reshape(*batch, m, p), (va @ vb).astype(lamina_float), "matmul", case)


@pytest.mark.parametrize("layout", [
    (0, (20, 5, 1), 0, (6, 1, 1)),     # a's second matrix runs past its buffer
    (0, (15, 5, 1), 0, (6, 1, 1, 0)),  # b has a stride too many
    (0, (15, 5, 1), -1, (6, 1, 1)),    # a negative offset
    (0, (15, -5, 1), 0, (6, 1, 1)),    # a negative stride
], ids=str)
def test_matmul_batched_strided_bad_layouts_raise(lamina_backend, layout):
    _need(lamina_backend, "matmul_batched_strided")
    # a holds two 3x5 matrices, b two 5x1: the layouts (15, 5, 1) and (6, 1, 1) fit
    a, b = sample("float32", 30, 1), sample("float32", 12, 2)
    a_off, a_st, b_off, b_st = layout
    with pytest.raises(ValueError, match="matmul_batched_strided"):
        call(lamina_backend, "matmul_batched_strided",
             [a, b, OUT, (2,), 3, 5, 1, a_off, a_st, b_off, b_st], (6, "float32"))


# (beta1, beta2, eps, weight_decay, decay, step_size, inv_bias2_sqrt): Adam with an L2
# penalty, AdamW's decoupled decay, neither, at steps 1 and 10
ADAM = {
    "adam, l2, step 1": (0.9, 0.999, 1e-8, 0.01, 1.0, 1e-3 / 0.1, 1 / math.sqrt(0.001)),
    "adamw, step 10": (0.9, 0.99, 1e-6, 0.0, 1 - 1e-3 * 0.1, 1e-3 / (1 - 0.9**10),
                       1 / math.sqrt(1 - 0.99**10)),
    "no decay": (0.5, 0.75, 1e-3, 0.0, 1.0, 0.1, 2.0),
}


@pytest.mark.parametrize("size", [1, 17, 1000, LARGE], ids=str)
@pytest.mark.parametrize("case", sorted(ADAM))
def test_adam_step(lamina_backend, lamina_reference, lamina_float, case, size):
    _need(lamina_backend, "adam_step")
    p, g, m = (sample(lamina_float, size, seed, -1, 1) for seed in (1, 2, 3))
    v = sample(lamina_float, size, 4, 0, 1)
    results = []
    for backend in (lamina_reference, lamina_backend):
        bufs = [put(backend, x) for x in (p, g, m, v)]
        outs = [backend.Array(size, lamina_float) for _ in range(3)]
        backend.adam_step(*bufs, *outs, *ADAM[case])
        results.append([get(backend, o) for o in outs])
    for name, want, got in zip(("param", "exp_avg", "exp_avg_sq"), *results, strict=True):
        assert_close(got, want, "large" if size == LARGE else "reduce", f"adam_step {name}")


def test_adam_step_in_place(lamina_backend, lamina_reference, lamina_float):
    # the outputs may be the inputs: the update of a parameter and its state in place
    _need(lamina_backend, "adam_step")
    p, g, m = (sample(lamina_float, 300, seed, -1, 1) for seed in (5, 6, 7))
    v = sample(lamina_float, 300, 8, 0, 1)
    args = ADAM["adamw, step 10"]
    ref = [put(lamina_reference, x) for x in (p, g, m, v)]
    want = [lamina_reference.Array(300, lamina_float) for _ in range(3)]
    lamina_reference.adam_step(*ref, *want, *args)
    bufs = [put(lamina_backend, x) for x in (p, g, m, v)]
    lamina_backend.adam_step(*bufs, bufs[0], bufs[2], bufs[3], *args)
    for name, w, b in zip(("param", "exp_avg", "exp_avg_sq"), want, (bufs[0], bufs[2], bufs[3]),
                          strict=True):
        assert_close(get(lamina_backend, b), get(lamina_reference, w), "reduce",
                     f"adam_step in place: {name}")


def test_adam_step_bad_buffers_raise(lamina_backend):
    _need(lamina_backend, "adam_step")
    good = [put(lamina_backend, sample("float32", 10, s)) for s in range(7)]
    with pytest.raises(ValueError, match="adam_step"):
        lamina_backend.adam_step(*good[:3], put(lamina_backend, sample("float32", 9, 1)),
                                 *good[4:], *ADAM["no decay"])
    ints = put(lamina_backend, np.arange(10, dtype=np.int64))
    with pytest.raises(TypeError, match="adam_step"):
        lamina_backend.adam_step(ints, *good[1:], *ADAM["no decay"])


# (base size of a, view of a, base size of b, view of b): numpy makes the views, so
# the layouts (broadcast, permuted, negative, offset) and the expected values are its own.
EWISE_STRIDED = {
    "channel broadcast": (4, lambda a: np.broadcast_to(a[:, None, None], (3, 4, 5, 6)),
                          360, lambda b: b.reshape(3, 4, 5, 6)),
    "permuted": (60, lambda a: a.reshape(4, 3, 5).transpose(1, 0, 2),
                 60, lambda b: b.reshape(3, 4, 5)),
    "outer product": (5, lambda a: np.broadcast_to(a[:, None], (5, 7)),
                      7, lambda b: np.broadcast_to(b, (5, 7))),
    "negative and offset": (60, lambda a: a.reshape(6, 10)[::-1, ::-2],
                            60, lambda b: b.reshape(6, 10)[:, 2:7]),
    "scalar": (3, lambda a: a[1:2].reshape(()), 3, lambda b: b[2:3].reshape(())),
    "zero-size": (6, lambda a: a.reshape(2, 3)[:, :0], 6, lambda b: b.reshape(2, 3)[:, :0]),
    "large": (64, lambda a: np.broadcast_to(a, (LARGE // 64, 64)),
              LARGE // 64 * 64 + 64, lambda b: b[64:].reshape(LARGE // 64, 64)),
    "rank 9": (512, lambda a: a.reshape((2,) * 9).transpose(8, 0, 7, 1, 6, 2, 5, 3, 4),
               512, lambda b: b.reshape((2,) * 9)),
}


def _strided_case(op, dtype, case):
    """Bases, views and the kernel's arguments for one EWISE_STRIDED case."""
    size_a, view_a, size_b, view_b = EWISE_STRIDED[case]
    lo, hi = (0.5, 2) if op == "power" else (-3, 4) if op in _COMPARE or dtype == "int64" \
        else (-3, 3)
    base_a = sample(dtype, size_a, 11, lo, hi)
    base_b = sample(dtype, size_b, 12, lo, hi)
    if op in ("div", "power"):
        base_b = sample(dtype, size_b, 12, 0.5, 2) * (-1 if op == "div" else 1)
        base_b = base_b.astype(dtype)
    va, vb = view_a(base_a), view_b(base_b)
    shape, sa, oa = layout_of(base_a, va)
    _, sb, ob = layout_of(base_b, vb)
    return base_a, base_b, va, vb, [base_a, base_b, OUT, shape, sa, oa, sb, ob]


_COMPARE = ops(arity=2, result="bool")


@pytest.mark.parametrize("case", sorted(EWISE_STRIDED))
@pytest.mark.parametrize("op", BINARY_OPS)
def test_ewise_strided(lamina_backend, lamina_reference, lamina_float, op, case):
    _need(lamina_backend, f"ewise_strided_{op}")
    base_a, base_b, va, vb, args = _strided_case(op, lamina_float, case)
    got = compare(lamina_backend, lamina_reference, f"ewise_strided_{op}", args,
                  (va.size, lamina_float))
    with np.errstate(all="ignore"):
        want = OPS[op].reference(va, vb).astype(lamina_float).reshape(-1)
    assert_close(got, want, "ewise", f"ewise_strided_{op} {case}")


@pytest.mark.parametrize("op", _COMPARE)
def test_ewise_strided_compares_int64(lamina_backend, op):
    _need(lamina_backend, f"ewise_strided_{op}")
    _, _, va, vb, args = _strided_case(op, "int64", "channel broadcast")
    got = call(lamina_backend, f"ewise_strided_{op}", args, (va.size, "int64"))
    np.testing.assert_array_equal(got, OPS[op].reference(va, vb).astype(np.int64).reshape(-1))


def test_ewise_strided_kernels_are_one_per_op(lamina_backend):
    """Interface v2: no string-keyed ewise_strided; a kernel per op, its dtypes declared."""
    assert not hasattr(lamina_backend, "ewise_strided")
    assert all(name.removeprefix("ewise_strided_") in STRIDED_OPS
               for name in dir(lamina_backend) if name.startswith("ewise_strided_"))


@pytest.mark.parametrize("bad", ["a past the end", "b before the start", "rank mismatch",
                                 "small out"])
def test_ewise_strided_rejects_bad_layouts(lamina_backend, bad):
    _need(lamina_backend, "ewise_strided_add")
    a, b = sample("float32", 12, 1), sample("float32", 12, 2)
    args: list = [a, b, OUT, (3, 4), (4, 1), 0, (4, 1), 0]
    out = (12, "float32")
    if bad == "a past the end":
        args[5] = 1
    elif bad == "b before the start":
        args[6], args[7] = (-4, 1), 3
    elif bad == "rank mismatch":
        args[4] = (4, 1, 1)
    else:
        out = (11, "float32")
    with pytest.raises(ValueError, match="ewise_strided_add"):
        call(lamina_backend, "ewise_strided_add", args, out)


@pytest.mark.parametrize("size", [0, 1, 7, LARGE], ids=str)
def test_empty_allocates_like_array(lamina_backend, size):
    _need(lamina_backend, "empty")
    for index, dtype in enumerate(lamina_backend.dtypes):
        buf = lamina_backend.empty(size, index)
        assert (buf.size, buf.dtype) == (size, dtype)
        if size and dtype not in NARROW_DTYPES:  # fill takes them as float32 (test_narrow)
            lamina_backend.fill(buf, 1)
            np.testing.assert_array_equal(get(lamina_backend, buf), np.ones(size, dtype))


def test_empty_rejects_bad_arguments(lamina_backend):
    _need(lamina_backend, "empty")
    with pytest.raises(ValueError):
        lamina_backend.empty(-1, 0)
    for index in (-1, len(lamina_backend.dtypes)):
        with pytest.raises(IndexError, match="empty"):
            lamina_backend.empty(4, index)


# (outer, axis_size, inner, n) with n distinct indices: rows, single elements,
# nothing written, no rows, large.
COPY_LAYOUTS = [(1, 10, 4, 6), (3, 5, 1, 5), (2, 7, 3, 0), (0, 4, 2, 3), (1, 50_000, 21, 1003)]


@pytest.mark.parametrize("layout", COPY_LAYOUTS, ids=str)
def test_index_copy(lamina_backend, lamina_reference, lamina_float, layout):
    _need(lamina_backend, "index_copy")
    outer, axis_size, inner, n = layout
    a = sample(lamina_float, outer * n * inner, 2)
    idx = np.random.default_rng(4).permutation(axis_size)[:n].astype(np.int64)
    initial = sample(lamina_float, outer * axis_size * inner, 3)  # kept where not written
    got = compare(lamina_backend, lamina_reference, "index_copy",
                  [a, idx, OUT, outer, axis_size, inner], initial)
    kept = np.ones(axis_size, bool)
    kept[idx] = False
    np.testing.assert_array_equal(got.reshape(outer, axis_size, inner)[:, kept],
                                  initial.reshape(outer, axis_size, inner)[:, kept])


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_index_copy_other_dtypes(lamina_backend, dtype):
    _need(lamina_backend, "index_copy")
    if dtype not in lamina_backend.dtypes:
        pytest.skip(f"backend does not list {dtype}")
    src = np.array([7, 0, 5], dtype)
    got = call(lamina_backend, "index_copy", [src, np.array([4, 0, 2], np.int64), OUT, 1, 5, 1],
               np.ones(5, dtype))
    np.testing.assert_array_equal(got, np.array([0, 1, 5, 1, 7], dtype))


def test_index_copy_rejects_bad_arguments(lamina_backend):
    _need(lamina_backend, "index_copy")
    ones = np.ones(3, np.float32)
    with pytest.raises(IndexError, match="index_copy"):
        call(lamina_backend, "index_copy", [ones, np.array([0, 5, 1], np.int64), OUT, 1, 5, 1],
             (5, "float32"))
    with pytest.raises(TypeError, match="index_copy"):
        call(lamina_backend, "index_copy", [ones, np.array([0, 1, 2], np.int64), OUT, 1, 5, 1],
             (5, "float64"))
    with pytest.raises(ValueError, match="index_copy"):
        call(lamina_backend, "index_copy", [ones, np.array([0, 1, 2], np.int64), OUT, 2, 5, 1],
             (10, "float32"))
