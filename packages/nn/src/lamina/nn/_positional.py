"""Positional embeddings: learned (GPT-2) and fixed sinusoidal (Vaswani et al.)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from . import functional as F
from . import init
from ._errors import ShapeError
from ._module import Module
from ._parameter import Parameter

__all__ = ["PositionalEmbedding", "SinusoidalPositionalEncoding"]


def _check_length(layer: Module, length: int, offset: int, max_len: int) -> None:
    if offset < 0 or offset + length > max_len:  # the layer's repr only on failure
        raise ShapeError(f"{layer!r}: positions {offset}..{offset + length - 1} do not fit the "
                         f"maximum length {max_len} (sequence length {length}, offset "
                         f"{offset}); crop the sequence to at most {max_len} tokens")


class PositionalEmbedding(Module):
    """A learned table of position vectors: positions ``offset .. offset+T-1`` -> (T, D).

    Args:
        max_len: the longest sequence (the model's context).
        embedding_dim: D.
        std: initial weights are N(0, std^2) (GPT-2 uses 0.02; PyTorch's Embedding 1.0).

    Shape:
        ``forward(T, offset=0)`` -> (T, D), to add to token embeddings (N, T, D).

    Example:
        >>> PositionalEmbedding(16, 8)(5).shape
        (5, 8)
    """

    def __init__(self, max_len: int, embedding_dim: int, std: float = 1.0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.max_len, self.embedding_dim = max_len, embedding_dim
        self.weight = Parameter(nd.zeros(max_len, embedding_dim, dtype=dtype or nd.float32,
                                         device=device))
        init.normal_(self.weight, 0.0, std)
        self._positions: dict[tuple[int, int], Tensor] = {}

    def forward(self, length: int, offset: int = 0) -> Tensor:
        _check_length(self, length, offset, self.max_len)
        key = (length, offset)
        pos = self._positions.get(key)
        if pos is None or pos.device != self.weight.device:
            pos = ag.arange(offset, offset + length, dtype=nd.int64, device=self.weight.device)
            self._positions[key] = pos
        return F.embedding(pos, self.weight)

    def extra_repr(self) -> str:
        return f"{self.max_len}, {self.embedding_dim}"


class SinusoidalPositionalEncoding(Module):
    """Fixed encodings ``PE[p, 2i] = sin(p / 10000^(2i/D))``, ``PE[p, 2i+1] = cos(...)``.

    No parameters; the table is a non-persistent buffer.

    Args:
        d_model: D (even).
        max_len: the longest sequence.

    Shape:
        ``forward(T, offset=0)`` -> (T, D).

    Example:
        >>> SinusoidalPositionalEncoding(8, 16)(5).shape
        (5, 8)
    """

    def __init__(self, d_model: int, max_len: int = 5000, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if d_model % 2:
            raise ValueError(f"SinusoidalPositionalEncoding: d_model must be even, got {d_model}")
        self.d_model, self.max_len = d_model, max_len
        pos = np.arange(max_len, dtype=np.float64)[:, None]
        freq = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        table = np.zeros((max_len, d_model))
        table[:, 0::2], table[:, 1::2] = np.sin(pos * freq), np.cos(pos * freq)
        dtype = dtype or nd.float32
        self.register_buffer("pe", Tensor(nd.array(table.astype(nd.as_dtype(dtype).np),
                                                    dtype=dtype, device=device)),
                             persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        _check_length(self, length, offset, self.max_len)
        return self.pe[offset:offset + length]

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"
