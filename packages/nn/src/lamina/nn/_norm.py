"""Normalisation layers: BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm and RMSNorm."""

from __future__ import annotations

from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from . import functional as F
from . import init
from ._errors import ShapeError, check_shape
from ._module import Module
from ._parameter import Parameter, new_tensor
from ._rms_norm import rms_norm

__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "LayerNorm", "RMSNorm"]


class _BatchNorm(Module):
    """Shared state and forward of the batch-norm layers; subclasses fix the input rank."""

    _ndims: tuple[int, ...] = (2,)
    _layout = "(N, {c})"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        dtype = dtype or nd.float32
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(nd.ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(nd.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 new_tensor(nd.zeros(num_features, dtype=dtype, device=device)))
            self.register_buffer("running_var",
                                 new_tensor(nd.ones(num_features, dtype=dtype, device=device)))
            self.register_buffer("num_batches_tracked",
                                 new_tensor(nd.full((), 0, dtype=nd.int64, device=device)))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if len(shape) not in self._ndims or shape[1] != self.num_features:
            # the layer's repr and layout are built only here, on failure
            check_shape(repr(self), shape, self._ndims, self._layout.format(c=self.num_features),
                        1, self.num_features)
        tracked = 0
        if self.training and self.track_running_stats:
            count = self.num_batches_tracked._data
            count[...] = count + 1  # in place, on the device: a compiled step replays it
            if self.momentum is None:  # a cumulative average reads the count
                tracked = int(count.item())
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training or not self.track_running_stats,
                            momentum=self.momentum, eps=self.eps,
                            num_batches_tracked=tracked)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Normalise each of C features over the batch, with running statistics.

    Training: y = (x - mean_B) / sqrt(var_B + eps) * weight + bias, and
    ``running = (1 - momentum) * running + momentum * batch_stat`` (unbiased
    variance for ``running_var``). Eval: the running statistics replace the
    batch's. ``momentum=None`` keeps a cumulative average.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running-statistics factor, or None.
        affine: learn weight (ones) and bias (zeros).
        track_running_stats: keep running statistics (else always use batch stats).

    Shape:
        input (N, C) -> output (N, C).
    """


class BatchNorm2d(_BatchNorm):
    """Normalise each of C channels over the batch and the image, with running statistics.

    Statistics per channel are taken over N, H and W; otherwise as
    :class:`BatchNorm1d` (same arguments, running statistics and eval mode).

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running-statistics factor, or None.
        affine: learn weight (ones) and bias (zeros).
        track_running_stats: keep running statistics (else always use batch stats).

    Shape:
        input (N, C, H, W) -> output (N, C, H, W).

    Example:
        >>> from lamina import autograd
        >>> BatchNorm2d(3)(autograd.randn(4, 3, 5, 5)).shape
        (4, 3, 5, 5)
    """

    _ndims = (4,)
    _layout = "(N, {c}, H, W)"


class _TrailingNorm(Module):
    """A norm over the trailing dims ``normalized_shape`` (LayerNorm, RMSNorm): the
    shape and affine flags they share, and the shape error that names the layer."""

    def __init__(self, normalized_shape: int | tuple[int, ...] | list[int], eps: float | None,
                 elementwise_affine: bool, dtype: Any, device: Any) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(nd.ones(*shape, dtype=dtype or nd.float32, device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        try:
            return self._normalize(x)
        except ShapeError:  # name the layer (its repr is built only here, on failure)
            k = len(self.normalized_shape)
            if tuple(x.shape[len(x.shape) - k:]) != self.normalized_shape:
                dims = ", ".join(map(str, self.normalized_shape))
                raise ShapeError(f"{self!r}: expected input of shape (*, {dims}), "
                                 f"got {tuple(x.shape)}") from None
            raise

    def _normalize(self, x: Tensor) -> Tensor:
        raise TypeError(f"{type(self).__name__} must define _normalize")

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LayerNorm(_TrailingNorm):
    """Normalise over the last dims: (x - mean) / sqrt(var + eps) * weight + bias.

    Args:
        normalized_shape: the trailing shape D (an int or a tuple).
        eps: added to the variance.
        elementwise_affine: learn weight (ones) and bias (zeros) of shape D.
        bias: learn the bias (when affine).

    Shape:
        input (*, *D) -> output (*, *D).
    """

    eps: float

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, dtype, device)
        shape, dtype = self.normalized_shape, dtype or nd.float32
        if elementwise_affine and bias:
            self.bias = Parameter(nd.zeros(*shape, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def _normalize(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class GroupNorm(Module):
    """Normalise channel groups of each sample: ``(x - mean_g) / sqrt(var_g + eps) * w + b``.

    Statistics are taken per sample over each group of C / G channels and every
    trailing dim (no running statistics: train and eval agree).

    Args:
        num_groups: G, dividing ``num_channels``.
        num_channels: C.
        eps: added to the variance.
        affine: learn a per-channel weight (ones) and bias (zeros).
        bias: learn the bias (when affine).

    Shape:
        input (N, C, *) -> output (N, C, *).
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                             f"num_groups={num_groups} (a positive int)")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        dtype = dtype or nd.float32
        if affine:
            self.weight = Parameter(nd.ones(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(nd.zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise ShapeError(f"{self!r}: expected input of shape (N, {self.num_channels}, *), "
                             f"got {shape}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(_TrailingNorm):
    """Root-mean-square normalisation over the last dims: ``x / rms(x) * weight``.

    ``rms(x) = sqrt(mean(x**2) + eps)`` over the trailing dims D; unlike
    :class:`LayerNorm` there is no centring and no bias.

    Args:
        normalized_shape: the trailing shape D (an int or a sequence).
        eps: added to the mean square; None takes the input dtype's machine epsilon.
        elementwise_affine: learn a weight (ones) of shape D.

    Shape:
        input (*, *D) -> output (*, *D).

    Example:
        >>> from lamina import autograd
        >>> RMSNorm(8)(autograd.randn(2, 5, 8)).shape
        (2, 5, 8)
    """

    def __init__(self, normalized_shape: int | tuple[int, ...] | list[int],
                 eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, dtype, device)

    def reset_parameters(self) -> None:
        """Set the weight back to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def _normalize(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)
