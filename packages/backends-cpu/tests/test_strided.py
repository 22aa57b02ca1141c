"""compact / ewise_setitem / scalar_setitem / to_numpy on every layout kind:
contiguous, offset, transposed (the blocked path), broadcast (stride 0),
negative strides, zero-size, plus hypothesis-generated views."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALL, compare, cpu, rand
from hypothesis import given, settings
from hypothesis import strategies as st

LAYOUTS = [  # buffer size, shape, strides, offset
    (24, (2, 3, 4), (12, 4, 1), 0),      # contiguous
    (30, (2, 3, 4), (12, 4, 1), 5),      # offset
    (12, (4, 3), (1, 4), 0),             # transpose (small)
    (4096, (64, 64), (1, 64), 0),        # transpose (tiled)
    (3000, (37, 53), (1, 37), 1000),     # transpose, odd sizes, offset
    (2 * 40 * 33, (2, 33, 40), (1320, 1, 33), 0),  # batched transpose
    (3 * 16 * 36, (3, 36, 16), (576, 1, 36), 0),  # NCHW -> NHWC, 16 channels (part tiles)
    (2 * 27 * 45 + 3, (2, 27, 45), (1215, 1, 27), 3),  # part tiles with edges on both sides
    (5, (4, 5), (0, 1), 0),              # broadcast rows
    (4, (4, 5), (1, 0), 0),              # broadcast columns
    (1, (3, 1, 7), (0, 0, 0), 0),        # scalar broadcast
    (10, (10,), (-1,), 9),               # reversed
    (60, (3, 4, 5), (-20, 5, -1), 44),   # mixed negative
    (100, (5, 5), (20, 2), 1),           # strided rows
    (10, (0, 3), (3, 1), 0),             # zero-size
    (10, (3, 0), (1, 1), 20),            # zero-size, offset past the end is fine
    (1, (), (), 0),                      # 0-d
    (300000, (300, 1000), (1000, 1), 0),  # big contiguous (threads)
    (300000, (1000, 300), (1, 1000), 0),  # big transpose (threads)
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_compact(dtype: str, layout: tuple) -> None:
    size, shape, strides, offset = layout
    n = int(np.prod(shape))
    compare("compact", [rand(size, dtype)], [(n, dtype)], shape, strides, offset)
    got = cpu.to_numpy(_buf(rand(size, dtype)), shape, strides, offset)
    assert got.shape == shape and got.flags.c_contiguous


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", [lay for lay in LAYOUTS if 0 not in lay[2] or
                                    all(s == 1 for s, st_ in zip(lay[1], lay[2]) if st_ == 0)])
def test_setitem(dtype: str, layout: tuple) -> None:
    size, shape, strides, offset = layout
    n = int(np.prod(shape))
    init = lambda i, s: rand(s, dtype, 3)  # noqa: E731
    compare("ewise_setitem", [rand(n, dtype, 2)], [(size, dtype)], shape, strides, offset,
            init=init)
    compare("scalar_setitem", [n, 4], [(size, dtype)], shape, strides, offset, init=init)


def _buf(x: np.ndarray):  # noqa: ANN202
    out = cpu.Array(x.size, x.dtype.name)
    cpu.from_numpy(x, out)
    return out


@st.composite
def views(draw):  # noqa: ANN001, ANN201
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(-7, 7), min_size=ndim, max_size=ndim)))
    lo = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0 and n > 0)
    hi = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0 and n > 0)
    offset = -lo + draw(st.integers(0, 3))
    size = offset + hi + 1 + draw(st.integers(0, 3))
    return size, shape, strides, offset


@settings(max_examples=300, deadline=None)
@given(views())
def test_compact_property(view: tuple) -> None:
    size, shape, strides, offset = view
    x = rand(size, "float32")
    want = np.lib.stride_tricks.as_strided(x[offset:] if size > offset else x[:0], shape,
                                           tuple(4 * s for s in strides))
    if 0 in shape:
        want = np.empty(shape, np.float32)
    got = cpu.to_numpy(_buf(x), shape, strides, offset)
    np.testing.assert_array_equal(got, want)
