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

Each op has one backward rule (``_layer_norm_grads``, ``_batch_norm_grads``),
written with operations that Tensor and NDArray share. A first-order backward
runs on NDArrays: the statistics the forward saved, no graph and no Tensor
per step (LayerNorm's as ``nd.layer_norm_backward``: the same rule, in one
pass of the backend's ``layer_norm_backward_last`` where it has one). With
``create_graph`` (gradients of gradients) the rule runs on Tensors, with the
statistics recomputed as Tensor functions of the input, so it records and
higher-order gradients are exact.
"""

from __future__ import annotations

import math
from typing import Any

from lamina import ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from ._util import as_tensors


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

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        x, weight, _ = self.inputs
        if grad_mode._state.enabled:  # create_graph: statistics that depend on x, recorded
            xhat, rstd = _normalised(x, self.eps)
            return _layer_norm_grads(g, weight, xhat, rstd, self.needs_input_grad)
        need_x, need_w, need_b = self.needs_input_grad
        # one pass of the backend's layer_norm_backward_last where it has one
        dx, dw, db = nd.layer_norm_backward(g._data, x._data, weight._data, self.mean, self.rstd)
        return as_tensors((dx if need_x else None, dw if need_w else None,
                           db if need_b else None))


def _normalised(x: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``xhat`` and ``rstd`` over the last axis, as Tensor functions of ``x``."""
    centred = x - x.mean(-1, keepdim=True)
    rstd = ((centred * centred).mean(-1, keepdim=True) + eps) ** -0.5
    return centred * rstd, rstd


def _layer_norm_grads(g: Any, weight: Any, xhat: Any, rstd: Any,
                      need: tuple[bool, ...]) -> tuple[Any, ...]:
    """LayerNorm's backward rule, on NDArrays or on Tensors (see the module's docstring).
    The engine sums the (…, D) gradients of weight and bias down to (D,)."""
    need_x, need_w, need_b = need
    dx = None
    if need_x:
        gw = g * weight
        dx = (gw - gw.mean(-1, keepdims=True)
              - xhat * (gw * xhat).mean(-1, keepdims=True)) * rstd
    return dx, (g * xhat if need_w else None), (g if need_b else None)


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

    and with fixed (running) statistics ``dx = g * weight * rstd``. Where the device
    has the fused batch-norm kernels (``nd.has_batch_norm_kernels``) the forward is
    ``batch_norm_stats`` and ``batch_norm_apply`` and a first-order backward one
    ``batch_norm_backward``, from x and the saved mean and rstd; elsewhere both
    compose NDArray reductions and elementwise ops and save ``x - mean``.
    """

    name = "batch_norm"
    save_inputs = True

    def forward(self, x: NDArray, weight: NDArray, bias: NDArray, running_mean: Any,
                running_var: Any, training: bool, momentum: float | None, eps: float,
                num_batches_tracked: int) -> NDArray:
        c = _check_batch_shapes(x.shape, weight.shape, bias.shape)
        self.training, self.eps = training, eps
        self.stat_shape = (c,) + (1,) * (x.ndim - 2)
        # the one decision point: the device's fused kernels, else composite NDArray ops
        stats = (running_mean, running_var)
        fixed = () if training else tuple(s._data for s in stats if s is not None)
        self.fused = nd.has_batch_norm_kernels(x, weight, bias, *fixed)
        self.centred = None
        if training:
            n = x.size // c
            if n < 2:
                raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                                 f"training, got input of shape {x.shape}")
            if self.fused:
                mean, var = nd.batch_norm_stats(x)
            else:
                mean, self.centred, var = _batch_statistics(x, self.stat_shape)
            if running_mean is not None and running_var is not None:
                m = 1.0 / max(num_batches_tracked, 1) if momentum is None else momentum
                _update_running(running_mean, running_var, mean, var, m, n)
        else:
            if running_mean is None or running_var is None:
                raise ValueError("batch_norm: running statistics are needed in eval mode")
            mean, var = running_mean._data, running_var._data
            self.fixed_mean = mean
        self.rstd = (var + eps) ** -0.5
        if self.fused:
            self.mean = mean
            return nd.batch_norm_apply(x, mean, self.rstd, weight, bias)
        if not training:
            self.centred = x - mean.reshape(self.stat_shape)
        scale = (self.rstd * weight).reshape(self.stat_shape)
        return self.centred * scale + bias.reshape(self.stat_shape)

    def release(self) -> None:
        super().release()
        self.centred = self.rstd = self.fixed_mean = self.mean = None

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        x, weight, _ = self.inputs
        shape, training, need = self.stat_shape, self.training, self.needs_input_grad
        if grad_mode._state.enabled:  # create_graph: statistics that depend on x, recorded
            centred, rstd = self._recorded_statistics(x)
            return _batch_norm_grads(g, weight, centred, rstd, shape, training, need)
        if self.fused:
            grads = nd.batch_norm_backward(g._data, x._data, self.mean, self.rstd,
                                           weight._data, training)
            return as_tensors(tuple(d if k else None for d, k in zip(grads, need)))
        return as_tensors(_batch_norm_grads(g._data, weight._data, self.centred, self.rstd,
                                            shape, training, need))

    def _recorded_statistics(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``x - mean`` and ``rstd`` as Tensor functions of ``x`` (running statistics
        are constants)."""
        if self.training:
            _, centred, var = _batch_statistics(x, self.stat_shape)
            return centred, (var + self.eps) ** -0.5
        fixed_mean = make(self.fixed_mean).reshape(self.stat_shape)
        return x - fixed_mean, make(self.rstd)


def _update_running(running_mean: Tensor, running_var: Tensor, mean: NDArray, var: NDArray,
                    m: float, n: int) -> None:
    """PyTorch's running statistics: ``(1 - m) * running + m * batch``, with the batch's
    unbiased variance (``n`` values per channel), written into the buffers' own storage
    (as PyTorch does, and so that a compiled step's replays update them)."""
    nd.blend_(running_mean._data, mean, 1 - m, m)  # one pass each, in place
    nd.blend_(running_var._data, var, 1 - m, m * n / (n - 1))


def _batch_norm_grads(g: Any, weight: Any, centred: Any, rstd: Any,
                      stat_shape: tuple[int, ...], training: bool,
                      need: tuple[bool, ...]) -> tuple[Any, ...]:
    """BatchNorm's backward rule (see :class:`BatchNorm`), on NDArrays or on Tensors."""
    need_x, need_w, need_b = need
    sums = need_x and training
    xhat = centred * rstd.reshape(stat_shape) if need_w or sums else None
    g_sum = _channel_sum(g) if need_b or sums else None
    gx_sum = _channel_sum(g * xhat) if need_w or sums else None
    dx = None
    if need_x:
        if training:
            inv_n = stat_shape[0] / math.prod(g.shape)
            g = (g - (g_sum * inv_n).reshape(stat_shape)
                 - xhat * (gx_sum * inv_n).reshape(stat_shape))
        dx = g * (weight * rstd).reshape(stat_shape)
    return dx, (gx_sum if need_w else None), (g_sum if need_b else None)


def _batch_statistics(x: Any, stat_shape: tuple[int, ...]) -> tuple[Any, Any, Any]:
    """Mean (C,), ``x - mean`` and biased variance (C,) of (N, C, *) per channel, on
    NDArrays (the forward) or on Tensors (a recorded backward)."""
    inv_n = 1.0 / (math.prod(x.shape) // stat_shape[0])
    mean = _channel_sum(x) * inv_n
    centred = x - mean.reshape(stat_shape)
    return mean, centred, _channel_sum(centred * centred) * inv_n


def _channel_sum(a: Any) -> Any:
    """Sums of (N, C, *) per channel, (C,), of an NDArray or a Tensor: the trailing axes,
    then the batch axis (two row-wise reductions, where one over axes (0, 2, ...) would
    permute and copy)."""
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
