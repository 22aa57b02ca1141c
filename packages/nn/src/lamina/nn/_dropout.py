"""Channel (feature-map) dropout and alpha dropout, as ``torch.nn.functional``'s.

A channel is x[n, c] of a batched (N, C, *) input, or x[c] of an unbatched
(C, *) one: one mask value per channel, broadcast over the rest. Alpha dropout
keeps SELU's self-normalisation: dropped values become SELU's negative
saturation, and an affine map ``a * x + b`` restores zero mean and unit variance.
The modules live in ``_layers`` beside ``Dropout``.
"""

from __future__ import annotations

import math
import warnings

from lamina import ndarray as nd
from lamina.autograd import Tensor
from lamina.autograd._inplace import apply_

from ._errors import ShapeError

__all__ = ["alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]

_SELU_SATURATION = 1.7580993408473766  # -(SELU scale * alpha), where SELU tends for x -> -inf


def _check_p(op: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability p must be in [0, 1], got {p}")


def _mask_shape(op: str, shape: tuple[int, ...], feature: bool, batched: bool
                ) -> tuple[int, ...]:
    """The mask's shape: ``shape`` itself, or one value per channel of (N, C, *) / (C, *)."""
    if not feature:
        return shape
    lead = 2 if batched else 1
    if len(shape) < lead:
        raise ShapeError(f"{op}: channel dropout needs at least {lead} dims "
                         f"({'(N, C, *)' if batched else '(C, *)'}), got shape {shape}; "
                         f"use dropout for element-wise dropout")
    return shape[:lead] + (1,) * (len(shape) - lead)


def _keep(x: Tensor, shape: tuple[int, ...], p: float) -> nd.NDArray:
    """1 with probability ``1 - p``, else 0, in x's dtype and device."""
    return (nd.rand(shape, dtype=x.dtype, device=x.device) >= p).astype(x.dtype)


def _feature_dropout(x: Tensor, p: float, training: bool, inplace: bool, op: str,
                     batched: bool = True) -> Tensor:
    _check_p(op, p)
    if not training or p == 0.0 or not x.numel():
        return x
    if p == 1.0:
        return x.mul_(0.0) if inplace else x * 0.0
    keep = _keep(x, _mask_shape(op, tuple(x.shape), True, batched), p)
    mask = Tensor(keep * (1.0 / (1.0 - p)))
    return x.mul_(mask) if inplace else x * mask


def _channel_rank_warning(op: str, ndim: int, expected: tuple[int, int], spatial: int) -> None:
    warnings.warn(
        f"{op}: Received a {ndim}-D input to {op}, which is deprecated and will result in "
        f"an error in a future release. To retain the behavior and silence this warning, "
        f"please use dropout instead. Note that {op} exists to provide channel-wise dropout "
        f"on inputs with {spatial} spatial dimensions, a channel dimension, and an optional "
        f"batch dimension (i.e. {expected[0]}D or {expected[1]}D inputs).", UserWarning,
        stacklevel=3)


def dropout1d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p; scale the rest by 1/(1-p).

    Identity (``x`` itself) when ``training`` is False or ``p == 0``.
    """
    _check_p("dropout1d", p)
    if x.ndim not in (2, 3):
        raise ShapeError(f"dropout1d: expected a 2D (C, L) or 3D (N, C, L) input, got shape "
                         f"{tuple(x.shape)}; use dropout2d/dropout3d or dropout for others")
    return _feature_dropout(x, p, training, inplace, "dropout1d", batched=x.ndim == 3)


def dropout2d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability p; scale the rest by 1/(1-p).

    As PyTorch's: a 3D input is read as (N, C, L) (with a warning), and other
    ranks than 3 and 4 warn that they are deprecated but are still taken as (N, C, *).
    """
    _check_p("dropout2d", p)
    if x.ndim not in (3, 4):
        _channel_rank_warning("dropout2d", x.ndim, (3, 4), 2)
    if x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=2)
    return _feature_dropout(x, p, training, inplace, "dropout2d")


def dropout3d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p.

    The rest is scaled by 1/(1-p). Other ranks than 4 and 5 warn that they are
    deprecated, as in PyTorch, and are read as unbatched (C, *).
    """
    _check_p("dropout3d", p)
    if x.ndim not in (4, 5):
        _channel_rank_warning("dropout3d", x.ndim, (4, 5), 3)
    return _feature_dropout(x, p, training, inplace, "dropout3d", batched=x.ndim == 5)


def _alpha_dropout(x: Tensor, p: float, training: bool, inplace: bool, op: str,
                   feature: bool) -> Tensor:
    _check_p(op, p)
    if not training or p == 0.0 or not x.numel():
        return x
    if p == 1.0:
        return x.mul_(0.0) if inplace else x * 0.0
    keep = _keep(x, _mask_shape(op, tuple(x.shape), feature, True), p)
    a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1.0) * (1.0 - p))
    # kept: a * x + a * s * p; dropped: a * (-s) + a * s * p, the affine map of -s.
    scale = Tensor(keep * a)
    shift = Tensor((keep + (p - 1.0)) * (_SELU_SATURATION * a))
    return apply_(x, op + "_", lambda t: t * scale + shift) if inplace else x * scale + shift


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
                  ) -> Tensor:
    """Dropout for SELU networks: keeps the input's mean and variance (any shape).

    Each element is dropped with probability p to SELU's negative saturation,
    then ``a * x + b`` restores zero mean and unit variance. Identity (``x``
    itself) unless ``training`` (False by default, as in PyTorch).
    """
    return _alpha_dropout(x, p, training, inplace, "alpha_dropout", feature=False)


def feature_alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """:func:`alpha_dropout` of whole channels of (N, C, *): one draw per channel."""
    return _alpha_dropout(x, p, training, inplace, "feature_alpha_dropout", feature=True)
