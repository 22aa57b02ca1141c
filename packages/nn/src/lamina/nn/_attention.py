"""MultiheadAttention (PyTorch's layout), built on ``functional.attention``.

Masks follow PyTorch's conventions, which differ between the two entry points:

- ``scaled_dot_product_attention(attn_mask=...)``: a boolean mask marks the
  pairs that *take part* (True = attend);
- ``MultiheadAttention(attn_mask=..., key_padding_mask=...)``: a boolean mask
  marks the pairs that are *left out* (True = masked).

Lamina has no bool dtype, so a boolean mask is a numpy ``bool`` array (or a
Python list of bools) or an int64 Tensor (nonzero = True). A float mask
(a float Tensor or float numpy array) is *added* to the attention scores, so
``-inf`` removes a pair, in both entry points.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lamina import ndarray as nd
from lamina.autograd import Tensor

from . import functional as F
from . import init
from ._errors import ShapeError
from ._layers import Linear
from ._module import Module
from ._parameter import Parameter

__all__ = ["MultiheadAttention"]

class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters, names and masks.

    Parameters (as ``torch.nn.MultiheadAttention``): ``in_proj_weight``
    (3E, E) and ``in_proj_bias`` (3E,) when key and value have width E, else
    ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim), ``v_proj_weight``
    (E, vdim); ``out_proj`` a Linear(E, E). Projections start Xavier-uniform,
    biases at zero.

    Args:
        embed_dim: E, the query width and the output width.
        num_heads: H; must divide E.
        dropout: dropout on the attention weights (training only).
        bias: learn input and output projection biases.
        kdim, vdim: key and value widths (default E).
        batch_first: inputs are (N, L, E) instead of (L, N, E).

    Shape:
        query (N, L, E), key (N, S, kdim), value (N, S, vdim) (batch_first; or
        unbatched (L, E)) -> output (N, L, E) and weights (N, L, S), or
        (N, H, L, S) with ``average_attn_weights=False``.

    Example:
        >>> from lamina import autograd
        >>> mha = MultiheadAttention(16, 4, batch_first=True)
        >>> x = autograd.ones(2, 5, 16)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        ((2, 5, 16), (2, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by "
                             f"num_heads {num_heads} (both positive)")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        dtype = dtype or nd.float32

        def param(*shape: int) -> Parameter:
            return Parameter(nd.zeros(*shape, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = param(3 * embed_dim, embed_dim)
        else:
            self.q_proj_weight = param(embed_dim, embed_dim)
            self.k_proj_weight = param(embed_dim, self.kdim)
            self.v_proj_weight = param(embed_dim, self.vdim)
        if bias:
            self.in_proj_bias = param(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases (PyTorch's initialisation)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self) -> tuple[Tensor, Tensor, Tensor]:
        if self._qkv_same_embed_dim:
            return self.in_proj_weight.chunk(3, 0)
        return self.q_proj_weight, self.k_proj_weight, self.v_proj_weight

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True, is_causal: bool = False
                ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query, key, value: see the class docstring.
            key_padding_mask: (N, S); boolean (True = ignore that key) or float (added).
            need_weights: also return the attention weights.
            attn_mask: (L, S) or (N * H, L, S); boolean (True = masked) or float (added).
            average_attn_weights: average the returned weights over heads.
            is_causal: use a causal mask (key j > query i masked) when ``attn_mask``
                is None; with ``attn_mask`` given it is only a hint, as in PyTorch.

        Returns:
            (output, weights or None).
        """
        batched = query.ndim == 3
        self._check_inputs(query, key, value, batched)
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = _unsqueeze_mask(key_padding_mask)
        if not self.batch_first or not batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        n, q_len, k_len = query.shape[0], query.shape[1], key.shape[1]
        mask = self._mask(attn_mask, key_padding_mask, is_causal, query, n, q_len, k_len)
        wq, wk, wv = self._projections()
        bq = bk = bv = None
        if self.in_proj_bias is not None:
            bq, bk, bv = self.in_proj_bias.chunk(3, 0)
        q = self._heads(F.linear(query, wq, bq), n, q_len)
        k = self._heads(F.linear(key, wk, bk), n, k_len)
        v = self._heads(F.linear(value, wv, bv), n, k_len)
        if need_weights:
            out, weights = F.attention(q, k, v, mask, self.dropout, training=self.training)
        else:  # as PyTorch: scaled_dot_product_attention (one node; a query seeing no key gets 0)
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0)
        out = out.permute(0, 2, 1, 3).reshape(n, q_len, self.embed_dim)
        out = self.out_proj(out)
        if not self.batch_first or not batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        return out, (weights if batched else weights.squeeze(0))

    def _heads(self, x: Tensor, n: int, length: int) -> Tensor:
        """(N, T, E) -> (N, H, T, D)."""
        return x.reshape(n, length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor, batched: bool) -> None:
        name = f"MultiheadAttention(embed_dim={self.embed_dim}, num_heads={self.num_heads})"
        shapes = tuple(query.shape), tuple(key.shape), tuple(value.shape)
        ndim = 3 if batched else 2
        if query.ndim not in (2, 3) or key.ndim != ndim or value.ndim != ndim:
            raise ShapeError(f"{name}: query, key and value must all be 3-D (batched) or 2-D "
                             f"(unbatched), got {shapes[0]}, {shapes[1]} and {shapes[2]}")
        for what, shape, width in (("query", shapes[0], self.embed_dim),
                                   ("key", shapes[1], self.kdim),
                                   ("value", shapes[2], self.vdim)):
            if shape[-1] != width:
                raise ShapeError(f"{name}: expected {what} of width {width}, got shape {shape}")
        seq = 1 if self.batch_first or not batched else 0
        if shapes[1][:-1] != shapes[2][:-1]:
            raise ShapeError(f"{name}: key {shapes[1]} and value {shapes[2]} must match in "
                             f"all but the last dim")
        if batched and shapes[0][1 - seq] != shapes[1][1 - seq]:
            raise ShapeError(f"{name}: query {shapes[0]} and key {shapes[1]} have different "
                             f"batch sizes")

    def _mask(self, attn_mask: Any, key_padding_mask: Any, is_causal: bool, like: Tensor,
              n: int, q_len: int, k_len: int) -> Tensor | None:
        """One additive mask broadcastable to (N, H, L, S), or None."""
        name = f"MultiheadAttention(embed_dim={self.embed_dim}, num_heads={self.num_heads})"
        mask = None
        if attn_mask is not None:
            mask = F.additive_mask(attn_mask, like, true_means_keep=False)
            shape = tuple(mask.shape)
            if shape == (q_len, k_len):
                pass
            elif shape == (n * self.num_heads, q_len, k_len):
                mask = mask.reshape(n, self.num_heads, q_len, k_len)
            else:
                raise ShapeError(f"{name}: attn_mask must have shape ({q_len}, {k_len}) or "
                                 f"({n * self.num_heads}, {q_len}, {k_len}) (L, S) or "
                                 f"(N * num_heads, L, S), got {shape}")
        elif is_causal:
            mask = F.causal_mask(q_len, k_len, 0, like.dtype, like.device)
        if key_padding_mask is not None:
            pad = F.additive_mask(key_padding_mask, like, true_means_keep=False)
            if tuple(pad.shape) != (n, k_len):
                raise ShapeError(f"{name}: key_padding_mask must have shape ({n}, {k_len}) "
                                 f"(N, S), got {tuple(pad.shape)}")
            pad = pad.reshape(n, 1, 1, k_len)
            mask = pad if mask is None else mask + pad
        return mask

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


def _unsqueeze_mask(mask: Any) -> Any:
    if isinstance(mask, Tensor):
        return mask.unsqueeze(0)
    return np.asarray(mask)[None]
