"""The cpu backend's kernels against numpy (OpenBLAS), at 1 thread and all cores.

Each comparison runs interleaved (lamina, numpy, lamina, ...) ``repeats``
times and keeps the median. Where the CPU has more than one vector path
(``cpu.cpu_isa()``: AVX2 and AVX-512), every path runs in the same
interleaving (``set_isa`` before each call), one row per path, so the paths
are compared on the same machine state. Rows follow ``_timing.row`` (ratio
> 1 means Lamina is better) plus ``threads``, ``isa``, ``cpu``, ``numpy``
(numpy's value) and, for GEMM, the fraction of the measured FMA peak of that
path (``fma_peak_gflops``: back-to-back FMAs at the path's vector width).
Measured:

* float32 GEMM 128/256/512/1024/2048 (GFLOP/s), new output per call, like ``a @ b``;
* add and exp on 16M float32 into new outputs, and into a reused output (GB/s);
* last-axis and first-axis sums of a 4096x4096 float32 array (GB/s);
* a transposed compact vs ``np.ascontiguousarray(a.T)`` (GB/s).

``python benchmarks/bench_cpu.py [--repeats N] [--cpu-clock]`` prints the
table. ``--cpu-clock`` times the 1-thread rows by the calling thread's CPU
time instead of the wall clock (both libraries compute on the calling thread
there): on a machine shared with other work it removes the time the thread
sat preempted, which wall-clock medians only dilute.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import lamina_backend_cpu  # noqa: E402
from _machine import cpu_model, machine, table  # noqa: E402
from _timing import row, seconds_per_call  # noqa: E402

cpu = lamina_backend_cpu.backend
ORDER = ("generic", "avx2", "avx512")


def paths() -> list[str]:
    """The vector paths this CPU runs (every one from avx2 up), else the active one."""
    best = ORDER.index(cpu.cpu_isa())
    return [p for p in ORDER[1:best + 1]] or [cpu.isa()]


def _openblas_setter() -> Callable[[int], None] | None:
    """numpy's OpenBLAS thread setter (no threadpoolctl needed), if found."""
    libdir = Path(np.__file__).parent.parent / "numpy.libs"
    for path in glob.glob(str(libdir / "*openblas*.so*")):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                return lambda n, fn=fn: fn(ctypes.c_int(n))
    return None


def interleaved(candidates: dict[str, Callable[[], object]], repeats: int = 3,
                min_time: float = 0.2,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Median seconds per call, measured in alternation, each after a pause.

    OpenBLAS's workers busy-wait for about 0.1 s after each call; without the
    pause whichever candidate runs right after numpy shares the cores with
    them (this cost Lamina's 2-thread GEMM 30% at 512).
    """
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            time.sleep(0.15)
            samples[name].append(seconds_per_call(fn, min_time, clock))
    return {name: statistics.median(v) for name, v in samples.items()}


def _buf(x: np.ndarray):  # noqa: ANN202
    out = cpu.Array(x.size, x.dtype.name)
    cpu.from_numpy(x.reshape(-1), out)
    return out


def _on(isa: str, fn: Callable[[], object]) -> Callable[[], object]:
    def call() -> object:
        cpu.set_isa(isa)
        return fn()
    return call


def _rows_for(threads: int, repeats: int, peaks: dict[str, float],
              clock: Callable[[], float]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(0)
    base = f"numpy {threads}t"
    model = cpu_model()
    clock_name = "thread cpu time" if clock is not time.perf_counter else "wall"

    def compare(op: str, size: str, ours: Callable[[], object], theirs: Callable[[], object],
                work: float, unit: str, gemm: bool = False) -> None:
        cands = {isa: _on(isa, ours) for isa in paths()}
        cands["numpy"] = theirs
        t = interleaved(cands, repeats, clock=clock)
        ref = work / t["numpy"] / 1e9
        for isa in paths():
            lam = work / t[isa] / 1e9
            extra: dict[str, object] = {}
            if gemm:
                peak = peaks.get(isa) or 0.0
                extra = {"lamina_peak_fraction": lam / peak if peak else None,
                         "numpy_peak_fraction": ref / peak if peak else None}
            rows.append(row(op, size, f"lamina[cpu {isa}] {threads}t", base, lam, ref, unit, True,
                            threads=threads, isa=isa, cpu=model, clock=clock_name, numpy=ref,
                            **extra))

    for n in (128, 256, 512, 1024, 2048):
        m = rng.standard_normal((n, n)).astype(np.float32)
        am = _buf(m)

        def lam(am=am, n=n) -> None:  # noqa: ANN001
            out = cpu.Array(n * n, "float32")
            cpu.matmul(am, am, out, n, n, n)

        compare("sgemm", str(n), lam, lambda m=m: m @ m, 2.0 * n ** 3, "GFLOP/s", gemm=True)

    size = 1 << 24
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    ax, ay = _buf(x), _buf(y)
    reuse_l, reuse_n = cpu.Array(size, "float32"), np.empty_like(x)
    compare("add (new output)", "16M", lambda: cpu.ewise_add(ax, ay, cpu.Array(size, "float32")),
            lambda: np.add(x, y), 3 * x.nbytes, "GB/s")
    compare("add (reused output)", "16M", lambda: cpu.ewise_add(ax, ay, reuse_l),
            lambda: np.add(x, y, out=reuse_n), 3 * x.nbytes, "GB/s")
    compare("exp (new output)", "16M", lambda: cpu.ewise_exp(ax, cpu.Array(size, "float32")),
            lambda: np.exp(x), 2 * x.nbytes, "GB/s")
    compare("exp (reused output)", "16M", lambda: cpu.ewise_exp(ax, reuse_l),
            lambda: np.exp(x, out=reuse_n), 2 * x.nbytes, "GB/s")

    side = 4096
    sq = rng.standard_normal((side, side)).astype(np.float32)
    asq = _buf(sq)
    compare("sum last axis", f"{side}^2",
            lambda: cpu.reduce_sum(asq, cpu.Array(side, "float32"), side),
            lambda: sq.sum(axis=1), sq.nbytes, "GB/s")
    compare("sum first axis", f"{side}^2",
            lambda: cpu.reduce_sum_axis(asq, cpu.Array(side, "float32"), 1, side, side),
            lambda: sq.sum(axis=0), sq.nbytes, "GB/s")
    compare("transposed compact", f"{side}^2",
            lambda: cpu.compact(asq, cpu.Array(side * side, "float32"), (side, side), (1, side), 0),
            lambda: np.ascontiguousarray(sq.T), 2 * sq.nbytes, "GB/s")
    return rows


def run(repeats: int = 3, cpu_clock: bool = False) -> list[dict[str, object]]:
    """All rows, at 1 thread and at all cores (threads and ISA restored afterwards)."""
    set_blas = _openblas_setter()
    old, old_isa = cpu.num_threads(), cpu.isa()
    counts = sorted({1, os.cpu_count() or 1})
    rows: list[dict[str, object]] = []
    try:
        for threads in counts:
            cpu.set_num_threads(threads)
            if set_blas is not None:
                set_blas(threads)
            peaks: dict[str, float] = {}
            for isa in paths():
                cpu.set_isa(isa)
                try:
                    peaks[isa] = cpu.fma_peak_gflops(0.3, threads)
                except RuntimeError:
                    continue
                rows.append(row("fma peak (probe)", "-", f"lamina[cpu {isa}] {threads}t", "-",
                                peaks[isa], peaks[isa], "GFLOP/s", True, threads=threads,
                                isa=isa, cpu=cpu_model(), numpy=None))
            clock = time.thread_time if cpu_clock and threads == 1 else time.perf_counter
            rows.extend(_rows_for(threads, repeats, peaks, clock))
    finally:
        cpu.set_num_threads(old)
        cpu.set_isa(old_isa)
        if set_blas is not None:
            set_blas(os.cpu_count() or 1)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu-clock", action="store_true",
                        help="time 1-thread rows by the thread's CPU time (shared machines)")
    parser.add_argument("--out", default=None,
                        help="also write OUT.json and OUT.md with the machine, like run.py")
    args = parser.parse_args()
    print(f"cpu: {cpu_model()}, paths: {', '.join(paths())}")
    print(f"{'op':<22}{'size':>8}{'thr':>5}{'isa':>8}{'lamina':>10}{'numpy':>10}  {'unit':<8}"
          f"{'ratio':>6}  peak% (lamina/numpy)")
    rows = run(args.repeats, args.cpu_clock)
    if args.out:
        import json

        info = machine()
        out = Path(args.out)
        out.with_suffix(".json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
        header = ", ".join(f"{k} {v}" for k, v in info.items())
        out.with_suffix(".md").write_text(f"# bench_cpu\n\n{header}\n\n{table(rows)}\n")
    for r in rows:
        frac = ""
        if r.get("lamina_peak_fraction"):
            frac = f"{100 * r['lamina_peak_fraction']:.0f}/{100 * r['numpy_peak_fraction']:.0f}"
        numpy_value = r["numpy"] if r["numpy"] is not None else float("nan")
        print(f"{r['op']:<22}{r['size']:>8}{r['threads']:>5}{r['isa']:>8}{r['lamina_value']:>10.1f}"
              f"{numpy_value:>10.1f}  {r['unit']:<8}{r['ratio']:>6.2f}  {frac}", flush=True)


if __name__ == "__main__":
    main()
