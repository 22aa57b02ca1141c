"""Item assignment, index_put_, scatter_ and scatter_add_ on Tensors against PyTorch:
values, gradients to the value and to the surviving input, and the in-place rules."""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES

KEYS = [
    (1,), (slice(None), 2), (slice(1, None, 2), slice(None, 2)), (Ellipsis, 0), (None, 0),
    ([0, 2],), (slice(None), [3, 0, 3]), ([0, 2], [1, 1]), ([[0], [2]], [1, 3]),
    (1, [0, 2]), ([2, 0], slice(None), [1, 0]), (np.array([True, False, True]),), ([],),
    (Ellipsis, None, [0, -1]), ([[0, 1], [1, 0]],), (0, [[0], [2]], [1, 1]),
    (np.array([True, False, True]), 1), (slice(None), np.array([False, True, True, False])),
]


def _torch_key(key):
    return tuple(torch.from_numpy(k) if isinstance(k, np.ndarray)
                 else torch.tensor(k, dtype=torch.int64) if isinstance(k, list) else k
                 for k in key)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("value_shape", ["full", "row", "scalar", "number"])
def test_setitem_values_and_gradients_match_torch(device, key, value_shape):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((3, 4, 2))
    x, t = ag.tensor(x0, device=device, requires_grad=True), torch.tensor(x0, requires_grad=True)
    shape = tuple(t[_torch_key(key)].shape)
    vshape = {"full": shape, "row": shape[-1:], "scalar": (), "number": None}[value_shape]
    y, u = x * 1.0, t * 1.0  # assignment into a non-leaf, as a user would
    if vshape is None:
        y[key] = 2.5
        u[_torch_key(key)] = 2.5
        v = vt = None
    else:
        v0 = rng.standard_normal(vshape)
        v = ag.tensor(v0, device=device, requires_grad=True)
        vt = torch.tensor(v0, requires_grad=True)
        y[key] = v
        u[_torch_key(key)] = vt
    np.testing.assert_array_equal(y.detach().numpy(), u.detach().numpy())
    w = rng.standard_normal(x0.shape)
    (y * ag.tensor(w, device=device)).sum().backward()
    (u * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    if v is not None:
        assert v.grad.shape == v.shape
        np.testing.assert_allclose(v.grad.numpy(), vt.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_with_a_bool_tensor_mask(device):
    if "bool" not in nd.get_device(device).kernel_dtypes["ewise_gt"]:
        pytest.skip(f"device {device} has no bool comparisons")
    x0 = np.arange(12.0).reshape(3, 4) - 5
    x, t = ag.tensor(x0, device=device), torch.tensor(x0)
    x[x > 2] = 0.0
    t[t > 2] = 0.0
    assert x.tolist() == t.tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_index_put_accumulates_repeats_and_scatter_in_place(device):
    x0 = np.zeros((4, 3))
    x, t = ag.tensor(x0, device=device), torch.tensor(x0)
    i = [0, 2, 0, 0]
    v0 = np.arange(12.0).reshape(4, 3)
    x.index_put_((ag.tensor(i, device=device),), ag.tensor(v0, device=device), accumulate=True)
    t.index_put_((torch.tensor(i),), torch.tensor(v0), accumulate=True)
    assert x.tolist() == t.tolist()
    idx = np.array([[2, 0, 1]])
    x.scatter_(0, ag.tensor(idx, device=device), 9.0)
    t.scatter_(0, torch.tensor(idx), 9.0)
    x.scatter_add_(1, ag.tensor(idx, device=device), ag.tensor(v0[:1], device=device))
    t.scatter_add_(1, torch.tensor(idx), torch.tensor(v0[:1]))
    assert x.tolist() == t.tolist()
    assert x._version == 3


@pytest.mark.parametrize("device", DEVICES)
def test_repeated_indices_keep_the_last_value(device):
    x = ag.zeros(5, device=device)
    x[[1, 3, 1]] = ag.tensor([1.0, 2.0, 3.0], device=device)
    t = torch.zeros(5)
    t[torch.tensor([1, 3, 1])] = torch.tensor([1.0, 2.0, 3.0])  # sequential on the CPU
    assert x.tolist() == t.tolist()


def test_integer_tensors_take_numbers_and_refuse_float_tensors():
    x = ag.tensor([1, 2, 3], device="numpy")
    x[0] = 7
    x[[1, 2]] = ag.tensor([8, 9], device="numpy")
    assert x.tolist() == [7, 8, 9] and x.dtype == ag.int64
    with pytest.raises(ag.DTypeError, match="setitem: cannot write float32 values into a int64"):
        x[0] = ag.tensor(1.5, device="numpy")


def test_setitem_on_a_leaf_that_requires_grad_raises_outside_no_grad():
    w = ag.zeros(3, requires_grad=True, device="numpy")
    with pytest.raises(RuntimeError, match="setitem: a leaf Variable that requires grad"):
        w[0] = 1.0
    with pytest.raises(RuntimeError, match="index_put_: a leaf Variable"):
        w.index_put_((ag.tensor([0], device="numpy"),), ag.ones(1, device="numpy"))
    with ag.no_grad():
        w[[0, 2]] = 5.0
    assert w.tolist() == [5.0, 0.0, 5.0] and w.grad_fn is None and w._version == 1


def test_setitem_bumps_the_version_a_saved_tensor_checks():
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True, device="numpy")
    y = x * 2
    z = y * y  # saves y
    y[1] = 0.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def _y_row_mul(x):
    y = x * 1
    y[0].mul_(2)
    return y


def _y_item_of_a_row(x):
    y = x * x
    y[0][1] = 3.0
    return y


def _a_sibling_view_made_before(x):
    y = x * 2
    row, col = y[0], y[:, 1]  # col overlaps the row written next
    row.mul_(x[1])
    return col * 1 + y.sum()


def _through_a_transpose(x):
    y = x * 1
    v = y.T
    v[1] = v[1] * 3 + v[0]
    return y


def _a_view_of_a_view(x):
    y = x * 1
    v = y[:, 1:]
    v[0] += x[1, :2]
    return y * v.sum()


def _through_a_reshape_with_an_index_array(x):
    y = x * 1
    r = y.reshape(3, 2)
    r[[2, 1], 0] = x[0, :2] ** 2
    return y + r.reshape(2, 3)


@pytest.mark.parametrize("fn", [_y_row_mul, _y_item_of_a_row, _a_sibling_view_made_before,
                                _through_a_transpose, _a_view_of_a_view,
                                _through_a_reshape_with_an_index_array], ids=lambda f: f.__name__)
def test_in_place_through_a_view_rewrites_the_base_history_as_pytorch(fn):
    x0 = np.arange(6.0).reshape(2, 3) + 1
    x, t = ag.tensor(x0, requires_grad=True, device="numpy"), torch.tensor(x0, requires_grad=True)
    got, want = fn(x), fn(t)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    w = np.random.default_rng(0).standard_normal(tuple(want.shape))
    (got * ag.tensor(w, device="numpy")).sum().backward()
    (want * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_a_base_without_grad_gets_history_from_a_view_write():
    y, yt = ag.zeros(2, 3, device="numpy"), torch.zeros(2, 3)
    w, wt = (ag.ones(3, requires_grad=True, device="numpy"),
             torch.ones(3, requires_grad=True))
    tail, tail_t = y[0, 1:], yt[0, 1:]  # made before the write: refreshed when used
    y[0].copy_(w * 2)
    yt[0].copy_(wt * 2)
    assert y.requires_grad and tail.requires_grad and tail_t.requires_grad
    (tail * ag.tensor([1.0, 5.0], device="numpy")).sum().backward()
    (tail_t * torch.tensor([1.0, 5.0])).sum().backward()
    assert w.grad.tolist() == wt.grad.tolist() == [0.0, 2.0, 10.0]


def test_backward_from_a_view_made_before_a_write_sees_the_write():
    x, t = (ag.tensor([1.0, 2.0, 3.0], requires_grad=True, device="numpy"),
            torch.tensor([1.0, 2.0, 3.0], requires_grad=True))
    for z, ones in ((x, ag.ones(2, device="numpy")), (t, torch.ones(2))):
        y = z * 1
        tail = y[1:]
        y[:2].mul_(10)
        tail.backward(ones)
    assert x.grad.tolist() == t.grad.tolist() == [0.0, 10.0, 1.0]


def test_view_writes_keep_pytorchs_errors():
    x = ag.ones(2, 3, requires_grad=True, device="numpy")
    with pytest.raises(RuntimeError, match="setitem: a view of a leaf Variable that requires"):
        x[0][1] = 3.0
    y = x.exp()  # saves its output
    y[0, 0] = 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    z = x * 1
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        z[0:1].expand(3, 3).mul_(2)
    with ag.no_grad():
        x[0][1] = 3.0  # writes through to the leaf
    assert x.tolist() == [[1.0, 3.0, 1.0], [1.0, 1.0, 1.0]] and x.is_leaf


def test_setitem_errors():
    x = ag.zeros(3, 4, device="numpy")
    with pytest.raises(nd.ShapeError, match=r"setitem: a value of shape \(3,\) cannot be "
                                            r"broadcast to the indexing result's shape \(2, 4\)"):
        x[[0, 1]] = ag.ones(3, device="numpy")
    with pytest.raises(IndexError, match="setitem: index 3 is out of bounds for dim 0"):
        x[[3]] = 1.0
    with pytest.raises(IndexError, match=r"setitem: shape mismatch: index arrays of shapes"):
        x[[0, 1], [0, 1, 2]] = 1.0
    with pytest.raises(ag.DTypeError, match="index_put: values are float64, the tensor float32"):
        x.index_put_((ag.tensor([0], device="numpy"),), ag.ones(4, dtype="float64",
                                                                 device="numpy"))
    with pytest.raises(TypeError, match="index_put: indices must be a tuple"):
        x.index_put(ag.tensor([0], device="numpy"), ag.ones(4, device="numpy"))
    with pytest.raises(ag.DTypeError, match="scatter: the source is float64"):
        x.scatter(0, ag.tensor([[0]], device="numpy"), ag.ones(1, 1, dtype="float64",
                                                              device="numpy"))
