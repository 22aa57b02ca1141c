"""PyTorch's products and norms: mm, mv, dot, outer, bmm, addmm, baddbmm, einsum, norm,
vector_norm.

Every one is a composition of registered ops (matmul, mul, sum, permute,
reshape, broadcast_to, abs, pow, where, amax), so none has backward code of its
own. The shape checks are PyTorch's (``mm`` takes matrices only, ``bmm`` does
not broadcast, the operands of a product share a dtype) and raise Lamina's
``ShapeError``/``DTypeError`` where PyTorch raises a bare ``RuntimeError``.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import DTypeError, ShapeError

from .. import _ops as F
from .._tensor_base import Tensor, TensorBase, make
from ._util import reduction_axes
from .rearrange import diagonal

# The ops are reached through the package at call time (F.matmul): Tensor imports
# this module for its methods while the op modules are still loading.


def _expect(op: str, x: Any, ndim: int, what: str) -> None:
    """``x`` is a Tensor of ``ndim`` dims, else a TypeError/ShapeError naming ``what``."""
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}: {what} must be a Tensor, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ShapeError(f"{op}: {what} must be {ndim}-D, got shape {x.shape}; reshape it or "
                         f"use matmul, which takes any number of dims")


def _same_dtype(op: str, *xs: Tensor) -> None:
    """PyTorch's products refuse mixed dtypes rather than promote them."""
    names = [x.dtype.name for x in xs]
    if len(set(names)) > 1:
        listed = ", ".join(f"{n} (arg {i})" for i, n in enumerate(names))
        raise DTypeError(f"{op}: expected operands of one dtype, got {listed}; convert "
                         f"them with .to(dtype)")


def _inner(op: str, a: Tensor, b: Tensor, da: int, db: int) -> None:
    if a.shape[da] != b.shape[db]:
        raise ShapeError(f"{op}: shapes {a.shape} and {b.shape} cannot be multiplied: "
                         f"{a.shape[da]} (dim {da % a.ndim} of arg 0) != {b.shape[db]} "
                         f"(dim {db % b.ndim} of arg 1)")


def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002  (PyTorch's name)
    """The matrix product of two matrices. Shapes: ``(N, K) @ (K, M) -> (N, M)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.mm(ag.ones(2, 3), ag.ones(3, 4)).shape
        (2, 4)
    """
    _expect("mm", input, 2, "input")
    _expect("mm", mat2, 2, "mat2")
    _same_dtype("mm", input, mat2)
    _inner("mm", input, mat2, 1, 0)
    return F.matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    """The product of a matrix and a vector. Shapes: ``(N, K) @ (K,) -> (N,)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.mv(ag.ones(2, 3), ag.ones(3)).tolist()
        [3.0, 3.0]
    """
    _expect("mv", input, 2, "input")
    _expect("mv", vec, 1, "vec")
    _same_dtype("mv", input, vec)
    _inner("mv", input, vec, 1, 0)
    return F.matmul(input, vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # noqa: A002
    """The inner product of two vectors of one length, a 0-d tensor.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.dot(ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0])).item()
        11.0
    """
    _expect("dot", input, 1, "input")
    _expect("dot", tensor, 1, "tensor")
    _same_dtype("dot", input, tensor)
    _inner("dot", input, tensor, 0, 0)
    return F.matmul(input, tensor)


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """The outer product of two vectors, ``out[i, j] = input[i] * vec2[j]``: ``(N,), (M,)
    -> (N, M)``. Mixed dtypes promote, as in PyTorch.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.outer(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 10.0])).tolist()
        [[1.0, 10.0], [2.0, 20.0]]
    """
    _expect("outer", input, 1, "input")
    _expect("outer", vec2, 1, "vec2")
    return F.unsqueeze(input, 1) * F.unsqueeze(vec2, 0)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    """Batched matrix product with equal batches (no broadcasting, as in PyTorch).

    Shapes: ``(B, N, K) @ (B, K, M) -> (B, N, M)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.bmm(ag.ones(5, 2, 3), ag.ones(5, 3, 4)).shape
        (5, 2, 4)
    """
    _expect("bmm", input, 3, "input")
    _expect("bmm", mat2, 3, "mat2")
    _same_dtype("bmm", input, mat2)
    if input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ, {input.shape[0]} (shape {input.shape}) "
                         f"and {mat2.shape[0]} (shape {mat2.shape}); use matmul to broadcast")
    _inner("bmm", input, mat2, 2, 1)
    return F.matmul(input, mat2)


def _scaled_sum(op: str, input: Tensor, product: Tensor, beta: Any, alpha: Any  # noqa: A002
                ) -> Tensor:
    """``beta * input + alpha * product``, ``input`` broadcast to the product's shape.

    With ``beta == 0`` the values of ``input`` are ignored (its NaN and inf do not
    propagate) and its gradient is zero, as in PyTorch.
    """
    if not isinstance(input, TensorBase):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    _same_dtype(op, input, product)
    if np.broadcast_shapes(input.shape, product.shape) != product.shape:
        raise ShapeError(f"{op}: input of shape {input.shape} does not broadcast to the "
                         f"product's shape {product.shape}")
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        never = make(nd.zeros((), dtype="bool", device=input._data.device))
        return out + F.where(never, input, 0)
    return out + (input if beta == 1 else input * beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to ``(N, M)``.

    Shapes: ``input (N, M)`` (or broadcastable), ``mat1 (N, K)``, ``mat2 (K, M)`` ->
    ``(N, M)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.addmm(ag.ones(2), ag.ones(2, 3), ag.ones(3, 2), alpha=2).tolist()
        [[7.0, 7.0], [7.0, 7.0]]
    """
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
            alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``; ``input`` broadcasts to
    ``(B, N, M)``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.baddbmm(ag.zeros(1, 2), ag.ones(4, 1, 3), ag.ones(4, 3, 2)).shape
        (4, 1, 2)
    """
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


# ----- einsum -------------------------------------------------------------------------

_LETTERS = frozenset(string.ascii_letters)


def _split_term(term: str, start: int, equation: str) -> tuple[list[str], list[str], bool]:
    """The letters before and after a term's ``...`` and whether it has one."""
    parts = term.split("...")
    if len(parts) > 2:
        raise ValueError(f"einsum: more than one ellipsis in term {term!r} of {equation!r}")
    for i, c in enumerate(term):
        if c not in _LETTERS and c != ".":
            raise ValueError(f"einsum: invalid subscript {c!r} at index {start + i} of "
                             f"{equation!r}; subscripts must be in [a-zA-Z]")
    if any("." in p for p in parts):
        raise ValueError(f"einsum: a '.' outside an ellipsis '...' in term {term!r}")
    return list(parts[0]), list(parts[-1]) if len(parts) == 2 else [], len(parts) == 2


def _ellipsis(n: int, total: int) -> list[str]:
    """Labels of the last ``n`` of ``total`` broadcast (ellipsis) dims, right-aligned."""
    return [f".{k}" for k in range(total - n, total)]


def _parse(equation: str, ndims: list[int]) -> tuple[list[list[str]], list[str]]:
    """Each operand's dim labels and the output's, with ``.k`` for ellipsis dims."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms, pos, split = lhs.split(","), 0, []
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: the equation {equation!r} has {len(terms)} operand terms "
                         f"but {len(ndims)} operands were given")
    for term in terms:
        split.append(_split_term(term, pos, equation))
        pos += len(term) + 1
    extra = []
    for i, ((before, after, dots), n) in enumerate(zip(split, ndims)):
        e = n - len(before) - len(after)
        if e < 0 or (e and not dots):
            raise ShapeError(f"einsum: term {terms[i]!r} has {len(before) + len(after)} "
                             f"subscripts but operand {i} has {n} dims; give one per dim or "
                             f"use '...'")
        extra.append(e)
    total = max(extra, default=0)
    labels = [b + _ellipsis(e, total) + a for (b, a, _), e in zip(split, extra)]
    if arrow:
        before, after, dots = _split_term(rhs, len(lhs) + 2, equation)
        out = before + (_ellipsis(total, total) if dots else []) + after
    else:
        counts = [c for term in labels for c in term if c[0] != "."]
        out = _ellipsis(total, total) + sorted(c for c in set(counts) if counts.count(c) == 1)
    _check_output(out, labels, equation)
    return labels, out


def _check_output(out: list[str], labels: list[list[str]], equation: str) -> None:
    seen = {c for term in labels for c in term}
    for c in out:
        if out.count(c) > 1:
            raise ValueError(f"einsum: output subscript {c!r} appears more than once in "
                             f"{equation!r}")
        if c not in seen and c[0] != ".":
            raise ValueError(f"einsum: output subscript {c!r} of {equation!r} appears in "
                             f"no input term")


def _sizes(labels: list[list[str]], operands: Sequence[Tensor]) -> dict[str, int]:
    """Each label's size; a size-1 dim broadcasts against the others, as in PyTorch."""
    sizes: dict[str, int] = {}
    for i, (term, x) in enumerate(zip(labels, operands)):
        for c, n in zip(term, x.shape):
            if term.count(c) > 1 and n != x.shape[term.index(c)]:
                raise ShapeError(f"einsum: subscript {c!r} is repeated in operand {i} of "
                                 f"shape {x.shape} with different sizes")
            if sizes.get(c, 1) != 1 and n not in (1, sizes[c]):
                what = "an ellipsis dim" if c[0] == "." else f"subscript {c!r}"
                raise ShapeError(f"einsum: {what} has size {sizes[c]} in an earlier operand "
                                 f"and {n} in operand {i} of shape {x.shape}")
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    return sizes


def _take_diagonals(x: Tensor, term: list[str]) -> tuple[Tensor, list[str]]:
    """``x`` with each label repeated in its term reduced to one diagonal dim (last)."""
    term = list(term)
    for c in dict.fromkeys(term):
        while term.count(c) > 1:
            i = term.index(c)
            j = term.index(c, i + 1)
            x = diagonal(x, 0, i, j)
            term = [t for k, t in enumerate(term) if k not in (i, j)] + [c]
    return x, term


def _sum_out(x: Tensor, term: list[str], keep: set[str]) -> tuple[Tensor, list[str]]:
    axes = tuple(k for k, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return F.sum(x, axes), [c for c in term if c in keep]


def _arrange(x: Tensor, term: list[str], order: list[str]) -> Tensor:
    """``x`` permuted to ``order``'s labels, with a size-1 dim for each label it lacks."""
    present = [c for c in order if c in term]
    x = F.permute(x, tuple(term.index(c) for c in present))
    return F.reshape(x, tuple(x.shape[present.index(c)] if c in term else 1 for c in order))


def _contract(x: Tensor, xt: list[str], y: Tensor, yt: list[str], later: set[str],
              sizes: dict[str, int]) -> tuple[Tensor, list[str]]:
    """The product of two labelled operands, summed over the labels that only they have.

    Without such labels it is a broadcast multiply; with them, one (batched) matmul
    of ``(*batch, X, K) @ (*batch, K, Y)``.
    """
    batch = [c for c in xt if c in yt and c in later]
    summed = [c for c in xt if c in yt and c not in later]
    xo, yo = [c for c in xt if c not in yt], [c for c in yt if c not in xt]
    if not summed:
        order = batch + xo + yo
        return _arrange(x, xt, order) * _arrange(y, yt, order), order
    nb, k = len(batch), tuple(sizes[c] for c in summed)
    xp = _arrange(x, xt, batch + xo + summed)
    yp = _arrange(y, yt, batch + summed + yo)
    xp = F.broadcast_to(xp, xp.shape[:-len(k)] + k)  # a size-1 summed dim broadcasts
    yp = F.broadcast_to(yp, yp.shape[:nb] + k + yp.shape[nb + len(k):])
    xs, ys = xp.shape[nb:nb + len(xo)], yp.shape[nb + len(k):]
    z = F.matmul(F.reshape(xp, xp.shape[:nb] + (math.prod(xs), math.prod(k))),
                 F.reshape(yp, yp.shape[:nb] + (math.prod(k), math.prod(ys))))
    return F.reshape(z, z.shape[:nb] + xs + ys), batch + xo + yo


def einsum(equation: str, *operands: Any) -> Any:
    """Einstein summation, as ``torch.einsum``: ``einsum("bij,bjk->bik", a, b)``.

    Each operand has a term of one letter (``[a-zA-Z]``) per dim; ``...`` stands
    for broadcast dims. A letter repeated in one term takes a diagonal; letters
    absent from the output are summed. Without ``->`` the output is the ellipsis
    dims, then the letters that appear once, in alphabetical order (upper case
    first). Operands are contracted left to right, each pair as one matmul.
    The operands may also be given as one list.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.einsum("ij,jk->ik", ag.ones(2, 3), ag.ones(3, 4)).shape
        (2, 4)
        >>> ag.einsum("ii", ag.tensor([[1.0, 2.0], [3.0, 4.0]])).item()
        5.0
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a str, got {type(equation).__name__}; "
                        f"write e.g. einsum('ij,jk->ik', a, b)")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: expected at least one operand")
    for i, x in enumerate(operands):
        if not isinstance(x, TensorBase):
            raise TypeError(f"einsum: operand {i} must be a Tensor, got {type(x).__name__}")
    _same_dtype("einsum", *operands)
    terms, out = _parse(equation, [x.ndim for x in operands])
    sizes = _sizes(terms, operands)
    items = [_take_diagonals(x, t) for x, t in zip(operands, terms)]
    needed = [set(out).union(*(t for _, t in items[i + 1:])) for i in range(len(items))]
    x, xt = _sum_out(*items[0], needed[0])
    for (y, yt), later in zip(items[1:], needed[1:]):
        y, yt = _sum_out(y, yt, later | set(xt))
        x, xt = _contract(x, xt, y, yt, later, sizes)
    x = F.permute(x, tuple(xt.index(c) for c in out))
    return F.broadcast_to(x, tuple(sizes[c] for c in out))


# ----- norms --------------------------------------------------------------------------

def _safe_root(s: Tensor, p: float) -> Tensor:
    """``s ** (1 / p)`` with PyTorch's subgradient 0 where ``s`` is 0 (not 0 * inf)."""
    zero = s == 0
    base = F.where(zero, 1.0, s)
    root = base.sqrt() if p == 2 else base ** (1.0 / p)
    return F.where(zero, 0.0, root)


def _powers(a: Tensor, p: float) -> Tensor:
    """``a ** p`` for ``a >= 0``; below p = 1 the derivative at 0 is taken as 0."""
    if p >= 1:
        return a * a if p == 2 else a ** p
    zero = a == 0
    return F.where(zero, 0.0 if p > 0 else math.inf, F.where(zero, 1.0, a) ** p)


def vector_norm(x: Tensor, ord: float = 2, dim: Any = None,  # noqa: A002
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all dims by default), as
    ``torch.linalg.vector_norm``: ``sum(|x|**ord) ** (1/ord)``; ``inf`` is
    ``max(|x|)``, ``-inf`` ``min(|x|)``, 0 the count of non-zeros.

    Gradients are PyTorch's: 0 where the norm is 0 (and, for ord < 1, at zero
    entries), shared evenly by tied maxima for ``inf``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.vector_norm(ag.tensor([3.0, -4.0])).item()
        5.0
    """
    if dtype is not None:
        x = x.to(dtype=dtype)
    if not x.dtype.is_floating:
        raise DTypeError(f"vector_norm: expected a floating point tensor, got "
                         f"{x.dtype.name}; convert it with .float()")
    if isinstance(ord, (str, bool)) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm: ord must be a number, got {ord!r}")
    axes = reduction_axes(dim, x.ndim, "vector_norm")
    if (ord < 0 or ord == math.inf) and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"vector_norm: cannot compute the {ord} norm over an empty dim of "
                         f"shape {x.shape}: it has no identity; reduce over non-empty dims "
                         f"or use a finite ord >= 0")
    if ord in (math.inf, -math.inf):
        return (F.amax if ord > 0 else F.amin)(x.abs(), axes, keepdim)
    if ord == 0:  # count the non-zeros; x * 0 keeps the graph with a zero gradient
        return F.sum(F.where(x != 0, 1.0, x * 0), axes, keepdim)
    if ord == 1:
        return F.sum(x.abs(), axes, keepdim)
    if ord == 2:
        return _safe_root(F.sum(x * x, axes, keepdim), 2)
    s = F.sum(_powers(x.abs(), ord), axes, keepdim)
    return _safe_root(s, ord) if ord > 0 else s ** (1.0 / ord)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,  # noqa: A002
         dtype: Any = None) -> Tensor:
    """``torch.norm``: a vector norm of ``input`` over ``dim`` (all dims by default).

    ``p`` is a number (see :func:`vector_norm`) or ``"fro"``, the 2-norm of the
    elements over at most 2 dims. ``"nuc"`` (the nuclear norm) needs singular
    values, which Lamina does not compute.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, -2.0], [2.0, 4.0]]).norm(p=1, dim=1).tolist()
        [3.0, 6.0]
    """
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "fro":
            raise ShapeError(f"norm: p='fro' takes at most 2 dims, got dim={dim!r}; pass a "
                             f"number p for a vector norm over more dims")
        raise ValueError(f"norm: p={p!r} is not supported; use a number (1, 2, inf, -inf, "
                         f"0, ...) or 'fro' ('nuc' needs an SVD, which Lamina lacks)")
    return vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype)


COMPOSITES = (mm, mv, dot, outer, bmm, addmm, baddbmm, einsum, vector_norm, norm)
