"""Fused ops (linear, gelu, layer_norm, batch_norm, attention): one backward rule for every
order.

Each fused op's first and second derivatives are checked against PyTorch's
(``torch.autograd.grad`` with ``create_graph=True``) in float64 on every device,
and the ops' recorded backward must come from their own rule, not from
differentiating the ``*_reference`` composites.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import device_dtypes
from harness import to_numpy
from lamina.autograd._ops import attention, elementwise, normalization

DEVICES = [dev for dev, dt in device_dtypes() if dt == "float64"]


@dataclass
class Fused:
    """One fused op: ours and torch's on the same arguments, the node it must record."""

    name: str
    node: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    constants: list[np.ndarray] = field(default_factory=list)  # trailing, never differentiated
    tol: float = 1e-9


_rng = np.random.default_rng(29)
_RUNNING = [_rng.standard_normal(3), _rng.random(3) + 0.5]  # batch_norm's mean, var (C,)

CASES = [
    Fused("layer_norm", "LayerNorm", ag.layer_norm,
          lambda x, w, b: TF.layer_norm(x, x.shape[-1:], w, b), [(3, 5), (5,), (5,)]),
    Fused("layer_norm_3d_eps", "LayerNorm", lambda x, w, b: ag.layer_norm(x, w, b, eps=1e-3),
          lambda x, w, b: TF.layer_norm(x, x.shape[-1:], w, b, eps=1e-3),
          [(2, 3, 4), (4,), (4,)]),
    Fused("batch_norm_train", "BatchNorm", ag.batch_norm,
          lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
          [(4, 3, 2), (3,), (3,)]),
    Fused("batch_norm_eval", "BatchNorm",
          lambda x, w, b, rm, rv: ag.batch_norm(x, w, b, rm, rv, training=False),
          lambda x, w, b, rm, rv: TF.batch_norm(x, rm, rv, w, b, training=False),
          [(4, 3, 2), (3,), (3,)], _RUNNING),
    # erf's forward is a 1.5e-7 approximation where a backend lacks the kernel (numpy)
    Fused("gelu", "Gelu", ag.gelu, TF.gelu, [(3, 4)], tol=1e-6),
    Fused("gelu_tanh", "Gelu", lambda x: ag.gelu(x, approximate="tanh"),
          lambda x: TF.gelu(x, approximate="tanh"), [(3, 4)]),
    Fused("attention", "Attention", ag.scaled_dot_product_attention,
          TF.scaled_dot_product_attention, [(2, 3, 4), (2, 5, 4), (2, 5, 6)]),
    Fused("attention_causal", "Attention",
          lambda q, k, v: ag.scaled_dot_product_attention(q, k, v, is_causal=True),
          lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
          [(2, 2, 6, 4), (2, 2, 6, 4), (2, 2, 6, 3)]),
    # a mask that requires grad: its gradient is the scores'
    Fused("attention_mask", "Attention", ag.scaled_dot_product_attention,
          TF.scaled_dot_product_attention, [(2, 3, 4), (2, 5, 4), (2, 5, 6), (3, 5)]),
    Fused("attention_constant_mask", "Attention", ag.scaled_dot_product_attention,
          TF.scaled_dot_product_attention, [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 2)],
          [np.where(_rng.random((1, 1, 3, 5)) < 0.3, -np.inf, _rng.standard_normal((1, 1, 3, 5)))]),
    Fused("linear", "Linear", ag.linear, TF.linear, [(2, 3, 4), (5, 4), (5,)]),
    Fused("linear_no_bias", "Linear", ag.linear, TF.linear, [(4, 3), (2, 3)]),
]


def _inputs(case: Fused, device: str) -> tuple[list[ag.Tensor], list[torch.Tensor], list[Any],
                                                list[torch.Tensor]]:
    """Differentiable float64 leaves and constants, ours and torch's, from the same values."""
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s) for s in case.shapes]
    ours = [ag.tensor(v, dtype="float64", device=device, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    consts = [ag.tensor(c, dtype="float64", device=device) for c in case.constants]
    return ours, theirs, consts, [torch.tensor(c) for c in case.constants]


def _assert_close(got: list[Any], want: list[Any], case: Fused, what: str) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        expected = np.zeros(1) if w is None else w.detach().numpy()
        actual = np.zeros(1) if g is None else to_numpy(g)
        np.testing.assert_allclose(actual, expected, rtol=case.tol, atol=case.tol,
                                   err_msg=f"{case.name}: {what} of input {k}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_first_and_second_derivatives_match_torch(case: Fused, device: str) -> None:
    xs, txs, consts, tconsts = _inputs(case, device)
    out, tout = case.fn(*xs, *consts), case.ref(*txs, *tconsts)
    assert type(out.grad_fn).__name__ == case.node  # the fused node, not a composite
    rng = np.random.default_rng(1)
    cot = rng.standard_normal(tuple(tout.shape))
    first = ag.grad((out * ag.tensor(cot, dtype="float64", device=device)).sum(), xs,
                    create_graph=True)
    tfirst = torch.autograd.grad((tout * torch.tensor(cot)).sum(), txs, create_graph=True)
    _assert_close(list(first), list(tfirst), case, "first derivative")

    dirs = [rng.standard_normal(x.shape) for x in xs]  # second order along these directions
    total = sum((g * ag.tensor(d, dtype="float64", device=device)).sum()
                for g, d in zip(first, dirs))
    ttotal = sum((g * torch.tensor(d)).sum() for g, d in zip(tfirst, dirs))
    second = ag.grad(total, xs, allow_unused=True)
    tsecond = torch.autograd.grad(ttotal, txs, allow_unused=True)
    _assert_close(list(second), list(tsecond), case, "second derivative")


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a fused op's backward differentiated its *_reference composite")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_recorded_backward_is_the_ops_own_rule(case: Fused,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With create_graph the backward runs the op's one rule on Tensors: it never
    calls the composite references (which stay public, as oracles)."""
    for module, name in [(normalization, "layer_norm_reference"),
                         (normalization, "batch_norm_reference"),
                         (elementwise, "gelu_reference"),
                         (attention, "scaled_dot_product_attention_reference")]:
        monkeypatch.setattr(module, name, _refuse)
    xs, _, consts, _ = _inputs(case, DEVICES[0])
    out = case.fn(*xs, *consts)
    first = ag.grad((out * out).sum(), xs, create_graph=True)
    assert all(g is not None and g.requires_grad for g in first)


_BN_LAYOUTS = [(6, 4), (3, 5, 7), (4, 3, 5, 6)]  # (N, C), (N, C, L), (N, C, H, W)


def _counting(name: str, kernel: Callable[..., Any], calls: list[str]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return kernel(*args, **kwargs)
    return counted


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape", _BN_LAYOUTS, ids=str)
@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_batch_norm_runs_the_fused_kernels_where_the_device_has_them(
        device: str, dtype: str, shape: tuple[int, ...], training: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Values, gradients and running statistics against torch, with inputs far from 0
    (x - mean cancels), through batch_norm_stats/apply/backward wherever the device has
    them: counted, so a fallback to the composite path cannot pass unnoticed."""
    calls: list[str] = []
    for name in ("batch_norm_stats", "batch_norm_apply", "batch_norm_backward"):
        monkeypatch.setattr(nd, name, _counting(name, getattr(nd, name), calls))
    rng = np.random.default_rng(len(shape))
    c = shape[1]
    x = rng.standard_normal(shape) * 3 + 50
    w, b, cot = rng.standard_normal(c), rng.standard_normal(c), rng.standard_normal(shape)
    rm, rv = rng.standard_normal(c), rng.random(c) + 0.5

    def ours(a: np.ndarray, grad: bool = False) -> ag.Tensor:
        return ag.tensor(a, dtype=dtype, device=device, requires_grad=grad)

    xs = [ours(x, True), ours(w, True), ours(b, True)]
    run_m, run_v = ours(rm), ours(rv)
    out = ag.batch_norm(*xs, run_m, run_v, training=training, momentum=0.3)
    (out * ours(cot)).sum().backward()
    txs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    t_m, t_v = torch.tensor(rm), torch.tensor(rv)
    tout = TF.batch_norm(txs[0], t_m, t_v, txs[1], txs[2], training=training, momentum=0.3)
    (tout * torch.tensor(cot)).sum().backward()
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    for got, want in [(out, tout), (run_m, t_m), (run_v, t_v)] + [
            (a.grad, t.grad) for a, t in zip(xs, txs)]:
        np.testing.assert_allclose(to_numpy(got), want.detach().numpy(), **tol)
    fused = nd.has_batch_norm_kernels(xs[0]._data)
    expected = ["batch_norm_stats"] * training + ["batch_norm_apply", "batch_norm_backward"]
    assert calls == (expected if fused else [])
    assert fused or device != "numpy"  # the reference backend has them


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_batch_norm_of_a_strided_view_with_a_broadcast_gradient(device: str, dtype: str) -> None:
    """The kernels read compact buffers from element 0: a permuted, offset input and the
    stride-0 gradient of ``sum()`` are compacted first."""
    rng = np.random.default_rng(7)
    base, w = rng.standard_normal((5, 2, 4, 3)), rng.standard_normal(4)
    x = ag.tensor(base, dtype=dtype, device=device, requires_grad=True)
    weight = ag.tensor(w, dtype=dtype, device=device, requires_grad=True)
    bias = ag.zeros(4, dtype=dtype, device=device)
    view = x[1:].permute(0, 2, 1, 3)  # (4, 4, 2, 3), not compact, offset
    (ag.batch_norm(view, weight, bias) * 2).sum().backward()
    tx, tw = torch.tensor(base, requires_grad=True), torch.tensor(w, requires_grad=True)
    tview = tx[1:].permute(0, 2, 1, 3)
    tb = torch.zeros(4, dtype=torch.float64)
    (TF.batch_norm(tview, None, None, tw, tb, training=True) * 2).sum().backward()
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(to_numpy(weight.grad), tw.grad.numpy(), **tol)
