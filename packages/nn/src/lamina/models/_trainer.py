"""A small classification training loop shared by the recipes and the benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from lamina import autograd, nn, optim

__all__ = ["evaluate", "fit", "train_epoch"]


def _correct(logits: autograd.Tensor, labels: autograd.Tensor) -> int:
    predicted = logits.data.argmax(1).numpy()
    return int((predicted == labels.numpy()).sum())


def train_epoch(model: nn.Module, loader: Iterable[Any], optimizer: optim.Optimizer,
                loss_fn: Callable[[Any, Any], autograd.Tensor],
                scheduler: Any = None, progress: Any = None) -> dict[str, float]:
    """One pass over ``loader`` in training mode.

    Args:
        model: maps a batch of inputs (N, *) to logits (N, C).
        loader: yields (inputs, int64 labels (N,)) batches.
        optimizer: steps once per batch.
        loss_fn: (logits, labels) -> scalar loss.
        scheduler: stepped once per batch when given (e.g. OneCycleLR).
        progress: a tqdm bar to advance and annotate, or None.

    Returns:
        ``{"loss": mean loss per sample, "acc": accuracy}``.
    """
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    for x, y in loader:
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        n = y.shape[0]
        total_loss += loss.item() * n
        correct += _correct(logits, y)
        seen += n
        if progress is not None:
            progress.update(1)
            progress.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.4f}")
    return {"loss": total_loss / max(seen, 1), "acc": correct / max(seen, 1)}


def evaluate(model: nn.Module, loader: Iterable[Any],
             loss_fn: Callable[[Any, Any], autograd.Tensor]) -> dict[str, float]:
    """Mean loss and accuracy over ``loader`` in eval mode, without a graph."""
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with autograd.no_grad():
        for x, y in loader:
            logits = model(x)
            n = y.shape[0]
            total_loss += loss_fn(logits, y).item() * n
            correct += _correct(logits, y)
            seen += n
    return {"loss": total_loss / max(seen, 1), "acc": correct / max(seen, 1)}


def fit(model: nn.Module, train_loader: Any, test_loader: Any, optimizer: optim.Optimizer,
        epochs: int, loss_fn: Callable[[Any, Any], autograd.Tensor] | None = None,
        scheduler: Any = None, per_batch_scheduler: bool = False, show_progress: bool = True,
        on_epoch: Callable[[dict[str, float]], None] | None = None) -> list[dict[str, float]]:
    """Train for ``epochs`` epochs, evaluating on ``test_loader`` after each.

    Returns:
        One record per epoch: epoch, train_loss, train_acc, test_loss,
        test_acc, epoch_time (seconds of training, without evaluation), lr.
    """
    from tqdm.auto import tqdm

    loss_fn = loss_fn or nn.CrossEntropyLoss()
    history = []
    for epoch in range(1, epochs + 1):
        bar = tqdm(total=len(train_loader), desc=f"epoch {epoch}/{epochs}", unit="batch",
                   disable=not show_progress, leave=True)
        start = time.perf_counter()
        train = train_epoch(model, train_loader, optimizer, loss_fn,
                            scheduler if per_batch_scheduler else None, bar)
        elapsed = time.perf_counter() - start
        bar.close()
        test = evaluate(model, test_loader, loss_fn)
        lr = float(np.mean([g["lr"] for g in optimizer.param_groups]))
        if scheduler is not None and not per_batch_scheduler:
            scheduler.step()
        record = {"epoch": epoch, "train_loss": train["loss"], "train_acc": train["acc"],
                  "test_loss": test["loss"], "test_acc": test["acc"],
                  "epoch_time": elapsed, "lr": lr}
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
    return history
