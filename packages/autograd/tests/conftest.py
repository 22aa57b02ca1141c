"""Devices under test: every available backend of lamina.ndarray, with its dtypes."""

from __future__ import annotations

import sys
from pathlib import Path

import lamina.ndarray as nd

sys.path.insert(0, str(Path(__file__).parent))  # op_records sits beside the tests

DEVICES = [b.name for b in nd.list_backends() if b.status == "available"]
_DTYPES = {b.name: b.dtypes for b in nd.list_backends()}


def device_dtypes() -> list[tuple[str, str]]:
    """(device, dtype) pairs: float32 everywhere, float64 where the backend lists it."""
    return [(dev, dt) for dev in DEVICES for dt in ("float32", "float64")
            if dt in _DTYPES[dev]]


def float64_device(kernel: str | None = None) -> str:
    """A device that supports float64 (numpy always does), in ``kernel`` too when given
    (an optional kernel, such as the records' ``kernel``)."""
    return next(dev for dev in DEVICES if "float64" in _DTYPES[dev] and (
        kernel is None or "float64" in nd.get_device(dev).kernel_dtypes[kernel]))
