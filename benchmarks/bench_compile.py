"""``lamina.autograd.compile`` against eager Lamina and eager PyTorch, on the cpu backend.

Rows (1 thread for both libraries; ratio > 1 means the compiled Lamina call is faster):

- a 20-op elementwise chain on 1-element tensors (``(x * y + 1).tanh() - y``
  five times), no grad: compiled vs PyTorch eager, and vs Lamina eager;
- a 6-op elementwise chain on 4M float32 (``((x * 2 + 1).exp() - x).abs().sqrt()``),
  no grad: compiled (the chain fused into one ``ewise_program`` pass) vs Lamina
  eager (six passes over memory);
- the char-GPT training step (4 layers x 128, context 64, batch 32, AdamW,
  gradient clipping), with the loss function compiled (forward and backward
  replayed) vs PyTorch eager and vs Lamina eager, from the same weights;
- greedy decoding of the baby GPT (4 layers x 128, context 64, prompt 32 + 32
  new tokens, batch 1): ``generate(..., compile=True)`` (a static key/value
  cache, every step after the first replayed) vs PyTorch eager with its key/value
  cache and vs Lamina eager with its own, in tokens per second.

Each row is the median of ``--rounds`` interleaved rounds, with the range of the
per-round ratios; in a round of the training step and of decoding the candidates
take turns call by call (4 and 8 calls each, their medians).
``python benchmarks/bench_compile.py [--rounds 5] [--out PATH]`` writes PATH.md and
PATH.json (default ``results/compile``).
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


def _rounds(candidates: dict[str, Callable[[], object]], rounds: int, min_time: float
            ) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            samples[name].append(seconds_per_call(fn, min_time))
    return samples


def _turns(candidates: dict[str, Callable[[], object]], rounds: int, calls: int
           ) -> dict[str, list[float]]:
    """Per round, each candidate's median of ``calls`` calls, the candidates taking
    turns call by call: a slow spell of the machine (these VMs' speed moves by a
    quarter within seconds) then reaches them all alike, where a second of one
    candidate and then a second of the next let it favour one."""
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for fn in candidates.values():
        fn()  # warm
    for _ in range(rounds):
        times: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(calls):
            for name, fn in candidates.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        for name in candidates:
            samples[name].append(statistics.median(times[name]))
    return samples


def _compare(op: str, size: str, samples: dict[str, list[float]], ours: str, theirs: str,
             unit_scale: float, unit: str) -> dict[str, object]:
    mine, base = samples[ours], samples[theirs]
    ratios = [b / m for m, b in zip(mine, base)]
    out = row(op, size, ours, theirs, statistics.median(mine) * unit_scale,
              statistics.median(base) * unit_scale, unit, False)
    out["ratio"] = statistics.median(ratios)
    out["ratio_range"] = f"{min(ratios):.2f}-{max(ratios):.2f}"
    return out


def _chain(x: Any, y: Any) -> Any:
    for _ in range(5):
        x = (x * y + 1.0).tanh() - y
    return x


def _wide(x: Any) -> Any:
    return ((x * 2.0 + 1.0).exp() - x).abs().sqrt()


def small_chain(rounds: int) -> list[dict[str, object]]:
    import torch
    from lamina import autograd as ag

    x, y = ag.tensor([0.5], device="cpu"), ag.tensor([0.25], device="cpu")
    tx, ty = torch.tensor([0.5]), torch.tensor([0.25])
    compiled = ag.compile(_chain)
    with ag.no_grad(), torch.no_grad():
        assert abs(compiled(x, y).item() - _chain(x, y).item()) < 1e-6
        assert abs(compiled(x, y).item() - _chain(tx, ty).item()) < 1e-5
        samples = _rounds({"lamina compiled": lambda: compiled(x, y),
                           "lamina eager": lambda: _chain(x, y),
                           "pytorch eager": lambda: _chain(tx, ty)}, rounds, 0.2)
    assert compiled.stats["eager"] == 0
    return [_compare("20-op elementwise chain, no grad", "1 element", samples,
                     "lamina compiled", name, 1e6, "us")
            for name in ("pytorch eager", "lamina eager")]


def wide_chain(rounds: int) -> list[dict[str, object]]:
    from lamina import autograd as ag

    x = ag.tensor(np.random.default_rng(0).random(1 << 22, dtype=np.float32), device="cpu")
    compiled = ag.compile(_wide)
    with ag.no_grad():
        np.testing.assert_array_equal(compiled(x).numpy(), _wide(x).numpy())
        samples = _rounds({"lamina compiled": lambda: compiled(x),
                           "lamina eager": lambda: _wide(x)}, rounds, 0.5)
    return [_compare("6-op elementwise chain, no grad", "4M float32", samples,
                     "lamina compiled", "lamina eager", 1e3, "ms")]


def gpt_step(rounds: int, batch: int = 32) -> list[dict[str, object]]:
    import torch
    from bench_gpt import _models
    from lamina import autograd as ag
    from lamina import nn, optim

    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 65, (batch, 64)), rng.integers(0, 65, (batch, 64))
    xl, yl = ag.tensor(x, device="cpu"), ag.tensor(y, device="cpu")
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    steps: dict[str, Callable[[], object]] = {}
    losses = {}
    for name in ("lamina compiled", "lamina eager"):
        _, ours, theirs = _models(64)
        ours.to("cpu")
        opt = optim.AdamW(ours.parameter_groups(0.1), lr=1e-4)

        def loss_of(a: Any, b: Any, model: Any = ours) -> Any:
            return model(a, b)[1]

        fn = ag.compile(loss_of) if name == "lamina compiled" else loss_of

        def step(fn: Any = fn, model: Any = ours, opt: Any = opt) -> Any:
            opt.zero_grad()
            loss = fn(xl, yl)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        steps[name] = step
        losses[name] = step().item()
    topt = torch.optim.AdamW(theirs.param_groups(0.1), lr=1e-4)

    def torch_step() -> Any:
        topt.zero_grad()
        loss = theirs(xt, yt)[1]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
        topt.step()
        return loss

    steps["pytorch eager"] = torch_step
    losses["pytorch eager"] = torch_step().item()
    assert losses["lamina compiled"] == losses["lamina eager"]
    assert abs(losses["pytorch eager"] - losses["lamina eager"]) < 1e-3 * losses["lamina eager"]
    samples = _turns(steps, rounds, 4)
    return [_compare("char-GPT train step (AdamW, clip)", f"4x128, ctx 64, batch {batch}",
                     samples, "lamina compiled", name, 1e3, "ms")
            for name in ("pytorch eager", "lamina eager")]


def gpt_decode(rounds: int) -> list[dict[str, object]]:
    from bench_gpt import _models, _torch_generate
    from lamina.models import generate

    _, ours, theirs = _models(64)
    ours.to("cpu")
    prompt, new = np.random.default_rng(0).integers(0, 65, (1, 32)), 32
    decoders: dict[str, Callable[[], object]] = {
        "lamina compiled": lambda: generate(ours, prompt, new, temperature=0, compile=True),
        "lamina eager": lambda: generate(ours, prompt, new, temperature=0),
        "pytorch eager": lambda: _torch_generate(theirs, prompt, new, use_cache=True),
    }
    tokens = {name: fn() for name, fn in decoders.items() if name != "pytorch eager"}
    assert (tokens["lamina compiled"] == tokens["lamina eager"]).all()
    samples = _turns(decoders, rounds, 8)
    per_token = {name: [t / new for t in times] for name, times in samples.items()}
    out = []
    for name in ("pytorch eager", "lamina eager"):  # tokens/s: higher is better
        r = _compare("GPT greedy decode, kv-cache", "4x128, ctx 64, 32 + 32 new, batch 1",
                     per_token, "lamina compiled", name, 1.0, "s/token")
        r.update(unit="tokens/s", lamina_value=1 / r["lamina_value"],
                 baseline_value=1 / r["baseline_value"])
        out.append(r)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "compile"))
    args = parser.parse_args()
    import torch
    from lamina import ndarray as nd

    torch.set_num_threads(1)
    nd.get_device("cpu").set_num_threads(1)
    rows: list[dict[str, object]] = []
    for bench in (small_chain, wide_chain, gpt_step, gpt_decode):
        rows += bench(args.rounds)
        time.sleep(0.5)
    info = {**machine(), "threads": 1, "rounds": args.rounds}
    text = ("# lamina.autograd.compile\n\n" + ", ".join(f"{k} {v}" for k, v in info.items())
            + "\n\n" + table(rows) + "\n\nPer-round ratio ranges: "
            + "; ".join(f"{r['op']} vs {r['baseline']} {r['ratio_range']}" for r in rows) + "\n")
    print(text)
    Path(args.out + ".md").write_text(text)
    Path(args.out + ".json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
