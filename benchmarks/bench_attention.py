"""Causal self-attention of one Transformer layer, forward and backward, on the cpu backend.

The char GPT's layer (batch 32, context 64, 4 heads of 32) as the model runs it:
q, k and v are head views of one (N, T, 3C) projection, and the output goes back
to (N, T, C). Rows, each the median of ``--rounds`` interleaved rounds (ratio > 1:
the fused op is faster):

- Lamina's ``scaled_dot_product_attention`` (the ``attention`` and
  ``attention_backward`` kernels) against the same layer composed from the ops
  (``nn.functional.attention`` with a causal mask: two batched matmuls, a scale,
  a mask add and a softmax), and against PyTorch's
  ``scaled_dot_product_attention(is_causal=True)`` on the same views;
- the same three at the context of nanoGPT's Shakespeare-char model (256, 6
  heads of 64, batch 8).

``python benchmarks/bench_attention.py [--rounds 7] [--threads 1] [--out PATH]``
writes PATH.md and PATH.json (default ``results/attention``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, table  # noqa: E402
from _timing import row, seconds_per_call  # noqa: E402


def _layer(n: int, t: int, h: int, d: int) -> dict[str, Callable[[], object]]:
    """fwd+bwd of the layer in each candidate, from the same values."""
    import torch
    from lamina import autograd as ag
    from lamina.nn import functional as F

    c = h * d
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((n, t, 3 * c)), rng.standard_normal((n, t, c))
    xl = ag.tensor(x.astype(np.float32), device="cpu", requires_grad=True)
    gl = ag.tensor(g.astype(np.float32), device="cpu")
    xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    gt = torch.tensor(g, dtype=torch.float32)

    def heads(qkv: Any) -> Any:
        q = qkv.reshape(n, t, 3, h, d).permute(2, 0, 3, 1, 4)
        return q[0], q[1], q[2]

    def fused() -> Any:
        q, k, v = heads(xl)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.permute(0, 2, 1, 3).reshape(n, t, c).backward(gl)
        return y

    def composed() -> Any:
        q, k, v = heads(xl)
        y, _ = F.attention(q, k, v, F.causal_mask(t, t, 0, xl.dtype, xl.device))
        y.permute(0, 2, 1, 3).reshape(n, t, c).backward(gl)
        return y

    def pytorch() -> Any:
        q, k, v = heads(xt)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.permute(0, 2, 1, 3).reshape(n, t, c).backward(gt)
        return y

    ys = [fn() for fn in (fused, composed, pytorch)]
    want = ys[2].detach().numpy()
    for y in ys[:2]:
        assert np.abs(y.detach().numpy() - want).max() < 1e-4
    return {"lamina fused": fused, "lamina composed": composed, "pytorch": pytorch}


def _compare(op: str, size: str, samples: dict[str, list[float]], theirs: str
             ) -> dict[str, object]:
    mine, base = samples["lamina fused"], samples[theirs]
    ratios = [b / m for m, b in zip(mine, base)]
    out = row(op, size, "lamina fused", theirs, statistics.median(mine) * 1e3,
              statistics.median(base) * 1e3, "ms", False)
    out["ratio"] = statistics.median(ratios)
    out["ratio_range"] = f"{min(ratios):.2f}-{max(ratios):.2f}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "attention"))
    args = parser.parse_args()
    import torch
    from lamina import ndarray as nd

    torch.set_num_threads(args.threads)
    nd.get_device("cpu").set_num_threads(args.threads)
    rows: list[dict[str, object]] = []
    for n, t, h, d in ((32, 64, 4, 32), (8, 256, 6, 64)):
        candidates = _layer(n, t, h, d)
        samples: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(args.rounds):
            for name, fn in candidates.items():
                samples[name].append(seconds_per_call(fn, 0.5))
        size = f"N {n}, T {t}, {h} heads of {d}"
        rows += [_compare("causal self-attention fwd+bwd", size, samples, theirs)
                 for theirs in ("lamina composed", "pytorch")]
        time.sleep(0.5)
    info = {**machine(), "threads": args.threads, "rounds": args.rounds}
    text = ("# Causal self-attention, fused and composed\n\n"
            + ", ".join(f"{k} {v}" for k, v in info.items()) + "\n\n" + table(rows)
            + "\n\nPer-round ratio ranges: "
            + "; ".join(f"{r['size']} vs {r['baseline']} {r['ratio_range']}" for r in rows)
            + "\n")
    print(text)
    Path(args.out + ".md").write_text(text)
    Path(args.out + ".json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
