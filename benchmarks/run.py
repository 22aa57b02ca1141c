"""Run every benchmark side by side in one process; write a table and JSON.

``python benchmarks/run.py [--repeats N] [--only NAME ...]`` imports each
``bench_*.py`` module here that exposes ``run(repeats)``, collects its rows and
writes ``benchmarks/results/latest.md`` and ``latest.json`` with the machine,
date and versions. Ratio > 1 always means Lamina is better than the baseline.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
MODULES = ("bench_ndarray", "bench_cpu", "bench_autograd", "bench_cnn", "bench_gpt",
           "bench_lstm")


def machine() -> dict[str, object]:
    import numpy
    info: dict[str, object] = {
        "date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "numpy": numpy.__version__, "machine": platform.machine(), "cores": os.cpu_count(),
        "cpu": _cpu_name(),
        # A load above the core count means other work shared the machine.
        "load_avg_1m": round(os.getloadavg()[0], 1)}
    try:
        import lamina_backend_cpu
        from bench_cpu import cpu_model
        # Which kernels ran: figures from different CPUs or paths never compare.
        info["cpu"] = cpu_model()
        info["lamina_isa"] = lamina_backend_cpu.isa()
        info["lamina_cpu_isa"] = lamina_backend_cpu.cpu_isa()
        info["lamina_gemm_kernel"] = lamina_backend_cpu.backend.gemm_kernel_name()
    except ImportError:
        pass
    try:
        from lamina.ndarray import DeviceError, get_device
        info["lamina_threads"] = get_device("cpu").num_threads()
    except (ImportError, DeviceError):
        pass
    try:
        import torch
        info["torch"] = torch.__version__
    except ImportError:
        pass
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def table(rows: list[dict[str, object]]) -> str:
    lines = ["| benchmark | size | lamina | baseline | lamina value | baseline value | unit "
             "| ratio (>1 = Lamina better) |", "|---|---|---|---|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['size']} | {r['lamina']} | {r['baseline']} | "
                     f"{r['lamina_value']:.3g} | {r['baseline_value']:.3g} | {r['unit']} | "
                     f"{r['ratio']:.2f} |")
    return "\n".join(lines)


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
