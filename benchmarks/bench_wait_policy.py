"""The cpu backend's worker spin and poll (LAMINA_SPIN_US, LAMINA_YIELD_US): SGEMM bursts after
idle, a step by a busy core.

The settings are read once, at import, so each runs in its own process
(``--child``). Measurements per setting, 2 threads:

- **bursts after idle**: SGEMM of 256-2048 squares, each burst about 30 ms of work
  started after a pause of 0.3, 1 or 2 s, against numpy's (OpenBLAS) 2-thread SGEMM
  in the same kind of bursts and warm; GFLOP/s, median over the bursts. Both libraries
  are warmed up before the first size, and which one goes first flips from size to size;
- **a training step**: one MLP 784-256-10 training step (batch 128) with 2 threads,
  unloaded and while another process spins on one core, against the same step with
  1 thread and no load (and the 1-thread step beside the busy process, which shows what
  the busy core costs a step that has no second thread); medians over rounds of one
  process each (where the scheduler puts the busy process, beside the caller or beside
  the worker, changes between them).

``python benchmarks/bench_wait_policy.py`` writes ``results/wait_policy.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _machine import machine  # noqa: E402

SIZES = (256, 512, 1024, 2048)
PAUSES = (0.3, 1.0, 2.0)
BURST_SECONDS = 0.03
# name -> environment for the child: how long an idle worker spins, then polls between
# yields of its core, before it sleeps.
POLICIES = {
    f"LAMINA_SPIN_US={spin} LAMINA_YIELD_US={poll}{note}": {
        "LAMINA_SPIN_US": str(spin), "LAMINA_YIELD_US": str(poll)}
    for spin, poll, note in ((50, 0, " (the default until 2026-12-02)"), (1000, 0, ""),
                             (50, 1000, " (the default)"), (50, 5000, ""))
}


def _bursts(matmul: object, a: object, b: object, n: int, repeats: int) -> tuple[float, float]:
    """(GFLOP/s in bursts after each pause (median), warm GFLOP/s)."""
    call = matmul  # type: ignore[assignment]
    flops = 2.0 * n**3
    call(a, b)
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < 0.2:
        call(a, b)
        calls += 1
    warm = (time.perf_counter() - start) / calls
    per_burst = max(1, round(BURST_SECONDS / warm))
    rates = []
    for pause in PAUSES:
        for _ in range(repeats):
            time.sleep(pause)
            t = time.perf_counter()
            for _ in range(per_burst):
                call(a, b)
            rates.append(flops * per_burst / (time.perf_counter() - t) / 1e9)
    return statistics.median(rates), flops / warm / 1e9


def _mlp_step_seconds() -> float:
    import lamina.autograd as ag
    import lamina.nn as nn
    from _timing import seconds_per_call

    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = __import__("lamina.optim", fromlist=["SGD"]).SGD(model.parameters(), lr=0.01)
    x, y = ag.randn(128, 784), ag.randint(0, 10, (128,))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return statistics.median(seconds_per_call(step, 0.3) for _ in range(5))


def child(repeats: int, steps_only: bool) -> dict[str, object]:
    import lamina.ndarray as nd
    import numpy as np

    out: dict[str, object] = {}
    if steps_only:
        return _steps(out)
    rng = np.random.default_rng(0)
    for i, n in enumerate(SIZES):
        a_np = rng.standard_normal((n, n), dtype=np.float32)
        b_np = rng.standard_normal((n, n), dtype=np.float32)
        a, b = nd.array(a_np, device="cpu"), nd.array(b_np, device="cpu")
        calls = {"lamina": (lambda x, y: (x @ y).numpy()[0, 0], a, b),
                 "numpy": (np.matmul, a_np, b_np)}
        if i == 0:  # the first calls of a fresh process (its pool, its pages) are no bursts
            for call, x, y in calls.values():
                start = time.perf_counter()
                while time.perf_counter() - start < 0.2:
                    call(x, y)
        got = {}
        for name in sorted(calls, reverse=bool(i % 2)):  # who goes first flips by size
            time.sleep(1.0)  # OpenBLAS's threads spin for a while after its last call
            got[name] = _bursts(*calls[name], n, repeats)
        ours, theirs = got["lamina"], got["numpy"]
        out[str(n)] = {"lamina_burst": ours[0], "lamina_warm": ours[1],
                       "numpy_burst": theirs[0], "numpy_warm": theirs[1]}
    return out


def _steps(out: dict[str, object]) -> dict[str, object]:
    out["mlp_step"] = _mlp_step_seconds()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        out["mlp_step_busy"] = _mlp_step_seconds()
    finally:
        busy.kill()
        busy.wait()
    return out


def _run_child(env: dict[str, str], threads: int, repeats: int,
               steps_only: bool = False) -> dict[str, object]:
    full = {k: v for k, v in os.environ.items() if k not in ("LAMINA_SPIN_US", "LAMINA_YIELD_US")}
    full.update(env, LAMINA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                OPENBLAS_NUM_THREADS=str(threads))
    argv = [sys.executable, __file__, "--child", "--repeats", str(repeats)]
    done = subprocess.run(argv + ["--steps-only"] * steps_only, env=full, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3, help="bursts per pause")
    parser.add_argument("--step-rounds", type=int, default=5,
                        help="processes per policy timing the step (the busy core's "
                             "placement changes from one to the next)")
    parser.add_argument("--steps-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(HERE / "results" / "wait_policy.md"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats, args.steps_only)))
        return 0
    # Step timings, in rounds of one process per policy and one at 1 thread.
    rounds: dict[str, list[dict[str, object]]] = {name: [] for name in ("1", *POLICIES)}
    for _ in range(args.step_rounds):
        rounds["1"].append(_run_child({}, 1, 1, steps_only=True))
        for name, env in POLICIES.items():
            rounds[name].append(_run_child(env, 2, 1, steps_only=True))

    def step_median(name: str, key: str) -> float:
        return statistics.median(float(r[key]) for r in rounds[name])  # type: ignore[arg-type]

    ref, ref_busy = step_median("1", "mlp_step"), step_median("1", "mlp_step_busy")
    lines = ["# Worker spin: SGEMM bursts after idle, and a training step beside a busy core", "",
             ", ".join(f"{k} {v}" for k, v in machine().items()), "",
             "SGEMM GFLOP/s, 2 threads, median over bursts of about 30 ms started after a "
             f"pause of {', '.join(map(str, PAUSES))} s ({args.repeats} each); numpy is "
             "OpenBLAS in the same bursts and warm. The MLP step (784-256-10, batch 128, "
             "SGD) is 2 threads, unloaded and beside a process spinning on one core; the "
             f"reference is 1 thread, no load: {ref * 1e3:.2f} ms (1 thread beside the busy "
             f"process: {ref_busy * 1e3:.2f} ms, {ref / ref_busy:.2f} of its unloaded speed, "
             "with no second thread to lose). "
             "Step times are medians "
             f"of {args.step_rounds} rounds of one process per policy (and one at 1 "
             "thread), in turn; the range is over the rounds.", "",
             "| policy | n | lamina burst | numpy burst | burst ratio | lamina warm | "
             "numpy warm |", "|---|---:|---:|---:|---:|---:|---:|"]
    steps = []
    for name, env in POLICIES.items():
        res = _run_child(env, 2, args.repeats)
        for n in SIZES:
            r = res[str(n)]
            assert isinstance(r, dict)
            lines.append(f"| {name} | {n} | {r['lamina_burst']:.1f} | {r['numpy_burst']:.1f} | "
                         f"{r['lamina_burst'] / r['numpy_burst']:.2f} | "
                         f"{r['lamina_warm']:.1f} | {r['numpy_warm']:.1f} |")
        free, busy = step_median(name, "mlp_step"), step_median(name, "mlp_step_busy")
        spread = [ref / float(r["mlp_step_busy"]) for r in rounds[name]]  # type: ignore[arg-type]
        steps.append(f"| {name} | {free * 1e3:.2f} | {ref / free:.2f} | {busy * 1e3:.2f} | "
                     f"{ref / busy:.2f} | {min(spread):.2f}-{max(spread):.2f} |")
    lines += ["", "| policy | MLP step, 2 threads (ms) | speed vs 1 thread | "
              "2 threads, one core busy (ms) | speed vs 1 thread unloaded | range |",
              "|---|---:|---:|---:|---:|---:|", *steps, ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
