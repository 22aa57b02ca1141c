"""Interface v1.1 on the cpu backend: bool buffers, comparisons writing bool,
int64 and bool arithmetic, floor division and remainder with Python's signs,
bitwise ops, reduce_prod and cumsum_last, each against numpy (the reference
backend, or numpy itself where the reference has no such kernel yet), and
the errors of the dtype paths."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALL, FLOATS, ODD_SIZES, buffer, compare, cpu, host, rand
from lamina.ndarray._interface import COMPARISON_OPS

EVERY = (*ALL, "bool")
INT_MIN, INT_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def values(size: int, dtype: str, seed: int = 0, lo: int = -5, hi: int = 6) -> np.ndarray:
    """Small integers (ties on purpose) in any dtype; bool is 0/1 at random."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size).astype(bool)
    return rng.integers(lo, hi, size).astype(dtype)


def run(kernel: str, inputs: list, out: tuple[int, str], *layout) -> np.ndarray:
    """kernel(*inputs, out, *layout) on cpu; numpy arrays become buffers."""
    args = [buffer(cpu, x) if isinstance(x, np.ndarray) else x for x in inputs]
    dst = cpu.Array(*out)
    cpu.fill(dst, 0)
    getattr(cpu, kernel)(*args, dst, *layout)
    return host(cpu, dst)


# ----------------------------------------------------------------- bool buffers
@pytest.mark.parametrize("size", ODD_SIZES)
def test_bool_buffers_roundtrip_fill_and_cast(size: int) -> None:
    x = values(size, "bool", 1)
    a = buffer(cpu, x)
    assert a.dtype == "bool" and a.nbytes == size
    got = host(cpu, a)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, x)
    for value in (True, 0, 2, -0.5, np.float32(0)):
        compare("fill", [], [(size, "bool")], value)
    for dtype in EVERY:
        compare("ewise_cast", [x], [(size, dtype)])
        compare("ewise_cast", [values(size, dtype, 2)], [(size, "bool")])


def test_cast_of_nan_and_fractions_to_bool_is_true_as_numpy() -> None:
    a = np.array([np.nan, 0.0, -0.0, 0.25, -np.inf], np.float32)
    np.testing.assert_array_equal(run("ewise_cast", [a], (5, "bool")), a.astype(bool))


def test_bool_buffer_protocol_and_wrap_numpy_share_memory() -> None:
    x = np.array([True, False, True])
    a = buffer(cpu, x)
    view = memoryview(a)
    assert view.format == "?" and view.itemsize == 1 and view.shape == (3,)
    shared = np.asarray(view)
    shared[1] = True  # a write through the view is a write into the buffer
    np.testing.assert_array_equal(host(cpu, a), [True, True, True])
    src = np.zeros(5, bool)
    wrapped = cpu.wrap_numpy(src)
    assert wrapped.dtype == "bool"
    cpu.fill(wrapped, True)
    assert src.all()


def test_from_numpy_refuses_numbers_into_bool() -> None:
    with pytest.raises(TypeError, match="from_numpy: .*bool"):
        cpu.from_numpy(np.array([0, 1, 2]), cpu.Array(3, "bool"))
    ints = cpu.Array(3, "int64")
    cpu.from_numpy(np.array([True, False, True]), ints)  # bool -> int64 is safe
    np.testing.assert_array_equal(host(cpu, ints), [1, 0, 1])


def test_bool_views_compact_setitem_and_index() -> None:
    base = values(60, "bool", 3)
    view = base.reshape(3, 4, 5).transpose(2, 0, 1)[::-1]
    shape = view.shape
    strides = tuple(s // base.itemsize for s in view.strides)
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
    got = run("compact", [base], (view.size, "bool"), shape, strides, offset)
    np.testing.assert_array_equal(got, view.reshape(-1))
    compare("ewise_setitem", [values(20, "bool", 4)], [(60, "bool")], (4, 5), (10, 2), 3)
    compare("scalar_setitem", [20, True], [(60, "bool")], (4, 5), (10, 2), 3)
    idx = np.array([2, 0, 2, 1], np.int64)
    compare("index_gather", [base[:45], idx], [(60, "bool")], 3, 3, 5)
    compare("index_scatter_add", [values(60, "bool", 5), idx], [(45, "bool")], 3, 3, 5,
            init=lambda i, n: values(n, "bool", 6))


# ----------------------------------------------------------------- comparisons
@pytest.mark.parametrize("dtype", EVERY)
@pytest.mark.parametrize("op", COMPARISON_OPS)
@pytest.mark.parametrize("size", (0, 1, 17, 1031, 65537))
def test_comparisons_write_bool(dtype: str, op: str, size: int) -> None:
    a, b = values(size, dtype, 1, -3, 4), values(size, dtype, 2, -3, 4)
    got = compare(f"ewise_{op}", [a, b], [(size, "bool")])[0]
    np.testing.assert_array_equal(got, getattr(np, {"lt": "less", "le": "less_equal",
                                                    "gt": "greater", "ge": "greater_equal",
                                                    "eq": "equal", "ne": "not_equal"}[op])(a, b))
    compare(f"scalar_{op}", [a, True if dtype == "bool" else 1], [(size, "bool")])
    # and 1/0 in the operands' dtype, as interface v1.0 (the conformance kit checks both)
    compare(f"ewise_{op}", [a, b], [(size, dtype)])


def test_comparisons_with_nan_write_false_except_ne() -> None:
    a = np.array([np.nan, 1, np.nan, 2], np.float32)
    b = np.array([np.nan, np.nan, 1, 2], np.float32)
    for op in COMPARISON_OPS:
        compare(f"ewise_{op}", [a, b], [(4, "bool")])


@pytest.mark.parametrize("dtype", EVERY)
@pytest.mark.parametrize("op", ("lt", "eq", "ge", "add", "maximum"))
def test_ewise_strided_on_every_dtype(dtype: str, op: str) -> None:
    a, b = values(60, dtype, 7), values(20, dtype, 8)
    out = "bool" if op in COMPARISON_OPS else dtype
    # a transposed against b broadcast along the middle dim
    compare(f"ewise_strided_{op}", [a, b], [(60, out)], (5, 3, 4), (1, 20, 5), 0, (4, 0, 1), 0)


@pytest.mark.parametrize("dtype", EVERY)
@pytest.mark.parametrize("op", ("lt", "add", "maximum"))
@pytest.mark.parametrize("n", (1, 7, 16, 256))
def test_ewise_strided_row_vector_over_rows(dtype: str, op: str, n: int) -> None:
    """A row vector broadcast over the rows of a compact operand, on either side
    (a bias over (rows, n)): the rows run merged against a repeated vector, with
    a row count that ends part-way through a merged run, and after an offset."""
    rows = 1030 // n + 3
    a, b = values(rows * n + 2, dtype, 7), values(n + 5, dtype, 8)
    out = "bool" if op in COMPARISON_OPS else dtype
    shape = (rows, n)
    compare(f"ewise_strided_{op}", [a, b], [(rows * n, out)], shape, (n, 1), 2, (0, 1), 5)
    compare(f"ewise_strided_{op}", [b, a], [(rows * n, out)], shape, (0, 1), 5, (n, 1), 2)


@pytest.mark.parametrize("cond", ("bool", "int64", "same"))
@pytest.mark.parametrize("dtype", EVERY)
def test_where_with_every_condition(dtype: str, cond: str) -> None:
    c = values(1031, dtype if cond == "same" else cond, 9)
    compare("ewise_where", [c, values(1031, dtype, 10), values(1031, dtype, 11)],
            [(1031, dtype)])


# ----------------------------------------------------------------- arithmetic
@pytest.mark.parametrize("op", ("add", "mul", "maximum", "minimum", "bitwise_and",
                                "bitwise_or", "bitwise_xor"))
@pytest.mark.parametrize("dtype", ("int64", "bool"))
@pytest.mark.parametrize("size", ODD_SIZES)
def test_integral_binary(op: str, dtype: str, size: int) -> None:
    a = values(size, dtype, 12, -2**40, 2**40) if dtype == "int64" else values(size, dtype, 12)
    b = values(size, dtype, 13, -2**40, 2**40) if dtype == "int64" else values(size, dtype, 13)
    compare(f"ewise_{op}", [a, b], [(size, dtype)])
    if not op.startswith("bitwise"):
        compare(f"scalar_{op}", [a, True if dtype == "bool" else -3], [(size, dtype)])


@pytest.mark.parametrize("dtype", ("int64", "bool"))
def test_bitwise_not(dtype: str) -> None:
    a = values(1031, dtype, 14)
    if dtype == "int64":
        a[:3] = [INT_MIN, INT_MAX, -1]
    got = compare("ewise_bitwise_not", [a], [(a.size, dtype)])[0]
    np.testing.assert_array_equal(got, ~a)  # ~True is False on bool, as numpy and PyTorch


def test_int64_wraps_around_as_numpy() -> None:
    a = np.array([INT_MAX, INT_MIN, INT_MIN, 3, -1 << 62], np.int64)
    b = np.array([1, -1, INT_MIN, INT_MAX, 4], np.int64)
    for op in ("add", "sub", "mul"):
        compare(f"ewise_{op}", [a, b], [(5, "int64")])
    for op in ("neg", "abs", "sign"):
        compare(f"ewise_{op}", [a], [(5, "int64")])
    compare("scalar_rsub", [a, -2], [(5, "int64")])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ("floordiv", "remainder"))
def test_floordiv_and_remainder_have_pythons_signs(dtype: str, op: str) -> None:
    # every sign combination, exact multiples, |a| < |b| and large values
    a = np.array([7, -7, 7, -7, 6, -6, 6, -6, 1, -1, 0, 0, 10**12 + 7, -(10**12) - 7],
                 dtype)
    b = np.array([2, 2, -2, -2, 3, 3, -3, -3, 5, 5, 4, -4, 10**6 + 3, 10**6 + 3], dtype)
    if dtype != "int64":
        a = np.concatenate([a, np.array([7.5, -7.5, 1e-30, -0.0, 5.0], dtype)])
        b = np.concatenate([b, np.array([-2.25, 2.25, -1.0, 3.0, 0.1], dtype)])
    got = compare(f"ewise_{op}", [a, b], [(a.size, dtype)])[0]
    py = [(x // y if op == "floordiv" else x % y) for x, y in zip(a.tolist(), b.tolist())]
    np.testing.assert_allclose(got, np.array(py, dtype), rtol=1e-6)
    if dtype == "int64":  # the remainder of an integer pair is exact
        np.testing.assert_array_equal(got, py)


@pytest.mark.parametrize("op", ("floordiv", "remainder"))
def test_int64_floordiv_edge_cases(op: str) -> None:
    rng = np.random.default_rng(15)
    a = rng.integers(-10**15, 10**15, 65537)
    b = rng.integers(-50, 51, 65537)
    b[b == 0] = -1
    a[:4] = [INT_MIN, INT_MIN, INT_MAX, INT_MIN]
    b[:4] = [-1, 1, -1, INT_MIN]  # INT64_MIN // -1 wraps, as numpy
    with np.errstate(over="ignore"):
        compare(f"ewise_{op}", [a, b], [(a.size, "int64")])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ("floordiv", "remainder"))
def test_float_division_by_zero_is_ieee(dtype: str, op: str) -> None:
    a = np.array([1, -1, 0, np.nan, np.inf, 3], dtype)
    b = np.array([0, 0, 0, 2, 2, np.inf], dtype)
    compare(f"ewise_{op}", [a, b], [(6, dtype)])


@pytest.mark.parametrize("op", ("floordiv", "remainder"))
def test_int64_division_by_zero_raises_and_writes_nothing(op: str) -> None:
    a = buffer(cpu, np.arange(1, 2000, dtype=np.int64))
    b = buffer(cpu, np.where(np.arange(1999) == 1500, 0, 3).astype(np.int64))
    with pytest.raises(ZeroDivisionError, match=f"ewise_{op}: integer division by zero"):
        getattr(cpu, f"ewise_{op}")(a, b, a)  # in place: a must come back untouched
    np.testing.assert_array_equal(host(cpu, a), np.arange(1, 2000))
    strided = getattr(cpu, f"ewise_strided_{op}")
    with pytest.raises(ZeroDivisionError, match=f"ewise_strided_{op}: integer division by zero"):
        strided(a, b, cpu.Array(1999, "int64"), (1999,), (1,), 0, (1,), 0)
    # the same layout without the zero is fine
    strided(a, buffer(cpu, np.full(1, 3, np.int64)), cpu.Array(1999, "int64"), (1999,), (1,), 0,
            (0,), 0)


@pytest.mark.parametrize("size", (0, 1, 17, 1031))
def test_int64_power(size: int) -> None:
    a = values(size, "int64", 16, -4, 5)
    b = values(size, "int64", 17, 0, 40)  # large exponents overflow: wrap as numpy
    if size:
        a[0], b[0] = 0, 0  # 0 ** 0 == 1
    compare("ewise_power", [a, b], [(size, "int64")])
    compare("scalar_power", [a, 3], [(size, "int64")])
    compare("scalar_rpower", [b, -3], [(size, "int64")])


def test_int64_power_refuses_negative_exponents_as_numpy() -> None:
    base = buffer(cpu, np.array([2, 3], np.int64))
    exp = buffer(cpu, np.array([1, -1], np.int64))
    out = cpu.Array(2, "int64")
    with pytest.raises(ValueError, match="ewise_power: integers to negative integer powers"):
        cpu.ewise_power(base, exp, out)
    with pytest.raises(ValueError, match="scalar_power"):
        cpu.scalar_power(base, -2, out)
    with pytest.raises(ValueError, match="scalar_rpower"):
        cpu.scalar_rpower(exp, 2, out)
    with pytest.raises(ValueError):  # numpy's own refusal, for the record
        np.power(np.array([2]), np.array([-1]))


# ----------------------------------------------------------------- reductions
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 7), (2, 1031), (1, 200003), (64, 1000)])
def test_int64_sums_are_exact(rows: int, size: int) -> None:
    # beyond 2**53: a float partial sum would round them
    a = np.random.default_rng(18).integers(2**42, 2**43, rows * size)
    got = compare("reduce_sum", [a], [(rows, "int64")], size)[0]
    assert got.tolist() == [sum(r) for r in a.reshape(rows, size).tolist()]
    compare("reduce_sum_axis", [a], [(size, "int64")], 1, rows, size)


@pytest.mark.parametrize("op", ("max", "min"))
@pytest.mark.parametrize("rows,size", [(1, 1), (3, 7), (2, 1031), (1, 65537)])
def test_bool_max_min(op: str, rows: int, size: int) -> None:
    a = values(rows * size, "bool", 19)
    compare(f"reduce_{op}", [a], [(rows, "bool")], size)
    compare(f"reduce_{op}", [np.ones(rows * size, bool)], [(rows, "bool")], size)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("rows,size", [(1, 0), (4, 0), (1, 1), (3, 7), (5, 17), (2, 1031),
                                       (0, 5), (1, 65537)])
def test_reduce_prod(dtype: str, rows: int, size: int) -> None:
    if dtype == "int64":
        a = values(rows * size, dtype, 20, -3, 4)
    else:  # near 1, so long float products stay finite
        a = np.random.default_rng(20).uniform(0.999, 1.001, rows * size).astype(dtype)
        a[::7] *= -1
    got = run("reduce_prod", [a], (rows, dtype), size)
    want = np.prod(a.reshape(rows, size), axis=1)
    if dtype == "int64":  # wraps around on overflow, as numpy
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)
    assert got.dtype == dtype


def test_reduce_prod_special_values() -> None:
    a = np.array([2, np.inf, 0, 1, np.nan, 3, -1, -2, 1e30, 1e30, 1e-30, 1e-30], np.float32)
    with np.errstate(all="ignore"):
        want = np.prod(a.reshape(6, 2), axis=1)
    np.testing.assert_array_equal(run("reduce_prod", [a], (6, "float32"), 2), want)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("rows,size", [(0, 0), (0, 5), (1, 1), (3, 7), (5, 17), (2, 1031),
                                       (200, 64), (1, 65537)])
def test_cumsum_last(dtype: str, rows: int, size: int) -> None:
    a = rand(rows * size, dtype, 21)
    got = run("cumsum_last", [a], (rows * size, dtype), size)
    want = np.cumsum(a.reshape(rows, size), axis=1, dtype=dtype).reshape(-1)
    if dtype == "int64":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-4 if dtype == "float32" else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert got.dtype == dtype


def test_cumsum_last_accumulates_in_place_and_wraps() -> None:
    x = np.array([INT_MAX, 1, 5, -7], np.int64)
    a = buffer(cpu, x)
    cpu.cumsum_last(a, a, 4)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(host(cpu, a), np.cumsum(x))


# ----------------------------------------------------------------- errors
def arr(n: int, dtype: str = "float32"):  # noqa: ANN201
    return cpu.Array(n, dtype)


@pytest.mark.parametrize("kernel,call", [
    ("ewise_sub", lambda: cpu.ewise_sub(arr(2, "bool"), arr(2, "bool"), arr(2, "bool"))),
    ("scalar_rsub", lambda: cpu.scalar_rsub(arr(2, "bool"), True, arr(2, "bool"))),
    ("ewise_neg", lambda: cpu.ewise_neg(arr(2, "bool"), arr(2, "bool"))),
    ("ewise_floordiv", lambda: cpu.ewise_floordiv(arr(2, "bool"), arr(2, "bool"),
                                                  arr(2, "bool"))),
    ("ewise_bitwise_and", lambda: cpu.ewise_bitwise_and(arr(2), arr(2), arr(2))),
    ("ewise_bitwise_not", lambda: cpu.ewise_bitwise_not(arr(2, "float64"), arr(2, "float64"))),
    ("ewise_exp", lambda: cpu.ewise_exp(arr(2, "bool"), arr(2, "bool"))),
    ("reduce_sum", lambda: cpu.reduce_sum(arr(2, "bool"), arr(1, "bool"), 2)),
    ("reduce_sum_axis", lambda: cpu.reduce_sum_axis(arr(2, "bool"), arr(1, "bool"), 1, 2, 1)),
    ("reduce_argmax", lambda: cpu.reduce_argmax(arr(2, "bool"), arr(1, "int64"), 2)),
    ("reduce_prod", lambda: cpu.reduce_prod(arr(2, "bool"), arr(1, "bool"), 2)),
    ("reduce_prod", lambda: cpu.reduce_prod(arr(2, "int64"), arr(1), 2)),
    ("cumsum_last", lambda: cpu.cumsum_last(arr(2, "bool"), arr(2, "bool"), 2)),
    ("cumsum_last", lambda: cpu.cumsum_last(arr(2), arr(2, "float64"), 2)),
    ("matmul", lambda: cpu.matmul(arr(1, "bool"), arr(1, "bool"), arr(1, "bool"), 1, 1, 1)),
    ("im2col", lambda: cpu.im2col(arr(4, "int64"), arr(4, "int64"), 1, 1, 2, 2, 1, 1, 1, 1,
                                  0, 0, 1, 1)),
    # a comparison writes bool or the operands' dtype, nothing else
    ("ewise_lt", lambda: cpu.ewise_lt(arr(2, "int64"), arr(2, "int64"), arr(2))),
    ("scalar_eq", lambda: cpu.scalar_eq(arr(2), 1.0, arr(2, "int64"))),
    ("ewise_add", lambda: cpu.ewise_add(arr(2), arr(2), arr(2, "bool"))),
    ("ewise_strided_lt", lambda: cpu.ewise_strided_lt(arr(2), arr(2), arr(2, "int64"), (2,),
                                                      (1,), 0, (1,), 0)),
    ("ewise_where", lambda: cpu.ewise_where(arr(2, "float64"), arr(2), arr(2), arr(2))),
    ("Array", lambda: cpu.Array(2, "int32")),
])
def test_wrong_dtypes_raise_type_error_naming_the_kernel(kernel: str, call) -> None:
    with pytest.raises(TypeError, match=f"^{kernel}: "):
        call()


@pytest.mark.parametrize("call", [
    lambda: cpu.reduce_prod(arr(5), arr(2), 3),
    lambda: cpu.reduce_prod(arr(3), arr(1), -1),
    lambda: cpu.cumsum_last(arr(6), arr(6), 4),
    lambda: cpu.cumsum_last(arr(3), arr(6), 3),
    lambda: cpu.cumsum_last(arr(6), arr(6), -2),
    lambda: cpu.cumsum_last(arr(0), arr(3), 0),
])
def test_bad_sizes_raise_value_error(call) -> None:
    with pytest.raises(ValueError, match="^(reduce_prod|cumsum_last): "):
        call()


def test_bool_arrays_cross_dlpack_without_a_copy() -> None:
    nd = pytest.importorskip("lamina.ndarray")
    x = nd.array(np.array([[True, False, True], [False, False, True]]), device="cpu")
    shared = np.from_dlpack(x)
    assert shared.dtype == np.bool_ and not shared.flags.owndata
    back = nd.from_dlpack(shared, device="cpu")
    assert back.dtype.name == "bool"
    np.testing.assert_array_equal(back.numpy(), shared)
    np.testing.assert_array_equal((x > 0).numpy(), x.numpy())  # bool compares as 1/0


def test_bfloat16_buffer_protocol_gives_the_bits_as_a_record_numpy_never_computes_on() -> None:
    a = cpu.Array(3, "bfloat16")
    view = memoryview(a)
    assert view.format == "T{H:bfloat16:}" and view.itemsize == 2
    bits = np.asarray(view)
    assert bits.dtype == np.dtype([("bfloat16", "<u2")])
    bits.view(np.uint16)[:] = 0x3FC0  # 1.5 in bfloat16
    cpu.ewise_cast(a, out := cpu.Array(3, "float32"))
    np.testing.assert_array_equal(host(cpu, out), [1.5, 1.5, 1.5])
