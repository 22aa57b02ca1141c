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
from pathlib import Path
from typing import Any

from lamina import autograd, nn, optim
from lamina.data import PTB, BPTTBatches, batchify

from .._language_model import LanguageModel, evaluate_lm, train_lm_epoch
from ._registry import Recipe, register_recipe

__all__ = ["build_model", "default_data_dir", "zaremba_lr_factor"]

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


def build_model(vocab_size: int, args: argparse.Namespace) -> LanguageModel:
    """The LanguageModel the options describe."""
    return LanguageModel(vocab_size, args.hidden, args.hidden, args.layers, cell=args.model,
                         dropout=args.dropout, tie_weights=args.tied,
                         init_range=args.init_range, device=args.device)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=("lstm", "rnn-tanh", "rnn-relu"), default="lstm")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="folder with ptb.{train,valid,test}.txt (default: "
                             "$LAMINA_DATA/ptb or ../shared/data/ptb)")
    parser.add_argument("--hidden", type=int, default=200, help="embedding and hidden width")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--bptt", type=int, default=35, help="truncated-BPTT length")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--clip", type=float, default=5.0, help="max gradient norm")
    parser.add_argument("--init-range", type=float, default=0.1,
                        help="uniform init range of every parameter")
    parser.add_argument("--lr-decay", type=float, default=0.5)
    parser.add_argument("--decay-after", type=int, default=4,
                        help="epochs at the full learning rate")
    parser.add_argument("--tied", action="store_true", help="tie embedding and decoder")
    parser.add_argument("--max-batches", type=int, default=None,
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
    from tqdm.auto import tqdm

    autograd.manual_seed(args.seed)
    corpus = PTB(args.data or default_data_dir())
    epochs, batch_size, lr = args.epochs or 13, args.batch_size or 20, args.lr or 1.0
    model = build_model(len(corpus.vocab), args)
    train = _Limited(BPTTBatches(batchify(corpus.train, batch_size), args.bptt, args.device),
                     args.max_batches)
    valid = BPTTBatches(batchify(corpus.valid, EVAL_BATCH), args.bptt, args.device)
    test = BPTTBatches(batchify(corpus.test, EVAL_BATCH), args.bptt, args.device)
    opt = optim.SGD(model.parameters(), lr=lr)
    sched = optim.lr_scheduler.LambdaLR(opt, zaremba_lr_factor(args.lr_decay, args.decay_after))
    print(f"ptb: {args.model} {args.layers}x{args.hidden} ({model.num_parameters():,} "
          f"parameters), vocabulary {len(corpus.vocab):,}, {len(corpus.train):,} training "
          f"tokens, {epochs} epochs, batch {batch_size}, BPTT {args.bptt}, SGD lr {lr}, "
          f"device {args.device or 'default'}")
    history = []
    for epoch in range(1, epochs + 1):
        bar = tqdm(total=len(train), desc=f"epoch {epoch}/{epochs}", unit="batch",
                   disable=args.no_progress, leave=True)
        current_lr = opt.param_groups[0]["lr"]
        start = time.perf_counter()
        tr = train_lm_epoch(model, train, opt, batch_size, args.clip, progress=bar)
        elapsed = time.perf_counter() - start
        bar.close()
        va = evaluate_lm(model, valid, EVAL_BATCH)
        sched.step()
        record = {"epoch": epoch, "train_loss": tr["loss"], "train_ppl": tr["ppl"],
                  "valid_loss": va["loss"], "valid_ppl": va["ppl"], "epoch_time": elapsed,
                  "lr": current_lr}
        if epoch == epochs:
            te = evaluate_lm(model, test, EVAL_BATCH)
            record.update(test_loss=te["loss"], test_ppl=te["ppl"])
        history.append(record)
        if getattr(args, "on_epoch", None) is not None:
            args.on_epoch(record)
    if args.save:
        nn.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                 "vocab": corpus.vocab.itos}, args.save)
    return history


register_recipe(Recipe("ptb", "word-level LSTM/RNN language model on Penn Treebank",
                       add_arguments, run))
