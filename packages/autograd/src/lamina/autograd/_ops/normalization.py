"""Layer normalisation over the last axis as a single op, ``layer_norm``.

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
        _check_shapes(x.shape, weight.shape, bias.shape)
        self.eps = eps
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


PRIMITIVES = (LayerNorm,)
COMPOSITES = (layer_norm_reference,)
