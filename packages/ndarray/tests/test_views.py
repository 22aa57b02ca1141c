"""Views never copy and match numpy's layouts (hypothesis properties)."""

import lamina.ndarray as nd
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)


def _np_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_permute_matches_numpy_and_shares_buffer(shape, data):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    axes = data.draw(st.permutations(range(len(shape))))
    a = nd.array(x, device="numpy")
    v = a.permute(tuple(axes))
    assert v.buffer is a.buffer
    assert v.strides == _np_strides(x.transpose(axes))
    np.testing.assert_array_equal(v.numpy(), x.transpose(axes))
    np.testing.assert_array_equal(v.permute(tuple(np.argsort(axes))).numpy(), x)


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_slicing_with_steps_matches_numpy(shape, data):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    key = tuple(
        slice(data.draw(st.integers(-n - 1, n + 1)), data.draw(st.integers(-n - 1, n + 1)),
              data.draw(st.sampled_from([1, 2, 3, -1, -2])))
        for n in shape)
    a = nd.array(x, device="numpy")
    v = a[key]
    assert v.buffer is a.buffer
    assert v.shape == x[key].shape
    np.testing.assert_array_equal(v.numpy(), x[key])
    if x[key].size:
        assert v.strides == _np_strides(x[key])


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_reshape_round_trip_and_view_when_possible(shape, data):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    a = nd.array(x, device="numpy")
    flat = a.reshape(-1)
    assert flat.buffer is a.buffer
    np.testing.assert_array_equal(flat.reshape(shape).numpy(), x)
    t = a.T
    r = t.reshape(-1)
    np.testing.assert_array_equal(r.numpy(), x.T.reshape(-1))
    np_view = x.T.view()
    try:
        np_view.shape = (-1,)
        assert r.buffer is a.buffer  # numpy could view it, so must we
    except AttributeError:
        pass


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
def test_broadcast_binary_ops_match_numpy(shapes):
    (s1, s2), result = shapes.input_shapes, shapes.result_shape
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(s1).astype(np.float32), rng.standard_normal(s2).astype(
        np.float32)
    a, b = nd.array(x, device="numpy"), nd.array(y, device="numpy")
    out = a * b + a
    assert out.shape == result
    np.testing.assert_allclose(out.numpy(), x * y + x, rtol=1e-6)
    view = a.broadcast_to(result)
    assert view.buffer is a.buffer
    assert all(s == 0 for n, s, m in zip(result[::-1], view.strides[::-1], s1[::-1])
               if m == 1 and n != 1)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, data=st.data())
def test_non_contiguous_inputs_give_compact_results(shape, data):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    axes = tuple(data.draw(st.permutations(range(len(shape)))))
    a = nd.array(x, device="numpy").permute(axes).flip(0)
    ref = x.transpose(axes)[::-1]
    np.testing.assert_allclose(a.exp().numpy(), np.exp(ref), rtol=1e-6)
    np.testing.assert_allclose(a.compact().numpy(), ref)
    assert a.compact().is_compact()


def test_views_on_every_device(device):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = nd.array(x, device=device)
    np.testing.assert_array_equal(a[1, ::-2, None, 1:].numpy(), x[1, ::-2, None, 1:])
    np.testing.assert_array_equal(a.flip((0, 2)).numpy(), x[::-1, :, ::-1])
    np.testing.assert_array_equal(a.expand_dims(1).squeeze(1).numpy(), x)
    np.testing.assert_array_equal(a[..., 0].numpy(), x[..., 0])
    np.testing.assert_array_equal(a.transpose(0, 2).numpy(), x.swapaxes(0, 2))


def test_setitem_through_strided_views(device):
    x = np.zeros((4, 5), dtype=np.float32)
    a = nd.array(x, device=device)
    a[1:, ::2] = nd.array(np.ones((3, 3), dtype=np.float32), device=device)
    x[1:, ::2] = 1
    a[0] = 7.0
    x[0] = 7
    a[:, -1] = nd.array(np.arange(4, dtype=np.float32), device=device)
    x[:, -1] = np.arange(4)
    a.T[::-1, 2] = 3.0
    x.T[::-1, 2] = 3
    np.testing.assert_array_equal(a.numpy(), x)


def test_setitem_with_overlapping_source(device):
    x = np.arange(10, dtype=np.float32)
    a = nd.array(x, device=device)
    a[1:] = a[:-1]
    x[1:] = x[:-1].copy()
    np.testing.assert_array_equal(a.numpy(), x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_dtypes_round_trip(device, dtype):
    if dtype not in nd.get_device(device).dtypes:
        pytest.skip(f"{device} does not list {dtype}")
    x = (np.arange(12) - 3).astype(dtype).reshape(3, 4)
    a = nd.array(x, device=device)
    assert a.dtype == dtype
    np.testing.assert_array_equal(a.T.numpy(), x.T)
    np.testing.assert_array_equal((a == a).numpy(), np.ones_like(x))
    assert a.astype("float32").dtype == nd.float32
