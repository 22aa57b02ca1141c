"""Adadelta, Adamax, NAdam, RAdam and the extra LR schedulers against PyTorch 2.13.

Optimizers: 20 float64 steps on a tiny tanh regression, every parameter compared
after every step; state dicts saved mid-run resume on PyTorch's trajectory.
Schedulers: the lr sequence compared step by step; state dicts continue it.
"""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
import torch
from lamina import autograd as ag
from lamina import nn, optim
from lamina.optim import lr_scheduler as S

torch.set_num_threads(1)
TS = torch.optim.lr_scheduler
# the scheduler tests step without training; torch warns about that order
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of")

RNG = np.random.default_rng(7)
W0, B0 = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
X, Y = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 3))

OPTIMIZERS = [
    ("adadelta", optim.Adadelta, torch.optim.Adadelta, {}),
    ("adadelta-wd", optim.Adadelta, torch.optim.Adadelta,
     {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    ("adamax", optim.Adamax, torch.optim.Adamax, {"lr": 0.05}),
    ("adamax-wd", optim.Adamax, torch.optim.Adamax,
     {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3, "weight_decay": 0.2}),
    ("nadam", optim.NAdam, torch.optim.NAdam, {"lr": 0.05}),
    ("nadam-wd", optim.NAdam, torch.optim.NAdam,
     {"lr": 0.05, "betas": (0.8, 0.95), "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("nadam-decoupled", optim.NAdam, torch.optim.NAdam,
     {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("radam", optim.RAdam, torch.optim.RAdam, {"lr": 0.05}),
    # rho_t crosses 5 at step 6 or 7 with these beta2, so both branches are compared;
    # beta2 = 0.6 keeps rho_t below 5 for good (un-rectified steps only)
    ("radam-wd", optim.RAdam, torch.optim.RAdam,
     {"lr": 0.05, "betas": (0.8, 0.8), "weight_decay": 0.1}),
    ("radam-decoupled", optim.RAdam, torch.optim.RAdam,
     {"lr": 0.05, "betas": (0.9, 0.9), "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("radam-never-rectified", optim.RAdam, torch.optim.RAdam,
     {"lr": 0.05, "betas": (0.9, 0.6)}),
]
IDS = [o[0] for o in OPTIMIZERS]


def _params(device=None):
    return [nn.Parameter(ag.tensor(W0.copy(), device=device)),
            nn.Parameter(ag.tensor(B0.copy(), device=device))]


def _params_t():
    return [torch.nn.Parameter(torch.tensor(W0)), torch.nn.Parameter(torch.tensor(B0))]


def _loss(w, b, x, y):
    return (((x @ w.T + b).tanh() - y) ** 2).mean()


def _step(params, opt, device):
    opt.zero_grad()
    _loss(*params, ag.tensor(X, device=device), ag.tensor(Y, device=device)).backward()
    opt.step()


def _step_t(params, opt):
    opt.zero_grad()
    _loss(*params, torch.tensor(X), torch.tensor(Y)).backward()
    opt.step()


def _assert_same(params, params_t):
    for p, p_t in zip(params, params_t):
        assert p.detach().numpy().dtype == np.float64
        np.testing.assert_allclose(p.detach().numpy(), p_t.detach().numpy(), rtol=1e-6,
                                   atol=1e-9)


@pytest.mark.parametrize("name,cls,cls_t,kwargs", OPTIMIZERS, ids=IDS)
def test_trajectory_matches_torch(name, cls, cls_t, kwargs, device):
    params, params_t = _params(device), _params_t()
    opt, opt_t = cls(params, **kwargs), cls_t(params_t, **kwargs)
    for _ in range(20):
        _step(params, opt, device)
        _step_t(params_t, opt_t)
        _assert_same(params, params_t)
    assert "update rule" in cls.__doc__.lower()
    assert set(opt.state_dict()["state"][0]) == set(opt_t.state_dict()["state"][0])


@pytest.mark.parametrize("name,cls,cls_t,kwargs", OPTIMIZERS, ids=IDS)
def test_state_dict_resumes_on_torchs_trajectory(name, cls, cls_t, kwargs, device):
    params, params_t = _params(device), _params_t()
    opt, opt_t = cls(params, **kwargs), cls_t(params_t, **kwargs)
    for _ in range(7):
        _step(params, opt, device)
        _step_t(params_t, opt_t)
    saved = opt.state_dict()
    assert saved["state"][1]["step"] == 7
    fresh = cls(params, lr=0.3)  # hyperparameters come back from the state dict too
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0] == {**opt.param_groups[0], "params": params}
    for _ in range(8):
        _step(params, fresh, device)
        _step_t(params_t, opt_t)
    _assert_same(params, params_t)


@pytest.mark.parametrize("cls", [optim.Adadelta, optim.Adamax, optim.NAdam, optim.RAdam])
def test_defaults_match_torch(cls):
    ours = cls(_params()).param_groups[0]
    theirs = getattr(torch.optim, cls.__name__)(_params_t()).param_groups[0]
    for key in ours:
        if key != "params":
            assert ours[key] == theirs[key], key


@pytest.mark.parametrize("name,kwargs,match", [
    ("Adadelta", {"lr": -1.0}, "Adadelta: invalid lr -1.0"),
    ("Adadelta", {"rho": 1.5}, "Adadelta: invalid rho 1.5"),
    ("Adadelta", {"eps": -1e-6}, "Adadelta: invalid eps"),
    ("Adamax", {"betas": (0.9, 1.0)}, r"Adamax: invalid betas \(0.9, 1.0\)"),
    ("Adamax", {"weight_decay": math.nan}, "Adamax: invalid weight_decay nan"),
    ("NAdam", {"momentum_decay": -0.1}, "NAdam: invalid momentum_decay -0.1"),
    ("NAdam", {"betas": (-0.1, 0.9)}, "NAdam: invalid betas"),
    ("RAdam", {"lr": math.nan}, "RAdam: invalid lr nan"),
    ("RAdam", {"eps": -1.0}, "RAdam: invalid eps -1.0"),
])
def test_bad_hyperparameters_raise_like_torch(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        getattr(optim, name)(_params(), **kwargs)
    with pytest.raises(ValueError):  # torch refuses the same values
        getattr(torch.optim, name)(_params_t(), **kwargs)


# ------------------------------------------------------------------ schedulers
SCHEDULERS = [
    ("constant", lambda o: S.ConstantLR(o, factor=0.25, total_iters=4),
     lambda o: TS.ConstantLR(o, factor=0.25, total_iters=4)),
    ("constant-default", S.ConstantLR, TS.ConstantLR),
    ("polynomial", lambda o: S.PolynomialLR(o, total_iters=6, power=2.0),
     lambda o: TS.PolynomialLR(o, total_iters=6, power=2.0)),
    ("warm-restarts", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.01),
     lambda o: TS.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.01)),
    ("warm-restarts-mult", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
     lambda o: TS.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2)),
    ("chained", lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.1, 3), S.ExponentialLR(o, 0.9)]),
     lambda o: TS.ChainedScheduler([TS.ConstantLR(o, 0.1, 3), TS.ExponentialLR(o, 0.9)])),
    ("chained-3",
     lambda o: S.ChainedScheduler([S.LinearLR(o, 0.2, total_iters=4), S.StepLR(o, 5, 0.5),
                                   S.PolynomialLR(o, total_iters=30, power=0.5)]),
     lambda o: TS.ChainedScheduler([TS.LinearLR(o, 0.2, total_iters=4), TS.StepLR(o, 5, 0.5),
                                    TS.PolynomialLR(o, total_iters=30, power=0.5)])),
    ("cyclic-triangular", lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5),
     lambda o: TS.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5)),
    ("cyclic-triangular2",
     lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=2, mode="triangular2",
                          base_momentum=0.7, max_momentum=0.95),
     lambda o: TS.CyclicLR(o, 0.01, 0.1, step_size_up=2, mode="triangular2",
                           base_momentum=0.7, max_momentum=0.95)),
    ("cyclic-exp-range",
     lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.9,
                          cycle_momentum=False),
     lambda o: TS.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.9,
                           cycle_momentum=False)),
    ("cyclic-scale-fn",
     lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 1 / x,
                          scale_mode="cycle"),
     lambda o: TS.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 1 / x,
                           scale_mode="cycle")),
]
SCHED_IDS = [s[0] for s in SCHEDULERS]


def _opts(kind):
    w, w_t = _params()[:1], _params_t()[:1]
    if kind == "adam":
        return optim.Adam(w, lr=0.1), torch.optim.Adam(w_t, lr=0.1)
    return optim.SGD(w, lr=0.1, momentum=0.9), torch.optim.SGD(w_t, lr=0.1, momentum=0.9)


def _momentum(opt):
    group = opt.param_groups[0]
    return group["betas"][0] if "betas" in group else group["momentum"]


def _run(opt, sched, steps, metrics=None):
    """lr and momentum after each of ``steps`` scheduler steps."""
    out = []
    for i in range(steps):
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append((sched.get_last_lr()[0], opt.param_groups[0]["lr"], _momentum(opt)))
    return out


def _assert_sequences(ours, theirs):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), f"step {i + 1}: {a} != {b}"


@pytest.mark.parametrize("name,make,make_t", SCHEDULERS, ids=SCHED_IDS)
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_scheduler_lr_sequence_matches_torch(name, make, make_t, kind):
    opt, opt_t = _opts(kind)
    sched, sched_t = make(opt), make_t(opt_t)
    assert sched.get_last_lr() == pytest.approx(sched_t.get_last_lr(), rel=1e-12)
    _assert_sequences(_run(opt, sched, 20), _run(opt_t, sched_t, 20))


@pytest.mark.parametrize("name,make,make_t", SCHEDULERS, ids=SCHED_IDS)
def test_scheduler_state_dict_resumes_the_sequence(name, make, make_t):
    opt, opt_t = _opts("sgd")
    sched, sched_t = make(opt), make_t(opt_t)
    _run(opt, sched, 7)
    expected = _run(opt_t, sched_t, 20)[7:]
    opt2, _ = _opts("sgd")
    sched2 = make(opt2)
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(sched.state_dict())
    _assert_sequences(_run(opt2, sched2, 13), expected)


METRICS = [5.0, 4.0, 4.0, 3.9999, 4.1, 4.0, 3.0, 3.0, 3.0, 3.0,
           3.0, 2.0, 2.0, 2.5, 2.5, 2.5, 2.5, 2.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
PLATEAU = [
    {},
    {"factor": 0.5, "patience": 1},
    {"factor": 0.5, "patience": 1, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 2},
    {"mode": "max", "factor": 0.3, "patience": 0, "threshold": 0.01},
    {"mode": "max", "patience": 2, "threshold_mode": "abs", "min_lr": 0.004},
    {"factor": 0.5, "patience": 0, "min_lr": [0.02], "eps": 1e-3},
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=[str(k) for k in PLATEAU])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    opt, opt_t = _opts("sgd")
    sched, sched_t = S.ReduceLROnPlateau(opt, **kwargs), TS.ReduceLROnPlateau(opt_t, **kwargs)
    metrics = METRICS if kwargs.get("mode") != "max" else [-m for m in METRICS]
    ours, theirs = _run(opt, sched, 13, metrics), _run(opt_t, sched_t, 13, metrics)
    _assert_sequences(ours, theirs)
    opt2, _ = _opts("sgd")
    sched2 = S.ReduceLROnPlateau(opt2, **kwargs)
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(sched.state_dict())
    rest = metrics[13:]
    _assert_sequences(_run(opt2, sched2, len(rest), rest),
                      _run(opt_t, sched_t, len(rest), rest))
    assert sched2.best == sched_t.best and sched2.num_bad_epochs == sched_t.num_bad_epochs


def test_reduce_lr_on_plateau_cuts_every_group_to_its_own_floor():
    lrs = []
    for lib, ps in ((optim, _params()), (torch.optim, _params_t())):
        opt = lib.SGD([{"params": ps[:1], "lr": 1.0}, {"params": ps[1:], "lr": 0.1}])
        sched = lib.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0,
                                                   min_lr=[0.3, 0.0])
        for _ in range(3):  # the first epoch improves on inf; the next two cut
            sched.step(1.0)
        lrs.append(sched.get_last_lr())
    assert lrs[0] == lrs[1] == [0.3, 0.025]


@pytest.mark.parametrize("make,match", [
    (lambda o: S.ConstantLR(o, factor=1.5), "ConstantLR: factor must be in"),
    (lambda o: S.PolynomialLR(o, total_iters=0), "PolynomialLR: total_iters must be >= 1"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), "T_0 must be a positive int, got 0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5), "T_mult must be an int"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), "ReduceLROnPlateau: factor must be < 1.0"),
    (lambda o: S.ReduceLROnPlateau(o, mode="avg"), "mode must be 'min' or 'max', got 'avg'"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="pct"), "threshold_mode must be"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]), "expected 1 min_lrs"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, mode="saw"), "CyclicLR: mode must be one of"),
    (lambda o: S.CyclicLR(o, [0.1, 0.2], 1.0), "expected 1 values of base_lr"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=0), "step_size_up > 0"),
    (lambda o: S.ChainedScheduler([]), "got no schedulers"),
    (lambda o: S.ChainedScheduler([S.CosineAnnealingLR(o, 5)]), "CosineAnnealingLR"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 2), S.StepLR(_opts("sgd")[0], 2)]),
     "scheduler 1 \\(StepLR\\) does not drive the same optimizer"),
    (lambda o: S.SequentialLR(o, [S.CyclicLR(o, 0.1, 1.0), S.StepLR(o, 2)], [2]),
     "not OneCycleLR, CyclicLR"),
    (lambda o: S.SequentialLR(o, [S.ReduceLROnPlateau(o), S.StepLR(o, 2)], [2]),
     "ReduceLROnPlateau"),
])
def test_scheduler_bad_arguments_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make(_opts("sgd")[0])


def test_cyclic_momentum_needs_an_optimizer_with_momentum():
    with pytest.raises(ValueError, match="CyclicLR: cycle_momentum needs"):
        S.CyclicLR(optim.Adagrad(_params()), 0.1, 1.0)
    with pytest.raises(ValueError):
        TS.CyclicLR(torch.optim.Adagrad(_params_t()), 0.1, 1.0)


@pytest.mark.parametrize("name", ["lamina.optim._adadelta", "lamina.optim._adam_variants",
                                  "lamina.optim._plateau"])
def test_docstring_examples_of_the_new_modules_run(name):
    # lr_scheduler's (ConstantLR, ChainedScheduler) run in test_doctests.py
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
