"""In-place ops on Tensors (``add_``, ``mul_``, ``x -= y``, ...) with PyTorch's safety net.

An in-place op computes its result with the out-of-place op, then writes it
into the tensor's own storage (so views and other aliases of that storage see
the change) and bumps the tensor's version counter. Float arithmetic that
records nothing (an optimizer's update under ``no_grad``) skips the
out-of-place result: the NDArray's in-place operator writes the storage
itself (see ``_direct``). The checks are PyTorch's:

- a leaf that requires grad cannot be modified in place while grad mode is on
  (``with no_grad():`` is how optimizers and the manual SGD idiom
  ``p -= lr * p.grad`` update parameters);
- when the op is recorded, the tensor takes the new node as its ``grad_fn``,
  so gradients flow through the modification; the op's own node keeps a copy
  of the old value if its rule needs it (``mul_`` by a tensor);
- any other node that saved the old value notices the version change when
  backward reads it and raises instead of giving a wrong gradient;
- the result keeps the tensor's dtype: one that ``torch.can_cast`` could not
  cast to it (``bool_t.add_(1)``, ``int_t.mul_(0.5)``, ``int_t **= 0.5``)
  raises :class:`InPlaceCastError` before anything is written. ``fill_`` and
  ``t[k] = v`` convert their value, as PyTorch's do (``copy_`` too, except
  float into int, which it refuses).

An in-place op recorded on a view (a slice, reshape or permute of another
tensor; ``y[0].mul_(2)``, ``y[0][1] = 3``) rewrites the base tensor's graph,
as PyTorch's ``CopySlices``: the base's new ``grad_fn`` is an ``index_put``
of the view's new value into the base's old history, and the view (and any
other view of the base, when next used) becomes a view of that new history.
A view of a leaf that requires grad cannot be modified outside ``no_grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import DTypeError, NDArray, ShapeError

from . import _grad_mode as grad_mode
from ._ops import elementwise as E
from ._ops import scattering as X
from ._ops import shape as S
from ._tensor_base import Tensor, TensorBase, Version, make, new

_NUMBER = (int, float)


class InPlaceCastError(DTypeError, RuntimeError):
    """An in-place op whose result dtype does not fit the tensor (``bool_t.add_(1)``).

    PyTorch's rule (``torch.can_cast``: bool -> int64 -> float, never back)
    and its exception type, RuntimeError; a DTypeError like Lamina's other
    dtype mistakes.
    """


def _check_leaf(t: Tensor, op: str) -> None:
    if not grad_mode._state.enabled:
        return
    if t._base is not None and t._history != t._vc.history:  # type: ignore[union-attr]
        refresh_view(t)
    if t._requires_grad and t.grad_fn is None and t._base is None:
        raise RuntimeError(
            f"{op}: a leaf Variable that requires grad is being used in an in-place "
            f"operation (shape {t.shape}); update it under `with no_grad():`, as optimizers "
            "do, or modify a copy (.clone())")
    base = t._base
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError(
            f"{op}: a view of a leaf Variable that requires grad is being used in an "
            f"in-place operation (view of shape {t.shape}, leaf of shape {base.shape}); "
            "update it under `with no_grad():` or modify a copy (.clone())")


def _write(t: Tensor, out: Tensor, op: str) -> Tensor:
    """Stores ``out`` (the op's out-of-place result) into ``t``'s storage."""
    if out._data.shape != t._data.shape:
        raise ShapeError(f"{op}: the result has shape {out.shape} (broadcast), which does not "
                         f"fit in place into a tensor of shape {t.shape}")
    if out.dtype != t.dtype:
        if out.dtype.category > t.dtype.category:
            raise InPlaceCastError(
                f"{op}: result type {out.dtype.name} can't be cast to the desired output type "
                f"{t.dtype.name} (an in-place op keeps the tensor's dtype); convert the "
                f"tensor first (.to({out.dtype.name!r})) or use the out-of-place op")
        if out._requires_grad:
            out = S.to(out, dtype=t.dtype)
    if not out._requires_grad:
        if t._requires_grad and grad_mode._state.enabled:
            # a non-differentiable op (t //= 2, t.sign_()) would keep t's old grad_fn
            # and pass gradients through the new values: PyTorch's error instead
            raise RuntimeError(
                f"{op}: derivative for {op} is not implemented (its result does not "
                f"depend differentiably on the tensor of shape {t.shape}, which requires "
                "grad); compute it out of place, or under `with no_grad():`")
        t._data[...] = out._data
        bump(t)
        return t
    _keep_old_value(out.grad_fn, t)
    base = t._base
    if base is None:
        t._data[...] = out._data
        t.grad_fn = out.grad_fn
        t._requires_grad = True
    else:
        _copy_slices(t, base, out, op)
    bump(t)
    t._vc.history += 1  # type: ignore[union-attr]  # other views of t are stale now
    if base is not None:
        t._history = t._vc.history  # type: ignore[union-attr]
    return t


def _copy_slices(view: Tensor, base: Tensor, out: Tensor, op: str) -> None:
    """Writes ``out`` into ``view`` and gives ``base`` the history PyTorch's
    ``CopySlices`` does: ``base`` with the view's positions replaced by ``out``."""
    layout = view._data
    if any(st == 0 and n > 1 for n, st in zip(layout.shape, layout.strides)):
        raise RuntimeError(f"{op}: more than one element of the written-to tensor refers to "
                           f"a single memory location (a broadcast view of shape "
                           f"{layout.shape}); clone it first")
    positions = _positions_in(view, base)
    new_base = X.IndexPut.apply(base, out, positions=positions, accumulate=False)
    view._data[...] = out._data
    base.grad_fn = new_base.grad_fn
    base._requires_grad = True
    view.grad_fn = X.read(base, positions).grad_fn
    view._requires_grad = True


def _positions_in(view: Tensor, base: Tensor) -> Any:
    """The row-major positions in ``base`` of the elements of ``view`` (which shares
    ``base``'s buffer), shaped like ``view``."""
    at = nd.buffer_positions(view._data)
    if base._data.is_compact():
        return at - base._data.offset
    logical = np.zeros(base._data.buffer.size, dtype=np.int64)
    logical[nd.buffer_positions(base._data)] = np.arange(base._data.size)
    return logical[at]


def refresh_view(view: Tensor) -> None:
    """A view made before a recorded in-place write into its storage takes a view of
    its base's new history as ``grad_fn`` (as PyTorch regenerates a view's grad_fn)."""
    base = view._base
    assert base is not None and view._vc is not None
    view._history = view._vc.history
    if not base._requires_grad:
        return
    with grad_mode.enable_grad():
        fresh = X.read(base, _positions_in(view, base))
    view.grad_fn = fresh.grad_fn
    view._requires_grad = True


def _keep_old_value(node: Any, t: Tensor) -> None:
    """The node about to become ``t``'s grad_fn saved ``t`` itself: give it ``t``'s
    value before the write instead (``a.mul_(b)`` needs the old ``a`` for ``db``)."""
    saved = node._saved
    if saved is None or not any(s is t for s in saved):
        return
    old = make(t._data.copy(), t._requires_grad, t.grad_fn)
    node._saved = tuple([old if s is t else s for s in saved])


def bump(t: Tensor) -> None:
    """Records that ``t``'s storage changed (shared with its views)."""
    vc = t._vc
    if vc is None:
        vc = t._vc = Version()
    vc.value += 1


def _direct(t: Tensor, other: Any) -> Any:
    """``other`` as the operand of the NDArray's in-place operator on ``t``'s data,
    or None where the op must go through ``_write``.

    That operator writes into ``t``'s storage itself, with one kernel where it
    can (``p.sub_(g, alpha=lr)`` under ``no_grad``, ``m.mul_(beta)``). It serves
    where nothing is recorded (grad mode off, or a tensor that is no view and
    operands that do not require grad) and nothing can fail: a floating ``t``
    with a Python number or a tensor of its shape, dtype and device.
    """
    if grad_mode._state.enabled and (t._requires_grad or t._base is not None
                                     or getattr(other, "_requires_grad", False)):
        return None
    data = t._data
    if not data._dtype.is_floating:
        return None
    if type(other) is float or type(other) is int:
        return other
    if isinstance(other, TensorBase):
        o = other._data
        if o._dtype is data._dtype and o._device is data._device and o._shape == data._shape:
            return o
    return None


# The in-place forms of the op table's ops (mul_, x %= y, exp_, ...) are these two
# applied to the op's function, set on Tensor by lamina.autograd._ops.table.
def _binary(t: Tensor, other: Any, op: str, fn: Callable[[Any, Any], Tensor],
            direct: Callable[..., NDArray] | None = None, alpha: Any = 1) -> Tensor:
    """``t OP= alpha * other`` (alpha: add_ and sub_ only); ``direct`` writes
    ``t``'s data itself where ``_direct`` allows, called ``(data, operand)``, or
    ``(data, operand, alpha)`` for an alpha other than 1."""
    if direct is not None and (type(alpha) is int or type(alpha) is float):
        operand = _direct(t, other)
        if operand is not None:
            if alpha == 1:
                direct(t._data, operand)
            else:
                direct(t._data, operand, alpha)
            bump(t)
            return t
    _check_leaf(t, op)
    other = _scaled(other, alpha)
    if isinstance(other, NDArray):
        other = make(other)
    return _write(t, fn(t, other), op)


def _unary(t: Tensor, op: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    _check_leaf(t, op)
    return _write(t, fn(t), op)


def _scaled(other: Any, alpha: Any) -> Any:
    return other if isinstance(alpha, _NUMBER) and alpha == 1 else other * alpha


def add_(t: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    """``t += alpha * other``, broadcast to ``t``'s shape."""
    return _binary(t, other, "add_", E.add, nd.add_scaled_, alpha)


def _sub_scaled(a: NDArray, b: Any, alpha: float = 1.0) -> NDArray:
    return a.__isub__(b) if alpha == 1 else nd.add_scaled_(a, b, -alpha)


def sub_(t: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    """``t -= alpha * other``."""
    return _binary(t, other, "sub_", E.sub, _sub_scaled, alpha)


def apply_(t: Tensor, op: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """Writes ``fn(t)`` into ``t`` (and returns ``t``), for any ``fn`` of one tensor that
    keeps its shape, composite ones included (``clamp_``, lamina.nn's ``inplace=True``
    activations).

    The inner nodes of a composite may save ``t`` itself (``where(t > 0, t, t * s)``),
    and the write would then spoil what they saved; so a recorded call applies ``fn``
    to a copy of ``t``, whose gradient flows on into ``t``'s old history.
    """
    _check_leaf(t, op)
    recording = t._requires_grad and grad_mode._state.enabled
    return _write(t, fn(S.to(t, copy=True) if recording else t), op)


def clamp_(t: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002
    """Limits ``t`` to ``[min, max]`` in place."""
    return apply_(t, "clamp_", lambda src: E.clamp(src, min, max))


def fill_(t: Tensor, value: Any) -> Tensor:
    """Sets every element to ``value`` (a number or a one-element tensor).

    A recorded fill sends a zero gradient to the old value (and, for a tensor
    ``value``, the summed gradient to it), as PyTorch.
    """
    _check_leaf(t, "fill_")
    if isinstance(value, TensorBase):
        if value._data.size != 1:
            raise ShapeError(f"fill_: value must have one element, got shape {value.shape}")
        return copy_(t, value.reshape(()))
    if not isinstance(value, (int, float, bool)):
        raise TypeError(f"fill_: value must be a number or a one-element Tensor, "
                        f"got {type(value).__name__}")
    if t._requires_grad and grad_mode._state.enabled:
        return _write(t, _replaced(t, value), "fill_")
    t._data[...] = value
    bump(t)
    return t


def _replaced(t: Tensor, value: Any) -> Tensor:
    """``value`` as the result of a recorded op on ``t`` whose gradient to ``t`` is zero."""
    out = E.add(E.mul(t, 0.0), value)
    out._data[...] = value._data if isinstance(value, TensorBase) else value  # exact, even where
    return out                                                          # t held inf or nan


def copy_(t: Tensor, src: Any) -> Tensor:
    """Copies ``src`` (broadcast, converted to ``t``'s dtype and device) into ``t``.

    Differentiable with respect to ``src``; ``t``'s old value gets no gradient.
    """
    _check_leaf(t, "copy_")
    if not isinstance(src, TensorBase):
        src = new(src, dtype=t.dtype, device=t.device)
    if src.shape != t.shape:
        try:
            src = src.broadcast_to(t.shape)
        except ValueError:
            raise ShapeError(f"copy_: source of shape {src.shape} does not broadcast to the "
                             f"destination's shape {t.shape}") from None
    if src.dtype != t.dtype and not t.dtype.is_floating and src.dtype.is_floating:
        # PyTorch truncates here; an explicit conversion says what is meant.
        raise DTypeError(f"copy_: cannot copy {src.dtype.name} into {t.dtype.name} in "
                         f"place; convert the source with .long() first")
    recording = grad_mode._state.enabled and (src._requires_grad or t._requires_grad)
    if not recording:
        t._data[...] = S.to(src, device=t.device)._data
        bump(t)
        return t
    if t._requires_grad:
        return _write(t, _replaced(t, S.to(src, device=t.device, dtype=t.dtype)), "copy_")
    # A fresh node (a copy of src): t must not become the output of src's node.
    return _write(t, S.to(src, device=t.device, dtype=t.dtype, copy=True), "copy_")


def _recording(t: Tensor, value: Any) -> bool:
    return grad_mode._state.enabled and (
        t._requires_grad or (isinstance(value, TensorBase) and value._requires_grad))


def setitem(t: Tensor, key: Any, value: Any) -> None:
    """``t[key] = value``: any key ``t[key]`` reads (ints, slices, None, ``...``,
    integer arrays, bool masks); ``value`` broadcasts to ``t[key]``'s shape.

    Recorded as an ``index_put`` (PyTorch's ``CopySlices``): ``value`` gets
    the gradient of the written positions (summed over broadcasting), the
    old value of ``t`` the gradient where it survived.
    """
    _check_leaf(t, "setitem")
    key = X.unwrap(key)
    if not _recording(t, value):
        if isinstance(value, TensorBase):
            value = X.value_tensor(t, value, "setitem")._data
        t._data[key] = value
        bump(t)
        return
    positions = nd.index_positions(t._data, key, "setitem")
    _write(t, X.put(t, positions, value, False, "setitem"), "setitem")


def index_put_(t: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``t[indices] = values`` (``+=`` with ``accumulate``) in place; see
    :func:`lamina.autograd.index_put`."""
    _check_leaf(t, "index_put_")
    return _write(t, X.index_put(t, indices, values, accumulate), "index_put_")


def scatter_(t: Tensor, dim: int, index: Any, src: Any = None, *, value: Any = None
             ) -> Tensor:
    """:func:`lamina.autograd.scatter` in place."""
    _check_leaf(t, "scatter_")
    return _write(t, X.scatter(t, dim, index, src, value=value), "scatter_")


def scatter_add_(t: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    """:func:`lamina.autograd.scatter_add` in place."""
    _check_leaf(t, "scatter_add_")
    return _write(t, X.scatter_add(t, dim, index, src), "scatter_add_")
