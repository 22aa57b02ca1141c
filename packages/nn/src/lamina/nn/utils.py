"""Training utilities: gradient clipping.

Example:
    >>> from lamina import autograd, nn
    >>> net = nn.Linear(3, 1)
    >>> net(autograd.ones(4, 3)).sum().backward()
    >>> float(clip_grad_norm_(net.parameters(), 0.5)) > 0
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from lamina import autograd
from lamina.autograd import Tensor

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale gradients in place so that their joint norm is at most ``max_norm``.

    The norm is taken over all gradients together, as if concatenated; when
    it exceeds ``max_norm`` every gradient is multiplied by
    ``max_norm / (norm + 1e-6)``. A NaN or infinite norm (a NaN or inf
    gradient) propagates into every gradient, as in PyTorch, unless
    ``error_if_nonfinite`` asks for an error instead.

    Args:
        parameters: tensors whose ``.grad`` to clip (those without one are skipped).
        max_norm: the largest allowed norm.
        norm_type: p of the p-norm; ``math.inf`` for the max-abs norm.
        error_if_nonfinite: raise when the norm is nan or inf.

    Returns:
        The total norm before clipping, a scalar Tensor.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad.data for p in params if p.grad is not None]
    if not max_norm >= 0:  # NaN too
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0, got {max_norm}")
    if not grads:
        return autograd.tensor(0.0)
    if norm_type == math.inf:
        total = max(float(abs(g).max()) for g in grads)
    elif norm_type == 2.0:  # g * g: the power kernel is ~10x slower on large gradients
        total = math.sqrt(sum(float((g * g).sum()) for g in grads))
    else:
        total = sum(float((abs(g) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                           f"gradients is {total}; pass error_if_nonfinite=False to allow it")
    coef = max_norm / (total + 1e-6)
    # A NaN norm scales every gradient by NaN, as PyTorch does: a NaN gradient
    # must not pass through unscaled as if it were small.
    if coef < 1.0 or math.isnan(coef):
        for p in params:
            if p.grad is not None:
                p.grad.data = p.grad.data * coef
    return autograd.tensor(total)
