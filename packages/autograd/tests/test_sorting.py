"""sort, argsort, topk and max/min(dim) against PyTorch: values (exact), indices,
gradients, the forms of max/min, and errors, on every device.

Inputs have distinct values (no ties), where torch's indices are defined;
``test_ties_*`` pins the documented tie rule (the first index first).
"""

from __future__ import annotations

from typing import Any

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES, device_dtypes, float64_device

NAN = float("nan")


def _distinct(*shape: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 2.0


def _pair(device: str, dtype: str, x: np.ndarray) -> tuple[ag.Tensor, torch.Tensor]:
    ours = ag.tensor(x, dtype=dtype, device=device, requires_grad=True)
    theirs = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    return ours, theirs


def _weights(shape: tuple[int, ...]) -> np.ndarray:
    """An upstream gradient that tells the positions apart."""
    return np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape)


def _compare(ours: Any, theirs: Any, x: ag.Tensor, t: torch.Tensor, dtype: str) -> None:
    """Values and indices equal torch's; so does the gradient of a weighted sum."""
    np.testing.assert_array_equal(ours.values.detach().numpy(), theirs.values.detach().numpy())
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    assert ours.indices.dtype == "int64" and not ours.indices.requires_grad
    assert ours.values.dtype == dtype and ours.values.device == x.device
    w = _weights(tuple(theirs.values.shape))
    (ours.values * ag.tensor(w, dtype=dtype, device=x.device)).sum().backward()
    (theirs.values * torch.tensor(w, dtype=t.dtype)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


SORTS = [((6,), {}), ((3, 5), {"dim": 0}), ((3, 5), {"descending": True}),
         ((2, 3, 4), {"dim": 1, "descending": True}), ((2, 3, 4), {"dim": -1, "stable": True})]


@pytest.mark.parametrize("shape,kwargs", SORTS)
@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_sort_values_indices_and_gradient_match_torch(device: str, dtype: str, shape,
                                                      kwargs) -> None:
    x, t = _pair(device, dtype, _distinct(*shape))
    _compare(ag.sort(x, **kwargs), torch.sort(t, **kwargs), x, t, dtype)
    x2, t2 = _pair(device, dtype, _distinct(*shape))
    _compare(x2.sort(**kwargs), t2.sort(**kwargs), x2, t2, dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_argsort_matches_torch(device: str) -> None:
    x = _distinct(3, 4, seed=1)
    for dim, descending in ((0, False), (1, True), (-1, False)):
        ours = ag.tensor(x, device=device).argsort(dim, descending)
        theirs = torch.tensor(x).argsort(dim, descending)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_array_equal(ag.argsort(ag.tensor(x, device=device), dim, descending)
                                      .numpy(), theirs.numpy())


TOPKS = [((6,), 3, {}), ((3, 5), 2, {"dim": 0}), ((3, 5), 4, {"largest": False}),
         ((2, 3, 4), 1, {"dim": 1}), ((2, 3, 4), 0, {}), ((4, 3), 3, {"sorted": False})]


@pytest.mark.parametrize("shape,k,kwargs", TOPKS)
@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_topk_values_indices_and_gradient_match_torch(device: str, dtype: str, shape, k,
                                                      kwargs) -> None:
    x, t = _pair(device, dtype, _distinct(*shape, seed=2))
    _compare(ag.topk(x, k, **kwargs), torch.topk(t, k, **kwargs), x, t, dtype)
    x2, t2 = _pair(device, dtype, _distinct(*shape, seed=2))
    _compare(x2.topk(k, **kwargs), t2.topk(k, **kwargs), x2, t2, dtype)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False), (2, True)])
@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_max_min_over_a_dim_match_torch(device: str, dtype: str, op: str, dim: int,
                                        keepdim: bool) -> None:
    x, t = _pair(device, dtype, _distinct(2, 3, 4, seed=3))
    _compare(getattr(x, op)(dim, keepdim), getattr(t, op)(dim, keepdim), x, t, dtype)
    x2, t2 = _pair(device, dtype, _distinct(2, 3, 4, seed=3))
    _compare(getattr(ag, op)(x2, dim=dim, keepdim=keepdim),
             getattr(torch, op)(t2, dim=dim, keepdim=keepdim), x2, t2, dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_max_min_with_nan_pick_the_first_nan_as_torch(device: str) -> None:
    x = np.array([[1.0, NAN, 3.0, NAN], [2.0, -1.0, 0.5, 4.0]], np.float32)
    for op in ("max", "min"):
        ours = getattr(ag.tensor(x, device=device), op)(1)
        theirs = getattr(torch.tensor(x), op)(1)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_sort_and_topk_order_nan_as_largest(device: str) -> None:
    x = np.array([2.0, NAN, 1.0, -np.inf, 5.0, np.inf], np.float32)
    for descending in (False, True):
        ours = ag.tensor(x, device=device).sort(descending=descending)
        theirs = torch.tensor(x).sort(descending=descending)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    for largest in (True, False):
        ours = ag.tensor(x, device=device).topk(2, largest=largest)
        theirs = torch.tensor(x).topk(2, largest=largest)
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_ties_keep_the_first_index_first(device: str) -> None:
    x = [3.0, 1.0, 3.0, 1.0, 2.0]
    for descending in (False, True):
        ours = ag.sort(ag.tensor(x, device=device), descending=descending)
        theirs = torch.sort(torch.tensor(x), stable=True, descending=descending)
        assert ours.indices.tolist() == theirs.indices.tolist()
    assert ag.tensor(x, device=device).max(0).indices.item() == 0
    assert ag.tensor(x, device=device).min(0).indices.item() == 1


@pytest.mark.parametrize("device", DEVICES)
def test_max_min_keep_their_other_forms(device: str) -> None:
    x = ag.tensor([[1.0, 5.0], [3.0, 2.0]], device=device)
    other = ag.tensor([4.0, 0.0], device=device)
    assert x.max().item() == 5.0 and x.min().item() == 1.0
    assert ag.max(x).item() == 5.0 and ag.min(x).item() == 1.0
    assert x.max(other).tolist() == [[4.0, 5.0], [4.0, 2.0]]
    assert ag.min(x, other).tolist() == [[1.0, 0.0], [3.0, 0.0]]
    values, indices = x.max(dim=1)  # unpacks as a pair; axis= is accepted for dim=
    assert values.tolist() == [5.0, 3.0] and indices.tolist() == [1, 0]
    assert x.min(axis=0).values.tolist() == [1.0, 2.0]
    assert x.max(None, keepdim=True).shape == (1, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_0d_inputs(device: str) -> None:
    x = ag.tensor(2.5, device=device, requires_grad=True)
    t = torch.tensor(2.5, requires_grad=True)
    for ours, theirs in ((x.max(0), t.max(0)), (x.sort(), t.sort()), (x.topk(1), t.topk(1))):
        assert ours.values.shape == () and ours.indices.shape == ()
        assert ours.indices.item() == theirs.indices.item() == 0
    x.sort().values.backward()
    assert x.grad.item() == 1.0


def test_sort_and_topk_pass_gradcheck() -> None:
    device = float64_device()
    x = ag.tensor(_distinct(3, 4, seed=5), dtype="float64", device=device, requires_grad=True)
    assert ag.gradcheck(lambda a: ag.sort(a, dim=0, descending=True).values, (x,))
    assert ag.gradcheck(lambda a: ag.topk(a, 2).values * 3.0, (x,))
    assert ag.gradcheck(lambda a: a.max(1).values + a.min(0, keepdim=True).values.sum(), (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_errors(device: str) -> None:
    x = ag.tensor(_distinct(2, 3), device=device)
    with pytest.raises(TypeError, match=r"max: dim must be an int, got \(0, 1\); use amax"):
        x.max(dim=(0, 1))
    with pytest.raises(TypeError, match=r"min: dim must be an int"):
        ag.min(x, [1])
    with pytest.raises(ValueError, match=r"topk: k=4 is out of range for dim 1 of size 3"):
        x.topk(4)
    with pytest.raises(ValueError, match=r"sort: dim 2 is out of range"):
        x.sort(2)
    with pytest.raises(ValueError, match=r"max: cannot reduce dim 0 of size 0"):
        ag.zeros(0, 3, device=device).max(0)
