"""``Tensor.relu_()`` and ``Tensor.sigmoid_()`` (issue 30) against PyTorch.

They are in-place ops like ``exp_``: the result goes into the tensor's own
storage, the tensor is returned, its version counter bumps, and autograd
records the write (leaf and view rules, saved-value checks included).
"""

from __future__ import annotations

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES

X = [[0.5, -1.5, 2.0], [3.0, -0.25, 0.0]]
W = [[1.5, 2.0, -0.5], [0.75, 4.0, -2.0]]
METHODS = ["relu_", "sigmoid_"]


def _close(ours: ag.Tensor, theirs: torch.Tensor) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", METHODS)
def test_method_writes_into_the_tensor_and_returns_it(method, device):
    x = ag.tensor(X, device=device)
    alias = x.reshape(6)
    version = x._version
    out = getattr(x, method)()
    expected = getattr(torch.tensor(X), method)()
    assert out is x and x._version > version
    _close(x, expected)
    _close(alias, expected.reshape(6))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", METHODS)
def test_method_gradient_matches_torch(method, device):
    x = ag.tensor(X, requires_grad=True, device=device)
    xt = torch.tensor(X, requires_grad=True)
    h, ht = x * 2.0, xt * 2.0
    assert getattr(h, method)() is h
    getattr(ht, method)()
    (h * ag.tensor(W, device=device)).sum().backward()
    (ht * torch.tensor(W)).sum().backward()
    _close(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", METHODS)
def test_method_on_a_view_of_a_non_leaf_matches_torch(method, device):
    x = ag.tensor(X, requires_grad=True, device=device)
    xt = torch.tensor(X, requires_grad=True)
    y, yt = x * 1.0, xt * 1.0
    getattr(y[:, 1], method)()
    getattr(yt[:, 1], method)()
    _close(y, yt)
    (y * ag.tensor(W, device=device)).sum().backward()
    (yt * torch.tensor(W)).sum().backward()
    _close(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", METHODS)
def test_method_leaf_rule_and_no_grad_match_torch(method, device):
    with pytest.raises(RuntimeError):
        getattr(torch.tensor(X, requires_grad=True), method)()
    x = ag.tensor(X, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match=f"{method}: a leaf Variable that requires grad"):
        getattr(x, method)()
    np.testing.assert_array_equal(x.detach().numpy(), np.float32(X))
    with ag.no_grad():
        assert getattr(x, method)() is x
    assert x.grad_fn is None
    _close(x, getattr(torch.tensor(X), method)())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", METHODS)
def test_method_overwriting_a_saved_value_raises_at_backward(method, device):
    x = ag.tensor(X, requires_grad=True, device=device)
    h = x * 1.0
    product = h * h
    getattr(h, method)()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.sum().backward()


def test_sigmoid_of_an_integer_tensor_in_place_raises_like_torch():
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2]).sigmoid_()
    t = ag.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.sigmoid_()
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(ag.tensor([-1, 2]).relu_().numpy(),
                                  torch.tensor([-1, 2]).relu_().numpy())
