"""The PyTorch loss API (issue 30): values, gradients and errors against torch.

Every case runs on every available device in float32 and float64 and compares
the loss and the gradient of every floating input with torch.nn.functional.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn
from lamina.nn import functional as F

torch.set_num_threads(1)

TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10)}
DTYPES = ["float32", "float64"]
REDUCTIONS = ["mean", "sum", "none"]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _logits(*shape: int, seed: int = 0) -> np.ndarray:
    return _rng(seed).standard_normal(shape) * 2


def _probs(*shape: int, seed: int = 1) -> np.ndarray:
    p = _rng(seed).random(shape) + 0.05
    return p / p.sum(1, keepdims=True)


def _compare(lamina_fn, torch_fn, arrays, device, dtype, grads=None):
    """Run both on the same inputs; compare the loss and the gradients of ``grads``.

    ``arrays`` maps names to numpy arrays: floating ones take ``dtype``, integer
    ones stay int64. ``grads`` names the inputs to differentiate (default: the first).
    """
    grads = list(arrays)[:1] if grads is None else grads
    ours, theirs = {}, {}
    for name, a in arrays.items():
        a = np.asarray(a)
        a = a.astype(dtype) if a.dtype.kind == "f" else a.astype(np.int64)
        ours[name] = ag.tensor(a, device=device, requires_grad=name in grads)
        theirs[name] = torch.tensor(a, requires_grad=name in grads)
    loss, loss_t = lamina_fn(**ours), torch_fn(**theirs)
    rtol, atol = TOL[dtype]
    assert loss.dtype == dtype and loss.device.type == device
    assert_close(loss, loss_t, rtol, atol)
    upstream = _rng(7).standard_normal(tuple(loss_t.shape)).astype(dtype)
    loss.backward(ag.tensor(upstream, device=device))
    loss_t.backward(torch.tensor(upstream))
    for name in grads:
        assert_close(ours[name].grad, theirs[name].grad, rtol, atol)


# ----- cross_entropy and nll_loss ----------------------------------------------------------

TARGET = np.array([0, 4, 2, -100, 1, 2])
WEIGHT = np.array([0.5, 1.0, 2.0, 0.25, 1.5])
CLASS_CASES = {
    "plain": {},
    "weight": {"weight": True},
    "ignore_2": {"ignore_index": 2},
    "smoothing": {"label_smoothing": 0.2},
    "all": {"weight": True, "ignore_index": 4, "label_smoothing": 0.3},
}


def _class_kwargs(case, reduction):
    kw = dict(CLASS_CASES[case], reduction=reduction)
    use_weight = kw.pop("weight", False)
    return kw, use_weight


def _with_ignored(target, kw):
    """The target with its -100 entries set to the case's ignore_index."""
    return np.where(target == -100, kw.get("ignore_index", -100), target)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(CLASS_CASES))
def test_cross_entropy_class_indices(case, reduction, dtype, device):
    kw, use_weight = _class_kwargs(case, reduction)
    arrays = {"input": _logits(6, 5), "target": _with_ignored(TARGET, kw)}
    if use_weight:
        arrays["weight"] = WEIGHT
    _compare(lambda **a: F.cross_entropy(**a, **kw),
             lambda **a: torch.nn.functional.cross_entropy(**a, **kw), arrays, device, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["plain", "all"])
def test_cross_entropy_k_dimensional(case, reduction, dtype, device):
    # (N, C, d1, d2) scores with (N, d1, d2) targets, as a segmentation net gives them.
    kw, use_weight = _class_kwargs(case, reduction)
    target = _rng(3).integers(0, 5, (2, 3, 4))
    target[0, 1, 2] = target[1, 0, 0] = -100
    arrays = {"input": _logits(2, 5, 3, 4), "target": _with_ignored(target, kw)}
    if use_weight:
        arrays["weight"] = WEIGHT
    _compare(lambda **a: F.cross_entropy(**a, **kw),
             lambda **a: torch.nn.functional.cross_entropy(**a, **kw), arrays, device, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3)])
@pytest.mark.parametrize("case", ["plain", "weight", "smoothing"])
def test_cross_entropy_probability_targets(case, shape, reduction, dtype, device):
    kw, use_weight = _class_kwargs(case, reduction)
    arrays = {"input": _logits(*shape), "target": _probs(*shape)}
    if use_weight:
        arrays["weight"] = WEIGHT
    _compare(lambda **a: F.cross_entropy(**a, **kw),
             lambda **a: torch.nn.functional.cross_entropy(**a, **kw), arrays, device, dtype,
             grads=["input", "target"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["plain", "weight", "ignore_2"])
@pytest.mark.parametrize("shape", [(6, 5), (2, 5, 3)])
def test_nll_loss_weight_and_ignore_index(shape, case, reduction, dtype, device):
    kw, use_weight = _class_kwargs(case, reduction)
    logp = torch.log_softmax(torch.tensor(_logits(*shape)), 1).numpy()
    target = TARGET if len(shape) == 2 else np.array([[0, 2, -100], [4, 2, 1]])
    arrays = {"input": logp, "target": _with_ignored(target, kw)}
    if use_weight:
        arrays["weight"] = WEIGHT
    _compare(lambda **a: F.nll_loss(**a, **kw),
             lambda **a: torch.nn.functional.nll_loss(**a, **kw), arrays, device, dtype)


def test_cross_entropy_every_target_ignored_gives_nan_like_torch(device):
    x = ag.zeros(3, 4, device=device)
    t = ag.tensor([-100, -100, -100], device=device)
    ref = torch.nn.functional.cross_entropy(torch.zeros(3, 4), torch.tensor([-100] * 3))
    assert np.isnan(ref.item()) and np.isnan(F.cross_entropy(x, t).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0.0


def test_ignored_position_with_minus_inf_logit_is_not_nan(device):
    # The ignored row's (substitute) class 0 is -inf: masking must not give 0 * inf.
    logits = _logits(3, 4)
    logits[1, 0] = -np.inf
    x = ag.tensor(logits.astype(np.float32), device=device, requires_grad=True)
    loss = F.cross_entropy(x, ag.tensor([1, -100, 3], device=device))
    loss.backward()
    assert np.isfinite(loss.item()) and np.isfinite(x.grad.numpy()).all()


# ----- binary cross-entropy --------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(weighted, reduction, dtype, device):
    arrays = {"input": _rng(4).uniform(0.05, 0.95, (4, 3)),
              "target": _rng(5).random((4, 3))}
    if weighted:
        arrays["weight"] = _rng(6).random(3)  # broadcast over the batch
    _compare(lambda **a: F.binary_cross_entropy(**a, reduction=reduction),
             lambda **a: torch.nn.functional.binary_cross_entropy(**a, reduction=reduction),
             arrays, device, dtype, grads=["input", "target"])


def test_binary_cross_entropy_saturated_inputs_stay_finite(device):
    # A sigmoid saturates to exactly 0 or 1 in float32: PyTorch clamps log at -100.
    x_np, t_np = np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0, 0.0])
    x = ag.tensor(x_np.astype(np.float32), device=device, requires_grad=True)
    loss = F.binary_cross_entropy(x, ag.tensor(t_np.astype(np.float32), device=device), None,
                                  reduction="none")
    ref = torch.nn.functional.binary_cross_entropy(torch.tensor(x_np), torch.tensor(t_np),
                                                   reduction="none")
    assert_close(loss, ref)
    loss.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["plain", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits(case, reduction, dtype, device):
    # Includes logits of exactly 0 (a zero-initialised head: gradient sigmoid(0) - t)
    # and of +-60, where a naive log(sigmoid(x)) overflows.
    x = _logits(4, 3)
    x[0, 0], x[1, 1], x[2, 2] = 0.0, 60.0, -60.0
    arrays = {"input": x, "target": _rng(5).random((4, 3))}
    if case in ("weight", "both"):
        arrays["weight"] = _rng(6).random((4, 1))
    if case in ("pos_weight", "both"):
        arrays["pos_weight"] = np.array([0.5, 2.0, 3.0])
    _compare(lambda **a: F.binary_cross_entropy_with_logits(**a, reduction=reduction),
             lambda **a: torch.nn.functional.binary_cross_entropy_with_logits(
                 **a, reduction=reduction), arrays, device, dtype, grads=["input", "target"])


# ----- regression losses and kl_div ------------------------------------------------------

POINTWISE = {
    "l1": (lambda r: {"reduction": r}, "l1_loss"),
    "smooth_l1": (lambda r: {"reduction": r}, "smooth_l1_loss"),
    "smooth_l1_beta_0.5": (lambda r: {"reduction": r, "beta": 0.5}, "smooth_l1_loss"),
    "smooth_l1_beta_0": (lambda r: {"reduction": r, "beta": 0.0}, "smooth_l1_loss"),
    "huber": (lambda r: {"reduction": r}, "huber_loss"),
    "huber_delta_0.5": (lambda r: {"reduction": r, "delta": 0.5}, "huber_loss"),
    "huber_delta_2": (lambda r: {"reduction": r, "delta": 2.0}, "huber_loss"),
    "mse": (lambda r: {"reduction": r}, "mse_loss"),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(POINTWISE))
def test_pointwise_losses(case, reduction, dtype, device):
    make_kw, name = POINTWISE[case]
    kw = make_kw(reduction)
    arrays = {"input": _logits(3, 4), "target": _logits(3, 4, seed=9)}
    _compare(lambda **a: getattr(F, name)(**a, **kw),
             lambda **a: getattr(torch.nn.functional, name)(**a, **kw), arrays, device, dtype,
             grads=["input", "target"])


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(log_target, reduction, dtype, device):
    target = np.log(_probs(3, 4)) if log_target else _probs(3, 4)
    arrays = {"input": np.log(_probs(3, 4, seed=4)), "target": target}
    kw = {"reduction": reduction, "log_target": log_target}
    _compare(lambda **a: F.kl_div(**a, **kw),
             lambda **a: torch.nn.functional.kl_div(**a, **kw), arrays, device, dtype,
             grads=["input", "target"])


def test_kl_div_zero_target_counts_as_zero(device):
    # 0 * log 0 = 0 in the value and in the input's gradient (torch's d/dtarget is
    # NaN there; ours stays finite, so only the input's gradient is compared).
    target = _probs(3, 4)
    target[0, 1] = 0.0
    _compare(lambda **a: F.kl_div(**a, reduction="sum"),
             lambda **a: torch.nn.functional.kl_div(**a, reduction="sum"),
             {"input": np.log(_probs(3, 4, seed=4)), "target": target}, device, "float64")


# ----- modules -----------------------------------------------------------------------------

def _weight(device=None):
    return ag.tensor(WEIGHT.astype(np.float32), device=device)


MODULES = {
    "CrossEntropyLoss": lambda w: ({"weight": w, "ignore_index": 2, "label_smoothing": 0.1},
                                   _logits(6, 5), np.where(TARGET < 0, 2, TARGET)),
    "NLLLoss": lambda w: ({"weight": w, "ignore_index": 4},
                          torch.log_softmax(torch.tensor(_logits(6, 5)), 1).numpy(),
                          np.where(TARGET < 0, 4, TARGET)),
    "BCELoss": lambda w: ({"weight": w}, _rng(4).uniform(0.1, 0.9, (6, 5)), _rng(5).random((6, 5))),
    "BCEWithLogitsLoss": lambda w: ({"weight": w, "pos_weight": w * 2.0}, _logits(6, 5),
                                    _rng(5).random((6, 5))),
    "L1Loss": lambda w: ({}, _logits(6, 5), _logits(6, 5, seed=3)),
    "SmoothL1Loss": lambda w: ({"beta": 0.5}, _logits(6, 5), _logits(6, 5, seed=3)),
    "HuberLoss": lambda w: ({"delta": 1.5}, _logits(6, 5), _logits(6, 5, seed=3)),
    "KLDivLoss": lambda w: ({"log_target": True}, _logits(6, 5), _logits(6, 5, seed=3)),
    "MSELoss": lambda w: ({}, _logits(6, 5), _logits(6, 5, seed=3)),
}


def _torch_kwargs(kw):
    return {k: torch.tensor(v.numpy()) if isinstance(v, ag.Tensor) else v for k, v in kw.items()}


@pytest.mark.parametrize("reduction", ["sum", "none"])
@pytest.mark.parametrize("name", list(MODULES))
def test_loss_modules_match_torch(name, reduction, device):
    kw, x, t = MODULES[name](_weight(device))
    module = getattr(nn, name)(**kw, reduction=reduction)
    ref = getattr(torch.nn, name)(**_torch_kwargs(kw), reduction=reduction)
    t = t.astype(np.float32) if t.dtype.kind == "f" else t
    _compare(lambda input, target: module(input, target),
             lambda input, target: ref(input, target), {"input": x, "target": t},
             device, "float32")


def test_loss_module_weights_are_buffers_that_move(device):
    module = nn.CrossEntropyLoss(_weight("numpy"))
    assert list(module.state_dict()) == ["weight"] == list(
        torch.nn.CrossEntropyLoss(torch.ones(5)).state_dict())
    module.to(device)
    assert module.weight.device.type == device
    assert list(nn.BCEWithLogitsLoss(pos_weight=_weight()).state_dict()) == ["pos_weight"]
    assert list(nn.NLLLoss().state_dict()) == []
    assert "ignore_index=-100" in repr(nn.NLLLoss())


def test_kl_div_batchmean_module():
    x = ag.tensor(np.log(_probs(4, 3)).astype(np.float32))
    t = ag.tensor(_probs(4, 3, seed=8).astype(np.float32))
    ref = torch.nn.KLDivLoss(reduction="batchmean")(torch.tensor(x.numpy()),
                                                      torch.tensor(t.numpy()))
    assert_close(nn.KLDivLoss(reduction="batchmean")(x, t), ref)


# ----- errors ------------------------------------------------------------------------------

X, T = ag.zeros(3, 4), ag.tensor([0, 1, 2])
ERRORS = [
    (lambda: F.cross_entropy(X, ag.tensor([0, 1])), ValueError,
     r"cross_entropy: expected target of shape \(3,\) \(class indices\) or \(3, 4\)"),
    (lambda: F.cross_entropy(ag.zeros(2, 5, 3), ag.tensor([[0, 1], [1, 0]])), ValueError,
     r"cross_entropy: expected target of shape \(2, 3\)"),
    (lambda: F.cross_entropy(X, ag.zeros(3).bool()), TypeError, "int64 class indices"),
    (lambda: F.cross_entropy(X, T, ag.ones(3)), ValueError,
     r"cross_entropy: weight must have shape \(4,\).*got \(3,\)"),
    (lambda: F.cross_entropy(X, T, ag.ones(4).double()), TypeError,
     "weight has dtype .*float64 but input has .*float32"),
    (lambda: F.cross_entropy(X, T, "sum"), TypeError, "weight must be a Tensor or None"),
    (lambda: F.cross_entropy(X, T, label_smoothing=1.5), ValueError, "label_smoothing"),
    (lambda: F.cross_entropy(X, T, reduction="avg"), ValueError,
     "cross_entropy: reduction must be one of"),
    (lambda: F.cross_entropy(X, ag.zeros(3, 4), ignore_index=1), ValueError,
     "ignore_index=1 applies to class-index targets only"),
    (lambda: F.cross_entropy(X, ag.tensor([0, 4, 1])), IndexError,
     r"cross_entropy: target 4 is out of bounds for 4 classes"),
    (lambda: F.nll_loss(X, ag.tensor([0, -1, 1])), IndexError, "nll_loss: target -1"),
    (lambda: F.nll_loss(X, ag.zeros(3, 4)), ValueError, r"nll_loss: expected target of shape"),
    (lambda: F.nll_loss(ag.zeros(4), ag.tensor(1)), ValueError,
     r"nll_loss: expected input of shape \(N, C\)"),
    (lambda: F.binary_cross_entropy(ag.zeros(3), ag.zeros(3, 1)), ValueError,
     r"binary_cross_entropy: input \(3,\) and target \(3, 1\) must have the same shape"),
    (lambda: F.binary_cross_entropy(X, X, ag.ones(2)), ValueError,
     r"weight of shape \(2,\) does not broadcast to the input's shape \(3, 4\)"),
    (lambda: F.binary_cross_entropy_with_logits(X, X, pos_weight=ag.ones(3)), ValueError,
     r"binary_cross_entropy_with_logits: pos_weight of shape \(3,\) does not broadcast"),
    (lambda: F.l1_loss(X, ag.zeros(4, 3)), ValueError, "l1_loss: .* same shape"),
    (lambda: F.smooth_l1_loss(X, X, beta=-1.0), ValueError, "beta must be >= 0"),
    (lambda: F.huber_loss(X, X, delta=0.0), ValueError, "delta must be > 0"),
    (lambda: F.kl_div(X, X, reduction="avg"), ValueError, "kl_div: reduction must be one of"),
    (lambda: F.mse_loss(X, X, reduction="batchmean"), ValueError, "mse_loss: reduction"),
    (lambda: nn.HuberLoss(delta=-1.0), ValueError, "HuberLoss: delta must be > 0"),
    (lambda: nn.SmoothL1Loss(beta=-1.0), ValueError, "SmoothL1Loss: beta must be >= 0"),
    (lambda: nn.CrossEntropyLoss(label_smoothing=-0.1), ValueError, "label_smoothing"),
    (lambda: nn.NLLLoss("mean"), TypeError, "NLLLoss: weight must be a Tensor or None"),
    (lambda: nn.BCELoss(reduction="avg"), ValueError, "BCELoss: reduction"),
    (lambda: nn.KLDivLoss(reduction="avg"), ValueError, "KLDivLoss: reduction"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_loss_errors(index):
    make, kind, message = ERRORS[index]
    with pytest.raises(kind, match=message):
        make()
