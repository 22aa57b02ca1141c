"""GPU benchmark of Lamina's cuda backend against PyTorch on the same device.

    python benchmarks/bench_cuda.py [--out DIR] [--quick]

Measures, with the same host-side timing for both (warm-up, synchronise,
N calls, synchronise):

* device-to-device copy bandwidth (torch ``copy_``; the reference for the rest);
* SGEMM at 4096 (Lamina ``matmul`` vs ``torch.matmul`` with TF32 off), TFLOP/s;
* elementwise add and last-axis reductions (sum, max, a single huge row,
  softmax), GB/s of compulsory traffic, as a fraction of the copy bandwidth.

The goals of issue 6 are printed with each row: SGEMM >= 50% of PyTorch's
FP32 rate (moonshot 80%); elementwise and reductions >= 70% of the measured
bandwidth. Writes ``bench_cuda.json`` and ``bench_cuda.md`` to ``--out``
(default ``benchmarks/results``). Exits 0 with a message when there is no GPU.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np


def _time(fn: Callable[[], object], sync: Callable[[], object], repeat: int) -> float:
    """Best-of-3 mean seconds per call of ``fn`` over ``repeat`` calls."""
    fn()
    sync()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def _lamina_buffer(cuda: Any, array: np.ndarray) -> Any:
    buf = cuda.Array(array.size, array.dtype.name)
    cuda.from_numpy(array.reshape(-1), buf)
    return buf


def _sgemm(cuda: Any, torch: Any, size: int, rng: np.random.Generator) -> dict[str, Any]:
    """One square SGEMM row: TFLOP/s of Lamina and (when given) torch, TF32 off."""
    ma = rng.standard_normal(size * size, dtype=np.float32)
    mb = rng.standard_normal(size * size, dtype=np.float32)
    la, lb = _lamina_buffer(cuda, ma), _lamina_buffer(cuda, mb)
    lo = cuda.Array(size * size, "float32")
    flops, reps = 2 * size**3, (10 if size >= 4096 else 50)
    r: dict[str, Any] = {"name": f"matmul {size}^3 float32", "unit": "TFLOP/s"}
    r["lamina"] = flops / _time(lambda: cuda.matmul(la, lb, lo, size, size, size),
                                cuda.synchronize, reps) / 1e12
    if torch is not None:
        ta = torch.from_numpy(ma).cuda().view(size, size)
        tb = torch.from_numpy(mb).cuda().view(size, size)
        tc = torch.empty(size, size, device="cuda")
        r["torch"] = flops / _time(lambda: torch.matmul(ta, tb, out=tc),
                                   torch.cuda.synchronize, reps) / 1e12
        r["fraction_of_torch"] = r["lamina"] / r["torch"]
        r["goal"] = ">= 0.50 of torch FP32 (moonshot 0.80)"
        r["met"] = r["fraction_of_torch"] >= 0.50
        # Correctness of the timed kernel, not just its speed.
        got = cuda.to_numpy(lo, (size, size), (size, 1), 0)
        r["max_abs_err_vs_torch"] = float(np.abs(got - tc.cpu().numpy()).max())
    return r


def run(quick: bool) -> dict[str, Any]:
    from lamina_backend_cuda import backend as cuda

    torch: Any
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    have_torch = torch is not None and torch.cuda.is_available()
    if have_torch:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        tsync = torch.cuda.synchronize
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    scale = 4 if quick else 1

    # Device bandwidth: a copy reads and writes every byte.
    n = (64 << 20) // scale
    x = rng.standard_normal(n, dtype=np.float32)
    a, out = _lamina_buffer(cuda, x), cuda.Array(n, "float32")
    t_l = _time(lambda: cuda.compact(a, out, (n,), (1,), 0), cuda.synchronize, 20)
    copy_gbs = 2 * 4 * n / t_l / 1e9
    row: dict[str, Any] = {"name": f"copy {n} float32", "unit": "GB/s", "lamina": copy_gbs}
    if have_torch:
        ta, tb = torch.from_numpy(x).cuda(), torch.empty(n, device="cuda")
        t_t = _time(lambda: tb.copy_(ta), tsync, 20)
        row["torch"] = 2 * 4 * n / t_t / 1e9
        copy_gbs = max(copy_gbs, float(row["torch"]))
    row["goal"] = "reference"
    rows.append(row)

    def bandwidth(name: str, nbytes: int, lamina_fn: Callable[[], object],
                  torch_fn: Callable[[], object] | None, repeat: int = 20) -> None:
        r: dict[str, Any] = {"name": name, "unit": "GB/s"}
        r["lamina"] = nbytes / _time(lamina_fn, cuda.synchronize, repeat) / 1e9
        if torch_fn is not None:
            r["torch"] = nbytes / _time(torch_fn, tsync, repeat) / 1e9
        r["fraction_of_copy"] = r["lamina"] / copy_gbs
        r["goal"] = ">= 0.70 of copy bandwidth"
        r["met"] = r["fraction_of_copy"] >= 0.70
        rows.append(r)

    # Elementwise add: two reads and one write per element.
    y = rng.standard_normal(n, dtype=np.float32)
    b = _lamina_buffer(cuda, y)
    tx: Any = None
    ty: Any = None
    tz: Any = None
    if have_torch:
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        tz = torch.empty_like(tx)
    bandwidth(f"ewise_add {n} float32", 3 * 4 * n, lambda: cuda.ewise_add(a, b, out),
              (lambda: torch.add(tx, ty, out=tz)) if have_torch else None)

    # Reductions over the last axis.
    for shape in ((4096, n // 4096), (1, n)):
        r_rows, size = shape
        red = cuda.Array(r_rows, "float32")
        tin = tx.view(r_rows, size) if have_torch else None
        for op in ("sum", "max"):
            kernel = getattr(cuda, f"reduce_{op}")
            tfn: Callable[[], object] | None = None
            if have_torch:
                tfn = partial(torch.sum if op == "sum" else torch.amax, tin, dim=-1)
            bandwidth(f"reduce_{op} {r_rows}x{size} float32", 4 * n,
                      partial(kernel, a, red, size), tfn)
    sm_rows, sm_size = 4096, 4096 // scale
    sm = _lamina_buffer(cuda, x[: sm_rows * sm_size])
    sm_out = cuda.Array(sm_rows * sm_size, "float32")
    tsm = tx[: sm_rows * sm_size].view(sm_rows, sm_size) if have_torch else None
    bandwidth(f"softmax_last {sm_rows}x{sm_size} float32", 2 * 4 * sm_rows * sm_size,
              lambda: cuda.softmax_last(sm, sm_out, sm_size),
              (lambda: torch.softmax(tsm, dim=-1)) if have_torch else None)

    # SGEMM.
    for size in ((1024, 4096) if not quick else (1024,)):
        rows.append(_sgemm(cuda, torch if have_torch else None, size, rng))

    device = torch.cuda.get_device_name(0) if have_torch else "cuda:0"
    return {"device": device, "torch": torch.__version__ if torch else None,
            "python": platform.python_version(), "quick": quick,
            "memory_stats": cuda.memory_stats(), "rows": rows}


def _table(result: dict[str, Any]) -> str:
    lines = [f"# Lamina cuda backend vs PyTorch on {result['device']}", "",
             f"torch {result['torch']}, python {result['python']}", "",
             "| benchmark | unit | lamina | torch | ratio | goal | met |",
             "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        ratio = r.get("fraction_of_torch", r.get("fraction_of_copy"))
        cells = [r["name"], r["unit"], f"{r['lamina']:.1f}",
                 f"{r['torch']:.1f}" if "torch" in r else "-",
                 f"{ratio:.2f}" if ratio is not None else "-",
                 r.get("goal", ""), str(r.get("met", ""))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args(argv)
    try:
        from lamina_backend_cuda import backend as cuda
    except ImportError as exc:
        print(f"bench_cuda: lamina-backend-cuda is not installed ({exc}); skipping")
        return 0
    if not cuda.is_available():
        print(f"bench_cuda: no usable GPU ({cuda.unavailable_reason()}); skipping")
        return 0
    result = run(args.quick)
    table = _table(result)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_cuda.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "bench_cuda.md").write_text(table)
    print(f"bench_cuda: wrote {out / 'bench_cuda.json'} and {out / 'bench_cuda.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
