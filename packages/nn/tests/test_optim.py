"""Optimizers step by step against PyTorch; groups, validation, state dicts, clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn, optim

torch.set_num_threads(1)

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 5)).astype(np.float32)
Y = np.array([0, 1, 2, 0, 1, 2, 2, 1])

OPTIMIZERS = [
    ("sgd", optim.SGD, torch.optim.SGD, {"lr": 0.1}),
    ("sgd-momentum", optim.SGD, torch.optim.SGD,
     {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("sgd-nesterov", optim.SGD, torch.optim.SGD,
     {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1}),
    ("adam", optim.Adam, torch.optim.Adam, {"lr": 0.01}),
    ("adam-wd-amsgrad", optim.Adam, torch.optim.Adam,
     {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "amsgrad": True}),
    ("adamw", optim.AdamW, torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1}),
    ("adamw-amsgrad", optim.AdamW, torch.optim.AdamW, {"lr": 0.01, "amsgrad": True}),
    ("rmsprop", optim.RMSprop, torch.optim.RMSprop, {"lr": 0.01}),
    ("rmsprop-centered-momentum", optim.RMSprop, torch.optim.RMSprop,
     {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
    ("adagrad", optim.Adagrad, torch.optim.Adagrad, {"lr": 0.1}),
    ("adagrad-decay", optim.Adagrad, torch.optim.Adagrad,
     {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.5}),
]


def _models(device=None):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).to(device)
    copy_weights(ref, model)
    return model, ref


def _step(model, ref, opt, opt_t):
    opt.zero_grad()
    opt_t.zero_grad()
    device = next(model.parameters()).device
    nn.CrossEntropyLoss()(model(ag.tensor(X, device=device)),
                          ag.tensor(Y, device=device)).backward()
    torch.nn.CrossEntropyLoss()(ref(torch.tensor(X)), torch.tensor(Y)).backward()
    opt.step()
    opt_t.step()


def _assert_same(model, ref):
    for (_, p), (_, p_t) in zip(model.named_parameters(), ref.named_parameters()):
        assert_close(p, p_t, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,cls,cls_t,kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizer_matches_torch(name, cls, cls_t, kwargs, device):
    model, ref = _models(device)
    opt, opt_t = cls(model.parameters(), **kwargs), cls_t(ref.parameters(), **kwargs)
    for _ in range(6):
        _step(model, ref, opt, opt_t)
        _assert_same(model, ref)
    assert "update rule" in cls.__doc__.lower() or "::" in cls.__doc__


def test_param_groups_with_their_own_hyperparameters():
    model, ref = _models()
    groups = lambda m: [{"params": list(m[0].parameters()), "lr": 0.5},  # noqa: E731
                        {"params": list(m[2].parameters())}]
    opt = optim.SGD(groups(model), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(groups(ref), lr=0.1, momentum=0.9)
    for _ in range(3):
        _step(model, ref, opt, opt_t)
    _assert_same(model, ref)
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.1]


def test_state_dict_resumes_identically():
    model, ref = _models()
    opt, opt_t = optim.Adam(model.parameters(), lr=0.01), torch.optim.Adam(ref.parameters(),
                                                                           lr=0.01)
    for _ in range(3):
        _step(model, ref, opt, opt_t)
    state = opt.state_dict()
    assert sorted(state["state"]) == [0, 1, 2, 3] and state["state"][0]["step"] == 3
    fresh = optim.Adam(model.parameters(), lr=0.5)
    fresh.load_state_dict(state)
    assert fresh.param_groups[0]["lr"] == 0.01
    for _ in range(3):
        _step(model, ref, fresh, opt_t)
    _assert_same(model, ref)


def test_load_state_dict_rejects_mismatches():
    model, _ = _models()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.zero_grad()
    model(ag.tensor(X)).sum().backward()
    opt.step()
    state = opt.state_dict()
    other = optim.SGD(list(model.parameters())[:2], lr=0.1)
    with pytest.raises(ValueError, match="group 0 has 4 saved parameters, 2 here"):
        other.load_state_dict(state)
    state["state"][0]["momentum_buffer"] = np.zeros((9, 9), np.float32)
    with pytest.raises(ValueError, match="nothing was loaded"):
        opt.load_state_dict(state)


def test_zero_grad_and_skipping_parameters_without_grad():
    model, _ = _models()
    opt = optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    opt.step()
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b)
    model(ag.tensor(X)).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert all(float(abs(p.grad.numpy()).sum()) == 0 for p in model.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_step_records_no_graph():
    model, _ = _models()
    opt = optim.Adam(model.parameters())
    model(ag.tensor(X)).sum().backward()
    opt.step()
    assert all(p.is_leaf and p.requires_grad for p in model.parameters())


@pytest.mark.parametrize("make,match", [
    (lambda ps: optim.SGD(ps, lr=-1), "invalid lr"),
    (lambda ps: optim.SGD(ps, lr=0.1, nesterov=True), "nesterov"),
    (lambda ps: optim.Adam(ps, betas=(0.9, 1.0)), "betas"),
    (lambda ps: optim.Adam(ps, eps=-1e-8), "invalid eps"),
    (lambda ps: optim.RMSprop(ps, alpha=-0.1), "invalid alpha"),
    (lambda ps: optim.Adagrad(ps, lr_decay=-1), "invalid lr_decay"),
    (lambda ps: optim.AdamW(ps, weight_decay=-1), "invalid weight_decay"),
    (lambda ps: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda ps: optim.SGD([{"params": ps[:1]}, {"params": ps[:1]}], lr=0.1), "more than one"),
])
def test_hyperparameters_are_validated(make, match):
    params = list(_models()[0].parameters())
    with pytest.raises(ValueError, match=match):
        make(params)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    model, ref = _models()
    nn.CrossEntropyLoss()(model(ag.tensor(X)), ag.tensor(Y)).backward()
    torch.nn.CrossEntropyLoss()(ref(torch.tensor(X)), torch.tensor(Y)).backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.1, norm_type)
    assert float(total) == pytest.approx(float(total_t), rel=1e-5)
    for p, p_t in zip(model.parameters(), ref.parameters()):
        assert_close(p.grad, p_t.grad)
    assert optim.clip_grad_norm_ is nn.utils.clip_grad_norm_


@pytest.mark.parametrize("make", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop,
                                  optim.Adagrad])
@pytest.mark.parametrize("name", ["lr", "weight_decay"])
def test_nan_hyperparameters_are_rejected_like_torch(make, name):
    params = list(_models()[0].parameters())
    with pytest.raises(ValueError, match=f"invalid {name} nan"):
        make(params, **{"lr": 0.1, name: math.nan})


def test_load_state_dict_rejects_a_nan_lr_and_changes_nothing():
    params = list(_models()[0].parameters())
    opt = optim.Adam(params, lr=0.01)
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = math.nan
    with pytest.raises(ValueError, match="group 0: Adam: invalid lr nan"):
        opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.01


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_propagates_a_nonfinite_gradient_like_torch(norm_type, bad):
    model, ref = _models()
    nn.CrossEntropyLoss()(model(ag.tensor(X)), ag.tensor(Y)).backward()
    torch.nn.CrossEntropyLoss()(ref(torch.tensor(X)), torch.tensor(Y)).backward()
    for p in (next(iter(model.parameters())), next(iter(ref.parameters()))):
        grad = p.grad.numpy().copy()
        grad.reshape(-1)[3] = bad
        p.grad = type(p.grad)(grad) if isinstance(p.grad, torch.Tensor) else ag.tensor(grad)
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.1, norm_type)
    assert str(float(total)) == str(float(total_t))
    for p, p_t in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(np.isnan(p.grad.numpy()), np.isnan(p_t.grad.numpy()))
        assert_close(p.grad, p_t.grad)
    with pytest.raises(RuntimeError, match="total norm of order"):
        nn.utils.clip_grad_norm_(model.parameters(), 0.1, norm_type, error_if_nonfinite=True)


def test_lamina_train_with_lr_nan_fails_before_training(capsys):
    from lamina.models._cli import main

    with pytest.raises(SystemExit) as exc:  # refused by the option parser (exit status 2)
        main(["mnist", "--lr", "nan", "--epochs", "1", "--device", "numpy"])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert "lamina-train mnist: error: argument --lr: must be a finite number >= 0, got nan" in err
    assert "epoch" not in out.lower()


@pytest.mark.parametrize("name,ours,_,kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_step_updates_parameters_in_place(name, ours, _, kwargs):
    w = nn.Parameter(ag.tensor([[1.0, -2.0], [0.5, 3.0]]))
    data, row = w._data, w[0].detach()  # the storage and a view of it, taken before the step
    opt = ours([w], **kwargs)
    (w * w).sum().backward()
    before = w.detach().numpy().copy()
    opt.step()
    assert w._data is data and w._version == 1
    assert not np.array_equal(w.detach().numpy(), before)
    np.testing.assert_array_equal(row.numpy(), w.detach().numpy()[0])


def test_backward_through_a_graph_saved_before_a_step_raises():
    w = nn.Parameter(ag.tensor([1.0, 2.0]))
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    pending = (w * w).sum()  # saves w
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        pending.backward()


@pytest.mark.parametrize("name,ours,_,kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_every_optimizer_step_bumps_the_version_on_every_device(name, ours, _, kwargs, device):
    # Adam/AdamW go through the fused adam_step (amsgrad through its composite).
    model, _ref = _models(device)
    opt = ours(model.parameters(), **kwargs)
    x = ag.tensor(X, device=device, requires_grad=True)
    model(x).sum().backward()
    pending = model(x).sum()  # saves the weights
    versions = [p._version for p in model.parameters()]
    opt.step()
    assert [p._version for p in model.parameters()] == [v + 1 for v in versions]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        pending.backward()


def test_zero_grad_without_none_zeroes_in_place():
    w = nn.Parameter(ag.tensor([1.0, 2.0]))
    (w * w).sum().backward()
    grad = w.grad
    optim.SGD([w], lr=0.1).zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0]
