"""bfloat16 GEMM with float32 sums: Lamina's paths against its float32 GEMM and PyTorch.

For each thread count and square size, one interleaved round times, in turn:
Lamina's float32 ``matmul``; Lamina's bfloat16 ``matmul`` on every path this CPU
has (``bf16_gemm_paths()``: ``float32`` widens the operands for the float32
kernels, ``avx512_bf16`` runs VDPBF16PS, ``amx`` the AMX tiles); PyTorch's
bfloat16 and float32 ``a @ b``. Each candidate's time is the best of a few
calls within the round, the candidates taking turns call by call; a row
holds the median over rounds of the per-round ratio (> 1: Lamina faster),
so a slow spell of the machine hits both sides of a ratio alike. The outputs
are new arrays each call, as ``a @ b`` makes.

``python benchmarks/bench_bf16_gemm.py [--rounds N] [--sizes ...] [--threads ...]``
prints the table and writes ``results/bf16_gemm_<cpu>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import lamina_backend_cpu  # noqa: E402
from _machine import cpu_model, machine, table  # noqa: E402

cpu = lamina_backend_cpu.backend


def _buf(x: np.ndarray, dtype: str):  # noqa: ANN202
    f = cpu.Array(x.size, "float32")
    cpu.from_numpy(np.ascontiguousarray(x, np.float32).reshape(-1), f)
    if dtype == "float32":
        return f
    out = cpu.Array(x.size, dtype)
    cpu.ewise_cast(f, out)  # rounds to nearest even, as torch's .bfloat16() does
    return out


def _round(cands: dict[str, Callable[[], object]], calls: int) -> dict[str, float]:
    """Each candidate's best time of ``calls`` calls, the candidates taking turns
    call by call, so that a slow spell of the machine within the round reaches
    them all alike."""
    best = {name: float("inf") for name in cands}
    for _ in range(calls):
        for name, fn in cands.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
            time.sleep(0.02)  # no library's spinning threads into the next one's call
    return best


def _candidates(n: int, rng: np.random.Generator) -> dict[str, Callable[[], object]]:
    import torch
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    a32, b32 = _buf(a, "float32"), _buf(b, "float32")
    a16, b16 = _buf(a, "bfloat16"), _buf(b, "bfloat16")
    cands: dict[str, Callable[[], object]] = {
        "lamina float32": lambda: cpu.matmul(a32, b32, cpu.Array(n * n, "float32"), n, n, n)}
    for path in cpu.bf16_gemm_paths():
        def bf16(path: str = path) -> None:
            cpu.set_bf16_gemm(path)
            cpu.matmul(a16, b16, cpu.Array(n * n, "bfloat16"), n, n, n)
        cands[f"lamina bf16 {path}"] = bf16
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ta16, tb16 = ta.bfloat16(), tb.bfloat16()
    cands["torch bf16"] = lambda: ta16 @ tb16
    cands["torch float32"] = lambda: ta @ tb
    return cands


def run(repeats: int = 5, sizes: tuple[int, ...] = (1024, 1536, 2048),
        threads: tuple[int, ...] = (1, 2)) -> list[dict[str, object]]:
    import torch
    rows: list[dict[str, object]] = []
    model = cpu_model()
    rng = np.random.default_rng(0)
    before_threads = cpu.num_threads()
    try:
        for nt in threads:
            cpu.set_num_threads(nt)
            torch.set_num_threads(nt)
            for n in sizes:
                cands = _candidates(n, rng)
                work = 2.0 * n ** 3
                times: dict[str, list[float]] = {k: [] for k in cands}
                for fn in cands.values():
                    fn()  # warm: scratch buffers, packing code, torch's first call
                for _ in range(repeats):
                    for name, t in _round(cands, 4).items():
                        times[name].append(t)
                cpu.set_bf16_gemm("best")
                best = f"lamina bf16 {cpu.bf16_gemm()}"
                for name in cands:
                    if not name.startswith("lamina bf16"):
                        continue
                    gf = work / statistics.median(times[name]) / 1e9
                    for base in ("torch bf16", "lamina float32"):
                        ratio = statistics.median(
                            t_base / t for t, t_base in zip(times[name], times[base]))
                        rows.append({
                            "op": "bf16 gemm", "size": str(n),
                            "lamina": name.removeprefix("lamina ") + f" {nt}t",
                            "baseline": f"{base} {nt}t", "lamina_value": gf,
                            "baseline_value": work / statistics.median(times[base]) / 1e9,
                            "unit": "GFLOP/s", "ratio": ratio, "threads": nt,
                            "best_path": name == best, "cpu": model,
                            "round_ratios": [b / t for t, b in zip(times[name], times[base])]})
                print(f"{n} {nt}t " + "  ".join(
                    f"{k}: {work / statistics.median(v) / 1e9:.0f}" for k, v in times.items()),
                    flush=True)
    finally:
        cpu.set_num_threads(before_threads)
        cpu.set_bf16_gemm("best")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1024, 1536, 2048])
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = run(args.rounds, tuple(args.sizes), tuple(args.threads))
    info = machine()
    slug = re.sub(r"[^a-z0-9]+", "-", str(info.get("cpu", "cpu")).lower()).strip("-")
    out = Path(args.out) if args.out else HERE / "results" / f"bf16_gemm_{slug}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    header = ", ".join(f"{k} {v}" for k, v in info.items())
    shown = [{k: v for k, v in r.items() if k != "round_ratios"} for r in rows]
    text = (f"# bfloat16 GEMM (float32 sums), square n x n @ n x n\n\n{header}\n\n"
            f"Median over {args.rounds} interleaved rounds of the per-round speed ratio "
            f"(> 1: Lamina faster); GFLOP/s are medians.\n\n{table(shown)}\n")
    out.with_suffix(".md").write_text(text)
    print(table(shown))


if __name__ == "__main__":
    main()
