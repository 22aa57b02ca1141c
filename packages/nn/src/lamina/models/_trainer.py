"""A small classification training loop shared by the recipes and the benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import numpy as np
from lamina import autograd, nn, optim

from ._checkpoint import Checkpoints, rng_state, set_rng_state
from ._precision import Precision
from ._reporting import progress_bar

__all__ = ["evaluate", "fit", "maybe_compile", "train_epoch"]

M = TypeVar("M")


def maybe_compile(model: M, enabled: bool) -> M:
    """``model`` compiled with :func:`lamina.autograd.compile` (its forward and backward
    captured once per batch shape and replayed: the same results with less Python per
    step; attributes such as ``train()`` still reach the model), or ``model`` itself."""
    return cast(M, autograd.compile(model)) if enabled else model


def _correct(logits: autograd.Tensor, labels: autograd.Tensor) -> int:
    predicted = logits._data.argmax(1).numpy()
    return int((predicted == labels.numpy()).sum())


def train_epoch(model: nn.Module, loader: Iterable[Any], optimizer: optim.Optimizer,
                loss_fn: Callable[[Any, Any], autograd.Tensor],
                scheduler: Any = None, progress: Any = None,
                totals: dict[str, Any] | None = None,
                after_batch: Callable[[dict[str, Any]], None] | None = None,
                precision: Precision | None = None) -> dict[str, float]:
    """One pass over ``loader`` in training mode.

    Args:
        model: maps a batch of inputs (N, *) to logits (N, C).
        loader: yields (inputs, int64 labels (N,)) batches.
        optimizer: steps once per batch.
        loss_fn: (logits, labels) -> scalar loss.
        scheduler: stepped once per batch when given (e.g. OneCycleLR).
        progress: a tqdm bar to advance and annotate, or None.
        totals: the running totals of a partly trained epoch, as ``after_batch``
            saw them (``batch``, ``loss``, ``correct``, ``seen``): its first
            ``batch`` batches are drawn from ``loader`` and skipped, and the
            sums go on from there (how a resumed run continues mid-epoch).
        after_batch: called with the running totals after every step.
        precision: the steps' ``--precision`` (default float32).

    Returns:
        ``{"loss": mean loss per sample, "acc": accuracy}``.
    """
    precision = precision or Precision("fp32", None)
    model.train()
    run: dict[str, Any] = dict(totals) if totals else {"batch": 0, "loss": 0.0, "correct": 0,
                                                       "seen": 0}
    skip = run["batch"]
    for i, (x, y) in enumerate(loader):
        if i < skip:
            continue
        optimizer.zero_grad()
        with precision.autocast():
            logits = model(x)
            loss = loss_fn(logits, y)
        precision.backward(loss)
        precision.step(optimizer)
        if scheduler is not None:
            scheduler.step()
        n = y.shape[0]
        run["loss"] += loss.item() * n
        run["correct"] += _correct(logits, y)
        run["seen"] += n
        run["batch"] += 1
        if progress is not None:
            progress.update(1)
            progress.set_postfix(loss=f"{run['loss'] / run['seen']:.4f}",
                                 acc=f"{run['correct'] / run['seen']:.4f}")
        if after_batch is not None:
            after_batch(run)
    return {"loss": run["loss"] / max(run["seen"], 1), "acc": run["correct"] / max(run["seen"], 1)}


def evaluate(model: nn.Module, loader: Iterable[Any],
             loss_fn: Callable[[Any, Any], autograd.Tensor],
             precision: Precision | None = None) -> dict[str, float]:
    """Mean loss and accuracy over ``loader`` in eval mode, without a graph (under
    ``precision``'s autocast, as the training steps)."""
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with autograd.no_grad(), (precision or Precision("fp32", None)).autocast():
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
        on_epoch: Callable[[dict[str, float]], None] | None = None,
        checkpoints: Checkpoints | None = None,
        position: dict[str, Any] | None = None,
        precision: Precision | None = None) -> list[dict[str, float]]:
    """Train for ``epochs`` epochs, evaluating on ``test_loader`` after each.

    Args:
        checkpoints: when given (already attached to the model, optimizer and
            scheduler), a periodic checkpoint after every epoch and a Ctrl-C
            checkpoint at the next batch boundary.
        position: the position a checkpoint saved (``Checkpoints.attach``
            returns it): training continues from there, bit for bit. The
            loader's generator is restored to its state at the start of the
            saved epoch, so the epoch's batches are the same.
        precision: the steps' ``--precision`` (default float32).

    Returns:
        One record per epoch: epoch, train_loss, train_acc, test_loss,
        test_acc, epoch_time (seconds of training, without evaluation), lr.
    """
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    generator = getattr(train_loader, "generator", None)
    history: list[dict[str, Any]] = []
    first, totals, elapsed_before = 1, None, 0.0
    if position is not None:
        history = list(position["history"])
        first, totals = position["epoch"], position["totals"]
        elapsed_before = position["elapsed"]
        if generator is not None and position["rng"]["loader"] is not None:
            set_rng_state(generator, position["rng"]["loader"])

    for epoch in range(first, epochs + 1):
        # the loader's state before the epoch: resuming mid-epoch replays its batches
        loader_rng = rng_state(generator) if generator is not None else None
        start = time.perf_counter() - elapsed_before
        stop_check = None if checkpoints is None else _stop_check(
            checkpoints, epoch, history, start, loader_rng)
        bar = progress_bar(len(train_loader), f"epoch {epoch}/{epochs}", "batch",
                           show_progress, initial=totals["batch"] if totals else 0)
        train = train_epoch(model, train_loader, optimizer, loss_fn,
                            scheduler if per_batch_scheduler else None, bar, totals,
                            stop_check, precision)
        elapsed = time.perf_counter() - start
        bar.close()
        totals, elapsed_before = None, 0.0
        test = evaluate(model, test_loader, loss_fn, precision)
        lr = float(np.mean([g["lr"] for g in optimizer.param_groups]))
        if scheduler is not None and not per_batch_scheduler:
            scheduler.step()
        record = {"epoch": epoch, "train_loss": train["loss"], "train_acc": train["acc"],
                  "test_loss": test["loss"], "test_acc": test["acc"],
                  "epoch_time": elapsed, "lr": lr}
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if checkpoints is not None:
            done = {"epoch": epoch + 1, "totals": None, "history": history, "elapsed": 0.0,
                    "rng": {"loader": rng_state(generator) if generator is not None else None}}
            checkpoints.periodic(epoch, "epoch", done)
            checkpoints.check_stop(done)
    return history


def _stop_check(checkpoints: Checkpoints, epoch: int, history: list[dict[str, Any]],
                start: float, loader_rng: Any) -> Callable[[dict[str, Any]], None]:
    """After each batch: checkpoint the position and stop if Ctrl-C was pressed."""
    def after_batch(run: dict[str, Any]) -> None:
        checkpoints.check_stop({"epoch": epoch, "totals": run, "history": history,
                                "elapsed": time.perf_counter() - start,
                                "rng": {"loader": loader_rng}})
    return after_batch
