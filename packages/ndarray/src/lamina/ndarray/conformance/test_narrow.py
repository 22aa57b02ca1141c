"""The 16-bit floats of interface v2.2: storage, strided copies and conversion.

A backend that lists ``float16`` or ``bfloat16`` must provide the
``NARROW_KERNELS`` for it; every other kernel runs on float32 copies unless
the backend names the dtype in ``kernel_dtypes``. Conversion from float32
rounds to nearest, ties to even, bit for bit as the numpy reference backend
does; conversion to float32 is exact. Values are written and read through
float32 buffers, as NDArray does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lamina.ndarray.conformance._harness import READ_LAYOUTS, WRITE_LAYOUTS, get, layout_of, put


def _to_narrow(backend: Any, values: np.ndarray, dtype: str) -> Any:
    """A new ``dtype`` buffer holding float32 ``values`` rounded (ewise_cast)."""
    buf = backend.Array(values.size, dtype)
    backend.ewise_cast(put(backend, values.astype(np.float32)), buf)
    return buf


def _read(backend: Any, buf: Any) -> np.ndarray:
    """A narrow buffer's values, widened to float32 (ewise_cast)."""
    wide = backend.Array(buf.size, "float32")
    if buf.size:
        backend.ewise_cast(buf, wide)
    return get(backend, wide)


def _bits(x: np.ndarray) -> np.ndarray:
    """float32 bits, with every NaN the same (NaN payloads may differ)."""
    bits = x.astype(np.float32).view(np.uint32).copy()
    bits[np.isnan(x)] = 0x7FC00000
    return bits


def _hard_values() -> np.ndarray:
    """Ties and near-ties at both widths, subnormals, the ends of both ranges."""
    rng = np.random.default_rng(0)
    random = rng.standard_normal(4096).astype(np.float32) * np.float32(
        10.0) ** rng.integers(-8, 8, 4096).astype(np.float32)
    raw = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    # float32 bit patterns whose low 16 bits are exactly half (bfloat16 ties) or
    # whose low 13 bits are (float16 ties in its normal range)
    ties = np.concatenate([(raw & 0xFFFF0000) | 0x8000, (raw & 0xFFFFE000) | 0x1000]
                          ).view(np.float32)
    special = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 65519.0, 65520.0, 1e5, 6.1e-5, 6e-8,
                        3e-8, 1e-45, 3.39e38, 3.4028235e38, np.inf, -np.inf, np.nan],
                       np.float32)
    return np.concatenate([random, ties[np.isfinite(ties)], special])


@pytest.mark.parametrize("size", [0, 1, 7, 1000])
def test_array_and_empty_hold_the_dtype(lamina_backend, lamina_narrow, size):
    buf = lamina_backend.Array(size, lamina_narrow)
    assert (buf.size, buf.dtype) == (size, lamina_narrow)
    if hasattr(lamina_backend, "empty"):
        index = list(lamina_backend.dtypes).index(lamina_narrow)
        assert (lamina_backend.empty(size, index).dtype) == lamina_narrow


def test_cast_from_float32_rounds_to_nearest_even(lamina_backend, lamina_reference, lamina_narrow):
    values = _hard_values()
    got = _read(lamina_backend, _to_narrow(lamina_backend, values, lamina_narrow))
    want = _read(lamina_reference, _to_narrow(lamina_reference, values, lamina_narrow))
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_cast_to_float32_is_exact_and_round_trips(lamina_backend, lamina_narrow):
    values = _hard_values()
    once = _read(lamina_backend, _to_narrow(lamina_backend, values, lamina_narrow))
    twice = _read(lamina_backend, _to_narrow(lamina_backend, once, lamina_narrow))
    np.testing.assert_array_equal(_bits(once), _bits(twice))


@pytest.mark.parametrize("layout", list(READ_LAYOUTS))
def test_compact(lamina_backend, lamina_narrow, layout):
    size, make = READ_LAYOUTS[layout]
    base = (np.arange(size) % 256 - 128).astype(np.float32)  # exact in both dtypes
    view = make(base)
    shape, strides, offset = layout_of(base, view)
    out = lamina_backend.Array(view.size, lamina_narrow)
    lamina_backend.compact(_to_narrow(lamina_backend, base, lamina_narrow), out, shape, strides,
                           offset)
    np.testing.assert_array_equal(_read(lamina_backend, out), view.reshape(-1))


@pytest.mark.parametrize("layout", list(WRITE_LAYOUTS))
def test_ewise_setitem(lamina_backend, lamina_narrow, layout):
    size, make = WRITE_LAYOUTS[layout]
    base = np.zeros(size, np.float32)
    view = make(base)
    shape, strides, offset = layout_of(base, view)
    values = (np.arange(view.size) % 255 + 1).astype(np.float32)
    target = _to_narrow(lamina_backend, base, lamina_narrow)
    lamina_backend.ewise_setitem(_to_narrow(lamina_backend, values, lamina_narrow), target, shape,
                                 strides, offset)
    view[...] = values.reshape(view.shape)
    np.testing.assert_array_equal(_read(lamina_backend, target), base)
