"""Adadelta."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._check import check_range
from ._optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): step sizes from running averages of g^2 and of the updates.

    Update rule for each parameter p with gradient g::

        if weight_decay != 0:  g = g + weight_decay * p
        v = rho * v + (1 - rho) * g^2
        d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d^2
        p = p - lr * d

    Args:
        params: parameters or parameter groups.
        lr: scale applied to the update (>= 0), 1.0 by default.
        rho: decay of both running averages, in [0, 1].
        eps: added inside both square roots (>= 0).
        weight_decay: L2 penalty (>= 0).

    Example:
        >>> from lamina import nn
        >>> opt = Adadelta(nn.Linear(2, 1).parameters(), lr=1.0, rho=0.9)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay})

    def _validate(self, group: dict[str, Any]) -> None:
        for name in ("lr", "eps", "weight_decay"):
            check_range("Adadelta", group, name)
        check_range("Adadelta", group, "rho", 0.0, 1.0)

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        rho, eps = group["rho"], group["eps"]
        if not state:
            state["step"] = 0
            state["square_avg"] = nd.zeros(*p.shape, dtype=p.dtype, device=p.device)
            state["acc_delta"] = nd.zeros(*p.shape, dtype=p.dtype, device=p.device)
        state["step"] += 1
        # p in place, in one pass where the device has ewise_program
        p, state["square_avg"], state["acc_delta"] = nd.adadelta_step_(
            p, grad, state["square_avg"], state["acc_delta"], lr=group["lr"], rho=rho, eps=eps,
            weight_decay=group["weight_decay"])
        return p
