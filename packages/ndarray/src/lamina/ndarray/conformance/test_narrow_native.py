"""Kernels a backend names for a 16-bit float in ``kernel_dtypes`` (interface v2.2).

Such a kernel must give what the float32 fallback gives (``_narrow.py``): the
backend's own float32 kernel on widened operands, its result rounded once to
nearest, ties to even. Elementwise kernels, reductions, row kernels (softmax,
logsumexp, layer norm) and ``fill`` must match it bit for bit. A matmul may
sum in another order than the float32 kernel (a 16-bit one always packs its
operands), so it is held to the float64 product of the widened operands:
within the dtype's rounding plus float32 summation error.
Kernels the backend does not name are skipped (the fallback runs them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lamina.ndarray._interface import (
    COMPARISON_OPS,
    REVERSED_SCALAR_OPS,
    SCALAR_OPS,
    STRIDED_OPS,
    UNARY_OPS,
)
from lamina.ndarray.conformance.test_narrow import _bits, _read, _to_narrow

BINARY = [op for op in STRIDED_OPS if op not in ("bitwise_and", "bitwise_or", "bitwise_xor")]
SIZES = (1, 17, 1031)  # below, at and across the kernels' block and vector widths


def _native(backend: Any, kernel: str, dtype: str) -> None:
    if dtype not in backend.kernel_dtypes.get(kernel, ()):
        pytest.skip(f"{kernel} does not name {dtype}: the float32 fallback runs it")


def _values(size: int, seed: int, positive: bool = False) -> np.ndarray:
    """Normal values with a spread of magnitudes, ties and the special ones mixed in."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(size) * 3.0).astype(np.float32)
    x[rng.random(size) < 0.1] = np.float32(0.0)
    special = np.array([1.0, -1.0, 0.5, -0.0, np.inf, -np.inf, np.nan, 65504.0, 1e-6], np.float32)
    x[: min(size, special.size)] = special[: min(size, special.size)]
    return np.abs(x) if positive else x


def _wide(backend: Any, buf: Any) -> Any:
    wide = backend.Array(buf.size, "float32")
    backend.ewise_cast(buf, wide)
    return wide


def _rounded(backend: Any, wide: Any, dtype: str) -> np.ndarray:
    """A float32 result rounded to ``dtype`` and read back."""
    out = backend.Array(wide.size, dtype)
    backend.ewise_cast(wide, out)
    return _read(backend, out)


def _check(backend: Any, kernel: str, dtype: str, inputs: list[Any], size: int,
           out_dtype: str | None = None, layout: tuple[Any, ...] = (),
           outputs: tuple[int, ...] = ()) -> None:
    """kernel(*inputs, *outs, *layout) on the narrow buffers against the float32 kernel
    on their widened copies, rounded: bit for bit (a bool out as it is). outs are one
    of ``size`` elements and ``out_dtype`` (default ``dtype``), or one per entry of
    ``outputs`` (sizes, in ``dtype``)."""
    out_dtype = out_dtype or dtype
    sizes = outputs or (size,)
    outs = [backend.Array(n, out_dtype) for n in sizes]
    getattr(backend, kernel)(*inputs, *outs, *layout)
    wide_in = [_wide(backend, x) if getattr(x, "dtype", None) == dtype else x for x in inputs]
    wide_outs = [backend.Array(n, "bool" if out_dtype == "bool" else "float32") for n in sizes]
    getattr(backend, kernel)(*wide_in, *wide_outs, *layout)
    for i, (out, wide_out) in enumerate(zip(outs, wide_outs)):
        if out_dtype == "bool":
            got = backend.to_numpy(out, (out.size,), (1,), 0)
            want = backend.to_numpy(wide_out, (out.size,), (1,), 0)
            np.testing.assert_array_equal(got, want, err_msg=kernel)
            continue
        got, want = _read(backend, out), _rounded(backend, wide_out, dtype)
        np.testing.assert_array_equal(_bits(got), _bits(want),
                                      err_msg=f"{kernel} ({dtype}), output {i}")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", BINARY)
def test_binary(lamina_backend, lamina_narrow, op, size):
    _native(lamina_backend, f"ewise_{op}", lamina_narrow)
    a = _to_narrow(lamina_backend, _values(size, 1), lamina_narrow)
    b = _to_narrow(lamina_backend, _values(size, 2), lamina_narrow)
    _check(lamina_backend, f"ewise_{op}", lamina_narrow, [a, b], size)
    if op in COMPARISON_OPS:
        _check(lamina_backend, f"ewise_{op}", lamina_narrow, [a, b], size, out_dtype="bool")


@pytest.mark.parametrize("value", [0.1, -3.0, 2.0])
@pytest.mark.parametrize("op", list(SCALAR_OPS) + list(REVERSED_SCALAR_OPS))
def test_scalar(lamina_backend, lamina_narrow, op, value):
    _native(lamina_backend, f"scalar_{op}", lamina_narrow)
    a = _to_narrow(lamina_backend, _values(1031, 3), lamina_narrow)
    # the value is not rounded to the dtype first: 0.1 stays float32's 0.1
    _check(lamina_backend, f"scalar_{op}", lamina_narrow, [a, value], 1031)
    if op in COMPARISON_OPS:
        _check(lamina_backend, f"scalar_{op}", lamina_narrow, [a, value], 1031, out_dtype="bool")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary(lamina_backend, lamina_narrow, op, size):
    _native(lamina_backend, f"ewise_{op}", lamina_narrow)
    a = _to_narrow(lamina_backend, _values(size, 4, positive=op in ("log", "sqrt")), lamina_narrow)
    _check(lamina_backend, f"ewise_{op}", lamina_narrow, [a], size)


# (shape, a's strides, b's strides): b broadcast along rows and along columns,
# a transposed, both strided.
VIEWS = [((5, 7), (7, 1), (0, 1)), ((5, 7), (7, 1), (1, 0)), ((6, 4), (1, 6), (4, 1)),
         ((3, 40), (80, 2), (0, 3))]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: f"{v[0]}-{v[1]}-{v[2]}")
@pytest.mark.parametrize("op", ["add", "mul", "div", "maximum", "lt"])
def test_strided(lamina_backend, lamina_narrow, op, view):
    _native(lamina_backend, f"ewise_strided_{op}", lamina_narrow)
    shape, sa, sb = view
    reach = lambda strides: sum((n - 1) * s for n, s in zip(shape, strides)) + 1  # noqa: E731
    a = _to_narrow(lamina_backend, _values(reach(sa) + 2, 5), lamina_narrow)
    b = _to_narrow(lamina_backend, _values(reach(sb) + 1, 6), lamina_narrow)
    size = int(np.prod(shape))
    out_dtype = "bool" if op in COMPARISON_OPS else None
    _check(lamina_backend, f"ewise_strided_{op}", lamina_narrow, [a, b], size, out_dtype,
           (shape, sa, 2, sb, 1))


# (rows, size): one element, short rows, a row past the kernels' blocks
ROWS = [(1, 1), (7, 5), (3, 300), (2, 1031)]


@pytest.mark.parametrize("rows", ROWS, ids=lambda r: f"{r[0]}x{r[1]}")
@pytest.mark.parametrize("kernel", ["reduce_sum", "reduce_max", "reduce_min", "logsumexp_last"])
def test_row_reductions(lamina_backend, lamina_narrow, kernel, rows):
    _native(lamina_backend, kernel, lamina_narrow)
    n, size = rows
    a = _to_narrow(lamina_backend, _values(n * size, 9), lamina_narrow)
    _check(lamina_backend, kernel, lamina_narrow, [a], n, layout=(size,))


@pytest.mark.parametrize("shape", [(1, 5, 1), (3, 4, 7), (2, 100, 65)], ids=str)
def test_reduce_sum_axis(lamina_backend, lamina_narrow, shape):
    _native(lamina_backend, "reduce_sum_axis", lamina_narrow)
    outer, size, inner = shape
    a = _to_narrow(lamina_backend, _values(outer * size * inner, 10), lamina_narrow)
    _check(lamina_backend, "reduce_sum_axis", lamina_narrow, [a], outer * inner, layout=shape)


@pytest.mark.parametrize("rows", ROWS, ids=lambda r: f"{r[0]}x{r[1]}")
def test_softmax(lamina_backend, lamina_narrow, rows):
    _native(lamina_backend, "softmax_last", lamina_narrow)
    n, size = rows
    a = _to_narrow(lamina_backend, np.clip(_values(n * size, 11), -60, 60), lamina_narrow)
    _check(lamina_backend, "softmax_last", lamina_narrow, [a], n * size, layout=(size,))


@pytest.mark.parametrize("rows", ROWS, ids=lambda r: f"{r[0]}x{r[1]}")
def test_layer_norm(lamina_backend, lamina_narrow, rows):
    _native(lamina_backend, "layer_norm_last", lamina_narrow)
    n, size = rows
    finite = lambda seed, count: np.nan_to_num(_values(count, seed), posinf=7.0, neginf=-7.0)  # noqa: E731
    a, weight, bias = (_to_narrow(lamina_backend, finite(seed, count), lamina_narrow)
                       for seed, count in ((12, n * size), (13, size), (14, size)))
    _check(lamina_backend, "layer_norm_last", lamina_narrow, [a, weight, bias], 0,
           layout=(size, 1e-5), outputs=(n * size, n, n))


@pytest.mark.parametrize("tanh", [False, True], ids=["erf", "tanh"])
@pytest.mark.parametrize("size", SIZES + (2500,))  # and across a widened block of 1024
def test_gelu(lamina_backend, lamina_narrow, size, tanh):
    _native(lamina_backend, "gelu", lamina_narrow)
    a = _to_narrow(lamina_backend, _values(size, 15), lamina_narrow)
    _check(lamina_backend, "gelu", lamina_narrow, [a], size, layout=(tanh,))


@pytest.mark.parametrize("tanh", [False, True], ids=["erf", "tanh"])
@pytest.mark.parametrize("size", SIZES + (2500,))
def test_gelu_backward(lamina_backend, lamina_narrow, size, tanh):
    _native(lamina_backend, "gelu_backward", lamina_narrow)
    a = _to_narrow(lamina_backend, _values(size, 16), lamina_narrow)
    g = _to_narrow(lamina_backend, _values(size, 17), lamina_narrow)
    _check(lamina_backend, "gelu_backward", lamina_narrow, [a, g], size, layout=(tanh,))


@pytest.mark.parametrize("value", [0.1, -2.5, 1e6, float("inf")])
def test_fill(lamina_backend, lamina_narrow, value):
    _native(lamina_backend, "fill", lamina_narrow)
    out = lamina_backend.Array(33, lamina_narrow)
    lamina_backend.fill(out, value)
    wide = lamina_backend.Array(33, "float32")
    lamina_backend.fill(wide, value)
    np.testing.assert_array_equal(_bits(_read(lamina_backend, out)),
                                  _bits(_rounded(lamina_backend, wide, lamina_narrow)))


def _exact(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float64 product of widened operands and the bound on float32's summation error."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64) * (a.shape[-1] + 2) * 2.0**-24


def _check_product(backend: Any, dtype: str, got: Any, want: np.ndarray, bound: np.ndarray,
                   kernel: str) -> None:
    eps = 2.0**-8 if dtype == "bfloat16" else 2.0**-11  # half an ulp, relative
    values = _read(backend, got).astype(np.float64).reshape(want.shape)
    np.testing.assert_array_less(np.abs(values - want), eps * np.abs(want) + bound + 1e-30,
                                 err_msg=f"{kernel} ({dtype})")


# (m, n, p): tiny, the small-M and two-panel shapes of the float32 paths, tile edges,
# k long enough for several k blocks
SHAPES = [(1, 1, 1), (3, 5, 2), (7, 33, 17), (16, 64, 40), (40, 70, 33), (97, 300, 65),
          (13, 600, 130)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul(lamina_backend, lamina_narrow, shape):
    _native(lamina_backend, "matmul", lamina_narrow)
    m, n, p = shape
    rng = np.random.default_rng(m * 1000 + p)
    a = _to_narrow(
        lamina_backend, rng.standard_normal(m * n).astype(np.float32), lamina_narrow)
    b = _to_narrow(
        lamina_backend, rng.standard_normal(n * p).astype(np.float32), lamina_narrow)
    out = lamina_backend.Array(m * p, lamina_narrow)
    lamina_backend.matmul(a, b, out, m, n, p)
    want, bound = _exact(_read(lamina_backend, a).reshape(m, n),
                         _read(lamina_backend, b).reshape(n, p))
    _check_product(lamina_backend, lamina_narrow, out, want, bound, "matmul")


@pytest.mark.parametrize("shape", SHAPES[1:], ids=lambda s: "x".join(map(str, s)))
def test_matmul_strided_transposed(lamina_backend, lamina_narrow, shape):
    _native(lamina_backend, "matmul_strided", lamina_narrow)
    m, n, p = shape
    rng = np.random.default_rng(m + p)
    at = rng.standard_normal((n, m)).astype(np.float32)  # a is at's transpose
    bt = rng.standard_normal((p, n)).astype(np.float32)
    a = _to_narrow(lamina_backend, at, lamina_narrow)
    b = _to_narrow(lamina_backend, bt, lamina_narrow)
    out = lamina_backend.Array(m * p, lamina_narrow)
    lamina_backend.matmul_strided(a, b, out, m, n, p, 0, 1, m, 0, 1, n)
    wa = _read(lamina_backend, a).reshape(n, m).T
    wb = _read(lamina_backend, b).reshape(p, n).T
    want, bound = _exact(wa, wb)
    _check_product(lamina_backend, lamina_narrow, out, want, bound, "matmul_strided")


def test_matmul_batched(lamina_backend, lamina_narrow):
    _native(lamina_backend, "matmul_batched", lamina_narrow)
    batch, m, n, p = 5, 9, 20, 11
    rng = np.random.default_rng(7)
    a = _to_narrow(
        lamina_backend, rng.standard_normal(batch * m * n).astype(np.float32), lamina_narrow)
    b = _to_narrow(
        lamina_backend, rng.standard_normal(batch * n * p).astype(np.float32), lamina_narrow)
    out = lamina_backend.Array(batch * m * p, lamina_narrow)
    lamina_backend.matmul_batched(a, b, out, batch, m, n, p)
    want, bound = _exact(_read(lamina_backend, a).reshape(batch, m, n),
                         _read(lamina_backend, b).reshape(batch, n, p))
    _check_product(lamina_backend, lamina_narrow, out, want, bound, "matmul_batched")


def test_matmul_batched_strided(lamina_backend, lamina_narrow):
    _native(lamina_backend, "matmul_batched_strided", lamina_narrow)
    batch, m, n, p = 4, 6, 10, 7
    rng = np.random.default_rng(8)
    a = _to_narrow(
        lamina_backend, rng.standard_normal(m * n).astype(np.float32), lamina_narrow)
    b = _to_narrow(
        lamina_backend, rng.standard_normal(batch * n * p).astype(np.float32), lamina_narrow)
    out = lamina_backend.Array(batch * m * p, lamina_narrow)
    # a broadcast over the batch (stride 0), b compact
    lamina_backend.matmul_batched_strided(a, b, out, (batch,), m, n, p, 0, (0, n, 1), 0,
                                          (n * p, p, 1))
    wa = np.broadcast_to(_read(lamina_backend, a).reshape(m, n), (batch, m, n))
    want, bound = _exact(wa, _read(lamina_backend, b).reshape(batch, n, p))
    _check_product(lamina_backend, lamina_narrow, out, want, bound, "matmul_batched_strided")


def test_an_empty_product_is_zero(lamina_backend, lamina_narrow):
    _native(lamina_backend, "matmul", lamina_narrow)
    a, b = lamina_backend.Array(0, lamina_narrow), lamina_backend.Array(0, lamina_narrow)
    out = lamina_backend.Array(6, lamina_narrow)
    lamina_backend.matmul(a, b, out, 2, 0, 3)
    np.testing.assert_array_equal(_read(lamina_backend, out), np.zeros(6, np.float32))
