"""Autograd benchmarks: Lamina vs PyTorch CPU, side by side in one process.

Measures the per-op eager overhead (a 1-element add, with and without
``requires_grad``) and one forward+backward of a 784-256-10 MLP at batch 128.
The two libraries run interleaved (Lamina, PyTorch, Lamina, ...) so that
machine noise hits both alike; each row reports medians.

Run: ``python benchmarks/bench_autograd.py`` (prints a table); ``nox -s bench``
calls ``run()``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _per_call_us(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e6


def _interleaved(ours: Callable[[], Any], theirs: Callable[[], Any], number: int,
                 repeats: int) -> tuple[float, float]:
    """Median microseconds per call of each, alternating the two ``repeats`` times."""
    ours(), theirs()  # warm-up
    a, b = [], []
    for _ in range(repeats):
        a.append(_per_call_us(ours, number))
        b.append(_per_call_us(theirs, number))
    return statistics.median(a), statistics.median(b)


def _add_cases(requires_grad: bool) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import lamina.autograd as ag
    import torch

    x, y = ag.ones(1, requires_grad=requires_grad), ag.ones(1)
    tx, ty = torch.ones(1, requires_grad=requires_grad), torch.ones(1)
    return (lambda: x + y), (lambda: tx + ty)


def _mlp_cases() -> tuple[Callable[[], Any], Callable[[], Any]]:
    import lamina.autograd as ag
    import torch

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.05
              for s in [(128, 784), (784, 256), (256,), (256, 10), (10,)]]
    target_np = rng.integers(0, 10, 128)
    x, w1, b1, w2, b2 = [ag.tensor(a) for a in arrays]
    for p in (w1, b1, w2, b2):
        p.requires_grad_()
    onehot = ag.one_hot(ag.tensor(target_np), 10)
    tx, tw1, tb1, tw2, tb2 = [torch.from_numpy(a.copy()) for a in arrays]
    for p in (tw1, tb1, tw2, tb2):
        p.requires_grad_()
    target = torch.from_numpy(target_np)

    def ours() -> None:
        logits = (x @ w1 + b1).relu() @ w2 + b2
        loss = -(logits.log_softmax(dim=1) * onehot).sum(dim=1).mean()
        loss.backward()
        for p in (w1, b1, w2, b2):
            p.grad = None

    def theirs() -> None:
        logits = (tx @ tw1 + tb1).relu() @ tw2 + tb2
        loss = torch.nn.functional.cross_entropy(logits, target)
        loss.backward()
        for p in (tw1, tb1, tw2, tb2):
            p.grad = None

    return ours, theirs


def run(repeats: int = 3) -> list[dict[str, Any]]:
    """Runs every case; one row per case with medians and the Lamina/PyTorch ratio.

    Returns:
        Rows ``{"op", "lamina", "torch", "unit", "ratio"}``; ratio > 1 means
        Lamina is slower.
    """
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    cases = [
        ("add 1-element, no grad", *_add_cases(False), 2000),
        ("add 1-element, requires_grad", *_add_cases(True), 2000),
        ("MLP 784-256-10 fwd+bwd, batch 128", *_mlp_cases(), 20),
    ]
    rows = []
    for name, ours, theirs, number in cases:
        lamina_us, torch_us = _interleaved(ours, theirs, number, max(repeats, 1))
        rows.append({"op": name, "lamina": round(lamina_us, 2), "torch": round(torch_us, 2),
                     "unit": "us", "ratio": round(lamina_us / torch_us, 2)})
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'case':<36} {'lamina':>10} {'torch':>10} {'unit':>5} {'ratio':>7}"]
    for r in rows:
        lines.append(f"{r['op']:<36} {r['lamina']:>10.2f} {r['torch']:>10.2f} {r['unit']:>5} "
                     f"{r['ratio']:>6.2f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_table(run()))
