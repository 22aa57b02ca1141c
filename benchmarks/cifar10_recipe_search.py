"""How far can the dlsys ResNet9 go on CIFAR-10 in 10 epochs? A PyTorch recipe search.

Issue 7 asks for 75% test accuracy within 10 epochs from the dlsys-size
ResNet9 (432k parameters, a stride-4 7x7 stem, 1x1 maps after four
downsamplings). ``train_cifar10.py`` reaches about 70% in both frameworks;
this script asks whether a better recipe exists, using PyTorch alone (it is
the faster of the two, and Lamina follows it step for step). Each line of
``--grid`` is one run's options; runs go ``--jobs`` at a time, one thread
each. Every run also reports test accuracy with flip test-time augmentation
(the mean of the softmax over the image and its mirror).

    python benchmarks/cifar10_recipe_search.py --data ../shared/data/cifar10 \\
        --out benchmarks/results/cifar10_recipe_search

Writes OUT.jsonl (one line per run, as it finishes) and OUT.md (a table).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_GRID = """\
--seed 0
--seed 1
--seed 2
--batch-size 64 --lr 0.1
--batch-size 64 --lr 0.2
--batch-size 32 --lr 0.05
--batch-size 32 --lr 0.1
--batch-size 256 --lr 0.4
--lr 0.2
--lr 0.4
--weight-decay 1e-3
--weight-decay 5e-3
--label-smoothing 0.1
--augment none
--augment crop-flip
--zero-init-residual
--optimizer adamw --lr 3e-3 --weight-decay 0.05
"""


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="one run of the search")
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1, help="one-cycle peak")
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--augment", choices=("flip", "crop-flip", "none"), default="flip")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    p.add_argument("--zero-init-residual", action="store_true",
                   help="zero the last BatchNorm weight of each residual branch")
    p.add_argument("--seed", type=int, default=0)
    return p


def train_once(args: argparse.Namespace) -> dict:
    """Train one recipe; returns the options, per-epoch test accuracy and timings."""
    import torch
    from lamina.data import CIFAR10, CIFAR10_MEAN, CIFAR10_STD
    from train_cifar10 import _TorchResidual, torch_model

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    mean = np.array(CIFAR10_MEAN, np.float32)[:, None, None]
    std = np.array(CIFAR10_STD, np.float32)[:, None, None]
    train, test = CIFAR10(args.data, train=True), CIFAR10(args.data, train=False)
    x_train = (train.data.astype(np.float32) / 255 - mean) / std
    x_test = torch.from_numpy((test.data.astype(np.float32) / 255 - mean) / std)
    y_train, y_test = train.targets, test.targets

    model = torch_model("resnet9")
    if args.zero_init_residual:
        for m in model.modules():
            if isinstance(m, _TorchResidual):
                torch.nn.init.zeros_(m.fn[1][1].weight)
    steps = args.epochs * (len(x_train) // args.batch_size)
    if args.optimizer == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD(
            model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
            weight_decay=args.weight_decay)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=steps,
                                                pct_start=0.25, cycle_momentum=False)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)

    def augment(x: np.ndarray) -> np.ndarray:
        if "flip" in args.augment:
            x = np.where((rng.random(len(x)) < 0.5)[:, None, None, None], x[..., ::-1], x)
        if "crop" in args.augment:
            padded = np.pad(x, ((0, 0), (0, 0), (4, 4), (4, 4)))
            i, j = rng.integers(0, 9, len(x)), rng.integers(0, 9, len(x))
            x = np.stack([padded[n, :, i[n]:i[n] + 32, j[n]:j[n] + 32] for n in range(len(x))])
        return np.ascontiguousarray(x)

    def accuracy(tta: bool) -> float:
        model.eval()
        correct = 0
        with torch.no_grad():
            for s in range(0, len(x_test), 1000):
                xb = x_test[s:s + 1000]
                p = model(xb).softmax(-1)
                if tta:
                    p = p + model(xb.flip(3)).softmax(-1)
                correct += int((p.argmax(1).numpy() == y_test[s:s + 1000]).sum())
        return correct / len(x_test)

    history, start = [], time.perf_counter()
    for _ in range(args.epochs):
        model.train()
        order = rng.permutation(len(x_train))
        seen = correct = 0
        for s in range(0, len(order) - args.batch_size + 1, args.batch_size):
            idx = order[s:s + args.batch_size]
            xb, yb = torch.from_numpy(augment(x_train[idx])), torch.from_numpy(y_train[idx])
            out = model(xb)
            loss = loss_fn(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            seen += len(idx)
            correct += int((out.argmax(1) == yb).sum())
        history.append(round(accuracy(False), 4))
    return {"options": {k: v for k, v in vars(args).items() if k != "data"},
            "test_acc": history, "test_acc_flip_tta": round(accuracy(True), 4),
            "last_epoch_train_acc": round(correct / seen, 4),
            "seconds": round(time.perf_counter() - start, 1)}


def write_table(results: list[dict], path: Path) -> None:
    lines = ["# CIFAR-10 recipe search: dlsys ResNet9, 10 epochs, PyTorch CPU", "",
             "Made by `benchmarks/cifar10_recipe_search.py`. Defaults: Nesterov SGD "
             "(momentum 0.9), one-cycle peak lr 0.1 (25% warm-up), weight decay 5e-4, "
             "batch 128, flip augmentation, seed 0; each row changes what it lists. "
             "Flip TTA averages the softmax over each test image and its mirror.", "",
             "| changes from the defaults | test acc | with flip TTA | train acc (last epoch) |",
             "|---|---:|---:|---:|"]
    defaults = vars(run_parser().parse_args(["--data", "."]))
    for r in sorted(results, key=lambda r: -r["test_acc_flip_tta"]):
        changed = [f"{k}={v}" for k, v in r["options"].items() if defaults.get(k) != v]
        lines.append(f"| {', '.join(changed) or 'defaults'} | {r['test_acc'][-1]:.2%} | "
                     f"{r['test_acc_flip_tta']:.2%} | {r['last_epoch_train_acc']:.2%} |")
    best = max(results, key=lambda r: r["test_acc_flip_tta"])
    lines += ["", f"Best of {len(results)} runs: {best['test_acc_flip_tta']:.2%} with flip TTA, "
              f"{max(r['test_acc'][-1] for r in results):.2%} without; issue 7's goal is 75%."]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    if "--one" in sys.argv:  # a worker: train one recipe, print its JSON line
        argv = [a for a in sys.argv[1:] if a != "--one"]
        print(json.dumps(train_once(run_parser().parse_args(argv))), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--grid", default=None, help="file of option lines (default: built in)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", required=True, help="output path without suffix")
    args = p.parse_args()
    grid = (Path(args.grid).read_text() if args.grid else DEFAULT_GRID).splitlines()
    out = Path(args.out)
    results: list[dict] = []
    pending = [line for line in grid if line.strip()]
    running: list[subprocess.Popen] = []
    with open(out.with_suffix(".jsonl"), "w") as log:
        while pending or running:
            while pending and len(running) < args.jobs:
                cmd = [sys.executable, __file__, "--one", "--data", args.data,
                       *shlex.split(pending.pop(0))]
                running.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
            time.sleep(1)
            for proc in [p for p in running if p.poll() is not None]:
                running.remove(proc)
                assert proc.stdout is not None
                lines = proc.stdout.read().strip().splitlines()
                if proc.returncode == 0 and lines:
                    results.append(json.loads(lines[-1]))
                    log.write(lines[-1] + "\n")
                    log.flush()
                    print(lines[-1], flush=True)
                    write_table(results, out.with_suffix(".md"))
                else:
                    print(f"a run failed (exit {proc.returncode})", file=sys.stderr)


if __name__ == "__main__":
    main()
