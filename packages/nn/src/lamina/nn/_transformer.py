"""Transformer blocks: encoder and decoder layers with post- or pre-norm.

Parameter names and the order of operations follow
``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer``, so a
PyTorch state dict loads as is.
"""

from __future__ import annotations

from typing import Any

from lamina.autograd import Tensor

from . import functional as F
from ._attention import MultiheadAttention
from ._layers import Dropout, Linear
from ._module import Module
from ._norm import LayerNorm

__all__ = ["TransformerDecoderLayer", "TransformerEncoderLayer"]

_ACTIVATIONS = ("relu", "gelu")


def _activation(name: str, layer: str) -> str:
    if name not in _ACTIVATIONS:
        raise ValueError(f"{layer}: activation must be one of {_ACTIVATIONS}, got {name!r}")
    return name


class _FeedForward(Module):
    """Shared feed-forward half: linear1 -> activation -> dropout -> linear2 -> dropout2."""

    def _init_ff(self, d_model: int, dim_feedforward: int, dropout: float, activation: str,
                 bias: bool, device: Any, dtype: Any) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)

    def _ff_block(self, x: Tensor) -> Tensor:
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.dropout2(self.linear2(self.dropout(h)))


class TransformerEncoderLayer(_FeedForward):
    """Self-attention then a feed-forward network, each with a residual connection.

    Post-norm (``norm_first=False``, the original Transformer):
    ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``. Pre-norm (``norm_first=True``,
    GPT-2): ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``.

    Args:
        d_model: E, the model width.
        nhead: attention heads; must divide E.
        dim_feedforward: hidden width of the feed-forward network.
        dropout: dropout on attention weights, after the activation and on each residual branch.
        activation: ``"relu"`` or ``"gelu"``.
        layer_norm_eps: LayerNorm epsilon.
        batch_first: inputs are (N, S, E) instead of (S, N, E).
        norm_first: pre-norm instead of post-norm.
        bias: learn biases in the linear and norm layers.

    Shape:
        src (N, S, E) (batch_first) -> (N, S, E).

    Example:
        >>> from lamina import autograd
        >>> layer = TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        >>> layer(autograd.ones(2, 5, 16)).shape
        (2, 5, 16)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.activation = _activation(activation, "TransformerEncoderLayer")
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self._init_ff(d_model, dim_feedforward, dropout, activation, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        """Masks as in ``MultiheadAttention`` (True / -inf = masked)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, mask: Any, padding: Any, is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)


class TransformerDecoderLayer(_FeedForward):
    """Self-attention, cross-attention to ``memory``, then a feed-forward network.

    Post-norm: ``x = norm1(x + sa(x)); x = norm2(x + mha(x, memory));
    x = norm3(x + ff(x))``; pre-norm (``norm_first=True``) normalises each
    branch's input instead. Arguments as ``TransformerEncoderLayer``.

    Shape:
        tgt (N, T, E), memory (N, S, E) (batch_first) -> (N, T, E).

    Example:
        >>> from lamina import autograd
        >>> layer = TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        >>> layer(autograd.ones(2, 5, 16), autograd.ones(2, 7, 16)).shape
        (2, 5, 16)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.activation = _activation(activation, "TransformerDecoderLayer")
        kw = {"bias": bias, "batch_first": batch_first, "device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, **kw)
        self._init_ff(d_model, dim_feedforward, dropout, activation, bias, device, dtype)
        self.norm_first = norm_first
        for i in (1, 2, 3):
            setattr(self, f"norm{i}", LayerNorm(d_model, layer_norm_eps, bias=bias,
                                                device=device, dtype=dtype))
        for i in (1, 2, 3):
            setattr(self, f"dropout{i}", Dropout(dropout))

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """Masks as in ``MultiheadAttention`` (True / -inf = masked)."""
        x = tgt
        sa = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        ca = (memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), *ca)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, *sa))
        x = self.norm2(x + self._mha_block(x, *ca))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, mask: Any, padding: Any, is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _mha_block(self, x: Tensor, memory: Tensor, mask: Any, padding: Any,
                   is_causal: bool) -> Tensor:
        out = self.multihead_attn(x, memory, memory, attn_mask=mask, key_padding_mask=padding,
                                  need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.dropout3(self.linear2(self.dropout(h)))
