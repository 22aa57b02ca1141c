"""Run every benchmark side by side in one process; write a table and JSON.

``python benchmarks/run.py [--repeats N] [--only NAME ...]`` imports each
``bench_*.py`` module here that exposes ``run(repeats)``, collects its rows and
writes ``benchmarks/results/latest.md`` and ``latest.json`` with the machine,
date and versions. Ratio > 1 always means Lamina is better than the baseline.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _machine import machine, table  # noqa: E402

MODULES = ("bench_ndarray", "bench_cpu", "bench_autograd", "bench_cnn", "bench_gpt",
           "bench_lstm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", default=str(HERE / "results" / "latest"))
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    for name in MODULES:
        if args.only and name not in args.only:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            print(f"skipping {name}: {exc}")
            continue
        print(f"running {name} ...", flush=True)
        for r in module.run(args.repeats):
            r["suite"] = name
            rows.append(r)
            print(f"  {r['op']:<28} {r['size']:<10} {r['lamina']:<20} ratio {r['ratio']:.2f}",
                  flush=True)
    info = machine()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    header = ", ".join(f"{k} {v}" for k, v in info.items())
    out.with_suffix(".md").write_text(f"# Benchmarks\n\n{header}\n\n{table(rows)}\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
