"""lamina-train at each --precision: final accuracy or loss, and time per epoch/iteration.

Runs one recipe with ``--precision fp32``, ``bf16`` and ``fp16`` (same seed,
same options otherwise) and records what each reached and how long it took,
with the machine. Also times one char-GPT training step under each precision
against PyTorch's eager step (``torch.autocast`` for bf16/fp16) in one process.

    python benchmarks/train_precision.py mnist --data ../shared/data/mnist --epochs 10 \\
        --out benchmarks/results/precision_mnist
    python benchmarks/train_precision.py shakespeare --out benchmarks/results/precision_gpt

Issue 34's targets: MNIST with fp16 and GradScaler within 0.3 points of float32;
Shakespeare with bf16 within 0.03 validation loss of float32; the char-GPT step
under bf16 autocast at least 1.3x Lamina's float32 step and 1.0x PyTorch's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _machine import machine
from lamina.models._cli import main as lamina_train

PRECISIONS = ("fp32", "bf16", "fp16")


def run_recipe(recipe: str, extra: list[str], precision: str, out: Path) -> dict[str, Any]:
    log = Path(tempfile.gettempdir()) / f"{out.name}-{precision}-log.json"
    start = time.perf_counter()
    code = lamina_train([recipe, *extra, "--precision", precision, "--no-progress",
                         "--checkpoint-every", "0", "--log", str(log)])
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"lamina-train {recipe} --precision {precision} exited {code}")
    logged = json.loads(log.read_text())
    history = logged["history"] if isinstance(logged, dict) else logged
    last = history[-1]
    row: dict[str, Any] = {"precision": precision, "wall_s": round(wall, 1)}
    for key in ("test_acc", "test_loss", "val_loss", "train_loss"):
        if key in last:
            row[key] = round(float(last[key]), 4)
    times = [r["epoch_time"] for r in history if "epoch_time" in r]
    if times:
        row["median_epoch_s"] = round(statistics.median(times), 2)
    return row


def gpt_steps(rounds: int = 7, steps: int = 5) -> list[dict[str, Any]]:
    """Milliseconds per char-GPT training step (4x128, ctx 64, batch 32, AdamW, clip 1),
    Lamina and its PyTorch twin (``bench_gpt``) at each precision, interleaved in one
    process at 1 thread; PyTorch under ``torch.autocast`` for bf16 and fp16."""
    import torch
    from bench_gpt import _models
    from lamina import autograd, nn, optim
    from lamina.amp import GradScaler, autocast

    torch.set_num_threads(1)
    autograd.tensor(0.0).device.set_num_threads(1)
    _, ours, theirs = _models(64)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 65, (32, 64)), rng.integers(0, 65, (32, 64))
    xl, yl = autograd.tensor(x), autograd.tensor(y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = optim.AdamW(ours.parameter_groups(0.1), lr=1e-4)
    topt = torch.optim.AdamW(theirs.param_groups(0.1), lr=1e-4)
    low = {"bf16": "bfloat16", "fp16": "float16"}

    def lamina_step(precision: str, scaler: GradScaler) -> None:
        opt.zero_grad()
        with autocast("cpu", dtype=low.get(precision, "bfloat16"), enabled=precision in low):
            loss = ours(xl, yl)[1]
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()

    def torch_step(precision: str, scaler: Any) -> None:
        topt.zero_grad()
        with torch.autocast("cpu", dtype=getattr(torch, low.get(precision, "bfloat16")),
                            enabled=precision in low):
            loss = theirs(xt, yt)[1]
        scaler.scale(loss).backward()
        scaler.unscale_(topt)
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
        scaler.step(topt)
        scaler.update()

    # Every round times each precision of both libraries in turn, so a slow spell of
    # the machine (these are shared VMs) falls on one round of each, not on one
    # precision; ratios are medians of the per-round ratios.
    scalers = {p: (GradScaler(enabled=p == "fp16"),
                   torch.amp.GradScaler("cpu", enabled=p == "fp16")) for p in PRECISIONS}
    for precision in PRECISIONS:
        for _ in range(2):  # warm-up
            lamina_step(precision, scalers[precision][0])
            torch_step(precision, scalers[precision][1])
    ms: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for precision in PRECISIONS:
            for lib, step, state in (("lamina", lamina_step, scalers[precision][0]),
                                     ("pytorch", torch_step, scalers[precision][1])):
                time.sleep(0.5)  # no interleaved threaded calls without a pause
                start = time.perf_counter()
                for _ in range(steps):
                    step(precision, state)
                ms.setdefault((lib, precision), []).append(
                    1e3 * (time.perf_counter() - start) / steps)

    def ratio(num: tuple[str, str], den: tuple[str, str]) -> float:
        return round(statistics.median(a / b for a, b in zip(ms[num], ms[den])), 2)

    return [{"precision": p, "lamina_ms": round(statistics.median(ms["lamina", p]), 1),
             "pytorch_ms": round(statistics.median(ms["pytorch", p]), 1),
             "speed_vs_lamina_fp32": ratio(("lamina", "fp32"), ("lamina", p)),
             "speed_vs_pytorch": ratio(("pytorch", p), ("lamina", p)),
             "rounds": rounds} for p in PRECISIONS]


def table(rows: list[dict[str, Any]]) -> str:
    """Rows of one shape as a markdown table."""
    keys = list(rows[0])
    return "\n".join(["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
                     + ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", choices=("mnist", "shakespeare"))
    parser.add_argument("--out", required=True, help="results path without suffix")
    parser.add_argument("--steps-only", action="store_true", help="only the char-GPT steps")
    args, extra = parser.parse_known_args()
    out = Path(args.out)
    info = machine()
    rows = [] if args.steps_only else [run_recipe(args.recipe, extra, p, out)
                                       for p in PRECISIONS]
    steps = gpt_steps() if args.recipe == "shakespeare" or args.steps_only else []
    out.with_suffix(".json").write_text(json.dumps(
        {"machine": info, "recipe": args.recipe, "options": extra, "runs": rows,
         "gpt_steps": steps}, indent=1) + "\n")
    title = ("char-GPT training step at each precision" if args.steps_only
             else f"lamina-train {args.recipe} at each --precision")
    text = [f"# {title}", "", f"Machine: {info}", ""]
    if not args.steps_only:
        text += [f"Options: `{' '.join(extra) or '(recipe defaults)'}`", ""]
    if rows:
        text += [table(rows), ""]
    if steps:
        text += ["char-GPT training step (4x128, ctx 64, batch 32, AdamW, clip 1), 1 thread, "
                 f"median of {steps[0]['rounds']} rounds of 5 steps (each round runs every "
                 "precision of both libraries in turn; ratios are medians of the per-round "
                 "ratios); PyTorch eager with torch.autocast:", "",
                 table(steps), ""]
    out.with_suffix(".md").write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
