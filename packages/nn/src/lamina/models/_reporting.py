"""Progress lines, logs and plots shared by ``lamina-train`` recipes and benchmarks.

A run's history is a list of flat records (one per epoch, or one per
evaluation for iteration-based recipes). The helpers are generic over the
keys: the x-axis is ``epoch`` (or ``iter``), curves are every ``*_loss`` and
``*_acc`` key.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["device_name", "format_record", "print_line", "progress_bar", "summary_line",
           "write_log", "write_plot"]


def device_name(device: Any) -> str:
    """The name of the device ``device`` resolves to (None: the default one)."""
    from lamina import ndarray as nd

    return nd.get_device(device).name


def progress_bar(total: int, desc: str | None = None, unit: str = "batch",
                 enabled: bool = True, initial: int = 0) -> Any:
    """A tqdm bar on stderr, shown only when ``enabled`` and stderr is a terminal.

    Redirected to a file, a bar would write every refresh into it; there the
    per-epoch lines (:func:`print_line`) are the progress report.
    """
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, initial=initial, leave=True,
                disable=None if enabled else True)


def print_line(line: str) -> None:
    """Print ``line`` to stdout on a line of its own, clearing any bar first."""
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()


def _x_key(record: dict[str, Any]) -> str:
    return "iter" if "iter" in record and "epoch" not in record else "epoch"


def format_record(record: dict[str, Any]) -> str:
    """One progress line: ``epoch 3: train loss 0.1234, test acc 0.9800 (4.2 s)``."""
    x = _x_key(record)
    parts = [f"{k.replace('_', ' ')} {v:.4f}" for k, v in record.items()
             if k.endswith(("_loss", "_acc", "_ppl")) and isinstance(v, (int, float))]
    line = f"{x} {record[x]}: " + ", ".join(parts)
    for key in ("epoch_time", "elapsed"):
        if key in record:
            line += f" ({record[key]:.1f} s)"
            break
    return line


def summary_line(history: list[dict[str, Any]]) -> str:
    """The last line a run prints: final test accuracy, else final validation loss."""
    last = history[-1]
    if "test_acc" in last:
        return f"final test accuracy: {last['test_acc']:.4f}"
    if "test_ppl" in last:
        return f"final test perplexity: {last['test_ppl']:.2f}"
    for key in ("val_loss", "test_loss", "train_loss"):
        if key in last:
            return f"final {key.replace('_', ' ')}: {last[key]:.4f}"
    return f"finished after {len(history)} records"


def write_log(history: list[dict[str, Any]], path: str | Path) -> None:
    """Write the records as CSV (columns: every key, first-seen order), or JSON for .json."""
    path = Path(path)
    if path.suffix == ".json":
        path.write_text(json.dumps(history, indent=2) + "\n")
        return
    fields: list[str] = []
    for record in history:
        fields += [k for k in record if k not in fields]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(history)


def write_plot(history: list[dict[str, Any]], path: str | Path, title: str) -> bool:
    """Plot every ``*_loss`` (and ``*_acc``, if any) key against epoch or iteration.

    Returns False when matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    x_key = _x_key(history[0]) if history else "epoch"
    xs = [r[x_key] for r in history]
    panels = [suffix for suffix in ("_loss", "_acc", "_ppl")
              if any(k.endswith(suffix) for r in history for k in r)] or ["_loss"]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, suffix in zip(axes[0], panels):
        keys = list(dict.fromkeys(k for r in history for k in r if k.endswith(suffix)))
        for key in keys:
            ax.plot(xs, [r.get(key, float("nan")) for r in history],
                    label=key[: -len(suffix)] or key)
        ax.set_xlabel(x_key)
        ax.set_ylabel({"_loss": "loss", "_acc": "accuracy", "_ppl": "perplexity"}[suffix])
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
