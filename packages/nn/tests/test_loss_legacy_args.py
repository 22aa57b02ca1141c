"""The deprecated ``size_average`` / ``reduce`` loss arguments, against torch.

Every combination of the two in {None, True, False}, given by keyword and by
position, must pick torch's reduction, give torch's values and gradients and
emit torch's warning (category and text) on every available device.
"""

from __future__ import annotations

import inspect
import itertools
import warnings

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn

F = nn.functional
LEGACY = list(itertools.product([None, True, False], repeat=2))
CLASSES = np.array([0, 2, 1, 2])


def _inputs(name: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    if name in ("cross_entropy", "binary_cross_entropy_with_logits"):
        return x, (CLASSES if name == "cross_entropy" else rng.uniform(size=(4, 3)))
    if name == "nll_loss":
        return x - np.log(np.exp(x).sum(1, keepdims=True)), CLASSES
    if name == "binary_cross_entropy":
        return 1 / (1 + np.exp(-x)), rng.uniform(size=(4, 3))
    if name == "kl_div":
        return np.log(rng.dirichlet(np.ones(3), 4)), rng.dirichlet(np.ones(3), 4)
    return x, rng.standard_normal((4, 3))


# functional name -> module name, as torch pairs them
LOSSES = {
    "cross_entropy": "CrossEntropyLoss", "nll_loss": "NLLLoss",
    "binary_cross_entropy": "BCELoss", "binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
    "mse_loss": "MSELoss", "l1_loss": "L1Loss", "smooth_l1_loss": "SmoothL1Loss",
    "kl_div": "KLDivLoss",
}


def _legacy_warnings(record: list[warnings.WarningMessage]) -> list[tuple[type, str]]:
    return [(w.category, str(w.message)) for w in record if "size_average" in str(w.message)]


def _run(make_loss, x: np.ndarray, t: np.ndarray, lib, device: str | None):
    """(value, input gradient, legacy warnings) of ``make_loss(input, target)``."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        if lib is torch:
            xi = torch.tensor(x, requires_grad=True)
            ti = torch.tensor(t)
        else:
            xi = ag.tensor(x, device=device, requires_grad=True)
            ti = ag.tensor(t, device=device)
        loss = make_loss(xi, ti)
    (loss * loss).sum().backward()
    return loss, xi.grad, _legacy_warnings(record)


def _assert_same(ours, theirs) -> None:
    assert_close(ours[0], theirs[0], 1e-10, 1e-12)
    assert_close(ours[1], theirs[1], 1e-10, 1e-12)
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("size_average,reduce", LEGACY)
@pytest.mark.parametrize("name", list(LOSSES))
def test_functional_legacy_args_match_torch(name, size_average, reduce, device):
    x, t = _inputs(name)
    legacy = dict(size_average=size_average, reduce=reduce)
    ours = _run(lambda a, b: getattr(F, name)(a, b, **legacy), x, t, ag, device)
    theirs = _run(lambda a, b: getattr(torch.nn.functional, name)(a, b, **legacy), x, t,
                  torch, None)
    _assert_same(ours, theirs)
    assert len(theirs[2]) == (size_average is not None or reduce is not None)
    if theirs[2]:
        assert theirs[2][0][0] is UserWarning


@pytest.mark.parametrize("size_average,reduce", LEGACY)
@pytest.mark.parametrize("name", list(LOSSES))
def test_module_legacy_args_match_torch(name, size_average, reduce, device):
    x, t = _inputs(name)
    legacy = dict(size_average=size_average, reduce=reduce, reduction="sum")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        module = getattr(nn, LOSSES[name])(**legacy)
    with warnings.catch_warnings(record=True) as torch_record:
        warnings.simplefilter("always")
        torch_module = getattr(torch.nn, LOSSES[name])(**legacy)
    assert module.reduction == torch_module.reduction
    assert _legacy_warnings(record) == _legacy_warnings(torch_record)
    _assert_same(_run(module, x, t, ag, device), _run(torch_module, x, t, torch, None))


def _legacy_positions(fn) -> dict[str, int]:
    names = list(inspect.signature(fn).parameters)
    return {n: names.index(n) for n in names if n in ("size_average", "ignore_index",
                                                        "reduce", "reduction", "weight")}


@pytest.mark.parametrize("name", list(LOSSES))
def test_legacy_args_sit_at_torchs_positions(name):
    torch_fn, torch_cls = getattr(torch.nn.functional, name), getattr(torch.nn, LOSSES[name])
    expected = _legacy_positions(torch_fn)
    if name in ("mse_loss", "l1_loss"):
        expected.pop("weight")  # torch 2.13's new keyword, after reduction; Lamina lacks it
    assert _legacy_positions(getattr(F, name)) == expected
    assert _legacy_positions(getattr(nn, LOSSES[name])) == _legacy_positions(torch_cls)


@pytest.mark.parametrize("args", [(None, -100, False), (False, -100), (None, 1, None, "sum")])
def test_legacy_args_by_position_match_torch(args, device):
    x, t = _inputs("nll_loss")
    ours = _run(lambda a, b: F.nll_loss(a, b, None, *args), x, t, ag, device)
    theirs = _run(lambda a, b: torch.nn.functional.nll_loss(a, b, None, *args), x, t,
                  torch, None)
    _assert_same(ours, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert nn.NLLLoss(None, *args).reduction == torch.nn.NLLLoss(None, *args).reduction
    x, t = _inputs("mse_loss")
    _assert_same(_run(lambda a, b: F.mse_loss(a, b, False, True), x, t, ag, device),
                 _run(lambda a, b: torch.nn.functional.mse_loss(a, b, False, True), x, t,
                      torch, None))


def test_huber_loss_has_no_legacy_args_as_in_torch():
    for fn in (F.huber_loss, nn.HuberLoss, torch.nn.functional.huber_loss, torch.nn.HuberLoss):
        assert "size_average" not in inspect.signature(fn).parameters


@pytest.mark.parametrize("call", [
    lambda: nn.MSELoss("sum"),
    lambda: nn.KLDivLoss("batchmean"),
    lambda: F.l1_loss(ag.zeros(2), ag.zeros(2), "none"),
    lambda: F.smooth_l1_loss(ag.zeros(2), ag.zeros(2), None, "sum"),
])
def test_reduction_passed_where_size_average_sits_raises(call):
    # torch would read the string as a truthy size_average and silently take "mean"
    with pytest.raises(TypeError, match=r"(size_average|reduce) must be a bool or None, got "
                                        r"'\w+'; pass reduction='\w+' by keyword"):
        call()


def test_legacy_warning_points_at_the_callers_line():
    for make in (lambda: nn.BCELoss(size_average=False),
                 lambda: F.mse_loss(ag.zeros(2), ag.zeros(2), reduce=False)):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            make()
        assert [w.filename for w in record] == [__file__]
