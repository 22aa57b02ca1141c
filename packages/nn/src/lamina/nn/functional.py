"""Functional forms of the layers and losses (stateless; weights are arguments).

Shapes use N for the batch, C for classes or channels, ``*`` for any
further dims.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError

__all__ = [
    "batch_norm", "dropout", "embedding", "gelu", "group_norm", "layer_norm", "linear",
    "log_softmax", "one_hot", "relu", "relu_", "sigmoid", "softmax", "tanh",
    "scaled_dot_product_attention", "attention", "causal_mask",
]

# ``x @ weight.T + bias`` (x (*, in), weight (out, in), bias (out,) or None) is one
# graph node of lamina.autograd; the same function, not a wrapper (one call fewer).
linear = ag.linear


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0), elementwise; ``inplace=True`` writes into ``x`` and returns it."""
    return x.relu_() if inplace else x.relu()


def relu_(x: Tensor) -> Tensor:
    """:func:`relu` in place (``x.relu_()``); returns ``x``."""
    return x.relu_()


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


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
            ) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p).

    Identity (``x`` itself) when ``training`` is False or ``p == 0``. With
    ``inplace``, ``x`` is multiplied in place by the scaled mask and returned.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if inplace:  # the mask as ag.dropout draws it: dropout of ones
        return x.mul_(ag.dropout(ag.ones_like(x), p, training=True))
    return ag.dropout(x, p, training=True)


def one_hot(target: Tensor, num_classes: int, dtype: Any = "float32") -> Tensor:
    """int64 (*,) -> (*, num_classes) of ``dtype`` with a 1 at each target."""
    return ag.one_hot(target, num_classes, dtype)


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


def layer_norm(x: Tensor, normalized_shape: int | tuple[int, ...],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims (biased variance).

    One graph node (:func:`lamina.autograd.layer_norm`, the backend's fused
    kernel where it has one): trailing dims D are viewed as one axis of
    size prod(D), a missing weight or bias acts as ones or zeros.

    Args:
        x: (*, *D).
        normalized_shape: D, an int or a tuple.
        weight, bias: (*D) or None.

    Returns:
        (*, *D).
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) \
        else tuple(normalized_shape)
    xs = x.shape
    k = len(shape)
    if not k or len(xs) < k or xs[len(xs) - k:] != shape:
        raise ShapeError(f"layer_norm: expected input of shape (*, "
                         f"{', '.join(map(str, shape))}), got {tuple(xs)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.shape != shape:
            raise ShapeError(f"layer_norm: {name} must have shape {shape}, got {p.shape}")
    size = math.prod(shape)
    if not size:  # nothing to normalise: the composite form gives the (empty) result
        return _layer_norm_composite(x, k, weight, bias, eps)
    if weight is None:
        weight = ag.Tensor(nd.ones(size, dtype=x.dtype, device=x.device))
    if bias is None:
        bias = ag.Tensor(nd.zeros(size, dtype=x.dtype, device=x.device))
    if k == 1:
        return ag.layer_norm(x, weight, bias, eps)
    flat = x.reshape(xs[:len(xs) - k] + (size,))
    return ag.layer_norm(flat, weight.reshape(size), bias.reshape(size), eps).reshape(xs)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each of ``num_groups`` channel groups of each sample, then scale per channel.

    The C channels of (N, C, *) are split into ``num_groups`` groups of C / G
    consecutive channels; each group's values (over its channels and every
    trailing dim) are normalised with their own mean and biased variance, by
    the layer-norm kernel over a (N, G, C / G * prod(*)) view.

    Args:
        x: (N, C, *).
        num_groups: G, dividing C.
        weight, bias: (C,) or None (ones, zeros).

    Returns:
        (N, C, *).
    """
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ShapeError(f"group_norm: expected an input of shape (N, C, *), got {shape}")
    c = shape[1]
    if num_groups < 1 or c % num_groups:
        raise ValueError(f"group_norm: the {c} channels of input {shape} do not split into "
                         f"num_groups={num_groups} equal groups; C must be divisible by it")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (c,):
            raise ShapeError(f"group_norm: {name} must have shape ({c},), got "
                             f"{tuple(p.shape)}")
    grouped = x.reshape((shape[0], num_groups, -1))
    out = layer_norm(grouped, (grouped.shape[-1],), None, None, eps).reshape(shape)
    per_channel = (c,) + (1,) * (len(shape) - 2)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    return out + bias.reshape(per_channel) if bias is not None else out


def _layer_norm_composite(x: Tensor, k: int, weight: Tensor | None, bias: Tensor | None,
                          eps: float) -> Tensor:
    dims = tuple(range(x.ndim - k, x.ndim))
    centred = x - x.mean(dims, keepdim=True)
    out = centred / ((centred * centred).mean(dims, keepdim=True) + eps) ** 0.5
    if weight is not None:
        out = out * weight
    return out + bias if bias is not None else out


def embedding(indices: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` (num_embeddings, D) at int64 ``indices`` (*,) -> (*, D).

    The row ``padding_idx`` (negative counts from the end) is looked up as it
    is but receives no gradient, as in PyTorch.
    """
    if indices.dtype != "int64":
        raise TypeError(f"embedding: indices must be int64, got {indices.dtype}")
    try:
        out = ag.embedding(indices, weight)
        return out if padding_idx is None else _block_padding(out, indices, weight,
                                                              padding_idx)
    except IndexError:
        size = weight.shape[0]
        ids = indices.numpy().reshape(-1)
        bad = ids[(ids < 0) | (ids >= size)]
        if not len(bad):
            raise
        raise IndexError(f"embedding: token id {int(bad[0])} is outside the vocabulary of "
                         f"size {size} (ids must be in [0, {size}))") from None


def _block_padding(out: Tensor, indices: Tensor, weight: Tensor, padding_idx: int) -> Tensor:
    size = weight.shape[0]
    if not -size <= padding_idx < size:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for a "
                         f"table of {size} rows (it must be in [-{size}, {size}))")
    # The padding positions take the same values, detached: no gradient reaches that row.
    padded = (indices == padding_idx % size).reshape(tuple(indices.shape) + (1,))
    return ag.where(padded, out.detach(), out)


# ----- attention -----------------------------------------------------------------------
# Masks follow PyTorch: ``scaled_dot_product_attention``'s boolean mask marks the
# pairs that take part (True = attend). A boolean mask is a bool Tensor, a numpy
# ``bool`` array (or a list of bools), or an int64 Tensor (nonzero = True); a
# float mask is added to the scores (``-inf`` removes a pair).

_CAUSAL: dict[tuple[int, int, int, str, str], Tensor] = {}


def causal_mask(q_len: int, k_len: int, offset: int = 0, dtype: Any = None,
                device: Any = None) -> Tensor:
    """Additive causal mask (q_len, k_len): 0 where key j <= offset + query i, else -inf.

    ``offset`` is the position of the first query among the keys: 0 for
    PyTorch's ``is_causal`` (top-left aligned), ``k_len - q_len`` when the
    queries are the last ``q_len`` positions (decoding with a key/value cache).
    Cached per shape, device and dtype; the result never requires grad.
    """
    dtype = nd.as_dtype(dtype) if dtype is not None else nd.float32
    dev = nd.get_device(device) if device is not None else nd.default_device()
    key = (q_len, k_len, offset, str(dtype), str(dev))
    mask = _CAUSAL.get(key)
    if mask is None:
        blocked = np.arange(k_len)[None, :] > np.arange(q_len)[:, None] + offset
        values = np.where(blocked, -np.inf, 0.0).astype(dtype.np)
        mask = _CAUSAL[key] = Tensor(nd.array(values, dtype=dtype, device=dev))
    return mask


def _is_boolean(mask: Any) -> bool:
    if isinstance(mask, Tensor):
        return mask.dtype == nd.bool_ or mask.dtype == nd.int64
    return np.asarray(mask).dtype == np.bool_ or np.asarray(mask).dtype.kind in "iu"


def additive_mask(mask: Any, like: Tensor, true_means_keep: bool) -> Tensor:
    """A mask as a float Tensor to add to scores: boolean masks become 0 / -inf.

    Args:
        mask: bool or int64 Tensor, numpy bool/int array, or float Tensor/array (the
            float Tensor returned as is).
        like: a tensor whose dtype and device the result takes.
        true_means_keep: True for SDPA's convention, False for MultiheadAttention's.
    """
    if _is_boolean(mask):
        keep = mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask)
        keep = keep.astype(bool) if true_means_keep else ~keep.astype(bool)
        values = np.where(keep, 0.0, -np.inf).astype(like.dtype.np)
        return Tensor(nd.array(values, dtype=like.dtype, device=like.device))
    if isinstance(mask, Tensor):
        return mask
    return Tensor(nd.array(np.asarray(mask, dtype=like.dtype.np), dtype=like.dtype,
                           device=like.device))


def _broadcastable(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
              dropout_p: float = 0.0, scale: float | None = None,
              training: bool = True) -> tuple[Tensor, Tensor]:
    """softmax(q @ k^T * scale + mask) @ v, returning the output and the weights.

    Composed from the ops, for callers that need the weights
    (``MultiheadAttention(need_weights=True)``); without them,
    :func:`scaled_dot_product_attention` is one graph node. It checks nothing
    beyond what matmul checks. The softmax runs over the last axis, where
    backends with a fused ``softmax_last`` kernel use it; a query that sees no
    key gets NaN weights, as PyTorch's softmax gives.

    Args:
        query: (*, L, E).
        key: (*, S, E).
        value: (*, S, Ev).
        mask: additive, broadcastable to (*, L, S), or None.
        dropout_p: dropout on the weights, applied only when ``training``.
        scale: score scale, default 1 / sqrt(E).

    Returns:
        (out (*, L, Ev), weights (*, L, S)).

    Example:
        >>> from lamina import autograd
        >>> q = autograd.ones(2, 4, 8)
        >>> out, w = attention(q, q, q, causal_mask(4, 4))
        >>> out.shape, w.shape
        ((2, 4, 8), (2, 4, 4))
    """
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.mT) * scale
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0 and training:
        weights = ag.dropout(weights, dropout_p)
    return weights @ value, weights


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None
                                 ) -> Tensor:
    """Attention as ``torch.nn.functional.scaled_dot_product_attention``.

    One graph node (:func:`lamina.autograd.scaled_dot_product_attention`: a
    kernel forward and one backward where the device has them) unless
    ``dropout_p > 0`` or the batch dims of query, key and value differ; a
    query that sees no key gets 0, as in PyTorch.

    Args:
        query: (*, L, E).
        key: (*, S, E).
        value: (*, S, Ev).
        attn_mask: broadcastable to (*, L, S); boolean (True = attend) or float (added).
        dropout_p: dropout probability on the attention weights (always applied
            when > 0, as in PyTorch: pass 0.0 at evaluation).
        is_causal: mask out key j > query i (top-left aligned); excludes ``attn_mask``.
        scale: score scale, default 1 / sqrt(E).

    Returns:
        (*, L, Ev).

    Example:
        >>> from lamina import autograd
        >>> q = autograd.ones(2, 3, 5, 8)
        >>> scaled_dot_product_attention(q, q, q, is_causal=True).shape
        (2, 3, 5, 8)
    """
    op = "scaled_dot_product_attention"
    q_shape, k_shape, v_shape = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    if min(len(q_shape), len(k_shape), len(v_shape)) < 2:
        raise ShapeError(f"{op}: query, key and value need at least 2 dims (*, L, E), got "
                         f"{q_shape}, {k_shape} and {v_shape}")
    if q_shape[-1] != k_shape[-1]:
        raise ShapeError(f"{op}: query {q_shape} and key {k_shape} must have the same "
                         f"embedding size: {q_shape[-1]} != {k_shape[-1]}")
    if k_shape[-2] != v_shape[-2]:
        raise ShapeError(f"{op}: key {k_shape} and value {v_shape} must have the same "
                         f"sequence length: {k_shape[-2]} != {v_shape[-2]}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: pass either attn_mask or is_causal=True, not both")
    S = k_shape[-2]
    mask = None
    if attn_mask is not None:
        mask = additive_mask(attn_mask, query, true_means_keep=True)
        target = q_shape[:-1] + (S,)
        if not _broadcastable(tuple(mask.shape), target):
            raise ShapeError(f"{op}: attn_mask of shape {tuple(mask.shape)} does not "
                             f"broadcast to the scores' shape {target} (*, L, S)")
    return ag.scaled_dot_product_attention(query, key, value, mask, dropout_p, is_causal, scale)


# Convolution and pooling live beside their layers; these are their functional forms.
from ._conv import conv1d, conv2d, conv_transpose2d  # noqa: E402
from ._pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d  # noqa: E402
from ._pooling1d import adaptive_avg_pool1d, avg_pool1d, max_pool1d  # noqa: E402
from ._upsample import interpolate  # noqa: E402

__all__ += ["adaptive_avg_pool2d", "avg_pool2d", "conv2d", "max_pool2d"]

# Activations beyond the basic ones live beside their modules.
from ._activations import (  # noqa: E402
    celu,
    celu_,
    elu,
    elu_,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    logsigmoid,
    mish,
    prelu,
    relu6,
    rrelu,
    rrelu_,
    selu,
    selu_,
    silu,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)

__all__ += ["celu", "celu_", "elu", "elu_", "hardsigmoid", "hardswish", "hardtanh",
            "hardtanh_", "leaky_relu", "leaky_relu_", "logsigmoid", "mish", "prelu", "relu6",
            "selu", "selu_", "silu", "softmin", "softplus", "softsign"]
__all__ += ["conv1d", "conv_transpose2d"]

# Losses live beside their modules in _loss (one place for each loss's checks).
from ._loss import (  # noqa: E402
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)

__all__ += ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
            "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss"]

# Padding and distances live beside their modules.
from ._distance import cosine_similarity, normalize, pairwise_distance  # noqa: E402
from ._padding import pad  # noqa: E402

__all__ += ["cosine_similarity", "normalize", "pad", "pairwise_distance"]

# RMSNorm, channel and alpha dropout live beside their modules.
from ._dropout import (  # noqa: E402
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ._rms_norm import rms_norm  # noqa: E402

__all__ += ["alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
            "glu", "hardshrink", "rms_norm", "rrelu", "rrelu_", "softshrink", "tanhshrink",
            "threshold", "threshold_"]
__all__ += ["adaptive_avg_pool1d", "avg_pool1d", "interpolate", "max_pool1d"]
