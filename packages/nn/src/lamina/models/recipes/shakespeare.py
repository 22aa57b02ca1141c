"""``lamina-train shakespeare``: a character-level GPT on Tiny Shakespeare.

The defaults are the "baby GPT" configuration: 4 layers, 4 heads, width 128,
context 64, batch 12, AdamW (lr 1e-3, weight decay 0.1 on matrices only,
betas 0.9/0.99), 100 warmup iterations then cosine decay to lr/10, gradient
clipping at 1.0, no dropout, 2,000 iterations; the validation loss is
estimated every ``--eval-interval`` iterations on ``--eval-iters`` random
batches of the last 10% of the text.

    lamina-train shakespeare --model gpt --data ../shared/data/shakespeare \\
        --log gpt.csv --plot gpt.png --save gpt.safetensors
    lamina-generate --checkpoint gpt.safetensors --prompt "ROMEO:"
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from lamina import autograd, nn, optim
from lamina.data import Shakespeare

from .._argtypes import integer, real
from .._checkpoint import rng_state, set_rng_state
from .._gpt import GPT, GPTConfig
from .._precision import Precision
from .._reporting import device_name, print_line, progress_bar
from .._sampling import generate
from .._trainer import maybe_compile
from ._registry import Recipe, register_recipe

__all__ = ["estimate_loss", "model_from_config", "warmup_cosine"]


def warmup_cosine(warmup: int, total: int, min_ratio: float) -> Callable[[int], float]:
    """LR multiplier: linear warmup over ``warmup`` steps, then cosine to ``min_ratio``.

    The cosine reaches ``min_ratio`` at step ``total`` and stays there.
    """
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        if step >= total:
            return min_ratio
        progress = (step - warmup) / max(total - warmup, 1)
        return min_ratio + 0.5 * (1.0 - min_ratio) * (1.0 + math.cos(math.pi * progress))
    return factor


def estimate_loss(model: GPT, data: Shakespeare, batches: int, batch_size: int,
                  rng: np.random.Generator, device: Any = None,
                  loss_of: Callable[..., Any] | None = None,
                  precision: Precision | None = None) -> float:
    """Mean loss over ``batches`` random batches, in eval mode without a graph;
    ``loss_of(x, y)`` computes the loss (default: ``model``'s), under ``precision``'s
    autocast (default float32)."""
    loss_of = loss_of or _loss_of(model)
    model.eval()
    total = 0.0
    with autograd.no_grad(), (precision or Precision("fp32", device)).autocast():
        for _ in range(batches):
            x, y = data.get_batch(batch_size, rng)
            total += loss_of(autograd.tensor(x, device=device),
                             autograd.tensor(y, device=device)).item()
    model.train()
    return total / batches


def _loss_of(model: GPT) -> Callable[[Any, Any], Any]:
    """The mean cross-entropy of the model on (x, y), without its logits: one result,
    as ``lamina.autograd.compile`` replays it."""
    def loss(x: Any, y: Any) -> Any:
        return model(x, y)[1]
    return loss


def model_from_config(config: dict[str, Any], device: Any = None) -> GPT:
    """The GPT of a checkpoint's ``model_config`` (a :class:`GPTConfig` as a dict)."""
    model = GPT(GPTConfig(**config))
    if device is not None:
        model.to(device)  # in place, as in PyTorch
    return model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(batch_size=12, lr=1e-3, checkpoint_every=200)
    parser.add_argument("--model", choices=("gpt",), default="gpt", help="network")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="folder with input.txt (default: $LAMINA_DATA/shakespeare or "
                             "../shared/data/shakespeare)")
    parser.add_argument("--iters", type=integer(1), default=2000, help="training iterations")
    parser.add_argument("--eval-interval", type=integer(1), default=200,
                        help="iterations between validation estimates")
    parser.add_argument("--eval-iters", type=integer(1), default=50,
                        help="validation batches per estimate")
    parser.add_argument("--n-layer", type=integer(1), default=4, help="transformer blocks")
    parser.add_argument("--n-head", type=integer(1), default=4, help="attention heads")
    parser.add_argument("--n-embd", type=integer(1), default=128, help="embedding width")
    parser.add_argument("--block-size", type=integer(1), default=64, help="context length")
    parser.add_argument("--dropout", type=real(0.0, 1.0, below_maximum=True), default=0.0,
                        help="dropout probability")
    parser.add_argument("--weight-decay", type=real(0.0), default=0.1,
                        help="AdamW decay (matrices)")
    parser.add_argument("--warmup-iters", type=integer(0), default=100,
                        help="linear warmup iterations")
    parser.add_argument("--min-lr-ratio", type=real(0.0, 1.0), default=0.1,
                        help="final lr / peak lr")
    parser.add_argument("--grad-clip", type=real(0.0), default=1.0,
                        help="0 disables clipping")
    parser.add_argument("--sample-tokens", type=integer(0), default=200,
                        help="characters to sample after training (0: none)")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Train and validate; returns one record per evaluation."""
    if args.epochs is not None:
        raise ValueError("shakespeare trains by iterations: use --iters instead of --epochs")
    autograd.manual_seed(args.seed)
    train = Shakespeare(args.data, "train", args.block_size)
    val = Shakespeare(args.data, "val", args.block_size)
    config = GPTConfig(train.vocab_size, args.block_size, args.n_layer, args.n_head,
                       args.n_embd, args.dropout)
    model = GPT(config)
    if args.device is not None:
        model.to(args.device)
    lr = 1e-3 if args.lr is None else args.lr
    batch_size = 12 if args.batch_size is None else args.batch_size
    opt = optim.AdamW(model.parameter_groups(args.weight_decay), lr=lr, betas=(0.9, 0.99))
    sched = optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine(args.warmup_iters, args.iters, args.min_lr_ratio))
    precision = Precision(args.precision, args.device)
    checkpoints = getattr(args, "checkpoints", None)
    position = None if checkpoints is None else checkpoints.attach(
        model, opt, sched, config.to_dict(), scaler=precision.scaler,
        vocab="".join(train.tokenizer.vocab.itos))
    print(f"shakespeare: GPT {args.n_layer} layers, {args.n_head} heads, width {args.n_embd}, "
          f"context {args.block_size} ({model.num_parameters():,} parameters), "
          f"{len(train.data):,} training / {len(val.data):,} validation characters, "
          f"{args.iters} iterations of batch {batch_size}, device {device_name(args.device)}")
    rng, eval_rng = np.random.default_rng(args.seed), np.random.default_rng(args.seed + 1)
    history: list[dict[str, Any]] = []
    losses: list[float] = []
    first, elapsed_before = 1, 0.0
    if position is not None:
        history, losses = list(position["history"]), list(position["losses"])
        first, elapsed_before = position["iter"] + 1, position["elapsed"]
        set_rng_state(rng, position["rng"]["train"])
        set_rng_state(eval_rng, position["rng"]["eval"])
    loss_of = maybe_compile(_loss_of(model), args.compile)
    bar = progress_bar(args.iters, None, "it", not args.no_progress, initial=first - 1)
    start = time.perf_counter() - elapsed_before
    for step in range(first, args.iters + 1):
        x, y = train.get_batch(batch_size, rng)
        opt.zero_grad()
        with precision.autocast():
            loss = loss_of(autograd.tensor(x, device=args.device),
                           autograd.tensor(y, device=args.device))
        precision.backward(loss)
        if args.grad_clip > 0:
            precision.unscale(opt)
            nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        precision.step(opt)
        sched.step()
        losses.append(loss.item())
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if step % args.eval_interval == 0 or step == args.iters:
            elapsed = time.perf_counter() - start
            record = {"iter": step, "train_loss": float(np.mean(losses)),
                      "val_loss": estimate_loss(model, val, args.eval_iters, batch_size,
                                                eval_rng, args.device, loss_of, precision),
                      "lr": opt.param_groups[0]["lr"], "elapsed": elapsed}
            losses = []
            history.append(record)
            if getattr(args, "on_epoch", None) is not None:
                args.on_epoch(record)
        if checkpoints is not None:
            here = {"iter": step, "losses": losses, "history": history,
                    "elapsed": time.perf_counter() - start,
                    "rng": {"train": rng_state(rng), "eval": rng_state(eval_rng)}}
            checkpoints.periodic(step, "iter", here)
            checkpoints.check_stop(here)
    bar.close()
    if args.sample_tokens:
        ids = generate(model, train.tokenizer.encode("\n")[None], args.sample_tokens,
                       temperature=0.8, top_k=None, seed=args.seed)
        print_line("sample:\n" + train.tokenizer.decode(ids[0]))
    return history


register_recipe(Recipe("shakespeare", "character-level GPT on Tiny Shakespeare",
                       add_arguments, run, model_from_config))
