"""``lamina-train mnist``: an MLP or MLP-ResNet on MNIST digits.

Without ``--data`` it trains on the subset bundled with lamina-nn (5,000
training and 1,000 test images), so it runs on a fresh machine; ``--data DIR``
points at the full dataset's four ``*-ubyte.gz`` files.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from lamina import autograd, nn, optim
from lamina.data import MNIST, DataLoader, TensorDataset

from .._argtypes import integer, real
from .._mlp import MLP, MLPResNet
from .._precision import Precision
from .._reporting import device_name
from .._trainer import fit, maybe_compile
from ._registry import Recipe, register_recipe

__all__ = ["build_model", "load_mnist_arrays"]

MEAN, STD = 0.1307, 0.3081  # pixel statistics of the MNIST training set (0..1 scale)
DEFAULT_LR = {"adam": 1e-3, "sgd": 0.1}  # when --lr is not given (0 is a valid --lr)


def load_mnist_arrays(root: str | None, download: bool = False
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Normalised float32 images (N, 784) and int64 labels (N,), train then test."""
    arrays = []
    for train in (True, False):
        ds = MNIST(root, train=train, download=download)
        x = (ds.data.reshape(len(ds), -1).astype(np.float32) / 255.0 - MEAN) / STD
        arrays += [x, ds.targets]
    return arrays[0], arrays[1], arrays[2], arrays[3]


def build_model(name: str, hidden: int, device: Any = None) -> nn.Module:
    """``mlp``: 784-hidden-hidden-10; ``mlp-resnet``: MLPResNet(784, hidden)."""
    if name == "mlp":
        model = MLP(784, (hidden, hidden), 10)
    elif name == "mlp-resnet":
        model = MLPResNet(784, hidden, num_blocks=3, num_classes=10, drop_prob=0.1)
    else:
        raise ValueError(f"mnist: unknown model {name!r}; choose mlp or mlp-resnet")
    return model.to(device) if device is not None else model


def model_from_config(config: dict[str, Any], device: Any = None) -> nn.Module:
    """The model a checkpoint's ``model_config`` (``model``, ``hidden``) describes."""
    return build_model(config["model"], config["hidden"], device)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(epochs=10, batch_size=128)
    parser.add_argument("--model", choices=("mlp", "mlp-resnet"), default="mlp",
                        help="network")
    parser.add_argument("--hidden", type=integer(1), default=256, help="hidden width")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="folder with the MNIST *-ubyte.gz files (default: the bundled "
                             "5,000/1,000-image subset)")
    parser.add_argument("--download", action="store_true",
                        help="download missing files into --data from a standard mirror")
    parser.add_argument("--optimizer", choices=("adam", "sgd"), default="adam",
                        help="Adam (lr 1e-3 unless --lr) or Nesterov SGD (lr 0.1 unless --lr)")
    parser.add_argument("--weight-decay", type=real(0.0), default=0.0, help="weight decay")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Train and evaluate; returns one record per epoch."""
    if args.download and args.data is None:
        raise SystemExit("lamina-train mnist: --download needs --data DIR to download into")
    autograd.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_mnist_arrays(args.data, args.download)
    hidden = 256 if args.hidden is None else args.hidden
    model = build_model(args.model, hidden, args.device)
    epochs = 10 if args.epochs is None else args.epochs
    batch_size = 128 if args.batch_size is None else args.batch_size
    lr = DEFAULT_LR[args.optimizer] if args.lr is None else args.lr
    if args.optimizer == "adam":
        opt: optim.Optimizer = optim.Adam(model.parameters(), lr=lr,
                                          weight_decay=args.weight_decay)
    else:
        opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9,
                        weight_decay=args.weight_decay, nesterov=True)
    train = DataLoader(TensorDataset(x_train, y_train), batch_size, shuffle=True,
                       generator=args.seed, device=args.device, num_workers=args.num_workers)
    test = DataLoader(TensorDataset(x_test, y_test), 1000, device=args.device)
    steps = epochs * len(train)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=opt.defaults["lr"], total_steps=steps,
                                          pct_start=0.2, cycle_momentum=False)
    precision = Precision(args.precision, args.device)
    checkpoints = getattr(args, "checkpoints", None)
    position = None if checkpoints is None else checkpoints.attach(
        model, opt, sched, {"model": args.model, "hidden": hidden}, scaler=precision.scaler)
    print(f"mnist: {args.model} ({model.num_parameters():,} parameters), "
          f"{len(x_train):,} training / {len(x_test):,} test images, {epochs} epochs, "
          f"{args.optimizer}, batch {batch_size}, device {device_name(args.device)}")
    return fit(maybe_compile(model, args.compile), train, test, opt, epochs, scheduler=sched,
               per_batch_scheduler=True, show_progress=not args.no_progress, on_epoch=args.on_epoch,
               checkpoints=checkpoints, position=position, precision=precision)


register_recipe(Recipe("mnist", "MLP or MLP-ResNet on MNIST digits", add_arguments, run,
                       model_from_config))
