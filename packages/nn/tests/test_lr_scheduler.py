"""LR schedulers: lr sequences against PyTorch's, and state dicts."""

from __future__ import annotations

import pytest
import torch
from lamina import nn, optim
from lamina.optim import lr_scheduler as S

SCHEDULERS = [
    ("step", lambda o: S.StepLR(o, 3, gamma=0.5),
     lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5), 12),
    ("multistep", lambda o: S.MultiStepLR(o, [2, 5, 9], gamma=0.3),
     lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [2, 5, 9], gamma=0.3), 12),
    ("exponential", lambda o: S.ExponentialLR(o, 0.9),
     lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9), 12),
    ("cosine", lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.01),
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.01), 10),
    ("linear-warmup", lambda o: S.LinearLR(o, start_factor=0.1, total_iters=4),
     lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=4), 8),
    ("linear-decay", lambda o: S.LinearLR(o, 1.0, 0.2, total_iters=5),
     lambda o: torch.optim.lr_scheduler.LinearLR(o, 1.0, 0.2, total_iters=5), 8),
    ("lambda", lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1)),
     lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)), 6),
    ("warmup-then-cosine",
     lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=3),
                                  S.CosineAnnealingLR(o, T_max=8)], milestones=[3]),
     lambda o: torch.optim.lr_scheduler.SequentialLR(
         o, [torch.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=3),
             torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=8)], milestones=[3]), 10),
    ("sequential-3",
     lambda o: S.SequentialLR(o, [S.ExponentialLR(o, 0.5), S.StepLR(o, 2, 0.1),
                                  S.LinearLR(o, 0.2, total_iters=2)], milestones=[2, 5]),
     lambda o: torch.optim.lr_scheduler.SequentialLR(
         o, [torch.optim.lr_scheduler.ExponentialLR(o, 0.5),
             torch.optim.lr_scheduler.StepLR(o, 2, 0.1),
             torch.optim.lr_scheduler.LinearLR(o, 0.2, total_iters=2)], milestones=[2, 5]), 9),
    ("onecycle", lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=20),
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=20), 19),
    ("onecycle-linear-3phase",
     lambda o: S.OneCycleLR(o, max_lr=0.5, epochs=3, steps_per_epoch=5,
                            anneal_strategy="linear", three_phase=True),
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, epochs=3, steps_per_epoch=5,
                                                   anneal_strategy="linear",
                                                   three_phase=True), 14),
]


def _pair(kind="sgd"):
    if kind == "adam":
        return (optim.Adam(nn.Linear(2, 2).parameters(), lr=0.1),
                torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), lr=0.1))
    return (optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9),
            torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9))


@pytest.mark.parametrize("name,make,make_t,steps", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_lr_sequence_matches_torch(name, make, make_t, steps, kind):
    opt, opt_t = _pair(kind)
    sched, sched_t = make(opt), make_t(opt_t)
    lrs, lrs_t, moms, moms_t = [], [], [], []
    for _ in range(steps):
        opt.step()
        opt_t.step()
        sched.step()
        sched_t.step()
        lrs.append(sched.get_last_lr()[0])
        lrs_t.append(sched_t.get_last_lr()[0])
        key = "betas" if kind == "adam" else "momentum"
        moms.append(opt.param_groups[0][key])
        moms_t.append(opt_t.param_groups[0][key])
    assert lrs == pytest.approx(lrs_t, rel=1e-9, abs=1e-12)
    for m, m_t in zip(moms, moms_t):
        assert m == pytest.approx(m_t, rel=1e-9)


def test_state_dict_continues_the_sequence():
    opt, _ = _pair()
    sched = S.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        sched.step()
    state = sched.state_dict()
    opt2, _ = _pair()
    sched2 = S.CosineAnnealingLR(opt2, T_max=10)
    sched2.load_state_dict(state)
    sched.step()
    sched2.step()
    assert sched2.get_last_lr() == pytest.approx(sched.get_last_lr())


def test_scheduler_errors():
    opt, _ = _pair()
    with pytest.raises(ValueError, match="step_size"):
        S.StepLR(opt, 0)
    with pytest.raises(ValueError, match="total_steps"):
        S.OneCycleLR(opt, 1.0)
    sched = S.OneCycleLR(opt, 1.0, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="stepped 3 times"):
        sched.step()
    with pytest.raises(TypeError, match="Optimizer"):
        S.StepLR(object(), 2)
