"""``lamina-train cifar10``: a ResNet9 on CIFAR-10 images.

Reads the "python version" batches from ``--data`` (default
``$LAMINA_DATA/cifar10``, else ``../shared/data/cifar10``), normalises with
the training set's channel statistics and augments with a horizontal flip
(``--augment crop-flip`` adds a random 32x32 crop of the 4-pixel zero-padded
image). The optimiser is Nesterov SGD (or Adam) with a one-cycle learning rate
and weight decay.

The defaults (flip only, peak lr 0.1) are what trains the small dlsys
ResNet9 best in 10 epochs: its stride-4 stem leaves an 8x8 map, so random
crops cost more than they regularise. Over 10 epochs in PyTorch with this
network: crop-flip at lr 0.05 reached 65.3%, no augmentation 66.5%, flip at
lr 0.1 69.5% (benchmarks/results/train_cifar10.md records Lamina beside it).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from lamina import autograd, nn, optim
from lamina.data import CIFAR10, CIFAR10_MEAN, CIFAR10_STD, DataLoader, Subset
from lamina.data import transforms as T

from .._resnet import CIFARResNet9, ResNet9
from .._trainer import fit
from ._registry import Recipe, register_recipe

__all__ = ["AUGMENTATIONS", "MODELS", "build_model", "cifar10_datasets", "default_data_dir",
           "make_optimizer"]

MODELS = {"resnet9": ResNet9, "resnet9-dawn": CIFARResNet9}


def default_data_dir() -> Path:
    """``$LAMINA_DATA/cifar10`` if LAMINA_DATA is set, else ``../shared/data/cifar10``."""
    root = os.environ.get("LAMINA_DATA")
    return Path(root) / "cifar10" if root else Path("..") / "shared" / "data" / "cifar10"


AUGMENTATIONS = ("crop-flip", "flip", "none")


def cifar10_datasets(root: str | os.PathLike[str], augment: str = "crop-flip",
                     train_size: int | None = None, test_size: int | None = None
                     ) -> tuple[Any, Any]:
    """Training and test datasets yielding normalised float32 (3, 32, 32) images.

    Args:
        root: folder of the CIFAR-10 batch files.
        augment: on training images, ``"crop-flip"`` (a random 32x32 crop of the
            4-pixel zero-padded image, then a random horizontal flip), ``"flip"``
            or ``"none"``.
        train_size, test_size: keep only the first that many images (None: all).
    """
    # Normalize works on the uint8 CHW image directly: statistics in 0..255 units.
    normalize = T.Normalize([m * 255 for m in CIFAR10_MEAN], [s * 255 for s in CIFAR10_STD])
    if augment not in AUGMENTATIONS:
        raise ValueError(f"cifar10: augment must be one of {AUGMENTATIONS}, got {augment!r}")
    steps = {"crop-flip": [T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()],
             "flip": [T.RandomHorizontalFlip()], "none": []}[augment]
    train_tf = T.Compose([*steps, normalize])
    train: Any = CIFAR10(root, train=True, transform=train_tf)
    test: Any = CIFAR10(root, train=False, transform=normalize)
    if train_size is not None:
        train = Subset(train, range(min(train_size, len(train))))
    if test_size is not None:
        test = Subset(test, range(min(test_size, len(test))))
    return train, test


def build_model(name: str, device: Any = None) -> nn.Module:
    """``resnet9``: the dlsys ResNet9 (432k parameters); ``resnet9-dawn``: 64-512 channels."""
    if name not in MODELS:
        raise ValueError(f"cifar10: unknown model {name!r}; choose one of {sorted(MODELS)}")
    return MODELS[name](device=device)


def make_optimizer(name: str, params: Any, lr: float | None, weight_decay: float
                   ) -> optim.Optimizer:
    """Nesterov SGD (momentum 0.9, default peak lr 0.1) or Adam (default lr 2e-3)."""
    if name == "sgd":
        return optim.SGD(params, lr=lr or 0.1, momentum=0.9, nesterov=True,
                         weight_decay=weight_decay)
    return optim.Adam(params, lr=lr or 2e-3, weight_decay=weight_decay)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet9",
                        help="resnet9 (dlsys, 16-128 channels) or resnet9-dawn (64-512)")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="folder of the CIFAR-10 python batches (default: "
                             "$LAMINA_DATA/cifar10 or ../shared/data/cifar10)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--augment", choices=AUGMENTATIONS, default="flip",
                        help="training augmentation (default: flip)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="use only the first N training images")
    parser.add_argument("--test-size", type=int, default=None,
                        help="use only the first N test images")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Train and evaluate; returns one record per epoch."""
    autograd.manual_seed(args.seed)
    root = args.data or default_data_dir()
    train_set, test_set = cifar10_datasets(root, args.augment, args.train_size,
                                           args.test_size)
    model = build_model(args.model, args.device)
    epochs, batch_size = args.epochs or 10, args.batch_size or 128
    opt = make_optimizer(args.optimizer, model.parameters(), args.lr, args.weight_decay)
    train = DataLoader(train_set, batch_size, shuffle=True, generator=args.seed,
                       device=args.device, num_workers=args.num_workers)
    test = DataLoader(test_set, 500, device=args.device)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=opt.defaults["lr"],
                                          total_steps=epochs * len(train), pct_start=0.25,
                                          cycle_momentum=False)
    print(f"cifar10: {args.model} ({model.num_parameters():,} parameters), "
          f"{len(train_set):,} training / {len(test_set):,} test images, {epochs} epochs, "
          f"{args.optimizer}, batch {batch_size}, device {args.device or 'default'}")
    history = fit(model, train, test, opt, epochs,
                  loss_fn=nn.CrossEntropyLoss(label_smoothing=args.label_smoothing),
                  scheduler=sched, per_batch_scheduler=True,
                  show_progress=not args.no_progress, on_epoch=args.on_epoch)
    if args.save:
        nn.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, args.save)
    return history


register_recipe(Recipe("cifar10", "ResNet9 on CIFAR-10 images", add_arguments, run))
