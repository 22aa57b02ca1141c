"""Shared timing helpers: interleaved repeats, medians, one row format."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def seconds_per_call(fn: Callable[[], object], min_time: float = 0.2,
                     clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of ``fn`` (by ``clock``) after a warm-up call, over >= ``min_time``."""
    fn()
    calls, start = 0, clock()
    while True:
        fn()
        calls += 1
        elapsed = clock() - start
        if elapsed >= min_time:
            return elapsed / calls


def interleaved(candidates: dict[str, Callable[[], object]], repeats: int = 3,
                min_time: float = 0.2) -> dict[str, float]:
    """Median seconds per call of each candidate, measured in alternation."""
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            samples[name].append(seconds_per_call(fn, min_time))
    return {name: statistics.median(s) for name, s in samples.items()}


def row(op: str, size: str, ours: str, theirs: str, value_ours: float, value_theirs: float,
        unit: str, higher_is_better: bool, **extra: object) -> dict[str, object]:
    """One result row; ``ratio`` > 1 always means Lamina is better."""
    ratio = value_ours / value_theirs if higher_is_better else value_theirs / value_ours
    return {"op": op, "size": size, "lamina": ours, "baseline": theirs,
            "lamina_value": value_ours, "baseline_value": value_theirs, "unit": unit,
            "ratio": ratio, **extra}
