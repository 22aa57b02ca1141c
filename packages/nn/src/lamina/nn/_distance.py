"""Normalisation and distances between vectors, as in ``torch.nn`` / ``torch.nn.functional``.

Compositions of :func:`lamina.autograd.vector_norm` (whose gradient is 0 where
the norm is 0, as PyTorch's) with elementwise ops, so they need no backward code.
"""

from __future__ import annotations

from lamina import autograd as ag
from lamina.autograd import Tensor

from ._errors import ShapeError
from ._module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance", "cosine_similarity", "normalize",
           "pairwise_distance"]


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p, eps)``, the norm taken along ``dim``.

    Example:
        >>> from lamina import autograd
        >>> normalize(autograd.tensor([[3.0, 4.0]], dtype="float64")).tolist()
        [[0.6, 0.8]]
    """
    _check_dim(dim, input.ndim, "normalize")
    if input.ndim == 0:  # a scalar is a vector of one element, as in PyTorch
        return normalize(input.reshape(1), p, 0, eps).reshape(())
    return input / ag.vector_norm(input, p, dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim``.

    ``x1`` and ``x2`` broadcast together first; ``dim`` is removed from the result.
    As in PyTorch, the norms are clamped to ``eps`` outside the graph: the
    gradient treats the clamped norm as the norm itself.

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([[1.0, 0.0], [1.0, 1.0]])
        >>> cosine_similarity(x, autograd.tensor([[2.0, 0.0]])).tolist()
        [1.0, 0.7071067690849304]
    """
    x1, x2 = _broadcast(x1, x2, "cosine_similarity")
    _check_dim(dim, x1.ndim, "cosine_similarity")
    if x1.ndim == 0:
        return cosine_similarity(x1.reshape(1), x2.reshape(1), 0, eps).reshape(())
    return (x1 / _clamped_norm(x1, dim, eps) * (x2 / _clamped_norm(x2, dim, eps))).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim of the broadcast shape (*, D) -> (*).

    Example:
        >>> from lamina import autograd
        >>> x = autograd.tensor([[0.0, 0.0]])
        >>> round(pairwise_distance(x, autograd.tensor([[3.0, 4.0]])).item(), 4)
        5.0
    """
    x1, x2 = _broadcast(x1, x2, "pairwise_distance")
    ndim = x1.ndim
    if ndim == 0:
        return ag.vector_norm((x1 - x2 + eps).reshape(1), p, 0).reshape(())
    return ag.vector_norm(x1 - x2 + eps, p, ndim - 1, keepdim=keepdim)


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    norm = ag.vector_norm(x, 2, dim, keepdim=True)
    return norm + (norm.clamp(min=eps) - norm).detach()


def _broadcast(x1: Tensor, x2: Tensor, op: str) -> tuple[Tensor, Tensor]:
    a, b = tuple(x1.shape), tuple(x2.shape)
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    if any(i != j and 1 not in (i, j) for i, j in zip(pa, pb)):
        raise ShapeError(f"{op}: shapes {a} and {b} do not broadcast together; make each "
                         f"dim equal or 1")
    shape = tuple(max(i, j) if 0 not in (i, j) else 0 for i, j in zip(pa, pb))
    return ag.broadcast_to(x1, shape), ag.broadcast_to(x2, shape)


def _check_dim(dim: int, ndim: int, op: str) -> None:
    low, high = -max(ndim, 1), max(ndim, 1) - 1
    if not low <= dim <= high:
        raise IndexError(f"{op}: dim {dim} is out of range for an input of {ndim} dims "
                         f"(expected it in [{low}, {high}])")


class CosineSimilarity(Module):
    """:func:`cosine_similarity` along ``dim``: (*, D, *) and (*, D, *) -> (*, *)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """:func:`pairwise_distance` with the p-norm ``norm``: (*, D) and (*, D) -> (*)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
