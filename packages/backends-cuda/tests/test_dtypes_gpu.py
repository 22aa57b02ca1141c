"""The dtypes of interface v1.1 and later on a GPU (marker ``cuda``): bool
buffers, int64 arithmetic, comparisons writing bool, floordiv/remainder,
bitwise ops, reduce_prod and cumsum_last, each against the numpy reference
backend (or numpy itself for the kernels the reference may not have yet).

Integer values include ones whose sums and products overflow int64: both
backends wrap. Sizes cross the vector packs and their tails (16 bools, 2
int64s per pack) and each reduction's warp, block and split-row paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, cuda, get, put, ref, run

pytestmark = pytest.mark.cuda

DTYPES = ("float32", "float64", "int64", "bool")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
EXACT = dict(rtol=0, atol=0)
SIZES = (0, 1, 15, 16, 17, 1023, 100_003)
BIG = 2**62 + 12345  # sums and products of these wrap around


def values(dtype: str, n: int, seed: int, low: int = -5, high: int = 6) -> np.ndarray:
    """Small integers in any dtype (bool: 0/1), with some huge int64 ones mixed in."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    v = rng.integers(low, high, n)
    if dtype == "int64" and n > 8:
        v[::7] = rng.integers(-BIG, BIG, v[::7].size)
    return v.astype(dtype)


def exact(kernel: str, args: list, out: tuple[int, str]) -> np.ndarray:
    """The cuda result of ``kernel``, after checking it equals numpy's bit for bit."""
    got, want = run(kernel, args, out)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=f"{kernel} differs from the numpy backend")
    if got.dtype.kind == "f":  # -0.0 == 0.0 above; the sign of zero must match too
        # A NaN's sign bit is the hardware's choice (x86 makes 0/0 negative, an
        # NVIDIA GPU positive) and nothing reads it, so only numbers are compared.
        num = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]),
                                      err_msg=kernel)
    return got


# ---------------------------------------------------------------- buffers
def test_from_numpy_of_page_locked_memory_is_done_on_return() -> None:
    # CUDA copies from page-locked memory asynchronously; from_numpy waits for
    # such a copy, so the caller may overwrite the array once the call returns.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("page-locked host memory comes from a CUDA build of PyTorch here")
    n = 1 << 24
    pinned = torch.arange(n, dtype=torch.float32).pin_memory().numpy()
    want = pinned.copy()
    buf = cuda.Array(n, "float32")
    cuda.from_numpy(pinned, buf)
    pinned[:] = -1
    np.testing.assert_array_equal(cuda.to_numpy(buf, (n,), (1,), 0), want)


@pytest.mark.parametrize("n", SIZES)
def test_bool_buffers(n: int) -> None:
    a = values("bool", n, 1)
    buf = put(cuda, a)
    assert buf.dtype == "bool" and buf.nbytes == n
    got = get(cuda, buf)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, a)
    for value in (True, False, 0, 2, 0.5):
        cuda.fill(buf, value)
        np.testing.assert_array_equal(get(cuda, buf), np.full(n, bool(value)))


VIEWS = [  # (buffer size, shape, strides, offset)
    (24, (2, 3, 4), (12, 4, 1), 0),
    (24, (4, 3, 2), (1, 4, 12), 0),
    (24, (3, 4), (0, 1), 5),
    (24, (2, 3), (-12, -4), 23),
    (100, (3, 3, 3), (30, 10, 3), 1),
    (10, (0, 4), (4, 1), 0),
    (3 * 20_003, (20_003, 3), (1, 20_003), 0),
]


@pytest.mark.parametrize("dtype", ("int64", "bool"))
@pytest.mark.parametrize("view", VIEWS, ids=str)
def test_strided_copies(view: tuple, dtype: str) -> None:
    size, shape, strides, offset = view
    n = int(np.prod(shape))
    base = values(dtype, size, 2)
    exact("compact", [base, "OUT", shape, strides, offset], (n, dtype))
    got = cuda.to_numpy(put(cuda, base), shape, strides, offset)
    np.testing.assert_array_equal(got, ref.to_numpy(put(ref, base), shape, strides, offset))
    if 0 not in strides:
        src = values(dtype, n, 3)
        check("ewise_setitem", [src, "OUT", shape, strides, offset], base, EXACT)
        check("scalar_setitem", [n, 1, "OUT", shape, strides, offset], base, EXACT)


# ---------------------------------------------------------------- elementwise
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_write_bool(op: str, dtype: str, n: int) -> None:
    a, b = values(dtype, n, 4), values(dtype, n, 5)
    if n > 4:
        b[::3] = a[::3]  # ties
    if dtype.startswith("float") and n > 4:
        a[1] = np.nan
    exact(f"ewise_{op}", [a, b, "OUT"], (n, "bool"))
    exact(f"scalar_{op}", [a, True if dtype == "bool" else 1, "OUT"], (n, "bool"))
    exact(f"ewise_{op}", [a, b, "OUT"], (n, dtype))  # v1.0: 1/0 in the operands' dtype


# the arithmetic ops each exact dtype takes (numpy has no bool loop for sub and power)
ARITHMETIC = [(op, "int64") for op in ("add", "sub", "mul", "power", "maximum", "minimum")] + [
    (op, "bool") for op in ("add", "mul", "maximum", "minimum")]


@pytest.mark.parametrize("n", (1, 17, 100_003))
@pytest.mark.parametrize("op,dtype", ARITHMETIC)
def test_exact_arithmetic(op: str, dtype: str, n: int) -> None:
    a, b = values(dtype, n, 6), values(dtype, n, 7)
    if op == "power":
        b = np.abs(b) % 70  # exponents >= 0; large ones wrap
    value = {"power": 3, "sub": -BIG}.get(op, True if dtype == "bool" else BIG)
    exact(f"ewise_{op}", [a, b, "OUT"], (n, dtype))
    exact(f"scalar_{op}", [a, value, "OUT"], (n, dtype))


@pytest.mark.parametrize("op,value", [("rsub", BIG), ("rsub", -3), ("rpower", 3), ("rpower", -2)])
def test_reversed_scalar_int64(op: str, value: int) -> None:
    a = values("int64", 1001, 8)
    if op == "rpower":
        a = np.abs(a) % 70
    exact(f"scalar_{op}", [a, value, "OUT"], (1001, "int64"))


def _divisions(dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = values(dtype, n, 9, -20, 21), values(dtype, n, 10)  # b has zeros
    if dtype == "int64" and n >= 4:
        a[:4], b[:4] = [-2**63, -2**63, 7, -7], [-1, 1, 0, 0]  # overflow, division by zero
    elif dtype != "int64" and n >= 12:
        a[:12] = [7, -7, 0, -0.0, np.inf, -np.inf, np.nan, 5.5, -5.5, 5.5, 1e30, -1e-30]
        b[:12] = [0, 0, 0, 3, 3, 2, 2, np.inf, np.inf, -np.inf, 7, 3]
    return a, b


@pytest.mark.parametrize("n", (1, 17, 1023, 100_003))
@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("op", ("floordiv", "remainder"))
def test_floordiv_remainder(op: str, dtype: str, n: int) -> None:
    a, b = _divisions(dtype, n)
    if dtype != "int64":
        exact(f"ewise_{op}", [a, b, "OUT"], (n, dtype))
        return
    # cuda does not check integer divisors (nor do PyTorch's CUDA kernels): x // 0 and
    # x % 0 give numpy's 0, where the numpy and cpu backends raise ZeroDivisionError.
    out = cuda.Array(n, dtype)
    getattr(cuda, f"ewise_{op}")(put(cuda, a), put(cuda, b), out)
    got = get(cuda, out)
    with np.errstate(all="ignore"):
        want = (np.floor_divide if op == "floordiv" else np.remainder)(a, b)
    np.testing.assert_array_equal(got, want, err_msg=f"ewise_{op} differs from numpy")
    if (b == 0).any():
        with pytest.raises(ZeroDivisionError, match=f"ewise_{op}"):  # the reference refuses
            getattr(ref, f"ewise_{op}")(put(ref, a), put(ref, b), ref.Array(n, dtype))
    if dtype == "int64":  # Python's semantics; numpy's (and so cuda's) x // 0 and x % 0 are 0
        for x, y, z in zip(a[:50].tolist(), b[:50].tolist(), got[:50].tolist()):
            want = 0 if y == 0 else (x // y if op == "floordiv" else x % y)
            assert z == (want + 2**63) % 2**64 - 2**63, (op, x, y, z)


@pytest.mark.parametrize("dtype", ("int64", "bool"))
@pytest.mark.parametrize("op", ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"))
def test_bitwise(op: str, dtype: str) -> None:
    for n in (1, 17, 100_003):
        a, b = values(dtype, n, 11), values(dtype, n, 12)
        args = [a, "OUT"] if op == "bitwise_not" else [a, b, "OUT"]
        exact(f"ewise_{op}", args, (n, dtype))


@pytest.mark.parametrize("op", ("neg", "abs", "sign"))
def test_unary_int64(op: str) -> None:
    a = values("int64", 100_003, 13)
    a[:3] = [-2**63, 2**63 - 1, 0]  # neg and abs of INT64_MIN wrap to itself, as numpy's
    exact(f"ewise_{op}", [a, "OUT"], (a.size, "int64"))


def test_in_place_int64() -> None:
    a = values("int64", 1001, 14)
    buf, other = put(cuda, a), put(cuda, a)
    cuda.ewise_floordiv(buf, other, buf)
    np.testing.assert_array_equal(get(cuda, buf), np.where(a != 0, 1, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_with_a_bool_condition(dtype: str) -> None:
    for n in (0, 17, 100_003):
        cond = values("bool", n, 15)
        exact("ewise_where", [cond, values(dtype, n, 16), values(dtype, n, 17), "OUT"], (n, dtype))


@pytest.mark.parametrize("dst", DTYPES)
@pytest.mark.parametrize("src", DTYPES)
def test_cast(src: str, dst: str) -> None:
    a = values(src, 5003, 18)
    if src.startswith("float"):
        a = a * np.asarray(0.75, src)
        a[:4] = [np.nan, -0.0, 0.25, -1e30]  # NaN and 0.25 are true; 0.0 false
        if dst == "int64":
            a[0] = 0.5  # numpy's NaN -> int64 is undefined behaviour in C
    with np.errstate(invalid="ignore"):  # numpy warns of -1e30 -> int64 (INT64_MIN in both)
        exact("ewise_cast", [a, "OUT"], (a.size, dst))


# ---------------------------------------------------------------- reductions
ROWS_SIZES = [(1, 1), (7, 3), (9, 33), (300, 511), (3, 513), (1, 1_000_003), (2, 300_007),
              (4096, 100), (0, 5)]


@pytest.mark.parametrize("rows,size", ROWS_SIZES)
@pytest.mark.parametrize("op", ("sum", "max", "min", "argmax"))
def test_reduce_int64(op: str, rows: int, size: int) -> None:
    a = values("int64", rows * size, 19)
    exact(f"reduce_{op}", [a, "OUT", size], (rows, "int64"))


@pytest.mark.parametrize("rows,size", ROWS_SIZES)
@pytest.mark.parametrize("op", ("max", "min"))
def test_reduce_bool(op: str, rows: int, size: int) -> None:
    a = values("bool", rows * size, 20)
    a[: size * (rows // 2)] = op == "min"  # some rows all true (min) or all false (max)
    exact(f"reduce_{op}", [a, "OUT", size], (rows, "bool"))


@pytest.mark.parametrize("outer,size,inner", [(3, 7, 2), (2, 1000, 33), (5, 3, 1000)])
def test_reduce_sum_axis_int64(outer: int, size: int, inner: int) -> None:
    a = values("int64", outer * size * inner, 21)
    exact("reduce_sum_axis", [a, "OUT", outer, size, inner], (outer * inner, "int64"))


def _reference(kernel: str, a: np.ndarray, rows: int, size: int) -> np.ndarray:
    """reduce_prod or cumsum_last by numpy on the rows of a."""
    with np.errstate(over="ignore"):
        if kernel == "reduce_prod":
            return np.prod(a.reshape(rows, size), axis=1, dtype=a.dtype)
        return np.cumsum(a.reshape(rows, size), axis=1, dtype=a.dtype).reshape(-1)


def _new_kernel(kernel: str, a: np.ndarray, rows: int, size: int) -> np.ndarray:
    """The cuda result of reduce_prod or cumsum_last, after checking it equals the
    numpy backend's where that backend has the kernel (an ndarray with its v1.1
    additions), and else numpy's."""
    n = rows if kernel == "reduce_prod" else rows * size
    if hasattr(ref, kernel):
        return exact(kernel, [a, "OUT", size], (n, a.dtype.name))
    out = cuda.Array(n, a.dtype.name)
    getattr(cuda, kernel)(put(cuda, a), out, size)
    got = get(cuda, out)
    np.testing.assert_array_equal(got, _reference(kernel, a, rows, size), err_msg=kernel)
    return got


PROD_SHAPES = [(1, 1), (7, 3), (9, 33), (300, 511), (3, 513), (2, 300_007), (4096, 100),
               (0, 5), (4, 0)]


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("rows,size", PROD_SHAPES)
def test_reduce_prod(rows: int, size: int, dtype: str) -> None:
    # float factors +-1 and 2 multiply exactly (long rows reach +-inf in both); int64
    # factors 3 wrap around without ever reaching 0
    factors = [-1, 1, 1, 1, 3 if dtype == "int64" else 2]
    a = np.random.default_rng(22).choice(factors, rows * size).astype(dtype)
    _new_kernel("reduce_prod", a, rows, size)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_reduce_prod_rounds_like_a_product(dtype: str) -> None:
    a = np.random.default_rng(23).uniform(0.5, 1.5, 64 * 300).astype(dtype)
    out = cuda.Array(64, dtype)
    cuda.reduce_prod(put(cuda, a), out, 300)
    np.testing.assert_allclose(get(cuda, out), np.prod(a.reshape(64, 300), axis=1),
                               **{"float32": dict(rtol=1e-4), "float64": dict(rtol=1e-12)}[dtype])


CUMSUM_SHAPES = [(1, 1), (3, 7), (5, 128), (2, 129), (7, 513), (1, 100_003), (3, 40_000),
                 (4096, 100), (0, 5), (0, 0)]


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("rows,size", CUMSUM_SHAPES)
def test_cumsum_last(rows: int, size: int, dtype: str) -> None:
    # small integers: every float running sum is exact, so any order of adding matches
    _new_kernel("cumsum_last", values(dtype, rows * size, 24), rows, size)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_cumsum_last_of_fractions(dtype: str) -> None:
    a = np.random.default_rng(25).uniform(-1, 1, 3 * 50_000).astype(dtype)
    out = cuda.Array(a.size, dtype)
    cuda.cumsum_last(put(cuda, a), out, 50_000)
    want = np.cumsum(a.astype(np.float64).reshape(3, -1), axis=1).reshape(-1)
    np.testing.assert_allclose(get(cuda, out), want, rtol=0,
                               atol={"float32": 5e-3, "float64": 1e-10}[dtype])


def test_new_kernel_errors() -> None:
    f32, i64 = cuda.Array(6, "float32"), cuda.Array(6, "int64")
    for kernel in ("reduce_prod", "cumsum_last"):
        with pytest.raises(TypeError, match=f"{kernel}: dtypes differ"):
            getattr(cuda, kernel)(f32, i64, 3)
        with pytest.raises(TypeError, match=f"{kernel}: dtype bool is not supported"):
            getattr(cuda, kernel)(cuda.Array(6, "bool"), cuda.Array(6, "bool"), 3)
    with pytest.raises(ValueError, match="reduce_prod: input has 6 elements, expected 3x3"):
        cuda.reduce_prod(f32, cuda.Array(3, "float32"), 3)
    with pytest.raises(ValueError, match="cumsum_last: out has 6 elements, not a multiple"):
        cuda.cumsum_last(f32, cuda.Array(6, "float32"), 4)
    with pytest.raises(ValueError, match="cumsum_last: input has 6 elements, out has 8"):
        cuda.cumsum_last(f32, cuda.Array(8, "float32"), 4)
    with pytest.raises(ValueError, match="cumsum_last: size must be >= 0"):
        cuda.cumsum_last(f32, cuda.Array(6, "float32"), -1)


# ---------------------------------------------------------------- indexing
@pytest.mark.parametrize("dtype", ("int64", "bool"))
@pytest.mark.parametrize("outer,axis,inner,n", [(1, 10, 1, 7), (3, 5, 4, 9), (2, 1000, 64, 300)])
def test_index(outer: int, axis: int, inner: int, n: int, dtype: str) -> None:
    a = values(dtype, outer * axis * inner, 26)
    idx = np.random.default_rng(27).integers(0, axis, n)
    exact("index_gather", [a, idx, "OUT", outer, axis, inner], (outer * n * inner, dtype))
    src = values(dtype, outer * n * inner, 28)
    base = values(dtype, outer * axis * inner, 29)
    exact("index_scatter_add", [src, idx, "OUT", outer, axis, inner], base)


# ---------------------------------------------------------------- ewise_strided_OP
_BOTH = ["add", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
         *COMPARISONS]
STRIDED = [(op, "int64") for op in _BOTH + ["sub", "power", "floordiv", "remainder"]] + [
    (op, "bool") for op in _BOTH]


@pytest.mark.parametrize("op,dtype", STRIDED)
def test_ewise_strided_exact(op: str, dtype: str) -> None:
    base_a, other = values(dtype, 60, 30), values(dtype, 60, 31)
    if op == "power":
        other = np.abs(other) % 40
    out = "bool" if op in COMPARISONS else dtype
    for b_strides, b_offset in (((12, 4, 1), 0), ((0, 1, 0), 2)):  # a compact b, a broadcast one
        args = [base_a, other, "OUT", (5, 3, 4), (1, 20, 5), 0, b_strides, b_offset]
        exact(f"ewise_strided_{op}", args, (60, out))


# ---------------------------------------------------------------- errors
def test_integer_powers_reject_negative_exponents_before_writing() -> None:
    a = put(cuda, np.array([2, 3, 4], np.int64))
    bad = put(cuda, np.array([1, -2, 0], np.int64))
    out = put(cuda, np.full(3, 9, np.int64))
    message = "integers to negative integer powers are not allowed"
    with pytest.raises(ValueError, match=rf"ewise_power: {message} \(exponent -2 at entry 1\)"):
        cuda.ewise_power(a, bad, out)
    with pytest.raises(ValueError, match=rf"scalar_power: {message} \(exponent -1\)"):
        cuda.scalar_power(a, -1, out)
    with pytest.raises(ValueError, match=rf"scalar_rpower: {message} \(exponent -2 at entry 1"):
        cuda.scalar_rpower(bad, 2, out)
    with pytest.raises(ValueError, match=rf"ewise_strided_power: {message} \(exponent -2"):
        cuda.ewise_strided_power(a, bad, out, (3,), (1,), 0, (1,), 0)
    np.testing.assert_array_equal(get(cuda, out), [9, 9, 9])
    with pytest.raises(ValueError, match=f"(?i){message}"):  # the numpy backend agrees
        ref.ewise_power(put(ref, np.array([2], np.int64)), put(ref, np.array([-1], np.int64)),
                        ref.Array(1, "int64"))


@pytest.mark.parametrize("kernel,dtype", [
    ("ewise_sub", "bool"), ("ewise_div", "int64"), ("ewise_exp", "int64"), ("ewise_neg", "bool"),
    ("ewise_bitwise_and", "float32"), ("ewise_bitwise_not", "float64"), ("ewise_floordiv", "bool"),
    ("reduce_sum", "bool"), ("reduce_argmax", "bool"), ("matmul", "int64"),
])
def test_kernels_refuse_dtypes_they_do_not_take(kernel: str, dtype: str) -> None:
    assert dtype not in cuda.kernel_dtypes[kernel]
    buf = cuda.Array(4, dtype)
    args = {"ewise_exp": [buf, buf], "ewise_neg": [buf, buf], "ewise_bitwise_not": [buf, buf],
            "reduce_sum": [buf, buf, 1], "matmul": [buf, buf, buf, 2, 2, 2]}.get(
        kernel, [buf, buf, buf])
    if kernel == "reduce_argmax":
        args = [buf, cuda.Array(4, "int64"), 1]
    with pytest.raises(TypeError, match=f"{kernel}: dtype {dtype} is not supported; this kernel "
                                        f"takes {', '.join(cuda.kernel_dtypes[kernel])}"):
        getattr(cuda, kernel)(*args)


def test_out_dtype_errors() -> None:
    f32, i64 = cuda.Array(4, "float32"), cuda.Array(4, "int64")
    with pytest.raises(TypeError, match="ewise_lt: out is int64; it must be float32 .* or bool"):
        cuda.ewise_lt(f32, f32, i64)
    with pytest.raises(TypeError, match=r"ewise_add: out is bool; it must be float32 \(the"):
        cuda.ewise_add(f32, f32, cuda.Array(4, "bool"))
    with pytest.raises(TypeError, match="ewise_where: cond is float64; it must be int64"):
        cuda.ewise_where(cuda.Array(4, "float64"), i64, i64, i64)
    with pytest.raises(TypeError, match="ewise_strided_sub: dtype bool is not supported"):
        b = cuda.Array(4, "bool")
        cuda.ewise_strided_sub(b, b, b, (4,), (1,), 0, (1,), 0)


# ---------------------------------------------------------------- DLPack
def test_bool_arrays_export_the_dlpack_bool_type() -> None:
    nd = pytest.importorskip("lamina.ndarray")
    torch = pytest.importorskip("torch")
    mask = np.array([[True, False, True], [False, False, True]])
    x = nd.array(mask, device="cuda")
    assert x.dtype.name == "bool" and x.__dlpack_device__() == (2, 0)
    host = np.from_dlpack(x, device="cpu")  # a host copy: cuda buffers expose no pointer
    assert host.dtype == np.bool_
    np.testing.assert_array_equal(host, mask)
    t = torch.from_dlpack(x.__dlpack__(dl_device=(1, 0)))  # kDLBool, not uint8
    assert t.dtype == torch.bool and t.tolist() == mask.tolist()
    assert nd.from_dlpack(t, device="cuda").numpy().dtype == np.bool_

