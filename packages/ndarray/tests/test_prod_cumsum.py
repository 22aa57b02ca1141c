"""prod and cumsum against numpy (values) and PyTorch (result dtypes), on every device.

Both need an optional kernel of interface v1.1 (``reduce_prod``,
``cumsum_last``): a device whose backend lacks it for a dtype skips here, and
raises a DTypeError naming the op, the dtype and the device (last tests).
"""

from __future__ import annotations

import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from lamina.ndarray._numpy_backend import backend as numpy_backend
from lamina.ndarray._registry import Device

DTYPES = ("bool", "int64", "float32", "float64")
RNG = np.random.default_rng(7)
AXES = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2), ()]


def _need(device: str, kernel: str, dtype: str) -> None:
    """Skip unless ``device`` lists ``dtype`` and its ``kernel`` takes it (bool is
    computed on an int64 copy)."""
    dev = nd.get_device(device)
    if dtype not in dev.dtypes:
        pytest.skip(f"device {device} lists no {dtype}")
    computed = "int64" if dtype == "bool" else dtype
    if computed not in dev.kernel_dtypes[kernel]:
        pytest.skip(f"device {device} has no {kernel} for {computed}")


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Products of these stay well inside every dtype's range: floats in
    +-[0.7, 1.4], integers in [-2, 2] (zeros included)."""
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype == "int64":
        return RNG.integers(-2, 3, shape).astype(np.int64)
    return (RNG.uniform(0.7, 1.4, shape) * RNG.choice([-1.0, 1.0], shape)).astype(dtype)


def _close(got: nd.NDArray, want: np.ndarray, dtype: str) -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    rtol = {"float32": 1e-5, "float64": 1e-12}.get(dtype, 0)
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_prod_matches_numpy(device, dtype, axis, keepdims):
    _need(device, "reduce_prod", dtype)
    x = _values(dtype, (3, 4, 5))
    got = nd.array(x, device=device).prod(axis=axis, keepdims=keepdims)
    want = np.prod(x, axis=axis, keepdims=keepdims)  # axis=() reduces nothing, as numpy
    assert got.dtype == ("int64" if dtype == "bool" else dtype)
    _close(got, want.astype(got.dtype.np), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_dtype_as_pytorch(device, dtype, axis):
    _need(device, "reduce_prod", dtype)
    x = _values(dtype, (3, 4))
    t = torch.from_numpy(x.copy())
    want = t.prod() if axis is None else t.prod(dim=axis)
    got = nd.array(x, device=device).prod(axis=axis)
    assert got.dtype == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_prod_of_views_and_empty_axes(device, dtype):
    _need(device, "reduce_prod", dtype)
    x = _values(dtype, (6, 8))
    view = nd.array(x, device=device).T[::-1, 1::2]
    _close(view.prod(0), x.T[::-1, 1::2].prod(0), dtype)
    _close(view.prod(1, keepdims=True), x.T[::-1, 1::2].prod(1, keepdims=True), dtype)
    empty = nd.zeros((0, 3), dtype=dtype, device=device)
    _close(empty.prod(0), np.ones(3, dtype), dtype)  # the empty product is 1
    _close(empty.prod(1), np.ones(0, dtype), dtype)
    _close(empty.prod(), np.array(1, dtype), dtype)
    scalar = nd.array(np.array(-3, dtype), device=device)
    _close(scalar.prod(), np.array(-3, dtype), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("base,target,axis", [
    ((3, 1), (3, 5), 1), ((3, 1), (3, 5), 0), ((1, 4), (6, 4), None),
    ((2, 1, 3), (2, 5, 3), (1, 2)), ((4,), (2, 3, 4), (0, 2))], ids=str)
def test_prod_of_a_broadcast_view_matches_numpy(device, dtype, base, target, axis):
    # a repeated value multiplies like a power of itself, without a copy of the broadcast
    _need(device, "reduce_prod", dtype)
    x = _values(dtype, base)
    got = nd.array(x, device=device).broadcast_to(target).prod(axis=axis)
    _close(got, np.broadcast_to(x, target).prod(axis=axis), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_cumsum_matches_numpy_and_pytorch(device, dtype, axis):
    _need(device, "cumsum_last", dtype)
    x = _values(dtype, (3, 4, 5))
    got = nd.array(x, device=device).cumsum(axis)
    want = torch.from_numpy(x.copy()).cumsum(axis)
    assert got.dtype == str(want.dtype).removeprefix("torch.")
    _close(got, np.cumsum(x, axis=axis).astype(got.dtype.np), dtype)
    _close(nd.cumsum(nd.array(x, device=device), axis=axis), want.numpy(), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_cumsum_of_views_long_rows_and_empty_shapes(device, dtype):
    _need(device, "cumsum_last", dtype)
    x = _values(dtype, (6, 8))
    view = nd.array(x, device=device).T[::-1, 1::2]
    for axis in (0, 1):
        _close(view.cumsum(axis), np.cumsum(x.T[::-1, 1::2], axis=axis), dtype)
    bcast = nd.array(x[:1], device=device).broadcast_to((5, 8))
    _close(bcast.cumsum(0), np.cumsum(np.broadcast_to(x[:1], (5, 8)), axis=0), dtype)
    ones = nd.ones((2, 100_003), dtype=dtype, device=device)  # exact in every dtype
    np.testing.assert_array_equal(ones.cumsum(1).numpy()[:, -1], [100_003, 100_003])
    for shape, axis in [((0, 3), 0), ((0, 3), 1), ((2, 0), 1), ((2, 0, 4), 2)]:
        got = nd.zeros(shape, dtype=dtype, device=device).cumsum(axis)
        assert got.shape == shape and got.dtype == dtype
    scalar = nd.array(np.array(4, dtype), device=device)
    for axis in (0, -1):  # as PyTorch: a 0-d tensor has dim 0 (or -1)
        _close(scalar.cumsum(axis), np.array(4, dtype), dtype)


def test_cumsum_accumulates_left_to_right_in_float32():
    # 2**24 + 1 is not a float32: the running sum stays at 2**24 once there
    x = nd.array(np.array([2.0**24, 1.0, 1.0, 2.0], np.float32), device="numpy")
    assert x.cumsum(0).tolist() == [2.0**24, 2.0**24, 2.0**24, 2.0**24 + 2]


def test_cumsum_axis_errors():
    a = nd.zeros((2, 3), device="numpy")
    with pytest.raises(nd.ShapeError, match="^cumsum: axis 2 is out of range for an array "
                       "of 2 dims"):
        a.cumsum(2)
    with pytest.raises(TypeError, match="^cumsum: axis must be an int, got tuple"):
        a.cumsum((0, 1))
    with pytest.raises(nd.ShapeError, match="^cumsum: axis 1 is out of range"):
        nd.zeros((), device="numpy").cumsum(1)
    with pytest.raises(nd.ShapeError, match=r"^prod: repeated axis in \(0, -2\)"):
        a.prod(axis=(0, -2))


class _Lacking:
    """The numpy backend without the v1.1 kernels, declaring v1.1 (``minor=1``) or not."""

    name = "lacking"
    api_version = 1

    def __init__(self, minor: int) -> None:
        self.api_minor_version = minor

    def __getattr__(self, attr: str) -> object:
        if attr in ("reduce_prod", "cumsum_last"):
            raise AttributeError(attr)
        return getattr(numpy_backend, attr)


@pytest.mark.parametrize("minor", [0, 1])
def test_a_backend_without_the_kernels_loads_and_names_op_dtype_and_device(minor):
    dev = Device("lacking", 0, "lacking", _Lacking(minor))  # type: ignore[arg-type]
    assert dev.kernels.cumsum_last is None and "prod" not in dev.kernels.reduce
    a = nd.array([[1.0, 2.0], [3.0, 4.0]], device=dev)
    assert a.sum().item() == 10.0  # the rest of the device works
    for fn, op, kernel in [(lambda: a.prod(axis=0), "prod", "reduce_prod"),
                           (lambda: a.cumsum(1), "cumsum", "cumsum_last")]:
        with pytest.raises(nd.DTypeError, match=f"^{op}: device lacking has no {kernel} "
                           f"kernel for float32 .its backend does not provide the optional "
                           f"{kernel}.; use another device$"):
            fn()
    with pytest.raises(nd.DTypeError, match="^prod: device lacking has no reduce_prod kernel "
                       "for int64"):
        (a > 1).prod()  # bool reaches the kernel as int64
