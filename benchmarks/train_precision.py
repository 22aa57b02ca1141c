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


def gpt_steps(rounds: int = 3, steps: int = 10) -> list[dict[str, Any]]:
    """Seconds per char-GPT training step (4x128, ctx 64, batch 32, AdamW), Lamina and
    PyTorch at each precision, interleaved in one process at 1 thread."""
    import torch
    from lamina import autograd, optim
    from lamina.amp import GradScaler, autocast
    from lamina.models import GPT, GPTConfig

    torch.set_num_threads(1)
    autograd.tensor(0.0).device.set_num_threads(1)
    cfg = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128, dropout=0.0)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 65, (32, 64))
    y = rng.integers(0, 65, (32, 64))
    model = GPT(cfg)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    tmodel = torch.nn.Sequential(torch.nn.Embedding(65, 128),
                                 *[torch.nn.TransformerEncoderLayer(128, 4, 512, 0.0,
                                                                    batch_first=True,
                                                                    norm_first=True)
                                   for _ in range(4)],
                                 torch.nn.LayerNorm(128), torch.nn.Linear(128, 65))
    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(64)

    def lamina_step(precision: str, scaler: GradScaler) -> None:
        dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(precision, "bfloat16")
        opt.zero_grad()
        with autocast("cpu", dtype=dtype, enabled=precision != "fp32"):
            _, loss = model(autograd.tensor(x), autograd.tensor(y))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    def torch_step(precision: str, scaler: Any) -> None:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.bfloat16)
        topt.zero_grad()
        with torch.autocast("cpu", dtype=dtype, enabled=precision != "fp32"):
            h = tmodel[0](tx)
            for layer in tmodel[1:5]:
                h = layer(h, src_mask=mask, is_causal=True)
            logits = tmodel[6](tmodel[5](h))
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 65).float(),
                                                     ty.reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(topt)
        scaler.update()

    rows = []
    for precision in PRECISIONS:
        ours, theirs = [], []
        scaler = GradScaler(enabled=precision == "fp16")
        tscaler = torch.amp.GradScaler("cpu", enabled=precision == "fp16")
        for _ in range(2):  # warm-up
            lamina_step(precision, scaler)
            torch_step(precision, tscaler)
        for _ in range(rounds):
            time.sleep(0.5)
            start = time.perf_counter()
            for _ in range(steps):
                lamina_step(precision, scaler)
            ours.append((time.perf_counter() - start) / steps)
            time.sleep(0.5)
            start = time.perf_counter()
            for _ in range(steps):
                torch_step(precision, tscaler)
            theirs.append((time.perf_counter() - start) / steps)
        rows.append({"precision": precision, "lamina_ms": round(1e3 * statistics.median(ours), 1),
                     "pytorch_ms": round(1e3 * statistics.median(theirs), 1)})
    base = rows[0]["lamina_ms"]
    for row in rows:
        row["speed_vs_lamina_fp32"] = round(base / row["lamina_ms"], 2)
        row["speed_vs_pytorch"] = round(row["pytorch_ms"] / row["lamina_ms"], 2)
    return rows


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
    steps = gpt_steps() if args.recipe == "shakespeare" else []
    out.with_suffix(".json").write_text(json.dumps(
        {"machine": info, "recipe": args.recipe, "options": extra, "runs": rows,
         "gpt_steps": steps}, indent=1) + "\n")
    text = [f"# lamina-train {args.recipe} at each --precision", "",
            f"Machine: {info}", "", f"Options: `{' '.join(extra) or '(recipe defaults)'}`", ""]
    if rows:
        text += [table(rows), ""]
    if steps:
        text += ["char-GPT training step (4x128, ctx 64, batch 32, AdamW), 1 thread, median "
                 "of 3 interleaved rounds of 10 steps; PyTorch eager with torch.autocast:", "",
                 table(steps), ""]
    out.with_suffix(".md").write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
