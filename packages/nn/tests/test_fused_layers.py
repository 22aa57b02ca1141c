"""F.linear and F.layer_norm as single graph nodes: values and gradients against PyTorch."""

from __future__ import annotations

from typing import Any

import lamina.autograd as ag
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from lamina import nn
from lamina.nn import functional as F

_rng = np.random.default_rng(7)


def _pair(*shape: int, dtype: str = "float32", device: Any = None
          ) -> tuple[ag.Tensor, torch.Tensor]:
    values = _rng.standard_normal(shape)
    ours = ag.tensor(values, dtype=dtype, device=device, requires_grad=True)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    return ours, theirs


def _check(ours: list[ag.Tensor], theirs: list[torch.Tensor], out: ag.Tensor,
           tout: torch.Tensor, tol: float) -> None:
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    cot = _rng.standard_normal(tout.shape)
    out.backward(ag.tensor(cot, dtype=out.dtype, device=out.device))
    tout.backward(torch.tensor(cot, dtype=tout.dtype))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("x_shape", [(16, 64), (4, 6, 64), (64,), (2, 3, 5, 64)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(device: str, x_shape: tuple[int, ...], bias: bool) -> None:
    x, tx = _pair(*x_shape, device=device)
    w, tw = _pair(32, 64, device=device)
    b, tb = _pair(32, device=device) if bias else (None, None)
    out = F.linear(x, w, b)
    assert type(out.grad_fn).__name__ == "Linear"  # one node
    ours, theirs = [x, w] + ([b] if bias else []), [tx, tw] + ([tb] if bias else [])
    _check(ours, theirs, out, TF.linear(tx, tw, tb), 1e-4)


def test_linear_skips_input_gradient_when_not_needed() -> None:
    x = ag.randn(5, 8)
    layer = nn.Linear(8, 3)
    layer(x).sum().backward()
    assert x.grad is None and layer.weight.grad.shape == (3, 8)
    np.testing.assert_allclose(layer.bias.grad.numpy(), [5.0] * 3)


def test_linear_on_a_non_contiguous_input(device: str) -> None:
    base, tbase = _pair(6, 4, 8, device=device)
    w, tw = _pair(5, 8, device=device)
    out, tout = F.linear(base.transpose(0, 1), w), TF.linear(tbase.transpose(0, 1), tw)
    _check([base, w], [tbase, tw], out, tout, 1e-4)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_shape", [(4, 3), (2, 5, 3)])
def test_linear_gradcheck_float64(x_shape: tuple[int, ...], bias: bool) -> None:
    x = ag.randn(*x_shape, dtype="float64", requires_grad=True)
    w = ag.randn(4, 3, dtype="float64", requires_grad=True)
    args = [x, w] + ([ag.randn(4, dtype="float64", requires_grad=True)] if bias else [])
    assert ag.gradcheck(F.linear, args)
    assert ag.gradcheck(lambda *a: ag.grad(F.linear(*a).sum() * 1.0 + (F.linear(*a) ** 2)
                                           .sum(), a, create_graph=True)[0], args)


@pytest.mark.parametrize("shape,normalized,affine,bias", [
    ((4, 6), 6, True, True), ((3, 4, 6), (6,), True, False), ((3, 4, 6), 6, False, False),
    ((2, 3, 4, 6), (4, 6), True, True), ((5, 6), (5, 6), True, False)])
def test_layer_norm_matches_torch(device: str, shape: tuple[int, ...], normalized: Any,
                                  affine: bool, bias: bool) -> None:
    dims = (normalized,) if isinstance(normalized, int) else normalized
    x, tx = _pair(*shape, device=device)
    w, tw = _pair(*dims, device=device) if affine else (None, None)
    b, tb = _pair(*dims, device=device) if bias else (None, None)
    out = F.layer_norm(x, normalized, w, b, eps=1e-5)
    nodes = {type(out.grad_fn).__name__}
    if len(dims) > 1:
        nodes.add(type(out.grad_fn.next[0]).__name__)
    assert "LayerNorm" in nodes  # the fused node, not a chain of composite ops
    ours = [x] + [t for t in (w, b) if t is not None]
    theirs = [tx] + [t for t in (tw, tb) if t is not None]
    _check(ours, theirs, out, TF.layer_norm(tx, dims, tw, tb, eps=1e-5), 1e-4)


def test_layer_norm_module_is_one_node_and_matches_torch() -> None:
    ours, theirs = nn.LayerNorm(8), torch.nn.LayerNorm(8)
    x, tx = _pair(3, 5, 8)
    out = ours(x)
    assert type(out.grad_fn).__name__ == "LayerNorm"
    _check([x, ours.weight, ours.bias], [tx, theirs.weight, theirs.bias], out, theirs(tx),
           1e-4)


def test_layer_norm_gradcheck_float64() -> None:
    x = ag.randn(3, 2, 4, dtype="float64", requires_grad=True)
    w = ag.randn(2, 4, dtype="float64", requires_grad=True)
    assert ag.gradcheck(lambda a, b: F.layer_norm(a, (2, 4), b), [x, w])


def test_layer_norm_shape_errors() -> None:
    with pytest.raises(nn.ShapeError, match=r"layer_norm: expected input of shape \(\*, 4\)"):
        F.layer_norm(ag.ones(3, 5), 4)
    with pytest.raises(nn.ShapeError, match=r"layer_norm: weight must have shape \(4,\)"):
        F.layer_norm(ag.ones(3, 4), 4, ag.ones(5))


def test_inference_sees_every_kind_of_weight_update() -> None:
    # without a graph, linear reads the weight as it is now after every kind of update
    layer = nn.Linear(4, 3)
    x = ag.randn(2, 4)

    def expected() -> np.ndarray:
        return x.numpy() @ layer.weight.detach().numpy().T + layer.bias.detach().numpy()

    with ag.no_grad():
        np.testing.assert_allclose(layer(x).numpy(), expected(), rtol=1e-5)
        layer.weight.mul_(2)  # in place: same data object, new version
        np.testing.assert_allclose(layer(x).numpy(), expected(), rtol=1e-5)
        layer.weight -= 1.0
        np.testing.assert_allclose(layer(x).numpy(), expected(), rtol=1e-5)
    layer.weight.data = layer.weight.data * 3.0  # replaced, as optimizers do
    with ag.no_grad():
        np.testing.assert_allclose(layer(x).numpy(), expected(), rtol=1e-5)
    layer.load_state_dict(nn.Linear(4, 3).state_dict())
    with ag.no_grad():
        np.testing.assert_allclose(layer(x).numpy(), expected(), rtol=1e-5)
    nn.init.zeros_(layer.weight)
    np.testing.assert_allclose(layer(x).detach().numpy(), expected(), rtol=1e-5)
    np.testing.assert_allclose(layer(x).detach().numpy(), np.broadcast_to(
        layer.bias.detach().numpy(), (2, 3)), rtol=1e-6)
