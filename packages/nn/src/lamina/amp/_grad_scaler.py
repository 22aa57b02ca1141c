"""GradScaler: dynamic loss scaling for float16 training (``torch.amp.GradScaler``).

float16 gradients underflow to zero below about 6e-8. Scaling the loss by S
before ``backward`` scales every gradient by S, which keeps small ones
representable; ``unscale_`` divides them again before the optimizer uses them.
S starts large and halves whenever a step's gradients hold an inf or NaN (that
step is skipped), and doubles after ``growth_interval`` steps without one.
"""

from __future__ import annotations

import math
from typing import Any

from lamina.autograd import Tensor

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Scales the loss, unscales the gradients, skips steps that overflowed.

    Args:
        device: accepted for PyTorch's signature (the scale is a host number).
        init_scale: the first scale.
        growth_factor: what the scale is multiplied by after ``growth_interval``
            steps in a row without an inf or NaN gradient (> 1).
        backoff_factor: what it is multiplied by after one (in (0, 1)).
        growth_interval: that number of steps (>= 1).
        enabled: False makes every method a pass-through (``scale`` returns its
            argument, ``step`` calls the optimizer's), as in PyTorch.

    Use per step: ``scaler.scale(loss).backward()``, optionally
    ``scaler.unscale_(opt)`` (to clip gradients), ``scaler.step(opt)``,
    ``scaler.update()``.
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got "
                             f"{backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) \
                or growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval must be an int >= 1, got "
                             f"{growth_interval!r}")
        if not (init_scale > 0 and math.isfinite(init_scale)):
            raise ValueError(f"GradScaler: init_scale must be positive and finite, got "
                             f"{init_scale}")
        self.device = device
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        # per optimizer (by id) this step: its stage and whether its gradients overflowed
        self._stages: dict[int, tuple[str, bool]] = {}

    # ------------------------------------------------------------------ the step
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists/tuples of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list or tuple of them, "
                        f"got {type(outputs).__name__}")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any
        holds an inf or NaN. Once per optimizer and step, before ``step``.

        Raises:
            RuntimeError: called twice for one optimizer before ``update``, or after
                ``step``.
        """
        if not self._enabled:
            return
        stage, _ = self._stages.get(id(optimizer), (_READY, False))
        if stage == _UNSCALED:
            raise RuntimeError("GradScaler.unscale_: already called on this optimizer since "
                               "the last update()")
        if stage == _STEPPED:
            raise RuntimeError("GradScaler.unscale_: called after step(); call it before")
        inverse = 1.0 / self._scale
        check = None  # the sum of grad * 0 over every gradient: NaN iff one holds inf/NaN
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad._data * inverse
                p.grad._data = g
                zero = (g * 0.0).sum().astype("float32")
                check = zero if check is None else check + zero
        found = check is not None and not math.isfinite(float(check.numpy()))
        self._stages[id(optimizer)] = (_UNSCALED, found)

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, unless one holds an
        inf or NaN (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: closures are not supported (as in PyTorch)")
        stage, _ = self._stages.get(id(optimizer), (_READY, False))
        if stage == _STEPPED:
            raise RuntimeError("GradScaler.step: already called on this optimizer since the "
                               "last update()")
        if stage == _READY:
            self.unscale_(optimizer)
        _, found = self._stages[id(optimizer)]
        self._stages[id(optimizer)] = (_STEPPED, found)
        return None if found else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale for the next step: ``new_scale`` when given, else backed off
        after an overflow in any optimizer this step, or grown after
        ``growth_interval`` clean steps.

        Raises:
            RuntimeError: no ``step`` or ``unscale_`` since the last update (and no
                ``new_scale``).
        """
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor)
                                else new_scale)
        elif not self._stages:
            raise RuntimeError("GradScaler.update: no step() or unscale_() since the last "
                               "update()")
        elif any(found for _, found in self._stages.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._stages.clear()

    # ------------------------------------------------------------------ state
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled, as PyTorch)."""
        return self._scale if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict[str, Any]:
        """The scale and its schedule (empty when disabled, as PyTorch)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` gave.

        Raises:
            RuntimeError: ``state_dict`` is empty (from a disabled scaler).
        """
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (it "
                               "came from a disabled GradScaler)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def __repr__(self) -> str:
        return f"GradScaler(scale={self.get_scale()}, enabled={self._enabled})"


