"""RMSprop and Adagrad."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._check import check_range
from ._optimizer import Optimizer

__all__ = ["Adagrad", "RMSprop"]


def _zeros_like(p: nd.NDArray, value: float = 0.0) -> nd.NDArray:
    return nd.full(p.shape, value, dtype=p.dtype, device=p.device)


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e), optionally centered and with momentum.

    Update rule for each parameter p with gradient g::

        if weight_decay != 0:  g = g + weight_decay * p
        s = alpha * s + (1 - alpha) * g^2
        if centered:  a = alpha * a + (1 - alpha) * g;  d = sqrt(s - a^2) + eps
        else:         d = sqrt(s) + eps
        if momentum > 0:  b = momentum * b + g / d;  p = p - lr * b
        else:             p = p - lr * g / d

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0).
        alpha: smoothing constant (>= 0).
        eps: added to the denominator (>= 0).
        weight_decay: L2 penalty (>= 0).
        momentum: momentum factor (>= 0).
        centered: normalise by the estimated variance instead of the second moment.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False) -> None:
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps,
                                  "weight_decay": weight_decay, "momentum": momentum,
                                  "centered": centered})

    def _validate(self, group: dict[str, Any]) -> None:
        for name in ("lr", "alpha", "eps", "weight_decay", "momentum"):
            check_range("RMSprop", group, name)

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        alpha = group["alpha"]
        if group["weight_decay"]:
            grad = grad + p * group["weight_decay"]
        if not state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(p)
        state["step"] += 1
        sq = state["square_avg"] = state["square_avg"] * alpha + grad * grad * (1.0 - alpha)
        if group["centered"]:
            avg = state["grad_avg"] = state["grad_avg"] * alpha + grad * (1.0 - alpha)
            denom = (sq - avg * avg).sqrt() + group["eps"]
        else:
            denom = sq.sqrt() + group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * group["momentum"] \
                + grad / denom
            return p - buf * group["lr"]
        else:
            return p - (grad / denom) * group["lr"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011).

    Update rule for each parameter p with gradient g at step t (from 1)::

        if weight_decay != 0:  g = g + weight_decay * p
        lr_t = lr / (1 + (t - 1) * lr_decay)
        s = s + g^2
        p = p - lr_t * g / (sqrt(s) + eps)

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0).
        lr_decay: learning-rate decay per step (>= 0).
        weight_decay: L2 penalty (>= 0).
        initial_accumulator_value: starting value of s (>= 0).
        eps: added to the denominator (>= 0).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10) -> None:
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value,
                                  "eps": eps})

    def _validate(self, group: dict[str, Any]) -> None:
        for name in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_range("Adagrad", group, name)

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        if not state:
            state["step"] = 0
            state["sum"] = _zeros_like(p, group["initial_accumulator_value"])
        state["step"] += 1
        if group["weight_decay"]:
            grad = grad + p * group["weight_decay"]
        lr = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        s = state["sum"] = state["sum"] + grad * grad
        return p - (grad / (s.sqrt() + group["eps"])) * lr
