"""Adam and AdamW."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._check import check_range
from ._optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), with L2 weight decay added to the gradient.

    Update rule for each parameter p with gradient g at step t (from 1)::

        if weight_decay != 0:  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        if amsgrad:  v_max = max(v_max, v);  v_hat = v_max  else  v_hat = v
        p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0).
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: L2 penalty (>= 0).
        amsgrad: use the running maximum of v.
    """

    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "amsgrad": amsgrad})

    def _validate(self, group: dict[str, Any]) -> None:
        owner = type(self).__name__
        for name in ("lr", "eps", "weight_decay"):
            check_range(owner, group, name)
        betas = group["betas"]
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{owner}: invalid betas {betas!r}; expected two values in [0, 1)")

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        if not state:
            state["step"] = 0
            state["exp_avg"] = nd.zeros(*p.shape, dtype=p.dtype, device=p.device)
            state["exp_avg_sq"] = nd.zeros(*p.shape, dtype=p.dtype, device=p.device)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = nd.zeros(*p.shape, dtype=p.dtype, device=p.device)
        state["step"] += 1
        beta1, beta2 = group["betas"]
        new, state["exp_avg"], state["exp_avg_sq"], vmax = nd.adam_step(
            p, grad, state["exp_avg"], state["exp_avg_sq"], lr=group["lr"], beta1=beta1,
            beta2=beta2, eps=group["eps"], step=state["step"],
            weight_decay=group["weight_decay"], decoupled=self._decoupled,
            max_exp_avg_sq=state.get("max_exp_avg_sq") if group["amsgrad"] else None)
        if vmax is not None:
            state["max_exp_avg_sq"] = vmax
        return new


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019).

    Update rule for each parameter p with gradient g at step t (from 1)::

        p = p * (1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        if amsgrad:  v_max = max(v_max, v);  v_hat = v_max  else  v_hat = v
        p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0).
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: decoupled decay factor (>= 0), 0.01 by default.
        amsgrad: use the running maximum of v.
    """

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)
