"""compact, to_numpy, ewise_setitem and scalar_setitem through every layout."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray.conformance._harness import (
    READ_LAYOUTS,
    WRITE_LAYOUTS,
    get,
    layout_of,
    put,
)


def _base(dtype, size):
    # Distinct values (mod the dtype's exact-integer range) so that a wrong
    # element shows up, not just a wrong count.
    return (np.arange(size) % 2_000_000 - 1_000_000).astype(dtype)


@pytest.mark.parametrize("layout", list(READ_LAYOUTS))
def test_compact(lamina_backend, lamina_dtype, layout):
    size, make = READ_LAYOUTS[layout]
    base = _base(lamina_dtype, size)
    view = make(base)
    shape, strides, offset = layout_of(base, view)
    out = lamina_backend.Array(view.size, lamina_dtype)
    lamina_backend.compact(put(lamina_backend, base), out, shape, strides, offset)
    np.testing.assert_array_equal(get(lamina_backend, out), view.reshape(-1))


@pytest.mark.parametrize("layout", list(READ_LAYOUTS))
def test_to_numpy(lamina_backend, lamina_dtype, layout):
    size, make = READ_LAYOUTS[layout]
    base = _base(lamina_dtype, size)
    view = make(base)
    shape, strides, offset = layout_of(base, view)
    got = lamina_backend.to_numpy(put(lamina_backend, base), shape, strides, offset)
    assert got.shape == view.shape and got.dtype == view.dtype
    np.testing.assert_array_equal(got, view)


@pytest.mark.parametrize("layout", list(WRITE_LAYOUTS))
def test_ewise_setitem(lamina_backend, lamina_dtype, layout):
    size, make = WRITE_LAYOUTS[layout]
    want = _base(lamina_dtype, size)
    view = make(want)
    shape, strides, offset = layout_of(want, view)
    values = (np.arange(view.size) % 1000 + 5_000_000).astype(lamina_dtype)
    out = put(lamina_backend, want)
    lamina_backend.ewise_setitem(put(lamina_backend, values), out, shape, strides, offset)
    view[...] = values.reshape(view.shape)
    np.testing.assert_array_equal(get(lamina_backend, out), want)


@pytest.mark.parametrize("layout", list(WRITE_LAYOUTS))
def test_scalar_setitem(lamina_backend, lamina_dtype, layout):
    size, make = WRITE_LAYOUTS[layout]
    want = _base(lamina_dtype, size)
    view = make(want)
    shape, strides, offset = layout_of(want, view)
    out = put(lamina_backend, want)
    lamina_backend.scalar_setitem(view.size, 42, out, shape, strides, offset)
    view[...] = 42
    np.testing.assert_array_equal(get(lamina_backend, out), want)


def test_compact_uses_only_first_elements_of_a_larger_out(lamina_backend, lamina_dtype):
    base = _base(lamina_dtype, 12)
    out = put(lamina_backend, np.full(20, 7).astype(lamina_dtype))
    lamina_backend.compact(put(lamina_backend, base), out, (4, 3), (1, 4), 0)
    want = np.concatenate([base.reshape(3, 4).T.reshape(-1), np.full(8, 7)])
    np.testing.assert_array_equal(get(lamina_backend, out), want.astype(lamina_dtype))


OUTSIDE = [
    ("past-the-end", (3, 4), (4, 1), 1),
    ("negative-reach", (3, 4), (-4, 1), 4),
    ("offset-too-large", (2,), (1,), 11),
    ("rank-mismatch", (3, 4), (4,), 0),
]


@pytest.mark.parametrize("case", OUTSIDE, ids=[c[0] for c in OUTSIDE])
@pytest.mark.parametrize("kernel", ["compact", "to_numpy", "ewise_setitem",
                                    "scalar_setitem"])
def test_view_outside_the_buffer_raises_value_error(lamina_backend, kernel, case):
    _, shape, strides, offset = case
    buf = put(lamina_backend, np.zeros(12, np.float32))
    other = put(lamina_backend, np.zeros(12, np.float32))
    args = {
        "compact": (buf, other, shape, strides, offset),
        "to_numpy": (buf, shape, strides, offset),
        "ewise_setitem": (other, buf, shape, strides, offset),
        "scalar_setitem": (12, 1.0, buf, shape, strides, offset),
    }[kernel]
    with pytest.raises(ValueError):
        getattr(lamina_backend, kernel)(*args)
