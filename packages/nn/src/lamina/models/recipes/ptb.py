"""``lamina-train ptb``: a word-level LSTM (or RNN) language model on Penn Treebank.

The defaults are the "small" configuration of Zaremba, Sutskever and Vinyals
(2014, "Recurrent neural network regularization"): 2 layers of 200 units,
BPTT 35, batch 20, SGD with learning rate 1 halved after every epoch past
the 4th, every parameter initialised from U(-0.1, 0.1), gradients clipped
at norm 5, 13 epochs, no dropout. As in their code, the loss that is
differentiated is summed over the BPTT steps and averaged over the batch.
Perplexity is reported on the validation set every epoch and on the test set
at the end (evaluation batch 10).

    lamina-train ptb --model lstm --data ../shared/data/ptb --log ptb.csv --plot ptb.png
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lamina import autograd, optim
from lamina.data import PTB, BPTTBatches, batchify

from .._argtypes import integer, real
from .._checkpoint import Checkpoints
from .._language_model import LanguageModel, evaluate_lm, train_lm_epoch
from .._precision import Precision
from .._reporting import device_name, progress_bar
from ._registry import Recipe, register_recipe

__all__ = ["build_model", "default_data_dir", "model_config", "model_from_config",
           "zaremba_lr_factor"]

EVAL_BATCH = 10


def default_data_dir() -> Path:
    """``$LAMINA_DATA/ptb`` if LAMINA_DATA is set, else ``../shared/data/ptb``."""
    env = os.environ.get("LAMINA_DATA")
    return Path(env) / "ptb" if env else Path("..") / "shared" / "data" / "ptb"


def zaremba_lr_factor(decay: float, decay_after: int) -> Any:
    """Epoch index (0-based) -> LR multiplier ``decay ** max(epoch + 1 - decay_after, 0)``.

    With decay 0.5 after 4 epochs: epochs 1-4 at lr, epoch 5 at lr/2, epoch 6 at lr/4, ...
    """
    return lambda epoch: decay ** max(epoch + 1 - decay_after, 0)


def model_config(vocab_size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The LanguageModel's keyword arguments the options describe."""
    return {"vocab_size": vocab_size, "embed_size": args.hidden, "hidden_size": args.hidden,
            "num_layers": args.layers, "cell": args.model, "dropout": args.dropout,
            "tie_weights": args.tied, "init_range": args.init_range}


def model_from_config(config: dict[str, Any], device: Any = None) -> LanguageModel:
    """The LanguageModel of a checkpoint's ``model_config``."""
    return LanguageModel(**config, device=device)


def build_model(vocab_size: int, args: argparse.Namespace) -> LanguageModel:
    """The LanguageModel the options describe."""
    return model_from_config(model_config(vocab_size, args), args.device)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(epochs=13, batch_size=20, lr=1.0)
    parser.add_argument("--model", choices=("lstm", "rnn-tanh", "rnn-relu"), default="lstm",
                        help="recurrent cell")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="folder with ptb.{train,valid,test}.txt (default: "
                             "$LAMINA_DATA/ptb or ../shared/data/ptb)")
    parser.add_argument("--hidden", type=integer(1), default=200,
                        help="embedding and hidden width")
    parser.add_argument("--layers", type=integer(1), default=2, help="recurrent layers")
    parser.add_argument("--bptt", type=integer(1), default=35, help="truncated-BPTT length")
    parser.add_argument("--dropout", type=real(0.0, 1.0), default=0.0,
                        help="dropout probability")
    parser.add_argument("--clip", type=real(0.0), default=5.0,
                        help="max gradient norm; 0 disables clipping")
    parser.add_argument("--init-range", type=real(0.0), default=0.1,
                        help="uniform init range of every parameter")
    parser.add_argument("--lr-decay", type=real(0.0), default=0.5,
                        help="learning-rate factor per epoch past --decay-after")
    parser.add_argument("--decay-after", type=integer(0), default=4,
                        help="epochs at the full learning rate")
    parser.add_argument("--tied", action="store_true", help="tie embedding and decoder")
    parser.add_argument("--max-batches", type=integer(1), default=None,
                        help="stop each epoch after this many batches (quick runs)")


class _Limited:
    """The first ``n`` batches of ``batches`` (all of them when n is None)."""

    def __init__(self, batches: BPTTBatches, n: int | None) -> None:
        self.batches, self.n = batches, n

    def __len__(self) -> int:
        return len(self.batches) if self.n is None else min(self.n, len(self.batches))

    def __iter__(self) -> Any:
        for i, batch in enumerate(self.batches):
            if i >= len(self):
                return
            yield batch


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Train, validating every epoch and testing at the end; one record per epoch."""
    autograd.manual_seed(args.seed)
    corpus = PTB(args.data or default_data_dir())
    epochs = 13 if args.epochs is None else args.epochs
    batch_size = 20 if args.batch_size is None else args.batch_size
    lr = 1.0 if args.lr is None else args.lr
    model = build_model(len(corpus.vocab), args)
    train = _Limited(BPTTBatches(batchify(corpus.train, batch_size), args.bptt, args.device),
                     args.max_batches)
    valid = BPTTBatches(batchify(corpus.valid, EVAL_BATCH), args.bptt, args.device)
    test = BPTTBatches(batchify(corpus.test, EVAL_BATCH), args.bptt, args.device)
    opt = optim.SGD(model.parameters(), lr=lr)
    sched = optim.lr_scheduler.LambdaLR(opt, zaremba_lr_factor(args.lr_decay, args.decay_after))
    precision = Precision(args.precision, args.device)
    checkpoints = getattr(args, "checkpoints", None)
    position = None if checkpoints is None else checkpoints.attach(
        model, opt, sched, model_config(len(corpus.vocab), args), scaler=precision.scaler,
        vocab=corpus.vocab.itos)
    print(f"ptb: {args.model} {args.layers}x{args.hidden} ({model.num_parameters():,} "
          f"parameters), vocabulary {len(corpus.vocab):,}, {len(corpus.train):,} training "
          f"tokens, {epochs} epochs, batch {batch_size}, BPTT {args.bptt}, SGD lr {lr}, "
          f"device {device_name(args.device)}")
    history: list[dict[str, Any]] = []
    first, totals, elapsed_before = 1, None, 0.0
    if position is not None:
        history, first = list(position["history"]), position["epoch"]
        totals, elapsed_before = position["totals"], position["elapsed"]
    for epoch in range(first, epochs + 1):
        bar = progress_bar(len(train), f"epoch {epoch}/{epochs}", "batch",
                           not args.no_progress, initial=totals["batch"] if totals else 0)
        current_lr = opt.param_groups[0]["lr"]
        start = time.perf_counter() - elapsed_before
        tr = train_lm_epoch(model, train, opt, batch_size, args.clip or None, progress=bar,
                            totals=totals, after_batch=None if checkpoints is None else
                            _stop_check(checkpoints, epoch, history, start),
                            precision=precision)
        elapsed = time.perf_counter() - start
        bar.close()
        totals, elapsed_before = None, 0.0
        va = evaluate_lm(model, valid, EVAL_BATCH, precision)
        sched.step()
        record = {"epoch": epoch, "train_loss": tr["loss"], "train_ppl": tr["ppl"],
                  "valid_loss": va["loss"], "valid_ppl": va["ppl"], "epoch_time": elapsed,
                  "lr": current_lr}
        if epoch == epochs:
            te = evaluate_lm(model, test, EVAL_BATCH, precision)
            record.update(test_loss=te["loss"], test_ppl=te["ppl"])
        history.append(record)
        if getattr(args, "on_epoch", None) is not None:
            args.on_epoch(record)
        if checkpoints is not None:
            done = {"epoch": epoch + 1, "totals": None, "history": history, "elapsed": 0.0}
            checkpoints.periodic(epoch, "epoch", done)
            checkpoints.check_stop(done)
    return history


def _stop_check(checkpoints: Checkpoints, epoch: int, history: list[dict[str, Any]],
                start: float) -> Callable[[dict[str, Any]], None]:
    """After each batch: checkpoint and stop if Ctrl-C was pressed."""
    def after_batch(run: dict[str, Any]) -> None:
        checkpoints.check_stop({"epoch": epoch, "totals": run, "history": history,
                                "elapsed": time.perf_counter() - start})
    return after_batch


register_recipe(Recipe("ptb", "word-level LSTM/RNN language model on Penn Treebank",
                       add_arguments, run, model_from_config))
