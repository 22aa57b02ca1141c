"""Reductions: sum, prod, amax/amin, logsumexp, softmax, argmax, cumsum; mean, var, std,
log_softmax."""

from __future__ import annotations

from collections.abc import Sequence

import lamina.ndarray as nd
from lamina.ndarray import NDArray

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from ._util import NOT_GIVEN, kept_shape, normalize_axis, reduction_args, reduction_axes
from .elementwise import where
from .shape import cat

Dim = int | Sequence[int] | None


class Sum(Function):
    name = "sum"

    def forward(self, a: NDArray, axes: tuple[int, ...], keepdim: bool) -> NDArray:
        self.kept = kept_shape(a.shape, axes)
        if not axes:  # a 0-d tensor: nothing to reduce
            return a.copy()
        return a.sum(axis=axes, keepdims=keepdim)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g.reshape(self.kept).broadcast_to(self.shapes[0]),)


class Prod(Function):
    """The product over some axes. Its gradient at ``x[i]`` is the product of the
    other elements of ``x[i]``'s slice, ``out / x[i]`` where no input is zero; with
    zeros (one zero: the product of the others at it, zero elsewhere; two or more:
    zeros) it is computed without the division, by ``_product_of_others``."""

    name = "prod"
    save_inputs = True
    save_output = True

    def forward(self, a: NDArray, axes: tuple[int, ...], keepdim: bool) -> NDArray:
        self.axes, self.kept = axes, kept_shape(a.shape, axes)
        return a.prod(axis=axes, keepdims=keepdim)  # a 0-d input: axes == (), a copy

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (x,) = self.inputs
        g = g.reshape(self.kept)
        # One host read, as PyTorch's rule makes: is there a zero to step around?
        if x._data.size == 0 or not (x._data == 0).sum().item():
            return (g * self.output.reshape(self.kept) / x,)
        return (g * _product_of_others(x, self.axes),)


def _product_of_others(x: Tensor, axes: tuple[int, ...]) -> Tensor:
    """Each element's product of the other elements of its slice over ``axes``, as the
    exclusive prefix product times the exclusive suffix product. Shapes: ``x`` -> ``x``.

    Written with Tensor ops (so the gradient of the gradient is right, zeros
    included); each scan takes log2(n) multiplications of shifted slices, n the
    slice length.
    """
    rest = tuple(i for i in range(x.ndim) if i not in axes)
    order = rest + axes
    moved = x.permute(order)
    flat = moved.reshape(*moved.shape[:len(rest)], -1)
    others = _exclusive_cumprod(flat) * _exclusive_cumprod(flat.flip(-1)).flip(-1)
    inverse = tuple(order.index(i) for i in range(x.ndim))
    return others.reshape(*moved.shape).permute(inverse)


def _exclusive_cumprod(y: Tensor) -> Tensor:
    """``out[..., k] = prod(y[..., :k])`` (1 at ``k = 0``), by Hillis-Steele doubling."""
    n = y.shape[-1]
    lead = (slice(None),) * (y.ndim - 1)
    one = make(nd.ones(y.shape[:-1] + (1,), dtype=y.dtype, device=y._data.device))
    out = cat([one, y[lead + (slice(0, n - 1),)]], -1)
    step = 1
    while step < n:  # out[k] gathers the product of its 2 * step predecessors
        out = cat([out[lead + (slice(0, step),)],
                   out[lead + (slice(step, n),)] * out[lead + (slice(0, n - step),)]], -1)
        step *= 2
    return out


class _Extremum(Function):
    """amax/amin: the gradient is shared evenly by the elements that tie (as PyTorch)."""

    save_inputs = True
    save_output = True

    def forward(self, a: NDArray, axes: tuple[int, ...], keepdim: bool) -> NDArray:
        self.axes, self.kept = axes, kept_shape(a.shape, axes)
        if not axes:
            return a.copy()
        reduce = a.max if self.name == "amax" else a.min
        return reduce(axis=axes, keepdims=keepdim)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (x,) = self.inputs
        hit = x == self.output.reshape(self.kept)
        return (g.reshape(self.kept) * hit / hit.sum(dim=self.axes, keepdim=True),)


class EmptyReductionError(nd.ShapeError, IndexError):
    """A max or min over an axis of size 0, which has no identity element.

    Both a ShapeError (a ValueError, Lamina's kind for shape mistakes) and an
    IndexError (what PyTorch raises), as numpy's AxisError is both.
    """


def _check_extremum(op: str, x: Tensor, dim: Dim, axes: tuple[int, ...]) -> None:
    """As PyTorch: an empty input reduces to an empty result, but not over a size-0 dim."""
    if x._data.size:  # no dim has size 0
        return
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        raise EmptyReductionError(
            f"{op}: cannot reduce the empty tensor of shape {x.shape} over all dims; "
            f"pass dim= naming only dims of nonzero size")
    empty = [a for a in axes if x.shape[a] == 0]
    if empty:
        raise EmptyReductionError(
            f"{op}: cannot reduce dim {empty[0]} of size 0 (input shape {x.shape}); reduce "
            f"over dims of nonzero size, or use sum or logsumexp, which have an identity")


class Amax(_Extremum):
    name = "amax"


class Amin(_Extremum):
    name = "amin"


class LogSumExp(Function):
    """``log(sum(exp(x)))`` over some axes, computed stably by the NDArray kernel."""

    name = "logsumexp"
    save_inputs = True
    save_output = True

    def forward(self, a: NDArray, axes: tuple[int, ...], keepdim: bool) -> NDArray:
        self.kept = kept_shape(a.shape, axes)
        if not axes:  # a 0-d tensor: log(exp(x)) is x
            return a.copy()
        return a.logsumexp(axis=axes, keepdims=keepdim)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (x,) = self.inputs
        return (g.reshape(self.kept) * (x - self.output.reshape(self.kept)).exp(),)


class Softmax(Function):
    name = "softmax"
    save_output = True

    def forward(self, a: NDArray, axis: int) -> NDArray:
        self.axis = axis
        return a.softmax(axis=axis)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        out = self.output
        return (out * (g - (g * out).sum(dim=self.axis, keepdim=True)),)


class LogSoftmax(Function):
    """``x - logsumexp(x, axis)`` in one node: a log-sum-exp and a subtract forward, and
    ``g - exp(out) * sum(g)`` backward, where the composite took ~9 nodes. The rule
    reads the saved output, so with ``create_graph`` it records through this node
    again and higher-order gradients are exact."""

    name = "log_softmax"
    save_output = True

    def forward(self, a: NDArray, axis: int) -> NDArray:
        self.axis = axis
        if not a.ndim:  # a 0-d tensor: log(exp(x) / exp(x)) is 0
            return a - a
        return a - a.logsumexp(axis=axis, keepdims=True)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        if not self.shapes[0]:
            return (g * 0.0,)
        if grad_mode._state.enabled:  # create_graph: the rule, recorded
            out = self.output
            return (g - out.exp() * g.sum(dim=self.axis, keepdim=True),)
        out_d = self._out_data
        assert out_d is not None
        return (make(nd.log_softmax_backward(g._data, out_d, self.axis)),)


class Argmax(Function):
    name = "argmax"
    differentiable = False

    def forward(self, a: NDArray, axis: int | None, keepdim: bool) -> NDArray:
        return a.argmax(axis=axis, keepdims=keepdim)


class Cumsum(Function):
    name = "cumsum"

    def forward(self, a: NDArray, axis: int) -> NDArray:
        self.axis = axis
        return a.cumsum(axis)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        # out[k] = sum(x[:k+1]), so x[j] reaches every out[k >= j]: a cumsum from the end
        if g.ndim == 0:
            return (g,)
        return (g.flip(self.axis).cumsum(self.axis).flip(self.axis),)


def sum(x: Tensor, dim: Dim = None, keepdim: bool = False, *,  # noqa: A001
        axis: Dim = NOT_GIVEN, keepdims: bool | None = None) -> Tensor:
    """Sum over ``dim`` (an int, a tuple, or ``None`` for all).

    ``axis``/``keepdims`` are accepted for ``dim``/``keepdim``, as in PyTorch.
    Shapes: ``(N, C, L)`` with ``dim=1`` -> ``(N, L)``, or ``(N, 1, L)`` with
    ``keepdim=True``.
    """
    dim, keepdim = reduction_args("sum", dim, keepdim, axis, keepdims)
    return Sum.apply(x, axes=reduction_axes(dim, x.ndim, "sum"), keepdim=keepdim)


def prod(x: Tensor, dim: Dim = None, keepdim: bool = False, *, axis: Dim = NOT_GIVEN,
         keepdims: bool | None = None) -> Tensor:
    """Product over ``dim`` (an int, a tuple, or ``None`` for all), as ``torch.prod``.

    Bool and int64 inputs give int64, floats keep their dtype; the gradient is
    PyTorch's, exact where inputs are zero. Shapes as ``sum``: ``(N, C, L)``
    with ``dim=1`` -> ``(N, L)``. Unlike ``torch.prod``, ``dim`` may be a tuple.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.tensor([2.0, 0.0, 3.0], requires_grad=True, device="numpy")
        >>> x.prod().backward()
        >>> x.grad
        tensor([0., 6., 0.], device='numpy')
    """
    dim, keepdim = reduction_args("prod", dim, keepdim, axis, keepdims)
    return Prod.apply(x, axes=reduction_axes(dim, x.ndim, "prod"), keepdim=keepdim)


def cumsum(x: Tensor, dim: int | None = None, *, axis: int | None = NOT_GIVEN) -> Tensor:
    """Running sums along ``dim``, as ``torch.cumsum``: ``out[..., k] = x[..., :k+1].sum()``.

    Bool and int64 inputs give int64, floats keep their dtype. Shapes:
    unchanged. ``axis`` is accepted for ``dim``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([[1.0, 2.0, 3.0]], device="numpy").cumsum(dim=1)
        tensor([[1., 3., 6.]], device='numpy')
    """
    dim, _ = reduction_args("cumsum", dim, False, axis, None)
    if dim is None:
        raise TypeError("cumsum: missing the dim argument (an int); pass dim=")
    return Cumsum.apply(x, axis=nd.normalize_axis(dim, max(x.ndim, 1), "cumsum", "dim"))


def amax(x: Tensor, dim: Dim = None, keepdim: bool = False, *, axis: Dim = NOT_GIVEN,
         keepdims: bool | None = None) -> Tensor:
    """Maximum over ``dim``; tied maxima share the gradient evenly.

    An empty input gives an empty result, but a dim of size 0 cannot be reduced
    (``EmptyReductionError``, an IndexError as PyTorch's and a ShapeError).
    """
    dim, keepdim = reduction_args("amax", dim, keepdim, axis, keepdims)
    axes = reduction_axes(dim, x.ndim, "amax")
    _check_extremum("amax", x, dim, axes)
    return Amax.apply(x, axes=axes, keepdim=keepdim)


def amin(x: Tensor, dim: Dim = None, keepdim: bool = False, *, axis: Dim = NOT_GIVEN,
         keepdims: bool | None = None) -> Tensor:
    """Minimum over ``dim``; tied minima share the gradient evenly. Empty inputs as ``amax``."""
    dim, keepdim = reduction_args("amin", dim, keepdim, axis, keepdims)
    axes = reduction_axes(dim, x.ndim, "amin")
    _check_extremum("amin", x, dim, axes)
    return Amin.apply(x, axes=axes, keepdim=keepdim)


def logsumexp(x: Tensor, dim: Dim = -1, keepdim: bool = False, *, axis: Dim = NOT_GIVEN,
              keepdims: bool | None = None) -> Tensor:
    """``log(sum(exp(x), dim))`` without overflow; ``dim`` an int, a tuple or ``None`` (all).

    Shapes: ``(N, C)`` -> ``(N,)``.
    """
    dim, keepdim = reduction_args("logsumexp", dim, keepdim, axis, keepdims, default=-1)
    axes = reduction_axes(dim, x.ndim, "logsumexp")
    return LogSumExp.apply(x, axes=axes, keepdim=keepdim)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably. Shapes: unchanged."""
    return Softmax.apply(x, axis=normalize_axis(dim, x.ndim, "softmax"))


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False, *,
           axis: int | None = NOT_GIVEN, keepdims: bool | None = None) -> Tensor:
    """Index of the maximum (int64, not differentiable); ``dim=None`` flattens."""
    dim, keepdim = reduction_args("argmax", dim, keepdim, axis, keepdims)
    axis = None if dim is None else normalize_axis(dim, x.ndim, "argmax")
    return Argmax.apply(x, axis=axis, keepdim=keepdim)


def mean(x: Tensor, dim: Dim = None, keepdim: bool = False, *, axis: Dim = NOT_GIVEN,
         keepdims: bool | None = None) -> Tensor:
    """Mean over ``dim``. Shapes as ``sum``."""
    dim, keepdim = reduction_args("mean", dim, keepdim, axis, keepdims)
    if not x.dtype.is_floating:  # as PyTorch, which infers no output dtype for integers
        raise nd.DTypeError(f"mean: input dtype must be a floating point dtype, got "
                            f"{x.dtype}; convert with .float()")
    axes = reduction_axes(dim, x.ndim, "mean")
    count = 1
    for a in axes:
        count *= x.shape[a]
    return sum(x, axes, keepdim) / count


def var(x: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: int | None = None, axis: Dim = NOT_GIVEN,
        keepdims: bool | None = None) -> Tensor:
    """Variance over ``dim``: ``sum((x - mean)**2) / (n - correction)``, as ``torch.var``.

    Args:
        x: input tensor.
        dim: axes to reduce (``None`` for all).
        unbiased: legacy spelling: ``True`` means correction 1, ``False`` 0.
        keepdim: keep reduced axes as size 1.
        correction: Bessel's correction; defaults to 1.
        axis, keepdims: numpy's names for ``dim``, ``keepdim``.
    """
    dim, keepdim = reduction_args("var", dim, keepdim, axis, keepdims)
    if correction is None:
        correction = 0 if unbiased is False else 1
    axes = reduction_axes(dim, x.ndim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    centered = x - mean(x, axes, keepdim=True)
    denom = count - correction
    return sum(centered * centered, axes, keepdim) / (denom if denom > 0 else float("nan"))


def std(x: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: int | None = None, axis: Dim = NOT_GIVEN,
        keepdims: bool | None = None) -> Tensor:
    """Standard deviation, ``sqrt(var(...))``; same arguments as ``var``.

    Where the variance is 0 (a constant slice) the gradient is 0, as PyTorch's,
    not ``0 * inf``: sqrt's slope at 0 is masked out on both sides of the sqrt.
    """
    v = var(x, dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims)
    zero = v == 0
    return where(zero, 0.0, where(zero, 1.0, v).sqrt())


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """``x - logsumexp(x, dim)``: log-probabilities, stable, in one node. Shapes: unchanged."""
    return LogSoftmax.apply(x, axis=normalize_axis(dim, max(x.ndim, 1), "log_softmax"))


PRIMITIVES = (Sum, Prod, Amax, Amin, LogSumExp, Softmax, LogSoftmax, Argmax, Cumsum)
COMPOSITES = (mean, var, std)
