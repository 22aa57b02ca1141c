"""Scaled dot-product attention as one kernel forward and one backward (v2.2, optional).

``attention`` gives softmax(scale * q k^T + mask) v and each query's
log-sum-exp; ``attention_backward`` the gradients of q, k and v from the
output's gradient, recomputing the probabilities from that log-sum-exp (as
flash attention does), so nothing of size L x S lives between the two. Where
the device has the ``attention`` and ``attention_backward`` kernels
(layouts in ``_numpy_attention``) each is one call; elsewhere both compose
matmul, log-sum-exp and elementwise kernels, with the same results to
rounding. Composed from NDArray ops, the forward alone writes the scores
four times (product, scale, mask, softmax) and its backward reads and
writes them five more.

A query that sees no key (every score -inf) gets an output of 0 and zero
gradients, as PyTorch's ``scaled_dot_product_attention`` gives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._checks import check_same_device_dtype
from ._compute import _check_floating, logsumexp, matmul
from ._dtypes import float32
from ._errors import ShapeError
from ._narrow import kernels_of, optional_kernel
from ._ndarray import NDArray
from ._rnn import _at_zero
from ._select import where

_KERNELS = ("attention", "attention_backward")


def has_attention_kernels(a: NDArray) -> bool:
    """Whether ``a``'s device runs the attention kernels for its dtype (a 16-bit float
    through their float32 form)."""
    device, dtype = a._device, a._dtype
    for name in _KERNELS:
        if getattr(device.kernels, name) is None:
            return False
        accepted = device.kernel_dtypes.get(name, ())
        if dtype.name not in accepted and not (dtype.is_narrow and "float32" in accepted):
            return False
    return True


def _batch(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, op: str
           ) -> tuple[tuple[int, ...], int, int, int, int]:
    """The batch dims and (L, S, E, Ev), after the shape checks."""
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise ShapeError(f"{op}: query, key and value need at least 2 dims (*, L, E), got "
                         f"{q.shape}, {k.shape} and {v.shape}")
    batch = q.shape[:-2]
    if k.shape[:-2] != batch or v.shape[:-2] != batch:
        raise ShapeError(f"{op}: query {q.shape}, key {k.shape} and value {v.shape} must "
                         "have the same batch dims (*, ., .)")
    (L, E), (S, Ek), (Sv, Ev) = q.shape[-2:], k.shape[-2:], v.shape[-2:]  # noqa: N806
    if Ek != E:
        raise ShapeError(f"{op}: query {q.shape} and key {k.shape} must have the same "
                         f"embedding size: {E} != {Ek}")
    if Sv != S:
        raise ShapeError(f"{op}: key {k.shape} and value {v.shape} must have the same "
                         f"sequence length: {S} != {Sv}")
    check_same_device_dtype((q, k, v) if mask is None else (q, k, v, mask), op)
    _check_floating(q._dtype, op)
    return batch, L, S, E, Ev


def _mask_rows(mask: NDArray | None, batch: tuple[int, ...], L: int, S: int,  # noqa: N803
               op: str) -> tuple[NDArray | None, int]:
    """The mask as the kernels read it, compact (L, S) shared by every batch or
    (B, L, S), and mask_batch (0: no mask)."""
    if mask is None:
        return None, 0
    target = batch + (L, S)
    shape = (1,) * (len(target) - mask.ndim) + mask.shape
    if len(shape) > len(target) or any(m not in (1, t) for m, t in zip(shape, target)):
        raise ShapeError(f"{op}: mask of shape {mask.shape} does not broadcast to the scores' "
                         f"shape {target} (*, L, S)")
    shared = all(m == 1 for m in shape[:-2])
    rows = mask.reshape(shape).broadcast_to(((1,) * len(batch) if shared else batch) + (L, S))
    count = 1 if shared else math.prod(batch)
    return _at_zero(rows).reshape((count, L, S)), count


def _scores(q: NDArray, k: NDArray, mask: NDArray | None, scale: float, causal: bool
            ) -> NDArray:
    """``scale * q @ k^T + mask``, hidden keys -inf (the composite's scores)."""
    dims = tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2)
    scores: Any = matmul(q, k.permute(dims)) * scale
    if mask is not None:
        scores = scores + mask
    if causal:
        L, S = q.shape[-2], k.shape[-2]  # noqa: N806
        hidden = np.arange(S)[None, :] > np.arange(L)[:, None]
        blocked = NDArray(np.where(hidden, -np.inf, 0.0), dtype=q._dtype, device=q._device)
        scores = scores + blocked
    return scores


def _probabilities(scores: NDArray, lse: NDArray) -> NDArray:
    """exp(scores - lse) over the last axis, 0 on a row whose lse is -inf."""
    safe: Any = where(lse == float("-inf"), 0.0, lse)
    shifted: Any = scores - safe.reshape(lse.shape + (1,))
    return shifted.exp()


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None = None,
              scale: float | None = None, causal: bool = False) -> tuple[NDArray, NDArray]:
    """softmax(scale * q @ k^T + mask) @ v over the keys, and each query's log-sum-exp.

    Shapes: q (*, L, E), k (*, S, E), v (*, S, Ev) with the same batch dims ``*``;
    mask (additive, q's dtype) broadcastable to (*, L, S), or None -> out (*, L, Ev),
    lse (*, L) (float32 for a 16-bit q: the backward recomputes the probabilities
    from it). ``causal`` hides key j from query i where j > i; ``scale`` defaults
    to 1 / sqrt(E).

    Raises:
        ShapeError: the shapes do not fit.
    """
    op = "attention"
    batch, L, S, E, Ev = _batch(q, k, v, mask, op)  # noqa: N806
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    if not has_attention_kernels(q):
        scores = _scores(q, k, mask, scale, causal)
        lse = logsumexp(scores, -1)
        return matmul(_probabilities(scores, lse), v), lse
    rows, mask_batch = _mask_rows(mask, batch, L, S, op)
    count = math.prod(batch)
    out = NDArray._empty(batch + (L, Ev), q._dtype, q._device, op)
    lse_dtype = float32 if q._dtype.is_narrow else q._dtype
    lse = NDArray._empty(batch + (L,), lse_dtype, q._device, op)
    if lse.size:
        # compact copies, not strided reads: the kernels read the char GPT's head views of
        # its (N, T, 3C) projection in place 4-7% slower than copy and kernel together
        ops = [_at_zero(x) for x in (q, k, v)]
        kernel = optional_kernel(q, "attention", op)
        assert kernel is not None  # has_attention_kernels
        kernel(*(x._buf for x in ops), (ops[0] if rows is None else rows)._buf, out._buf,
               lse._buf, count, L, S, E, Ev, mask_batch, scale, bool(causal))
    return out, lse


def attention_backward(g: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None,
                       lse: NDArray, scale: float | None = None, causal: bool = False
                       ) -> tuple[NDArray, NDArray, NDArray]:
    """The gradients of q, k and v of :func:`attention` from its output's gradient ``g``
    (*, L, Ev), given the ``lse`` it returned; the other arguments as there.

    With p = exp(scores - lse): dv = p^T g, dp = g v^T, ds = p (dp - rowsum(p dp)),
    dq = scale ds k, dk = scale ds^T q.
    """
    op = "attention_backward"
    batch, L, S, E, Ev = _batch(q, k, v, mask, op)  # noqa: N806
    if g.shape != batch + (L, Ev):
        raise ShapeError(f"{op}: gradient {g.shape} does not match the output "
                         f"{batch + (L, Ev)}")
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    if not has_attention_kernels(q):
        return _composite_backward(g, q, k, v, mask, lse, scale, causal)
    rows, mask_batch = _mask_rows(mask, batch, L, S, op)
    grads = [NDArray._empty(batch + x.shape[-2:], q._dtype, q._device, op) for x in (q, k, v)]
    if any(x.size for x in grads):
        if not lse.size:  # L == 0: no query, so dk and dv are sums of nothing
            for x in grads:
                kernels_of(x, "fill", op).fill(x._buf, 0.0)
            return grads[0], grads[1], grads[2]
        ops = [_at_zero(x) for x in (g, q, k, v)]
        kernel = optional_kernel(q, "attention_backward", op)
        assert kernel is not None  # has_attention_kernels
        kernel(*(x._buf for x in ops), (ops[1] if rows is None else rows)._buf,
               _at_zero(lse)._buf, *(x._buf for x in grads), math.prod(batch), L, S, E, Ev,
               mask_batch, scale, bool(causal))
    return grads[0], grads[1], grads[2]


def _composite_backward(g: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None,
                        lse: NDArray, scale: float, causal: bool
                        ) -> tuple[NDArray, NDArray, NDArray]:
    """attention_backward from matmul and elementwise kernels."""
    p: Any = _probabilities(_scores(q, k, mask, scale, causal), lse.astype(q._dtype))
    dims = tuple(range(q.ndim - 2)) + (q.ndim - 1, q.ndim - 2)
    dp: Any = matmul(g, v.permute(dims))
    ds: Any = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    pt: Any = p.permute(dims)
    return matmul(ds, k) * scale, matmul(ds.permute(dims), q) * scale, matmul(pt, g)
