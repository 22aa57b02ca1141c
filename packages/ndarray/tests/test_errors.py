"""Bad input raises the documented class with a message naming the op and values."""

import lamina.ndarray as nd
import numpy as np
import pytest


def test_matmul_shapes():
    a, b = nd.zeros((2, 3), device="numpy"), nd.zeros((4, 5), device="numpy")
    with pytest.raises(nd.ShapeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) are not "
                       r"aligned: 3 \(dim 1 of arg 0\) != 4 \(dim 0 of arg 1\)"):
        a @ b


def test_broadcast_mismatch():
    with pytest.raises(nd.ShapeError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be "
                       r"broadcast"):
        nd.zeros((2, 3), device="numpy") + nd.zeros((4,), device="numpy")


def test_reshape_size():
    with pytest.raises(nd.ShapeError, match=r"reshape: cannot reshape array of shape "
                       r"\(2, 3\) \(size 6\) into \(4, -1\)"):
        nd.zeros((2, 3), device="numpy").reshape(4, -1)


def test_axis_out_of_range():
    with pytest.raises(nd.ShapeError, match="sum: axis 2 is out of range for an array of "
                       "2 dims"):
        nd.zeros((2, 3), device="numpy").sum(axis=2)


def test_dtype_errors():
    with pytest.raises(nd.DTypeError, match="^sub: subtraction with a bool operand is not "
                       "supported; use \\^"):
        nd.array([True], device="numpy") - nd.array([False], device="numpy")
    with pytest.raises(nd.DTypeError, match="^neg: not supported for bool arrays"):
        -nd.array([True], device="numpy")
    with pytest.raises(nd.DTypeError, match="^bitwise_and: needs integer or bool arrays, "
                       "got float32"):
        nd.zeros(3, device="numpy") & nd.arange(3, device="numpy")
    with pytest.raises(nd.DTypeError, match="^bitwise_not: needs integer or bool"):
        ~nd.zeros(3, device="numpy")
    with pytest.raises(nd.DTypeError, match="^argmax: not supported for bool arrays"):
        nd.array([True], device="numpy").argmax()
    with pytest.raises(nd.DTypeError, match="^mean: needs a floating point array, got int64"):
        nd.arange(3, device="numpy").mean()
    with pytest.raises(nd.DTypeError, match="unsupported dtype 'complex64'"):
        nd.zeros(3, dtype="complex64", device="numpy")


def test_index_errors():
    a = nd.zeros((2, 3), device="numpy")
    with pytest.raises(IndexError, match="getitem: index 3 is out of range for axis 1 of "
                       "size 3"):
        a[0, 3]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(nd.DTypeError, match="getitem: an array index must be integer "
                       r"\(gather\) or bool \(mask\), got f"):
        a[np.array([0.5])]
    with pytest.raises(IndexError, match=r"getitem: the shape of the mask \(3,\) does not "
                       r"match the leading dims of the indexed array's shape \(2, 3\)"):
        a[np.array([True, False, True])]


def test_unknown_device():
    with pytest.raises(nd.DeviceError, match="nosuch"):
        nd.zeros(3, device="nosuch")


def test_permute_and_squeeze_errors():
    a = nd.zeros((2, 3), device="numpy")
    with pytest.raises(nd.ShapeError, match="permute: axes .0, 0. are not a permutation"):
        a.permute(0, 0)
    with pytest.raises(nd.ShapeError, match="squeeze: axis 1 has size 3, not 1"):
        a.squeeze(1)
    with pytest.raises(nd.ShapeError, match="broadcast_to: cannot broadcast shape"):
        a.broadcast_to((3, 3))


def test_write_through_broadcast_view_is_refused():
    a = nd.zeros((1, 3), device="numpy")
    with pytest.raises(nd.ShapeError, match="cannot write through a broadcast view"):
        a.broadcast_to((4, 3))[...] = 1.0


def test_item_on_many_elements():
    with pytest.raises(nd.ShapeError, match=r"item: only one-element arrays"):
        nd.zeros(2, device="numpy").item()


@pytest.mark.parametrize("make", [nd.zeros, nd.ones, nd.empty, nd.rand, nd.randn,
                                  lambda s, device: nd.full(s, 2.0, device=device)])
@pytest.mark.parametrize("shape,message", [
    ((-2, -3), r"negative dimension in shape \(-2, -3\)"),
    ((2.5, 3), r"shape must be a sequence of ints, got \(2.5, 3\) \(2.5 is a float\)"),
    ((True, 3), r"shape must be a sequence of ints, got \(True, 3\) \(True is a bool\)"),
    ((2**32, 2**32), r"shape \(4294967296, 4294967296\) has 18446744073709551616 elements "
                     r"\(\d+ bytes\), more than a buffer can hold"),
])
def test_creation_validates_the_shape_once(make, shape, message):
    with pytest.raises(nd.ShapeError, match=r"^\w+: " + message):
        make(shape, device="numpy")


def test_an_allocation_that_fails_names_the_op_shape_and_device():
    # 4 TiB: a possible size that no test machine has.
    with pytest.raises(MemoryError, match=r"zeros: cannot allocate shape \(1048576, 1048576\) "
                       r"of float32 \(4.0 TiB\) on device numpy: "):
        nd.zeros((2**20, 2**20), device="numpy")


@pytest.mark.parametrize("obj,dtype,bad", [
    ([2**63], "int64", "9223372036854775808"), ([2**63], None, "9223372036854775808"),
    ([2**64], None, "18446744073709551616"), ([-(2**63) - 1], "int64", "-9223372036854775809"),
    (np.array([2**63], np.uint64), None, "9223372036854775808"),
    ([float("nan")], "int64", "nan"), ([1e30], "int64", "1e\\+30"),
])
def test_array_raises_overflow_instead_of_wrapping_int64(obj, dtype, bad):
    with pytest.raises(OverflowError, match=f"^array: {bad} does not fit int64 "):
        nd.array(obj, dtype=dtype, device="numpy")


def test_array_keeps_the_int64_extremes():
    extremes = [2**63 - 1, -(2**63)]
    assert nd.array(extremes, device="numpy").tolist() == extremes
    assert nd.array(np.array([2**63 - 1], np.uint64), device="numpy").tolist() == [2**63 - 1]
    assert nd.array([2.7, -2.7], dtype="int64", device="numpy").tolist() == [2, -2]


def test_a_result_too_large_for_any_buffer_names_the_op():
    # Stride-0 operands: nothing large exists until the result would.
    col = nd.ones((1, 1), device="numpy").broadcast_to((2**32, 1))
    row = nd.ones((1, 1), device="numpy").broadcast_to((1, 2**32))
    with pytest.raises(nd.ShapeError, match=r"^add: shape \(4294967296, 4294967296\) has "):
        col + row
    with pytest.raises(nd.ShapeError, match=r"^matmul: shape \(4294967296, 4294967296\) has "):
        col @ row


def test_operators_check_like_binary(device):
    # The operators' same-shape fast path must keep binary()'s checks.
    i = nd.arange(3, device=device)
    dev = nd.get_device(device)
    if "int64" in dev.kernel_dtypes["ewise_mul"]:
        assert (i * i).tolist() == [0, 1, 4] and (i * i).dtype == nd.int64
    else:  # a v1.0 backend: int64 is for indices
        with pytest.raises(nd.DTypeError, match=f"^mul: device {device} has no int64 kernel "
                           "for mul .its ewise_mul accepts float32(, float64)?."):
            i * i
    equal = (i == i)
    assert equal.dtype == (nd.bool if "bool" in dev.dtypes else nd.int64)
    assert equal.tolist() == [1, 1, 1] and (i < i).tolist() == [0, 0, 0]
    f = nd.zeros(3, device=device)
    assert (f + i).dtype == nd.float32 and (f + i).tolist() == [0, 1, 2]
    other = "cpu" if device == "numpy" else "numpy"
    if other in [b.name for b in nd.list_backends() if b.status == "available"]:
        with pytest.raises(nd.DeviceError, match=f"^sub: operands are on different devices, "
                           f"{dev} .arg 0. and {other} .arg 1."):  # cuda:0, cpu
            f - nd.zeros(3, device=other)
