"""Losses as ``torch.nn.functional`` and ``torch.nn`` have them: functional forms, then modules.

Every loss is a composition of lamina.autograd ops, so its gradient (and the
gradient of that) comes from the engine. Shapes: N is the batch, C the
classes, ``d1, ...`` any further dims (per-pixel or per-token losses), ``*``
any shape. Each loss validates its options in one ``_check_*`` function that
the functional form and the module's constructor both call. The deprecated
``size_average`` and ``reduce`` arguments sit where PyTorch has them and map
to ``reduction`` by PyTorch's rule, with its warning.
"""

from __future__ import annotations

from lamina import autograd as ag
from lamina.autograd import Tensor
from lamina.autograd import _ops as ag_ops
from lamina.ndarray import DTypeError

from ._errors import ShapeError
from ._loss_checks import (
    _REDUCTIONS,
    _check_broadcasts,
    _check_optional_tensor,
    _check_reduction,
    _check_same_shape,
    _legacy_reduction,
    _reduce,
)
from ._module import Module

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss",
    "MSELoss", "NLLLoss", "SmoothL1Loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss",
    "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss",
]

# ----- class-index losses: nll_loss, cross_entropy ---------------------------------------

def _check_class_args(op: str, reduction: str, label_smoothing: float = 0.0) -> None:
    _check_reduction(op, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")


def _class_shapes(op: str, input: Tensor, target: Tensor, probs_ok: bool) -> bool:
    """Check input (N, C, d1, ...) against target; True when target holds probabilities."""
    shape, tshape = tuple(input.shape), tuple(target.shape)
    if input.ndim < 2:
        raise ShapeError(f"{op}: expected input of shape (N, C) with target (N,), or "
                         f"(N, C, d1, ...) with target (N, d1, ...); got input {shape} and "
                         f"target {tshape} (add a batch dim with .unsqueeze(0))")
    index_shape = shape[:1] + shape[2:]
    if probs_ok and tshape == shape and target.dtype.is_floating:
        return True
    if tshape != index_shape:
        probs = f" (class indices) or {shape} (probabilities)" if probs_ok else ""
        raise ShapeError(f"{op}: expected target of shape {index_shape}{probs} for input "
                         f"{shape}, got {tshape}")
    if target.dtype != ag.int64:
        probs = f" (float targets are probabilities of the input's shape {shape})" \
            if probs_ok else ""
        raise DTypeError(f"{op}: target must hold int64 class indices, got "
                         f"{target.dtype}{probs}")
    return False


def _check_class_weight(op: str, input: Tensor, weight: Tensor | None) -> None:
    _check_optional_tensor(op, "weight", weight, input)
    if weight is not None and tuple(weight.shape) != (input.shape[1],):
        raise ShapeError(f"{op}: weight must have shape ({input.shape[1]},), one entry per "
                         f"class of input {tuple(input.shape)}, got {tuple(weight.shape)}")


def _per_class(weight: Tensor, ndim: int) -> Tensor:
    """(C,) -> (C, 1, ...) so that it multiplies dim 1 of an (N, C, d1, ...) tensor."""
    return weight.reshape(tuple(weight.shape) + (1,) * (ndim - 2))


def _nll(op: str, log_probs: Tensor, target: Tensor, weight: Tensor | None,
         ignore_index: int, reduction: str) -> Tensor:
    """``-w[t] * log_probs[n, t, ...]`` (0 where ignored), reduced: one graph node
    (``lamina.autograd``'s ``nll_loss``), with an out-of-range target named."""
    try:
        return ag_ops.nll_loss(log_probs, target, weight, ignore_index, reduction)
    except IndexError:
        bad = [t for t in target.numpy().reshape(-1).tolist()
               if t != ignore_index and not 0 <= t < log_probs.shape[1]]
        raise IndexError(f"{op}: target {bad[0] if bad else '?'} is out of bounds for "
                         f"{log_probs.shape[1]} classes (targets must be in "
                         f"[0, {log_probs.shape[1]}) or equal ignore_index={ignore_index})"
                         ) from None


def _smoothing(log_probs: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
               reduction: str) -> Tensor:
    """The label-smoothing term ``-sum_c w[c] * log_probs[n, c]`` (0 where ignored),
    reduced as the loss is: "mean" divides by the sum of the targets' weights."""
    valid = target != ignore_index
    every = log_probs if weight is None else log_probs * _per_class(weight, log_probs.ndim)
    smooth = ag.where(valid, -every.sum(1), 0.0)
    if reduction != "mean":
        return _reduce(smooth, reduction)
    if weight is None:
        return smooth.sum() / valid.to(log_probs.dtype).sum()
    return smooth.sum() / ag.where(valid, ag.take(weight, ag.where(valid, target, 0)), 0.0).sum()


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of integer class targets.

    ``loss[n] = -weight[t] * input[n, t]`` with ``t = target[n]``, and 0 where
    ``t == ignore_index``. ``"mean"`` divides the sum by the sum of the picked
    weights (the number of targets not ignored when ``weight`` is None).

    Args:
        input: (N, C) or (N, C, d1, ...) log-probabilities.
        target: (N,) or (N, d1, ...) int64 class indices in [0, C) or ``ignore_index``.
        weight: (C,) per-class weights, or None.
        size_average, reduce: deprecated; when either is given, ``reduction`` is
            "none" if reduce is False, else "mean" or "sum" as size_average says.
        ignore_index: a target value that contributes nothing.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (returns the target's shape).

    Example:
        >>> from lamina import autograd
        >>> logp = autograd.tensor([[-1.0, -2.0], [-3.0, -4.0]])
        >>> nll_loss(logp, autograd.tensor([1, -100])).item()
        2.0
    """
    reduction = _legacy_reduction("nll_loss", size_average, reduce, reduction)
    _check_class_args("nll_loss", reduction)
    _class_shapes("nll_loss", input, target, probs_ok=False)
    _check_class_weight("nll_loss", input, weight)
    return _nll("nll_loss", input, target, weight, ignore_index, reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of class indices or class probabilities.

    With class indices it is ``nll_loss(log_softmax(input, 1), ...)``; label
    smoothing eps mixes in ``eps / C`` of the (weighted) loss against every
    class. With probabilities (a float target of the input's shape),
    ``loss[n] = -sum_c weight[c] * p[n, c] * log_softmax(input)[n, c]`` with
    ``p = (1 - eps) * target + eps / C``, and ``"mean"`` divides by N * d1 * ...

    Args:
        input: (N, C) or (N, C, d1, ...) unnormalised scores.
        target: (N,) or (N, d1, ...) int64 class indices, or probabilities of the
            input's shape.
        weight: (C,) per-class weights, or None.
        size_average, reduce: deprecated, as in :func:`nll_loss`.
        ignore_index: a class index that contributes nothing (indices only).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (returns (N, d1, ...)).
        label_smoothing: eps in [0, 1].

    Example:
        >>> from lamina import autograd
        >>> loss = cross_entropy(autograd.zeros(2, 4), autograd.tensor([0, 3]))
        >>> round(loss.item(), 4)
        1.3863
    """
    op = "cross_entropy"
    reduction = _legacy_reduction(op, size_average, reduce, reduction)
    _check_class_args(op, reduction, label_smoothing)
    probs = _class_shapes(op, input, target, probs_ok=True)
    _check_class_weight(op, input, weight)
    log_probs = input.log_softmax(1)
    if probs:
        if ignore_index != -100:
            raise ValueError(f"{op}: ignore_index={ignore_index} applies to class-index "
                             f"targets only, not to probabilities of shape "
                             f"{tuple(target.shape)}")
        return _cross_entropy_probs(log_probs, target, weight, reduction, label_smoothing)
    loss = _nll(op, log_probs, target, weight, ignore_index, reduction)
    if label_smoothing:
        # Only computed when needed: a -inf log-probability makes it infinite.
        smooth = _smoothing(log_probs, target, weight, ignore_index, reduction)
        loss = loss * (1.0 - label_smoothing) + smooth * (label_smoothing / input.shape[1])
    return loss


def _cross_entropy_probs(log_probs: Tensor, target: Tensor, weight: Tensor | None,
                         reduction: str, label_smoothing: float) -> Tensor:
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / log_probs.shape[1]
    terms = log_probs * target
    if weight is not None:
        terms = terms * _per_class(weight, log_probs.ndim)
    return _reduce(-terms.sum(1), reduction)


# ----- binary cross-entropy ----------------------------------------------------------------

def _check_binary_args(op: str, input: Tensor, target: Tensor, reduction: str,
                       weight: Tensor | None) -> None:
    _check_reduction(op, reduction)
    _check_same_shape(op, input, target)
    _check_optional_tensor(op, "weight", weight, input)
    _check_broadcasts(op, "weight", weight, tuple(input.shape))


def _clamped_log(x: Tensor) -> Tensor:
    """log(x) clamped below at -100, as PyTorch's binary_cross_entropy clamps it.

    At x == 0 (a saturated sigmoid) log's gradient 1 / x would meet the clamp's
    zero as 0 * inf = NaN; taking the log of a safe 1 there gives a gradient of 0.
    """
    positive = x > 0
    return ag.where(positive, ag.where(positive, x, 1.0).log().clamp(min=-100.0), -100.0)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-weight * (t * log(x) + (1 - t) * log(1 - x))`` of probabilities x in [0, 1].

    Each log is clamped at -100, as in PyTorch, so x of exactly 0 or 1 gives a
    finite loss.

    Args:
        input: (*) probabilities.
        target: (*) targets in [0, 1], the input's shape.
        weight: broadcastable to (*), or None.
        size_average, reduce: deprecated, as in :func:`nll_loss`.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (returns (*)).

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([0.5, 0.5])
        >>> round(binary_cross_entropy(x, autograd.tensor([0.0, 1.0])).item(), 4)
        0.6931
    """
    reduction = _legacy_reduction("binary_cross_entropy", size_average, reduce, reduction)
    _check_binary_args("binary_cross_entropy", input, target, reduction, weight)
    loss = -(target * _clamped_log(input) + (1.0 - target) * _clamped_log(1.0 - input))
    return _reduce(loss if weight is None else loss * weight, reduction)


def _softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) as logsumexp(0, x): stable for any x, and its gradient is
    sigmoid(x) everywhere, where max(x, 0) + log1p(exp(-|x|)) has a kink at 0."""
    return ag.logsumexp(ag.stack([ag.zeros_like(x), x], -1), -1)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross-entropy of sigmoid(input), computed stably from the logits.

    ``loss = weight * ((1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x))``,
    which is ``max(x, 0) - x * t + log1p(exp(-|x|))`` without ``pos_weight``.

    Args:
        input: (*) logits.
        target: (*) targets in [0, 1], the input's shape.
        weight: broadcastable to (*), or None.
        size_average, reduce: deprecated, as in :func:`nll_loss`.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (returns (*)).
        pos_weight: weight of the positive term, broadcastable to (*) (usually (C,)
            for input (N, C)), or None.

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([0.0, 0.0])
        >>> round(binary_cross_entropy_with_logits(x, autograd.tensor([0.0, 1.0])).item(), 4)
        0.6931
    """
    op = "binary_cross_entropy_with_logits"
    reduction = _legacy_reduction(op, size_average, reduce, reduction)
    _check_binary_args(op, input, target, reduction, weight)
    _check_optional_tensor(op, "pos_weight", pos_weight, input)
    _check_broadcasts(op, "pos_weight", pos_weight, tuple(input.shape))
    positive = _softplus(-input)
    if pos_weight is not None:
        positive = positive * ((pos_weight - 1.0) * target + 1.0)
    loss = (1.0 - target) * input + positive
    return _reduce(loss if weight is None else loss * weight, reduction)


# ----- regression and divergence ---------------------------------------------------------

def _check_pointwise_args(op: str, input: Tensor, target: Tensor, reduction: str) -> None:
    _check_reduction(op, reduction)
    _check_same_shape(op, input, target)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target)^2``; input and target (*) of the same shape.

    ``size_average`` and ``reduce`` are deprecated, as in :func:`nll_loss`.
    """
    reduction = _legacy_reduction("mse_loss", size_average, reduce, reduction)
    _check_pointwise_args("mse_loss", input, target, reduction)
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``; input and target (*) of the same shape.

    ``size_average`` and ``reduce`` are deprecated, as in :func:`nll_loss`.

    Example:
        >>> from lamina import autograd
        >>> l1_loss(autograd.tensor([1.0, -2.0]), autograd.tensor([0.0, 0.0])).item()
        1.5
    """
    reduction = _legacy_reduction("l1_loss", size_average, reduce, reduction)
    _check_pointwise_args("l1_loss", input, target, reduction)
    return _reduce((input - target).abs(), reduction)


def _check_positive(op: str, name: str, value: float, allow_zero: bool) -> float:
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{op}: {name} must be {bound}, got {value}")
    return value


def _quadratic_then_linear(diff: Tensor, knee: float) -> tuple[Tensor, Tensor, Tensor]:
    """(|d| < knee mask, 0.5 * d^2, |d|) for the smooth L1 / Huber pieces."""
    size = diff.abs()
    return size < knee, diff * diff * 0.5, size


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (d = input - target).

    ``beta=0`` is the L1 loss. Input and target (*) of the same shape.
    ``size_average`` and ``reduce`` are deprecated, as in :func:`nll_loss`.

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([0.5, 3.0])
        >>> smooth_l1_loss(x, autograd.zeros(2), reduction="none").tolist()
        [0.125, 2.5]
    """
    reduction = _legacy_reduction("smooth_l1_loss", size_average, reduce, reduction)
    _check_pointwise_args("smooth_l1_loss", input, target, reduction)
    _check_positive("smooth_l1_loss", "beta", beta, allow_zero=True)
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    inner, half_square, size = _quadratic_then_linear(input - target, beta)
    return _reduce(ag.where(inner, half_square / beta, size - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``.

    Equal to ``delta * smooth_l1_loss(..., beta=delta)``. Input and target (*)
    of the same shape; ``delta > 0``.

    Example:
        >>> from lamina import autograd
        >>> huber_loss(autograd.tensor([0.5, 3.0]), autograd.zeros(2), "none", 2.0).tolist()
        [0.125, 4.0]
    """
    _check_pointwise_args("huber_loss", input, target, reduction)
    _check_positive("huber_loss", "delta", delta, allow_zero=False)
    inner, half_square, size = _quadratic_then_linear(input - target, delta)
    return _reduce(ag.where(inner, half_square, (size - 0.5 * delta) * delta), reduction)


_KL_REDUCTIONS = ("mean", "batchmean", "sum", "none")


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log(target) - input)`` pointwise.

    ``input`` holds log-probabilities; ``target`` probabilities (0 log 0 counts
    as 0), or log-probabilities with ``log_target=True``. ``"batchmean"`` divides
    the sum by N, the mathematical KL divergence per sample; ``"mean"`` divides
    by the number of elements, as PyTorch does.

    Args:
        input: (N, *) log-probabilities.
        target: (N, *), the input's shape.
        size_average, reduce: deprecated, as in :func:`nll_loss` (never "batchmean").
        reduction: ``"mean"``, ``"batchmean"``, ``"sum"`` or ``"none"`` (returns (N, *)).
        log_target: whether ``target`` holds log-probabilities.

    Example:
        >>> from lamina import autograd
        >>> logp = autograd.tensor([[0.5, 0.5]]).log()
        >>> kl_div(logp, autograd.tensor([[0.5, 0.5]]), reduction="batchmean").item()
        0.0
    """
    reduction = _legacy_reduction("kl_div", size_average, reduce, reduction)
    _check_reduction("kl_div", reduction, _KL_REDUCTIONS)
    _check_same_shape("kl_div", input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t): log of a safe 1 where t == 0, so no log(0) = -inf reaches
        # the value (0 * -inf) or the gradient.
        present = target > 0
        xlogx = ag.where(present, target * ag.where(present, target, 1.0).log(), 0.0)
        loss = xlogx - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


# ----- modules -----------------------------------------------------------------------------

class _Loss(Module):
    """A loss module: ``reduction`` plus options, forwarded to the functional form."""

    def __init__(self, reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
        super().__init__()
        self.reduction = _check_reduction(type(self).__name__, reduction, allowed)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer (moved by ``.to(device)``)."""

    weight: Tensor | None

    def __init__(self, weight: Tensor | None, reduction: str) -> None:
        super().__init__(reduction)
        _check_optional_tensor(type(self).__name__, "weight", weight, None)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy; see :func:`cross_entropy` for the options.

    Shape:
        input (N, C) or (N, C, d1, ...); target (N,) / (N, d1, ...) int64, or
        probabilities of the input's shape -> scalar, or (N, d1, ...) with "none".

    Example:
        >>> from lamina import autograd
        >>> loss = CrossEntropyLoss()(autograd.zeros(2, 4), autograd.tensor([1, 2]))
        >>> round(loss.item(), 4)
        1.3863
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        reduction = _legacy_reduction("CrossEntropyLoss", size_average, reduce, reduction)
        _check_class_args("CrossEntropyLoss", reduction, label_smoothing)
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                             reduction=self.reduction, label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        return (f"reduction={self.reduction!r}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}")


class NLLLoss(_WeightedLoss):
    """Negative log likelihood; see :func:`nll_loss`.

    Shape:
        input (N, C) or (N, C, d1, ...) log-probabilities; target (N,) or (N, d1, ...)
        int64 -> scalar, or the target's shape with "none".
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, _legacy_reduction("NLLLoss", size_average, reduce, reduction))
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                        reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, ignore_index={self.ignore_index}"


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities; see :func:`binary_cross_entropy`.

    Shape:
        input (*) in [0, 1], target (*) -> scalar, or (*) with "none".
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(weight, _legacy_reduction("BCELoss", size_average, reduce, reduction))

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits; see :func:`binary_cross_entropy_with_logits`.

    Shape:
        input (*) logits, target (*) -> scalar, or (*) with "none"; pos_weight
        broadcastable to (*), usually (C,).
    """

    pos_weight: Tensor | None

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        reduction = _legacy_reduction("BCEWithLogitsLoss", size_average, reduce, reduction)
        super().__init__(weight, reduction)
        _check_optional_tensor("BCEWithLogitsLoss", "pos_weight", pos_weight, None)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return binary_cross_entropy_with_logits(input, target, self.weight,
                                                reduction=self.reduction,
                                                pos_weight=self.pos_weight)


class MSELoss(_Loss):
    """Mean squared error; input and target (*) of the same shape."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(_legacy_reduction("MSELoss", size_average, reduce, reduction))

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error; input and target (*) of the same shape."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(_legacy_reduction("L1Loss", size_average, reduce, reduction))

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss with threshold ``beta``; see :func:`smooth_l1_loss`."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(_legacy_reduction("SmoothL1Loss", size_average, reduce, reduction))
        self.beta = _check_positive("SmoothL1Loss", "beta", beta, allow_zero=True)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, beta={self.beta}"


class HuberLoss(_Loss):
    """Huber loss with threshold ``delta``; see :func:`huber_loss`."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = _check_positive("HuberLoss", "delta", delta, allow_zero=False)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return huber_loss(input, target, self.reduction, self.delta)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, delta={self.delta}"


class KLDivLoss(_Loss):
    """KL divergence of log-probability inputs; see :func:`kl_div`."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        reduction = _legacy_reduction("KLDivLoss", size_average, reduce, reduction)
        super().__init__(reduction, _KL_REDUCTIONS)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, log_target={self.log_target}"
