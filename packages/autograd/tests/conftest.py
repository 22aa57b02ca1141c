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


def float64_device() -> str:
    """A device that supports float64 (numpy always does)."""
    return next(dev for dev in DEVICES if "float64" in _DTYPES[dev])
