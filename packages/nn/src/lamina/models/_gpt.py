"""GPT: a decoder-only Transformer language model (GPT-2's architecture, nanoGPT's names).

Token and learned position embeddings, ``n_layer`` pre-norm blocks
(``x + attn(ln_1(x))``, ``x + mlp(ln_2(x))``), a final LayerNorm and an
output head tied to the token embedding. Weights start as in GPT-2:
N(0, 0.02) for linear and embedding weights, N(0, 0.02 / sqrt(2 n_layer)) for
the projections that write into the residual stream, zero biases.

A :class:`KVCache` passed to ``forward`` keeps each layer's keys and values,
so that decoding a new token costs one position instead of the whole context.
A :class:`StaticKVCache` does the same in storage of a fixed size, written in
place at positions given as a tensor: every decoding step then has the same
shapes and reads no host value, so :func:`lamina.autograd.compile` replays it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from lamina import autograd as ag
from lamina import nn
from lamina.autograd import Tensor
from lamina.nn import functional as F

__all__ = ["GPT", "Block", "CausalSelfAttention", "GPTConfig", "KVCache", "StaticKVCache"]


@dataclass
class GPTConfig:
    """The shape of a GPT.

    Attributes:
        vocab_size: V, the number of token ids.
        block_size: the context length (the longest sequence).
        n_layer: Transformer blocks.
        n_head: attention heads; must divide ``n_embd``.
        n_embd: the model width C.
        dropout: dropout on embeddings, attention weights and residual branches.
        bias: biases in linear layers and LayerNorms.
    """

    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) < 1:
                raise ValueError(f"GPTConfig: {name} must be >= 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_head {self.n_head} must divide n_embd "
                             f"{self.n_embd}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig: dropout must be in [0, 1), got {self.dropout}")

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for checkpoint metadata."""
        return asdict(self)


class KVCache:
    """Per-layer keys and values (N, H, T, D) of the positions decoded so far.

    Attributes:
        length: positions held (the offset of the next token).
    """

    def __init__(self, n_layer: int) -> None:
        self.keys: list[Tensor | None] = [None] * n_layer
        self.values: list[Tensor | None] = [None] * n_layer
        self.length = 0

    def append(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add (N, H, T, D) keys and values for ``layer``; returns all of them so far."""
        old_k, old_v = self.keys[layer], self.values[layer]
        if old_k is not None and old_v is not None:
            k, v = ag.cat([old_k, k], dim=2), ag.cat([old_v, v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    def attend(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """Keys and values (N, H, S, D) that T new queries see, and their mask (or None)."""
        t, offset = k.shape[2], self.length
        k, v = self.append(layer, k, v)
        # A single new query may see every cached key: no mask needed.
        s = k.shape[2]
        return k, v, None if t == 1 else F.causal_mask(t, s, offset, k.dtype, k.device)


class StaticKVCache:
    """Keys and values (N, H, block_size, D) per layer in storage allocated once.

    ``GPT.forward(idx, cache=cache, position=pos)`` writes the new tokens' keys and
    values at ``pos`` (int64 (T,), on the model's device) and attends to every slot at
    or before each query's position; later slots hold stale or zero values that the
    mask hides. The positions are a tensor, not Python ints, so one compiled step
    (:func:`lamina.autograd.compile`) replays for every position. The caller keeps
    the count: positions must lie in ``[0, block_size)``.

    Args:
        config: the model's :class:`GPTConfig`.
        batch: N, the sequences decoded together.
        device, dtype: those of the model's weights.
    """

    def __init__(self, config: GPTConfig, batch: int, device: Any = None,
                 dtype: Any = None) -> None:
        h, s = config.n_head, config.block_size
        shape = (batch, h, s, config.n_embd // h)
        self.keys = [ag.zeros(shape, dtype=dtype, device=device) for _ in range(config.n_layer)]
        self.values = [ag.zeros(shape, dtype=dtype, device=device)
                       for _ in range(config.n_layer)]
        self.slots = ag.arange(s, device=device)  # (S,) int64: each slot's position
        self._where: list[Tensor] = []  # per new token: its slot, as a (N, H, S, D) mask
        self._mask: Tensor | None = None

    def bind(self, position: Tensor | None) -> None:
        """Prepare a forward over tokens at ``position`` (int64 (T,)): which slot each
        writes, and the additive mask (T, S) that lets query i see slots up to its
        position. Computed once, shared by every layer; None forgets them."""
        if position is None:
            self._where, self._mask = [], None
            return
        shape = tuple(self.keys[0].shape)
        with ag.no_grad():
            self._where = [(self.slots == position[i]).reshape(-1, 1).expand(shape).contiguous()
                           for i in range(position.shape[0])]
            seen = self.slots.reshape(1, -1) <= position.reshape(-1, 1)  # (T, S)
            self._mask = ag.where(seen, 0.0, float("-inf")).to(self.keys[0].dtype)

    def attend(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Write the T new keys and values (N, H, T, D) into their slots; return every
        slot's keys and values and the mask of :meth:`bind`."""
        assert self._mask is not None, "GPT.forward binds the positions first"
        keys, values = self.keys[layer], self.values[layer]
        with ag.no_grad():
            new_k, new_v = keys, values
            for i, here in enumerate(self._where):  # one exact select per token
                new_k = ag.where(here, k[:, :, i:i + 1], new_k)
                new_v = ag.where(here, v[:, :, i:i + 1], new_v)
            keys.copy_(new_k)  # in place: a replay writes the same storage
            values.copy_(new_v)
        return keys, values, self._mask


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention with one fused q/k/v projection.

    Shape: (N, T, C) -> (N, T, C).
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        c = config.n_embd
        self.n_head, self.n_embd, self.dropout_p = config.n_head, c, config.dropout
        self.c_attn = nn.Linear(c, 3 * c, bias=config.bias)
        self.c_proj = nn.Linear(c, c, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor, cache: KVCache | StaticKVCache | None = None,
                layer: int = 0) -> Tensor:
        n, t, c = x.shape
        h, d = self.n_head, c // self.n_head
        qkv = self.c_attn(x).reshape(n, t, 3, h, d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (N, H, T, D) each
        mask = None
        if cache is not None:
            k, v, mask = cache.attend(layer, k, v)
        # one graph node (a kernel each way where the device has them) unless dropout is on
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.dropout_p if self.training else 0.0,
                                           is_causal=cache is None and t > 1)
        # (N, H, T, D) -> (N, T, H * D); for one query (decoding) the permute is the
        # identity on memory order, and the reshape alone gives the same view
        y = y.reshape(n, t, c) if t == 1 else y.permute(0, 2, 1, 3).reshape(n, t, c)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Linear(C, 4C) -> GELU -> Linear(4C, C) -> Dropout. Shape: (N, T, C) -> (N, T, C)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        c = config.n_embd
        self.c_fc = nn.Linear(c, 4 * c, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c, c, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """A pre-norm Transformer block: ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``.

    Shape: (N, T, C) -> (N, T, C).
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: Tensor, cache: KVCache | StaticKVCache | None = None,
                layer: int = 0) -> Tensor:
        x = x + self.attn(self.ln_1(x), cache, layer)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A GPT language model.

    Args:
        config: the model's shape (:class:`GPTConfig`).

    Shape:
        ``forward(idx)`` with int64 idx (N, T), T <= block_size -> logits (N, T, V);
        ``forward(idx, targets)`` -> (logits, mean cross-entropy loss).

    Example:
        >>> from lamina import autograd
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=8))
        >>> model(autograd.tensor([[1, 2, 3]])).shape
        (1, 3, 10)
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.PositionalEmbedding(config.block_size, config.n_embd, std=0.02)
        self.drop = nn.Dropout(config.dropout)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one Parameter, listed once
        self._init_weights()

    def _init_weights(self) -> None:
        proj_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear):
                std = proj_std if name.endswith("c_proj") else 0.02
                nn.init.normal_(module.weight, 0.0, std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        nn.init.normal_(self.wte.weight, 0.0, 0.02)

    def num_parameters(self, non_embedding: bool = False) -> int:
        """Parameter count (the tied head counted once); optionally without position embeddings."""
        total = super().num_parameters()
        return total - self.wpe.weight.numel() if non_embedding else total

    def parameter_groups(self, weight_decay: float) -> list[dict[str, Any]]:
        """Optimizer groups: decay on matrices (ndim >= 2), none on biases and norm weights."""
        params = list(self.parameters())
        return [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]

    def forward(self, idx: Tensor, targets: Tensor | None = None,
                cache: KVCache | StaticKVCache | None = None,
                position: Tensor | None = None) -> Any:
        if idx.ndim != 2:
            raise nn.ShapeError(f"GPT: expected int64 token ids of shape (N, T), got "
                                f"{tuple(idx.shape)}")
        n, t = idx.shape
        if isinstance(cache, StaticKVCache):
            if position is None or tuple(position.shape) != (t,):
                raise ValueError(f"GPT: a StaticKVCache needs position, the int64 positions "
                                 f"({t},) of idx's tokens, got "
                                 f"{None if position is None else tuple(position.shape)}")
            cache.bind(position)
            x = self.drop(self.wte(idx) + F.embedding(position, self.wpe.weight))
            for i, block in enumerate(self.h):
                x = block(x, cache, i)
            cache.bind(None)  # keeps nothing made here (a compiled step's capture checks)
        else:
            if position is not None:
                raise ValueError("GPT: position is for a StaticKVCache only")
            offset = cache.length if cache is not None else 0
            if offset + t > self.config.block_size:
                raise nn.ShapeError(
                    f"GPT: sequence of length {offset + t} (cached {offset} + new {t}) is "
                    f"longer than the context block_size={self.config.block_size}; crop the "
                    f"input to the last {self.config.block_size} tokens")
            x = self.drop(self.wte(idx) + self.wpe(t, offset))
            for i, block in enumerate(self.h):
                x = block(x, cache, i)
            if cache is not None:
                cache.length += t
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits
        if tuple(targets.shape) != (n, t):
            raise nn.ShapeError(f"GPT: targets must have the shape of idx ({n}, {t}), got "
                                f"{tuple(targets.shape)}")
        loss = F.cross_entropy(logits.reshape(n * t, -1), targets.reshape(n * t))
        return logits, loss

    def new_cache(self) -> KVCache:
        """An empty key/value cache for this model."""
        return KVCache(self.config.n_layer)

    def new_static_cache(self, batch: int) -> StaticKVCache:
        """A :class:`StaticKVCache` for ``batch`` sequences, on the weights' device."""
        w = self.wte.weight
        return StaticKVCache(self.config, batch, w.device, w.dtype)
