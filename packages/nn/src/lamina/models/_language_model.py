"""A word-level recurrent language model: embedding, RNN or LSTM, linear decoder.

The layout and parameter names follow PyTorch's ``word_language_model``
example (``encoder``, ``rnn``, ``decoder``), so its checkpoints map directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from lamina import autograd, nn, optim

from ._precision import Precision

__all__ = ["LanguageModel", "detach_hidden", "evaluate_lm", "token_nll", "train_lm_epoch"]

_CELLS = ("lstm", "rnn-tanh", "rnn-relu")

Hidden = Any  # Tensor (RNN) or (h, c) pair (LSTM), each (num_layers, N, H)


class LanguageModel(nn.Module):
    """Token ids in, next-token logits out, carrying a hidden state across calls.

    Args:
        vocab_size: V, the number of tokens.
        embed_size: E, the embedding width.
        hidden_size: H, the recurrent width.
        num_layers: stacked recurrent layers.
        cell: ``"lstm"``, ``"rnn-tanh"`` or ``"rnn-relu"``.
        dropout: dropout on the embeddings, between layers and before the
            decoder (training mode only).
        tie_weights: share the embedding matrix with the decoder's weight
            (Press & Wolf, 2017); needs ``hidden_size == embed_size``.
        init_range: when given, every parameter starts from
            U(-init_range, init_range) (Zaremba et al. use 0.1); otherwise
            each layer's PyTorch default.

    Shape:
        ids (L, N) int64, hidden from :meth:`init_hidden` or None ->
        logits (L, N, V) and the final hidden state.

    Example:
        >>> from lamina import autograd
        >>> model = LanguageModel(50, 8, 8, num_layers=2)
        >>> logits, (h, c) = model(autograd.zeros(5, 3, dtype="int64"))
        >>> logits.shape, h.shape
        ((5, 3, 50), (2, 3, 8))
    """

    def __init__(self, vocab_size: int, embed_size: int = 200, hidden_size: int = 200,
                 num_layers: int = 2, cell: str = "lstm", dropout: float = 0.0,
                 tie_weights: bool = False, init_range: float | None = None,
                 device: Any = None) -> None:
        super().__init__()
        if cell not in _CELLS:
            raise ValueError(f"LanguageModel: cell must be one of {_CELLS}, got {cell!r}")
        if tie_weights and hidden_size != embed_size:
            raise ValueError(f"LanguageModel: tie_weights needs hidden_size == embed_size, "
                             f"got {hidden_size} and {embed_size}")
        self.cell, self.tie_weights = cell, tie_weights
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab_size, embed_size, device=device)
        if cell == "lstm":
            self.rnn: nn.Module = nn.LSTM(embed_size, hidden_size, num_layers,
                                          dropout=dropout, device=device)
        else:
            self.rnn = nn.RNN(embed_size, hidden_size, num_layers, nonlinearity=cell[4:],
                              dropout=dropout, device=device)
        self.decoder = nn.Linear(hidden_size, vocab_size, device=device)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        if init_range is not None:
            for p in self.parameters():
                nn.init.uniform_(p, -init_range, init_range)

    def forward(self, ids: autograd.Tensor, hidden: Hidden = None
                ) -> tuple[autograd.Tensor, Hidden]:
        emb = self.drop(self.encoder(ids))
        out, hidden = self.rnn(emb, hidden)
        steps, batch, width = out.shape
        # One (L*N, H) @ (H, V) product: a 3-D input would go through a batched matmul.
        logits = self.decoder(self.drop(out).reshape(steps * batch, width))
        return logits.reshape(steps, batch, logits.shape[-1]), hidden

    def init_hidden(self, batch_size: int) -> Hidden:
        """Zero states for ``batch_size`` sequences: (num_layers, N, H) (a pair for LSTM)."""
        w = self.decoder.weight
        shape = (self.rnn.num_layers, batch_size, self.rnn.hidden_size)
        zeros = autograd.zeros(*shape, dtype=w.dtype, device=w.device)
        if self.cell == "lstm":
            return zeros, autograd.zeros(*shape, dtype=w.dtype, device=w.device)
        return zeros

    def extra_repr(self) -> str:
        return f"cell={self.cell!r}, tie_weights={self.tie_weights}"


def detach_hidden(hidden: Hidden) -> Hidden:
    """The hidden state cut from its graph (truncated BPTT between batches)."""
    if hidden is None:
        return None
    if isinstance(hidden, (tuple, list)):
        return tuple(detach_hidden(h) for h in hidden)
    return hidden.detach()


def _token_loss(model: LanguageModel, x: autograd.Tensor, y: autograd.Tensor,
                hidden: Hidden) -> tuple[autograd.Tensor, Hidden]:
    """Mean cross-entropy per token of one (L, N) batch, and the new hidden state."""
    logits, hidden = model(x, hidden)
    steps, batch, vocab = logits.shape
    return token_nll(logits.reshape(steps * batch, vocab), y.reshape(steps * batch)), hidden


def token_nll(logits: autograd.Tensor, targets: autograd.Tensor) -> autograd.Tensor:
    """Mean cross-entropy of (M, V) logits against (M,) int64 targets.

    The same value as ``nn.functional.cross_entropy``, but the target
    log-probabilities are gathered (``take``) instead of picked with a
    one-hot (M, V) product, which for a 10,000-word vocabulary costs several
    passes over M x V floats.
    """
    rows, vocab = logits.shape
    ids = targets.numpy().reshape(-1)
    if ids.shape != (rows,):
        raise ValueError(f"token_nll: expected {rows} targets, got {ids.shape[0]}")
    bad = ids[(ids < 0) | (ids >= vocab)]
    if len(bad):
        raise IndexError(f"token_nll: target id {int(bad[0])} is outside the vocabulary of "
                         f"size {vocab}")
    flat = ids + np.arange(rows, dtype=np.int64) * vocab
    return -logits.log_softmax(1).reshape(rows * vocab).take(flat).mean()


def train_lm_epoch(model: LanguageModel, batches: Iterable[Any], optimizer: optim.Optimizer,
                   batch_size: int, clip: float | None = None, sum_steps: bool = True,
                   progress: Any = None, totals: dict[str, Any] | None = None,
                   after_batch: Callable[[dict[str, Any]], None] | None = None,
                   precision: Precision | None = None) -> dict[str, float]:
    """One epoch of truncated BPTT: the hidden state flows on but is detached per batch.

    Args:
        model: the language model (trained in place).
        batches: (x, y) int64 (L, N) pairs in stream order (:class:`BPTTBatches`).
        optimizer: steps once per batch.
        batch_size: N, for the initial zero state.
        clip: max global gradient norm (``clip_grad_norm_``), or None.
        sum_steps: differentiate the loss summed over the L steps and averaged
            over the batch (Zaremba et al.'s objective, which their learning
            rate 1 and clipping at 5 assume) instead of the per-token mean.
        progress: a tqdm bar to advance and annotate, or None.
        totals: the running state of a partly trained epoch, as ``after_batch``
            saw it (``batch``, ``loss``, ``tokens``, ``hidden``): its first
            ``batch`` batches are skipped and training goes on from its hidden
            state and sums (how a resumed run continues mid-epoch).
        after_batch: called with the running state after every step.
        precision: the steps' ``--precision`` (default float32).

    Returns:
        ``{"loss": mean loss per token, "ppl": exp(loss)}``.
    """
    precision = precision or Precision("fp32", None)
    model.train()
    run: dict[str, Any] = dict(totals) if totals else {"batch": 0, "loss": 0.0, "tokens": 0,
                                                       "hidden": None}
    hidden = model.init_hidden(batch_size) if run["hidden"] is None else run["hidden"]
    skip = run["batch"]
    for i, (x, y) in enumerate(batches):
        if i < skip:
            continue
        hidden = detach_hidden(hidden)
        optimizer.zero_grad()
        with precision.autocast():
            loss, hidden = _token_loss(model, x, y, hidden)
        precision.backward(loss * x.shape[0] if sum_steps else loss)
        if clip is not None:
            precision.unscale(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        precision.step(optimizer)
        n = x.shape[0] * x.shape[1]
        run.update(batch=run["batch"] + 1, loss=run["loss"] + loss.item() * n,
                   tokens=run["tokens"] + n, hidden=detach_hidden(hidden))
        if progress is not None:
            progress.update(1)
            progress.set_postfix(ppl=f"{math.exp(run['loss'] / run['tokens']):.1f}")
        if after_batch is not None:
            after_batch(run)
    mean = run["loss"] / max(run["tokens"], 1)
    return {"loss": mean, "ppl": math.exp(mean)}


def evaluate_lm(model: LanguageModel, batches: Iterable[Any], batch_size: int,
                precision: Precision | None = None) -> dict[str, float]:
    """Mean loss per token and perplexity over a whole stream, without a graph (under
    ``precision``'s autocast, as the training steps)."""
    model.eval()
    hidden = model.init_hidden(batch_size)
    total, tokens = 0.0, 0
    with autograd.no_grad(), (precision or Precision("fp32", None)).autocast():
        for x, y in batches:
            loss, hidden = _token_loss(model, x, y, hidden)
            n = x.shape[0] * x.shape[1]
            total += loss.item() * n
            tokens += n
    return {"loss": total / max(tokens, 1), "ppl": math.exp(total / max(tokens, 1))}
