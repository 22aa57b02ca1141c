"""Autograd benchmarks: Lamina vs PyTorch CPU, side by side in one process.

Measures the per-op eager overhead (a 1-element add, with and without
``requires_grad``) and one forward+backward of a 784-256-10 MLP at batch 128.
The two libraries run interleaved (Lamina, PyTorch, Lamina, ...) so that
machine noise hits both alike; each row reports medians, and ``ratio`` follows
``benchmarks/run.py``'s convention (> 1 means Lamina is faster).

Run: ``python benchmarks/bench_autograd.py`` (prints a table with the
Lamina/PyTorch time ratio); ``nox -s bench`` calls ``run()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
from _timing import interleaved, row


def _devices() -> list[str]:
    return [b.name for b in nd.list_backends() if b.status == "available"
            and b.name in ("numpy", "cpu")]


def _add_cases(device: str, requires_grad: bool
               ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    x = ag.ones(1, device=device, requires_grad=requires_grad)
    y = ag.ones(1, device=device)
    tx, ty = torch.ones(1, requires_grad=requires_grad), torch.ones(1)
    return (lambda: x + y), (lambda: tx + ty)


def _mlp_cases(device: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.05
              for s in [(128, 784), (784, 256), (256,), (256, 10), (10,)]]
    target_np = rng.integers(0, 10, 128)
    x, w1, b1, w2, b2 = [ag.tensor(a, device=device) for a in arrays]
    for p in (w1, b1, w2, b2):
        p.requires_grad_()
    onehot = ag.one_hot(ag.tensor(target_np, device=device), 10)
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
    """Runs every case on every host device; one row per case and device.

    Returns:
        Rows in ``benchmarks/_timing.row``'s format: medians in microseconds,
        ``ratio`` = PyTorch time / Lamina time (> 1 means Lamina is faster).
    """
    rows = []
    for dev in _devices():
        label = f"lamina[{dev}]"
        cases = [
            ("autograd add (overhead)", "1", _add_cases(dev, False)),
            ("autograd add, requires_grad", "1", _add_cases(dev, True)),
            ("MLP 784-256-10 fwd+bwd", "batch 128", _mlp_cases(dev)),
        ]
        for name, size, (ours, theirs) in cases:
            t = interleaved({"l": ours, "t": theirs}, repeats, 0.2)
            rows.append(row(name, size, label, "torch cpu", t["l"] * 1e6, t["t"] * 1e6, "us",
                            False))
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'case':<30} {'size':<10} {'lamina':<14} {'us':>10} {'torch us':>10} "
             f"{'lamina/torch':>12}"]
    for r in rows:
        lines.append(f"{r['op']:<30} {r['size']:<10} {r['lamina']:<14} "
                     f"{r['lamina_value']:>10.1f} {r['baseline_value']:>10.1f} "
                     f"{1 / r['ratio']:>11.2f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_table(run()))
