"""A PyTorch twin of lamina.models.GPT with the same parameter names (nanoGPT's).

Used by the tests (copied weights, same outputs and gradients) and by
``benchmarks/train_shakespeare.py`` / ``benchmarks/bench_gpt.py``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class KVCache:
    """Per-layer keys and values (N, H, T, D), grown by concatenation as in Lamina's."""

    def __init__(self, n_layer: int) -> None:
        self.keys: list = [None] * n_layer
        self.values: list = [None] * n_layer
        self.length = 0

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg) -> None:
        super().__init__()
        self.n_head, self.dropout = cfg.n_head, cfg.dropout
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                layer: int = 0) -> torch.Tensor:
        n, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(n, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        mask, causal = None, True
        if cache is not None:
            k, v = cache.append(layer, k, v)
            # t new queries after s - t cached keys: query i sees keys 0 .. s - t + i.
            s, causal = k.shape[2], False
            mask = None if t == 1 else torch.ones(t, s, dtype=torch.bool).tril(s - t)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(n, t, c)))


class MLP(nn.Module):
    def __init__(self, cfg) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                layer: int = 0) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), cache, layer)
        return x + self.mlp(self.ln_2(x))


class PositionalEmbedding(nn.Module):
    def __init__(self, max_len: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, t: int, offset: int = 0) -> torch.Tensor:
        return self.weight[offset:offset + t]


class TorchGPT(nn.Module):
    """Same layout as lamina.models.GPT; ``lm_head.weight`` is ``wte.weight``."""

    def __init__(self, cfg) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = PositionalEmbedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * cfg.n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                cache: KVCache | None = None):
        offset = cache.length if cache is not None else 0
        x = self.drop(self.wte(idx) + self.wpe(idx.shape[1], offset))
        for i, block in enumerate(self.h):
            x = block(x, cache, i)
        if cache is not None:
            cache.length += idx.shape[1]
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def new_cache(self) -> KVCache:
        return KVCache(len(self.h))

    def load_lamina_state(self, state: dict) -> None:
        """Copy a Lamina GPT state dict (numpy-convertible values) into this model."""
        own = self.state_dict()
        self.load_state_dict({k: torch.from_numpy(np.array(state[k], dtype=np.float32))
                              for k in own}, strict=True)

    def param_groups(self, weight_decay: float) -> list[dict]:
        params = list(self.parameters())
        return [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
