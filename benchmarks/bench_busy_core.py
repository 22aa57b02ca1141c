"""Every training step of ``bench_steps.py`` in Lamina beside a process that keeps one core busy.

Issue 32's rule: a second process busy on one core must not make a Lamina step slower than
its 1-thread time. Per step, in one process, in alternating phases:

- **quiet**: the step at 1 thread with nothing else running;
- **busy**: while another process spins (``while True: pass``), the step at 1 thread and at
  2 threads, in turn (which goes first flips each round).

The quiet and busy phases alternate (``--phases`` of each), so a drift of the VM's speed
shows in both; each busy timing follows a quarter second of the same step untimed
(``SETTLE``). Reported per step: medians of the rounds, and the paired ratios (> 1: the
2-thread step is the faster) of the 2-thread step beside the busy core against the 1-thread
step beside it (what a user could have run instead) and against the quiet 1-thread step.
The busy process also takes a share of what the cores have in common (cache, memory,
the host's scheduling): the quiet 1-thread step against the busy one shows that share.

``python benchmarks/bench_busy_core.py [--only ROW] [--out OUT]`` writes ``OUT.md`` and
``OUT.json`` (default ``results/busy_core_<machine tag>``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import bench_steps  # noqa: E402
from _machine import machine  # noqa: E402
from _timing import seconds_per_call  # noqa: E402
from lamina import ndarray as nd  # noqa: E402

# Rows measured here: Lamina's side of each bench_steps row (the primitive-op LSTM row
# differs from the LSTM LM row only on PyTorch's side).
CASES = [c for c in bench_steps.CASES if "torch from primitive ops" not in c.name]


# Seconds each busy timing first runs its step untimed. A 1-thread step runs no job on the
# workers, so the cpu backend takes no load sample (every 200 ms, threading.cc) while it
# runs; the first 2-thread jobs after one would plan with a sample that spans the quiet
# phase. A training loop beside a busy process samples all the time: this times that
# steady state, not the first 200 ms after the other process starts.
SETTLE = 0.25


def _busy() -> subprocess.Popen[bytes]:
    """A process spinning on one core; the caller kills it."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.5)  # running, and seen by the cpu backend's load sample (every 200 ms)
    return proc


def measure(step: Any, rounds: int, phases: int, min_time: float) -> dict[str, list[float]]:
    """Seconds per step: ``quiet1`` (1 thread, no load), ``busy1`` and ``busy2`` (1 and 2
    threads beside the busy process), ``rounds`` per phase, ``phases`` phases of each."""
    device = nd.get_device(bench_steps.DEVICE)
    times: dict[str, list[float]] = {"quiet1": [], "busy1": [], "busy2": []}
    for threads in (1, 2):  # warm-up at both counts
        device.set_num_threads(threads)
        step(), step()
    for _ in range(phases):
        device.set_num_threads(1)
        time.sleep(0.3)
        times["quiet1"] += [seconds_per_call(step, min_time) for _ in range(rounds)]
        busy = _busy()
        try:
            for k in range(rounds):
                for threads in ((1, 2) if k % 2 == 0 else (2, 1)):
                    device.set_num_threads(threads)
                    seconds_per_call(step, SETTLE)  # untimed: see SETTLE
                    times[f"busy{threads}"].append(seconds_per_call(step, min_time))
        finally:
            busy.kill()
            busy.wait()
    return times


def _ratio_line(ref: list[float], got: list[float]) -> tuple[float, float, float]:
    """Median, lowest and highest of ref[i] / got[i] (> 1: got is the faster)."""
    ratios = [r / g for r, g in zip(ref, got)]
    return statistics.median(ratios), min(ratios), max(ratios)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, metavar="ROW",
                        help="only the rows whose name contains ROW (case-insensitive)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per phase (default 3)")
    parser.add_argument("--phases", type=int, default=2,
                        help="quiet and busy phases of each (default 2)")
    parser.add_argument("--min-time", type=float, default=0.3,
                        help="seconds per timing (default 0.3)")
    parser.add_argument("--out", default=None, help="writes OUT.md and OUT.json (default "
                        "benchmarks/results/busy_core_<machine tag>)")
    args = parser.parse_args()
    if args.rounds < 1 or args.phases < 1:
        parser.error("--rounds and --phases must be at least 1")
    cases = bench_steps.selected(parser, CASES, args.only)
    rows = []
    for case in cases:
        pair = case.build()
        t = measure(pair.ours, args.rounds, args.phases, args.min_time)
        s = bench_steps.SCALE[case.unit]
        vs_busy1 = _ratio_line(t["busy1"], t["busy2"])
        # quiet and busy timings are not paired in time: pair them round by round anyway
        vs_quiet1 = _ratio_line(t["quiet1"], t["busy2"])
        rows.append({"step": case.name, "size": case.size, "unit": case.unit,
                     **{k: statistics.median(v) * s for k, v in t.items()},
                     "vs_busy1": vs_busy1, "vs_quiet1": vs_quiet1,
                     "rounds": {k: [x * s for x in v] for k, v in t.items()}})
        r = rows[-1]
        print(f"{case.name}: quiet 1t {r['quiet1']:.3g}, busy 1t {r['busy1']:.3g}, busy 2t "
              f"{r['busy2']:.3g} {case.unit}; 2t busy vs 1t busy {vs_busy1[0]:.2f}, vs 1t quiet "
              f"{vs_quiet1[0]:.2f}", flush=True)
    info = machine()
    info.pop("lamina_threads", None)
    out = Path(args.out) if args.out else (HERE / "results" /
                                           f"busy_core_{bench_steps.machine_tag()}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    lines = ["# Training steps beside a busy core (benchmarks/bench_busy_core.py)", "",
             ", ".join(f"{k} {v}" for k, v in info.items()), "",
             f"Lamina only. Medians of {args.rounds * args.phases} timings of at least "
             f"{args.min_time} s per column, {args.phases} quiet and {args.phases} busy phases "
             "in turn; busy: another process spins on one core. Ratios: paired round by "
             "round, median (lowest-highest); > 1: the 2-thread step beside the busy core is "
             "the faster.", "",
             "| step | size | 1 thread, quiet | 1 thread, busy | 2 threads, busy | unit | "
             "2t busy vs 1t busy | 2t busy vs 1t quiet |", "|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        (a, a0, a1), (b, b0, b1) = r["vs_busy1"], r["vs_quiet1"]
        lines.append(f"| {r['step']} | {r['size']} | {r['quiet1']:.3g} | {r['busy1']:.3g} | "
                     f"{r['busy2']:.3g} | {r['unit']} | {a:.2f} ({a0:.2f}-{a1:.2f}) | "
                     f"{b:.2f} ({b0:.2f}-{b1:.2f}) |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
