"""GPT benchmarks: a training step against PyTorch, and cached vs uncached generation.

Rows (``ratio`` > 1 means Lamina / the cached path is better):

- ``gpt train step``: one forward+backward+clip+AdamW step of the baby GPT
  (4 layers, 4 heads, width 128, context 64, batch 12), Lamina vs its PyTorch
  twin from the same weights on the same batch, interleaved.
- ``gpt generate uncached``: tokens/second re-running the whole context per
  token, Lamina vs PyTorch (same algorithm; the twin has no cache).
- ``gpt generate cached``: Lamina with its key/value cache vs Lamina without,
  for the baby model (context 64) and the same model with context 256.
  Goal (issue 9): at least 5x.

Run: ``python benchmarks/bench_gpt.py``; ``nox -s bench`` calls ``run()``.
Pin threads with LAMINA_NUM_THREADS / OMP_NUM_THREADS on a shared machine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _timing import interleaved, row

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "packages" / "nn" / "tests"))


def _models(block_size: int) -> tuple[Any, Any, Any]:
    import torch
    from _torch_gpt import TorchGPT
    from lamina import autograd
    from lamina.models import GPT, GPTConfig

    autograd.manual_seed(0)
    cfg = GPTConfig(65, block_size, 4, 4, 128, 0.0)
    ours = GPT(cfg)
    theirs = TorchGPT(cfg)
    theirs.load_lamina_state({k: v.numpy() for k, v in ours.state_dict().items()})
    torch.manual_seed(0)
    return cfg, ours, theirs


def _train_cases() -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch
    from lamina import autograd, nn, optim

    _, ours, theirs = _models(64)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 65, (12, 64)), rng.integers(0, 65, (12, 64))
    xl, yl = autograd.tensor(x), autograd.tensor(y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = optim.AdamW(ours.parameter_groups(0.1), lr=1e-4)
    topt = torch.optim.AdamW(theirs.param_groups(0.1), lr=1e-4)

    def lamina_step() -> None:
        opt.zero_grad()
        ours(xl, yl)[1].backward()
        nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
        opt.step()

    def torch_step() -> None:
        topt.zero_grad()
        theirs(xt, yt)[1].backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
        topt.step()

    return lamina_step, torch_step


def _torch_generate(model: Any, prompt: np.ndarray, new: int) -> None:
    import torch

    ids = torch.from_numpy(prompt)
    with torch.no_grad():
        for _ in range(new):
            logits = model(ids[:, -model.cfg.block_size:])
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)


def _tokens_per_second(fn: Callable[[], Any], new: int, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return new / best


def run(repeats: int = 3) -> list[dict[str, Any]]:
    """Rows in ``benchmarks/_timing.row``'s format."""
    from lamina.models import generate

    rows = []
    ours, theirs = _train_cases()
    t = interleaved({"lamina": ours, "pytorch": theirs}, repeats, min_time=1.0)
    rows.append(row("gpt train step", "baby B12 T64", "lamina cpu", "pytorch cpu",
                    1000 * t["lamina"], 1000 * t["pytorch"], "ms", False))
    for block in (64, 256):
        _, model, tmodel = _models(block)
        prompt = np.random.default_rng(0).integers(0, 65, (1, block // 2))
        new = block // 2  # the uncached path runs at T = block/2 .. block-1
        cached = _tokens_per_second(
            lambda: generate(model, prompt, new, temperature=0, use_cache=True), new, repeats)
        uncached = _tokens_per_second(
            lambda: generate(model, prompt, new, temperature=0, use_cache=False), new, repeats)
        size = f"context {block}, {new} new"
        rows.append(row("gpt generate cached", size, "lamina kv-cache", "lamina uncached",
                        cached, uncached, "tokens/s", True))
        if block == 64:
            torch_uncached = _tokens_per_second(lambda: _torch_generate(tmodel, prompt, new),
                                                new, repeats)
            rows.append(row("gpt generate uncached", size, "lamina cpu", "pytorch cpu",
                            uncached, torch_uncached, "tokens/s", True))
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['op']:<24} {r['size']:<22} {r['lamina']:<16} {r['lamina_value']:9.2f} "
              f"{r['baseline']:<16} {r['baseline_value']:9.2f} {r['unit']:<9} "
              f"ratio {r['ratio']:.2f}")
