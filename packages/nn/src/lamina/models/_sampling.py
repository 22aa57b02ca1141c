"""Sampling text from a GPT, with or without a key/value cache.

With the cache, the prompt is encoded once and each new token runs the model
on one position. Without it, every token re-runs the model on the whole
(cropped) context. Within the context length both give the same logits, so
greedy decoding picks the same tokens. Past the context, the uncached path
crops to the last ``block_size`` tokens every step; the cached path, to keep
each token's cost at one position, re-encodes the last ``block_size // 2``
tokens whenever the cache is full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from lamina import autograd as ag

from ._gpt import GPT, StaticKVCache

__all__ = ["generate", "generate_tokens", "sample_next"]


def sample_next(logits: np.ndarray, temperature: float, top_k: int | None,
                rng: np.random.Generator) -> np.ndarray:
    """Next token ids (N,) from last-position logits (N, V).

    ``temperature == 0`` is greedy (argmax); otherwise softmax(logits / temperature)
    restricted to the ``top_k`` largest logits.
    """
    if temperature == 0:
        return logits.argmax(-1).astype(np.int64)
    z = logits.astype(np.float64) / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.sort(z, axis=-1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.array([rng.choice(p.shape[-1], p=row) for row in p], dtype=np.int64)


def _check(model: GPT, prompt: np.ndarray, max_new_tokens: int, temperature: float,
           top_k: int | None) -> None:
    if prompt.ndim != 2 or prompt.shape[1] == 0:
        raise ValueError(f"generate: prompt must be token ids of shape (N, T) with T >= 1, "
                         f"got {prompt.shape}")
    vocab = model.config.vocab_size
    if prompt.min() < 0 or prompt.max() >= vocab:
        raise ValueError(f"generate: prompt ids must be in [0, {vocab}), got "
                         f"[{prompt.min()}, {prompt.max()}]")
    if max_new_tokens < 0 or temperature < 0:
        raise ValueError(f"generate: max_new_tokens ({max_new_tokens}) and temperature "
                         f"({temperature}) must be >= 0")
    if top_k is not None and top_k < 1:
        raise ValueError(f"generate: top_k must be >= 1, got {top_k}")


def _compiled_decoder(model: GPT, batch: int) -> tuple[Any, StaticKVCache]:
    """The model compiled with a :class:`StaticKVCache` for ``batch`` sequences, kept on
    the model so that later calls replay (stale slots are masked, so reuse is safe)."""
    w = model.wte.weight
    key = (batch, w.device.name, w.dtype.name)
    decoders = model.__dict__.setdefault("_compiled_decoders", {})
    if key not in decoders:
        decoders[key] = (ag.compile(model), model.new_static_cache(batch))
    return decoders[key]


def generate_tokens(model: GPT, prompt: Any, max_new_tokens: int, temperature: float = 1.0,
                    top_k: int | None = None, use_cache: bool = True,
                    seed: int | None = None, compile: bool = False,  # noqa: A002
                    ) -> Iterator[np.ndarray]:
    """Yield each new token, int64 (N,), as soon as it is sampled.

    Args:
        model: a GPT (put in eval mode here).
        prompt: int64 token ids (N, T), a Tensor or array-like.
        max_new_tokens: how many tokens to add.
        temperature: softmax temperature; 0 for greedy decoding.
        top_k: sample among the k most likely tokens only.
        use_cache: decode with a key/value cache (one position per token).
        seed: seed of the sampling generator.
        compile: decode with a :class:`StaticKVCache` through
            :func:`lamina.autograd.compile`, so that every step after the first replays
            (needs ``use_cache``; the same tokens as the eager cached path).
    """
    ids = np.asarray(prompt.numpy() if isinstance(prompt, ag.Tensor) else prompt,
                     dtype=np.int64)
    _check(model, ids, max_new_tokens, temperature, top_k)
    rng = np.random.default_rng(seed)
    block = model.config.block_size
    device = model.wte.weight.device
    model.eval()
    if compile and not use_cache:
        raise ValueError("generate: compile=True decodes with a cache; drop use_cache=False")
    cache, pending = None, ids
    step, static = _compiled_decoder(model, ids.shape[0]) if compile else (None, None)
    length = 0  # positions the static cache holds
    with ag.no_grad():
        for _ in range(max_new_tokens):
            if not use_cache:
                logits = model(ag.tensor(ids[:, -block:], device=device))
            elif step is not None:
                if length == 0 or length + pending.shape[1] > block:
                    pending = ids[:, -(block if length == 0 else max(block // 2, 1)):]
                    length = 0
                t = pending.shape[1]
                position = ag.arange(length, length + t, device=device)
                logits = step(ag.tensor(pending, device=device), cache=static,
                              position=position)
                length += t
            else:
                if cache is None or cache.length + pending.shape[1] > block:
                    # First call: the whole (cropped) prompt; a full cache: half a context.
                    pending = ids[:, -(block if cache is None else max(block // 2, 1)):]
                    cache = model.new_cache()
                logits = model(ag.tensor(pending, device=device), cache=cache)
            nxt = sample_next(logits._data[:, -1].numpy(), temperature, top_k, rng)
            ids = np.concatenate([ids, nxt[:, None]], axis=1)
            pending = nxt[:, None]
            yield nxt


def generate(model: GPT, prompt: Any, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, use_cache: bool = True, seed: int | None = None,
             on_token: Callable[[np.ndarray], None] | None = None,
             compile: bool = False) -> np.ndarray:  # noqa: A002
    """The prompt followed by ``max_new_tokens`` sampled tokens, int64 (N, T + new).

    Arguments as :func:`generate_tokens`; ``on_token`` is called with each new (N,) token.

    Example:
        >>> from lamina.models import GPTConfig
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=8))
        >>> generate(model, [[1, 2]], 5, temperature=0).shape
        (1, 7)
    """
    ids = np.asarray(prompt.numpy() if isinstance(prompt, ag.Tensor) else prompt,
                     dtype=np.int64)
    new = []
    for token in generate_tokens(model, ids, max_new_tokens, temperature, top_k, use_cache,
                                 seed, compile):
        new.append(token[:, None])
        if on_token is not None:
            on_token(token)
    return np.concatenate([ids, *new], axis=1) if new else ids
