"""LSTM language-model training step: Lamina vs PyTorch CPU, side by side in one process.

One step of the PTB "small" model (embedding 10,000 x 200, 2-layer LSTM of
200 units, linear decoder to 10,000 words) on a batch of 20 sequences of 35
tokens: forward, loss summed over the steps, backward, gradient clipping at
norm 5 and an SGD update, from the same initial weights on the same tokens.
The two libraries run interleaved so machine noise hits both alike; rows
report medians in milliseconds, ``ratio`` = PyTorch time / Lamina time
(> 1 means Lamina is faster). Goal (issue 8): ratio >= 0.5 on cpu.

Run: ``python benchmarks/bench_lstm.py``; ``nox -s bench`` calls ``run()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import interleaved, row

VOCAB, HIDDEN, LAYERS, BATCH, BPTT = 10_000, 200, 2, 20, 35


def twins(device: str, vocab: int, embed: int, hidden: int, layers: int) -> tuple[Any, Any]:
    """A Lamina ``LanguageModel`` (LSTM, U(-0.1, 0.1) weights) and its PyTorch twin, a
    ``ModuleDict`` of ``encoder``, ``rnn`` and ``decoder`` holding the same weights."""
    import torch
    from lamina.models import LanguageModel

    model = LanguageModel(vocab, embed, hidden, layers, init_range=0.1, device=device)
    twin = torch.nn.ModuleDict({"encoder": torch.nn.Embedding(vocab, embed),
                                "rnn": torch.nn.LSTM(embed, hidden, layers),
                                "decoder": torch.nn.Linear(hidden, vocab)})
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                          for k, v in model.state_dict().items()})
    return model, twin


def _cases(device: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """One training step in each library; each returns its loss, computed before the update."""
    import torch
    from lamina import autograd, nn, optim
    from lamina.models._language_model import token_nll

    model, twin = twins(device, VOCAB, HIDDEN, HIDDEN, LAYERS)
    rng = np.random.default_rng(0)
    x_np, y_np = (rng.integers(0, VOCAB, (BPTT, BATCH)) for _ in range(2))
    x, y = autograd.tensor(x_np, device=device), autograd.tensor(y_np, device=device)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
    opt = optim.SGD(model.parameters(), lr=1e-3)
    topt = torch.optim.SGD(twin.parameters(), lr=1e-3)

    def ours() -> Any:
        opt.zero_grad()
        logits, _ = model(x)
        loss = token_nll(logits.reshape(BPTT * BATCH, VOCAB), y.reshape(BPTT * BATCH))
        (loss * BPTT).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        return loss

    def theirs() -> Any:
        topt.zero_grad()
        out, _ = twin["rnn"](twin["encoder"](tx))
        logits = twin["decoder"](out)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), ty.reshape(-1))
        (loss * BPTT).backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 5.0)
        topt.step()
        return loss

    return ours, theirs


def run(repeats: int = 3) -> list[dict[str, Any]]:
    """One row: the LSTM LM training step on the cpu device (numpy when cpu is absent)."""
    import lamina.ndarray as nd

    names = [b.name for b in nd.list_backends() if b.status == "available"]
    device = "cpu" if "cpu" in names else "numpy"
    ours, theirs = _cases(device)
    t = interleaved({"l": ours, "t": theirs}, repeats, 0.5)
    return [row("LSTM LM train step", f"2x{HIDDEN}, V {VOCAB}, {BATCH}x{BPTT}",
                f"lamina[{device}]", "torch cpu", t["l"] * 1e3, t["t"] * 1e3, "ms", False)]


if __name__ == "__main__":
    for r in run():
        print(f"{r['op']} ({r['size']}): lamina {r['lamina_value']:.1f} ms, torch "
              f"{r['baseline_value']:.1f} ms, lamina/torch {1 / r['ratio']:.2f}x")
