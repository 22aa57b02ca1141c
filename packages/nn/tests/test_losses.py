"""Losses and functional forms against PyTorch: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn
from lamina.nn import functional as F

torch.set_num_threads(1)

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 5)).astype(np.float32) * 3
TARGET = np.array([0, 4, 2, 2, 1, 3])


def _compare(loss, loss_t, x, xt):
    assert_close(loss, loss_t)
    upstream = np.random.default_rng(2).standard_normal(loss_t.shape).astype(np.float32)
    loss.backward(ag.tensor(upstream))
    loss_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
def test_cross_entropy(reduction, smoothing):
    x, xt = ag.tensor(LOGITS, requires_grad=True), torch.tensor(LOGITS, requires_grad=True)
    loss = nn.CrossEntropyLoss(reduction=reduction, label_smoothing=smoothing)(
        x, ag.tensor(TARGET))
    loss_t = torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=smoothing)(
        xt, torch.tensor(TARGET))
    _compare(loss, loss_t, x, xt)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    logp = torch.log_softmax(torch.tensor(LOGITS), 1).numpy()
    x, xt = ag.tensor(logp, requires_grad=True), torch.tensor(logp, requires_grad=True)
    loss = nn.NLLLoss(reduction=reduction)(x, ag.tensor(TARGET))
    loss_t = torch.nn.NLLLoss(reduction=reduction)(xt, torch.tensor(TARGET))
    _compare(loss, loss_t, x, xt)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    target = RNG.standard_normal(LOGITS.shape).astype(np.float32)
    x, xt = ag.tensor(LOGITS, requires_grad=True), torch.tensor(LOGITS, requires_grad=True)
    loss = nn.MSELoss(reduction=reduction)(x, ag.tensor(target))
    loss_t = torch.nn.MSELoss(reduction=reduction)(xt, torch.tensor(target))
    _compare(loss, loss_t, x, xt)


def test_cross_entropy_float64():
    x = ag.tensor(LOGITS.astype(np.float64), requires_grad=True)
    loss = F.cross_entropy(x, ag.tensor(TARGET), label_smoothing=0.2)
    ref = torch.nn.functional.cross_entropy(torch.tensor(LOGITS, dtype=torch.float64),
                                            torch.tensor(TARGET), label_smoothing=0.2)
    assert loss.dtype == "float64"
    assert loss.item() == pytest.approx(ref.item(), rel=1e-12)


def test_loss_errors():
    x, t = ag.zeros(3, 4), ag.tensor([0, 1, 2])
    with pytest.raises(nn.ShapeError, match=r"cross_entropy: expected target of shape \(3,\)"):
        F.cross_entropy(x, ag.tensor([0, 1]))
    with pytest.raises(nn.ShapeError, match=r"expected input of shape \(N, C\)"):
        F.cross_entropy(ag.zeros(3), t)
    with pytest.raises(TypeError, match="int64"):
        F.cross_entropy(x, ag.zeros(3))
    with pytest.raises(ValueError, match="reduction"):
        nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=2.0)
    with pytest.raises(nn.ShapeError, match="same shape"):
        F.mse_loss(x, ag.zeros(4, 3))


def test_functional_matches_modules():
    x = ag.tensor(LOGITS)
    w, b = ag.tensor(LOGITS[:3]), ag.tensor(LOGITS[0, :3])
    ref = torch.nn.functional.linear(torch.tensor(LOGITS), torch.tensor(LOGITS[:3]),
                                     torch.tensor(LOGITS[0, :3]))
    assert_close(F.linear(x, w, b), ref)
    assert_close(F.relu(x), torch.relu(torch.tensor(LOGITS)))
    assert_close(F.log_softmax(x, 0), torch.log_softmax(torch.tensor(LOGITS), 0))
    assert_close(F.dropout(x, 0.5, training=False), x)


@pytest.mark.parametrize("loss_fn", ["cross_entropy", "nll_loss"])
def test_minus_inf_in_a_non_target_entry_is_not_nan(loss_fn):
    # A masked logit (-inf) that is not the target: PyTorch gives a finite loss
    # and a zero gradient there; -inf * 0 in a one-hot product gave NaN.
    logits = LOGITS.copy()
    logits[0, 3] = logits[2, 0] = -np.inf
    if loss_fn == "nll_loss":
        logits = torch.log_softmax(torch.tensor(logits), 1).numpy()
    x, xt = ag.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    loss = getattr(F, loss_fn)(x, ag.tensor(TARGET))
    loss_t = getattr(torch.nn.functional, loss_fn)(xt, torch.tensor(TARGET))
    assert np.isfinite(loss.item())
    _compare(loss, loss_t, x, xt)
