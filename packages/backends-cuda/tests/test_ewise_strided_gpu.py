"""ewise_strided_OP against numpy on a GPU (marker ``cuda``).

numpy builds the views (broadcast, permuted, flipped, sliced), so the layouts
and the expected values are its own. Each result is also compared bit for bit
with the compact ``ewise_OP`` on copies of the views: the two kernels share
their op functors. The cases cross the kernel's paths: both operands compact
(the vectorised loop), at most 8 dims after coalescing (the strided kernel),
and more (operands compacted into scratch buffers first, in steps when one
view alone keeps more than 8 dims).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import FLOATS, TOL, cuda, get, put

pytestmark = pytest.mark.cuda

NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
             "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
             "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal}
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
interface = pytest.importorskip("lamina.ndarray._interface")
BINARY_OPS = interface.BINARY_OPS + interface.OPTIONAL_BINARY_OPS  # all have ewise_strided_OP

# case: (base size of a, view of a, base size of b, view of b)
CASES = {
    "compact": (1027, lambda a: a, 1027, lambda b: b),
    "channel broadcast": (4, lambda a: np.broadcast_to(a[None, :, None, None], (3, 4, 5, 6)),
                          360, lambda b: b.reshape(3, 4, 5, 6)),
    "permuted": (120, lambda a: a.reshape(4, 5, 6).transpose(2, 0, 1),
                 120, lambda b: b.reshape(6, 4, 5)),
    "negative strides": (60, lambda a: a.reshape(6, 10)[::-1, ::-2],
                         60, lambda b: b.reshape(6, 10)[:, 7:2:-1]),
    "offset slice": (96, lambda a: a.reshape(8, 12)[2:7, 3:9],
                     200, lambda b: b[13:].reshape(11, 17)[1:6, 1::3]),
    "outer product": (5, lambda a: np.broadcast_to(a[:, None], (5, 7)),
                      7, lambda b: np.broadcast_to(b, (5, 7))),
    "scalar": (3, lambda a: a[1:2].reshape(()), 3, lambda b: b[2:3].reshape(())),
    "zero-size": (6, lambda a: a.reshape(2, 3)[:, :0], 6, lambda b: b.reshape(2, 3)[:, :0]),
    "large": (1031, lambda a: np.broadcast_to(a, (1031, 1031)),  # several grid-stride rounds
              1031 * 1031, lambda b: b.reshape(1031, 1031).T),
    "rank 9": (512, lambda a: a.reshape((2,) * 9).transpose(8, 0, 7, 1, 6, 2, 5, 3, 4),
               512, lambda b: b.reshape((2,) * 9)),
    "rank 10 broadcast": (32, lambda a: np.broadcast_to(a.reshape((2, 1) * 5), (2,) * 10),
                          1024, lambda b: b.reshape((2,) * 10)[::-1]),
}


def layout(base: np.ndarray, view: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(shape, strides, offset) in elements of a view of the 1-D base."""
    item = base.itemsize
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return view.shape, tuple(s // item for s in view.strides), start // item


def operands(op: str, case: str, dtype: str) -> tuple[np.ndarray, ...]:
    """Bases and views of one case, with values that suit op."""
    size_a, view_a, size_b, view_b = CASES[case]
    rng = np.random.default_rng(len(case))
    if op in COMPARISONS or dtype == "int64":  # small integers: many equal pairs
        base_a = rng.integers(-2, 3, size_a).astype(dtype)
        base_b = rng.integers(-2, 3, size_b).astype(dtype)
    else:
        base_a = rng.uniform(0.5 if op == "power" else -3, 3, size_a).astype(dtype)
        base_b = rng.uniform(0.5, 2, size_b).astype(dtype) * (-1 if op == "div" else 1)
        if op in ("maximum", "minimum") and size_a > 4:
            base_a[::5] = np.nan
    return base_a, base_b, view_a(base_a), view_b(base_b)


def run_strided(op: str, base_a: np.ndarray, base_b: np.ndarray, va: np.ndarray,
                vb: np.ndarray, extra: int = 3) -> np.ndarray:
    """Runs ewise_strided_OP into an out of extra NaNs more than needed; returns all of it."""
    shape, sa, oa = layout(base_a, va)
    _, sb, ob = layout(base_b, vb)
    out = put(cuda, np.full(va.size + extra, np.nan if base_a.dtype.kind == "f" else 7,
                            base_a.dtype))
    kernel = getattr(cuda, f"ewise_strided_{op}")
    kernel(put(cuda, base_a), put(cuda, base_b), out, shape, sa, oa, sb, ob)
    return get(cuda, out)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("op", sorted(NUMPY_OPS))
def test_ewise_strided(op: str, case: str, dtype: str) -> None:
    base_a, base_b, va, vb = operands(op, case, dtype)
    n = va.size
    got = run_strided(op, base_a, base_b, va, vb)
    with np.errstate(all="ignore"):
        want = NUMPY_OPS[op](va, vb).astype(dtype).reshape(-1)
    np.testing.assert_allclose(got[:n], want, **TOL[dtype],
                               err_msg=f"ewise_strided_{op} ({case}) differs from numpy")
    assert np.isnan(got[n:]).all(), "elements past prod(shape) were written"
    if n:  # exactly what ewise_OP computes on compact copies
        same = cuda.Array(n, dtype)
        getattr(cuda, f"ewise_{op}")(put(cuda, va), put(cuda, vb), same)
        np.testing.assert_array_equal(got[:n], get(cuda, same))


@pytest.mark.parametrize("case", ["channel broadcast", "negative strides", "rank 9"])
@pytest.mark.parametrize("op", COMPARISONS)
def test_ewise_strided_compares_int64(op: str, case: str) -> None:
    base_a, base_b, va, vb = operands(op, case, "int64")
    got = run_strided(op, base_a, base_b, va, vb)
    np.testing.assert_array_equal(got[:va.size], NUMPY_OPS[op](va, vb).astype(np.int64).ravel())
    np.testing.assert_array_equal(got[va.size:], np.full(3, 7))


def test_ewise_strided_errors() -> None:
    a = put(cuda, np.arange(12, dtype=np.float32))
    b = put(cuda, np.arange(12, dtype=np.float32))
    out = put(cuda, np.full(12, 5, np.float32))
    good = ((3, 4), (4, 1), 0, (4, 1), 0)  # shape, a_strides, a_offset, b_strides, b_offset

    def call(*layout: Any, op: str = "add", a: Any = a, b: Any = b, out: Any = out) -> None:
        getattr(cuda, f"ewise_strided_{op}")(a, b, out, *layout)

    name = "ewise_strided_add"
    with pytest.raises(ValueError, match=rf"{name}: a view .* elements 1\.\.12, outside"):
        call((3, 4), (4, 1), 1, (4, 1), 0)  # one past the end
    with pytest.raises(ValueError, match=rf"{name}: b view .* elements -1\.\.10, outside"):
        call((3, 4), (4, 1), 0, (-4, 1), 7)  # before the start
    with pytest.raises(ValueError, match="ewise_strided_add: b view .* past int64"):
        call((3, 4), (4, 1), 0, (2**62, 1), 2**62)
    with pytest.raises(ValueError, match="ewise_strided_add: .* differ in length"):
        call((3, 4), (4, 1, 1), 0, (4, 1), 0)
    with pytest.raises(ValueError, match="ewise_strided_add: .* differ in length"):
        call((3, 4), (4, 1), 0, (1,), 0)
    with pytest.raises(ValueError, match="ewise_strided_add: negative dimension"):
        call((3, -4), (4, 1), 0, (4, 1), 0)
    with pytest.raises(ValueError, match="ewise_strided_add: out has 11 elements"):
        call(*good, out=cuda.Array(11, "float32"))
    with pytest.raises(TypeError, match="ewise_strided_add: dtypes differ"):
        call(*good, b=cuda.Array(12, "float64"))
    i64 = cuda.Array(12, "int64")
    with pytest.raises(TypeError, match="ewise_strided_div: dtype int64 is not supported"):
        call(*good, op="div", a=i64, b=i64, out=cuda.Array(12, "int64"))
    # validation happens before anything is queued: out is untouched
    np.testing.assert_array_equal(get(cuda, out), np.full(12, 5, np.float32))
    # a zero-size shape reads nothing, so its views are not bounds-checked
    call((3, 0, 4), (1, 1, 1), 10**15, (0, 0, 0), -5)
    np.testing.assert_array_equal(get(cuda, out), np.full(12, 5, np.float32))
    if cuda.device_count() > 1:
        with pytest.raises(ValueError, match=f"{name}: operands are on different devices"):
            call(*good, b=cuda.Array(12, "float32", 1))


@pytest.mark.parametrize("op", BINARY_OPS)
def test_each_op_has_its_own_strided_kernel(op: str) -> None:
    # Interface v2: one kernel per op, no op name passed in; its errors name it.
    f32, f64 = cuda.Array(4, "float32"), cuda.Array(4, "float64")
    with pytest.raises(TypeError, match=f"^ewise_strided_{op}: dtypes differ"):
        getattr(cuda, f"ewise_strided_{op}")(f32, f64, f32, (4,), (1,), 0, (1,), 0)

