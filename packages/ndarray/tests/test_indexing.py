"""Advanced indexing of NDArray (integer arrays, masks, ints, slices) against numpy:
hypothesis-generated keys on random shapes, reads and writes; gather and scatter."""

from __future__ import annotations

import lamina.ndarray as nd
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@st.composite
def keys(draw, shape):
    """A key of leading ints, then slices, integer arrays (lists) and masks."""
    key: list = []
    dims = list(range(len(shape)))
    n_int = draw(st.integers(0, max(len(shape) - 1, 0)))
    for d in dims[:n_int]:
        key.append(draw(st.integers(-shape[d], shape[d] - 1)))
    rest = dims[n_int:]
    index_len = draw(st.integers(1, 3))
    d = 0
    while d < len(rest):
        n = shape[rest[d]]
        kind = draw(st.sampled_from(["slice", "array", "mask"]))
        if kind == "slice":
            start = draw(st.integers(-n, n))
            step = draw(st.sampled_from([1, 2, -1]))
            key.append(slice(start, None, step))
        elif kind == "array":
            key.append(draw(st.lists(st.integers(-n, n - 1), min_size=index_len,
                                     max_size=index_len)))
        else:
            key.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        d += 1
    return tuple(key)


def _numpy_key(key):
    return tuple(np.asarray(k) if isinstance(k, list) else k for k in key)


def _select(host: np.ndarray, key) -> tuple[np.ndarray, tuple]:
    """numpy's view of ``host`` after the key's leading ints, and the rest of the key:
    as PyTorch, ints select first (numpy would count them among the arrays)."""
    n = sum(isinstance(k, int) for k in key)
    return host[key[:n]], _numpy_key(key[n:])


def _broadcastable(key) -> bool:
    lens = {len(k) if isinstance(k, list) else int(k.sum()) for k in key
            if isinstance(k, (list, np.ndarray))}
    return len(lens - {1}) <= 1


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # device: a parameter
@given(shape=shapes, data=st.data())
def test_reads_and_writes_match_numpy(device, dtype, shape, data):
    if dtype not in nd.get_device(device).kernel_dtypes["ewise_where"]:
        pytest.skip(f"device {device} has no {dtype}")
    key = data.draw(keys(shape))
    if not _broadcastable(key):
        return
    rng = np.random.default_rng(0)
    host = (rng.standard_normal(shape) * 4).astype(dtype)
    a = nd.array(host, device=device)
    view, rest = _select(host, key)
    want = view[rest]
    got = a[key]
    assert got.shape == want.shape and got.dtype.name == dtype
    np.testing.assert_array_equal(got.numpy(), want)
    value = (rng.standard_normal(want.shape[-1:]) * 4).astype(dtype)
    expected = host.copy()
    view, rest = _select(expected, key)
    positions = _select(np.arange(host.size).reshape(shape), key)[0][rest]
    if len(np.unique(positions)) == positions.size:  # repeats: numpy's order is unspecified
        view[rest] = value
        a[key] = nd.array(value, device=device)
        np.testing.assert_array_equal(a.numpy(), expected)
    a[key] = 1
    view[rest] = 1
    np.testing.assert_array_equal(a.numpy(), expected)


def test_writes_through_a_view(device):
    host = np.zeros((4, 5), dtype=np.float32)
    a = nd.array(host, device=device)
    view = a[1:, ::2]
    view[[0, 2], [1, 1]] = 7.0
    host[1:, ::2][[0, 2], [1, 1]] = 7.0
    np.testing.assert_array_equal(a.numpy(), host)


def test_gather_scatter_and_index_put(device):
    rng = np.random.default_rng(1)
    host = rng.standard_normal((3, 4)).astype(np.float32)
    a = nd.array(host, device=device)
    index = rng.integers(0, 4, (3, 6))
    gathered = nd.gather(a, 1, nd.array(index, device=device))
    np.testing.assert_array_equal(gathered.numpy(), np.take_along_axis(host, index, 1))
    src = rng.standard_normal((3, 6)).astype(np.float32)
    added = nd.scatter(a, 1, nd.array(index, device=device), nd.array(src, device=device),
                       accumulate=True)
    want = host.copy()
    np.add.at(want, (np.arange(3)[:, None], index), src)
    np.testing.assert_allclose(added.numpy(), want, rtol=1e-6)
    put = nd.index_put(a, (nd.array([2, 0, 2], device=device),), 1.5)
    want = host.copy()
    want[[2, 0]] = 1.5
    np.testing.assert_array_equal(put.numpy(), want)


def test_errors_name_the_op_and_the_shapes():
    a = nd.zeros((3, 4), device="numpy")
    with pytest.raises(nd.DTypeError, match="setitem: index arrays must be integer"):
        a[[0.5]] = 1.0
    with pytest.raises(IndexError, match=r"getitem: the shape of the mask \(2,\) does not"):
        a[np.array([True, False]), 0]
    with pytest.raises(nd.ShapeError, match=r"gather: the index must have as many dims"):
        nd.gather(a, 0, nd.array([0], device="numpy"))
    with pytest.raises(nd.DTypeError, match="gather: the index must be int64, got float32"):
        nd.gather(a, 0, nd.array([[0.0]], device="numpy"))


def test_a_value_on_another_device_is_refused():
    others = [b.name for b in nd.list_backends() if b.status == "available" and b.name != "numpy"]
    if not others:
        pytest.skip("needs a second device")
    a = nd.zeros((3, 4), device="numpy")
    with pytest.raises(nd.DeviceError, match="setitem: the value is on"):
        a[[0]] = nd.ones(4, device=others[0])
    with pytest.raises(nd.DeviceError, match="getitem: an index is on"):
        a[nd.array([0], device=others[0]), 1]


def _reads_like_numpy(a, host, key):
    got = a[key]
    want = host[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("key", [[-1, 0], [[-2], [1]], (slice(None), [-1]), (slice(None), [-3, 2]),
                                 ([-1, 0], slice(None), [-1, -4])], ids=repr)
def test_negative_entries_of_an_index_read_from_the_end(device, key):
    host = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    _reads_like_numpy(nd.array(host, device=device), host, key)


def test_negative_entries_of_a_device_index_read_from_the_end(device):
    host = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    a = nd.array(host, device=device)
    np.testing.assert_array_equal(a[nd.array([-1, 0, -2], device=device)].numpy(),
                                  host[[-1, 0, -2]])
    np.testing.assert_array_equal(nd.wrap_index(nd.array([-3, -1, 0, 2], device=device), 3,
                                                a).numpy(), [0, 2, 0, 2])


@pytest.mark.parametrize("key", [[2], [-3], (slice(None), [0, -4])], ids=repr)
def test_an_index_out_of_range_still_raises_with_the_index_and_the_size(device, key):
    a = nd.zeros((2, 3), device=device)
    bad = key[-1][-1] if isinstance(key, tuple) else key[0]
    with pytest.raises(IndexError, match=rf"index {bad} is out of (bounds|range).*size"):
        a[key]
    for index in ([5], [-3]):  # a device index: the kernel reports the entry as given
        with pytest.raises(IndexError, match=rf"index {index[0]}\b.*out of .*size 2"):
            a[nd.array(index, device=device)]


BOOL_KEYS = [  # (key, the result's shape for an array of shape (2, 3, 4)), as PyTorch
    (True, (1, 2, 3, 4)), (False, (0, 2, 3, 4)), ((slice(None), True), (2, 1, 3, 4)),
    ((Ellipsis, False), (2, 3, 4, 0)), ((True, 0), (1, 3, 4)), ((0, True, 1), (1, 4)),
    ((True, [0, 1]), (2, 3, 4)), ((slice(None), [0, 1], True), (2, 2, 4)),
    ((True, slice(None), [0, 1]), (2, 2, 4)), ((True, None, True), (1, 1, 2, 3, 4)),
    (np.bool_(True), (1, 2, 3, 4)), (np.array(False), (0, 2, 3, 4)),
]


@pytest.mark.parametrize(("key", "shape"), BOOL_KEYS, ids=repr)
def test_a_bool_index_is_a_0d_mask_not_an_int(device, key, shape):
    host = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    a = nd.array(host, device=device)
    got = a[key]
    assert got.shape == shape
    np.testing.assert_array_equal(got.numpy(), host[key])


def test_a_bool_index_writes_all_or_nothing(device):
    host = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    a = nd.array(host, device=device)
    a[False] = -1.0
    np.testing.assert_array_equal(a.numpy(), host)  # x[0] stays as it was
    a[0, True] = nd.zeros((1, 3, 4), device=device)
    a[(slice(None), False)] = 5.0
    want = host.copy()
    want[0] = 0.0
    np.testing.assert_array_equal(a.numpy(), want)
    a[True] = 1.0
    np.testing.assert_array_equal(a.numpy(), np.ones_like(host))
