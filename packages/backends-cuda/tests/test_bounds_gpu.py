"""The host launchers' bounds arithmetic with huge strides, offsets and sizes.

Every launcher validates a view before it queues a kernel; that validation
must itself not overflow int64. Before the checked arithmetic, a stride such
as 2**62 over 5 elements wrapped its reach to 0 and let the kernel read far
outside the buffer (a crash under the CPU emulation, an illegal address on a
GPU), and huge convolution padding wrapped the output size. Each case must be
a ValueError naming the op, and nothing may be written.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cuda, get, put

pytestmark = pytest.mark.cuda

BIG = 2**62

# (shape, strides, offset) of views into a 4-element buffer whose reach
# wraps around int64 (to 0, or to a small or negative value) if computed naively.
WRAPPING_VIEWS = [
    ((5,), (BIG,), 0),                 # 4 * 2**62 == 2**64 wraps to 0
    ((2, 2), (BIG, BIG), 0),           # each reach fits, their sum 2**63 wraps negative
    ((5,), (-BIG,), 0),                # -4 * 2**62 == -2**64 wraps to 0 as well
    ((2, 3), (2**63 - 1, 1), 0),       # reach 2**63 - 1 fits, + 2 overflows
    ((2,), (1,), 2**63 - 1),           # offset + 1 overflows
]


@pytest.mark.parametrize("shape,strides,offset", WRAPPING_VIEWS)
def test_strided_views_that_wrap_int64_are_rejected(shape: tuple, strides: tuple,
                                                     offset: int) -> None:
    buf = put(cuda, np.arange(4, dtype=np.float32))
    out = put(cuda, np.full(8, -1, np.float32))
    n = int(np.prod(shape))
    with pytest.raises(ValueError, match="compact: view .* outside its buffer"):
        cuda.compact(buf, out, shape, strides, offset)
    with pytest.raises(ValueError, match="ewise_setitem: view .* outside its buffer"):
        cuda.ewise_setitem(put(cuda, np.zeros(n, np.float32)), buf, shape, strides, offset)
    with pytest.raises(ValueError, match="scalar_setitem: view .* outside its buffer"):
        cuda.scalar_setitem(n, 7.0, buf, shape, strides, offset)
    with pytest.raises(ValueError, match="to_numpy: view .* outside its buffer"):
        cuda.to_numpy(buf, shape, strides, offset)
    with pytest.raises(ValueError, match="ewise_strided_add: a view .* outside its buffer"):
        cuda.ewise_strided_add(buf, buf, out, shape, strides, offset, strides, offset)
    np.testing.assert_array_equal(get(cuda, buf), np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(get(cuda, out), np.full(8, -1, np.float32))


def test_matmul_strided_views_that_wrap_are_rejected() -> None:
    a = put(cuda, np.ones(16, np.float32))
    out = put(cuda, np.full(8, -1, np.float32))
    for m, n, a_off, a_rs, a_cs in [(5, 1, 0, BIG, 1), (2, 2, 0, BIG, BIG),
                                    (2, 2, 2**63 - 2, 1, 1)]:
        with pytest.raises(ValueError, match="matmul_strided: .*(overflows|does not fit)"):
            cuda.matmul_strided(a, a, out, m, n, 1, a_off, a_rs, a_cs, 0, 1, 1)
    np.testing.assert_array_equal(get(cuda, out), np.full(8, -1, np.float32))


@pytest.mark.parametrize("pad,dil,kernel", [(BIG, 1, 3), (2**63 - 1, 1, 1), (0, BIG, 3),
                                            (0, 2**63 - 1, 2)])
def test_convolution_geometry_that_overflows_is_rejected(pad: int, dil: int,
                                                         kernel: int) -> None:
    a = put(cuda, np.ones(16, np.float32))
    out = put(cuda, np.zeros(16, np.float32))
    for op in ("im2col", "col2im"):
        with pytest.raises(ValueError, match=f"{op}: .*(overflow|does not fit)"):
            getattr(cuda, op)(a, out, 1, 1, 4, 4, kernel, kernel, 1, 1, pad, pad, dil, dil)


def test_reduce_sum_axis_outer_times_inner_overflow_is_rejected() -> None:
    # size 0 makes outer * size * inner == 0; outer * inner alone overflows.
    with pytest.raises(ValueError, match="reduce_sum_axis: .*overflows"):
        cuda.reduce_sum_axis(cuda.Array(0, "float32"), cuda.Array(4, "float32"), BIG, 0, 4)
