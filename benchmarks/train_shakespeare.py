"""Baby GPT on Tiny Shakespeare, Lamina and PyTorch CPU side by side: curves and step times.

Both frameworks train the same model (``lamina.models.GPT`` and its PyTorch
twin in ``packages/nn/tests/_torch_gpt.py``) from the same initial weights on
the same batches, with AdamW (weight decay on matrices only), warmup + cosine
decay and gradient clipping. They run interleaved in one process, in blocks
of ``--block-iters`` iterations, so that load on a shared machine hits both
alike, each pinned to ``--threads`` threads. Validation loss is estimated on
the same fixed validation batches for both. Results are rewritten after
every evaluation, so a partial run leaves partial results.

    python benchmarks/train_shakespeare.py --data ../shared/data/shakespeare \\
        --out benchmarks/results/train_shakespeare

Goal (issue 9): Lamina's validation loss <= 1.90 after 2,000 iterations, and a
training step at most 2x PyTorch's time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "packages" / "nn" / "tests"))  # the PyTorch twin

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _machine import machine_line  # noqa: E402
from _torch_gpt import TorchGPT  # noqa: E402
from lamina import autograd, nn, optim  # noqa: E402
from lamina.data import Shakespeare  # noqa: E402
from lamina.models import GPT, GPTConfig, generate  # noqa: E402
from lamina.models.recipes.shakespeare import warmup_cosine  # noqa: E402


class Runner:
    """One framework's model, optimizer and schedule, stepping on given batches."""

    def __init__(self, name: str, args: argparse.Namespace, cfg: GPTConfig,
                 init: dict[str, np.ndarray]) -> None:
        self.name, self.args, self.times, self.losses = name, args, [], []
        schedule = warmup_cosine(args.warmup_iters, args.iters, 0.1)
        if name == "lamina":
            self.model = GPT(cfg)
            self.model.load_state_dict(init)
            self.opt = optim.AdamW(self.model.parameter_groups(0.1), lr=args.lr,
                                   betas=(0.9, 0.99))
            self.sched = optim.lr_scheduler.LambdaLR(self.opt, schedule)
        else:
            self.model = TorchGPT(cfg)
            self.model.load_lamina_state(init)
            self.opt = torch.optim.AdamW(self.model.param_groups(0.1), lr=args.lr,
                                         betas=(0.9, 0.99))
            self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, schedule)

    def _tensors(self, x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        if self.name == "lamina":
            return autograd.tensor(x), autograd.tensor(y)
        return torch.from_numpy(x), torch.from_numpy(y)

    def step(self, x: np.ndarray, y: np.ndarray) -> None:
        start = time.perf_counter()
        xt, yt = self._tensors(x, y)
        self.opt.zero_grad()
        _, loss = self.model(xt, yt)
        loss.backward()
        if self.name == "lamina":
            nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        else:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.sched.step()
        self.losses.append(loss.item())
        self.times.append(time.perf_counter() - start)

    def val_loss(self, batches: list[tuple[np.ndarray, np.ndarray]]) -> float:
        self.model.eval()
        grad_off = autograd.no_grad() if self.name == "lamina" else torch.no_grad()
        with grad_off:
            total = sum(self.model(*self._tensors(x, y))[1].item() for x, y in batches)
        self.model.train()
        return total / len(batches)


def write_results(out: Path, config: dict[str, Any], runners: list[Runner],
                  curves: dict[str, list[dict[str, float]]]) -> None:
    summary = {}
    for r in runners:
        t = r.times[5:] or r.times  # the first steps include warm-up
        summary[r.name] = {"iters": len(r.times), "final_val_loss": curves[r.name][-1]["val_loss"],
                           "median_step_ms": 1000 * statistics.median(t),
                           "min_step_ms": 1000 * min(t)}
    ratio = summary["lamina"]["median_step_ms"] / summary["pytorch"]["median_step_ms"]
    payload = {"config": config, "summary": summary, "lamina_over_pytorch_step_time": ratio,
               "curves": curves}
    out.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = [f"# Baby GPT on Tiny Shakespeare: Lamina vs PyTorch ({config['iters_done']} of "
             f"{config['iters']} iterations)", "",
             f"Machine: {config['machine']}. Lamina device `cpu` and PyTorch "
             f"{config['torch_version']} CPU, each pinned to {config['threads']} thread(s), run "
             f"interleaved in one process in blocks of {config['block_iters']} iterations "
             f"(same initial weights, same batches).", "",
             f"Model: {config['model']}. Training: {config['training']}.", "",
             "| iter | Lamina train loss | Lamina val loss | PyTorch train loss | "
             "PyTorch val loss |", "|---:|---:|---:|---:|---:|"]
    for a, b in zip(curves["lamina"], curves["pytorch"]):
        lines.append(f"| {a['iter']} | {a['train_loss']:.4f} | {a['val_loss']:.4f} | "
                     f"{b['train_loss']:.4f} | {b['val_loss']:.4f} |")
    lines.append("")
    for name, s in summary.items():
        lines.append(f"- {name}: final validation loss {s['final_val_loss']:.4f}; step time "
                     f"median {s['median_step_ms']:.1f} ms, fastest {s['min_step_ms']:.1f} ms")
    lines.append(f"- Lamina / PyTorch median step time: {ratio:.2f} (goal: at most 2)")
    lines.append(f"- Validation loss: mean over the same {config['val_batches']} fixed batches "
                 f"of {config['batch_size']} windows from the last 10% of the text.")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    _plot(out, curves)


def _plot(out: Path, curves: dict[str, list[dict[str, float]]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, curve in curves.items():
        its = [c["iter"] for c in curve]
        ax.plot(its, [c["val_loss"] for c in curve], marker="o", label=f"{name} val")
        ax.plot(its, [c["train_loss"] for c in curve], linestyle="--", label=f"{name} train")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"))
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with input.txt")
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--eval-interval", type=int, default=200)
    parser.add_argument("--val-batches", type=int, default=50)
    parser.add_argument("--block-iters", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=12)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup-iters", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", default=None, help="write a 500-character sample here")
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args()
    if os.environ.get("LAMINA_NUM_THREADS") != str(args.threads):
        raise SystemExit(f"set LAMINA_NUM_THREADS={args.threads} before starting (the cpu "
                         f"backend reads it at import)")
    torch.set_num_threads(args.threads)
    autograd.manual_seed(args.seed)
    train, val = Shakespeare(args.data, "train", 64), Shakespeare(args.data, "val", 64)
    cfg = GPTConfig(train.vocab_size, 64, 4, 4, 128, 0.0)
    init = {k: v.numpy() for k, v in GPT(cfg).state_dict().items()}
    runners = [Runner("lamina", args, cfg, init), Runner("pytorch", args, cfg, init)]
    rng, val_rng = np.random.default_rng(args.seed), np.random.default_rng(args.seed + 1)
    val_batches = [val.get_batch(args.batch_size, val_rng) for _ in range(args.val_batches)]
    config = {"model": "GPT 4 layers, 4 heads, width 128, context 64, no dropout "
                       f"({runners[0].model.num_parameters():,} parameters)",
              "training": f"batch {args.batch_size}, AdamW lr {args.lr} betas (0.9, 0.99) "
                          f"weight decay 0.1 on matrices, {args.warmup_iters} warmup "
                          f"iterations then cosine to lr/10, clip 1.0",
              "iters": args.iters, "iters_done": 0, "batch_size": args.batch_size,
              "val_batches": args.val_batches, "block_iters": args.block_iters,
              "threads": args.threads, "torch_version": torch.__version__,
              "machine": machine_line("shared")}
    curves: dict[str, list[dict[str, float]]] = {"lamina": [], "pytorch": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = 0
    while done < args.iters:
        n = min(args.block_iters, args.iters - done)
        batches = [train.get_batch(args.batch_size, rng) for _ in range(n)]
        for r in runners:
            for x, y in batches:
                r.step(x, y)
        done += n
        if done % args.eval_interval == 0 or done == args.iters:
            for r in runners:
                recent = r.losses[-args.eval_interval:]
                curves[r.name].append({"iter": done, "train_loss": float(np.mean(recent)),
                                       "val_loss": r.val_loss(val_batches),
                                       "median_step_ms": 1000 * statistics.median(r.times)})
            config["iters_done"] = done
            write_results(out, config, runners, curves)
            print(f"iter {done}: " + ", ".join(
                f"{n_}: val {c[-1]['val_loss']:.4f} ({c[-1]['median_step_ms']:.0f} ms/step)"
                for n_, c in curves.items()), flush=True)
    if args.sample:
        ids = generate(runners[0].model, train.tokenizer.encode("\n")[None], 500,
                       temperature=0.8, seed=args.seed)
        Path(args.sample).write_text(
            f"# 500 characters sampled from the Lamina baby GPT after {args.iters} iterations "
            f"(prompt: a newline; temperature 0.8; seed {args.seed}; KV-cached generation)\n\n"
            + train.tokenizer.decode(ids[0]) + "\n")
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
