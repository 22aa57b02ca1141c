"""copy.copy, copy.deepcopy and pickle of Tensors (and their NDArrays), on every device.

PyTorch's rules: a deepcopy is a leaf with its own copy of the values, the
same dtype, device and requires_grad, and a copy of ``.grad``; only leaves
can be deep-copied. Pickling keeps the values and requires_grad (not the
graph or ``.grad``): any tensor unpickles as a leaf. ``copy.copy`` shares the
storage.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES


def _round_trip(x: Any) -> Any:
    return pickle.loads(pickle.dumps(x))


COPIES = {"deepcopy": copy.deepcopy, "pickle": _round_trip}

VALUES = {
    "float32": [[1.5, -2.0, 3.25], [0.0, 4.0, -0.5]],
    "float64": [[1.5, -2.0, 3.25], [0.0, 4.0, -0.5]],
    "int64": [[3, -4, 2**40], [0, 1, -7]],
    "bool": [[True, False, True], [False, False, True]],
}


def _same_tensor(ours: Any, original: Any) -> None:
    assert type(ours) is type(original)
    assert ours.device is original.device and ours.dtype is original.dtype
    assert ours.shape == original.shape
    np.testing.assert_array_equal(ours.detach().numpy(), original.detach().numpy())
    assert ours._data.buffer is not original._data.buffer  # its own storage


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", sorted(VALUES))
@pytest.mark.parametrize("how", sorted(COPIES))
def test_copies_keep_values_dtype_and_device(how: str, dtype: str, device: str) -> None:
    t = ag.tensor(VALUES[dtype], dtype=dtype, device=device)
    out = COPIES[how](t)
    _same_tensor(out, t)
    assert out.is_leaf and not out.requires_grad and out._version == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("how", sorted(COPIES))
def test_copies_of_views_hold_only_the_viewed_values(how: str, device: str) -> None:
    base = ag.tensor(VALUES["float32"], device=device)
    view = base.T[1:]  # strided, offset
    out = COPIES[how](view)
    _same_tensor(out, view)
    assert out._data.is_compact() and out._base is None
    base.mul_(0)
    assert out.abs().sum().item() > 0  # not a view of base any more


@pytest.mark.parametrize("device", DEVICES)
def test_deepcopy_keeps_requires_grad_and_copies_grad_like_torch(device: str) -> None:
    t = ag.tensor([1.0, -2.0], requires_grad=True, device=device)
    tt = torch.tensor([1.0, -2.0], requires_grad=True)
    (t * t).sum().backward()
    (tt * tt).sum().backward()
    out, ref = copy.deepcopy(t), copy.deepcopy(tt)
    assert out.requires_grad == ref.requires_grad and out.is_leaf == ref.is_leaf
    _same_tensor(out, t)
    np.testing.assert_array_equal(out.grad.numpy(), ref.grad.numpy())
    assert out.grad is not t.grad and out.grad.device is t.device
    out.grad.add_(1)
    assert t.grad.tolist() == [2.0, -4.0]  # a copy, not the same gradient


@pytest.mark.parametrize("device", DEVICES)
def test_pickle_keeps_requires_grad_and_drops_grad_like_torch(device: str) -> None:
    t = ag.tensor([1.0, -2.0], requires_grad=True, device=device)
    tt = torch.tensor([1.0, -2.0], requires_grad=True)
    (t * t).sum().backward()
    (tt * tt).sum().backward()
    out, ref = _round_trip(t), _round_trip(tt)
    assert out.requires_grad == ref.requires_grad is True
    assert out.grad is None and ref.grad is None
    (out * 3).sum().backward()  # a working leaf
    assert out.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("device", DEVICES)
def test_deepcopy_of_a_non_leaf_raises_like_torch(device: str) -> None:
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(torch.ones(2, requires_grad=True) * 2)
    x = ag.ones(2, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user "
                                           r"\(graph leaves\) support the deepcopy protocol.*"
                                           r"MulScalarBackward.*\.detach\(\)"):
        copy.deepcopy(x * 2)
    assert copy.deepcopy((x * 2).detach()).tolist() == [2.0, 2.0]


def test_deepcopy_of_a_view_that_a_write_gave_history_raises() -> None:
    # v was a leaf view when made; writing a grad-requiring value into its base
    # makes it a non-leaf (as in PyTorch), which deepcopy must see.
    base = ag.zeros(3)
    v = base[:2]
    base.add_(ag.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly"):
        copy.deepcopy(v)


@pytest.mark.parametrize("device", DEVICES)
def test_pickled_non_leaf_is_a_leaf_like_torch(device: str) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True, device=device)
    out = _round_trip(x * 2)
    ref = _round_trip(torch.tensor([1.0, 2.0], requires_grad=True) * 2)
    assert out.is_leaf == ref.is_leaf and out.requires_grad == ref.requires_grad
    assert out.tolist() == ref.tolist() and out.device is x.device


@pytest.mark.parametrize("device", DEVICES)
def test_copies_inside_one_container_keep_shared_tensors_shared(device: str) -> None:
    t = ag.tensor([1.0, 2.0], device=device)
    for how in COPIES.values():
        a, b = how([t, t])
        assert a is b


@pytest.mark.parametrize("device", DEVICES)
def test_shallow_copy_shares_storage_and_version_counter(device: str) -> None:
    t = ag.tensor([1.0, 2.0], requires_grad=True, device=device)
    y = (t * t).sum()  # saves t
    c = copy.copy(t)
    assert c._data is t._data and c.is_leaf and c.requires_grad
    with ag.no_grad():
        c.add_(1)
    assert t.tolist() == [2.0, 3.0] and t._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", sorted(VALUES))
def test_ndarray_pickle_and_deepcopy(dtype: str, device: str) -> None:
    # A compiled backend's buffer cannot be pickled itself: arrays go through the host.
    a = nd.array(np.array(VALUES[dtype], dtype=dtype), device=device)
    for out in (_round_trip(a), copy.deepcopy(a), _round_trip(a[:, ::2])):
        assert out.device is a.device and out.dtype is a.dtype
        assert out.buffer is not a.buffer
    np.testing.assert_array_equal(_round_trip(a).numpy(), a.numpy())
    np.testing.assert_array_equal(copy.deepcopy(a).numpy(), a.numpy())
    np.testing.assert_array_equal(_round_trip(a[:, ::2]).numpy(), a.numpy()[:, ::2])
    empty = nd.zeros(0, 3, dtype=dtype, device=device)
    assert _round_trip(empty).shape == (0, 3) and copy.deepcopy(empty).shape == (0, 3)
