"""ReduceLROnPlateau: cut the learning rate when a watched metric stops improving."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, SupportsFloat

from ._optimizer import Optimizer

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau:
    """Multiply every group's lr by ``factor`` after ``patience`` epochs without improvement.

    Unlike the epoch schedulers, ``step`` takes the metric (say the validation
    loss) and the lr depends on the metric's history, so it is not a closed form.

    An epoch improves on the best value so far when, in ``mode="min"``,
    ``metric < best * (1 - threshold)`` (``threshold_mode="rel"``) or
    ``metric < best - threshold`` (``"abs"``); ``"max"`` mirrors that. After a cut
    the scheduler waits ``cooldown`` epochs before counting bad epochs again. A
    cut never goes below the group's ``min_lr``, and changes smaller than ``eps``
    are skipped.

    Args:
        optimizer: the optimizer whose groups it drives.
        mode: ``"min"`` or ``"max"``.
        factor: multiplier of the lr on a cut (< 1).
        patience: bad epochs tolerated before a cut.
        threshold: what counts as an improvement (see above).
        threshold_mode: ``"rel"`` or ``"abs"``.
        cooldown: epochs to wait after a cut.
        min_lr: lower bound of the lr, one for all groups or one per group.
        eps: smallest lr change that is applied.

    Example:
        >>> from lamina import nn, optim
        >>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ReduceLROnPlateau(opt, factor=0.5, patience=1)
        >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0]:
        ...     sched.step(loss)
        >>> sched.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | Sequence[float] = 0.0,
                 eps: float = 1e-8) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: expected an Optimizer, "
                            f"got {type(optimizer).__name__}")
        if not factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1.0, got {factor}")
        groups = optimizer.param_groups
        if isinstance(min_lr, Sequence):
            if len(min_lr) != len(groups):
                raise ValueError(f"ReduceLROnPlateau: expected {len(groups)} min_lrs (one per "
                                 f"param group), got {len(min_lr)}")
            self.min_lrs = [float(m) for m in min_lr]
        else:
            self.min_lrs = [float(min_lr)] * len(groups)
        _check_modes(mode, threshold_mode)
        self.optimizer = optimizer
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.factor, self.patience, self.cooldown, self.eps = factor, patience, cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = self.last_epoch = 0
        self._last_lr = [group["lr"] for group in groups]

    def _is_better(self, value: float) -> bool:
        sign = 1.0 if self.mode == "min" else -1.0
        if self.threshold_mode == "rel":
            return sign * value < sign * self.best * (1.0 - sign * self.threshold)
        return sign * value < sign * self.best - self.threshold

    def step(self, metrics: SupportsFloat) -> None:
        """Record one epoch's metric and cut the lr if it has plateaued."""
        value = float(metrics)
        self.last_epoch += 1
        if self._is_better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown do not count
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                new_lr = max(float(group["lr"]) * self.factor, min_lr)
                if group["lr"] - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates after the last ``step``, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by :meth:`state_dict` (modes are checked first)."""
        _check_modes(state_dict.get("mode", self.mode),
                     state_dict.get("threshold_mode", self.threshold_mode))
        for key, value in state_dict.items():
            setattr(self, key, list(value) if isinstance(value, tuple) else value)


def _check_modes(mode: str, threshold_mode: str) -> None:
    if mode not in ("min", "max"):
        raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
    if threshold_mode not in ("rel", "abs"):
        raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', "
                         f"got {threshold_mode!r}")
