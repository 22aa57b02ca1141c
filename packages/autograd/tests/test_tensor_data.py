"""``Tensor.data``: a Tensor outside autograd that shares storage, as in PyTorch."""

from __future__ import annotations

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES

VALUES = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]]


def _pair(device: str) -> tuple[ag.Tensor, torch.Tensor]:
    return (ag.tensor(VALUES, device=device, requires_grad=True),
            torch.tensor(VALUES, requires_grad=True))


@pytest.mark.parametrize("device", DEVICES)
def test_data_is_an_untracked_tensor(device: str) -> None:
    p, t = _pair(device)
    y, r = p * 2.0, t * 2.0
    for ours, theirs in ((p.data, t.data), (y.data, r.data)):
        assert isinstance(ours, ag.Tensor) and isinstance(theirs, torch.Tensor)
        assert ours.requires_grad == theirs.requires_grad is False
        assert ours.grad_fn is None and theirs.grad_fn is None
        assert ours.is_leaf and theirs.is_leaf
    np.testing.assert_array_equal(y.data.numpy(), r.data.numpy())
    assert p.data.device == p.device and p.data.dtype == p.dtype


@pytest.mark.parametrize("device", DEVICES)
def test_writes_through_data_change_the_tensor(device: str) -> None:
    p, t = _pair(device)
    p.data.add_(1.0)
    t.data.add_(1.0)
    np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
    src = [[9.0, 8.0, 7.0], [6.0, 5.0, 4.0]]
    p.data.copy_(ag.tensor(src, device=device))
    t.data.copy_(torch.tensor(src))
    np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
    p.data[0, 1] = -3.0
    t.data[0, 1] = -3.0
    np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
    assert p.requires_grad and p.grad_fn is None


@pytest.mark.parametrize("device", DEVICES)
def test_writes_through_data_escape_the_version_check(device: str) -> None:
    # PyTorch's documented hazard: the saved p is changed behind autograd's back, so
    # backward silently uses the new values instead of raising.
    p, t = _pair(device)
    y, r = p * p, t * t
    p.data.mul_(3.0)
    t.data.mul_(3.0)
    assert p._version == t._version == 0
    y.sum().backward()
    r.sum().backward()
    assert p.grad is not None and t.grad is not None
    np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_assigning_data_replaces_values_and_keeps_the_rest(device: str) -> None:
    p, t = _pair(device)
    (p * p).sum().backward()
    (t * t).sum().backward()
    grad = p.grad
    new = [1.0, 2.0, 3.0, 4.0]  # a new shape is allowed
    p.data = ag.tensor(new, device=device)
    t.data = torch.tensor(new)
    assert p.grad is grad and t.grad is not None
    np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    assert tuple(p.shape) == tuple(t.shape) == (4,)
    assert p.requires_grad and t.requires_grad and p.is_leaf
    np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
    p.data = p.data * 2.0  # the optimizer idiom of older PyTorch code
    t.data = t.data * 2.0
    np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())


def test_assigning_data_to_another_dtype() -> None:
    p = ag.tensor([1.0, 2.0], device="numpy", requires_grad=True)
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    p.data = ag.tensor([3.0, 4.0, 5.0], dtype="float64", device="numpy")
    t.data = torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64)
    assert p.dtype == "float64" and t.dtype == torch.float64
    assert p.tolist() == t.tolist() == [3.0, 4.0, 5.0]


def test_assigning_a_non_tensor_to_data_raises_type_error() -> None:
    p = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError):
        torch.tensor([1.0, 2.0]).data = 3.0  # type: ignore[assignment]
    with pytest.raises(TypeError, match="Tensor.data.*got float"):
        p.data = 3.0  # type: ignore[assignment]
    assert p.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_a_training_loop_updating_data_learns(device: str) -> None:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((32, 3)).astype(np.float32)
    y_np = x_np @ np.array([[2.0], [-1.0], [0.5]], dtype=np.float32)
    x, y = ag.tensor(x_np, device=device), ag.tensor(y_np, device=device)
    w = ag.zeros(3, 1, device=device, requires_grad=True)
    xt, yt = torch.tensor(x_np), torch.tensor(y_np)
    wt = torch.zeros(3, 1, requires_grad=True)
    lr, losses = 0.1, []
    for _ in range(50):
        loss, loss_t = ((x @ w - y) ** 2).mean(), ((xt @ wt - yt) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        loss_t.backward()
        assert w.grad is not None and wt.grad is not None
        with ag.no_grad():
            w.data.add_(-lr * w.grad)
        with torch.no_grad():
            wt.data.add_(-lr * wt.grad)
        w.grad, wt.grad = None, None
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(w.detach().numpy(), wt.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_init_idioms_through_data(device: str) -> None:
    w = ag.empty(200, 50, device=device, requires_grad=True)
    t = torch.empty(200, 50, requires_grad=True)
    for fill in (lambda d: d.fill_(0.25), lambda d: d.zero_()):
        ours, theirs = fill(w.data), fill(t.data)
        assert isinstance(ours, ag.Tensor) and not ours.requires_grad
        assert not theirs.requires_grad
        np.testing.assert_array_equal(w.detach().numpy(), t.detach().numpy())
    w.data.normal_(0, 0.02)
    values = w.detach().numpy()
    assert abs(values.mean()) < 0.002 and 0.018 < values.std() < 0.022
    a = 0.3
    w.data.uniform_(-a, a)
    values = w.detach().numpy()
    assert values.min() >= -a and values.max() <= a and values.std() > 0.15
    assert w.requires_grad and w.is_leaf and w._version == 0
