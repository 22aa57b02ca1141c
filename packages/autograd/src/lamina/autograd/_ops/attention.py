"""Scaled dot-product attention as one op: ``scaled_dot_product_attention``.

Composed, attention is a product, a scale, a mask, a softmax and a second
product forward (five graph nodes, each writing the (L, S) scores) and twice
that backward. As one node the forward is :func:`lamina.ndarray.attention`
(one kernel where the device has it), which saves only each query's
log-sum-exp, and the backward rule is::

    p  = exp(scale * q k^T + mask - lse)        (recomputed, 0 for a query seeing no key)
    dv = p^T g,  dp = g v^T,  ds = p * (dp - sum(p * dp)),
    dq = scale * ds k,  dk = scale * ds^T q,  dmask = ds

A first-order backward runs it as :func:`lamina.ndarray.attention_backward`
(one kernel). With ``create_graph``, or where the mask itself needs a
gradient, the rule runs on Tensors, ``p`` recomputed from them, so it records
and higher-order gradients are exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lamina import ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from ._util import as_tensors
from .elementwise import dropout


class Attention(Function):
    """softmax(scale * q @ k^T + mask) @ v over the keys (the mask optional)."""

    name = "scaled_dot_product_attention"
    save_inputs = True

    def forward(self, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None = None, *,
                scale: float, causal: bool) -> NDArray:
        self.scale, self.causal = scale, causal
        out, self.lse = nd.attention(q, k, v, mask, scale, causal)
        return out

    def release(self) -> None:
        super().release()
        self.lse = None

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        q, k, v, *rest = self.inputs
        mask = rest[0] if rest else None
        need = self.needs_input_grad
        if grad_mode._state.enabled or (mask is not None and need[3]):
            return _attention_grads(g, q, k, v, mask, self.scale, self.causal, need)
        dq, dk, dv = nd.attention_backward(g._data, q._data, k._data, v._data,
                                           None if mask is None else mask._data, self.lse,
                                           self.scale, self.causal)
        grads = (dq if need[0] else None, dk if need[1] else None, dv if need[2] else None)
        return as_tensors(grads + (None,) * len(rest))


def _causal_scores(scores: Any, causal: bool) -> Any:
    """``scores`` with key j hidden (-inf) from query i where j > i."""
    if not causal:
        return scores
    L, S = scores.shape[-2:]  # noqa: N806
    hidden = np.arange(S)[None, :] > np.arange(L)[:, None]
    return scores + make(nd.array(np.where(hidden, -np.inf, 0.0), dtype=scores.dtype,
                                  device=scores.device))


def _weights(scores: Any) -> Any:
    """softmax over the last axis as exp(scores - logsumexp), 0 on a row of -inf only (a
    query that sees no key: PyTorch's), with no NaN in any order of gradient: such a row's
    log-sum-exp is taken over zeros in its place."""
    unseen = (scores == float("-inf")).all(-1, keepdim=True)
    return (scores - scores.masked_fill(unseen, 0.0).logsumexp(-1, keepdim=True)).exp()


def _attention_grads(g: Any, q: Any, k: Any, v: Any, mask: Any, scale: float, causal: bool,
                     need: tuple[bool, ...]) -> tuple[Any, ...]:
    """The backward rule of the module docstring on Tensors (gradients of gradients)."""
    scores = (q @ k.mT) * scale
    if mask is not None:
        scores = scores + mask
    p = _weights(_causal_scores(scores, causal))
    dp = g @ v.mT
    ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    grads = ((ds @ k) * scale if need[0] else None,
             (ds.mT @ q) * scale if need[1] else None,
             p.mT @ g if need[2] else None)
    return grads + ((ds if need[3] else None,) if mask is not None else ())


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(query @ key^T * scale + attn_mask) @ value, in one graph node.

    As ``torch.nn.functional.scaled_dot_product_attention`` with a float mask
    (:func:`lamina.nn.functional.scaled_dot_product_attention` also takes
    boolean ones). A query that sees no key (its scores all -inf) gets 0, as
    in PyTorch. With ``dropout_p > 0`` (dropout on the weights, applied
    whenever it is given, as in PyTorch), or batch dims of query, key and value
    that differ (broadcasting), it is composed from the ops instead.

    Args:
        query: (*, L, E).
        key: (*, S, E).
        value: (*, S, Ev).
        attn_mask: float, added to the scores, broadcastable to (*, L, S), or None.
        dropout_p: dropout probability on the weights.
        is_causal: hide key j from query i where j > i (top-left aligned).
        scale: score scale, default 1 / sqrt(E).

    Returns:
        (*, L, Ev).

    Raises:
        ShapeError: the shapes do not fit.
        DTypeError: the operands' dtypes differ or are not floats.

    Example:
        >>> import lamina.autograd as ag
        >>> q = ag.ones(2, 3, 4, 8)
        >>> scaled_dot_product_attention(q, q, q, is_causal=True).shape
        (2, 3, 4, 8)
    """
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ShapeError(f"scaled_dot_product_attention: query, key and value need at least 2 "
                         f"dims (*, L, E), got {query.shape}, {key.shape} and {value.shape}")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    if dropout_p > 0.0 or not query.shape[:-2] == key.shape[:-2] == value.shape[:-2]:
        return scaled_dot_product_attention_reference(query, key, value, attn_mask, dropout_p,
                                                      is_causal, scale)
    inputs = (query, key, value) if attn_mask is None else (query, key, value, attn_mask)
    return Attention.apply(*inputs, scale=scale, causal=bool(is_causal))


def scaled_dot_product_attention_reference(query: Tensor, key: Tensor, value: Tensor,
                                           attn_mask: Tensor | None = None,
                                           dropout_p: float = 0.0, is_causal: bool = False,
                                           scale: float | None = None) -> Tensor:
    """The same function from composite ops (differentiable to any order)."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = (query @ key.mT) * scale
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = _weights(_causal_scores(scores, is_causal))
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


PRIMITIVES = (Attention,)
COMPOSITES = (scaled_dot_product_attention_reference,)
