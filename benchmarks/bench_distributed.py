"""Data-parallel throughput: Lamina DDP vs PyTorch DDP (gloo), same processes and threads.

For the MNIST MLP (784-256-256-10, global batch 128) and ResNet9 (dlsys, global
batch 128), samples per second of three layouts on a 2-core machine:
1 process x 1 thread, 1 process x 2 threads, 2 processes x 1 thread (DDP,
each rank B/2 samples). Each configuration is a fresh ``mpiexec`` run of
``distributed_worker.py``; rounds interleave Lamina and PyTorch and every
layout so machine noise hits all alike; medians over rounds are reported.

Also: the share of the all-reduce work hidden behind backward (bytes of the
buckets whose all-reduce had completed before backward produced its last
gradient, over all bytes reduced; the last bucket can never be hidden), the
time backward was blocked waiting for all-reduces next to the time a
blocking all-reduce of the same buckets takes, the goals of issue 22 (DDP
step time against PyTorch DDP's, scaling of 2 processes over 1), and a
correctness run of the DDP test worker with 4 and 8 oversubscribed
processes (times mean nothing there).

And the cost of the mismatch check (issue 31): Lamina's DDP step with 2
processes with ``LAMINA_DISTRIBUTED_CHECKS=1`` (the default) against ``0``,
interleaved, next to what checking every bucket's all-reduce (instead of the
bucket layout once at construction) would add to a step.

Run: ``nox -s bench_distributed`` (or ``python benchmarks/bench_distributed.py``
where lamina-nn[distributed], the cpu backend and torch==2.13.0 are installed;
``--check-cost-only`` measures only the check and keeps the rest of the
recorded results). Writes ``benchmarks/results/distributed.{md,json}``
(``--out`` elsewhere).
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
from typing import Any

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


def launch(nproc: int, args: list[str], threads: int, timeout: float = 600,
           extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    from lamina.distributed import mpiexec_command

    env = {**os.environ, "LAMINA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           **(extra_env or {})}
    return subprocess.run(mpiexec_command(nproc, args), capture_output=True, text=True,
                          env=env, timeout=timeout)


def one(framework: str, model: str, procs: int, threads: int, batch: int, steps: int,
        port: int, extra_env: dict[str, str] | None = None) -> dict[str, float]:
    args = [str(HERE / "distributed_worker.py"), "--framework", framework, "--model", model,
            "--batch", str(batch), "--steps", str(steps), "--threads", str(threads),
            "--port", str(port)]
    result = launch(procs, args, threads, extra_env=extra_env)
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
               for k in ("step_s", "samples_per_s", "wait_s", "allreduce_s", "overlap")}
        rows.append({"framework": framework, "model": model, "procs": procs,
                     "threads": threads, "batch": batch, **med})
    return rows


def check_cost(models: list[str], steps: int, rounds: int) -> list[dict[str, Any]]:
    """Lamina's 2-process DDP step with the mismatch check on and off, interleaved."""
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(rounds):
        for model in models:
            for checks in ("1", "0"):
                r = one("lamina", model, 2, 1, 128, steps, 0,
                        {"LAMINA_DISTRIBUTED_CHECKS": checks})
                runs.setdefault((model, checks), []).append(r)
    rows = []
    for model in models:
        on, off = runs[(model, "1")], runs[(model, "0")]
        step_on = statistics.median(float(r["step_s"]) for r in on)
        step_off = statistics.median(float(r["step_s"]) for r in off)
        plain = statistics.median(float(r["allreduce_s"]) for r in on)
        checked = statistics.median(float(r["checked_allreduce_s"]) for r in on)
        rows.append({"model": model, "step_on_s": step_on, "step_off_s": step_off,
                     "cost": step_on / step_off - 1, "per_call_check_s": checked - plain,
                     "per_call_cost": (checked - plain) / step_off,
                     "ratios": [float(a["step_s"]) / float(b["step_s"]) for a, b in zip(on, off)]})
    return rows


def check_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| model | DDP step, check on | DDP step, check off | cost of the check (goal "
             "<= 3%) | per round, on / off | a check per bucket all-reduce would add |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        ratios = ", ".join(f"{x:.3f}" for x in r["ratios"])
        lines.append(f"| {r['model']} | {r['step_on_s'] * 1e3:.2f} ms | "
                     f"{r['step_off_s'] * 1e3:.2f} ms | {r['cost']:+.1%} | {ratios} | "
                     f"{r['per_call_check_s'] * 1e6:.0f} us ({r['per_call_cost']:.1%} of a "
                     "step) |")
    return lines


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


def goals(rows: list[dict[str, object]]) -> list[str]:
    """Issue 22's targets: DDP step vs PyTorch DDP's, and 2 processes over 1."""
    by = {(r["framework"], r["model"], r["procs"], r["threads"]): r for r in rows}
    lines = ["| model | Lamina DDP step / PyTorch DDP step (goal <= 1.2x, moonshot <= 1.0x) | "
             "framework | 2x1 speed-up over 1x1 | scaling efficiency (speed-up / 2; "
             "goal >= 85% for ResNet9) | 2x1 over 1x2 threads |", "|---|---|---|---|---|---|"]
    for model in sorted({str(r["model"]) for r in rows}):
        ratio = (float(by[("lamina", model, 2, 1)]["step_s"])
                 / float(by[("torch", model, 2, 1)]["step_s"]))
        for f, name in (("lamina", "Lamina"), ("torch", "PyTorch")):
            two, one, threads = (float(by[(f, model, p, t)]["samples_per_s"])
                                 for p, t in ((2, 1), (1, 1), (1, 2)))
            lines.append(f"| {model} | {f'{ratio:.2f}x' if f == 'lamina' else ''} | {name} | "
                         f"{two / one:.2f}x | {two / one / 2:.0%} | {two / threads:.2f}x |")
    return lines


def hidden(rows: list[dict[str, object]]) -> list[str]:
    lines = ["| model | hidden behind backward (bytes) | blocked in backward per step | "
             "blocking all-reduce of the buckets per step |", "|---|---|---|---|"]
    for r in rows:
        if r["framework"] == "lamina" and r["procs"] == 2:
            lines.append(f"| {r['model']} | {float(r['overlap']):.0%} | "
                         f"{float(r['wait_s']) * 1e3:.1f} ms | "
                         f"{float(r['allreduce_s']) * 1e3:.1f} ms |")
    return lines


def load_note(load: list[float], cores: int | None) -> str:
    state = ("a quiet machine" if max(load) < 0.5 else
             "a machine shared with other jobs: absolute numbers are noisy, and so are the "
             "ratios when the load is far above the core count")
    return (f"1-minute load average {load[0]:.1f} before the run and {load[1]:.1f} after, on "
            f"{cores} cores ({state}).")


def run_comparison(a: argparse.Namespace) -> dict[str, Any]:
    """Lamina against PyTorch in every layout, and the oversubscribed correctness runs."""
    started = datetime.datetime.now(datetime.timezone.utc)
    clock = time.monotonic()
    load_before = os.getloadavg()[0]
    rows = [r for m in a.models for r in measure(m, 128, a.steps, a.rounds)]
    checks = [correctness(n) for n in (4, 8)]
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    meta = {"date": started.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(),
            "cores": os.cpu_count(), "rounds": a.rounds, "steps": a.steps,
            "python": platform.python_version(), "quiet_machine": max(load) < 0.5,
            "load_average_1min": load, "seconds": round(time.monotonic() - clock)}
    return {"meta": meta, "rows": rows, "oversubscribed": checks}


def run_check_cost(a: argparse.Namespace) -> dict[str, Any]:
    started = datetime.datetime.now(datetime.timezone.utc)
    clock = time.monotonic()
    load_before = os.getloadavg()[0]
    rows = check_cost(a.models, a.check_steps, a.check_rounds)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    meta = {"date": started.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(),
            "cores": os.cpu_count(), "rounds": a.check_rounds, "steps": a.check_steps,
            "load_average_1min": load, "seconds": round(time.monotonic() - clock)}
    return {"meta": meta, "rows": rows}


def render(data: dict[str, Any]) -> list[str]:
    meta, rows, checks = data["meta"], data["rows"], data["oversubscribed"]
    lines = ["# Data-parallel training: Lamina DDP vs PyTorch DDP (gloo)", "",
             f"{meta['date']}, {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}; "
             f"{load_note(meta['load_average_1min'], meta['cores'])} "
             f"Medians over {meta['rounds']} interleaved rounds of {meta['steps']} timed steps "
             "(after 2 warm-up steps); global batch 128, synthetic inputs; SGD with momentum; "
             "both DDPs with gradient_as_bucket_view=True. "
             "`python benchmarks/bench_distributed.py` (`nox -s bench_distributed`), "
             f"{meta['seconds']} s in all.", ""]
    lines += table(rows)
    lines += ["", "Goals (2 processes x 1 thread each, DDP):", ""] + goals(rows)
    lines += ["", "All-reduce hidden behind backward (Lamina, 2 processes): the bytes of the "
              "buckets whose all-reduce had completed before backward produced its last "
              "gradient, over all bytes reduced (the last bucket never is; a bucket still "
              "waiting for the slower rank counts as not hidden). Next to it, the time "
              "backward was blocked on all-reduces (the slower rank's lag included) and "
              "the time a blocking all-reduce of the same buckets takes.", ""] + hidden(rows)
    lines += ["", "Oversubscribed correctness (DDP test worker: MLP, CNN, LSTM with SGD and "
              "Adam against one process, no_sync, uneven shards, unused parameters, "
              "checkpoint):", ""]
    lines += [f"- {c['procs']} processes on {meta['cores']} cores: "
              f"{'passed' if c['passed'] else 'FAILED'} ({c['seconds']:.0f} s)" for c in checks]
    if "mismatch_check" in data:
        lines += [""] + render_check_cost(data["mismatch_check"])
    return lines


def render_check_cost(check: dict[str, Any]) -> list[str]:
    meta = check["meta"]
    return ["## Cost of the mismatch check (issue 31)", "",
            f"{meta['date']}, {meta['cpu']}, {meta['cores']} cores; "
            f"{load_note(meta['load_average_1min'], meta['cores'])} Lamina DDP, 2 processes x "
            f"1 thread, global batch 128: medians over {meta['rounds']} interleaved rounds of "
            f"{meta['steps']} timed steps with `LAMINA_DISTRIBUTED_CHECKS=1` (the default) and "
            "`0`; `python benchmarks/bench_distributed.py --check-cost-only`, "
            f"{meta['seconds']} s. DDP checks its bucket layout, buffers and options once, at "
            "construction, so its steps run the same code either way and the difference is "
            "noise. The last column is what a check before every bucket's all-reduce (a "
            "blocking all-reduce of the buckets with and without it, after training) would "
            "add to a step instead: the per-call cost that `all_reduce`, `broadcast`, "
            "`all_gather`, `reduce_scatter` and `barrier` pay.", ""] + check_table(check["rows"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--check-rounds", type=int, default=5)
    p.add_argument("--check-steps", type=int, default=20)
    p.add_argument("--check-cost-only", action="store_true",
                   help="measure only the mismatch check; keep the other recorded results")
    p.add_argument("--models", nargs="+", default=["mlp", "resnet9"])
    p.add_argument("--out", type=Path, default=RESULTS, help="folder for distributed.{md,json}")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    record = a.out / "distributed.json"
    data = json.loads(record.read_text()) if a.check_cost_only else run_comparison(a)
    data["mismatch_check"] = run_check_cost(a)
    record.write_text(json.dumps(data, indent=1))
    lines = render(data)
    (a.out / "distributed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
