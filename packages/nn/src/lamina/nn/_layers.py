"""Layers: Identity, Linear, Flatten, Unflatten, activations, the dropouts, Residual, Embedding."""

from __future__ import annotations

import math
from typing import Any

from lamina import ndarray as nd
from lamina.autograd import Tensor

from . import functional as F
from . import init
from ._activations import _InPlaceActivation
from ._dropout import (
    _check_p,
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ._errors import ShapeError, check_shape
from ._module import Module
from ._parameter import Parameter

__all__ = [
    "GELU", "AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Embedding",
    "FeatureAlphaDropout", "Flatten", "Identity", "Linear", "LogSoftmax", "ReLU", "Residual",
    "Sigmoid", "Softmax", "Tanh", "Unflatten",
]


def _empty_parameter(*shape: int, dtype: Any = None, device: Any = None) -> Parameter:
    return Parameter(nd.zeros(*shape, dtype=dtype or nd.float32, device=device))


class Identity(Module):
    """Return the input unchanged (any shape)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """y = x @ W.T + b.

    Weights and bias start as U(-1/sqrt(in_features), 1/sqrt(in_features)),
    PyTorch's default (kaiming_uniform_ with a = sqrt(5) for the weight).

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: learn an additive bias.
        device: where the parameters live (default device when None).
        dtype: parameter dtype (float32 when None).

    Shape:
        input (*, in_features) -> output (*, out_features).

    Example:
        >>> from lamina import autograd
        >>> Linear(3, 2)(autograd.ones(5, 3)).shape
        (5, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _empty_parameter(out_features, in_features, dtype=dtype, device=device)
        if bias:
            self.bias = _empty_parameter(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default initialisation."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        try:
            return F.linear(x, self.weight, self.bias)
        except ShapeError:  # name the layer (its repr is built only here, on failure)
            check_shape(repr(self), tuple(x.shape), (), f"(*, {self.in_features})",
                        -1, self.in_features)
            raise

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` into one: (N, C, H, W) -> (N, C*H*W)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        start = self.start_dim + len(shape) if self.start_dim < 0 else self.start_dim
        end = self.end_dim + len(shape) if self.end_dim < 0 else self.end_dim
        if not 0 <= start <= end < len(shape):
            raise ShapeError(f"{self!r}: cannot flatten dims {self.start_dim}..{self.end_dim} "
                             f"of input of shape {shape}")
        merged = math.prod(shape[start:end + 1])
        return x.reshape(shape[:start] + (merged,) + shape[end + 1:])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``: (N, C*H*W) -> (N, C, H, W) for dim 1.

    Args:
        dim: the dim to split (negative counts from the end).
        unflattened_size: the new sizes (a tuple or list of ints); one may be -1,
            inferred from the others.
    """

    def __init__(self, dim: int, unflattened_size: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"Unflatten: dim must be an int, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, "
                            f"got {unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        dim = self.dim + len(shape) if self.dim < 0 else self.dim
        if not 0 <= dim < len(shape):  # IndexError, as PyTorch's dim checks raise
            raise IndexError(f"{self!r}: dim {self.dim} is out of range for input of shape "
                             f"{shape} (expected a dim in [{-len(shape)}, {len(shape)}))")
        sizes = _infer_sizes(repr(self), shape[dim], tuple(self.unflattened_size))
        return x.reshape(shape[:dim] + sizes + shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _infer_sizes(owner: str, total: int, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """``sizes`` with its one -1 (if any) resolved so that their product is ``total``."""
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    known = math.prod(s for s in sizes if s != -1)
    if len(unknown) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"{owner}: unflattened_size {sizes} may hold non-negative sizes "
                         f"and at most one -1")
    if unknown and known and total % known == 0:
        sizes = sizes[:unknown[0]] + (total // known,) + sizes[unknown[0] + 1:]
    if math.prod(sizes) != total or (unknown and -1 in sizes):
        raise ShapeError(f"{owner}: cannot split a dim of size {total} into {sizes} "
                         f"(their product must be {total})")
    return sizes


class ReLU(_InPlaceActivation):
    """max(x, 0), elementwise (any shape); ``inplace=True`` writes into the input."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, self.inplace)


class Tanh(Module):
    """tanh(x), elementwise (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class GELU(Module):
    """Gaussian error linear unit; ``approximate="tanh"`` for the tanh form."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """softmax along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax) along ``dim``, computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Dropout(Module):
    """In training, zero elements with probability p and scale the rest by 1/(1-p).

    Identity in eval mode. ``inplace=True`` writes the result into the input.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _DropoutNd(Module):
    """Shared arguments and repr of the dropout modules.

    Args:
        p: probability of dropping an element (or a channel).
        inplace: write the result into the input's storage and return the input.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _check_p(type(self).__name__, p)
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zero whole channels in training; identity in eval.

    Shape:
        (N, C, L) or (C, L) -> the same shape.
    """

    def forward(self, x: Tensor) -> Tensor:
        return dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels in training; identity in eval.

    Shape:
        (N, C, H, W) -> the same shape ((N, C, L) too, with PyTorch's warning).
    """

    def forward(self, x: Tensor) -> Tensor:
        return dropout2d(x, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels in training; identity in eval.

    Shape:
        (N, C, D, H, W) or (C, D, H, W) -> the same shape.
    """

    def forward(self, x: Tensor) -> Tensor:
        return dropout3d(x, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Alpha dropout (for SELU networks) in training; identity in eval (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return alpha_dropout(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels in training; identity in eval.

    Shape:
        (N, C, *) -> the same shape.
    """

    def forward(self, x: Tensor) -> Tensor:
        return feature_alpha_dropout(x, self.p, self.training, self.inplace)


class Residual(Module):
    """x + fn(x); ``fn`` must keep the shape."""

    def __init__(self, fn: Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: Tensor) -> Tensor:
        out = self.fn(x)
        if tuple(out.shape) != tuple(x.shape):
            raise ShapeError(f"Residual: the wrapped module maps {tuple(x.shape)} to "
                             f"{tuple(out.shape)}; it must keep the shape")
        return x + out


class Embedding(Module):
    """A lookup table: int64 indices (*,) -> rows (*, embedding_dim).

    Weights start as N(0, 1), PyTorch's default; the row ``padding_idx``
    (if given) starts at zero and receives no gradient. Like PyTorch, a lookup
    of ``padding_idx`` returns that row as it is (zero unless it was loaded or
    set otherwise).

    Args:
        num_embeddings: rows in the table.
        embedding_dim: size of each row.
        padding_idx: index whose row stays zero.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx {padding_idx} out of range for "
                             f"{num_embeddings} embeddings")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self.weight = _empty_parameter(num_embeddings, embedding_dim, dtype=dtype,
                                       device=device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the table from N(0, 1) and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            data = self.weight._data.copy()
            data[self.padding_idx] = 0.0
            self.weight._data = data

    def forward(self, indices: Tensor) -> Tensor:
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
