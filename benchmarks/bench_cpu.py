"""The cpu backend's kernels against numpy (OpenBLAS), at 1 thread and all cores.

Each comparison runs interleaved (lamina, numpy, lamina, ...) ``repeats``
times and keeps the median. Rows follow ``_timing.row`` (ratio > 1 means
Lamina is better) plus ``threads``, ``numpy`` (numpy's value) and, for GEMM,
the fraction of the measured FMA peak (``fma_peak_gflops``, an AVX2 probe of
back-to-back FMAs). Measured:

* float32 GEMM 512/1024/2048 (GFLOP/s), new output per call, like ``a @ b``;
* add and exp on 16M float32 into new outputs, and into a reused output (GB/s);
* last-axis and first-axis sums of a 4096x4096 float32 array (GB/s);
* a transposed compact vs ``np.ascontiguousarray(a.T)`` (GB/s).

``python benchmarks/bench_cpu.py [--repeats N]`` prints the table.
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
from _timing import row, seconds_per_call  # noqa: E402

cpu = lamina_backend_cpu.backend


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
                min_time: float = 0.2) -> dict[str, float]:
    """Median seconds per call, measured in alternation, each after a pause.

    OpenBLAS's workers busy-wait for about 0.1 s after each call; without the
    pause whichever candidate runs right after numpy shares the cores with
    them (this cost Lamina's 2-thread GEMM 30% at 512).
    """
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            time.sleep(0.15)
            samples[name].append(seconds_per_call(fn, min_time))
    return {name: statistics.median(v) for name, v in samples.items()}


def _buf(x: np.ndarray):  # noqa: ANN202
    out = cpu.Array(x.size, x.dtype.name)
    cpu.from_numpy(x.reshape(-1), out)
    return out


def _rows_for(threads: int, repeats: int, peak: float) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(0)
    label = f"lamina[cpu] {threads}t"
    base = f"numpy {threads}t"

    def add(op: str, size: str, t: dict[str, float], work: float, unit: str,
            **extra: object) -> None:
        lam, ref = work / t["l"] / 1e9, work / t["n"] / 1e9
        rows.append(row(op, size, label, base, lam, ref, unit, True, threads=threads,
                        numpy=ref, **extra))

    for n in (512, 1024, 2048):
        m = rng.standard_normal((n, n)).astype(np.float32)
        am = _buf(m)

        def lam(am=am, n=n) -> None:  # noqa: ANN001
            out = cpu.Array(n * n, "float32")
            cpu.matmul(am, am, out, n, n, n)

        t = interleaved({"l": lam, "n": lambda m=m: m @ m}, repeats)
        flops = 2.0 * n ** 3
        add("sgemm", str(n), t, flops, "GFLOP/s",
            lamina_peak_fraction=flops / t["l"] / 1e9 / peak if peak else None,
            numpy_peak_fraction=flops / t["n"] / 1e9 / peak if peak else None)

    size = 1 << 24
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    ax, ay = _buf(x), _buf(y)
    reuse_l, reuse_n = cpu.Array(size, "float32"), np.empty_like(x)

    def new_add() -> None:
        cpu.ewise_add(ax, ay, cpu.Array(size, "float32"))

    def new_exp() -> None:
        cpu.ewise_exp(ax, cpu.Array(size, "float32"))

    t = interleaved({"l": new_add, "n": lambda: np.add(x, y)}, repeats)
    add("add (new output)", "16M", t, 3 * x.nbytes, "GB/s")
    t = interleaved({"l": lambda: cpu.ewise_add(ax, ay, reuse_l),
                     "n": lambda: np.add(x, y, out=reuse_n)}, repeats)
    add("add (reused output)", "16M", t, 3 * x.nbytes, "GB/s")
    t = interleaved({"l": new_exp, "n": lambda: np.exp(x)}, repeats)
    add("exp (new output)", "16M", t, 2 * x.nbytes, "GB/s")
    t = interleaved({"l": lambda: cpu.ewise_exp(ax, reuse_l),
                     "n": lambda: np.exp(x, out=reuse_n)}, repeats)
    add("exp (reused output)", "16M", t, 2 * x.nbytes, "GB/s")

    side = 4096
    sq = rng.standard_normal((side, side)).astype(np.float32)
    asq = _buf(sq)

    def sum_last() -> None:
        cpu.reduce_sum(asq, cpu.Array(side, "float32"), side)

    def sum_first() -> None:
        cpu.reduce_sum_axis(asq, cpu.Array(side, "float32"), 1, side, side)

    def transpose() -> None:
        cpu.compact(asq, cpu.Array(side * side, "float32"), (side, side), (1, side), 0)

    t = interleaved({"l": sum_last, "n": lambda: sq.sum(axis=1)}, repeats)
    add("sum last axis", f"{side}^2", t, sq.nbytes, "GB/s")
    t = interleaved({"l": sum_first, "n": lambda: sq.sum(axis=0)}, repeats)
    add("sum first axis", f"{side}^2", t, sq.nbytes, "GB/s")
    t = interleaved({"l": transpose, "n": lambda: np.ascontiguousarray(sq.T)}, repeats)
    add("transposed compact", f"{side}^2", t, 2 * sq.nbytes, "GB/s")
    return rows


def run(repeats: int = 3) -> list[dict[str, object]]:
    """All rows, at 1 thread and at all cores (threads restored afterwards)."""
    set_blas = _openblas_setter()
    old = cpu.num_threads()
    counts = sorted({1, os.cpu_count() or 1})
    rows: list[dict[str, object]] = []
    try:
        for threads in counts:
            cpu.set_num_threads(threads)
            if set_blas is not None:
                set_blas(threads)
            try:
                peak = cpu.fma_peak_gflops(0.3, threads)
            except RuntimeError:
                peak = 0.0
            rows.append(row("fma peak (probe)", "-", f"lamina[cpu] {threads}t", "-", peak,
                            peak, "GFLOP/s", True, threads=threads, numpy=None))
            rows.extend(_rows_for(threads, repeats, peak))
    finally:
        cpu.set_num_threads(old)
        if set_blas is not None:
            set_blas(os.cpu_count() or 1)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'op':<22}{'size':>8}{'thr':>5}{'lamina':>10}{'numpy':>10}  {'unit':<8}"
          f"{'ratio':>6}  peak% (lamina/numpy)")
    for r in run(args.repeats):
        frac = ""
        if r.get("lamina_peak_fraction"):
            frac = f"{100 * r['lamina_peak_fraction']:.0f}/{100 * r['numpy_peak_fraction']:.0f}"
        numpy_value = r["numpy"] if r["numpy"] is not None else float("nan")
        print(f"{r['op']:<22}{r['size']:>8}{r['threads']:>5}{r['lamina_value']:>10.1f}"
              f"{numpy_value:>10.1f}  {r['unit']:<8}{r['ratio']:>6.2f}  {frac}", flush=True)


if __name__ == "__main__":
    main()
