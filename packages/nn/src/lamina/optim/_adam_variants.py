"""Adamax, NAdam and RAdam: Adam's moments with another step rule."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._check import check_betas, check_range
from ._optimizer import Optimizer

__all__ = ["Adamax", "NAdam", "RAdam"]


def _zeros(p: nd.NDArray) -> nd.NDArray:
    return nd.zeros(*p.shape, dtype=p.dtype, device=p.device)


def _decay(p: nd.NDArray, grad: nd.NDArray, group: dict[str, Any]
           ) -> tuple[nd.NDArray, nd.NDArray]:
    """Apply weight decay: decoupled to ``p``, or as L2 to ``grad``."""
    wd = group["weight_decay"]
    if not wd:
        return p, grad
    if group.get("decoupled_weight_decay"):
        return p * (1.0 - group["lr"] * wd), grad
    return p, grad + p * wd


class _AdamLike(Optimizer):
    """Shared validation: lr, eps, weight_decay >= 0 and betas in [0, 1)."""

    _extra_ranges: tuple[str, ...] = ()

    def _validate(self, group: dict[str, Any]) -> None:
        owner = type(self).__name__
        for name in ("lr", "eps", "weight_decay", *self._extra_ranges):
            check_range(owner, group, name)
        check_betas(owner, group)

    def _moments(self, p: nd.NDArray, grad: nd.NDArray, group: dict[str, Any],
                 state: dict[str, Any]) -> tuple[nd.NDArray, nd.NDArray]:
        """Advance ``step`` and both running moments; return (m, v)."""
        beta1, beta2 = group["betas"]
        state["step"] += 1
        m = state["exp_avg"] = state["exp_avg"] * beta1 + grad * (1.0 - beta1)
        v = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + grad * grad * (1.0 - beta2)
        return m, v


class Adamax(_AdamLike):
    """Adamax (Kingma & Ba, 2015): Adam with an infinity-norm second moment.

    Update rule for each parameter p with gradient g at step t (from 1)::

        if weight_decay != 0:  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0), 2e-3 by default.
        betas: (beta1, beta2), each in [0, 1).
        eps: keeps u away from zero (>= 0).
        weight_decay: L2 penalty (>= 0).

    Example:
        >>> from lamina import nn
        >>> opt = Adamax(nn.Linear(2, 1).parameters(), lr=2e-3)
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay})

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        if not state:
            state.update(step=0, exp_avg=_zeros(p), exp_inf=_zeros(p))
        p, grad = _decay(p, grad, group)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        m = state["exp_avg"] = state["exp_avg"] * beta1 + grad * (1.0 - beta1)
        u = state["exp_inf"] = nd.maximum(state["exp_inf"] * beta2, grad.abs() + group["eps"])
        return p - m / u * (group["lr"] / (1.0 - beta1 ** state["step"]))


class NAdam(_AdamLike):
    """NAdam (Dozat, 2016): Adam with Nesterov momentum and a momentum schedule.

    Update rule for each parameter p with gradient g at step t (from 1)::

        if weight_decay != 0:
            p = p * (1 - lr * weight_decay)  if decoupled_weight_decay
            g = g + weight_decay * p         otherwise
        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))
        P = P * mu_t                                   (P starts at 1)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        d = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / d
              - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0), 2e-3 by default.
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: weight decay (>= 0).
        momentum_decay: how fast mu_t approaches beta1 (>= 0).
        decoupled_weight_decay: decay the weights directly, as AdamW does.

    Example:
        >>> from lamina import nn
        >>> opt = NAdam(nn.Linear(2, 1).parameters(), lr=2e-3, momentum_decay=4e-3)
    """

    _extra_ranges = ("momentum_decay",)

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay})

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        if not state:
            state.update(step=0, mu_product=1.0, exp_avg=_zeros(p), exp_avg_sq=_zeros(p))
        p, grad = _decay(p, grad, group)
        m, v = self._moments(p, grad, group, state)
        t, lr = state["step"], group["lr"]
        beta1, beta2 = group["betas"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * group["momentum_decay"]))
        product = state["mu_product"] = float(state["mu_product"]) * mu
        denom = (v / (1.0 - beta2**t)).sqrt() + group["eps"]
        p = p - grad / denom * (lr * (1.0 - mu) / (1.0 - product))
        return p - m / denom * (lr * mu_next / (1.0 - product * mu_next))


class RAdam(_AdamLike):
    """RAdam (Liu et al., 2020): Adam whose adaptive step is rectified while v is noisy.

    Update rule for each parameter p with gradient g at step t (from 1)::

        if weight_decay != 0:
            p = p * (1 - lr * weight_decay)  if decoupled_weight_decay
            g = g + weight_decay * p         otherwise
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        m_hat = m / (1 - beta1^t)
        if rho_t > 5:
            r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
            p = p - lr * m_hat * r * sqrt(1 - beta2^t) / (sqrt(v) + eps)
        else:
            p = p - lr * m_hat

    Args:
        params: parameters or parameter groups.
        lr: learning rate (>= 0).
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: weight decay (>= 0).
        decoupled_weight_decay: decay the weights directly, as AdamW does.

    Example:
        >>> from lamina import nn
        >>> opt = RAdam(nn.Linear(2, 1).parameters(), lr=1e-3)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay})

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        p = param._data
        if not state:
            state.update(step=0, exp_avg=_zeros(p), exp_avg_sq=_zeros(p))
        p, grad = _decay(p, grad, group)
        m, v = self._moments(p, grad, group, state)
        t, lr = state["step"], group["lr"]
        beta1, beta2 = group["betas"]
        correction2 = 1.0 - beta2**t
        m_hat = m / (1.0 - beta1**t)
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * t * beta2**t / correction2
        if rho_t <= 5.0:  # too few steps for a trustworthy variance: plain momentum SGD
            return p - m_hat * lr
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                         / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return p - m_hat / (v.sqrt() + group["eps"]) * (lr * rect * math.sqrt(correction2))
