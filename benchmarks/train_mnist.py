"""Full-MNIST training, Lamina and PyTorch CPU side by side: curves and epoch times.

Both frameworks train the same model from the same initial weights, on the
same batches in the same order, with the same optimizer and schedule (Adam,
one-cycle learning rate); only dropout masks differ. Results go to
``OUT.json`` and ``OUT.md`` (OUT is ``--out`` without its suffix).

    python benchmarks/train_mnist.py --data ../shared/data/mnist --model mlp --epochs 10 \
        --out benchmarks/results/train_mnist_mlp

Goal (issue 4): >= 98.0% test accuracy within 10 epochs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _machine import machine_line
from lamina import autograd, nn, optim
from lamina.data import DataLoader, TensorDataset
from lamina.models import evaluate, train_epoch
from lamina.models.recipes.mnist import build_model, load_mnist_arrays
from lamina.ndarray import DeviceError, get_device


def torch_model(name: str, hidden: int) -> torch.nn.Module:
    """The PyTorch twin of ``build_model`` (same layers, same state-dict names)."""
    tnn = torch.nn
    if name == "mlp":
        return tnn.Sequential(tnn.Flatten(), tnn.Linear(784, hidden), tnn.ReLU(),
                              tnn.Linear(hidden, hidden), tnn.ReLU(), tnn.Linear(hidden, 10))

    class Residual(tnn.Module):
        def __init__(self, fn: tnn.Module) -> None:
            super().__init__()
            self.fn = fn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.fn(x)

    def block(dim: int, h: int) -> tnn.Module:
        inner = tnn.Sequential(tnn.Linear(dim, h), tnn.BatchNorm1d(h), tnn.ReLU(),
                               tnn.Dropout(0.1), tnn.Linear(h, dim), tnn.BatchNorm1d(dim))
        return tnn.Sequential(Residual(inner), tnn.ReLU())

    return tnn.Sequential(tnn.Flatten(), tnn.Linear(784, hidden), tnn.ReLU(),
                          *[block(hidden, hidden // 2) for _ in range(3)],
                          tnn.Linear(hidden, 10))


def run_lamina(args: argparse.Namespace, data: tuple[np.ndarray, ...],
               init: dict[str, np.ndarray]) -> Iterator[dict[str, Any]]:
    """Train epoch by epoch, yielding each epoch's record."""
    x_train, y_train, x_test, y_test = data
    model = build_model(args.model, args.hidden, args.device)
    model.load_state_dict(init)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    train = DataLoader(TensorDataset(x_train, y_train), args.batch_size, shuffle=True,
                       generator=args.seed, device=args.device)
    test = DataLoader(TensorDataset(x_test, y_test), 1000, device=args.device)
    sched = optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=args.epochs * len(train),
                                          pct_start=0.2, cycle_momentum=False)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        tr = train_epoch(model, train, opt, loss_fn, sched)
        elapsed = time.perf_counter() - start
        te = evaluate(model, test, loss_fn)
        print(f"lamina  epoch {epoch}: test acc {te['acc']:.4f}, {elapsed:.1f} s", flush=True)
        yield _record(epoch, tr, te, elapsed)


def run_torch(args: argparse.Namespace, data: tuple[np.ndarray, ...],
              init: dict[str, np.ndarray]) -> Iterator[dict[str, Any]]:
    """The same training in PyTorch, yielding each epoch's record."""
    x_train, y_train, x_test, y_test = data
    model = torch_model(args.model, args.hidden)
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in init.items()})
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    order = DataLoader(TensorDataset(x_train, y_train), args.batch_size, shuffle=True,
                       generator=args.seed, as_tensor=False)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr,
                                                total_steps=args.epochs * len(order),
                                                pct_start=0.2, cycle_momentum=False)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_test), torch.from_numpy(y_test)
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        total, correct, seen = 0.0, 0, 0
        for xb, yb in order:
            xb, yb = torch.from_numpy(xb), torch.from_numpy(yb)
            opt.zero_grad()
            logits = model(xb)
            loss = loss_fn(logits, yb)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(yb)
            correct += int((logits.argmax(1) == yb).sum())
            seen += len(yb)
        elapsed = time.perf_counter() - start
        model.eval()
        with torch.no_grad():
            logits = model(xt)
            te = {"loss": float(loss_fn(logits, yt)),
                  "acc": float((logits.argmax(1) == yt).float().mean())}
        print(f"pytorch epoch {epoch}: test acc {te['acc']:.4f}, {elapsed:.1f} s", flush=True)
        yield _record(epoch, {"loss": total / seen, "acc": correct / seen}, te, elapsed)


def _record(epoch: int, train: dict[str, float], test: dict[str, float],
            elapsed: float) -> dict[str, Any]:
    return {"epoch": epoch, "train_loss": train["loss"], "train_acc": train["acc"],
            "test_loss": test["loss"], "test_acc": test["acc"], "epoch_time": elapsed}


def write_results(out: Path, config: dict[str, Any], results: dict[str, list]) -> None:
    summary = {}
    for name, history in results.items():
        summary[name] = {"final_test_acc": history[-1]["test_acc"],
                         "best_test_acc": max(r["test_acc"] for r in history),
                         "median_epoch_time": statistics.median(r["epoch_time"]
                                                                for r in history),
                         "min_epoch_time": min(r["epoch_time"] for r in history)}
    payload = {"config": config, "summary": summary, "epochs": results}
    out.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = [f"# MNIST training: {config['model']}, {config['epochs']} epochs", "",
             f"Machine: {config['machine']}; Lamina device `{config['device']}`; "
             f"PyTorch {config['torch_version']} CPU; {config['threads']} thread(s) each; "
             f"{config['date']}. Epochs alternate between the two frameworks.",
             "", "| epoch | " + " | ".join(f"{n} test acc | {n} epoch s" for n in results)
             + " |", "|---|" + "---:|---:|" * len(results)]
    for i in range(min(len(h) for h in results.values())):
        cells = [f"{results[n][i]['test_acc']:.4f} | {results[n][i]['epoch_time']:.2f}"
                 for n in results]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, s in summary.items():
        lines.append(f"- {name}: final test accuracy {s['final_test_acc']:.4f}, best "
                     f"{s['best_test_acc']:.4f}, median epoch {s['median_epoch_time']:.2f} s, "
                     f"fastest epoch {s['min_epoch_time']:.2f} s")
    if len(summary) == 2:
        for stat in ("median", "min"):
            ratio = (summary["lamina"][f"{stat}_epoch_time"]
                     / summary["pytorch"][f"{stat}_epoch_time"])
            lines.append(f"- Lamina / PyTorch epoch time ({stat}): {ratio:.2f}")
        lines.append("- On a shared machine the fastest epoch is the least disturbed "
                     "measurement; epoch times include the DataLoader, not evaluation.")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the MNIST *-ubyte.gz files")
    parser.add_argument("--model", choices=("mlp", "mlp-resnet"), default="mlp")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="Lamina device (default device if unset)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads for both Lamina's cpu backend and PyTorch")
    parser.add_argument("--skip-torch", action="store_true")
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        get_device(args.device).set_num_threads(args.threads)
    except DeviceError:
        pass  # a device without a thread setting (numpy, cuda) runs as it is
    autograd.manual_seed(args.seed)
    data = load_mnist_arrays(args.data)
    init = {k: v.numpy() for k, v in build_model(args.model, args.hidden).state_dict().items()}
    device = build_model(args.model, 8, args.device).state_dict()["1.weight"].device.name
    config = {"model": args.model, "hidden": args.hidden, "epochs": args.epochs,
              "batch_size": args.batch_size, "lr": args.lr, "optimizer": "Adam + OneCycleLR",
              "seed": args.seed, "device": device, "torch_version": torch.__version__,
              "threads": args.threads, "date": datetime.date.today().isoformat(),
              "machine": machine_line()}
    runners = {"lamina": run_lamina(args, data, init)}
    if not args.skip_torch:
        runners["pytorch"] = run_torch(args, data, init)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in runners}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Alternate epochs so both frameworks see the same machine load; write after each.
    for _ in range(args.epochs):
        for name, runner in runners.items():
            results[name].append(next(runner))
        write_results(out, config, results)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
