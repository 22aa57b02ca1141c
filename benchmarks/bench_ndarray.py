"""NDArray against raw numpy, on the numpy backend (and on cpu when installed).

Measures the per-op overhead of a small elementwise op and the throughput of
large ops, where a thin layer over numpy should cost almost nothing.
"""
# The timed lambdas close over loop variables on purpose: each is run by
# interleaved() inside the iteration that made it.
# ruff: noqa: B023

from __future__ import annotations

import lamina.ndarray as nd
import numpy as np
from _timing import interleaved, row


def _devices() -> list[str]:
    return [b.name for b in nd.list_backends() if b.status == "available"
            and b.name in ("numpy", "cpu")]


def run(repeats: int = 3) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(0)
    for dev in _devices():
        label = f"lamina[{dev}]"
        x1 = np.ones(1, np.float32)
        a1 = nd.array(x1, device=dev)
        t = interleaved({"l": lambda: a1 + a1, "n": lambda: x1 + x1}, repeats, 0.1)
        rows.append(row("add (overhead)", "1", label, "numpy", t["l"] * 1e6, t["n"] * 1e6,
                        "us", False))
        big = rng.standard_normal(1 << 24).astype(np.float32)
        ab = nd.array(big, device=dev)
        t = interleaved({"l": lambda: ab + ab, "n": lambda: big + big}, repeats)
        gbs = [3 * big.nbytes / t[k] / 1e9 for k in ("l", "n")]
        rows.append(row("add", "16M", label, "numpy", *gbs, "GB/s", True))
        sq = rng.standard_normal((4096, 4096)).astype(np.float32)
        asq = nd.array(sq, device=dev)
        t = interleaved({"l": lambda: asq.T.compact(),
                         "n": lambda: np.ascontiguousarray(sq.T)}, repeats)
        gbs = [2 * sq.nbytes / t[k] / 1e9 for k in ("l", "n")]
        rows.append(row("transpose compact", "4096^2", label, "numpy", *gbs, "GB/s", True))
        for axis in (1, 0):
            t = interleaved({"l": lambda: asq.sum(axis=axis),
                             "n": lambda: sq.sum(axis=axis)}, repeats)
            gbs = [sq.nbytes / t[k] / 1e9 for k in ("l", "n")]
            name = "sum last axis" if axis == 1 else "sum first axis"
            rows.append(row(name, "4096^2", label, "numpy", *gbs, "GB/s", True))
        for n in (512, 1024):
            m = rng.standard_normal((n, n)).astype(np.float32)
            am = nd.array(m, device=dev)
            t = interleaved({"l": lambda: am @ am, "n": lambda: m @ m}, repeats)
            flops = [2 * n ** 3 / t[k] / 1e9 for k in ("l", "n")]
            rows.append(row("matmul", f"{n}", label, "numpy", *flops, "GFLOP/s", True))
    return rows
