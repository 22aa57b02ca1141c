"""Functional forms of the layers and losses (stateless; weights are arguments).

Shapes use N for the batch, C for classes or channels, ``*`` for any
further dims.
"""

from __future__ import annotations

from typing import Any

from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError

__all__ = [
    "batch_norm", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "linear",
    "log_softmax", "mse_loss", "nll_loss", "one_hot", "relu", "sigmoid", "softmax", "tanh",
    "scaled_dot_product_attention",
]

_REDUCTIONS = ("mean", "sum", "none")


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``, one graph node (:func:`lamina.autograd.linear`).

    Args:
        x: (*, in_features).
        weight: (out_features, in_features).
        bias: (out_features,) or None.

    Returns:
        (*, out_features).
    """
    return ag.linear(x, weight, bias)


def relu(x: Tensor) -> Tensor:
    """max(x, 0), elementwise."""
    return x.relu()


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), elementwise."""
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    """tanh(x), elementwise."""
    return x.tanh()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: exact (erf) form, or ``approximate="tanh"``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return ag.gelu(x, approximate)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``."""
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """x - logsumexp(x) along ``dim``."""
    return x.log_softmax(dim)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p).

    Identity when ``training`` is False or ``p == 0``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    return ag.dropout(x, p, training=True)


def one_hot(target: Tensor, num_classes: int, dtype: Any = "float32") -> Tensor:
    """int64 (*,) -> (*, num_classes) of ``dtype`` with a 1 at each target."""
    return ag.one_hot(target, num_classes, dtype)


def _check_targets(op: str, logits: Tensor, target: Tensor) -> None:
    if logits.ndim != 2:
        raise ShapeError(f"{op}: expected input of shape (N, C), got {tuple(logits.shape)}")
    if tuple(target.shape) != (logits.shape[0],):
        raise ShapeError(f"{op}: expected target of shape ({logits.shape[0]},) for input "
                         f"{tuple(logits.shape)}, got {tuple(target.shape)}")
    if target.dtype != "int64":
        raise TypeError(f"{op}: target must hold int64 class indices, got {target.dtype}")


def _reduce(op: str, loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def nll_loss(log_probs: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of integer targets.

    Args:
        log_probs: (N, C) log-probabilities.
        target: (N,) int64 class indices in [0, C).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (returns (N,)).
    """
    _check_targets("nll_loss", log_probs, target)
    return _reduce("nll_loss", -_picked(log_probs, target), reduction)


def _picked(log_probs: Tensor, target: Tensor) -> Tensor:
    """``log_probs[i, target[i]]`` (N,). Selected with where, not multiplied by a
    one-hot: a -inf log-probability times 0 would be NaN (PyTorch gives 0 there)."""
    mask = one_hot(target, log_probs.shape[1], log_probs.dtype)
    return ag.where(mask, log_probs, 0.0).sum(1)


def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of integer targets, with optional label smoothing.

    With smoothing eps the target distribution is ``(1 - eps) * one_hot + eps / C``.

    Args:
        logits: (N, C) unnormalised scores.
        target: (N,) int64 class indices in [0, C).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (returns (N,)).
        label_smoothing: eps in [0, 1].

    Example:
        >>> from lamina import autograd
        >>> loss = cross_entropy(autograd.zeros(2, 4), autograd.tensor([0, 3]))
        >>> round(loss.item(), 4)
        1.3863
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], "
                         f"got {label_smoothing}")
    _check_targets("cross_entropy", logits, target)
    log_probs = logits.log_softmax(1)
    nll = -_picked(log_probs, target)
    if label_smoothing:
        nll = nll * (1.0 - label_smoothing) - log_probs.mean(1) * label_smoothing
    return _reduce("cross_entropy", nll, reduction)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Squared error (input - target)^2; shapes must match exactly."""
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(f"mse_loss: input {tuple(input.shape)} and target "
                         f"{tuple(target.shape)} must have the same shape")
    diff = input - target
    return _reduce("mse_loss", diff * diff, reduction)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float | None = 0.1,
               eps: float = 1e-5, num_batches_tracked: int = 0) -> Tensor:
    """Normalise each channel of (N, C, *) by batch (training) or running statistics.

    Statistics are taken per channel C over the batch and every trailing dim
    (so (N, C) for BatchNorm1d, (N, C, H, W) for BatchNorm2d). In training,
    the running statistics are updated in place (without a graph):
    ``running = (1 - momentum) * running + momentum * batch``, with the
    unbiased batch variance, as in PyTorch; ``momentum=None`` keeps a
    cumulative average over ``num_batches_tracked`` batches (counting this one).
    One graph node (:func:`lamina.autograd.batch_norm`); missing weight or bias
    act as ones or zeros.

    Args:
        x: (N, C, *).
        running_mean, running_var: (C,) buffers or None.
        weight, bias: (C,) affine parameters or None.
    """
    c = x.shape[1] if x.ndim >= 2 else 0
    if weight is None:
        weight = ag.Tensor(nd.ones(c, dtype=x.dtype, device=x.device))
    if bias is None:
        bias = ag.Tensor(nd.zeros(c, dtype=x.dtype, device=x.device))
    return ag.batch_norm(x, weight, bias, running_mean, running_var, training=training,
                         momentum=momentum, eps=eps, num_batches_tracked=num_batches_tracked)


def layer_norm(x: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims (biased variance)."""
    dims = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    if tuple(x.shape[x.ndim - len(normalized_shape):]) != tuple(normalized_shape):
        raise ShapeError(f"layer_norm: expected input of shape (*, "
                         f"{', '.join(map(str, normalized_shape))}), got {tuple(x.shape)}")
    mean = x.mean(dims, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dims, keepdim=True)
    out = centred / (var + eps) ** 0.5
    if weight is not None:
        out = out * weight
    return out + bias if bias is not None else out


def embedding(indices: Tensor, weight: Tensor) -> Tensor:
    """Rows of ``weight`` (num_embeddings, D) at int64 ``indices`` (*,) -> (*, D)."""
    if indices.dtype != "int64":
        raise TypeError(f"embedding: indices must be int64, got {indices.dtype}")
    try:
        return ag.embedding(indices, weight)
    except IndexError:
        size = weight.shape[0]
        ids = indices.numpy().reshape(-1)
        bad = ids[(ids < 0) | (ids >= size)]
        if not len(bad):
            raise
        raise IndexError(f"embedding: token id {int(bad[0])} is outside the vocabulary of "
                         f"size {size} (ids must be in [0, {size}))") from None


# Convolution and pooling live beside their layers; these are their functional forms.
from ._conv import conv2d  # noqa: E402
from ._pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d  # noqa: E402

__all__ += ["adaptive_avg_pool2d", "avg_pool2d", "conv2d", "max_pool2d"]


# Last: the attention module imports the layers, which import this module.
from ._attention import scaled_dot_product_attention  # noqa: E402
