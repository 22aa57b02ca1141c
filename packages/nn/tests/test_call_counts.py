"""Eager overhead as Python call counts: deterministic, unlike a time.

A profiler hook counts every Python function call ('call' events: functions,
methods, properties, generator expressions) made by an ``nn.Linear(64, 32)``
forward on a (16, 64) input and by its backward. The layers above NDArray
(lamina.nn and lamina.autograd: the module call, the op, the graph node and
the engine) have bounds of their own; the totals include NDArray's work
below them (argument checks, layout, the kernel calls).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import pytest
from lamina import nn

_LAYERS = ("/lamina/autograd/", "/lamina/nn/")


def _count(fn: Callable[[], Any]) -> tuple[int, int]:
    """(all Python calls, calls in lamina.autograd and lamina.nn) made by ``fn()``."""
    total = 0
    layers = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal total, layers
        if event == "call":
            total += 1
            name = frame.f_code.co_filename.replace("\\", "/")
            layers += any(part in name for part in _LAYERS)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return total - 1, layers  # less the call of fn itself


def _linear_counts(device: str) -> dict[str, tuple[int, int]]:
    ag.manual_seed(0)
    layer = nn.Linear(64, 32, device=device)
    x = ag.randn(16, 64, device=device)
    g = ag.ones(16, 32, device=device)
    layer(x).backward(g)  # warm up: first-use work (device setup, imports) is not counted
    counts = {"forward": _count(lambda: layer(x))}
    out = layer(x)
    layer.weight.grad = layer.bias.grad = None  # as zero_grad() leaves them each step
    counts["backward"] = _count(lambda: out.backward(g))
    assert layer.weight.grad is not None and layer.bias.grad is not None
    return counts


def _devices() -> list[str]:
    return [b.name for b in nd.list_backends() if b.status == "available"
            and b.name in ("numpy", "cpu")]


@pytest.mark.parametrize("host", _devices())
def test_linear_layers_above_ndarray_make_few_calls(host: str) -> None:
    counts = _linear_counts(host)
    assert counts["forward"][1] <= 10, counts
    assert counts["backward"][1] <= 20, counts


@pytest.mark.skipif("cpu" not in _devices(), reason="needs the compiled cpu backend")
def test_linear_total_calls_within_issue_budget() -> None:
    counts = _linear_counts("cpu")
    # the issue's budget is 40 and 100; measured 19 and 54, bounded with a small margin
    assert counts["forward"][0] <= 22, counts
    assert counts["backward"][0] <= 58, counts
