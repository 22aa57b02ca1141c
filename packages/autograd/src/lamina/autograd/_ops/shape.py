"""Shape ops: views (reshape, permute, broadcast, flip, slices), cat, and their compositions.

``Slice`` (basic indexing) and ``SliceScatter`` (write into zeros at the same
key) are each other's adjoint, which is all that pad, dilate, undilate, split
and chunk need: they are compositions with no backward code.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from ._util import normalize_axes, normalize_axis, shape_arg


class Reshape(Function):
    name = "reshape"
    is_view = True

    def forward(self, a: NDArray, shape: tuple[int, ...]) -> NDArray:
        return a.reshape(shape)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g.reshape(self.shapes[0]),)


class Permute(Function):
    name = "permute"
    is_view = True

    def forward(self, a: NDArray, axes: tuple[int, ...]) -> NDArray:
        # checked once here, then the view of axes known to be a permutation
        self.axes = axes = nd.normalize_permutation(axes, len(a._shape), "permute", a._shape)
        return a._permuted(axes)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return (g.permute(tuple(inverse)),)


class BroadcastTo(Function):
    """A stride-0 view; the engine sums the gradient back, so the rule is identity."""

    name = "broadcast_to"
    is_view = True

    def forward(self, a: NDArray, shape: tuple[int, ...]) -> NDArray:
        return a.broadcast_to(shape)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g,)


class Flip(Function):
    name = "flip"
    is_view = True

    def forward(self, a: NDArray, axes: tuple[int, ...]) -> NDArray:
        self.axes = axes
        return a.flip(axes)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g.flip(self.axes),)


class Slice(Function):
    """Basic indexing ``a[key]``: ints, slices (any step), None, Ellipsis. A view."""

    name = "slice"
    is_view = True

    def forward(self, a: NDArray, key: Any) -> NDArray:
        self.key = key
        out = a[key]  # raises first for a bad key
        self.input_order = _memory_order(a)
        # a whole row along axis 0 (qkv[1]): the engine writes its gradient into a buffer
        # whose other rows it zeroes only if no slice writes them (_engine._add_into)
        self.row = key % a.shape[0] if type(key) is int else None
        return out

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (SliceScatter.apply(g, key=self.key, shape=self.shapes[0]),)

    def add_grad_into(self, g: NDArray, into: NDArray, fresh: bool) -> None:
        """``into[key] += g``: this node's input gradient, added where it is not zero
        (written, where ``fresh``: that region of ``into`` holds nothing yet)."""
        into[self.key] = g if fresh else into[self.key] + g


def _memory_order(a: NDArray) -> tuple[int, ...] | None:
    """``a``'s axes from outermost to innermost in memory, where ``a`` is a permuted view
    of a compact layout (q, k and v of ``qkv.reshape(N, T, 3, H, D).permute(2, 0, 3, 1,
    4)``), else None. The engine lays a slice gradient out in that order, so that the
    backward of that permute and reshape is a view, not a copy."""
    if a._compact or a.ndim < 2:
        return None
    order = sorted(range(a.ndim), key=lambda i: -a.strides[i])
    step = 1
    for i in reversed(order):
        if a.shape[i] != 1 and a.strides[i] != step:
            return None
        step *= a.shape[i]
    return tuple(order)


class SliceScatter(Function):
    """Zeros of ``shape`` with the input written at ``key``: the adjoint of ``Slice``."""

    name = "slice_scatter"

    def forward(self, a: NDArray, key: Any, shape: tuple[int, ...]) -> NDArray:
        self.key = key
        out = nd.zeros(shape, dtype=a.dtype, device=a.device)
        out[key] = a
        return out

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (Slice.apply(g, key=self.key),)


class Cat(Function):
    name = "cat"

    def forward(self, *arrays: NDArray, axis: int) -> NDArray:
        self.axis = axis
        try:
            return nd.concatenate(list(arrays), axis=axis)
        except ShapeError:  # say it in tensor terms (checked again only on failure)
            first = arrays[0].shape
            for i, a in enumerate(arrays):
                if a.ndim != len(first) or any(
                        n != m for d, (n, m) in enumerate(zip(a.shape, first)) if d != axis):
                    raise ShapeError(f"cat: tensor {i} has shape {a.shape} but tensor 0 has "
                                     f"shape {first}; sizes must match except in dim "
                                     f"{axis}") from None
            raise

    def backward(self, g: TensorBase) -> tuple[TensorBase, ...]:
        grads, start = [], 0
        for shape in self.shapes:
            stop = start + shape[self.axis]
            grads.append(g[(slice(None),) * self.axis + (slice(start, stop),)])
            start = stop
        return tuple(grads)


class Copy(Function):
    """A copy, possibly onto another device or dtype; the gradient goes back the same way."""

    name = "to"

    def forward(self, a: NDArray, device: nd.Device, dtype: nd.DType) -> NDArray:
        self.source = (a.device, a.dtype)
        out = a.to(device).astype(dtype)
        return a.copy() if out is a else out

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        device, dtype = self.source
        if g.device == device and g.dtype == dtype:
            return (g,)  # a clone: the gradient passes unchanged, as PyTorch's CloneBackward
        return (Copy.apply(g, device=device, dtype=dtype),)


def to(x: Tensor, device: Any = None, dtype: Any = None, copy: bool = False) -> Tensor:
    """``x`` on ``device`` with ``dtype``; ``x`` itself when both already match.

    Differentiable between float dtypes; a conversion to int64 is not.
    """
    device = x.device if device is None else nd.get_device(device)
    dtype = x.dtype if dtype is None else nd.as_dtype(dtype)
    if not copy and device == x.device and dtype == x.dtype:
        return x
    if not dtype.is_floating:
        out = x._data.to(device).astype(dtype)
        # a copy never shares storage, and is compact (as clone() of a broadcast view)
        return make(out.copy() if out._buf is x._data._buf else out)
    return Copy.apply(x, device=device, dtype=dtype)


def reshape(x: Tensor, *shape: Any) -> Tensor:
    """The same elements in a new shape (one size may be -1). A view when strides allow."""
    return Reshape.apply(x, shape=shape_arg(shape))


def permute(x: Tensor, *dims: Any) -> Tensor:
    """Reorders axes: output axis ``i`` is input axis ``dims[i]``. A view."""
    return Permute.apply(x, axes=shape_arg(dims))  # checked once, by Permute.forward


def broadcast_to(x: Tensor, *shape: Any) -> Tensor:
    """Repeats size-1 (or missing leading) axes up to ``shape``, as a view."""
    return BroadcastTo.apply(x, shape=shape_arg(shape))


def flip(x: Tensor, dims: int | Sequence[int]) -> Tensor:
    """Reverses the order of elements along ``dims``. A view."""
    return Flip.apply(x, axes=normalize_axes(dims, x.ndim, "flip"))


def slice_scatter(x: Tensor, key: Any, shape: Sequence[int]) -> Tensor:
    """A zero tensor of ``shape`` with ``x`` written at basic index ``key``."""
    return SliceScatter.apply(x, key=key, shape=tuple(shape))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Joins tensors along an existing axis. Shapes: ``(A, C)``, ``(B, C)`` -> ``(A+B, C)``.

    Mixed dtypes promote as ``torch.cat`` (``torch.result_type``: int64 and
    float32 give float32, bool and int64 int64); each float input gets its
    gradient in its own dtype.
    """
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    dtype = tensors[0].dtype
    if any(t.dtype != dtype for t in tensors):
        dtype = nd.result_type(*(t.dtype for t in tensors))
        tensors = [to(t, dtype=dtype) for t in tensors]
    return Cat.apply(*tensors, axis=normalize_axis(dim, tensors[0].ndim, "cat"))


# Compositions.

def view(x: Tensor, *shape: Any) -> Tensor:
    """Same as ``reshape`` (views never copy in Lamina when strides allow)."""
    return reshape(x, *shape)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps two axes. A view."""
    ndim = len(x._data._shape)
    axes = list(range(ndim))
    d0, d1 = normalize_axis(dim0, ndim, "transpose"), normalize_axis(dim1, ndim, "transpose")
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return Permute.apply(x, axes=tuple(axes))  # already normalised: not through permute()


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """``broadcast_to`` where -1 keeps an axis' size, as ``torch.Tensor.expand``."""
    sizes = shape_arg(sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes given for a tensor of shape {x.shape}")
    shape = tuple(x.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))
    return broadcast_to(x, shape)


def squeeze(x: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Drops axes of size 1 (all of them, or those in ``dim`` that have size 1)."""
    axes = normalize_axes(dim, x.ndim, "squeeze")
    return reshape(x, tuple(n for i, n in enumerate(x.shape) if not (i in axes and n == 1)))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Inserts an axis of size 1 at ``dim`` (``-1`` appends)."""
    d = normalize_axis(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merges axes ``start_dim..end_dim`` into one. Shapes: ``(N, C, H, W)`` -> ``(N, C*H*W)``
    with ``start_dim=1``."""
    if x.ndim == 0:
        return reshape(x, (1,))
    s, e = normalize_axis(start_dim, x.ndim, "flatten"), normalize_axis(end_dim, x.ndim, "flatten")
    if s > e:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    merged = 1
    for n in x.shape[s:e + 1]:
        merged *= n
    return reshape(x, x.shape[:s] + (merged,) + x.shape[e + 1:])


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Joins same-shaped tensors along a new axis. Shapes: k x ``(A, B)`` -> ``(k, A, B)``.

    Mixed dtypes promote as in :func:`cat`."""
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    first = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != first:
            raise ShapeError(f"stack: tensor {i} has shape {t.shape} but tensor 0 has shape "
                             f"{first}; stacked tensors must have equal shapes")
    d = normalize_axis(dim, len(first) + 1, "stack")
    return cat([unsqueeze(t, d) for t in tensors], d)


def split(x: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0
          ) -> tuple[Tensor, ...]:
    """Splits along ``dim`` into pieces of ``split_size`` (the last may be smaller) or of
    the given sizes, as views, like ``torch.split``.

    A dim of size 0 gives one empty piece for an int size (0 allowed there) and one
    empty piece per entry for a list of zeros.
    """
    total = _split_dim_size(x, dim, "split")
    d = normalize_axis(dim, x.ndim, "split")
    if isinstance(split_size_or_sections, Sequence):
        sizes = _section_sizes(split_size_or_sections, total, x.shape, dim)
    else:
        sizes = _even_sizes(_int_arg(split_size_or_sections, "split", "split_size"), total)
    pieces, start = [], 0
    for n in sizes:
        pieces.append(x[(slice(None),) * d + (slice(start, start + n),)])
        start += n
    return tuple(pieces)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Splits into at most ``chunks`` pieces of ``ceil(size / chunks)`` (the last may be
    smaller; fewer pieces when they run out), like ``torch.chunk``."""
    chunks = _int_arg(chunks, "chunk", "chunks")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    total = _split_dim_size(x, dim, "chunk")
    if total == 0:  # PyTorch keeps the count of empty chunks here
        return split(x, [0] * chunks, dim)
    return split(x, -(-total // chunks), dim)


def _split_dim_size(x: Tensor, dim: int, op: str) -> int:
    if x.ndim == 0:
        raise ShapeError(f"{op}: expects a tensor with at least 1 dim, got a 0-d tensor; "
                         f"reshape it to (1,) first")
    return x.shape[normalize_axis(dim, x.ndim, op)]


def _int_arg(value: Any, op: str, name: str) -> int:
    # bool is an int in Python but not a size to PyTorch; a 0-d int tensor is one.
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__} ({value!r})")
    return operator.index(value)


def _even_sizes(split_size: int, total: int) -> list[int]:
    if split_size < 0 or (split_size == 0 and total != 0):
        raise ValueError(f"split: split_size must be positive (or 0 for a dim of size 0), "
                         f"got {split_size} for a dim of size {total}")
    if total == 0:
        return [0]
    return [min(split_size, total - s) for s in range(0, total, split_size)]


def _section_sizes(sections: Sequence[Any], total: int, shape: tuple[int, ...], dim: int
                   ) -> list[int]:
    sizes = [_int_arg(n, "split", "each section size") for n in sections]
    if any(n < 0 for n in sizes):
        raise ValueError(f"split: section sizes must be non-negative, got {sizes}")
    if sum(sizes) != total:
        raise ShapeError(f"split: sizes {sizes} sum to {sum(sizes)}, but dim {dim} "
                         f"of shape {shape} has {total}; give sizes that sum to {total}")
    return sizes


def pad(x: Tensor, pad_width: Sequence[tuple[int, int]]) -> Tensor:
    """Zero padding, numpy-style: one ``(before, after)`` pair per axis.

    Shapes: ``(N, C, H, W)`` with ``((0, 0), (0, 0), (1, 1), (2, 2))`` ->
    ``(N, C, H+2, W+4)``. (``torch.nn.functional.pad`` lists pairs last axis first.)
    """
    pairs = [tuple(p) for p in pad_width]
    if len(pairs) != x.ndim or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ShapeError(f"pad: pad_width {pad_width} must hold one non-negative (before, "
                         f"after) pair per axis of shape {x.shape}")
    shape = tuple(n + b + a for n, (b, a) in zip(x.shape, pairs))
    key = tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, pairs))
    return slice_scatter(x, key, shape)


def dilate(x: Tensor, axes: Sequence[int], dilation: int) -> Tensor:
    """Inserts ``dilation`` zeros after every element along ``axes`` (Needle's dilate).

    Shapes: ``(n,)`` -> ``(n * (dilation + 1),)``.
    """
    _check_dilation(dilation, "dilate")
    axes = normalize_axes(axes, x.ndim, "dilate")
    step = dilation + 1
    shape = tuple(n * step if i in axes else n for i, n in enumerate(x.shape))
    key = tuple(slice(None, None, step) if i in axes else slice(None) for i in range(x.ndim))
    return slice_scatter(x, key, shape)


def undilate(x: Tensor, axes: Sequence[int], dilation: int) -> Tensor:
    """Keeps every ``dilation + 1``-th element along ``axes``: the inverse of ``dilate``."""
    _check_dilation(dilation, "undilate")
    axes = normalize_axes(axes, x.ndim, "undilate")
    key = tuple(slice(None, None, dilation + 1) if i in axes else slice(None)
                for i in range(x.ndim))
    return x[key]


def _check_dilation(dilation: int, op: str) -> None:
    if not isinstance(dilation, int) or dilation < 0:
        raise ValueError(f"{op}: dilation must be a non-negative int, got {dilation!r}")


PRIMITIVES = (Copy, Reshape, Permute, BroadcastTo, Flip, Slice, SliceScatter, Cat)
COMPOSITES = (view, transpose, expand, squeeze, unsqueeze, flatten, stack, split, chunk, pad,
              dilate, undilate)
