"""Losses: CrossEntropyLoss, NLLLoss, MSELoss (module forms of the functional ones)."""

from __future__ import annotations

from lamina.autograd import Tensor

from . import functional as F
from ._module import Module

__all__ = ["CrossEntropyLoss", "MSELoss", "NLLLoss"]


def _check_reduction(owner: str, reduction: str) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{owner}: reduction must be 'mean', 'sum' or 'none', "
                         f"got {reduction!r}")
    return reduction


class CrossEntropyLoss(Module):
    """Softmax cross-entropy of integer class targets.

    Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        label_smoothing: eps in [0, 1]; the target becomes (1 - eps) one-hot + eps / C.

    Shape:
        logits (N, C), target (N,) int64 -> scalar, or (N,) with ``"none"``.

    Example:
        >>> from lamina import autograd
        >>> loss = CrossEntropyLoss()(autograd.zeros(2, 4), autograd.tensor([1, 2]))
        >>> round(loss.item(), 4)
        1.3863
    """

    def __init__(self, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.reduction = _check_reduction("CrossEntropyLoss", reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], "
                             f"got {label_smoothing}")
        self.label_smoothing = label_smoothing

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(logits, target, self.reduction, self.label_smoothing)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, label_smoothing={self.label_smoothing}"


class NLLLoss(Module):
    """Negative log likelihood: input (N, C) log-probabilities, target (N,) int64."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _check_reduction("NLLLoss", reduction)

    def forward(self, log_probs: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(log_probs, target, self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class MSELoss(Module):
    """Mean squared error between input and target of the same shape."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _check_reduction("MSELoss", reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"
