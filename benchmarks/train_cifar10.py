"""CIFAR-10 ResNet9 training, Lamina and PyTorch CPU side by side: curves and epoch times.

Both frameworks train the same network from the same initial weights on the
same augmented batches in the same order, with the same optimizer and
schedule (Nesterov SGD, one-cycle learning rate, weight decay). The two
alternate epoch by epoch in one process (Lamina epoch 1, PyTorch epoch 1,
Lamina epoch 2, ...), so machine load hits both alike; both run on one
thread (``--threads``) because the machine is shared. Results are rewritten
after every epoch to ``OUT.json``, ``OUT.md`` and ``OUT.png`` (OUT is
``--out`` without its suffix), so a partial run leaves partial results.

    python benchmarks/train_cifar10.py --data ../shared/data/cifar10 --model resnet9 \
        --epochs 10 --out benchmarks/results/train_cifar10

Goal (issue 7): dlsys ResNet9 >= 75% test accuracy within 10 epochs; accuracy
within 1 point of PyTorch's; step time at most 2x PyTorch's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _set_threads_from_argv() -> None:
    # The CPU backend reads LAMINA_NUM_THREADS when it loads: set it before importing lamina.
    if "--threads" in sys.argv:
        os.environ["LAMINA_NUM_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]
    else:
        os.environ.setdefault("LAMINA_NUM_THREADS", "1")


_set_threads_from_argv()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _machine import machine_line  # noqa: E402
from lamina import autograd, nn, optim  # noqa: E402
from lamina.data import DataLoader  # noqa: E402
from lamina.models.recipes.cifar10 import (  # noqa: E402
    AUGMENTATIONS,
    build_model,
    cifar10_datasets,
    parameter_groups,
    tta_accuracy,
)

tnn = torch.nn


class _TorchResidual(tnn.Module):
    def __init__(self, fn: tnn.Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fn(x)


class _TorchScale(tnn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


def torch_model(name: str) -> tnn.Module:
    """The PyTorch twin of ``build_model`` (same layers, same state-dict names)."""
    def cbn(cin: int, cout: int, k: int = 3, stride: int = 1, bias: bool = True) -> tnn.Module:
        return tnn.Sequential(tnn.Conv2d(cin, cout, k, stride, k // 2, bias=bias),
                              tnn.BatchNorm2d(cout), tnn.ReLU())

    if name == "resnet9":
        def res(c: int) -> tnn.Module:
            return _TorchResidual(tnn.Sequential(cbn(c, c), cbn(c, c)))
        return tnn.Sequential(cbn(3, 16, 7, 4), cbn(16, 32, 3, 2), res(32), cbn(32, 64, 3, 2),
                              cbn(64, 128, 3, 2), res(128), tnn.Flatten(),
                              tnn.Linear(128, 128), tnn.ReLU(), tnn.Linear(128, 10))

    def c3(cin: int, cout: int) -> tnn.Module:
        return cbn(cin, cout, bias=False)

    def res_dawn(c: int) -> tnn.Module:
        return _TorchResidual(tnn.Sequential(c3(c, c), c3(c, c)))
    return tnn.Sequential(c3(3, 64), c3(64, 128), tnn.MaxPool2d(2), res_dawn(128),
                          c3(128, 256), tnn.MaxPool2d(2), c3(256, 512), tnn.MaxPool2d(2),
                          res_dawn(512), tnn.MaxPool2d(4), tnn.Flatten(),
                          tnn.Linear(512, 10, bias=False), _TorchScale(0.125))


class Side:
    """One framework's model, optimizer, schedule and loops, behind one interface."""

    def __init__(self, name: str, args: argparse.Namespace, init: dict[str, np.ndarray],
                 steps: int) -> None:
        self.name, self.history = name, []
        kw = dict(lr=args.lr, momentum=0.9, nesterov=True, weight_decay=args.weight_decay)
        if name == "lamina":
            self.model: Any = build_model(args.model, args.device)
            self.model.load_state_dict(init)
            self.opt: Any = optim.SGD(parameter_groups(self.model, args.norm_bias_decay), **kw)
            self.sched: Any = optim.lr_scheduler.OneCycleLR(
                self.opt, args.lr, total_steps=steps, pct_start=0.25, cycle_momentum=False)
            self.loss_fn: Any = nn.CrossEntropyLoss()
        else:
            self.model = torch_model(args.model)
            self.model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in init.items()})
            self.opt = torch.optim.SGD(parameter_groups(self.model, args.norm_bias_decay), **kw)
            self.sched = torch.optim.lr_scheduler.OneCycleLR(
                self.opt, args.lr, total_steps=steps, pct_start=0.25, cycle_momentum=False)
            self.loss_fn = tnn.CrossEntropyLoss()

    def _batch(self, x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        if self.name == "lamina":
            return autograd.tensor(x), autograd.tensor(y)
        return torch.from_numpy(x), torch.from_numpy(y)

    def train_epoch(self, loader: Any) -> dict[str, float]:
        self.model.train()
        total, correct, seen, data_time, data_cpu = 0.0, 0, 0, 0.0, 0.0
        start, cpu_start = time.perf_counter(), time.process_time()
        batches = iter(loader)
        while True:
            t, cpu_t = time.perf_counter(), time.process_time()
            try:
                xb, yb = next(batches)
            except StopIteration:
                break
            x, y = self._batch(xb, yb)
            data_time += time.perf_counter() - t
            data_cpu += time.process_time() - cpu_t
            self.opt.zero_grad()
            logits = self.model(x)
            loss = self.loss_fn(logits, y)
            loss.backward()
            self.opt.step()
            self.sched.step()
            total += loss.item() * len(yb)
            correct += int((np.asarray(logits.detach().numpy()).argmax(1) == yb).sum())
            seen += len(yb)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        return {"loss": total / seen, "acc": correct / seen, "time": elapsed,
                "data_time": data_time, "steps": len(loader),
                "step_cpu": (cpu - data_cpu) / len(loader)}

    def evaluate(self, loader: Any) -> dict[str, float]:
        self.model.eval()
        total, correct, seen = 0.0, 0, 0
        grad_off = autograd.no_grad() if self.name == "lamina" else torch.no_grad()
        with grad_off:
            for xb, yb in loader:
                x, y = self._batch(xb, yb)
                logits = self.model(x)
                total += float(self.loss_fn(logits, y).item()) * len(yb)
                correct += int((np.asarray(logits.numpy()).argmax(1) == yb).sum())
                seen += len(yb)
        return {"loss": total / seen, "acc": correct / seen}

    def tta_accuracy(self, images: np.ndarray, targets: np.ndarray, shift: int) -> float:
        """Test accuracy over flips and shifts of up to ``shift`` pixels."""
        self.model.eval()

        def logits(x: np.ndarray) -> np.ndarray:
            if self.name == "lamina":
                with autograd.no_grad():
                    return self.model(autograd.tensor(x)).numpy()
            with torch.no_grad():
                return self.model(torch.from_numpy(x)).numpy()
        return tta_accuracy(logits, images, targets, shift)


def write_results(out: Path, config: dict[str, Any], sides: list[Side]) -> None:
    """Rewrite OUT.json / OUT.md (/ OUT.png with matplotlib) from the epochs so far."""
    results = {s.name: s.history for s in sides if s.history}
    summary = {}
    for name, hist in results.items():
        summary[name] = {
            "epochs_done": len(hist), "final_test_acc": hist[-1]["test_acc"],
            "best_test_acc": max(r["test_acc"] for r in hist),
            "median_epoch_time": statistics.median(r["epoch_time"] for r in hist),
            "min_epoch_time": min(r["epoch_time"] for r in hist),
            "median_step_time": statistics.median(r["step_time"] for r in hist),
            "median_step_cpu": statistics.median(r["step_cpu"] for r in hist),
            "final_test_acc_tta": hist[-1].get("test_acc_tta")}
    payload = {"config": config, "summary": summary, "epochs": results}
    out.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n")
    names = list(results)
    lines = [f"# CIFAR-10 training: {config['model']} ({config['parameters']:,} parameters), "
             f"{config['epochs']} epochs", "",
             f"Machine: {config['machine']}. Lamina device `{config['device']}` with "
             f"LAMINA_NUM_THREADS={config['lamina_threads']}; PyTorch {config['torch_version']} "
             f"CPU with {config['torch_threads']} thread(s). Recipe: {config['recipe']}.", "",
             "Epochs alternate (Lamina, PyTorch, Lamina, ...) in one process from the same "
             "initial weights on the same augmented batches. Step time = (epoch time - time "
             "spent waiting for batches) / steps; step CPU = the same in process CPU time "
             "(time.process_time), which other jobs on the shared machine disturb less.", "",
             "| epoch | " + " | ".join(f"{n} test acc | {n} train loss | {n} epoch s | "
                                      f"{n} step ms | {n} step CPU ms" for n in names) + " |",
             "|---|" + "---:|---:|---:|---:|---:|" * len(names)]
    for i in range(max(len(h) for h in results.values())):
        cells = []
        for n in names:
            r = results[n][i] if i < len(results[n]) else None
            cells.append(" | ".join(["-"] * 5) if r is None else
                         f"{r['test_acc']:.4f} | {r['train_loss']:.4f} | {r['epoch_time']:.1f} | "
                         f"{r['step_time'] * 1e3:.1f} | {r['step_cpu'] * 1e3:.1f}")
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, s in summary.items():
        lines.append(f"- {name}: {s['epochs_done']} epochs, final test accuracy "
                     f"{s['final_test_acc']:.4f}, best {s['best_test_acc']:.4f}, median epoch "
                     f"{s['median_epoch_time']:.1f} s, median step "
                     f"{s['median_step_time'] * 1e3:.1f} ms "
                     f"({s['median_step_cpu'] * 1e3:.1f} ms CPU)"
                     + ("" if s["final_test_acc_tta"] is None else
                        f"; with test-time augmentation (flips and shifts of up to "
                        f"{config['tta_shift']} pixels) {s['final_test_acc_tta']:.4f}"))
    if len(summary) == 2:
        la, pt = summary["lamina"], summary["pytorch"]
        lines.append(f"- Lamina / PyTorch step time (median): "
                     f"{la['median_step_time'] / pt['median_step_time']:.2f} wall, "
                     f"{la['median_step_cpu'] / pt['median_step_cpu']:.2f} CPU; epoch time: "
                     f"{la['median_epoch_time'] / pt['median_epoch_time']:.2f}")
        lines.append(f"- Test accuracy, Lamina - PyTorch (final): "
                     f"{(la['final_test_acc'] - pt['final_test_acc']) * 100:+.2f} points")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    _plot(out.with_suffix(".png"), results, config)


def _plot(path: Path, results: dict[str, list[dict[str, Any]]], config: dict[str, Any]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, hist in results.items():
        epochs = [r["epoch"] for r in hist]
        ax_loss.plot(epochs, [r["train_loss"] for r in hist], label=f"{name} train")
        ax_loss.plot(epochs, [r["test_loss"] for r in hist], "--", label=f"{name} test")
        ax_acc.plot(epochs, [r["test_acc"] for r in hist], label=f"{name} test")
    for ax, label in ((ax_loss, "loss"), (ax_acc, "test accuracy")):
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle(f"CIFAR-10 {config['model']}: Lamina vs PyTorch")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the CIFAR-10 batch files")
    parser.add_argument("--model", choices=("resnet9", "resnet9-dawn"), default="resnet9")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.4)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--norm-bias-decay", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="Lamina device (default device if unset)")
    parser.add_argument("--threads", type=int, default=1, help="threads for both frameworks")
    parser.add_argument("--augment", choices=AUGMENTATIONS, default="crop-flip")
    parser.add_argument("--crop-padding", type=int, default=1)
    parser.add_argument("--zca-eps", type=float, default=1.0)
    parser.add_argument("--tta-shift", type=int, default=2,
                        help="after training, test accuracy over flips and shifts of up to "
                             "this many pixels (-1: skip)")
    parser.add_argument("--train-size", type=int, default=None)
    parser.add_argument("--skip", choices=("lamina", "pytorch"), default=None)
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    autograd.manual_seed(args.seed)
    train_set, test_set = cifar10_datasets(args.data, args.augment, train_size=args.train_size,
                                           crop_padding=args.crop_padding, zca_eps=args.zca_eps)
    model = build_model(args.model, args.device)
    init = {k: v.numpy() for k, v in model.state_dict().items()}

    def loader() -> DataLoader:
        # A fresh loader per side with the same seed: the same shuffles and augmentations.
        return DataLoader(train_set, args.batch_size, shuffle=True, generator=args.seed,
                          as_tensor=False)
    test = DataLoader(test_set, 500, as_tensor=False)
    loaders = {"lamina": loader(), "pytorch": loader()}
    steps = args.epochs * len(loaders["lamina"])
    sides = [Side(n, args, init, steps) for n in ("lamina", "pytorch") if n != args.skip]
    device = next(iter(model.parameters())).device
    config = {"model": args.model, "parameters": model.num_parameters(), "epochs": args.epochs,
              "batch_size": args.batch_size, "lr": args.lr, "weight_decay": args.weight_decay,
              "recipe": f"SGD (Nesterov, momentum 0.9), OneCycleLR peak {args.lr} "
                        f"(25% warm-up), weight decay {args.weight_decay} "
                        f"({args.norm_bias_decay} on BatchNorm parameters and biases), batch "
                        f"{args.batch_size}, augmentation {args.augment}"
                        + (f" (padding {args.crop_padding})" if args.augment == "crop-flip"
                           else "") + f", ZCA whitening eps {args.zca_eps}",
              "train_images": len(train_set), "seed": args.seed,
              "device": getattr(device, "name", str(device)),
              "torch_version": torch.__version__, "torch_threads": args.threads,
              "lamina_threads": os.environ.get("LAMINA_NUM_THREADS"),
              "machine": machine_line("shared with other jobs")}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for epoch in range(1, args.epochs + 1):
        for side in sides:
            tr = side.train_epoch(loaders[side.name])
            te = side.evaluate(test)
            step = (tr["time"] - tr["data_time"]) / tr["steps"]
            side.history.append({"epoch": epoch, "train_loss": tr["loss"],
                                 "train_acc": tr["acc"], "test_loss": te["loss"],
                                 "test_acc": te["acc"], "epoch_time": tr["time"],
                                 "data_time": tr["data_time"], "step_time": step,
                                 "step_cpu": tr["step_cpu"]})
            print(f"{side.name:<7} epoch {epoch}: train loss {tr['loss']:.4f}, test acc "
                  f"{te['acc']:.4f}, {tr['time']:.1f} s (data {tr['data_time']:.1f} s, step "
                  f"{step * 1e3:.1f} ms, {tr['step_cpu'] * 1e3:.1f} ms CPU)", flush=True)
            write_results(out, config, sides)
    if args.tta_shift >= 0:
        for side in sides:
            side.history[-1]["test_acc_tta"] = side.tta_accuracy(
                test_set.images, test_set.targets, args.tta_shift)
        config["tta_shift"] = args.tta_shift
        write_results(out, config, sides)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
