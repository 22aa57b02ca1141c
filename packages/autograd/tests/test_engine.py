"""Backward semantics: accumulation, retain/create graph, grad(), grad modes, errors, depth."""

from __future__ import annotations

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from lamina.ndarray import ShapeError


def test_backward_accumulates_into_leaf_grad_across_calls() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_gradient_of_shared_subexpression_sums_both_paths() -> None:
    x = ag.tensor(3.0, requires_grad=True)
    y = x * x
    (y + y * x).backward()  # d/dx (x^2 + x^3) = 2x + 3x^2
    assert x.grad.item() == pytest.approx(33.0)


def test_broadcast_gradients_are_summed_to_input_shape() -> None:
    a = ag.ones(3, 1, requires_grad=True)
    b = ag.ones(4, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and a.grad.tolist() == [[4.0]] * 3
    assert b.grad.tolist() == [3.0] * 4


def test_backward_on_tensor_without_grad_raises() -> None:
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ag.ones(2).sum().backward()


def test_non_scalar_backward_needs_gradient() -> None:
    x = ag.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    (x * 2).backward(ag.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]


def test_gradient_of_wrong_shape_raises_shape_error() -> None:
    x = ag.ones(2, requires_grad=True)
    with pytest.raises(ShapeError, match=r"shape \(3,\).*\(2,\)"):
        (x * 2).backward(ag.ones(3))


def test_second_backward_through_freed_graph_raises() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp()).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)


def test_create_graph_gives_differentiable_gradients() -> None:
    x = ag.tensor([0.5, -1.0], dtype="float64", requires_grad=True)
    t = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    (g,) = ag.grad((x.tanh() * x).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((t.tanh() * t).sum(), t, create_graph=True)
    (gg,) = ag.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), t)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
    np.testing.assert_allclose(gg.numpy(), tgg.numpy())


def test_grad_returns_without_touching_leaf_grad() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    w = ag.tensor([3.0, 4.0], requires_grad=True)
    gx, gw = ag.grad((x * w).sum(), [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None


def test_grad_with_respect_to_intermediate_tensor() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    (gh,) = ag.grad((h * h).sum(), h)
    assert gh.tolist() == [4.0, 8.0]


def test_grad_unused_input() -> None:
    x = ag.ones(2, requires_grad=True)
    z = ag.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        ag.grad((x * 2).sum(), [x, z])
    gx, gz = ag.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None and gx.tolist() == [2.0, 2.0]


def test_retain_grad_keeps_intermediate_gradient() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward()
    assert h.retains_grad and h.grad.tolist() == [6.0, 12.0]


def test_no_grad_and_enable_grad_contexts_and_decorators() -> None:
    x = ag.ones(2, requires_grad=True)
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ag.enable_grad():
            assert (x * 2).requires_grad
    assert ag.is_grad_enabled()

    @ag.no_grad()
    def evaluate(t: ag.Tensor) -> ag.Tensor:
        return t * 2

    assert not evaluate(x).requires_grad and ag.is_grad_enabled()
    with ag.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert ag.is_grad_enabled()


def test_requires_grad_propagation_and_detach() -> None:
    x = ag.ones(2, requires_grad=True)
    c = ag.ones(2)
    y = x * c
    assert y.requires_grad and not y.is_leaf and x.is_leaf
    assert not (c * 2).requires_grad
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    with pytest.raises(TypeError, match="floating point"):
        ag.tensor([1, 2], requires_grad=True)
    assert not (x > 0).requires_grad


def test_hundred_thousand_node_chain_backward_is_iterative() -> None:
    x = ag.tensor(1.0, dtype="float64", requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_higher_order_derivatives_of_power() -> None:
    x = ag.tensor(2.0, dtype="float64", requires_grad=True)
    y = x**4
    (g1,) = ag.grad(y, x, create_graph=True)
    (g2,) = ag.grad(g1, x, create_graph=True)
    (g3,) = ag.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (32.0, 48.0, 48.0)


def test_mixed_dtypes_promote_and_grads_keep_each_inputs_dtype() -> None:
    a = ag.ones(2, requires_grad=True)
    b = ag.tensor([2.0, 3.0], dtype="float64", requires_grad=True)
    out = a * b
    assert out.dtype == "float64"
    out.sum().backward()
    assert a.grad.dtype == "float32" and a.grad.tolist() == [2.0, 3.0]
    assert b.grad.dtype == "float64" and b.grad.tolist() == [1.0, 1.0]


def test_mixed_devices_raise() -> None:
    a = ag.ones(2)
    other = [d for d in ("cpu", "numpy") if d != a.device.type]
    from conftest import DEVICES

    if other and other[0] in DEVICES:
        with pytest.raises(RuntimeError, match="different devices"):
            a * ag.ones(2, device=other[0])


def test_repr_matches_pytorch_style() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * x) == "tensor([1., 4.], grad_fn=<MulBackward>)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulScalarBackward>)"
    assert repr(ag.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ag.tensor(1.5, dtype="float64")) == "tensor(1.5000, dtype=lamina.float64)"


def test_tensor_properties_and_conversions() -> None:
    x = ag.arange(6, dtype="float32").reshape(2, 3)
    assert x.shape == (2, 3) and x.ndim == 2 and x.numel() == 6 and x.size(1) == 3
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x[1, 2].item() == 5.0 and len(x) == 2
    assert x.double().dtype == "float64" and x.long().dtype == "int64"
    with pytest.raises(RuntimeError, match="detach"):
        ag.ones(1, requires_grad=True).numpy()
    assert ag.zeros_like(x).shape == x.shape and ag.ones_like(x).sum().item() == 6.0
    assert ag.full((2, 2), 7.0).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    ag.manual_seed(3)
    a = ag.randn(4)
    ag.manual_seed(3)
    assert ag.randn(4).tolist() == a.tolist()
    assert 0 <= ag.rand(100).numpy().min() and ag.rand(100).numpy().max() < 1


@pytest.mark.parametrize("expr, node", [
    (lambda x: x + 2, "AddScalar"), (lambda x: 2 + x, "AddScalar"),
    (lambda x: x - 2, "AddScalar"), (lambda x: 2 - x, "RSubScalar"),
    (lambda x: x * 3, "MulScalar"), (lambda x: 3 * x, "MulScalar"),
    (lambda x: x / 4, "DivScalar"), (lambda x: 4 / x, "RDivScalar"),
])
def test_python_numbers_take_the_scalar_ops(expr, node) -> None:
    # Same values and gradients as the 0-d tensor operand they replace.
    data = np.array([0.5, -1.5, 2.0], dtype=np.float32)
    x = ag.tensor(data, requires_grad=True)
    out = expr(x)
    assert type(out.grad_fn).__name__ == node
    out.sum().backward()
    t = torch.tensor(data, requires_grad=True)
    ref = expr(t)
    ref.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_scalar_arithmetic_on_int_tensors_stays_int64() -> None:
    out = ag.tensor([1, 2], device="numpy") * 2
    assert out.dtype == ag.int64 and out.tolist() == [2, 4]
