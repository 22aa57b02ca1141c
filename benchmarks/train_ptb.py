"""PTB word-level LSTM, Lamina and PyTorch CPU side by side: perplexity curves and epoch times.

Both frameworks train the same model (embedding, 2-layer LSTM, linear
decoder) from the same initial weights on the same truncated-BPTT batches,
with the same objective (loss summed over the BPTT steps, averaged over the
batch), SGD, clipping and learning-rate schedule: the "small" configuration
of Zaremba et al. (2014) by default. Epochs alternate between the two
frameworks inside one process, so a loaded machine slows both alike; both
run on one thread (``LAMINA_NUM_THREADS=1``, ``torch.set_num_threads(1)``).
Results are rewritten after every epoch to ``OUT.json`` and ``OUT.md``.

    python benchmarks/train_ptb.py --data ../shared/data/ptb --out benchmarks/results/train_ptb

On a two-core machine ``--framework lamina`` and ``--framework pytorch`` run
the two halves concurrently, one process per core (half the wall time); each
keeps its own ``OUT.<framework>.json`` and rewrites the combined table from
whichever halves exist.

Goal (issue 8): Lamina's test perplexity <= 120 (the paper reports 114.5).
"""

from __future__ import annotations

import os

os.environ.setdefault("LAMINA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _machine import machine_line  # noqa: E402
from lamina import autograd, optim  # noqa: E402
from lamina.data import PTB, BPTTBatches, batchify  # noqa: E402
from lamina.models import LanguageModel, evaluate_lm, train_lm_epoch  # noqa: E402
from lamina.models.recipes.ptb import EVAL_BATCH, zaremba_lr_factor  # noqa: E402


class TorchLM(torch.nn.Module):
    """The PyTorch twin of LanguageModel (same parameter names)."""

    def __init__(self, vocab: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.encoder = torch.nn.Embedding(vocab, hidden)
        self.rnn = torch.nn.LSTM(hidden, hidden, layers)
        self.decoder = torch.nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor, hidden: Any = None) -> tuple[torch.Tensor, Any]:
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out), hidden


def _torch_loss(model: TorchLM, x: np.ndarray, y: np.ndarray, hidden: Any
                ) -> tuple[torch.Tensor, Any]:
    logits, hidden = model(torch.from_numpy(x), hidden)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             torch.from_numpy(y).reshape(-1))
    return loss, hidden


def torch_train_epoch(model: TorchLM, data: np.ndarray, bptt: int, opt: Any, clip: float
                      ) -> dict[str, float]:
    model.train()
    hidden, total, tokens = None, 0.0, 0
    for start in range(0, len(data) - 1, bptt):
        stop = min(start + bptt, len(data) - 1)
        x, y = data[start:stop], data[start + 1:stop + 1]
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        opt.zero_grad()
        loss, hidden = _torch_loss(model, x, y, hidden)
        (loss * x.shape[0]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        total += loss.item() * x.size
        tokens += x.size
    return {"loss": total / tokens, "ppl": math.exp(total / tokens)}


def torch_evaluate(model: TorchLM, data: np.ndarray, bptt: int) -> dict[str, float]:
    model.eval()
    hidden, total, tokens = None, 0.0, 0
    with torch.no_grad():
        for start in range(0, len(data) - 1, bptt):
            stop = min(start + bptt, len(data) - 1)
            loss, hidden = _torch_loss(model, data[start:stop], data[start + 1:stop + 1], hidden)
            total += loss.item() * (stop - start) * data.shape[1]
            tokens += (stop - start) * data.shape[1]
    return {"loss": total / tokens, "ppl": math.exp(total / tokens)}


def _history(path: Path) -> list:
    """A saved half's epochs (older halves are the bare list of them)."""
    saved = json.loads(path.read_text())
    return saved["epochs"] if isinstance(saved, dict) else saved


def write_results(out: Path, config: dict[str, Any], results: dict[str, list]) -> None:
    """Save this process's histories, then rewrite OUT.json/.md from every saved half."""
    for name, history in results.items():
        # each half names its machine: halves from two machines never compare
        half = {"machine": config["machine"], "epochs": history}
        out.with_suffix(f".{name}.json").write_text(json.dumps(half, indent=2) + "\n")
    if config["framework"] != "both":
        results = {name: _history(out.with_suffix(f".{name}.json"))
                   for name in ("lamina", "pytorch") if out.with_suffix(f".{name}.json").exists()}
    summary = {}
    for name, history in results.items():
        if not history:
            continue
        times = [r["epoch_time"] for r in history]
        summary[name] = {"epochs_done": len(history), "last_valid_ppl": history[-1]["valid_ppl"],
                         "test_ppl": history[-1].get("test_ppl"),
                         "median_epoch_time": statistics.median(times),
                         "min_epoch_time": min(times)}
    payload = {"config": config, "summary": summary, "epochs": results}
    out.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n")
    names = list(results)
    lines = [f"# PTB word-level LSTM language model: {config['recipe']}", "",
             f"Machine: {config['machine']}; Lamina device `{config['device']}` with "
             f"LAMINA_NUM_THREADS={config['lamina_threads']}; PyTorch {config['torch_version']} "
             f"CPU with {config['torch_threads']} thread(s). {config['schedule']} Same initial "
             "weights and batches.", "",
             "| epoch | lr | " + " | ".join(f"{n} train ppl | {n} valid ppl | {n} epoch s"
                                        for n in names) + " |",
             "|---|---:|" + "---:|---:|---:|" * len(names)]
    for i in range(max(len(h) for h in results.values())):
        cells = []
        for n in names:
            r = results[n][i] if i < len(results[n]) else None
            cells.append(f"{r['train_ppl']:.2f} | {r['valid_ppl']:.2f} | {r['epoch_time']:.1f}"
                         if r else " | | ")
        lr = max(results.values(), key=len)[i]["lr"]
        lines.append(f"| {i + 1} | {lr:g} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, s in summary.items():
        test = f"test perplexity {s['test_ppl']:.2f}, " if s["test_ppl"] is not None else ""
        lines.append(f"- {name}: {s['epochs_done']} epochs, {test}last valid perplexity "
                     f"{s['last_valid_ppl']:.2f}, median epoch {s['median_epoch_time']:.1f} s, "
                     f"fastest {s['min_epoch_time']:.1f} s")
    if len(summary) == 2:
        for stat in ("median", "min"):
            ratio = (summary["lamina"][f"{stat}_epoch_time"]
                     / summary["pytorch"][f"{stat}_epoch_time"])
            lines.append(f"- Lamina / PyTorch epoch time ({stat}): {ratio:.2f}")
        lines.append("- Epoch times are training only (no evaluation) on a shared machine.")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with ptb.{train,valid,test}.txt")
    parser.add_argument("--epochs", type=int, default=13)
    parser.add_argument("--hidden", type=int, default=200)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--lr-decay", type=float, default=0.5)
    parser.add_argument("--decay-after", type=int, default=4)
    parser.add_argument("--clip", type=float, default=5.0)
    parser.add_argument("--init-range", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="Lamina device (default device if unset)")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--framework", choices=("both", "lamina", "pytorch"), default="both",
                        help="train both alternately in this process, or one of them only")
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args()
    torch.set_num_threads(args.torch_threads)
    autograd.manual_seed(args.seed)
    corpus = PTB(args.data)
    vocab = len(corpus.vocab)
    model = LanguageModel(vocab, args.hidden, args.hidden, args.layers,
                          init_range=args.init_range, device=args.device)
    twin = TorchLM(vocab, args.hidden, args.layers)
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                          for k, v in model.state_dict().items()})
    train, valid, test = (batchify(corpus.train, args.batch_size),
                          batchify(corpus.valid, EVAL_BATCH), batchify(corpus.test, EVAL_BATCH))
    opt = optim.SGD(model.parameters(), lr=args.lr)
    sched = optim.lr_scheduler.LambdaLR(opt, zaremba_lr_factor(args.lr_decay, args.decay_after))
    topt = torch.optim.SGD(twin.parameters(), lr=args.lr)
    tsched = torch.optim.lr_scheduler.LambdaLR(topt, zaremba_lr_factor(args.lr_decay,
                                                                        args.decay_after))
    config = {"recipe": f"Zaremba et al. small: {args.layers}x{args.hidden} LSTM, BPTT "
                        f"{args.bptt}, batch {args.batch_size}, SGD lr {args.lr} x "
                        f"{args.lr_decay} per epoch after {args.decay_after}, clip {args.clip}, "
                        f"init U(+-{args.init_range}), {args.epochs} epochs, no dropout",
              "epochs": args.epochs, "eval_batch": EVAL_BATCH, "seed": args.seed,
              "device": str(model.decoder.weight.device),
              "lamina_threads": os.environ.get("LAMINA_NUM_THREADS"),
              "torch_version": torch.__version__, "torch_threads": args.torch_threads,
              "framework": args.framework,
              "schedule": "Epochs alternate between the two frameworks in one process."
                          if args.framework == "both" else
                          "The two frameworks trained concurrently, one process each on its own "
                          "core.",
              "machine": machine_line("shared")}
    names = ("lamina", "pytorch") if args.framework == "both" else (args.framework,)
    results: dict[str, list] = {name: [] for name in names}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for epoch in range(1, args.epochs + 1):
        lr = opt.param_groups[0]["lr"]
        if "lamina" in results:
            start = time.perf_counter()
            tr = train_lm_epoch(model, BPTTBatches(train, args.bptt, args.device), opt,
                                args.batch_size, args.clip)
            elapsed = time.perf_counter() - start
            va = evaluate_lm(model, BPTTBatches(valid, args.bptt, args.device), EVAL_BATCH)
            rec = {"epoch": epoch, "lr": lr, "train_ppl": tr["ppl"], "valid_ppl": va["ppl"],
                   "epoch_time": elapsed}
            if epoch == args.epochs:
                rec["test_ppl"] = evaluate_lm(model, BPTTBatches(test, args.bptt, args.device),
                                              EVAL_BATCH)["ppl"]
            results["lamina"].append(rec)
            print(f"lamina  epoch {epoch}: {rec}", flush=True)
            write_results(out, config, results)
        sched.step()
        if "pytorch" in results:
            start = time.perf_counter()
            tr = torch_train_epoch(twin, train, args.bptt, topt, args.clip)
            elapsed = time.perf_counter() - start
            va = torch_evaluate(twin, valid, args.bptt)
            rec = {"epoch": epoch, "lr": lr, "train_ppl": tr["ppl"], "valid_ppl": va["ppl"],
                   "epoch_time": elapsed}
            if epoch == args.epochs:
                rec["test_ppl"] = torch_evaluate(twin, test, args.bptt)["ppl"]
            results["pytorch"].append(rec)
            print(f"pytorch epoch {epoch}: {rec}", flush=True)
            write_results(out, config, results)
        tsched.step()
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
