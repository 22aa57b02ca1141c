"""The negative log-likelihood of class indices, in one node: where ``cross_entropy`` ends.

Written with composite ops (compare with ``ignore_index``, where, gather,
negate, mask, sum, divide), ``nll_loss`` is about ten nodes forward and as many
backward, on tensors of one value per row: per-op overhead, not arithmetic,
in a small model's step. Here it is one node, for input ``x`` of shape
``(N, C, *d)`` and targets ``t`` of shape ``(N, *d)``, with ``w`` the class
weights (1 when not given) and ``n`` running over the ``N * prod(d)`` rows::

    loss[n] = -w[t_n] * x[n, t_n]       (0 where t_n == ignore_index)
    "mean": sum(loss) / sum(w[t_n]),  "sum": sum(loss),  "none": loss
    dx[n, c] = -w[t_n] * g_n where c == t_n, else 0,
    g_n = g / sum(w[t_n]) ("mean"), g ("sum"), g[n] ("none")

The gradient is linear in ``g`` and does not depend on ``x``, so one rule
serves every order: on NDArrays for a first-order backward, on Tensors (a
scatter-add, which records) with ``create_graph``. The class weights get no
gradient, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray

from .. import _function
from .. import _grad_mode as grad_mode
from .._function import FREED_MESSAGE, Function
from .._tensor_base import Tensor, TensorBase, make
from .index import ScatterAdd

REDUCTIONS = ("mean", "sum", "none")


def _rows(x: NDArray) -> NDArray:
    """``(N, C, *d)`` as ``(N * prod(d), C)``: the class axis last."""
    if x.ndim == 2:
        return x
    return x.permute(0, *range(2, x.ndim), 1).reshape(-1, x.shape[1])


class NllLoss(Function):
    """``nll_loss`` of log-probabilities ``(N, C, *d)`` and int64 targets ``(N, *d)``,
    with optional class weights ``(C,)``."""

    name = "nll_loss"

    def forward(self, x: NDArray, target: NDArray, *weight: NDArray, ignore_index: int,
                reduction: str) -> NDArray:
        rows = _rows(x)
        m, c = rows.shape
        t = target.reshape(-1)
        # Which path runs depends on the targets' values: not while a capture (or the
        # profiler) observes the ops, since a replay must issue the same kernels for
        # any targets.
        if _function.observer is None and not weight and m and not 0 <= ignore_index < c \
                and _in_range(rows, t):
            return self._forward_unweighted(rows, t, target.shape, reduction)
        valid = t != ignore_index
        safe = nd.where(valid, t, 0)
        w = valid.astype(x.dtype)
        if m:
            # gathering the targets from a C-long row checks them: IndexError names a bad one
            at_target = (weight[0] if weight else rows[0]).take(safe)
            if weight:
                w = nd.where(valid, at_target, 0.0)
        self.pos = nd.arange(0, m * c, c, device=x.device) + safe  # flat n * C + t_n
        picked = rows.compact().reshape(-1).take(self.pos)
        loss = nd.where(valid, -(picked * w), 0.0)  # an ignored -inf is 0, not 0 * inf
        self.reduction, self.rows = reduction, rows.shape
        if reduction == "none":
            self.scale = w
            return loss.reshape(target.shape)
        if reduction == "sum":
            self.scale = w
            return loss.sum()
        total = w.sum()
        self.scale = w / total
        return loss.sum() / total

    def _forward_unweighted(self, rows: NDArray, t: NDArray, shape: tuple[int, ...],
                            reduction: str) -> NDArray:
        """The forward without class weights where every target is a class (none is
        ``ignore_index``): each row's weight is 1, so the valid mask, the weights and
        their sum are constants. The same values as the general path, bit for bit
        (``-sum`` is the sum of the negated terms; the count is exact), in 5 kernels
        instead of 14: the forward of a 128 x 10 loss, end to end, 90 -> 57 us on Zen 3."""
        m, c = rows.shape
        self.pos = _cached(("starts", m, c, rows.device),
                           lambda: nd.arange(0, m * c, c, device=rows.device)) + t
        picked = rows.compact().reshape(-1).take(self.pos)
        self.reduction, self.rows = reduction, (m, c)
        self.scale = _cached(("scale", m, rows.dtype, rows.device, reduction == "mean"),
                             lambda: _row_weights(m, rows, reduction == "mean"))
        if reduction == "none":
            return (-picked).reshape(shape)
        loss = -picked.sum()
        return loss if reduction == "sum" else loss / float(m)

    def release(self) -> None:
        super().release()
        self.pos = self.scale = None

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        m, c = self.rows
        if grad_mode._state.enabled:  # create_graph: the rule, recorded
            per_row = (g.reshape(-1) if self.reduction == "none" else g) * make(self.scale)
            flat = ScatterAdd.apply(-per_row, indices=self.pos, axis=0, size=m * c)
        else:
            g_d = g._data.reshape(-1) if self.reduction == "none" else g._data
            flat = make(nd.scatter_add(-(g_d * self.scale), self.pos, 0, m * c))
        shape = self.shapes[0]
        dx = flat.reshape(m, c)
        if len(shape) > 2:  # back to (N, C, *d)
            dx = dx.reshape(shape[0], *shape[2:], c)
            dx = dx.permute(0, len(shape) - 1, *range(1, len(shape) - 1))
        return (dx, None) + (None,) * (len(self.shapes) - 2)


def _in_range(rows: NDArray, t: NDArray) -> bool:
    """Whether every target is a class in [0, C): a gather from one row checks it."""
    try:
        rows[0].take(t)
    except IndexError:
        return False
    return True


def _row_weights(m: int, rows: NDArray, mean: bool) -> NDArray:
    """The backward's per-row factor: 1 / m ("mean", as w / sum(w) rounds it), else 1."""
    ones = nd.ones((m,), dtype=rows.dtype, device=rows.device)
    return ones / float(m) if mean else ones


_CACHE: dict[tuple[Any, ...], NDArray] = {}


def _cached(key: tuple[Any, ...], make_array: Any) -> NDArray:
    """A constant array per (shape, dtype, device) key, made once: the row starts and
    row weights of a training loop's losses (nothing writes to them)."""
    out = _CACHE.get(key)
    if out is None:
        if len(_CACHE) >= 64:
            _CACHE.clear()
        out = _CACHE[key] = make_array()
    return out


def nll_loss(log_probs: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under ``log_probs``, one node.

    Shapes: log_probs ``(N, C, *d)``, target ``(N, *d)`` int64, weight ``(C,)``;
    the result is 0-d, or ``(N, *d)`` with ``reduction="none"``. Callers check the
    arguments (``lamina.nn.functional.nll_loss`` does, naming itself).

    Raises:
        IndexError: a target outside ``[0, C)`` that is not ``ignore_index``.
    """
    weights: tuple[Any, ...] = () if weight is None else (weight,)
    return NllLoss.apply(log_probs, target, *weights, ignore_index=ignore_index,
                         reduction=reduction)


PRIMITIVES = (NllLoss,)
COMPOSITES = ()
