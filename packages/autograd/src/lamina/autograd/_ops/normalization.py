"""Layer and batch normalisation, each a single op: ``layer_norm``, ``batch_norm``.

Written with composite ops (mean, subtract, square, mean, add, power,
divide, scale, shift), a LayerNorm is ~10 graph nodes forward and more than
twice that backward; a Transformer has two per block and its small steps are
bound by that per-op overhead. ``layer_norm`` runs the forward on NDArrays in
one node (the backend's fused ``layer_norm_last`` kernel where it has one)
and writes the backward out::

    xhat = (x - mean(x)) * rstd,  rstd = 1 / sqrt(var(x) + eps)   (biased var)
    y    = xhat * weight + bias
    dx   = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)),  gw = dy * weight
    dweight = sum(dy * xhat),  dbias = sum(dy)    (over all leading axes)

With ``create_graph`` (gradients of gradients) the backward differentiates
the composite :func:`layer_norm_reference` instead, so higher-order
gradients are exact.
"""

from __future__ import annotations

from typing import Any

from lamina import ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor import Tensor


class LayerNorm(Function):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis."""

    name = "layer_norm"
    save_inputs = True

    def forward(self, x: NDArray, weight: NDArray, bias: NDArray, eps: float) -> NDArray:
        self.eps = eps  # nd.layer_norm checks the shapes, with _check_shapes's messages
        out, self.mean, self.rstd = nd.layer_norm(x, weight, bias, eps)
        return out

    def release(self) -> None:
        super().release()
        self.mean = self.rstd = None

    def backward(self, g: Tensor) -> tuple[Tensor | None, ...]:
        if grad_mode.is_grad_enabled():
            return self._backward_recomputed(g)
        x, weight, _ = self.inputs
        need_x, need_w, need_b = self.needs_input_grad
        xhat = Tensor._make((x.data - self.mean) * self.rstd)
        dx = None
        if need_x:
            gw = g * weight.detach()
            rstd = Tensor._make(self.rstd)
            dx = (gw - gw.mean(-1, keepdim=True)
                  - xhat * (gw * xhat).mean(-1, keepdim=True)) * rstd
        # The engine sums the broadcast (…, D) gradients down to weight's and bias's (D,).
        return dx, (g * xhat if need_w else None), (g if need_b else None)

    def _backward_recomputed(self, g: Tensor) -> tuple[Tensor | None, ...]:
        from .._engine import grad

        x, weight, bias = self.inputs
        wanted = [t for t, need in zip(self.inputs, self.needs_input_grad) if need]
        found = iter(grad(layer_norm_reference(x, weight, bias, self.eps), wanted, g,
                          create_graph=True))
        return tuple(next(found) if need else None for need in self.needs_input_grad)


def _check_shapes(x: tuple[int, ...], weight: tuple[int, ...], bias: tuple[int, ...]) -> None:
    if not x or x[-1] == 0:
        raise ShapeError(f"layer_norm: input must have a non-empty last axis, got shape {x}")
    if weight != x[-1:] or bias != x[-1:]:
        raise ShapeError(f"layer_norm: weight {weight} and bias {bias} must both have shape "
                         f"({x[-1]},) for input {x} (normalised over the last axis)")


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """LayerNorm over the last axis in one graph node (biased variance, as PyTorch).

    Shapes: x (*, D), weight (D,), bias (D,) -> (*, D).

    Raises:
        ShapeError: weight or bias is not (D,).
    """
    return LayerNorm.apply(x, weight, bias, eps=eps)


def layer_norm_reference(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """The same function from composite ops (differentiable to any order)."""
    _check_shapes(tuple(x.shape), tuple(weight.shape), tuple(bias.shape))
    centred = x - x.mean(-1, keepdim=True)
    var = (centred * centred).mean(-1, keepdim=True)
    return centred * (var + eps) ** -0.5 * weight + bias


class BatchNorm(Function):
    """``(x - mean) * rstd * weight + bias`` per channel (axis 1) of ``(N, C, *)``.

    As one node for the same reason as :class:`LayerNorm`: composed, a
    BatchNorm is ~13 graph nodes forward and twice that backward. With ``n``
    values per channel, batch statistics (``training``) and ``xhat = (x -
    mean) * rstd``, the backward is::

        dx = weight * rstd * (g - sum(g) / n - xhat * sum(g * xhat) / n)
        dweight = sum(g * xhat),  dbias = sum(g)      (sums over N and *)

    and with fixed (running) statistics ``dx = g * weight * rstd``.
    """

    name = "batch_norm"
    save_inputs = True

    def forward(self, x: NDArray, weight: NDArray, bias: NDArray, running_mean: Any,
                running_var: Any, training: bool, momentum: float | None, eps: float,
                num_batches_tracked: int) -> NDArray:
        c = _check_batch_shapes(x.shape, weight.shape, bias.shape)
        self.training, self.eps = training, eps
        self.stat_shape = (c,) + (1,) * (x.ndim - 2)
        if training:
            n = x.size // c
            if n < 2:
                raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                                 f"training, got input of shape {x.shape}")
            mean = _channel_sum(x) * (1.0 / n)
            self.centred = x - mean.reshape(self.stat_shape)
            var = _channel_sum(self.centred * self.centred) * (1.0 / n)
            if running_mean is not None and running_var is not None:
                m = 1.0 / max(num_batches_tracked, 1) if momentum is None else momentum
                running_mean.data = running_mean.data * (1 - m) + mean * m
                running_var.data = running_var.data * (1 - m) + var * (m * n / (n - 1))
        else:
            if running_mean is None or running_var is None:
                raise ValueError("batch_norm: running statistics are needed in eval mode")
            self.fixed_mean, self.fixed_var = running_mean.data, running_var.data
            var = self.fixed_var
            self.centred = x - self.fixed_mean.reshape(self.stat_shape)
        self.rstd = (var + eps) ** -0.5
        scale = (self.rstd * weight).reshape(self.stat_shape)
        return self.centred * scale + bias.reshape(self.stat_shape)

    def release(self) -> None:
        super().release()
        self.centred = self.rstd = self.fixed_mean = self.fixed_var = None

    def backward(self, g: Tensor) -> tuple[Tensor | None, ...]:
        if grad_mode.is_grad_enabled():
            return self._backward_recomputed(g)
        x, weight, _ = self.inputs
        need_x, need_w, need_b = self.needs_input_grad
        gd = g.data
        xhat = self.centred * self.rstd.reshape(self.stat_shape)
        g_sum = _channel_sum(gd) if need_b or (need_x and self.training) else None
        gx_sum = _channel_sum(gd * xhat) if need_w or (need_x and self.training) else None
        dx = None
        if need_x:
            scale = (weight.data * self.rstd).reshape(self.stat_shape)
            if self.training:
                inv_n = x.data.shape[1] / x.data.size
                gd = (gd - (g_sum * inv_n).reshape(self.stat_shape)
                      - xhat * (gx_sum * inv_n).reshape(self.stat_shape))
            dx = Tensor._make(gd * scale)
        return (dx, Tensor._make(gx_sum) if need_w else None,
                Tensor._make(g_sum) if need_b else None)

    def _backward_recomputed(self, g: Tensor) -> tuple[Tensor | None, ...]:
        from .._engine import grad

        x, weight, bias = self.inputs
        fixed = None if self.training else (
            Tensor._make(self.fixed_mean), Tensor._make(self.fixed_var))
        wanted = [t for t, need in zip(self.inputs, self.needs_input_grad) if need]
        found = iter(grad(batch_norm_reference(x, weight, bias, fixed, self.eps), wanted, g,
                          create_graph=True))
        return tuple(next(found) if need else None for need in self.needs_input_grad)


def _channel_sum(a: NDArray) -> NDArray:
    """Sums of (N, C, *) per channel, (C,): the trailing axes, then the batch axis
    (two row-wise reductions, where one over axes (0, 2, ...) would permute and copy)."""
    if a.ndim > 2:
        a = a.sum(axis=tuple(range(2, a.ndim)))
    return a.sum(axis=0)


def _check_batch_shapes(x: tuple[int, ...], weight: tuple[int, ...],
                        bias: tuple[int, ...]) -> int:
    if len(x) < 2:
        raise ShapeError(f"batch_norm: input must be (N, C, *), got shape {x}")
    if weight != x[1:2] or bias != x[1:2]:
        raise ShapeError(f"batch_norm: weight {weight} and bias {bias} must both have shape "
                         f"({x[1]},) for input {x} (C = axis 1)")
    return x[1]


def batch_norm(x: Tensor, weight: Tensor, bias: Tensor, running_mean: Tensor | None = None,
               running_var: Tensor | None = None, training: bool = True,
               momentum: float | None = 0.1, eps: float = 1e-5,
               num_batches_tracked: int = 0) -> Tensor:
    """Batch normalisation per channel in one graph node, as ``torch.nn.functional.batch_norm``.

    In training the statistics are the batch's (biased variance) and the
    running statistics, when given, are replaced by ``(1 - momentum) * running
    + momentum * batch`` (unbiased variance; ``momentum=None`` averages over
    ``num_batches_tracked`` batches, this one included). Otherwise the running
    statistics normalise.

    Shapes: x (N, C, *), weight (C,), bias (C,), running_mean/var (C,) -> (N, C, *).

    Raises:
        ShapeError: x has fewer than 2 dims, or weight or bias is not (C,).
        ValueError: training with one value per channel; eval without running statistics.
    """
    return BatchNorm.apply(x, weight, bias, running_mean=running_mean,
                           running_var=running_var, training=training, momentum=momentum,
                           eps=eps, num_batches_tracked=num_batches_tracked)


def batch_norm_reference(x: Tensor, weight: Tensor, bias: Tensor,
                         stats: tuple[Tensor, Tensor] | None = None,
                         eps: float = 1e-5) -> Tensor:
    """The same function from composite ops: batch statistics when ``stats`` is
    None, else the given ``(mean, var)`` (C,) (differentiable to any order)."""
    c = _check_batch_shapes(tuple(x.shape), tuple(weight.shape), tuple(bias.shape))
    shape = (c,) + (1,) * (x.ndim - 2)
    axes = (0, *range(2, x.ndim))
    if stats is None:
        mean = x.mean(axes).reshape(shape)
        var = ((x - mean) * (x - mean)).mean(axes).reshape(shape)
    else:
        mean, var = stats[0].reshape(shape), stats[1].reshape(shape)
    return (x - mean) * (var + eps) ** -0.5 * weight.reshape(shape) + bias.reshape(shape)


PRIMITIVES = (LayerNorm, BatchNorm)
COMPOSITES = (layer_norm_reference, batch_norm_reference)
