"""Convolutional-network benchmarks: Lamina vs PyTorch CPU, side by side in one process.

Two cases from issue 7, on every host device (numpy, cpu):

- conv2d forward + backward: batch 32, 3x32x32 images to 16 channels, 3x3 kernel,
  padding 1 (gradients for the input, the weight and the bias);
- one ResNet9 (dlsys, 432k parameters) training step at batch 128: forward,
  cross-entropy, backward and a momentum-SGD update.

Both start from the same weights and inputs; the libraries run interleaved
(Lamina, PyTorch, ...) so machine noise hits both alike. PyTorch runs with the
thread count it is given (``torch.set_num_threads``), Lamina's cpu backend with
``LAMINA_NUM_THREADS`` (both default to all cores). ``ratio`` follows
``benchmarks/run.py`` (> 1 means Lamina is faster).

Run: ``python benchmarks/bench_cnn.py``; ``nox -s bench`` calls ``run()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
from _timing import interleaved, row
from lamina import nn, optim
from lamina.models import ResNet9


def _devices() -> list[str]:
    return [b.name for b in nd.list_backends() if b.status == "available"
            and b.name in ("numpy", "cpu")]


def _conv_cases(device: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in
              [(32, 3, 32, 32), (16, 3, 3, 3), (16,), (32, 16, 32, 32)]]
    x, w, b = (ag.tensor(a, device=device, requires_grad=True) for a in arrays[:3])
    g = ag.tensor(arrays[3], device=device)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
    tg = torch.from_numpy(arrays[3])

    def ours() -> Any:
        nn.functional.conv2d(x, w, b, padding=1).backward(g)
        _, gw = x.grad.numpy(), w.grad.numpy()  # wait for the results
        x.grad = w.grad = b.grad = None
        return gw

    def theirs() -> Any:
        torch.nn.functional.conv2d(tx, tw, tb, padding=1).backward(tg)
        gw = tw.grad
        tx.grad = tw.grad = tb.grad = None
        return gw

    return ours, theirs


def _resnet_cases(device: str, optimizer: str = "sgd"
                  ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """One ResNet9 training step in each library (``optimizer``: ``"sgd"``, momentum
    0.9, or ``"adam"``); each returns its loss, computed before the update."""
    import torch
    from train_cifar10 import torch_model

    ag.manual_seed(0)
    model = ResNet9(device=device)
    ref = torch_model("resnet9")
    ref.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                         for k, v in model.state_dict().items()})
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((128, 3, 32, 32)).astype(np.float32)
    y_np = rng.integers(0, 10, 128)
    x, y = ag.tensor(x_np, device=device), ag.tensor(y_np, device=device)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
    if optimizer == "adam":
        opt: optim.Optimizer = optim.Adam(model.parameters(), lr=1e-3)
        topt: torch.optim.Optimizer = torch.optim.Adam(ref.parameters(), lr=1e-3)
    else:
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        topt = torch.optim.SGD(ref.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def ours() -> float:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    def theirs() -> float:
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ref(tx), ty)
        loss.backward()
        topt.step()
        return loss.item()

    return ours, theirs


def run(repeats: int = 3) -> list[dict[str, Any]]:
    """Runs both cases on every host device; one row per case and device.

    Returns:
        Rows in ``benchmarks/_timing.row``'s format: medians in milliseconds,
        ``ratio`` = PyTorch time / Lamina time (> 1 means Lamina is faster).
    """
    rows = []
    for dev in _devices():
        cases = [("conv2d 3->16 3x3 pad 1 fwd+bwd", "32x3x32x32", _conv_cases(dev)),
                 ("ResNet9 (dlsys) train step", "batch 128", _resnet_cases(dev))]
        for name, size, (ours, theirs) in cases:
            t = interleaved({"l": ours, "t": theirs}, repeats, 0.5)
            rows.append(row(name, size, f"lamina[{dev}]", "torch cpu", t["l"] * 1e3,
                            t["t"] * 1e3, "ms", False))
    return rows


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    for r in run():
        print(f"{r['op']:<32} {r['size']:<12} {r['lamina']:<14} {r['lamina_value']:8.2f} ms  "
              f"torch {r['baseline_value']:8.2f} ms  lamina/torch {1 / r['ratio']:.2f}x")
