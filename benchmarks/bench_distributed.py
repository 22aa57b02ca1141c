"""Data-parallel throughput: Lamina DDP vs PyTorch DDP (gloo), same processes and threads.

For the MNIST MLP (784-256-256-10, global batch 128) and ResNet9 (dlsys, global
batch 128), samples per second of three layouts on a 2-core machine:
1 process x 1 thread, 1 process x 2 threads, 2 processes x 1 thread (DDP,
each rank B/2 samples). Each configuration is a fresh ``mpiexec`` run of
``distributed_worker.py``; rounds interleave Lamina and PyTorch and every
layout so machine noise hits all alike; medians over rounds are reported.

Also: the share of the all-reduce time hidden behind backward (1 - time
backward was blocked on all-reduces / time a blocking all-reduce of the same
buckets takes), and a correctness run of the DDP test worker with 4 and 8
oversubscribed processes (times mean nothing there).

Run: ``nox -s bench_distributed`` (or ``python benchmarks/bench_distributed.py``
where lamina-nn[distributed], the cpu backend and torch==2.13.0 are installed).
Writes ``benchmarks/results/distributed.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
RESULTS = HERE / "results"
WORKERS = HERE.parent / "packages" / "nn" / "tests" / "mpi_workers"
LAYOUTS = [(1, 1), (1, 2), (2, 1)]  # (processes, threads per process)


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def launch(nproc: int, args: list[str], threads: int, timeout: float = 600
           ) -> subprocess.CompletedProcess[str]:
    from lamina.distributed import mpiexec_command

    env = {**os.environ, "LAMINA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    return subprocess.run(mpiexec_command(nproc, args), capture_output=True, text=True,
                          env=env, timeout=timeout)


def one(framework: str, model: str, procs: int, threads: int, batch: int, steps: int,
        port: int) -> dict[str, float]:
    args = [str(HERE / "distributed_worker.py"), "--framework", framework, "--model", model,
            "--batch", str(batch), "--steps", str(steps), "--threads", str(threads),
            "--port", str(port)]
    result = launch(procs, args, threads)
    if result.returncode != 0:
        raise RuntimeError(f"{framework} {model} {procs}x{threads} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure(model: str, batch: int, steps: int, rounds: int) -> list[dict[str, object]]:
    samples: dict[tuple[str, int, int], list[dict[str, float]]] = {}
    port = 29611
    for _ in range(rounds):
        for procs, threads in LAYOUTS:
            for framework in ("lamina", "torch"):
                port += 1
                r = one(framework, model, procs, threads, batch, steps, port)
                samples.setdefault((framework, procs, threads), []).append(r)
    rows = []
    for (framework, procs, threads), runs in samples.items():
        med = {k: statistics.median(float(r[k]) for r in runs)
               for k in ("step_s", "samples_per_s", "wait_s", "allreduce_s")}
        rows.append({"framework": framework, "model": model, "procs": procs,
                     "threads": threads, "batch": batch, **med})
    return rows


def correctness(nproc: int) -> dict[str, object]:
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        result = launch(nproc, [str(WORKERS / "ddp.py"), folder], 1)
    passed = result.returncode == 0 and result.stdout.count("ddp checks passed") == nproc
    return {"procs": nproc, "passed": passed, "seconds": time.monotonic() - start}


def table(rows: list[dict[str, object]]) -> list[str]:
    lines = ["| model | layout | Lamina samples/s | PyTorch samples/s | Lamina step / PyTorch "
             "step | Lamina speed-up over 1x1 | PyTorch speed-up over 1x1 |",
             "|---|---|---|---|---|---|---|"]
    by = {(r["framework"], r["model"], r["procs"], r["threads"]): r for r in rows}
    for model in sorted({str(r["model"]) for r in rows}):
        base = {f: float(by[(f, model, 1, 1)]["samples_per_s"]) for f in ("lamina", "torch")}
        for procs, threads in LAYOUTS:
            lam, tor = by[("lamina", model, procs, threads)], by[("torch", model, procs, threads)]
            lines.append(
                f"| {model} | {procs} proc x {threads} thr | {lam['samples_per_s']:.0f} | "
                f"{tor['samples_per_s']:.0f} | {float(lam['step_s']) / float(tor['step_s']):.2f}x"
                f" | {float(lam['samples_per_s']) / base['lamina']:.2f}x | "
                f"{float(tor['samples_per_s']) / base['torch']:.2f}x |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--models", nargs="+", default=["mlp", "resnet9"])
    a = p.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()[0]
    rows = [r for m in a.models for r in measure(m, 128, a.steps, a.rounds)]
    checks = [correctness(n) for n in (4, 8)]
    meta = {"date": started.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(),
            "cores": os.cpu_count(), "rounds": a.rounds, "steps": a.steps,
            "python": platform.python_version(), "shared_machine": True,
            "load_average_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "distributed.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "oversubscribed": checks}, indent=1))
    lines = ["# Data-parallel training: Lamina DDP vs PyTorch DDP (gloo)", "",
             f"{meta['date']}, {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}. "
             "The machine was shared with other developers' builds and tests while this ran "
             f"(1-minute load average {load_before:.1f} at the start, "
             f"{meta['load_average_1min'][1]:.1f} at the end, on {meta['cores']} cores): "
             "absolute numbers are noisy, and so are the ratios when the load is far above "
             "the core count. "
             f"Medians over {a.rounds} interleaved rounds of {a.steps} timed steps (after 2 "
             "warm-up steps); global batch 128, synthetic inputs; SGD with momentum. "
             "`python benchmarks/bench_distributed.py` (`nox -s bench_distributed`).", ""]
    lines += table(rows)
    lines += ["", "All-reduce hidden behind backward (Lamina, 2 processes): "
              "1 - (time backward was blocked on all-reduces) / (time of a blocking all-reduce "
              "of the same buckets); 0% when nothing overlaps (one bucket, or waiting for the "
              "slower rank counts as blocked).", "",
              "| model | blocked in backward per step | blocking all-reduce per step | hidden |",
              "|---|---|---|---|"]
    for r in rows:
        if r["framework"] == "lamina" and r["procs"] == 2:
            wait, full = float(r["wait_s"]), float(r["allreduce_s"])
            hidden = max(0.0, 1 - wait / full) if full else 0.0
            lines.append(f"| {r['model']} | {wait * 1e3:.1f} ms | {full * 1e3:.1f} ms | "
                         f"{hidden:.0%} |")
    lines += ["", "Oversubscribed correctness (DDP test worker: MLP, CNN, LSTM with SGD and "
              "Adam against one process, no_sync, uneven shards, unused parameters, "
              "checkpoint):", ""]
    lines += [f"- {c['procs']} processes on {meta['cores']} cores: "
              f"{'passed' if c['passed'] else 'FAILED'} ({c['seconds']:.0f} s)" for c in checks]
    (RESULTS / "distributed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
