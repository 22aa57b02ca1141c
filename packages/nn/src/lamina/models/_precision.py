"""``--precision``: how a recipe's steps run, in float32 or mixed precision.

- ``fp32``: as written;
- ``bf16``: forward passes under ``autocast(dtype=bfloat16)`` (float32 weights and
  gradients; bfloat16 has float32's range, so no loss scaling);
- ``fp16``: forward passes under ``autocast(dtype=float16)``, and a
  :class:`~lamina.amp.GradScaler` that scales the loss and skips the steps whose
  gradients overflowed.
"""

from __future__ import annotations

from typing import Any

from lamina import ndarray as nd
from lamina.amp import GradScaler, autocast

PRECISIONS = ("fp32", "bf16", "fp16")
_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


class Precision:
    """One run's ``--precision``: the forward's autocast region and the loss scaling.

    Raises:
        ValueError: the device cannot store the narrow dtype.
    """

    def __init__(self, name: str, device: Any) -> None:
        if name not in PRECISIONS:
            raise ValueError(f"--precision must be one of {', '.join(PRECISIONS)}, got {name!r}")
        dev = nd.get_device(device)
        self.name = name
        self.dtype = _DTYPES.get(name)
        if self.dtype is not None and self.dtype not in dev.dtypes:
            raise ValueError(f"--precision {name}: device {dev} has no {self.dtype} (it lists "
                             f"{', '.join(dev.dtypes)}); use --precision fp32 there")
        self.device_type = dev.type
        self.scaler = GradScaler(enabled=name == "fp16")

    def autocast(self) -> autocast:
        """The region a forward pass runs in (off for fp32)."""
        return autocast(self.device_type, dtype=self.dtype or "bfloat16",
                        enabled=self.dtype is not None)

    def backward(self, loss: Any) -> None:
        """``loss.backward()``, scaled for fp16."""
        self.scaler.scale(loss).backward()

    def unscale(self, optimizer: Any) -> None:
        """Bring the gradients back to their true size (before clipping them)."""
        self.scaler.unscale_(optimizer)

    def step(self, optimizer: Any) -> None:
        """``optimizer.step()``, skipped for fp16 when a gradient overflowed."""
        self.scaler.step(optimizer)
        self.scaler.update()
