"""Transformer blocks: encoder and decoder layers, their stacks, and ``Transformer``.

Parameter names and the order of operations follow ``torch.nn.Transformer``,
``TransformerEncoder``/``TransformerDecoder`` and their layers, so a PyTorch
state dict loads as is (``encoder.layers.0.self_attn.in_proj_weight``, ...).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
from lamina import ndarray as nd
from lamina.autograd import Tensor

from . import functional as F
from . import init
from ._attention import MultiheadAttention
from ._containers import ModuleList
from ._errors import ShapeError
from ._layers import Dropout, Linear
from ._module import Module
from ._norm import LayerNorm

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]

_ACTIVATIONS = ("relu", "gelu")
Activation = str | Callable[[Tensor], Tensor]


def _activation(activation: Activation, layer: str) -> Activation:
    """A known name or any callable (``F.gelu``, ``nn.GELU()``), as torch accepts."""
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise ValueError(f"{layer}: activation must be one of {_ACTIVATIONS} or a callable, "
                         f"got {activation!r}")
    return activation


def _apply_activation(activation: Activation, x: Tensor) -> Tensor:
    if callable(activation):
        return activation(x)
    return F.relu(x) if activation == "relu" else F.gelu(x)


def _check_sequences(name: str, d_model: int, batch_first: bool, **seqs: Tensor) -> None:
    """Each sequence is (S, E) or batched with E == d_model; batched ones share N.

    Raises ShapeError naming ``name`` and every shape, before any attention runs.
    """
    shapes = {what: tuple(t.shape) for what, t in seqs.items()}
    listed = ", ".join(f"{what} {shape}" for what, shape in shapes.items())
    ndims = {len(shape) for shape in shapes.values()}
    if not ndims <= {2, 3} or len(ndims) != 1:
        raise ShapeError(f"{name}: {listed} must all be 3-D (batched) or all 2-D "
                         f"(unbatched); pass them the same way")
    for what, shape in shapes.items():
        if shape[-1] != d_model:
            raise ShapeError(f"{name}: {what} {shape} must have d_model={d_model} features "
                             f"in its last dim")
    if ndims == {3}:
        batches = {shape[0 if batch_first else 1] for shape in shapes.values()}
        if len(batches) != 1:
            layout = "(N, S, E)" if batch_first else "(S, N, E)"
            raise ShapeError(f"{name}: {listed} have different batch sizes (layout {layout}, "
                             f"batch_first={batch_first}); give them the same N")


class _FeedForward(Module):
    """Shared feed-forward half: linear1 -> activation -> dropout -> linear2 -> dropout2."""

    def _init_ff(self, d_model: int, dim_feedforward: int, dropout: float,
                 activation: Activation, bias: bool, device: Any, dtype: Any) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)

    def _name(self) -> str:
        return f"{type(self).__name__}(d_model={self.d_model}, nhead={self.self_attn.num_heads})"

    def _ff_block(self, x: Tensor) -> Tensor:
        h = self.linear1(x)
        h = _apply_activation(self.activation, h)
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
        activation: ``"relu"``, ``"gelu"`` or a callable (``F.gelu``, ``nn.GELU()``).
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
                 dropout: float = 0.1, activation: Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        act = _activation(activation, "TransformerEncoderLayer")
        self.d_model, self.batch_first = d_model, batch_first
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self._init_ff(d_model, dim_feedforward, dropout, activation, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = act  # last, as torch: a Module activation registers after the rest

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        """Masks as in ``MultiheadAttention`` (True / -inf = masked)."""
        _check_sequences(self._name(), self.d_model, self.batch_first, src=src)
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
                 dropout: float = 0.1, activation: Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        act = _activation(activation, "TransformerDecoderLayer")
        self.d_model, self.batch_first = d_model, batch_first
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
        self.activation = act

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """Masks as in ``MultiheadAttention`` (True / -inf = masked)."""
        _check_sequences(self._name(), self.d_model, self.batch_first, tgt=tgt, memory=memory)
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
        h = _apply_activation(self.activation, h)
        return self.dropout3(self.linear2(self.dropout(h)))


def _clones(layer: Module, num_layers: int, name: str) -> ModuleList:
    """``num_layers`` deep copies of ``layer`` (torch's ``_get_clones``): equal at the start."""
    if not isinstance(layer, Module):
        raise TypeError(f"{name}: the layer must be a Module, got {type(layer).__name__}")
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
        raise ValueError(f"{name}: num_layers must be a non-negative int, got {num_layers!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


def _layout(layers: ModuleList) -> tuple[int, bool] | None:
    """(d_model, batch_first) of a stack of Lamina layers; None for custom layers."""
    first = layers[0] if len(layers) else None
    attn = getattr(first, "self_attn", None)
    if not isinstance(attn, MultiheadAttention):
        return None
    return attn.embed_dim, attn.batch_first


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of an encoder layer, then an optional norm.

    Args:
        encoder_layer: a ``TransformerEncoderLayer`` (or any module called as one); it is
            deep-copied ``num_layers`` times, so every layer starts with its weights.
        num_layers: how many layers.
        norm: a module applied to the last layer's output (a ``LayerNorm``), or None.
        enable_nested_tensor: accepted for PyTorch compatibility; Lamina has no nested
            tensors, so padded positions are computed (torch's fast path zeroes them).
        mask_check: accepted and stored for PyTorch compatibility.

    Shape:
        src (N, S, E) (batch_first; (S, N, E) otherwise, (S, E) unbatched) -> same shape.

    Example:
        >>> from lamina import autograd
        >>> layer = TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        >>> encoder = TransformerEncoder(layer, num_layers=2)
        >>> encoder(autograd.ones(2, 5, 16)).shape
        (2, 5, 16)
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None) -> Tensor:
        """Runs ``src`` through every layer with the same masks.

        Args:
            src: the input sequence.
            mask: (S, S) or (N * nhead, S, S); boolean (True = masked) or float (added).
            src_key_padding_mask: (N, S), or (S,) unbatched; True / -inf = ignore that key.
            is_causal: a hint that ``mask`` is causal; with ``mask`` None, True applies a
                causal mask (PyTorch raises there instead).
        """
        layout = _layout(self.layers)
        if layout is not None:
            _check_sequences(f"TransformerEncoder(num_layers={self.num_layers})", *layout,
                             src=src)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of a decoder layer, then an optional norm.

    Args:
        decoder_layer: a ``TransformerDecoderLayer`` (or any module called as one); it is
            deep-copied ``num_layers`` times.
        num_layers: how many layers.
        norm: a module applied to the last layer's output, or None.

    Shape:
        tgt (N, T, E), memory (N, S, E) (batch_first) -> (N, T, E).

    Example:
        >>> from lamina import autograd
        >>> layer = TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        >>> decoder = TransformerDecoder(layer, num_layers=2)
        >>> decoder(autograd.ones(2, 5, 16), autograd.ones(2, 7, 16)).shape
        (2, 5, 16)
    """

    def __init__(self, decoder_layer: Module, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Runs ``tgt`` through every layer, each attending to ``memory``.

        Masks as in ``TransformerDecoderLayer``: ``tgt_mask`` (T, T), ``memory_mask``
        (T, S), padding masks (N, T) and (N, S); True / -inf = masked.
        """
        layout = _layout(self.layers)
        if layout is not None:
            _check_sequences(f"TransformerDecoder(num_layers={self.num_layers})", *layout,
                             tgt=tgt, memory=memory)
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need", as ``torch.nn``'s.

    An encoder (``num_encoder_layers`` layers and a final LayerNorm) reads ``src``; a
    decoder (``num_decoder_layers`` layers and a final LayerNorm) reads ``tgt`` and
    attends to the encoder's output. Every weight matrix starts Xavier-uniform.

    Args:
        d_model: the model width; ``nhead``, ``dim_feedforward``, ``dropout``,
            ``activation``, ``layer_norm_eps``, ``batch_first``, ``norm_first`` and
            ``bias`` are as in ``TransformerEncoderLayer``.
        num_encoder_layers: depth of the encoder stack.
        num_decoder_layers: depth of the decoder stack.
        custom_encoder: a module used instead of the built encoder.
        custom_decoder: a module used instead of the built decoder.

    Shape:
        src (N, S, E), tgt (N, T, E) (batch_first; (S, N, E) and (T, N, E) otherwise,
        or unbatched (S, E) and (T, E)) -> (N, T, E).

    Example:
        >>> from lamina import autograd
        >>> model = Transformer(16, 4, 1, 1, 32, dropout=0.0, batch_first=True)
        >>> mask = Transformer.generate_square_subsequent_mask(5)
        >>> model(autograd.ones(2, 7, 16), autograd.ones(2, 5, 16), tgt_mask=mask).shape
        (2, 5, 16)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = "relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias, device, dtype)
        norm_kw = {"bias": bias, "device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args),
                                              num_encoder_layers,
                                              LayerNorm(d_model, layer_norm_eps, **norm_kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args),
                                              num_decoder_layers,
                                              LayerNorm(d_model, layer_norm_eps, **norm_kw))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def _reset_parameters(self) -> None:
        # Copied layers start equal; torch redraws every matrix so they differ.
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Any = None, tgt_mask: Any = None,
                memory_mask: Any = None, src_key_padding_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encodes ``src``, then decodes ``tgt`` against it.

        Masks are boolean (True = masked) or float (added to the scores): ``src_mask``
        (S, S), ``tgt_mask`` (T, T) (``generate_square_subsequent_mask(T)`` for a causal
        decoder), ``memory_mask`` (T, S); padding masks (N, S), (N, T) and (N, S). An
        ``*_is_causal`` flag is a hint that its mask is causal; with no mask, True
        applies a causal mask.
        """
        name = f"Transformer(d_model={self.d_model}, nhead={self.nhead})"
        _check_sequences(name, self.d_model, self.batch_first, src=src, tgt=tgt)
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """A fresh (sz, sz) float mask: -inf above the diagonal (future positions), else 0.

        Example:
            >>> Transformer.generate_square_subsequent_mask(3).numpy()[0].tolist()
            [0.0, -inf, -inf]
        """
        if isinstance(sz, bool) or not isinstance(sz, int) or sz < 0:
            raise ValueError(f"Transformer.generate_square_subsequent_mask: sz must be a "
                             f"non-negative int, got {sz!r}")
        dt = nd.as_dtype(dtype) if dtype is not None else nd.float32
        values = np.triu(np.full((sz, sz), -np.inf), 1).astype(dt.np)
        return Tensor(nd.array(values, dtype=dt, device=device))
