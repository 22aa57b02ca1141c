"""``lamina-train cifar10``: a ResNet9 on CIFAR-10 images.

Reads the "python version" batches from ``--data`` (default
``$LAMINA_DATA/cifar10``, else ``../shared/data/cifar10``), normalises with
the training set's channel statistics, ZCA-whitens (``--zca-eps``, 0 for
none) and augments with a random crop of the padded image and a horizontal
flip. The optimiser is Nesterov SGD (or Adam) with a one-cycle learning rate
and weight decay on the weight matrices and kernels only.

The defaults are what trains the small dlsys ResNet9 best in 10 epochs
(benchmarks/cifar10_recipe_search.py, PyTorch, recorded in
benchmarks/results/cifar10_recipe_search.md): batch 256 at peak lr 0.4,
ZCA with eps 1, crops of the 1-pixel padded image (its stride-4 stem leaves an
8x8 map, and 4-pixel crops cost more than they regularise), no decay on
BatchNorm parameters and biases. They reach 75.2-75.6% over three seeds, where
the course-style recipe (batch 128, lr 0.1, flips only) reaches about 70%.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from lamina import autograd, nn, optim
from lamina.data import CIFAR10, CIFAR10_MEAN, CIFAR10_STD, DataLoader, Dataset
from lamina.data import transforms as T

from .._argtypes import integer, real
from .._precision import Precision
from .._reporting import device_name, print_line
from .._resnet import CIFARResNet9, ResNet9
from .._trainer import fit, maybe_compile
from ._registry import Recipe, register_recipe

__all__ = ["AUGMENTATIONS", "MODELS", "build_model", "cifar10_datasets", "default_data_dir",
           "make_optimizer", "parameter_groups", "shifted_views", "tta_accuracy"]

MODELS = {"resnet9": ResNet9, "resnet9-dawn": CIFARResNet9}


def default_data_dir() -> Path:
    """``$LAMINA_DATA/cifar10`` if LAMINA_DATA is set, else ``../shared/data/cifar10``."""
    root = os.environ.get("LAMINA_DATA")
    return Path(root) / "cifar10" if root else Path("..") / "shared" / "data" / "cifar10"


AUGMENTATIONS = ("crop-flip", "flip", "none")


class _Images(Dataset):
    """(image, label) rows of preprocessed float32 images, each through ``transform``."""

    def __init__(self, images: np.ndarray, targets: np.ndarray,
                 transform: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.images, self.targets, self.transform = images, targets, transform

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        image = self.images[index]
        return (image if self.transform is None else self.transform(image)), self.targets[index]

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self[i] for i in indices]


def cifar10_datasets(root: str | os.PathLike[str], augment: str = "crop-flip",
                     train_size: int | None = None, test_size: int | None = None,
                     crop_padding: int = 4, zca_eps: float = 0.0) -> tuple[Any, Any]:
    """Training and test datasets yielding preprocessed float32 (3, 32, 32) images.

    Every image is normalised with the training set's channel statistics and,
    when ``zca_eps > 0``, ZCA-whitened by a transform fitted on the training
    images (:meth:`~lamina.data.transforms.LinearTransformation.zca`); both
    steps run once over the whole set. Augmentation then works per sample on
    the preprocessed image, so crop padding is the mean colour (0).

    Args:
        root: folder of the CIFAR-10 batch files.
        augment: on training images, ``"crop-flip"`` (a random 32x32 crop of the
            image padded by ``crop_padding`` pixels, then a random horizontal
            flip), ``"flip"`` or ``"none"``.
        train_size, test_size: keep only the first that many images (None: all).
        crop_padding: pixels of padding for ``"crop-flip"`` (4 is the usual
            choice; 1 suits the stride-4 stem of the dlsys ResNet9 better).
        zca_eps: the whitening's epsilon, in units of the normalised data's
            variance; 0 for no whitening.
    """
    if augment not in AUGMENTATIONS:
        raise ValueError(f"cifar10: augment must be one of {AUGMENTATIONS}, got {augment!r}")
    if crop_padding < 0 or zca_eps < 0:
        raise ValueError(f"cifar10: crop_padding and zca_eps must be >= 0, got "
                         f"{crop_padding} and {zca_eps}")
    train, test = CIFAR10(root, train=True), CIFAR10(root, train=False)
    n_train, n_test = len(train) if train_size is None else train_size, \
        len(test) if test_size is None else test_size
    normalize = T.Normalize(CIFAR10_MEAN, CIFAR10_STD)
    x_train = normalize(train.data[:n_train].astype(np.float32) / 255)
    x_test = normalize(test.data[:n_test].astype(np.float32) / 255)
    if zca_eps:
        whiten = T.LinearTransformation.zca(x_train, zca_eps)
        x_train, x_test = whiten(x_train), whiten(x_test)
    pipelines: dict[str, list[Callable[[Any], Any]]] = {
        "crop-flip": [T.RandomCrop(32, padding=crop_padding), T.RandomHorizontalFlip()],
        "flip": [T.RandomHorizontalFlip()], "none": []}
    steps = pipelines[augment]
    return (_Images(x_train, train.targets[:n_train], T.Compose(steps) if steps else None),
            _Images(x_test, test.targets[:n_test]))


def shifted_views(images: np.ndarray, shift: int) -> Iterator[np.ndarray]:
    """``images`` (N, C, H, W) and their mirrors, each moved by every (dy, dx)
    with ``|dy|, |dx| <= shift`` pixels, zeros filling what comes in:
    ``2 * (2 * shift + 1) ** 2`` views (``shift=0``: the images and mirrors)."""
    h, w = images.shape[-2:]
    padded = np.pad(images, [(0, 0)] * (images.ndim - 2) + [(shift, shift)] * 2)
    for mirrored in (padded, padded[..., ::-1]):
        for dy in range(2 * shift + 1):
            for dx in range(2 * shift + 1):
                yield np.ascontiguousarray(mirrored[..., dy:dy + h, dx:dx + w])


def tta_accuracy(logits: Callable[[np.ndarray], np.ndarray], images: np.ndarray,
                 targets: np.ndarray, shift: int = 2, batch_size: int = 500) -> float:
    """Accuracy with test-time augmentation: each image's class is the argmax of
    its softmax summed over :func:`shifted_views`.

    Args:
        logits: maps a float32 batch (B, C, H, W) to logits (B, classes), any
            framework; numpy arrays in and out.
        images: (N, C, H, W); targets: int labels (N,).
        shift: the largest translation in pixels.
    """
    correct = 0
    for s in range(0, len(images), batch_size):
        batch, total = images[s:s + batch_size], 0.0
        for view in shifted_views(batch, shift):
            z = np.asarray(logits(view), dtype=np.float64)
            z = np.exp(z - z.max(1, keepdims=True))
            total = total + z / z.sum(1, keepdims=True)
        correct += int((np.argmax(total, 1) == targets[s:s + batch_size]).sum())
    return correct / len(images)


def build_model(name: str, device: Any = None) -> nn.Module:
    """``resnet9``: the dlsys ResNet9 (432k parameters); ``resnet9-dawn``: 64-512 channels."""
    if name not in MODELS:
        raise ValueError(f"cifar10: unknown model {name!r}; choose one of {sorted(MODELS)}")
    return MODELS[name](device=device)


def model_from_config(config: dict[str, Any], device: Any = None) -> nn.Module:
    """The model a checkpoint's ``model_config`` (``model``) describes."""
    return build_model(config["model"], device)


def parameter_groups(model: nn.Module, norm_bias_decay: float) -> list[dict[str, Any]]:
    """Two optimizer groups: the weight matrices and kernels, and the 1-D
    parameters (BatchNorm weights and biases, layer biases), which get weight
    decay ``norm_bias_decay`` (decaying them only fights the normalisation)."""
    params = list(model.parameters())
    return [{"params": [p for p in params if p.ndim > 1]},
            {"params": [p for p in params if p.ndim <= 1], "weight_decay": norm_bias_decay}]


def make_optimizer(name: str, params: Any, lr: float | None, weight_decay: float
                   ) -> optim.Optimizer:
    """Nesterov SGD (momentum 0.9, default peak lr 0.4) or Adam (default lr 2e-3);
    ``lr`` None takes the default (0 is a learning rate like any other)."""
    if name == "sgd":
        return optim.SGD(params, lr=0.4 if lr is None else lr, momentum=0.9, nesterov=True,
                         weight_decay=weight_decay)
    return optim.Adam(params, lr=2e-3 if lr is None else lr, weight_decay=weight_decay)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(epochs=10, batch_size=256)
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet9",
                        help="resnet9 (dlsys, 16-128 channels) or resnet9-dawn (64-512)")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="folder of the CIFAR-10 python batches (default: "
                             "$LAMINA_DATA/cifar10 or ../shared/data/cifar10)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                        help="Nesterov SGD (peak lr 0.4 unless --lr) or Adam (2e-3)")
    parser.add_argument("--weight-decay", type=real(0.0), default=5e-4,
                        help="weight decay of weight matrices and kernels")
    parser.add_argument("--norm-bias-decay", type=real(0.0), default=0.0,
                        help="weight decay of BatchNorm parameters and biases")
    parser.add_argument("--label-smoothing", type=real(0.0, 1.0), default=0.0,
                        help="label smoothing of the cross-entropy")
    parser.add_argument("--augment", choices=AUGMENTATIONS, default="crop-flip",
                        help="training augmentation")
    parser.add_argument("--crop-padding", type=integer(0), default=1,
                        help="padding of the random crop (4 suits resnet9-dawn)")
    parser.add_argument("--zca-eps", type=real(0.0), default=1.0,
                        help="ZCA whitening epsilon, 0 for none")
    parser.add_argument("--tta-shift", type=integer(0), default=None, metavar="PIXELS",
                        help="after training, also report test accuracy averaged over "
                             "flips and shifts of up to PIXELS (e.g. 2)")
    parser.add_argument("--train-size", type=integer(1), default=None,
                        help="use only the first N training images")
    parser.add_argument("--test-size", type=integer(1), default=None,
                        help="use only the first N test images")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Train and evaluate; returns one record per epoch (the last one also has
    ``test_acc_tta`` when ``--tta-shift`` is given)."""
    autograd.manual_seed(args.seed)
    root = args.data or default_data_dir()
    train_set, test_set = cifar10_datasets(root, args.augment, args.train_size,
                                           args.test_size, args.crop_padding, args.zca_eps)
    model = build_model(args.model, args.device)
    epochs = 10 if args.epochs is None else args.epochs
    batch_size = 256 if args.batch_size is None else args.batch_size
    opt = make_optimizer(args.optimizer, parameter_groups(model, args.norm_bias_decay),
                         args.lr, args.weight_decay)
    train = DataLoader(train_set, batch_size, shuffle=True, generator=args.seed,
                       device=args.device, num_workers=args.num_workers)
    test = DataLoader(test_set, 500, device=args.device)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=opt.defaults["lr"],
                                          total_steps=epochs * len(train), pct_start=0.25,
                                          cycle_momentum=False)
    precision = Precision(args.precision, args.device)
    checkpoints = getattr(args, "checkpoints", None)
    position = None if checkpoints is None else checkpoints.attach(
        model, opt, sched, {"model": args.model}, scaler=precision.scaler)
    print(f"cifar10: {args.model} ({model.num_parameters():,} parameters), "
          f"{len(train_set):,} training / {len(test_set):,} test images, {epochs} epochs, "
          f"{args.optimizer}, batch {batch_size}, device {device_name(args.device)}")
    history = fit(maybe_compile(model, args.compile), train, test, opt, epochs,
                  loss_fn=nn.CrossEntropyLoss(label_smoothing=args.label_smoothing),
                  scheduler=sched, per_batch_scheduler=True,
                  show_progress=not args.no_progress, on_epoch=args.on_epoch,
                  checkpoints=checkpoints, position=position, precision=precision)
    if args.tta_shift is not None:
        model.eval()

        def logits(x: np.ndarray) -> np.ndarray:
            with autograd.no_grad(), precision.autocast():
                return model(autograd.tensor(x, device=args.device)).float().numpy()
        acc = tta_accuracy(logits, test_set.images, test_set.targets, args.tta_shift)
        history[-1]["test_acc_tta"] = acc
        print_line(f"cifar10: test accuracy {history[-1]['test_acc']:.4f}, with flip and "
              f"{args.tta_shift}-pixel shift test-time augmentation {acc:.4f}")
    return history


register_recipe(Recipe("cifar10", "ResNet9 on CIFAR-10 images", add_arguments, run,
                       model_from_config))
