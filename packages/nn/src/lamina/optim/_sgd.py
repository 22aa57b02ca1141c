"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._check import check_range
from ._optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's update, step for step).

    Update rule for each parameter p with gradient g at step t::

        if weight_decay != 0:  g = g + weight_decay * p
        if momentum != 0:
            b = g                                     if t == 1
            b = momentum * b + (1 - dampening) * g    otherwise
            g = g + momentum * b  if nesterov  else  b
        p = p - lr * g

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0).
        momentum: momentum factor (>= 0).
        dampening: dampening of the momentum's gradient term.
        weight_decay: L2 penalty (>= 0).
        nesterov: Nesterov momentum (needs momentum > 0 and dampening = 0).

    Example:
        >>> from lamina import nn
        >>> opt = SGD(nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov})

    def _validate(self, group: dict[str, Any]) -> None:
        for name in ("lr", "momentum", "weight_decay"):
            check_range("SGD", group, name)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: nesterov momentum requires momentum > 0 and dampening = 0")

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        if group["weight_decay"]:
            grad = grad + p * group["weight_decay"]
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.copy()
            elif group["dampening"]:
                buf = buf * momentum + grad * (1.0 - group["dampening"])
            else:
                buf = buf * momentum + grad
            state["momentum_buffer"] = buf
            grad = grad + buf * momentum if group["nesterov"] else buf
        # in place, one pass where the device has ewise_program: no lr * g temporary
        return nd.add_scaled_(p, grad, -group["lr"])
