"""Bad arguments raise the documented exception types, with messages that
start with the kernel name, before any memory is touched."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cpu


def arr(n: int, dtype: str = "float32"):  # noqa: ANN201
    a = cpu.Array(n, dtype)
    cpu.fill(a, 1)
    return a


def idx(values: list[int]):  # noqa: ANN201
    out = cpu.Array(len(values), "int64")
    cpu.from_numpy(np.array(values, dtype=np.int64), out)
    return out


CASES = [
    (ValueError, "Array", lambda: cpu.Array(-1, "float32")),
    (TypeError, "Array", lambda: cpu.Array(3, "int32")),
    (ValueError, "from_numpy", lambda: cpu.from_numpy(np.zeros(3, np.float32), arr(4))),
    (TypeError, "from_numpy", lambda: cpu.from_numpy(np.zeros(3), arr(3, "int64"))),
    (ValueError, "to_numpy", lambda: cpu.to_numpy(arr(10), (3, 5), (5, 1), 0)),
    (ValueError, "to_numpy", lambda: cpu.to_numpy(arr(10), (3,), (1, 1), 0)),
    (ValueError, "to_numpy", lambda: cpu.to_numpy(arr(10), (3,), (-1,), 1)),
    (ValueError, "to_numpy", lambda: cpu.to_numpy(arr(10), (-3,), (1,), 0)),
    (ValueError, "compact", lambda: cpu.compact(arr(10), arr(5), (10,), (1,), 0)),
    (ValueError, "compact", lambda: cpu.compact(arr(10), arr(20), (2, 2**62), (1, 2**62), 0)),
    (ValueError, "compact", lambda: cpu.compact(arr(10), arr(20), (2, 3), (2**62, 2**62), 0)),
    (TypeError, "compact", lambda: cpu.compact(arr(10), arr(10, "float64"), (10,), (1,), 0)),
    (ValueError, "ewise_setitem", lambda: cpu.ewise_setitem(arr(4), arr(10), (5,), (2,), 1)),
    (ValueError, "ewise_setitem", lambda: cpu.ewise_setitem(arr(4), arr(10), (5,), (1,), 0)),
    (ValueError, "scalar_setitem", lambda: cpu.scalar_setitem(4, 1.0, arr(10), (5,), (1,), 0)),
    (ValueError, "ewise_add", lambda: cpu.ewise_add(arr(3), arr(4), arr(4))),
    (TypeError, "ewise_add", lambda: cpu.ewise_add(arr(4), arr(4, "float64"), arr(4))),
    (TypeError, "ewise_exp", lambda: cpu.ewise_exp(arr(4, "int64"), arr(4, "int64"))),
    (TypeError, "ewise_div", lambda: cpu.ewise_div(arr(4, "int64"), arr(4, "int64"),
                                                   arr(4, "int64"))),
    (ValueError, "scalar_mul", lambda: cpu.scalar_mul(arr(3), 2.0, arr(4))),
    (TypeError, "ewise_where", lambda: cpu.ewise_where(arr(4, "float64"), arr(4), arr(4), arr(4))),
    (ValueError, "ewise_cast", lambda: cpu.ewise_cast(arr(3), arr(4, "int64"))),
    (ValueError, "reduce_sum", lambda: cpu.reduce_sum(arr(5), arr(2), 3)),
    (ValueError, "reduce_sum", lambda: cpu.reduce_sum(arr(5), arr(2), -1)),
    (ValueError, "reduce_max", lambda: cpu.reduce_max(arr(5), arr(2), 0)),
    (TypeError, "reduce_argmax", lambda: cpu.reduce_argmax(arr(6), arr(2), 3)),
    (ValueError, "reduce_sum_axis", lambda: cpu.reduce_sum_axis(arr(6), arr(3), 1, 2, 2)),
    (ValueError, "softmax_last", lambda: cpu.softmax_last(arr(6), arr(7), 3)),
    (ValueError, "logsumexp_last", lambda: cpu.logsumexp_last(arr(6), arr(3), 3)),
    (ValueError, "layer_norm_last",
     lambda: cpu.layer_norm_last(arr(6), arr(3), arr(3), arr(6), arr(2), arr(3), 3, 1e-5)),
    (ValueError, "gelu", lambda: cpu.gelu(arr(3), arr(4), False)),  # a shorter than out
    (TypeError, "gelu", lambda: cpu.gelu(arr(4, "int64"), arr(4, "int64"), False)),
    (TypeError, "gelu_backward", lambda: cpu.gelu_backward(arr(4), arr(4, "float64"), arr(4),
                                                           True)),
    (ValueError, "gelu_backward", lambda: cpu.gelu_backward(arr(4), arr(3), arr(4), False)),
    (ValueError, "relu_backward", lambda: cpu.relu_backward(arr(4), arr(3), arr(4))),
    (TypeError, "relu_backward", lambda: cpu.relu_backward(arr(4), arr(4, "float64"), arr(4))),
    (TypeError, "relu_backward", lambda: cpu.relu_backward(*(arr(4, "int64") for _ in "xgo"))),
    (ValueError, "log_softmax_backward_last",  # grad_a of 7, rows of 3
     lambda: cpu.log_softmax_backward_last(arr(6), arr(6), arr(7), 3)),
    (ValueError, "log_softmax_backward_last",  # g shorter than the 2 rows of out
     lambda: cpu.log_softmax_backward_last(arr(5), arr(6), arr(6), 3)),
    (ValueError, "layer_norm_backward_last",  # rstd of 3 rows, mean of 2
     lambda: cpu.layer_norm_backward_last(arr(6), arr(6), arr(3), arr(2), arr(3), arr(6), arr(3),
                                          arr(3), 3)),
    (ValueError, "layer_norm_backward_last",  # grad_weight shorter than a row
     lambda: cpu.layer_norm_backward_last(arr(6), arr(6), arr(3), arr(2), arr(2), arr(6), arr(2),
                                          arr(3), 3)),
    (ValueError, "layer_norm_last",
     lambda: cpu.layer_norm_last(arr(6), arr(2), arr(3), arr(6), arr(2), arr(2), 3, 1e-5)),
    (ValueError, "layer_norm_last",
     lambda: cpu.layer_norm_last(arr(6), arr(3), arr(3), arr(5), arr(2), arr(2), 3, 1e-5)),
    (TypeError, "layer_norm_last",
     lambda: cpu.layer_norm_last(arr(6), arr(3, "float64"), arr(3), arr(6), arr(2), arr(2), 3,
                                 1e-5)),
    (TypeError, "ewise_erf", lambda: cpu.ewise_erf(arr(4, "int64"), arr(4, "int64"))),
    (IndexError, "index_gather", lambda: cpu.index_gather(arr(5), idx([1, 7]), arr(2), 1, 5, 1)),
    (IndexError, "index_gather", lambda: cpu.index_gather(arr(5), idx([-1]), arr(1), 1, 5, 1)),
    (TypeError, "index_gather", lambda: cpu.index_gather(arr(5), arr(2), arr(2), 1, 5, 1)),
    (ValueError, "index_gather", lambda: cpu.index_gather(arr(5), idx([1]), arr(2), 1, 5, 1)),
    (ValueError, "index_gather", lambda: cpu.index_gather(arr(5), idx([1]), arr(1), 1, 6, 1)),
    (IndexError, "index_scatter_add",
     lambda: cpu.index_scatter_add(arr(2), idx([0, 5]), arr(5), 1, 5, 1)),
    (ValueError, "index_scatter_add",
     lambda: cpu.index_scatter_add(arr(1), idx([0, 1]), arr(5), 1, 5, 1)),
    (ValueError, "matmul", lambda: cpu.matmul(arr(6), arr(6), arr(3), 2, 3, 2)),
    (ValueError, "matmul", lambda: cpu.matmul(arr(6), arr(6), arr(4), -2, 3, 2)),
    (ValueError, "matmul", lambda: cpu.matmul(arr(6), arr(6), arr(4), 2**40, 2**40, 2**40)),
    (TypeError, "matmul", lambda: cpu.matmul(arr(6, "int64"), arr(6, "int64"), arr(4, "int64"),
                                             2, 3, 2)),
    (ValueError, "ewise_strided_add",
     lambda: cpu.ewise_strided_add(arr(6), arr(6), arr(6), (2, 3), (3, 1), 1, (3, 1), 0)),
    (ValueError, "ewise_strided_add",
     lambda: cpu.ewise_strided_add(arr(6), arr(6), arr(6), (2, 3), (3, 1), 0, (-3, 1), 2)),
    (ValueError, "ewise_strided_add",
     lambda: cpu.ewise_strided_add(arr(6), arr(6), arr(6), (2, 3), (3, 1, 1), 0, (3, 1), 0)),
    (ValueError, "ewise_strided_add",
     lambda: cpu.ewise_strided_add(arr(6), arr(6), arr(5), (2, 3), (3, 1), 0, (0, 1), 0)),
    (TypeError, "ewise_strided_add",
     lambda: cpu.ewise_strided_add(arr(6), arr(6, "float64"), arr(6), (2, 3), (3, 1), 0,
                                   (3, 1), 0)),
    (TypeError, "ewise_strided_div",
     lambda: cpu.ewise_strided_div(arr(6, "int64"), arr(6, "int64"), arr(6, "int64"), (6,),
                                   (1,), 0, (1,), 0)),
    (ValueError, "matmul_strided",
     lambda: cpu.matmul_strided(arr(6), arr(6), arr(4), 2, 3, 2, 1, 3, 1, 0, 2, 1)),
    (ValueError, "matmul_strided",
     lambda: cpu.matmul_strided(arr(6), arr(6), arr(4), 2, 3, 2, 0, 3, 1, 0, -2, 1)),
    (ValueError, "matmul_strided",
     lambda: cpu.matmul_strided(arr(6), arr(6), arr(3), 2, 3, 2, 0, 3, 1, 0, 2, 1)),
    (ValueError, "matmul_batched",
     lambda: cpu.matmul_batched(arr(12), arr(12), arr(7), 2, 2, 3, 2)),
    # Overflow in the bounds arithmetic itself: each product fits int64, their
    # sum does not, and must not wrap around to an index inside the buffer.
    (ValueError, "matmul_strided",
     lambda: cpu.matmul_strided(arr(6), arr(6), arr(4), 2, 2, 2, 1, 2**62, 2**62, 0, 2, 1)),
    (ValueError, "matmul_strided",
     lambda: cpu.matmul_strided(arr(6), arr(6), arr(4), 2, 2, 2, 0, 2, 1, 2**63 - 2, 1, 1)),
    # Stride-0 views reach one element whatever n is; m * n * p still overflows.
    (ValueError, "matmul_strided",
     lambda: cpu.matmul_strided(arr(1), arr(1), arr(4), 2, 2**62, 2, 0, 0, 0, 0, 0, 0)),
    (ValueError, "ewise_strided_add",
     lambda: cpu.ewise_strided_add(arr(6), arr(6), arr(4), (2, 2), (2**62, 2**62), 1,
                                   (2, 1), 0)),
    (ValueError, "ewise_strided_mul",
     lambda: cpu.ewise_strided_mul(arr(6), arr(6), arr(2), (2,), (1,), 0, (1,), 2**63 - 1)),
    (ValueError, "compact", lambda: cpu.compact(arr(10), arr(2), (2,), (1,), 2**63 - 1)),
    (ValueError, "ewise_setitem",
     lambda: cpu.ewise_setitem(arr(4), arr(10), (2, 2), (2**62, 2**62), 1)),
    (ValueError, "index_gather",
     lambda: cpu.index_gather(arr(1), idx([0, 0, 0, 0]), arr(1), 2**62, 1, 0)),
    (ValueError, "index_scatter_add",
     lambda: cpu.index_scatter_add(arr(1), idx([0, 0, 0, 0]), arr(1), 2**62, 1, 0)),
    # A huge padding with a huge stride: few outputs, but the zero-padded image
    # the staged path would hold does not fit int64.
    (ValueError, "im2col",
     lambda: cpu.im2col(arr(1), arr(4), 1, 1, 1, 1, 1, 1, 2**41, 2**41, 2**40, 2**40, 1, 1)),
    (ValueError, "col2im",
     lambda: cpu.col2im(arr(4), arr(1), 1, 1, 1, 1, 1, 1, 2**41, 2**41, 2**40, 2**40, 1, 1)),
    (ValueError, "im2col", lambda: cpu.im2col(arr(25), arr(9), 1, 1, 5, 5, 7, 7, 1, 1, 0, 0, 1, 1)),
    (ValueError, "im2col", lambda: cpu.im2col(arr(25), arr(9), 1, 1, 5, 5, 3, 3, 0, 1, 0, 0, 1, 1)),
    (ValueError, "im2col",
     lambda: cpu.im2col(arr(24), arr(81), 1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1)),
    (ValueError, "col2im", lambda: cpu.col2im(arr(8), arr(25), 1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1)),
    (ValueError, "fill", lambda: cpu.fill(arr(3, "int64"), float("nan"))),
]


@pytest.mark.parametrize("exc,name,call", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_error(exc: type[Exception], name: str, call) -> None:  # noqa: ANN001
    with pytest.raises(exc) as info:
        call()
    assert str(info.value).startswith(name), str(info.value)


def test_index_error_message() -> None:
    with pytest.raises(IndexError, match=r"^index_gather: index 7 is out of range for an axis "
                                         r"of size 5$"):
        cpu.index_gather(arr(5), idx([1, 7]), arr(2), 1, 5, 1)


def test_rejected_call_leaves_out_untouched() -> None:
    out = arr(4)
    cpu.fill(out, 3)
    with pytest.raises(IndexError):
        cpu.index_scatter_add(arr(3), idx([0, 1, 9]), out, 1, 4, 1)
    np.testing.assert_array_equal(cpu.to_numpy(out, (4,), (1,), 0), [3, 3, 3, 3])
