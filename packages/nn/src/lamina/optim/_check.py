"""Hyperparameter checks shared by the optimizers."""

from __future__ import annotations

from typing import Any


def check_range(owner: str, group: dict[str, Any], name: str, low: float = 0.0,
                high: float | None = None, high_open: bool = False) -> None:
    """Raise ValueError unless ``low <= group[name]`` and it is below/at ``high``.

    NaN fails every comparison, so it is rejected too (as PyTorch does), rather
    than training to NaN.
    """
    value = group[name]
    bad = not isinstance(value, (int, float)) or not value >= low
    if high is not None and not bad:
        bad = value >= high if high_open else value > high
    if bad:
        upper = "" if high is None else (f" and < {high}" if high_open else f" and <= {high}")
        raise ValueError(f"{owner}: invalid {name} {value!r}; expected >= {low}{upper}")


def check_betas(owner: str, group: dict[str, Any]) -> None:
    """Raise ValueError unless ``group["betas"]`` is two values in [0, 1)."""
    betas = group["betas"]
    ok = isinstance(betas, (tuple, list)) and len(betas) == 2 \
        and all(isinstance(b, (int, float)) and 0.0 <= b < 1.0 for b in betas)
    if not ok:
        raise ValueError(f"{owner}: invalid betas {betas!r}; expected two values in [0, 1)")
